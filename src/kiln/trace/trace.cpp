#include "kiln/trace/trace.h"

#include <algorithm>
#include <numeric>
#include <unordered_map>

#include "kiln/decomp/leaf.h"
#include "kiln/decomp/prims/table.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/generated/handles.h"

namespace kiln::trace {
namespace {

struct Tracer {
  graph::Graph graph;
  Level level;
  const DecompositionTable* table = nullptr;
  // The device the traced program runs on; the trace itself runs on meta tensors.
  Device device = kCPU;
  // The graph value each live traced tensor stands for. Holding the tensors keeps their bodies
  // (and so the keys) alive for the whole trace.
  std::unordered_map<const TensorImpl*, graph::ValueRef> values;
  std::vector<Tensor> keep_alive;
  // Functionalization (core level): how each view was made from its root tensor, and how many
  // times each root was mutated. A view whose root changed since is recomputed when next used.
  struct ViewStep {
    OpHandle op;
    Stack args;  // the view op's arguments after self
  };
  struct ViewInfo {
    Tensor root;
    std::vector<ViewStep> chain;
    uint64_t version = 0;
  };
  std::unordered_map<const TensorImpl*, ViewInfo> views;
  std::unordered_map<const TensorImpl*, uint64_t> versions;
  std::vector<Tensor> inputs;
  DispatchKeySet below_trace;  // the keys a replayed view op runs on
  // Decompositions in progress (innermost last) and finished ones, when the caller asked.
  std::vector<size_t> open;  // indices into *decompositions, which may grow meanwhile
  std::vector<Decomposition>* decompositions = nullptr;
  bool keep_ops_without_prims = false;

  // Tells the innermost decomposition in progress that `op` appeared inside it.
  void note_recorded(OpHandle op) {
    if (decompositions && !open.empty()) (*decompositions)[open.back()].into.push_back(op->name());
  }

  graph::TensorMeta meta_of(const Tensor& t) const {
    graph::TensorMeta m = graph::TensorMeta::of(t);
    m.device = device;
    return m;
  }

  void bind(const Tensor& t, graph::ValueRef ref) {
    values[t.impl()] = ref;
    keep_alive.push_back(t);
  }

  graph::ValueRef ref_of(const Tensor& t, OpHandle op) {
    refresh_view(t);
    auto it = values.find(t.impl());
    KILN_CHECK(it != values.end(),
               "trace: {} received a tensor ({}) that is neither a traced input nor made inside the traced "
               "function; pass it as an input",
               op->name(), t.describe());
    return it->second;
  }

  void refresh_view(const Tensor& t);

  // A tensor with values made outside the trace (an index list a decomposition computed from sizes,
  // a tensor the traced function captured): the graph holds a copy, read by a get_attr node, as
  // torch.export lifts constants, and the trace goes on with its meta twin.
  std::unordered_map<const TensorImpl*, Tensor> constants;
  Tensor lifted(const Tensor& t) {
    if (t.device().is_meta() || values.count(t.impl())) return t;
    if (auto it = constants.find(t.impl()); it != constants.end()) return it->second;
    ExcludeDispatchKeys exclude{DispatchKeySet(DispatchKey::Trace)};
    Tensor value = clone(t, MemoryFormat::Contiguous);
    Tensor twin = empty(t.sizes(), TensorOptions(t.dtype()).device(Device(DeviceType::Meta)));
    graph::Node* node = graph.get_attr("_constant_" + std::to_string(constants.size()), value);
    bind(twin, node->result());
    constants[t.impl()] = twin;
    keep_alive.push_back(t);
    return twin;
  }
  // A write into such a tensor is refused: the graph cannot write back to it.
  void lift_constants(OpHandle op, Stack& stack) {
    const auto& arguments = op->schema().arguments;
    for (size_t i = 0; i < stack.size(); ++i) {
      Value& v = stack[i];
      if (i < arguments.size() && arguments[i].alias && arguments[i].alias->is_write && v.is_tensor()) {
        const Tensor& target = v.to_tensor();
        KILN_CHECK(target.device().is_meta() || values.count(target.impl()),
                   "trace: {} writes into a tensor ({}) that is neither a traced input nor made inside the traced "
                   "function; pass it as an input",
                   op->name(), target.describe());
        continue;
      }
      if (v.is_tensor()) {
        v = Value(lifted(v.to_tensor()));
      } else if (v.tag() == Value::Tag::TensorList) {
        std::vector<Tensor> list = v.to_tensor_list();
        for (Tensor& x : list) x = lifted(x);
        v = Value(std::move(list));
      } else if (v.tag() == Value::Tag::OptionalTensorList) {
        std::vector<std::optional<Tensor>> list = v.to_optional_tensor_list();
        for (auto& x : list) {
          if (x) x = lifted(*x);
        }
        v = Value(std::move(list));
      }
    }
  }

