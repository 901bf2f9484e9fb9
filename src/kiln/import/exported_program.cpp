#include "kiln/import/exported_program.h"

#include <unordered_map>
#include <unordered_set>

#include "kiln/graph/verify_level.h"
#include "kiln/import/graph_importer.h"

namespace kiln::import {
namespace {

// A serialized union: an object with exactly one member, whose key says which field is set.
std::pair<const std::string&, const json::Value&> union_member(const json::Value& v, const std::string& source) {
  const json::Object& members = v.as_object();
  KILN_CHECK(members.size() == 1, "{}: {} should be a union (an object with one member), it has {} members", source,
             v.path(), members.size());
  return {members[0].first, members[0].second};
}

[[noreturn]] void symbolic(const std::string& what, const json::Value& v) {
  KILN_FAIL(ErrorKind::NotImplemented,
            "{}: {} is symbolic ({}); kiln loads exports with static shapes only (export without dynamic_shapes)", what,
            v.path(), v.find("as_name") && v.at("as_name").is_string() ? v.at("as_name").as_string() : "an expression");
}

// SymInt ({"as_int": 3} or {"as_expr": ...}) and SymIntArgument ({"as_int": 3} or {"as_name": "s0"}).
int64_t read_sym_int(const json::Value& v, const std::string& what) {
  if (const json::Value* i = v.find("as_int")) return i->as_int();
  if (v.find("as_name")) symbolic(what, v);
  KILN_FAIL(ErrorKind::NotImplemented, "{}: {} is a symbolic size; kiln loads exports with static shapes only", what,
            v.path());
}

Shape read_sym_ints(const json::Value& list, const std::string& what) {
  Shape out;
  for (const auto& e : list.as_array()) out.push_back(read_sym_int(e, what));
  return out;
}

Device read_device(const json::Value& v, const std::string& what) {
  const std::string& type = v.at("type").as_string();
  const json::Value* index = v.find("index");
  int8_t i = index && !index->is_null() ? static_cast<int8_t>(index->as_int()) : -1;
  if (type == "cpu") return Device(DeviceType::CPU, i);
  if (type == "cuda") return Device(DeviceType::CUDA, i);
  if (type == "meta") return Device(DeviceType::Meta, i);
  KILN_FAIL(ErrorKind::NotImplemented, "{}: device '{}' at {} is not one kiln has", what, type, v.path());
}

MemoryFormat read_memory_format(const json::Value& v, const std::string& what) {
  switch (v.as_int()) {
    case 1: return MemoryFormat::Contiguous;
    case 2: return MemoryFormat::ChannelsLast;
    case 4: return MemoryFormat::Preserve;
    default:
      KILN_FAIL(ErrorKind::NotImplemented, "{}: memory format {} at {} is not supported", what, v.as_int(), v.path());
  }
}

std::vector<int64_t> to_vector(const Shape& s) { return std::vector<int64_t>(s.begin(), s.end()); }

TensorName tensor_name(const json::Value& v) { return TensorName{v.at("name").as_string()}; }

std::optional<TensorName> optional_tensor(const json::Value& v, const std::string& source) {
  auto [field, value] = union_member(v, source);
  if (field == "as_none") return std::nullopt;
  KILN_CHECK(field == "as_tensor", "{}: {} is '{}', expected as_tensor or as_none", source, v.path(), field);
  return tensor_name(value);
}

// One serialized Argument as a call argument of the importer.
CallArg read_argument(const json::Value& arg, const std::string& what) {
  auto [field, v] = union_member(arg, what);
  if (field == "as_none") return Value();
  if (field == "as_tensor") return tensor_name(v);
  if (field == "as_optional_tensor") {
    auto t = optional_tensor(v, what);
    if (!t) return Value();
    return *t;
  }
  if (field == "as_tensors") {
    std::vector<std::optional<TensorName>> list;
    for (const auto& e : v.as_array()) list.emplace_back(tensor_name(e));
    return list;
  }
  if (field == "as_optional_tensors") {
    std::vector<std::optional<TensorName>> list;
    for (const auto& e : v.as_array()) list.push_back(optional_tensor(e, what));
    return list;
  }
  if (field == "as_int") return Value(v.as_int());
  if (field == "as_sym_int") return Value(read_sym_int(v, what));
  if (field == "as_ints") {
    std::vector<int64_t> list;
    for (const auto& e : v.as_array()) list.push_back(e.as_int());
    return Value(std::move(list));
  }
  if (field == "as_sym_ints") return Value(to_vector(read_sym_ints(v, what)));
  if (field == "as_float") return Value(v.as_double());
  if (field == "as_floats") {
    std::vector<double> list;
    for (const auto& e : v.as_array()) list.push_back(e.as_double());
    return Value(std::move(list));
  }
  if (field == "as_sym_float") {
    if (const json::Value* f = v.find("as_float")) return Value(f->as_double());
    symbolic(what, v);
  }
  if (field == "as_bool") return Value(v.as_bool());
  if (field == "as_sym_bool") {
    if (const json::Value* b = v.find("as_bool")) return Value(b->as_bool());
    symbolic(what, v);
  }
  if (field == "as_bools") {
    std::vector<bool> list;
    for (const auto& e : v.as_array()) list.push_back(e.as_bool());
    return Value(std::move(list));
  }
  if (field == "as_string") return Value(v.as_string());
  if (field == "as_scalar_type") return Value(read_scalar_type(v, what));
  if (field == "as_memory_format") return Value(read_memory_format(v, what));
  if (field == "as_layout") {
    KILN_CHECK_KIND(v.as_int() == 7, ErrorKind::NotImplemented, "{}: layout {} at {} is not strided", what, v.as_int(),
                    v.path());
    return Value(Layout::Strided);
  }
  if (field == "as_device") return Value(read_device(v, what));
  KILN_FAIL(ErrorKind::NotImplemented, "{}: argument kind '{}' at {} is not supported", what, field, arg.path());
}

// "torch.ops.aten.add.Tensor" -> the registry's "aten::add.Tensor"; ".default" is the unnamed overload.
OpHandle resolve_target(const std::string& target, const std::string& what) {
  const std::string prefix = "torch.ops.";
  KILN_CHECK_KIND(target.rfind(prefix, 0) == 0, ErrorKind::NotImplemented,
                  "{}: target '{}' is not an ATen operator (Python operators on symbolic sizes are not supported)",
                  what, target);
  std::string rest = target.substr(prefix.size());
  size_t dot = rest.find('.');
  KILN_CHECK(dot != std::string::npos, "{}: target '{}' names no operator", what, target);
  std::string ns = rest.substr(0, dot);
  std::string name = rest.substr(dot + 1);
  KILN_CHECK_KIND(ns != "higher_order", ErrorKind::NotImplemented,
                  "{}: higher-order operator '{}' (control flow, wrappers) is not supported", what, name);
  size_t overload = name.find('.');
  KILN_CHECK(overload != std::string::npos, "{}: target '{}' has no overload name", what, target);
  std::string qualified = ns + "::" + (name.substr(overload + 1) == "default" ? name.substr(0, overload) : name);
  OpHandle op = Registry::global().find(qualified);
  KILN_CHECK_KIND(op, ErrorKind::NotImplemented, "{}: unknown operator {} (kiln has no op of that name and overload)",
                  what, qualified);
  KILN_CHECK_KIND(op->implemented(), ErrorKind::NotImplemented, "{}: operator {} is not implemented by kiln: {}", what,
                  qualified, op->reason());
  return op;
}

class Reader {
 public:
  Reader(const json::Value& doc, std::string source) : doc_(doc), source_(std::move(source)), importer_(source_) {}

