#include "kiln/runtime/executable.h"

#include "kiln/compiler/loopir/verify.h"
#include "kiln/compiler/lower/lower.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/support/log.h"

namespace kiln::runtime {

Executable::Executable(loopir::Program program, compiler::Schedule schedule, compiler::GeneratedSource source,
                       std::shared_ptr<compiler::Library> library)
    : program_(std::move(program)),
      schedule_(std::move(schedule)),
      source_(std::move(source)),
      library_(std::move(library)),
      plan_(compiler::plan_memory(program_, schedule_)) {
  for (const auto& k : source_.kernels) kernels_.push_back(reinterpret_cast<KernelFn>(library_->symbol(k.name)));
}

namespace {

Tensor view_of(const std::vector<Tensor>& tensors, const loopir::BufferView& v) {
  const Tensor& base = tensors.at(static_cast<size_t>(v.buffer));
  return make_tensor(base.storage(), v.sizes, v.strides, base.storage_offset() + v.offset, base.dtype());
}

}  // namespace

std::vector<Tensor> Executable::run(std::span<const Tensor> inputs) const {
  const auto& p = program_;
  KILN_CHECK(inputs.size() == p.inputs.size(), "compiled function: expected {} inputs, got {}", p.inputs.size(),
             inputs.size());
  std::vector<Tensor> tensors(p.buffers.size());
  for (size_t i = 0; i < inputs.size(); ++i) tensors[static_cast<size_t>(p.inputs[i])] = inputs[i];
  std::vector<Tensor> slots;
  for (int64_t bytes : plan_.slot_bytes) slots.push_back(empty({bytes}, TensorOptions(DType::UInt8)));
  for (const auto& b : p.buffers) {
    if (b.role != loopir::BufferRole::Computed) continue;
    auto i = static_cast<size_t>(b.id);
    if (plan_.slot[i] >= 0) {
      tensors[i] = make_tensor(slots[static_cast<size_t>(plan_.slot[i])].storage(), b.sizes, contiguous_strides(b.sizes),
                               0, b.dtype);
    } else if (plan_.output[i]) {
      tensors[i] = empty(b.sizes, TensorOptions(b.dtype));
    }
  }
  size_t kernel = 0;
  std::vector<void*> args;
  for (const auto& item : schedule_.items) {
    if (std::holds_alternative<compiler::Kernel>(item)) {
      const auto& gk = source_.kernels[kernel];
      args.clear();
      for (int b : gk.buffers) args.push_back(tensors[static_cast<size_t>(b)].data_ptr());
      int status = 0;
      args.push_back(&status);
      kernels_[kernel++](args.data());
      if (status != 0) {
        const auto& sites = source_.error_sites;
        KILN_CHECK(status > 0 && static_cast<size_t>(status) <= sites.size(),
                   "compiled kernel {} returned an unknown status {}", gk.name, status);
        KILN_FAIL(ErrorKind::Value, "{}: ZeroDivisionError (integer division by zero)",
                  sites[static_cast<size_t>(status - 1)]);
      }
      continue;
    }
    const auto& call = std::get<loopir::ExternCall>(p.steps[static_cast<size_t>(std::get<int>(item))]);
    Stack stack;
    for (const auto& a : call.args) {
      if (const auto* v = std::get_if<loopir::BufferView>(&a)) {
        stack.emplace_back(view_of(tensors, *v));
      } else if (const auto* l = std::get_if<std::vector<loopir::BufferView>>(&a)) {
        std::vector<Tensor> list;
        for (const auto& x : *l) list.push_back(view_of(tensors, x));
        stack.emplace_back(std::move(list));
      } else {
        stack.push_back(std::get<Value>(a));
      }
    }
    call_op_boxed(call.op, stack);
    for (size_t i = 0; i < call.outs.size(); ++i) tensors[static_cast<size_t>(call.outs[i])] = stack.at(i).to_tensor();
  }
  std::vector<Tensor> outputs;
  for (const auto& o : p.outputs) outputs.push_back(view_of(tensors, o));
  return outputs;
}

std::shared_ptr<Executable> compile_graph(const graph::Graph& g) {
  loopir::Program program = compiler::lower(g);
  loopir::verify(program);
  KILN_LOG("loop_ir", "lowered:\n{}", program.str());
  compiler::Schedule schedule = compiler::schedule(program);
  KILN_LOG("schedule", "{}", schedule.str(program));
  compiler::GeneratedSource source = compiler::generate_cpp(program, schedule);
  KILN_LOG("output_code", "{}", source.code);
  auto library = compiler::compile_cpp(source.code);
  return std::make_shared<Executable>(std::move(program), std::move(schedule), std::move(source), std::move(library));
}

}  // namespace kiln::runtime
