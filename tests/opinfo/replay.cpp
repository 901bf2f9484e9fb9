#include "replay.h"

#include <cmath>
#include <set>

#include "kiln/api/compile.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"
#include "tensor_compare.h"

namespace kiln::opinfo {
namespace {

Value to_value(const Recording& r, const Call& call, const Token& t, const Type& type) {
  switch (t.kind) {
    case Token::Kind::None: return Value();
    case Token::Kind::Bool: return Value(t.i != 0);
    case Token::Kind::Int: return Value(t.i);
    case Token::Kind::Float: return Value(t.f);
    case Token::Kind::Str: return Value(t.text);
    case Token::Kind::TensorRef: return Value(r.tensor(call, static_cast<size_t>(t.i)));
    case Token::Kind::DType: {
      auto d = parse_dtype(t.text);
      KILN_CHECK(d.has_value(), "opinfo: unknown dtype {}", t.text);
      return Value(*d);
    }
    case Token::Kind::Device: return Value(Device::parse(t.text));
    case Token::Kind::Layout: return parse_default(t.text, Type{BaseType::Layout});
    case Token::Kind::MemoryFormat: return parse_default(t.text, Type{BaseType::MemoryFormat});
    case Token::Kind::List: break;
  }
  if (type.base == BaseType::Tensor) {
    if (type.element_optional) {
      std::vector<std::optional<Tensor>> out;
      for (const auto& item : t.items) {
        if (item.kind == Token::Kind::None) out.emplace_back();
        else out.emplace_back(to_value(r, call, item, Type{}).to_tensor());
      }
      return Value(std::move(out));
    }
    std::vector<Tensor> out;
    for (const auto& item : t.items) out.push_back(to_value(r, call, item, Type{}).to_tensor());
    return Value(std::move(out));
  }
  if (type.base == BaseType::Float) {
    std::vector<double> out;
    for (const auto& item : t.items)
      out.push_back(item.kind == Token::Kind::Float ? item.f : static_cast<double>(item.i));
    return Value(std::move(out));
  }
  if (type.base == BaseType::Bool) {
    std::vector<bool> out;
    for (const auto& item : t.items) out.push_back(item.i != 0);
    return Value(std::move(out));
  }
  std::vector<int64_t> out;
  for (const auto& item : t.items) {
    KILN_CHECK(item.kind == Token::Kind::Int || item.kind == Token::Kind::Bool, "opinfo: a {} list holds a non-integer",
               type.to_string());
    out.push_back(item.i);
  }
  return Value(std::move(out));
}

bool random_op(const std::string& op) {
  static const std::set<std::string> ops = {"aten::native_dropout",
                                            "aten::rand",
                                            "aten::randn",
                                            "aten::randperm",
                                            "aten::bernoulli.p",
                                            "aten::uniform",
                                            "aten::empty.memory_format",
                                            "aten::empty_strided",
                                            "aten::resize_"};
  return ops.contains(op);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

class Comparer {
 public:
  Comparer(const Recording& r, const Call& call, bool values) : r_(r), call_(call), values_(values) {}

  // Empty when `got` matches the recorded token `want`, or its float64 counterpart `ref`.
  std::string compare(const Token& want, const Token* ref, const Value& got, const std::string& where) {
    switch (want.kind) {
      case Token::Kind::TensorRef: {
        if (!got.is_tensor()) return fmt::format("{}: expected a tensor, got {}", where, got.type_name());
        if (!got.to_tensor().defined()) return fmt::format("{}: expected a tensor, got an undefined one", where);
        std::string why = compare_tensor(r_.tensor(call_, static_cast<size_t>(want.i)), got.to_tensor(), where);
        if (!why.empty() && ref && ref->kind == Token::Kind::TensorRef &&
            compare_tensor(r_.tensor(call_, static_cast<size_t>(ref->i)), got.to_tensor(), where).empty()) {
          return "";  // PyTorch's low-precision kernel is off; kiln matches the float64 result
        }
        return why;
      }
      case Token::Kind::None:  // an undefined tensor (a backward's output masked off)
        return got.is_none() ? ""
                             : fmt::format("{}: expected None (an undefined tensor), got {}", where, got.type_name());
      case Token::Kind::List: {
        if (got.tag() != Value::Tag::TensorList)
          return fmt::format("{}: expected a list, got {}", where, got.type_name());
        const auto& list = got.to_tensor_list();
        if (list.size() != want.items.size()) {
          return fmt::format("{}: {} tensors, PyTorch {}", where, list.size(), want.items.size());
        }
        bool refs = ref && ref->kind == Token::Kind::List && ref->items.size() == list.size();
        for (size_t k = 0; k < list.size(); ++k) {
          auto why =
              compare(want.items[k], refs ? &ref->items[k] : nullptr, Value(list[k]), fmt::format("{}[{}]", where, k));
          if (!why.empty()) return why;
        }
        return "";
      }
      case Token::Kind::Int:
      case Token::Kind::Bool:
      case Token::Kind::Float: {
        double w = want.kind == Token::Kind::Float ? want.f : static_cast<double>(want.i);
        double g = got.tag() == Value::Tag::Bool ? got.to_bool() : got.to_double();
        bool same = (std::isnan(w) && std::isnan(g)) || w == g || std::abs(w - g) <= 1e-6 * std::abs(w);
        return same ? "" : fmt::format("{}: {}, PyTorch {}", where, g, w);
      }
      default: return fmt::format("{}: unexpected result token", where);
    }
  }

 private:
  std::string compare_tensor(const Tensor& want, const Tensor& got, const std::string& where) {
    std::string why = testing::compare_metadata(want, got, where);
    if (why.empty()) why = testing::compare_strides(want.strides().vec(), got, where, "PyTorch's layout");
    if (!why.empty() || !values_) return why;
    return testing::compare_values(want, got, where);
  }

  const Recording& r_;
  const Call& call_;
  bool values_;
};

// sort and topk: the values must be PyTorch's (for topk(sorted=False) each lane as a multiset), and
// each index must point at its value in self. The indices of equal
// values are not compared: PyTorch's CPU sort is not stable.
std::string check_sorted(const Recording& r, const Call& call, const Stack& args, const Stack& got) {
  Token want = parse_token(*call.out);
  if (got.size() != 2 || want.items.size() != 2) return "expected (values, indices)";
  Tensor self = args[0].to_tensor(), values = got[0].to_tensor(), indices = got[1].to_tensor();
  Tensor expected = r.tensor(call, static_cast<size_t>(want.items[0].i));
  if (values.dtype() != expected.dtype() || values.sizes().vec() != expected.sizes().vec() ||
      indices.dtype() != DType::Int64 || indices.sizes().vec() != values.sizes().vec()) {
    return fmt::format("values {} and indices {}, PyTorch {}", values.describe(), indices.describe(),
                       expected.describe());
  }
  if (values.numel() == 0) return "";
  int64_t dim = args.size() > (call.op == "aten::sort" ? 1u : 2u) ? args[call.op == "aten::sort" ? 1 : 2].to_int() : -1;
  int64_t d = self.dim() == 0 ? 0 : (dim < 0 ? dim + self.dim() : dim);
  auto lanes = [&](const Tensor& t) {  // float64 values, each lane sorted (NaN last)
    std::vector<int64_t> perm;
    for (int64_t j = 0; j < t.dim(); ++j) {
      if (j != d) perm.push_back(j);
    }
    perm.push_back(d);
    Tensor m = (t.dim() == 0 ? t.reshape({1, 1}) : permute(t, perm)).to(DType::Float64).contiguous();
    std::vector<double> v(m.data_ptr<double>(), m.data_ptr<double>() + m.numel());
    int64_t n = m.sizes().back();
    for (int64_t k = 0; k < m.numel(); k += n) {
      std::sort(v.begin() + k, v.begin() + k + n,
                [](double a, double b) { return (!std::isnan(a) && std::isnan(b)) || a < b; });
    }
    return v;
  };
  // Sorted results must be PyTorch's element for element (equal values are equal whatever their
  // order); topk(sorted=False) only as a multiset.
  bool sorted = call.op == "aten::sort" || args.size() < 5 || args[4].to_bool();
  auto flat = [](const Tensor& t) {
    Tensor m = t.to(DType::Float64).contiguous();
    return std::vector<double>(m.data_ptr<double>(), m.data_ptr<double>() + m.numel());
  };
  auto a = sorted ? flat(values) : lanes(values), b = sorted ? flat(expected) : lanes(expected);
  for (size_t k = 0; k < a.size(); ++k) {
    if (!(a[k] == b[k] || (std::isnan(a[k]) && std::isnan(b[k])))) {
      return fmt::format("values differ from PyTorch's at {}: {} vs {}", k, a[k], b[k]);
    }
  }
  Tensor picked = self.dim() == 0 ? self.reshape({1}) : gather(self, d, indices);
  Tensor pv = picked.to(DType::Float64).contiguous(), vv = values.to(DType::Float64).contiguous();
  for (int64_t k = 0; k < vv.numel(); ++k) {
    double x = pv.data_ptr<double>()[k], y = vv.data_ptr<double>()[k];
    if (!(x == y || (std::isnan(x) && std::isnan(y)))) return fmt::format("index {} does not point at its value", k);
  }
  return "";
}

}  // namespace

Stack arguments(const Recording& r, const Call& call, OpHandle op) {
  const Schema& s = op->schema();
  std::vector<std::optional<Value>> slots(s.arguments.size());
  KILN_CHECK(call.args.size() <= s.arguments.size(), "opinfo: {} got {} positional arguments, its schema has {}",
             call.op, call.args.size(), s.arguments.size());
  for (size_t k = 0; k < call.args.size(); ++k) {
    slots[k] = to_value(r, call, parse_token(call.args[k]), s.arguments[k].type);
  }
  for (const auto& [name, tok] : call.kwargs) {
    int64_t k = s.argument_index(name);
    KILN_CHECK(k >= 0, "opinfo: {} has no argument '{}'", call.op, name);
    slots[static_cast<size_t>(k)] = to_value(r, call, parse_token(tok), s.arguments[static_cast<size_t>(k)].type);
  }
  size_t last = 0;
  for (size_t k = 0; k < slots.size(); ++k) {
    if (slots[k]) last = k + 1;
  }
  Stack stack;
  for (size_t k = 0; k < last; ++k) {
    const Argument& a = s.arguments[k];
    if (!slots[k]) {
      KILN_CHECK(a.default_text.has_value(), "opinfo: {} leaves '{}' without a value", call.op, a.name);
      slots[k] = parse_default(*a.default_text, a.type);
    }
    Value v = *slots[k];
    coerce_value(v, a.type);
    stack.push_back(std::move(v));
  }
  return stack;
}

Verdict replay(const Recording& r, const Call& call, const Runner& run) {
  OpHandle op = Registry::global().find(call.op);
  if (op == nullptr) return {false, "missing-op", call.op + " is not declared"};
  Stack stack;
  try {
    stack = arguments(r, call, op);
  } catch (const Error& e) {
    return {false, "arguments", first_line(e.what())};
  }
  try {
    run(op, stack);
  } catch (const Error& e) {
    if (!call.out) return {};  // both raised
    std::string what = first_line(e.what());
    bool missing = e.kind() == ErrorKind::NotImplemented || what.find("no kernel") != std::string::npos;
    return {false, missing ? "no-kernel" : "kiln-raised", what};
  } catch (const std::exception& e) {
    return {false, "non-kiln-exception", first_line(e.what())};
  }
  if (!call.out) return {false, "torch-raised-only", "PyTorch raised:" + call.raised};
  Token want = parse_token(*call.out);
  if (want.items.size() != stack.size()) {
    return {false, "result-count", fmt::format("{} results, PyTorch {}", stack.size(), want.items.size())};
  }
  if (call.op == "aten::sort" || call.op == "aten::topk") {
    std::string why = check_sorted(r, call, arguments(r, call, op), stack);
    return why.empty() ? Verdict{} : Verdict{false, "values", why};
  }
  Comparer c(r, call, !random_op(call.op));
  std::optional<Token> ref;
  if (call.ref) ref = parse_token(*call.ref);
  for (size_t k = 0; k < stack.size(); ++k) {
    const Token* rk = ref && ref->items.size() == stack.size() ? &ref->items[k] : nullptr;
    std::string why = c.compare(want.items[k], rk, stack[k], fmt::format("result {}", k));
    if (!why.empty()) return {false, "values", why};
  }
  return {};
}

namespace {

// A call's arguments with its tensors taken out (in order) and put back.
struct Prepared {
  OpHandle op;
  Stack stack;
  std::vector<Tensor> tensors;
};

Prepared prepare(const Recording& r, const Call& call) {
  Prepared p{Registry::global().get(call.op), {}, {}};
  p.stack = arguments(r, call, p.op);
  for (const Value& v : p.stack) {
    if (v.is_tensor()) p.tensors.push_back(v.to_tensor());
    if (v.tag() == Value::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) p.tensors.push_back(t);
    }
    if (v.tag() == Value::Tag::OptionalTensorList) {
      for (const auto& t : v.to_optional_tensor_list()) {
        if (t) p.tensors.push_back(*t);
      }
    }
  }
  return p;
}

// p's stack with its tensors replaced by in[next...].
Stack substitute(const Prepared& p, const std::vector<Tensor>& in, size_t& next) {
  Stack s = p.stack;
  for (Value& v : s) {
    if (v.is_tensor()) v = Value(in.at(next++));
    if (v.tag() == Value::Tag::TensorList) {
      std::vector<Tensor> list;
      for (size_t k = 0; k < v.to_tensor_list().size(); ++k) list.push_back(in.at(next++));
      v = Value(std::move(list));
    }
    if (v.tag() == Value::Tag::OptionalTensorList) {
      std::vector<std::optional<Tensor>> list;
      for (const auto& t : v.to_optional_tensor_list()) list.push_back(t ? std::optional(in.at(next++)) : std::nullopt);
      v = Value(std::move(list));
    }
  }
  return s;
}

// The results of one call, flattened: a Tensor[] result is its tensors, counted in `shape`; a
// None result (an undefined tensor) has no tensor, and -2 in `shape`.
constexpr int kNoTensor = -2;
void flatten(const Stack& s, std::vector<Tensor>& out, std::vector<int>& shape) {
  for (const Value& v : s) {
    if (v.is_none()) {
      shape.push_back(kNoTensor);
    } else if (v.is_tensor()) {
      out.push_back(v.to_tensor());
      shape.push_back(-1);
    } else {
      const auto& list = v.to_tensor_list();
      out.insert(out.end(), list.begin(), list.end());
      shape.push_back(static_cast<int>(list.size()));
    }
  }
}

Stack unflatten(const std::vector<Tensor>& flat, size_t& next, const std::vector<int>& shape) {
  Stack s;
  for (int n : shape) {
    if (n == kNoTensor) {
      s.emplace_back();
      continue;
    }
    if (n < 0) {
      s.emplace_back(flat.at(next++));
      continue;
    }
    std::vector<Tensor> list(flat.begin() + static_cast<std::ptrdiff_t>(next),
                             flat.begin() + static_cast<std::ptrdiff_t>(next) + n);
    next += static_cast<size_t>(n);
    s.emplace_back(std::move(list));
  }
  return s;
}

// Compiles the calls as one function and compares each; throws what the batch throws.
std::vector<Verdict> run_batch(const Recording& r, const std::vector<const Call*>& calls) {
  std::vector<Prepared> prepared;
  std::vector<Tensor> inputs;
  for (const Call* c : calls) {
    prepared.push_back(prepare(r, *c));
    inputs.insert(inputs.end(), prepared.back().tensors.begin(), prepared.back().tensors.end());
  }
  std::vector<std::vector<int>> shapes(calls.size());
  auto fn = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    size_t next = 0;
    for (size_t k = 0; k < prepared.size(); ++k) {
      Stack s = substitute(prepared[k], in, next);
      call_op_boxed(prepared[k].op, s);
      shapes[k].clear();
      flatten(s, out, shapes[k]);
    }
    return out;
  };
  std::vector<Tensor> results = compile(fn)(inputs);
  std::vector<Verdict> verdicts;
  size_t next = 0;
  for (size_t k = 0; k < calls.size(); ++k) {
    Stack got = unflatten(results, next, shapes[k]);
    verdicts.push_back(replay(r, *calls[k], [&](OpHandle, Stack& s) { s = got; }));
  }
  return verdicts;
}

}  // namespace