  ExportedProgram read() {
    ExportedProgram p;
    const json::Value& version = doc_.at("schema_version");
    p.schema_major = version.at("major").as_int();
    p.schema_minor = version.at("minor").as_int();
    KILN_CHECK_KIND(p.schema_major == kSchemaMajorVersion || (p.schema_major == 0 && p.schema_minor == 0),
                    ErrorKind::NotImplemented,
                    "{}: exported program schema version {}.{}; kiln reads major version {} (PyTorch 2.6 to 2.13)",
                    source_, p.schema_major, p.schema_minor, kSchemaMajorVersion);
    if (const json::Value* v = doc_.find("torch_version"); v && v->is_string()) p.torch_version = v->as_string();
    if (const json::Value* v = doc_.find("verifiers"); v && v->is_array() && v->size() > 0) {
      p.dialect = v->at(0).as_string();
    } else if (const json::Value* d = doc_.find("dialect"); d && d->is_string()) {
      p.dialect = d->as_string();  // 2.6-era documents name it here
    }
    const json::Value& module = doc_.at("graph_module");
    const json::Value& graph = module.at("graph");
    for (const auto& [name, meta] : graph.at("tensor_values").as_object()) metas_[name] = &meta;
    read_inputs(graph.at("inputs"), module.at("signature").at("input_specs"), p);
    for (const auto& node : graph.at("nodes").as_array()) read_node(node);
    std::vector<std::string> results = read_outputs(graph.at("outputs"), module.at("signature").at("output_specs"), p);
    p.graph = importer_.output(results);
    // The training dialect's graph holds whatever ATen ops the model called, decomposed when it is
    // traced. The ATEN dialect (run_decompositions' result) is functional, and Core ATen but for the
    // ops PyTorch's own decompositions leave (linalg_vector_norm, var_mean.correction,
    // _native_batch_norm_legit_functional in 2.13), which kiln decomposes the same way.
    try {
      graph::verify_level(p.graph, graph::IrLevel::ATen);
    } catch (const Error& e) {
      KILN_FAIL(e.kind(), "{}: the {} dialect's graph fails kiln's aten verifier: {}", source_, p.dialect, e.what());
    }
    if (p.dialect == "ATEN") {
      try {
        graph::verify_functional(p.graph);
      } catch (const Error& e) {
        KILN_FAIL(e.kind(), "{}: the ATEN dialect's graph is not functional: {}", source_, e.what());
      }
    }
    return p;
  }

