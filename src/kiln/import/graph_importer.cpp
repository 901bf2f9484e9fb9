#include "kiln/import/graph_importer.h"

#include "kiln/ops/dispatcher.h"
#include "kiln/ops/generated/handles.h"

namespace kiln::import {
namespace {

Tensor meta_tensor(const graph::TensorMeta& m) {
  return Tensor(empty_strided_tensor(m.sizes, m.strides, m.dtype, kMeta));
}

bool is_number(const Value& v) {
  return v.tag() == Value::Tag::Int || v.tag() == Value::Tag::Double || v.tag() == Value::Tag::Bool;
}

// PyTorch's graphs pass Python numbers for Tensor arguments (`add.Tensor(x, 1)`: the number is a
// "wrapped number", promoted as a scalar). kiln's graphs say the same with the overload that takes
// a Scalar there (`add.Scalar(x, 1)`): same name, same arguments, Scalar at `index`.
OpHandle scalar_overload(OpHandle op, size_t index) {
  const Schema& want = op->schema();
  for (OpHandle candidate : Registry::global().overloads(want.ns + "::" + want.name)) {
    const Schema& s = candidate->schema();
    if (s.arguments.size() != want.arguments.size() || s.returns.size() != want.returns.size()) {
      continue;
    }
    bool same = true;
    for (size_t i = 0; i < s.arguments.size() && same; ++i) {
      const Argument& a = s.arguments[i];
      const Argument& b = want.arguments[i];
      same = a.name == b.name && (i == index ? a.type.base == BaseType::Scalar && !a.type.list : a.type == b.type);
    }
    if (same) return candidate;
  }
  return nullptr;
}

// -alpha for sub's `alpha` (an int or a float; absent means 1).
Value negated(const Value* alpha) {
  if (!alpha) return Value(int64_t{-1});
  if (alpha->tag() == Value::Tag::Int) return Value(-alpha->to_int());
  KILN_CHECK_TYPE(alpha->tag() == Value::Tag::Double, "sub: alpha {} is not a number", alpha->repr());
  return Value(-alpha->to_double());
}

}  // namespace

GraphImporter::GraphImporter(std::string source) : source_(std::move(source)) {}

void GraphImporter::input(const std::string& name, const graph::TensorMeta& meta) {
  KILN_CHECK(!values_.count(name), "{}: input '{}' is defined twice", source_, name);
  KILN_CHECK(values_.empty() || meta.device == device_, "{}: input '{}' is on {} but earlier inputs on {}", source_,
             name, meta.device, device_);
  device_ = meta.device;
  graph::Node* node = graph_.placeholder(name, meta);
  values_[name] = Bound{node->result(), meta_tensor(meta)};
}

const GraphImporter::Bound& GraphImporter::lookup(const std::string& name, const std::string& node_name,
                                                  const std::string& argument) const {
  auto it = values_.find(name);
  KILN_CHECK(it != values_.end(), "{}: node '{}' reads '{}' (argument '{}'), which no earlier node or input defines",
             source_, node_name, name, argument);
  return it->second;
}

graph::TensorMeta GraphImporter::meta(const std::string& name) const {
  auto it = values_.find(name);
  KILN_CHECK(it != values_.end(), "{}: no value named '{}'", source_, name);
  graph::TensorMeta m = graph::TensorMeta::of(it->second.meta);
  m.device = device_;
  return m;
}

void GraphImporter::call(const std::string& node_name, OpHandle op,
                         const std::vector<std::pair<std::string, CallArg>>& args,
                         const std::vector<std::string>& outputs,
                         const std::vector<std::optional<RecordedMeta>>& recorded) {
  const std::string where = fmt::format("{}: node '{}' ({})", source_, node_name, op->name());
  if (op == op::aten::sub_Tensor() && sub_from_number(node_name, args, outputs, recorded)) return;
  // Each given argument goes to its schema position; the positions up to the last given one that
  // were not given take their defaults.
  std::vector<const CallArg*> given(op->schema().arguments.size(), nullptr);
  size_t count = 0;
  for (const auto& [name, arg] : args) {
    int64_t index = op->schema().argument_index(name);
    KILN_CHECK(index >= 0, "{}: the schema has no argument '{}' ({})", where, name, op->schema().text);
    auto i = static_cast<size_t>(index);
    KILN_CHECK(!given[i], "{}: argument '{}' is given twice", where, name);
    given[i] = &arg;
    count = std::max(count, i + 1);
    const Type& type = op->schema().arguments[i].type;
    const auto* constant = std::get_if<Value>(&arg);
    if (constant && is_number(*constant) && type.base == BaseType::Tensor && !type.list) {
      OpHandle alternative = scalar_overload(op, i);
      KILN_CHECK(alternative,
                 "{}: argument '{}' is the number {} where the schema takes a Tensor, and no overload "
                 "takes a Scalar there",
                 where, name, constant->repr());
      op = alternative;
    }
  }
  const Schema& schema = op->schema();
  std::vector<graph::Arg> node_args;
  Stack stack;
  for (size_t i = 0; i < count; ++i) {
    const Argument& formal = schema.arguments[i];
    if (!given[i]) {
      KILN_CHECK(formal.default_text.has_value(), "{}: argument '{}' is missing and has no default", where,
                 formal.name);
      Value v = parse_default(*formal.default_text, formal.type);
      node_args.emplace_back(v);
      stack.push_back(std::move(v));
      continue;
    }
    if (const auto* constant = std::get_if<Value>(given[i])) {
      Value v = *constant;
      KILN_CHECK(coerce_value(v, formal.type), "{}: argument '{}' is a {} ({}) where the schema takes {}", where,
                 formal.name, v.type_name(), v.repr(), formal.type.to_string());
      node_args.emplace_back(v);
      stack.push_back(std::move(v));
    } else if (const auto* tensor = std::get_if<TensorName>(given[i])) {
      KILN_CHECK(formal.type.base == BaseType::Tensor && !formal.type.list,
                 "{}: argument '{}' is the tensor '{}' where the schema takes {}", where, formal.name, tensor->name,
                 formal.type.to_string());
      const Bound& b = lookup(tensor->name, node_name, formal.name);
      node_args.emplace_back(b.ref);
      stack.emplace_back(b.meta);
    } else {
      const auto& list = std::get<std::vector<std::optional<TensorName>>>(*given[i]);
      KILN_CHECK(formal.type.base == BaseType::Tensor && formal.type.list,
                 "{}: argument '{}' is a list of tensors where the schema takes {}", where, formal.name,
                 formal.type.to_string());
      std::vector<graph::ValueRef> refs;
      std::vector<std::optional<Tensor>> metas;
      for (const auto& element : list) {
        KILN_CHECK(element || formal.type.element_optional, "{}: argument '{}' ({}) holds None", where, formal.name,
                   formal.type.to_string());
        if (!element) {
          refs.push_back(graph::ValueRef{});
          metas.emplace_back(std::nullopt);
          continue;
        }
        const Bound& b = lookup(element->name, node_name, formal.name);
        refs.push_back(b.ref);
        metas.emplace_back(b.meta);
      }
      node_args.emplace_back(std::move(refs));
      if (formal.type.element_optional) {
        stack.emplace_back(std::move(metas));
      } else {
        std::vector<Tensor> tensors;
        for (auto& m : metas) tensors.push_back(std::move(*m));
        stack.emplace_back(std::move(tensors));
      }
    }
  }

  // The meta kernels run on meta tensors; a factory's explicit or default device would make a real
  // tensor beside them, so every Device argument says meta for this run (not in the graph).
  for (size_t i = 0; i < schema.arguments.size(); ++i) {
    if (schema.arguments[i].type.base != BaseType::Device) continue;
    while (stack.size() <= i) {
      const Argument& formal = schema.arguments[stack.size()];
      KILN_CHECK(formal.default_text.has_value(), "{}: argument '{}' is missing and has no default", where,
                 formal.name);
      stack.push_back(parse_default(*formal.default_text, formal.type));
    }
    stack[i] = Value(kMeta);
  }
  // A backward op's output_mask turns results into None, which graphs do not carry (the tracer does
  // the same): where the op's meta kernel takes a full mask, the node computes every result and the
  // ones PyTorch's graph asked not to compute are left unnamed.
  bool ran = false;
  int64_t mask_at = schema.argument_index("output_mask");
  if (mask_at >= 0 && static_cast<size_t>(mask_at) < node_args.size() && stack[mask_at].tag() == Value::Tag::BoolList) {
    std::vector<bool> full_mask(stack[mask_at].to_bool_list().size(), true);
    if (stack[mask_at].to_bool_list() != full_mask) {
      Stack full = stack;
      full[mask_at] = Value(full_mask);
      try {
        call_op_boxed(op, full);
        node_args[mask_at] = Value(full_mask);
        stack = std::move(full);
        ran = true;
      } catch (const Error&) {
        // The op cannot give every result (a weight gradient without a weight): keep the mask.
      }
    }
  }
  try {
    if (!ran) call_op_boxed(op, stack);
  } catch (const Error& e) {
    KILN_FAIL(e.kind(), "{}: {}", where, e.what());
  }
  // Results as the interpreter sees them: a Tensor[] return is flattened.
  std::vector<Value> results;
  if (stack.size() == 1 && stack[0].tag() == Value::Tag::TensorList) {
    for (const auto& t : stack[0].to_tensor_list()) results.emplace_back(t);
  } else {
    results = std::move(stack);
  }
  KILN_CHECK(results.size() == outputs.size(), "{}: PyTorch's graph names {} results, kiln's op returns {}", where,
             outputs.size(), results.size());
  KILN_CHECK(recorded.empty() || recorded.size() == outputs.size(), "{}: {} recorded metadata for {} results", where,
             recorded.size(), outputs.size());
  std::vector<graph::TensorMeta> metas;
  for (size_t i = 0; i < results.size(); ++i) {
    KILN_CHECK(results[i].is_tensor(),
               "{}: result {} is a {}, not a tensor (symbolic sizes and scalar results are not supported yet)", where,
               i, results[i].type_name());
    const Tensor& t = results[i].to_tensor();
    metas.push_back(graph::TensorMeta::of(t));
    metas.back().device = device_;  // the meta kernel ran on meta tensors standing for the inputs
    if (!recorded.empty() && recorded[i]) {
      const RecordedMeta& r = *recorded[i];
      KILN_CHECK(r.dtype == t.dtype() && r.sizes == t.sizes().shape(),
                 "{}: result {} ('{}') is {}[{}] in PyTorch's graph but kiln computes {}[{}]", where, i, outputs[i],
                 dtype_name(r.dtype), fmt::format("{}", fmt::join(r.sizes, ", ")), dtype_name(t.dtype()),
                 fmt::format("{}", fmt::join(t.sizes().shape(), ", ")));
    }
  }
  graph::Node* node = graph_.call(op, std::move(node_args), metas, node_name);
  for (size_t i = 0; i < outputs.size(); ++i) {
    if (outputs[i].empty()) continue;
    KILN_CHECK(!values_.count(outputs[i]), "{}: value '{}' is defined twice", where, outputs[i]);
    values_[outputs[i]] = Bound{node->result(static_cast<int>(i)), results[i].to_tensor()};
  }
}

// `sub.Tensor(1, x)` (PyTorch's decomposition of rsub: `1 - x`) has a number where only a Tensor
// goes, and no overload of sub takes a Scalar self. kiln records number - alpha * x as
// add.Scalar(mul.Scalar(x, -alpha), number): the same product and sum, the same type promotion (the
// number stays a wrapped number).
bool GraphImporter::sub_from_number(const std::string& node_name,
                                    const std::vector<std::pair<std::string, CallArg>>& args,
                                    const std::vector<std::string>& outputs,
                                    const std::vector<std::optional<RecordedMeta>>& recorded) {
  const Value* self = nullptr;
  const TensorName* other = nullptr;
  const Value* alpha = nullptr;
  for (const auto& [name, arg] : args) {
    if (name == "self") self = std::get_if<Value>(&arg);
    if (name == "other") other = std::get_if<TensorName>(&arg);
    if (name == "alpha") alpha = std::get_if<Value>(&arg);
  }
  if (!self || !is_number(*self) || self->tag() == Value::Tag::Bool || !other) return false;
  OpHandle mul = Registry::global().find("aten::mul.Scalar");
  OpHandle add = Registry::global().find("aten::add.Scalar");
  KILN_CHECK(mul && add, "{}: node '{}': kiln lacks mul.Scalar or add.Scalar", source_, node_name);
  std::string scaled = node_name + "_scaled";
  KILN_CHECK(!values_.count(scaled), "{}: node '{}': the name '{}' is taken", source_, node_name, scaled);
  call(scaled, mul, {{"self", *other}, {"other", negated(alpha)}}, {scaled});
  call(node_name, add, {{"self", TensorName{scaled}}, {"other", *self}}, outputs, recorded);
  return true;
}

graph::Graph GraphImporter::output(const std::vector<std::string>& names) {
  std::vector<graph::ValueRef> refs;
  for (const auto& name : names) refs.push_back(lookup(name, "output", "result").ref);
  graph_.output(std::move(refs));
  return std::move(graph_);
}

}  // namespace kiln::import