  graph::Arg arg_of(const Value& v, OpHandle op) {
    switch (v.tag()) {
      case Value::Tag::Tensor: return ref_of(v.to_tensor(), op);
      case Value::Tag::TensorList: {
        std::vector<graph::ValueRef> refs;
        for (const auto& t : v.to_tensor_list()) refs.push_back(ref_of(t, op));
        return refs;
      }
      case Value::Tag::OptionalTensorList: {
        std::vector<graph::ValueRef> refs;
        for (const auto& t : v.to_optional_tensor_list()) refs.push_back(t ? ref_of(*t, op) : graph::ValueRef{});
        return refs;
      }
      case Value::Tag::Device:
        // Code under trace sees meta tensors, so devices it derives from them say meta; the graph
        // records the device the program really runs on.
        return v.to_device().is_meta() ? Value(device) : v;
      default: return v;
    }
  }
};

thread_local Tracer* active = nullptr;

void record(Tracer& t, OpHandle op, Stack& stack, DispatchKeySet rest);

// Records `op(self, args...)` and returns its (meta) result.
Tensor record_call(Tracer& t, OpHandle op, const Tensor& self, const Stack& args) {
  Stack stack{Value(self)};
  stack.insert(stack.end(), args.begin(), args.end());
  record(t, op, stack, t.below_trace);
  return stack.at(0).to_tensor();
}

// The current value of `view`'s root viewed through the first `n` steps of its chain.
Tensor replay(Tracer& t, const Tracer::ViewInfo& info, size_t n) {
  Tensor x = info.root;
  for (size_t i = 0; i < n; ++i) x = record_call(t, info.chain[i].op, x, info.chain[i].args);
  return x;
}

void Tracer::refresh_view(const Tensor& v) {
  auto it = views.find(v.impl());
  if (it == views.end() || it->second.version == versions[it->second.root.impl()]) return;
  ViewInfo info = it->second;
  Tensor fresh = replay(*this, info, info.chain.size());
  values[v.impl()] = values.at(fresh.impl());
  views[v.impl()].version = versions[info.root.impl()];
}

// Any other view (diagonal, as_strided, ...): which elements of `parent` it covers is found by
// applying the same view to the row-major positions of `parent`; src is scattered there.
Tensor scatter_through_positions(Tracer& t, const Tracer::ViewStep& step, const Tensor& parent, const Tensor& src) {
  if (step.op == op::aten::as_strided()) {
    KILN_CHECK_KIND(parent.is_contiguous() && parent.storage_offset() == 0, ErrorKind::NotImplemented,
                    "trace: functionalizing a write through as_strided of a non-contiguous or offset tensor ({}) is "
                    "not supported yet",
                    parent.describe());
  }
  auto call = [&](OpHandle op, Stack args) {
    record(t, op, args, t.below_trace);
    return args.at(0).to_tensor();
  };
  std::vector<int64_t> flat{-1};
  Tensor positions = call(op::aten::arange_start_step(), {Value(int64_t{0}), Value(parent.numel()), Value(int64_t{1}),
                                                          Value(DType::Int64), Value(), Value(t.device), Value()});
  positions = call(op::aten::view(), {Value(positions), Value(parent.sizes().vec())});
  Tensor covered = record_call(t, step.op, positions, step.args);
  Tensor covered_flat = call(op::aten::reshape(), {Value(covered), Value(flat)});
  Tensor src_flat = call(op::aten::reshape(), {Value(src), Value(flat)});
  Tensor parent_flat = call(op::aten::reshape(), {Value(parent), Value(flat)});
  Tensor updated =
      call(op::aten::scatter_src(), {Value(parent_flat), Value(int64_t{0}), Value(covered_flat), Value(src_flat)});
  return call(op::aten::view(), {Value(updated), Value(parent.sizes().vec())});
}

// What writing `src` into the result of view step `step` of `parent` makes of `parent`.
Tensor scatter_back(Tracer& t, const Tracer::ViewStep& step, const Tensor& parent, const Tensor& src) {
  OpHandle view = step.op;
  auto call = [&](OpHandle op, Stack args) { return record_call(t, op, parent, args); };
  if (view == op::aten::slice_Tensor()) {
    Stack args{Value(src)};
    args.insert(args.end(), step.args.begin(), step.args.end());
    return call(op::aten::slice_scatter(), args);
  }
  if (view == op::aten::select_int()) return call(op::aten::select_scatter(), {Value(src), step.args[0], step.args[1]});
  auto reshaped = [&] { return record_call(t, op::aten::view(), src, {Value(parent.sizes().vec())}); };
  if (view == op::aten::view() || view == op::aten::unsqueeze() || view == op::aten::squeeze() ||
      view == op::aten::squeeze_dim() || view == op::aten::squeeze_dims() || view == op::aten::alias()) {
    return reshaped();
  }
  if (view == op::aten::permute()) {
    const auto& dims = step.args[0].to_int_list();
    std::vector<int64_t> inverse(dims.size());
    for (size_t i = 0; i < dims.size(); ++i)
      inverse[static_cast<size_t>(wrap_dim(dims[i], parent.dim(), "permute"))] = static_cast<int64_t>(i);
    return record_call(t, op::aten::permute(), src, {Value(inverse)});
  }
  KILN_CHECK(view != op::aten::expand(),
             "trace: an in-place write through an expanded view writes some elements more than "
             "once (unsupported, as in PyTorch); clone the expanded tensor first");
  return scatter_through_positions(t, step, parent, src);
}

// The functional op an in-place op stands for (add_.Tensor -> add.Tensor, zero_ -> fill.Scalar).
OpHandle functional_variant(OpHandle op, Stack& stack) {
  if (op == op::aten::zero_()) {
    stack.emplace_back(Scalar(0));
    return op::aten::fill_Scalar();
  }
  OpHandle f = Registry::global().functional_variant(op);
  KILN_CHECK(f != nullptr, "trace: {} has no functional form to functionalize into", op->name());
  return f;
}

// Gives `target` (a traced input, a tensor made in the trace, or a view of one) the new value
// `value`: the op `op` wrote it. A view's new value is scattered back into its root, so the root
// and every view of it read the write.
void assign(Tracer& t, const Tensor& target, Tensor value, OpHandle op) {
  KILN_CHECK(value.sizes().equals(target.sizes()), "{}: output with shape {} doesn't match the broadcast shape {}",
             op->name(), target.sizes(), value.sizes());
  if (value.dtype() != target.dtype()) {
    value = record_call(t, op::aten::_to_copy(), value,
                        {Value(target.dtype()), Value(), Value(), Value(), Value(false), Value()});
  }
  auto view = t.views.find(target.impl());
  if (view == t.views.end()) {
    t.values[target.impl()] = t.values.at(value.impl());
    ++t.versions[target.impl()];
    return;
  }
  Tracer::ViewInfo info = view->second;
  Tensor updated = value;
  for (size_t i = info.chain.size(); i-- > 0;) updated = scatter_back(t, info.chain[i], replay(t, info, i), updated);
  t.values[info.root.impl()] = t.values.at(updated.impl());
  uint64_t version = ++t.versions[info.root.impl()];
  t.values[target.impl()] = t.values.at(value.impl());
  t.views[target.impl()].version = version;
}

bool writes_self_in_place(const Schema& s) {
  return s.name.ends_with("_") && !s.arguments.empty() && s.arguments[0].alias && s.arguments[0].alias->is_write;
}

}  // namespace

bool has_functional_form(OpHandle op) {
  auto& r = Registry::global();
  if (writes_self_in_place(op->schema())) return op == op::aten::zero_() || r.functional_variant(op) != nullptr;
  if (Registry::is_out_variant(op)) return r.functional_of_out_variant(op) != nullptr;
  return op == op::aten::_native_batch_norm_legit();
}

namespace {

// resize_ changes self's sizes, which no write of a value does: aten::resize makes self's new value
// (its storage's leading elements in the new geometry), and self is resized below the trace, so
// later ops see its new sizes and read that value.
void functionalize_resize(Tracer& t, Stack& stack) {
  Tensor self = stack.at(0).to_tensor();
  KILN_CHECK_KIND(!t.views.contains(self.impl()), ErrorKind::NotImplemented,
                  "trace: resize_ of a view ({}) is not supported; resize a copy", self.describe());
  Stack args = stack;
  record(t, KILN_OP("aten::resize"), args, t.below_trace);
  Tensor value = args.at(0).to_tensor();
  {
    ExcludeDispatchKeys untraced{DispatchKeySet(DispatchKey::Trace)};
    call_op_boxed(KILN_OP("aten::resize_"), stack);
  }
  t.values[self.impl()] = t.values.at(value.impl());
  ++t.versions[self.impl()];
  stack.clear();
  stack.emplace_back(self);
}

// Core level: an op that writes arguments is recorded as its functional form, and the written
// arguments get the new values:
//   in-place (abs_, add_.Tensor): the functional op's result becomes self;
//   out= (atan2.out): the functional op's result becomes `out`;
//   _native_batch_norm_legit: its functional form also returns the updated running statistics.
void functionalize(Tracer& t, OpHandle op, Stack& stack) {
  const Schema& s = op->schema();
  auto& r = Registry::global();
  if (op == KILN_OP("aten::resize_")) return functionalize_resize(t, stack);
  if (writes_self_in_place(s)) {
    Tensor self = stack.at(0).to_tensor();
    OpHandle functional = functional_variant(op, stack);
    record(t, functional, stack, t.below_trace);
    assign(t, self, stack.at(0).to_tensor(), op);
    stack.clear();
    stack.emplace_back(self);
    return;
  }
  if (Registry::is_out_variant(op)) {
    OpHandle functional = r.functional_of_out_variant(op);
    KILN_CHECK_KIND(functional != nullptr, ErrorKind::NotImplemented, "trace: {} has no functional form", op->name());
    Tensor out = stack.back().to_tensor();
    stack.pop_back();
    record(t, functional, stack, t.below_trace);
    assign(t, out, stack.at(0).to_tensor(), op);
    stack.clear();
    stack.emplace_back(out);
    return;
  }
  if (op == op::aten::_native_batch_norm_legit()) {
    Tensor running_mean = stack.at(3).to_tensor(), running_var = stack.at(4).to_tensor();
    record(t, op::aten::_native_batch_norm_legit_functional(), stack, t.below_trace);
    assign(t, running_mean, stack.at(3).to_tensor(), op);
    assign(t, running_var, stack.at(4).to_tensor(), op);
    stack.resize(3);
    return;
  }
  KILN_FAIL(ErrorKind::NotImplemented, "trace: functionalizing {} (which writes {}) is not supported yet", op->name(),
            s.text);
}

// Core level: remembers how a view was made, so mutations through it can be written back.
void note_view(Tracer& t, OpHandle op, const Stack& args_in, const Tensor& result) {
  const Tensor& self = args_in.at(0).to_tensor();
  Tracer::ViewInfo info;
  auto parent = t.views.find(self.impl());
  if (parent != t.views.end()) {
    info = parent->second;
  } else {
    info.root = self;
  }
  info.chain.push_back({op, Stack(args_in.begin() + 1, args_in.end())});
  info.version = t.versions[info.root.impl()];
  t.views[result.impl()] = std::move(info);
}

// The decomposition a trace runs instead of recording `op`, or nullptr: at the core and prims
// levels the compound ops the table names (but not, at the prims level, one that level keeps whole:
// flash attention); at the prims level also every non-prim op with a prims decomposition. Its ops
// are recorded (or decomposed) in its place.
const BoxedKernel* compound_decomposition(const Tracer& t, OpHandle op) {
  if (t.level == Level::Prims && stays_at_prims_level(op)) return nullptr;
  return t.level != Level::ATen && t.table->decomposes(op) ? op->compound_kernel() : nullptr;
}

const BoxedKernel* prims_decomposition(const Tracer& t, OpHandle op, const Stack& args) {
  if (t.level != Level::Prims || op->has_tag(OpTag::Prim) || stays_at_prims_level(op)) return nullptr;
  if (has_complex_operand(args) && op->kernel(DispatchKey::CPU) != nullptr) return nullptr;
  const auto& table = prims_decompositions();
  auto it = table.find(op);
  if (it != table.end()) return &it->second;
  if (op->kind() == OpKind::Compound && op->compound_kernel()) return op->compound_kernel();
  if (t.keep_ops_without_prims) return nullptr;
  KILN_FAIL(ErrorKind::NotImplemented, "trace (prims level): {} has no decomposition into prims yet", op->name());
}

void run_decomposition(Tracer& t, OpHandle op, const BoxedKernel& kernel, Stack& stack) {
  if (!t.decompositions) return kernel(stack);
  size_t index = t.decompositions->size();
  t.decompositions->push_back({op->name(), {}});
  t.note_recorded(op);
  t.open.push_back(index);
  struct Frame {
    Tracer& t;
    ~Frame() { t.open.pop_back(); }
  } frame{t};
  kernel(stack);
}

// The strides of `op`'s tensor results as its eager kernel lays them out (its meta kernel, run
// untraced on the traced arguments), for a non-view op with a meta kernel; empty otherwise.
std::vector<Shape> eager_result_strides(OpHandle op, const Stack& args) {
  const BoxedKernel* meta = op->kernel(DispatchKey::Meta);
  if (op->has_tag(OpTag::View) || !meta) return {};
  Stack s = args;
  {
    ExcludeDispatchKeys exclude{DispatchKeySet(DispatchKey::Trace)};
    (*meta)(s);
  }
  std::vector<Shape> strides;
  for (const Value& v : s) strides.push_back(v.is_tensor() ? Shape(v.to_tensor().strides()) : Shape{});
  return strides;
}

// A decomposition computes its op's values but may lay them out differently (floor division's
// `where` follows its first operand's layout, the kernel the layout of all of them). Each result
// whose eager layout is dense and differs is copied into it (a permuted contiguous copy, so the
// trace records only prims), so later views and the graph's outputs see eager's strides. Strides of
// size-1 dims address nothing but still steer later layouts (TensorIterator's ordering, cat's
// channels-last test): where only they differ, an as_strided view sets them.
void restride_results(Stack& results, const std::vector<Shape>& eager_strides) {
  if (eager_strides.size() != results.size()) return;
  for (size_t i = 0; i < results.size(); ++i) {
    if (!results[i].is_tensor()) continue;
    Tensor y = results[i].to_tensor();
    const Shape& want = eager_strides[i];
    if (want.size() != static_cast<size_t>(y.dim()) || y.numel() == 0) continue;
    auto differs = [&](bool size_one_dims) {
      for (int64_t d = 0; d < y.dim(); ++d) {
        if ((y.sizes()[d] > 1 || size_one_dims) && y.strides()[d] != want[d]) return true;
      }
      return false;
    };
    if (differs(false)) {
      // want's dims outermost first (a size-1 dim inside a larger one of equal stride, as a dense
      // layout gives it that stride); dense when each stride is the product of the sizes inside it.
      Shape order(static_cast<size_t>(y.dim()));
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        if (want[a] != want[b]) return want[a] > want[b];
        return y.sizes()[a] > 1 && y.sizes()[b] == 1;
      });
      int64_t stride = 1;
      bool dense = true;
      for (size_t k = order.size(); k-- > 0;) {
        int64_t d = order[k];
        dense = dense && (y.sizes()[d] == 1 || want[d] == stride);
        stride *= y.sizes()[d];
      }
      if (!dense) continue;
      Shape inverse(order.size());
      for (size_t k = 0; k < order.size(); ++k) inverse[order[k]] = static_cast<int64_t>(k);
      y = permute(contiguous(permute(y, order)), inverse);
    }
    if (differs(true)) y = as_strided(y, y.sizes(), want, y.storage_offset());
    results[i] = y;
  }
}