 private:
  graph::TensorMeta meta_of(const std::string& name, const std::string& what) const {
    auto it = metas_.find(name);
    KILN_CHECK(it != metas_.end(), "{}: {} '{}' has no entry in tensor_values", source_, what, name);
    return read_tensor_meta(*it->second, fmt::format("{}: {} '{}'", source_, what, name));
  }

  void read_inputs(const json::Value& inputs, const json::Value& specs, ExportedProgram& p) {
    KILN_CHECK(inputs.size() == specs.size(), "{}: the graph has {} inputs but the signature {} input specs", source_,
               inputs.size(), specs.size());
    for (size_t i = 0; i < specs.size(); ++i) {
      auto [kind, spec] = union_member(specs.at(i), source_);
      InputSpec s{InputKind::UserInput, "", "", true};
      if (kind == "user_input") {
        auto [field, arg] = union_member(spec.at("arg"), source_);
        KILN_CHECK_KIND(field == "as_tensor", ErrorKind::NotImplemented,
                        "{}: user input {} is '{}'; kiln loads programs whose inputs are tensors", source_, i, field);
        s.name = s.target = arg.at("name").as_string();
      } else if (kind == "parameter") {
        s = {InputKind::Parameter, spec.at("arg").at("name").as_string(), spec.at("parameter_name").as_string()};
      } else if (kind == "buffer") {
        s = {InputKind::Buffer, spec.at("arg").at("name").as_string(), spec.at("buffer_name").as_string()};
        if (const json::Value* persistent = spec.find("persistent"); persistent && persistent->is_bool()) {
          s.persistent = persistent->as_bool();
        }
      } else if (kind == "tensor_constant") {
        s = {InputKind::TensorConstant, spec.at("arg").at("name").as_string(),
             spec.at("tensor_constant_name").as_string()};
      } else if (kind == "token") {
        // An effect token (with_effects threads it through effectful calls): no value in kiln.
        const std::string& token = spec.at("arg").at("name").as_string();
        auto [field, arg] = union_member(inputs.at(i), source_);
        KILN_CHECK(arg.at("name").as_string() == token, "{}: graph input {} ({}) does not match its token spec '{}'",
                   source_, i, field, token);
        tokens_.insert(token);
        continue;
      } else {
        KILN_FAIL(ErrorKind::NotImplemented, "{}: input {} is a '{}' input, which kiln does not support", source_, i,
                  kind);
      }
      auto [field, arg] = union_member(inputs.at(i), source_);
      KILN_CHECK(field == "as_tensor" && arg.at("name").as_string() == s.name,
                 "{}: graph input {} ({}) does not match its spec '{}'", source_, i, field, s.name);
      importer_.input(s.name, meta_of(s.name, "input"));
      p.inputs.push_back(std::move(s));
    }
  }

