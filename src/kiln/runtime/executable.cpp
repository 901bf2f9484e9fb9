#include "kiln/runtime/executable.h"

#include <algorithm>

#include "kiln/core/device_hooks.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/support/log.h"

namespace kiln::runtime {

Executable::Executable(std::vector<graph::TensorMeta> inputs, compiler::CompiledGraph compiled)
    : inputs_(std::move(inputs)),
      program_(std::move(compiled.program)),
      schedule_(std::move(compiled.schedule)),
      source_(std::move(compiled.source)),
      library_(std::move(compiled.library)),
      plan_(std::move(compiled.plan)),
      device_(compiled.target ? compiled.target->device : Device(DeviceType::CPU)) {
  KILN_CHECK_KIND(inputs_.size() == program_.inputs.size(), ErrorKind::Internal,
                  "compiled function: {} input metas for a program of {} inputs", inputs_.size(),
                  program_.inputs.size());
  for (const auto& [buffer, value] : program_.constants) {
    constants_.push_back(value.device() == device_ ? value
                                                   : kiln::to(value, TensorOptions(value.dtype()).device(device_)));
  }
  // An extern call runs eagerly on the graph's device: it needs a kernel there.
  for (const auto& step : program_.steps) {
    const auto* call = std::get_if<loopir::ExternCall>(&step);
    KILN_CHECK_KIND(!call || call->op->runs_on(backend_key(device_)), ErrorKind::NotImplemented,
                    "compile: {} has no {} kernel yet, and a graph compiled for {} calls it outside generated code",
                    call ? call->op->schema().qualified_name() : "", dispatch_key_name(backend_key(device_)), device_);
  }
  if (device_.is_cpu()) {
    KILN_CHECK_KIND(library_ != nullptr, ErrorKind::Internal, "compiled function: the pipeline built no library");
    for (const auto& k : source_.kernels) kernels_.push_back(reinterpret_cast<KernelFn>(library_->symbol(k.name)));
    return;
  }
  KILN_CHECK_KIND(!compiled.cubins.empty() && compiled.cubins.size() == compiled.cubin_kernels.size(),
                  ErrorKind::Internal, "compiled function: the pipeline built no cubin");
  size_t kernel = 0;
  for (size_t i = 0; i < compiled.cubins.size(); ++i) {
    modules_.push_back(std::make_shared<cuda::Module>(device_.index, compiled.cubins[i]));
    for (size_t end = kernel + compiled.cubin_kernels[i]; kernel < end && kernel < source_.kernels.size(); ++kernel) {
      const auto& gk = source_.kernels[kernel];
      functions_.push_back(modules_.back()->function(gk.name));
      finish_functions_.push_back(gk.finish.grid > 0 ? modules_.back()->function(gk.name + "_finish") : nullptr);
    }
  }
  KILN_CHECK_KIND(functions_.size() == source_.kernels.size(), ErrorKind::Internal,
                  "compiled function: the cubins hold {} of its {} kernels", functions_.size(), source_.kernels.size());
  // Kernels that keep state between their blocks (split rows' partials and counts): zeroed once,
  // left zeroed by every launch, at one address for the executable's life.
  for (const auto& k : source_.kernels) {
    Tensor w;
    if (k.workspace_bytes > 0) {
      w = empty({k.workspace_bytes}, TensorOptions(DType::UInt8).device(device_));
      std::vector<uint8_t> zeros(static_cast<size_t>(k.workspace_bytes), 0);
      copy_bytes(w.data_ptr(), device_, zeros.data(), Device(DeviceType::CPU), zeros.size(), "kernel workspace");
    }
    workspaces_.push_back(std::move(w));
  }
}

void Executable::fail(const std::string& kernel, int status) const {
  const auto& sites = source_.error_sites;
  KILN_CHECK(status > 0 && static_cast<size_t>(status) <= sites.size(),
             "compiled kernel {} returned an unknown status {}", kernel, status);
  KILN_FAIL(ErrorKind::Value, "{}: ZeroDivisionError (integer division by zero)",
            sites[static_cast<size_t>(status - 1)]);
}

void Executable::check_input(size_t i, const Tensor& t) const {
  const graph::TensorMeta& want = inputs_[i];
  const std::string& name = program_.buffers[static_cast<size_t>(program_.inputs[i])].name;
  KILN_CHECK(t.defined(), "compiled function: input {} ({}) is an undefined tensor", i, name);
  KILN_CHECK(t.device() == want.device, "compiled function: input {} ({}) is on {}, expected {}", i, name, t.device(),
             want.device);
  KILN_CHECK_TYPE(t.dtype() == want.dtype, "compiled function: input {} ({}) has dtype {}, expected {}", i, name,
                  dtype_name(t.dtype()), dtype_name(want.dtype));
  KILN_CHECK(t.sizes().equals(want.sizes), "compiled function: input {} ({}) has sizes {}, expected {}", i, name,
             t.sizes(), want.sizes);
  int64_t numel = 1, low = 0, high = 0;  // the elements the view reaches, relative to its offset
  for (size_t d = 0; d < want.sizes.size(); ++d) {
    numel *= want.sizes[d];
    int64_t reach = (want.sizes[d] - 1) * want.strides[d];
    (reach < 0 ? low : high) += reach;
  }
  if (numel == 0) return;
  for (size_t d = 0; d < want.sizes.size(); ++d) {
    KILN_CHECK(want.sizes[d] == 1 || t.strides()[d] == want.strides[d],
               "compiled function: input {} ({}) of sizes {} has strides {}, expected {} (the compiled code is "
               "specialized to its strides)",
               i, name, want.sizes, t.strides(), want.strides);
  }
  auto item = static_cast<int64_t>(element_size(want.dtype));
  int64_t first = t.storage_offset() + low, end = t.storage_offset() + high + 1;
  KILN_CHECK(first >= 0 && end * item <= static_cast<int64_t>(t.storage()->nbytes()),
             "compiled function: input {} ({}) of sizes {}, strides {} and offset {} reaches elements {} to {} of its "
             "storage, which holds {} bytes ({} elements of {})",
             i, name, want.sizes, want.strides, t.storage_offset(), first, end - 1, t.storage()->nbytes(),
             static_cast<int64_t>(t.storage()->nbytes()) / item, dtype_name(want.dtype));
}

namespace {

Tensor view_of(const std::vector<Tensor>& tensors, const loopir::BufferView& v) {
  const Tensor& base = tensors.at(static_cast<size_t>(v.buffer));
  return make_tensor(base.storage(), v.sizes, v.strides, base.storage_offset() + v.offset, base.dtype());
}

// The memory plan trusts the op schema to say which results view which arguments; a result that
// shares memory with an argument outside its alias set would be overwritten behind its back.
void check_extern_result(const loopir::Program& p, const loopir::ExternCall& call, size_t i,
                         const std::vector<Tensor>& tensors) {
  const Tensor& r = tensors[static_cast<size_t>(call.outs[i])];
  if (!r.defined()) return;  // an optional result the graph never reads
  const auto& b = p.buffers[static_cast<size_t>(call.outs[i])];
  KILN_CHECK_KIND(r.dtype() == b.dtype && r.sizes().equals(b.sizes), ErrorKind::Internal,
                  "compiled function: extern {} returned result {} as {} {}, the trace said {} {}",
                  call.op->schema().qualified_name(), i, dtype_name(r.dtype()), r.sizes(), dtype_name(b.dtype),
                  b.sizes);
  const StorageImpl* memory = r.storage().get();
  auto aliased = compiler::aliased_arguments(call, i);
  for (const auto& v : aliased) {
    if (tensors[static_cast<size_t>(v.buffer)].storage().get() == memory) return;
  }
  loopir::for_each_view(call, [&](const loopir::BufferView& v) {
    KILN_CHECK_KIND(tensors[static_cast<size_t>(v.buffer)].storage().get() != memory, ErrorKind::Internal,
                    "compiled function: extern {} returned result {} sharing memory with its argument buf{}, which its "
                    "schema ({}) does not say it aliases",
                    call.op->schema().qualified_name(), i, v.buffer, call.op->schema().text);
  });
}

}  // namespace

std::vector<Tensor> Executable::run(std::span<const Tensor> inputs) const {
  const auto& p = program_;
  KILN_CHECK(inputs.size() == p.inputs.size(), "compiled function: expected {} inputs, got {}", p.inputs.size(),
             inputs.size());
  std::vector<Tensor> tensors(p.buffers.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check_input(i, inputs[i]);
    tensors[static_cast<size_t>(p.inputs[i])] = inputs[i];
  }
  for (size_t k = 0; k < p.constants.size(); ++k) tensors[static_cast<size_t>(p.constants[k].first)] = constants_[k];
  std::vector<Tensor> slots;
  for (int64_t bytes : plan_.slot_bytes) slots.push_back(empty({bytes}, TensorOptions(DType::UInt8).device(device_)));
  for (const auto& b : p.buffers) {
    if (b.role != loopir::BufferRole::Computed) continue;
    auto i = static_cast<size_t>(b.id);
    if (plan_.slot[i] >= 0) {
      tensors[i] = make_tensor(slots[static_cast<size_t>(plan_.slot[i])].storage(), b.sizes,
                               contiguous_strides(b.sizes), 0, b.dtype);
    } else if (plan_.output[i]) {
      tensors[i] = empty(b.sizes, TensorOptions(b.dtype).device(device_));
    }
  }
  // CUDA: the run's status word, on the device, zeroed before the first kernel, where a kernel
  // can report an error (an integer division by zero); its read at the end waits for the kernels.
  // Without one, the run is asynchronous, as PyTorch's CUDA ops are: its outputs are ready when
  // the stream's work is (a copy to the CPU waits for it).
  Tensor status_word;
  int host_status = 0;
  const bool reports = !device_.is_cpu() && !source_.error_sites.empty();
  if (reports) {
    status_word = empty({1}, TensorOptions(DType::Int32).device(device_));
    copy_bytes(status_word.data_ptr(), device_, &host_status, Device(DeviceType::CPU), sizeof(int), "status word");
  }
  size_t kernel = 0;
  std::vector<void*> args, params;
  for (const auto& item : schedule_.items) {
    if (std::holds_alternative<compiler::Kernel>(item)) {
      const auto& gk = source_.kernels[kernel];
      args.clear();
      for (int b : gk.buffers) args.push_back(tensors[static_cast<size_t>(b)].data_ptr());
      if (device_.is_cpu()) {
        int status = 0;
        args.push_back(&status);
        kernels_[kernel++](args.data());
        if (status != 0) fail(gk.name, status);
        continue;
      }
      args.push_back(reports ? status_word.data_ptr() : nullptr);
      if (gk.workspace_bytes > 0) args.push_back(workspaces_[kernel].data_ptr());
      params.clear();
      for (void*& a : args) params.push_back(&a);
      // Any module launches on its device (the function carries its own module).
      if (gk.launch.grid > 0) {
        modules_.front()->launch(functions_[kernel], gk.launch.grid, gk.launch.block, params.data(),
                                 gk.launch.dependent);
      }
      if (gk.finish.grid > 0) {
        modules_.front()->launch(finish_functions_[kernel], gk.finish.grid, gk.finish.block, params.data(),
                                 gk.finish.dependent);
      }
      ++kernel;
      continue;
    }
    const auto& call = std::get<loopir::ExternCall>(p.steps[static_cast<size_t>(std::get<int>(item))]);
    Stack stack;
    for (const auto& a : call.args) {
      if (const auto* v = std::get_if<loopir::BufferView>(&a)) {
        stack.emplace_back(view_of(tensors, *v));
      } else if (const auto* l = std::get_if<std::vector<std::optional<loopir::BufferView>>>(&a)) {
        // A Tensor?[] only where the list holds a None: a Tensor[] argument (cat's) takes no other.
        if (std::all_of(l->begin(), l->end(), [](const auto& x) { return x.has_value(); })) {
          std::vector<Tensor> list;
          for (const auto& x : *l) list.push_back(view_of(tensors, *x));
          stack.emplace_back(std::move(list));
        } else {
          std::vector<std::optional<Tensor>> list;
          for (const auto& x : *l) list.push_back(x ? std::optional<Tensor>(view_of(tensors, *x)) : std::nullopt);
          stack.emplace_back(std::move(list));
        }
      } else {
        stack.push_back(std::get<Value>(a));
      }
    }
    call_op_boxed(call.op, stack);
    for (size_t i = 0; i < call.outs.size(); ++i) {
      tensors[static_cast<size_t>(call.outs[i])] = stack.at(i).to_tensor();
      check_extern_result(p, call, i, tensors);
    }
  }
  if (reports) {
    // Waits for the kernels: the copy is ordered after them.
    copy_bytes(&host_status, Device(DeviceType::CPU), status_word.data_ptr(), device_, sizeof(int), "status word");
    if (host_status != 0) fail(fmt::format("of {}", device_), host_status);
  }
  std::vector<Tensor> outputs;
  for (const auto& o : p.outputs) outputs.push_back(view_of(tensors, o));
  return outputs;
}

std::shared_ptr<Executable> compile_graph(graph::Graph g, compiler::PipelineOptions options) {
  std::vector<graph::TensorMeta> inputs;
  for (const graph::Node* n : g.placeholders()) {
    const graph::TensorMeta& m = n->meta().at(0);
    inputs.push_back(m);
  }
  return std::make_shared<Executable>(std::move(inputs), compiler::run_pipeline(g, /*build=*/true, options));
}

}  // namespace kiln::runtime
