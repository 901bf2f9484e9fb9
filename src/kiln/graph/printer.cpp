#include "kiln/graph/printer.h"

namespace kiln::graph {

std::string_view short_dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "b8";
    case DType::UInt8: return "u8";
    case DType::Int8: return "i8";
    case DType::Int16: return "i16";
    case DType::Int32: return "i32";
    case DType::Int64: return "i64";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Float32: return "f32";
    case DType::Float64: return "f64";
    case DType::ComplexFloat: return "c64";  // torch.fx's abbreviations
    case DType::ComplexDouble: return "c128";
  }
  return "?";
}

std::string type_string(const TensorMeta& m) {
  std::string s = fmt::format("{}{}", short_dtype_name(m.dtype), IntArrayRef(m.sizes));
  if (!IntArrayRef(m.strides).equals(contiguous_strides(m.sizes)))
    s += fmt::format("{{{}}}", fmt::join(m.strides, ", "));
  if (!m.device.is_cpu()) {
    s += '@';
    s += m.device.to_string();
  }
  return s;
}

namespace {

std::string ref_string(const ValueRef& r) {
  if (!r.node) return "None";
  bool multi = r.node->meta().size() > 1;
  return multi ? fmt::format("%{}.{}", r.node->name(), r.index) : "%" + r.node->name();
}

std::string arg_string(const Arg& a) {
  if (const auto* r = std::get_if<ValueRef>(&a)) return ref_string(*r);
  if (const auto* v = std::get_if<Value>(&a)) return v->repr();
  std::vector<std::string> parts;
  for (const auto& r : std::get<std::vector<ValueRef>>(a)) parts.push_back(ref_string(r));
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::string result_types(const Node& n) {
  if (n.meta().size() == 1) return type_string(n.meta()[0]);
  std::vector<std::string> parts;
  for (const auto& m : n.meta()) parts.push_back(type_string(m));
  return fmt::format("({})", fmt::join(parts, ", "));
}

}  // namespace

std::string print(const Graph& g) {
  std::vector<std::string> inputs;
  for (Node* p : g.placeholders()) inputs.push_back(fmt::format("%{}: {}", p->name(), type_string(p->meta().at(0))));
  std::string out = fmt::format("graph({}):\n", fmt::join(inputs, ", "));
  for (const auto& n : g.nodes()) {
    switch (n->kind()) {
      case NodeKind::Placeholder: break;
      case NodeKind::GetAttr: out += fmt::format("  %{}: {} = get_attr()\n", n->name(), result_types(*n)); break;
      case NodeKind::Call: {
        std::vector<std::string> args;
        for (const auto& a : n->args()) args.push_back(arg_string(a));
        out += fmt::format("  %{}: {} = {}({})\n", n->name(), result_types(*n), n->op()->name(), fmt::join(args, ", "));
        break;
      }
      case NodeKind::Output: {
        std::vector<std::string> refs;
        for (const auto& r : std::get<std::vector<ValueRef>>(n->args().at(0))) refs.push_back(ref_string(r));
        out += fmt::format("  return ({})\n", fmt::join(refs, ", "));
        break;
      }
    }
  }
  return out;
}

}  // namespace kiln::graph