  void read_node(const json::Value& node) {
    const json::Value* name_field = node.find("name");
    std::string name = name_field && name_field->is_string() ? name_field->as_string() : "";
    const std::string& target = node.at("target").as_string();
    std::string what = fmt::format("{}: node '{}'", source_, name.empty() ? target : name);
    if (target == "torch.ops.aten._assert_tensor_metadata.default") return check_metadata(node, what);
    if (target == "torch.ops.higher_order.with_effects") return read_effect(node, name, what);
    OpHandle op = resolve_target(target, what);
    if (name.empty()) name = op->schema().name;
    std::vector<std::pair<std::string, CallArg>> args;
    for (const auto& input : node.at("inputs").as_array()) {
      const std::string& arg_name = input.at("name").as_string();
      KILN_CHECK(!arg_name.empty(), "{}: an argument without a name at {}", what, input.path());
      args.emplace_back(arg_name, read_argument(input.at("arg"), what));
    }
    std::vector<std::string> outputs;
    std::vector<std::optional<RecordedMeta>> recorded;
    auto add_output = [&](const std::string& value) {
      outputs.push_back(value);
      graph::TensorMeta m = meta_of(value, "value");
      recorded.push_back(RecordedMeta{m.dtype, m.sizes});
    };
    for (const auto& out : node.at("outputs").as_array()) {
      auto [field, v] = union_member(out, what);
      if (field == "as_tensor") {
        add_output(v.at("name").as_string());
      } else if (field == "as_tensors") {
        for (const auto& t : v.as_array()) add_output(t.at("name").as_string());
      } else if (field == "as_none") {
        outputs.emplace_back();
        recorded.emplace_back(std::nullopt);
      } else {
        KILN_FAIL(ErrorKind::NotImplemented, "{}: a '{}' result (at {}) is not supported; only tensor results are",
                  what, field, out.path());
      }
    }
    importer_.call(name, op, args, outputs, recorded);
  }