// Where an op's output_mask argument is in its stack, and the mask given; nullopt without one.
struct OutputMask {
  size_t at;
  std::vector<bool> given;
};
std::optional<OutputMask> output_mask_of(OpHandle op, const Stack& stack) {
  const auto& arguments = op->schema().arguments;
  for (size_t i = 0; i < arguments.size() && i < stack.size(); ++i) {
    if (arguments[i].name == "output_mask" && !stack[i].is_none()) return OutputMask{i, stack[i].to_bool_list()};
  }
  return std::nullopt;
}

// Whether `op` runs on `stack` (meta tensors) without a kiln::Error, recording nothing.
bool runs_on_meta(OpHandle op, Stack stack) {
  ExcludeDispatchKeys exclude{DispatchKeySet(DispatchKey::Trace)};
  try {
    redispatch(op, stack, DispatchKeySet(DispatchKey::Meta));
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool is_single_view(OpHandle op, const Stack& results) {
  return op->has_tag(OpTag::View) && results.size() == 1 && results[0].is_tensor();
}

void record(Tracer& t, OpHandle op, Stack& stack, DispatchKeySet rest) {
  if (op->has_tag(OpTag::Metadata)) {
    // A size, stride or contiguity read: shapes are static, so the value is a constant of the
    // trace (torch.compile specializes the same way without dynamic shapes), not a node.
    ExcludeDispatchKeys exclude{DispatchKeySet(DispatchKey::Trace)};
    return redispatch(op, stack, DispatchKeySet(DispatchKey::Meta));
  }
  t.lift_constants(op, stack);
  if (const BoxedKernel* compound = compound_decomposition(t, op)) return run_decomposition(t, op, *compound, stack);
  bool functionalizing = t.level != Level::ATen;
  if (functionalizing && op->schema().is_mutable()) {
    functionalize(t, op, stack);
    return;
  }
  if (const BoxedKernel* prims = prims_decomposition(t, op, stack)) {
    Stack original = stack;
    std::vector<Shape> eager_strides = eager_result_strides(op, stack);
    run_decomposition(t, op, *prims, stack);
    restride_results(stack, eager_strides);
    // Mutations through this view are written back by the Core ATen view op, not its prims.
    if (is_single_view(op, stack)) note_view(t, op, original, stack[0].to_tensor());
    return;
  }
  // An output_mask (the backward ops) turns results into None, which graphs do not carry: the node
  // computes every result, and the caller gets None where it asked for none. Where the op cannot
  // give every result (a weight gradient without a weight), its decomposition records the ones
  // asked for instead.
  std::optional<OutputMask> mask = output_mask_of(op, stack);
  if (mask) {
    Stack full = stack;
    full[mask->at] = Value(std::vector<bool>(mask->given.size(), true));
    if (runs_on_meta(op, full)) {
      stack = std::move(full);
    } else if (auto it = leaf_decompositions().find(op); it != leaf_decompositions().end()) {
      return run_decomposition(t, op, it->second, stack);
    }
  }
  Stack original = stack;
  std::vector<graph::Arg> args;
  bool takes_tensors = false;
  for (const Value& v : stack) {
    args.push_back(t.arg_of(v, op));
    takes_tensors = takes_tensors || !std::holds_alternative<Value>(args.back());
  }
  {
    ExcludeDispatchKeys exclude{DispatchKeySet(DispatchKey::Trace)};
    // Factories would allocate on their device; during a trace everything lives on meta.
    redispatch(op, stack, takes_tensors ? rest : DispatchKeySet(DispatchKey::Meta));
  }
  std::vector<Tensor> results;
  for (const Value& v : stack) {
    if (v.is_tensor()) {
      results.push_back(v.to_tensor());
    } else if (v.tag() == Value::Tag::TensorList) {
      for (const auto& x : v.to_tensor_list()) results.push_back(x);
    } else {
      KILN_FAIL(ErrorKind::NotImplemented, "trace: {} returns a {}, which graphs do not carry yet", op->name(),
                v.type_name());
    }
  }
  std::vector<graph::TensorMeta> meta;
  for (const auto& r : results) meta.push_back(t.meta_of(r));
  graph::Node* node = t.graph.call(op, std::move(args), std::move(meta));
  t.note_recorded(op);
  for (size_t i = 0; i < results.size(); ++i) t.bind(results[i], node->result(static_cast<int>(i)));
  if (functionalizing && is_single_view(op, stack)) note_view(t, op, original, results[0]);
  for (size_t i = 0; mask && i < mask->given.size() && i < stack.size(); ++i) {
    if (!mask->given[i]) stack[i] = Value();
  }
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_fallback(DispatchKey::Trace, [](OpHandle op, Stack& stack, DispatchKeySet rest) {
    if (!active) return redispatch(op, stack, rest);
    active->below_trace = rest;
    record(*active, op, stack, rest);
  });
});

}  // namespace