bool compilable(const Call& call) {
  OpHandle op = Registry::global().find(call.op);
  if (op == nullptr || !call.out || random_op(call.op) || op->schema().is_mutable()) return false;
  // Output sizes that depend on the data (nonzero, a boolean mask as an index) cannot be traced.
  if (op->has_tag(OpTag::DynamicOutputShape)) return false;
  if ((call.op == "aten::index.Tensor" || call.op == "aten::index_put") && call.args.size() > 1) {
    for (const Token& t : parse_token(call.args[1]).items) {  // the indices, not self or the outputs
      if (t.kind != Token::Kind::TensorRef) continue;
      DType d = call.tensors.at(static_cast<size_t>(t.i)).dtype;
      if (d == DType::Bool || d == DType::UInt8) return false;
    }
  }
  for (const Argument& ret : op->schema().returns) {
    if (ret.type.base != BaseType::Tensor || ret.type.optional) return false;
  }
  return true;
}

std::vector<Verdict> replay_compiled(const Recording& r, const std::vector<const Call*>& calls) {
  if (calls.empty()) return {};
  try {
    return run_batch(r, calls);
  } catch (const std::exception& e) {
    if (calls.size() == 1) {
      bool kiln_error = dynamic_cast<const Error*>(&e) != nullptr;
      return {Verdict{false, kiln_error ? "compiled-raised" : "compiled-non-kiln-exception", first_line(e.what())}};
    }
  }
  auto half = static_cast<std::ptrdiff_t>(calls.size() / 2);
  auto a = replay_compiled(r, std::vector<const Call*>(calls.begin(), calls.begin() + half));
  auto b = replay_compiled(r, std::vector<const Call*>(calls.begin() + half, calls.end()));
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace kiln::opinfo