  // with_effects(token, op, args...) -> (token, results...): an effectful call ordered by a token.
  // kiln orders calls by their data only: the call is imported as itself (its arguments by position,
  // then by name), the token dropped. _linalg_check_errors, the effect run_decompositions() leaves
  // after a linear algebra op, is PyTorch's check of the factorization's info: kiln's decompositions
  // raise those errors eagerly, and the imported graph gives what the factorization gives
  // (docs/conformance.md), so the check is not imported.
  void read_effect(const json::Value& node, const std::string& name, const std::string& what) {
    const auto& inputs = node.at("inputs").as_array();
    const auto& outputs = node.at("outputs").as_array();
    KILN_CHECK(inputs.size() >= 2 && outputs.size() >= 1, "{}: with_effects needs a token and an operator", what);
    auto [token_field, token] = union_member(inputs[0].at("arg"), what);
    KILN_CHECK(token_field == "as_tensor" && tokens_.contains(token.at("name").as_string()),
               "{}: with_effects' first argument is not a token", what);
    auto [out_field, out_token] = union_member(outputs[0], what);
    KILN_CHECK(out_field == "as_tensor", "{}: with_effects' first result is not a token", what);
    tokens_.insert(out_token.at("name").as_string());
    auto [op_field, op_target] = union_member(inputs[1].at("arg"), what);
    KILN_CHECK(op_field == "as_operator", "{}: with_effects' second argument is not an operator", what);
    if (op_target.as_string() == "torch.ops.aten._linalg_check_errors.default") return;
    OpHandle op = resolve_target(op_target.as_string(), what);
    const auto& schema_args = op->schema().arguments;
    std::vector<std::pair<std::string, CallArg>> args;
    for (size_t i = 2; i < inputs.size(); ++i) {
      std::string arg_name = inputs[i].at("name").as_string();
      if (arg_name.empty()) {
        KILN_CHECK(i - 2 < schema_args.size(), "{}: {} takes {} arguments, given more", what, op->name(),
                   schema_args.size());
        arg_name = schema_args[i - 2].name;
      }
      args.emplace_back(arg_name, read_argument(inputs[i].at("arg"), what));
    }
    std::vector<std::string> results;
    std::vector<std::optional<RecordedMeta>> recorded;
    for (size_t i = 1; i < outputs.size(); ++i) {
      auto [field, v] = union_member(outputs[i], what);
      if (field == "as_none") continue;
      KILN_CHECK_KIND(field == "as_tensor", ErrorKind::NotImplemented,
                      "{}: a '{}' result of an effectful call is "
                      "not supported",
                      what, field);
      results.push_back(v.at("name").as_string());
      graph::TensorMeta m = meta_of(results.back(), "value");
      recorded.push_back(RecordedMeta{m.dtype, m.sizes});
    }
    importer_.call(name.empty() ? op->schema().name : name, op, args, results, recorded);
  }

  // _assert_tensor_metadata(a, size, stride, dtype, *, device, layout): torch.export's check that a
  // value is what tracing saw (after a dtype conversion). With static shapes it is decided here, at
  // load time, against kiln's own metadata; the node computes nothing and is not imported.
  void check_metadata(const json::Value& node, const std::string& what) {
    std::string tensor;
    graph::TensorMeta m;
    for (const auto& input : node.at("inputs").as_array()) {
      const std::string& arg = input.at("name").as_string();
      CallArg value = read_argument(input.at("arg"), what);
      if (arg == "a") {
        const auto* t = std::get_if<TensorName>(&value);
        KILN_CHECK(t, "{}: argument 'a' is not a tensor", what);
        tensor = t->name;
        m = importer_.meta(tensor);
      } else if (const auto* v = std::get_if<Value>(&value); v && !v->is_none() && !tensor.empty()) {
        if (arg == "size") {
          KILN_CHECK(Shape(v->to_int_list().begin(), v->to_int_list().end()) == m.sizes,
                     "{}: PyTorch asserts '{}' has sizes [{}], kiln computes [{}]", what, tensor,
                     fmt::join(v->to_int_list(), ", "), fmt::join(m.sizes, ", "));
        } else if (arg == "dtype") {
          KILN_CHECK(v->to_dtype() == m.dtype, "{}: PyTorch asserts '{}' is {}, kiln computes {}", what, tensor,
                     v->to_dtype(), m.dtype);
        }
      }
    }
    KILN_CHECK(!tensor.empty(), "{}: _assert_tensor_metadata without its tensor", what);
  }