graph::Graph trace(const TracedFn& fn, std::span<const Tensor> example_inputs, Level level) {
  return trace(
      fn, example_inputs,
      TraceOptions{
          .level = level, .names = {}, .table = nullptr, .decompositions = nullptr, .keep_ops_without_prims = false});
}

graph::Graph trace(const TracedFn& fn, std::span<const Tensor> example_inputs, const TraceOptions& options) {
  static const DecompositionTable kDefaultTable = DecompositionTable::core_aten();
  const auto& names = options.names;
  KILN_CHECK(active == nullptr, "trace: tracing inside a traced function is not supported");
  KILN_CHECK(names.empty() || names.size() == example_inputs.size(), "trace: {} names for {} inputs", names.size(),
             example_inputs.size());
  Tracer tracer;
  tracer.level = options.level;
  tracer.table = options.table ? options.table : &kDefaultTable;
  tracer.decompositions = options.decompositions;
  tracer.keep_ops_without_prims = options.keep_ops_without_prims;
  if (!example_inputs.empty()) tracer.device = example_inputs[0].device();
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    Tensor m = to_meta(example_inputs[i]);
    std::string name = names.empty() ? fmt::format("arg{}", i) : names[i];
    tracer.bind(m, tracer.graph.placeholder(name, tracer.meta_of(m))->result());
    inputs.push_back(m);
    tracer.inputs.push_back(m);
  }
  std::vector<Tensor> outputs;
  {
    active = &tracer;
    struct Reset {
      ~Reset() { active = nullptr; }
    } reset;
    IncludeDispatchKeys include{DispatchKeySet(DispatchKey::Trace)};
    outputs = fn(inputs);
  }
  std::vector<graph::ValueRef> refs;
  for (const auto& o : outputs) {
    tracer.refresh_view(o);
    auto it = tracer.values.find(o.impl());
    KILN_CHECK(it != tracer.values.end(), "trace: an output ({}) was not computed from the inputs", o.describe());
    refs.push_back(it->second);
  }
  // Inputs the function mutated get their final values written back at the graph's boundary.
  auto placeholders = tracer.graph.placeholders();
  OpHandle copy_ = op::aten::copy_();
  for (size_t i = 0; i < tracer.inputs.size(); ++i) {
    graph::ValueRef now = tracer.values.at(tracer.inputs[i].impl());
    if (now.node == placeholders[i]) continue;
    std::string name = "write_back_";
    name.append(placeholders[i]->name());
    tracer.graph.call(copy_, {placeholders[i]->result(), now, Value(false)}, {placeholders[i]->meta()[0]}, name);
  }
  tracer.graph.output(std::move(refs));
  return std::move(tracer.graph);
}

}  // namespace kiln::trace