  std::vector<std::string> read_outputs(const json::Value& outputs, const json::Value& specs, ExportedProgram& p) {
    KILN_CHECK(outputs.size() == specs.size(), "{}: the graph has {} outputs but the signature {} output specs",
               source_, outputs.size(), specs.size());
    std::vector<std::string> names;
    for (size_t i = 0; i < specs.size(); ++i) {
      auto [kind, spec] = union_member(specs.at(i), source_);
      OutputSpec s{OutputKind::UserOutput, "", ""};
      if (kind == "user_output" || kind == "loss_output") {
        s.kind = kind == "user_output" ? OutputKind::UserOutput : OutputKind::LossOutput;
        auto [field, arg] = union_member(spec.at("arg"), source_);
        KILN_CHECK_KIND(field == "as_tensor", ErrorKind::NotImplemented,
                        "{}: output {} is '{}'; kiln loads programs whose outputs are tensors", source_, i, field);
        s.name = arg.at("name").as_string();
      } else if (kind == "buffer_mutation") {
        s = {OutputKind::BufferMutation, spec.at("arg").at("name").as_string(), spec.at("buffer_name").as_string()};
      } else if (kind == "user_input_mutation") {
        s = {OutputKind::UserInputMutation, spec.at("arg").at("name").as_string(),
             spec.at("user_input_name").as_string()};
      } else if (kind == "token") {
        KILN_CHECK(tokens_.contains(spec.at("arg").at("name").as_string()),
                   "{}: output {} is a token no effectful call produced", source_, i);
        continue;
      } else {
        KILN_FAIL(ErrorKind::NotImplemented, "{}: output {} is a '{}' output, which kiln does not support", source_, i,
                  kind);
      }
      auto [field, arg] = union_member(outputs.at(i), source_);
      KILN_CHECK(field == "as_tensor" && arg.at("name").as_string() == s.name,
                 "{}: graph output {} ({}) does not match its spec '{}'", source_, i, field, s.name);
      names.push_back(s.name);
      p.outputs.push_back(std::move(s));
    }
    return names;
  }

  const json::Value& doc_;
  std::string source_;
  GraphImporter importer_;
  std::unordered_map<std::string, const json::Value*> metas_;
  std::unordered_set<std::string> tokens_;  // effect tokens (with_effects), which carry no value
};

}  // namespace

DType read_scalar_type(const json::Value& code, const std::string& what) {
  switch (code.as_int()) {
    case 1: return DType::UInt8;
    case 2: return DType::Int8;
    case 3: return DType::Int16;
    case 4: return DType::Int32;
    case 5: return DType::Int64;
    case 6: return DType::Float16;
    case 7: return DType::Float32;
    case 8: return DType::Float64;
    case 10: return DType::ComplexFloat;
    case 11: return DType::ComplexDouble;
    case 12: return DType::Bool;
    case 13: return DType::BFloat16;
    default:
      KILN_FAIL(ErrorKind::NotImplemented, "{}: scalar type {} at {} is not a dtype kiln has", what, code.as_int(),
                code.path());
  }
}

graph::TensorMeta read_tensor_meta(const json::Value& meta, const std::string& what) {
  graph::TensorMeta m;
  m.dtype = read_scalar_type(meta.at("dtype"), what);
  m.sizes = read_sym_ints(meta.at("sizes"), what);
  m.strides = read_sym_ints(meta.at("strides"), what);
  KILN_CHECK(m.sizes.size() == m.strides.size(), "{}: {} sizes but {} strides at {}", what, m.sizes.size(),
             m.strides.size(), meta.path());
  for (size_t d = 0; d < m.sizes.size(); ++d) {
    KILN_CHECK(m.sizes[d] >= 0, "{}: negative size {} in dimension {} at {}", what, m.sizes[d], d, meta.path());
  }
  m.device = read_device(meta.at("device"), what);
  if (const json::Value* layout = meta.find("layout"); layout && !layout->is_null()) {
    KILN_CHECK_KIND(layout->as_int() == 7, ErrorKind::NotImplemented,
                    "{}: layout {} at {} is not strided (sparse tensors are not supported)", what, layout->as_int(),
                    layout->path());
  }
  return m;
}

int64_t read_storage_offset(const json::Value& meta, const std::string& what) {
  const json::Value* offset = meta.find("storage_offset");
  return offset && !offset->is_null() ? read_sym_int(*offset, what) : 0;
}

ExportedProgram read_exported_program(const json::Value& document, const std::string& source) {
  return Reader(document, source).read();
}

}  // namespace kiln::import
