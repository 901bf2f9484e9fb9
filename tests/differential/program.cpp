#include "program.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <sstream>

#include "../unary_ops.h"
#include "kiln/core/type_promotion.h"
#include "kiln/support/error.h"

namespace kiln::difftest {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  std::istringstream in(s);
  while (std::getline(in, cur, sep)) out.push_back(cur);
  return out;
}

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> out;
  std::istringstream in(line);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

}  // namespace

bool is_list(const std::string& tok) { return tok.size() >= 2 && tok.front() == '[' && tok.back() == ']'; }

std::vector<std::string> list_items(const std::string& tok) {
  KILN_CHECK(is_list(tok), "difftest: expected a list like [1,2], got '{}'", tok);
  std::string inner = tok.substr(1, tok.size() - 2);
  if (inner.empty()) return {};
  return split(inner, ',');
}

namespace {

int64_t to_int(const std::string& tok) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(tok, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  KILN_CHECK(used == tok.size() && !tok.empty(), "difftest: expected an integer, got '{}'", tok);
  return v;
}

Shape to_shape(const std::string& tok) {
  Shape s;
  for (const auto& item : list_items(tok)) s.push_back(to_int(item));
  return s;
}

std::string shape_str(IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Scalar to_scalar(const std::string& tok) {
  KILN_CHECK(tok.size() > 2 && tok[1] == ':', "difftest: expected a scalar like i:2 or f:0.5, got '{}'", tok);
  std::string body = tok.substr(2);
  switch (tok[0]) {
    case 'i': return Scalar(to_int(body));
    case 'b': return Scalar(to_int(body) != 0);
    case 'f': {
      if (body == "nan") return Scalar(std::numeric_limits<double>::quiet_NaN());
      if (body == "inf") return Scalar(std::numeric_limits<double>::infinity());
      if (body == "-inf") return Scalar(-std::numeric_limits<double>::infinity());
      size_t used = 0;
      double d = std::stod(body, &used);
      KILN_CHECK(used == body.size(), "difftest: bad float scalar '{}'", tok);
      return Scalar(d);
    }
    default: KILN_FAIL(ErrorKind::Value, "difftest: bad scalar '{}'", tok);
  }
}

bool is_scalar(const std::string& tok) { return tok.size() > 2 && tok[1] == ':'; }

// The environment one run evaluates calls in.
struct Env {
  std::map<std::string, Tensor> values;
  Precision precision;
  Device factories = kCPU;

  const Tensor& t(const std::string& name) const {
    auto it = values.find(name);
    KILN_CHECK(it != values.end(), "difftest: unknown value '{}'", name);
    return it->second;
  }
  std::optional<Tensor> opt_t(const std::string& tok) const {
    if (tok == "none") return std::nullopt;
    return t(tok);
  }
  std::vector<Tensor> tensors(const std::string& tok) const {
    std::vector<Tensor> out;
    for (const auto& item : list_items(tok)) out.push_back(t(item));
    return out;
  }
  DType dtype(const std::string& tok) const {
    auto d = parse_dtype(tok);
    KILN_CHECK(d.has_value(), "difftest: unknown dtype '{}'", tok);
    if (precision == Precision::Float64 && is_floating(*d)) return DType::Float64;
    return *d;
  }
};

using Args = std::vector<std::string>;
using Impl = std::function<std::vector<Tensor>(const Env&, const Args&)>;

void need(const Args& a, size_t n, const char* op) {
  KILN_CHECK(a.size() == n, "difftest: {} takes {} arguments, got {}", op, n, a.size());
}

std::optional<IntArrayRef> opt_dims(const std::string& tok, Shape& storage) {
  if (tok == "none") return std::nullopt;
  storage = to_shape(tok);
  return IntArrayRef(storage);
}

std::optional<std::string_view> mode(const std::string& tok) {
  if (tok == "none") return std::nullopt;
  KILN_CHECK(tok == "trunc" || tok == "floor", "difftest: div rounding mode '{}'", tok);
  return tok;
}

const std::map<std::string, Impl>& ops() {
  static const std::map<std::string, Impl> table = [] {
    std::map<std::string, Impl> m;
    using Unary = Tensor (*)(const Tensor&);
    std::vector<std::pair<const char*, Unary>> unary(testing::unary_ops().begin(), testing::unary_ops().end());
    unary.insert(unary.end(), {{"bitwise_not", &kiln::bitwise_not},
                               {"logical_not", &kiln::logical_not},
                               {"square", &kiln::square},
                               {"silu", &kiln::silu},
                               {"clone", [](const Tensor& x) { return clone(x); }},
                               {"contiguous", [](const Tensor& x) { return contiguous(x); }}});
    for (const auto& [name, fn] : unary) {
      Unary f = fn;
      std::string op = name;
      m[name] = [f, op](const Env& e, const Args& a) {
        need(a, 1, op.c_str());
        return std::vector<Tensor>{f(e.t(a[0]))};
      };
    }
    m["gelu"] = [](const Env& e, const Args& a) {
      need(a, 2, "gelu");
      return std::vector<Tensor>{gelu(e.t(a[0]), a[1] == "tanh" ? "tanh" : "none")};
    };
    // Binary ops: Tensor-Tensor, and Tensor-Scalar where kiln has that overload.
    using TT = Tensor (*)(const Tensor&, const Tensor&);
    using TS = Tensor (*)(const Tensor&, const Scalar&);
    struct Binary {
      const char* name;
      TT tt;
      TS ts;
    };
    const Binary binary[] = {
        {"mul", &kiln::mul, &kiln::mul},
        {"maximum", &kiln::maximum, nullptr},
        {"minimum", &kiln::minimum, nullptr},
        {"fmod", &kiln::fmod, &kiln::fmod},
        {"remainder", &kiln::remainder, &kiln::remainder},
        {"atan2", &kiln::atan2, nullptr},
        {"pow", &kiln::pow, &kiln::pow},
        {"bitwise_and", &kiln::bitwise_and, &kiln::bitwise_and},
        {"bitwise_or", &kiln::bitwise_or, &kiln::bitwise_or},
        {"bitwise_xor", &kiln::bitwise_xor, &kiln::bitwise_xor},
        {"logical_and", &kiln::logical_and, nullptr},
        {"logical_or", &kiln::logical_or, nullptr},
        {"logical_xor", &kiln::logical_xor, nullptr},
        {"eq", &kiln::eq, &kiln::eq},
        {"ne", &kiln::ne, &kiln::ne},
        {"lt", &kiln::lt, &kiln::lt},
        {"le", &kiln::le, &kiln::le},
        {"gt", &kiln::gt, &kiln::gt},
        {"ge", &kiln::ge, &kiln::ge},
        {"add", [](const Tensor& x, const Tensor& y) { return add(x, y); },
         [](const Tensor& x, const Scalar& y) { return add(x, y); }},
        {"sub", [](const Tensor& x, const Tensor& y) { return sub(x, y); },
         [](const Tensor& x, const Scalar& y) { return sub(x, y); }},
    };
    for (const auto& b : binary) {
      Binary op = b;
      m[b.name] = [op](const Env& e, const Args& a) {
        need(a, 2, op.name);
        if (is_scalar(a[0])) {
          KILN_CHECK(std::string_view(op.name) == "pow", "difftest: {} takes no scalar first argument", op.name);
          return std::vector<Tensor>{pow(to_scalar(a[0]), e.t(a[1]))};
        }
        if (is_scalar(a[1])) {
          KILN_CHECK(op.ts != nullptr, "difftest: {} has no scalar form", op.name);
          return std::vector<Tensor>{op.ts(e.t(a[0]), to_scalar(a[1]))};
        }
        return std::vector<Tensor>{op.tt(e.t(a[0]), e.t(a[1]))};
      };
    }
    m["div"] = [](const Env& e, const Args& a) {
      need(a, 3, "div");
      if (is_scalar(a[1])) return std::vector<Tensor>{div(e.t(a[0]), to_scalar(a[1]), mode(a[2]))};
      return std::vector<Tensor>{div(e.t(a[0]), e.t(a[1]), mode(a[2]))};
    };
    m["where"] = [](const Env& e, const Args& a) {
      need(a, 3, "where");
      return std::vector<Tensor>{where(e.t(a[0]), e.t(a[1]), e.t(a[2]))};
    };
    m["clamp"] = [](const Env& e, const Args& a) {
      need(a, 3, "clamp");
      bool scalars = (a[1] == "none" || is_scalar(a[1])) && (a[2] == "none" || is_scalar(a[2]));
      if (scalars) {
        auto s = [](const std::string& tok) { return tok == "none" ? std::nullopt : std::optional(to_scalar(tok)); };
        return std::vector<Tensor>{clamp(e.t(a[0]), s(a[1]), s(a[2]))};
      }
      return std::vector<Tensor>{clamp(e.t(a[0]), e.opt_t(a[1]), e.opt_t(a[2]))};
    };
    m["sum"] = [](const Env& e, const Args& a) {
      need(a, 3, "sum");
      Shape dims;
      return std::vector<Tensor>{sum(e.t(a[0]), opt_dims(a[1], dims), to_int(a[2]) != 0)};
    };
    m["mean"] = [](const Env& e, const Args& a) {
      need(a, 3, "mean");
      Shape dims;
      return std::vector<Tensor>{mean(e.t(a[0]), opt_dims(a[1], dims), to_int(a[2]) != 0)};
    };
    m["amax"] = [](const Env& e, const Args& a) {
      need(a, 3, "amax");
      return std::vector<Tensor>{amax(e.t(a[0]), to_shape(a[1]), to_int(a[2]) != 0)};
    };
    m["amin"] = [](const Env& e, const Args& a) {
      need(a, 3, "amin");
      return std::vector<Tensor>{amin(e.t(a[0]), to_shape(a[1]), to_int(a[2]) != 0)};
    };
    m["prod"] = [](const Env& e, const Args& a) {
      need(a, 3, "prod");
      if (a[1] == "none") return std::vector<Tensor>{prod(e.t(a[0]))};
      return std::vector<Tensor>{prod(e.t(a[0]), to_int(a[1]), to_int(a[2]) != 0)};
    };
    m["var"] = [](const Env& e, const Args& a) {
      need(a, 4, "var");
      Shape dims;
      return std::vector<Tensor>{var(e.t(a[0]), opt_dims(a[1], dims), to_scalar(a[2]), to_int(a[3]) != 0)};
    };
    m["var_mean"] = [](const Env& e, const Args& a) {
      need(a, 4, "var_mean");
      Shape dims;
      auto [v, mu] = var_mean(e.t(a[0]), opt_dims(a[1], dims), to_scalar(a[2]), to_int(a[3]) != 0);
      return std::vector<Tensor>{v, mu};
    };
    m["softmax"] = [](const Env& e, const Args& a) {
      need(a, 2, "softmax");
      return std::vector<Tensor>{softmax(e.t(a[0]), to_int(a[1]))};
    };
    m["log_softmax"] = [](const Env& e, const Args& a) {
      need(a, 2, "log_softmax");
      return std::vector<Tensor>{log_softmax(e.t(a[0]), to_int(a[1]))};
    };
    m["layer_norm"] = [](const Env& e, const Args& a) {
      need(a, 5, "layer_norm");
      return std::vector<Tensor>{
          layer_norm(e.t(a[0]), to_shape(a[1]), e.opt_t(a[2]), e.opt_t(a[3]), to_scalar(a[4]).to_double())};
    };
    // Contractions: matmul (1-D, 2-D and batched, broadcasting), linear (x, weight, bias or none)
    // and scaled_dot_product_attention (q, k, v, mask or none, is_causal 0/1, scale or none).
    m["matmul"] = [](const Env& e, const Args& a) {
      need(a, 2, "matmul");
      return std::vector<Tensor>{matmul(e.t(a[0]), e.t(a[1]))};
    };
    m["linear"] = [](const Env& e, const Args& a) {
      need(a, 3, "linear");
      return std::vector<Tensor>{linear(e.t(a[0]), e.t(a[1]), e.opt_t(a[2]))};
    };
    m["sdpa"] = [](const Env& e, const Args& a) {
      need(a, 6, "sdpa");
      std::optional<double> scale;
      if (a[5] != "none") scale = to_scalar(a[5]).to_double();
      return std::vector<Tensor>{
          scaled_dot_product_attention(e.t(a[0]), e.t(a[1]), e.t(a[2]), e.opt_t(a[3]), 0.0, to_int(a[4]) != 0, scale)};
    };
    m["transpose"] = [](const Env& e, const Args& a) {
      need(a, 3, "transpose");
      return std::vector<Tensor>{transpose(e.t(a[0]), to_int(a[1]), to_int(a[2]))};
    };
    m["permute"] = [](const Env& e, const Args& a) {
      need(a, 2, "permute");
      return std::vector<Tensor>{permute(e.t(a[0]), to_shape(a[1]))};
    };
    m["slice"] = [](const Env& e, const Args& a) {
      need(a, 5, "slice");
      auto opt = [](const std::string& tok) { return tok == "none" ? std::nullopt : std::optional(to_int(tok)); };
      return std::vector<Tensor>{slice(e.t(a[0]), to_int(a[1]), opt(a[2]), opt(a[3]), to_int(a[4]))};
    };
    m["select"] = [](const Env& e, const Args& a) {
      need(a, 3, "select");
      return std::vector<Tensor>{select(e.t(a[0]), to_int(a[1]), to_int(a[2]))};
    };
    m["expand"] = [](const Env& e, const Args& a) {
      need(a, 2, "expand");
      return std::vector<Tensor>{expand(e.t(a[0]), to_shape(a[1]))};
    };
    m["unsqueeze"] = [](const Env& e, const Args& a) {
      need(a, 2, "unsqueeze");
      return std::vector<Tensor>{unsqueeze(e.t(a[0]), to_int(a[1]))};
    };
    m["squeeze"] = [](const Env& e, const Args& a) {
      need(a, 2, "squeeze");
      return std::vector<Tensor>{squeeze(e.t(a[0]), to_int(a[1]))};
    };
    m["view"] = [](const Env& e, const Args& a) {
      need(a, 2, "view");
      return std::vector<Tensor>{view(e.t(a[0]), to_shape(a[1]))};
    };
    m["reshape"] = [](const Env& e, const Args& a) {
      need(a, 2, "reshape");
      return std::vector<Tensor>{reshape(e.t(a[0]), to_shape(a[1]))};
    };
    m["diagonal"] = [](const Env& e, const Args& a) {
      need(a, 4, "diagonal");
      return std::vector<Tensor>{diagonal(e.t(a[0]), to_int(a[1]), to_int(a[2]), to_int(a[3]))};
    };
    m["cat"] = [](const Env& e, const Args& a) {
      need(a, 2, "cat");
      return std::vector<Tensor>{cat(e.tensors(a[0]), to_int(a[1]))};
    };
    m["full"] = [](const Env& e, const Args& a) {
      need(a, 3, "full");
      return std::vector<Tensor>{
          full(to_shape(a[0]), to_scalar(a[1]), TensorOptions(e.dtype(a[2])).device(e.factories))};
    };
    m["scalar_tensor"] = [](const Env& e, const Args& a) {
      need(a, 2, "scalar_tensor");
      return std::vector<Tensor>{scalar_tensor(to_scalar(a[0]), TensorOptions(e.dtype(a[1])).device(e.factories))};
    };
    m["to"] = [](const Env& e, const Args& a) {
      need(a, 2, "to");
      return std::vector<Tensor>{e.t(a[0]).to(e.dtype(a[1]))};
    };
    return m;
  }();
  return table;
}

}  // namespace

int64_t InputSpec::storage_elements() const { return offset + storage_span(sizes, strides); }

std::string Program::str() const {
  std::ostringstream out;
  for (const auto& c : comments) out << "# " << c << "\n";
  for (const auto& in : inputs) {
    out << "input " << in.name << " " << dtype_name(in.dtype) << " " << shape_str(in.sizes) << " "
        << shape_str(in.strides) << " " << in.offset << " " << in.fill << " " << in.seed << "\n";
  }
  for (const auto& c : calls) {
    for (const auto& r : c.results) out << r << " ";
    out << "= " << c.op;
    for (const auto& a : c.args) out << " " << a;
    out << "\n";
  }
  out << "output";
  for (const auto& o : outputs) out << " " << o;
  out << "\n";
  return out.str();
}

Program parse_program(const std::string& text) {
  Program p;
  int line_no = 0;
  bool have_output = false;
  for (const auto& line : split(text, '\n')) {
    ++line_no;
    auto w = words(line);
    if (w.empty()) continue;
    if (w[0][0] == '#') {
      std::string c = line.substr(line.find('#') + 1);
      p.comments.push_back(c.starts_with(" ") ? c.substr(1) : c);
      continue;
    }
    if (w[0] == "input") {
      KILN_CHECK(w.size() == 8, "difftest: line {}: input takes 7 fields: '{}'", line_no, line);
      InputSpec in;
      in.name = w[1];
      auto d = parse_dtype(w[2]);
      KILN_CHECK(d.has_value(), "difftest: line {}: unknown dtype '{}'", line_no, w[2]);
      in.dtype = *d;
      in.sizes = to_shape(w[3]);
      in.strides = to_shape(w[4]);
      KILN_CHECK(in.sizes.size() == in.strides.size(), "difftest: line {}: sizes and strides differ in rank", line_no);
      in.offset = to_int(w[5]);
      in.fill = w[6];
      in.seed = static_cast<uint64_t>(to_int(w[7]));
      p.inputs.push_back(in);
    } else if (w[0] == "output") {
      p.outputs.assign(w.begin() + 1, w.end());
      have_output = true;
    } else {
      auto eq = std::find(w.begin(), w.end(), "=");
      KILN_CHECK(eq != w.end() && eq != w.begin() && eq + 1 != w.end(),
                 "difftest: line {}: expected "
                 "'results = op args': '{}'",
                 line_no, line);
      OpCall c;
      c.results.assign(w.begin(), eq);
      c.op = *(eq + 1);
      c.args.assign(eq + 2, w.end());
      KILN_CHECK(ops().contains(c.op), "difftest: line {}: unknown op '{}'", line_no, c.op);
      p.calls.push_back(c);
    }
  }
  KILN_CHECK(have_output, "difftest: program has no output line");
  return p;
}

std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& inputs, Precision precision,
                                Device factories) {
  KILN_CHECK(inputs.size() == p.inputs.size(), "difftest: program has {} inputs, given {}", p.inputs.size(),
             inputs.size());
  // The float64 run is float64 throughout: floats made from integers and scalars too, as PyTorch's
  // with torch.set_default_dtype(torch.float64) (torch_ref.py).
  std::optional<DefaultFloatDType> wide;
  if (precision == Precision::Float64) wide.emplace(DType::Float64);
  Env env{{}, precision, factories};
  for (size_t i = 0; i < inputs.size(); ++i) env.values[p.inputs[i].name] = inputs[i];
  for (const auto& c : p.calls) {
    std::vector<Tensor> r = ops().at(c.op)(env, c.args);
    KILN_CHECK(r.size() == c.results.size(), "difftest: {} gives {} results, {} named", c.op, r.size(),
               c.results.size());
    for (size_t i = 0; i < r.size(); ++i) env.values[c.results[i]] = r[i];
  }
  std::vector<Tensor> out;
  for (const auto& o : p.outputs) out.push_back(env.t(o));
  return out;
}

std::vector<Tensor> apply_call(const OpCall& c, const std::map<std::string, Tensor>& values, Precision precision,
                               Device factories) {
  std::optional<DefaultFloatDType> wide;
  if (precision == Precision::Float64) wide.emplace(DType::Float64);
  Env env{values, precision, factories};
  auto it = ops().find(c.op);
  KILN_CHECK(it != ops().end(), "difftest: unknown op '{}'", c.op);
  return it->second(env, c.args);
}

std::vector<Tensor> meta_inputs(const Program& p) {
  std::vector<Tensor> metas;
  for (const auto& in : p.inputs) {
    Tensor storage = empty({in.storage_elements()}, TensorOptions(in.dtype).device(kMeta));
    metas.push_back(as_strided(storage, in.sizes, in.strides, in.offset));
  }
  return metas;
}

namespace {

int precision_rank(DType t) {
  switch (t) {
    case DType::BFloat16: return 0;
    case DType::Float16: return 1;
    case DType::Float32: return 2;
    default: return 3;
  }
}

std::optional<DType> looser(std::optional<DType> a, std::optional<DType> b) {
  if (!a) return b;
  if (!b) return a;
  return precision_rank(*a) <= precision_rank(*b) ? a : b;
}

}  // namespace

std::vector<std::optional<DType>> loosest_float_dtypes(const Program& p, Precision precision) {
  std::map<std::string, Tensor> values;
  std::map<std::string, std::optional<DType>> loosest;
  auto own = [](const Tensor& t) { return is_floating(t.dtype()) ? std::optional(t.dtype()) : std::nullopt; };
  std::vector<Tensor> metas = meta_inputs(p);
  if (precision == Precision::Float64) {
    for (auto& m : metas) {
      if (is_floating(m.dtype())) m = m.to(DType::Float64);
    }
  }
  for (size_t i = 0; i < metas.size(); ++i) {
    values[p.inputs[i].name] = metas[i];
    loosest[p.inputs[i].name] = own(metas[i]);
  }
  std::set<std::string> names;
  for (const auto& [name, unused] : values) names.insert(name);
  for (const auto& c : p.calls) {
    std::vector<Tensor> out;
    try {
      out = apply_call(c, values, precision, kMeta);
    } catch (const Error&) {  // the program raises before any value exists: nothing to compare
      return std::vector<std::optional<DType>>(p.outputs.size());
    }
    std::optional<DType> from;
    for (const auto& a : c.args) {
      std::vector<std::string> items = is_list(a) ? list_items(a) : std::vector<std::string>{a};
      for (const auto& item : items) {
        if (loosest.contains(item)) from = looser(from, loosest[item]);
      }
    }
    for (size_t i = 0; i < out.size(); ++i) {
      values[c.results[i]] = out[i];
      loosest[c.results[i]] = looser(from, own(out[i]));
    }
  }
  std::vector<std::optional<DType>> result;
  for (const auto& o : p.outputs) result.push_back(loosest.at(o));
  return result;
}

std::vector<std::string> known_ops() {
  std::vector<std::string> names;
  for (const auto& [name, unused] : ops()) names.push_back(name);
  return names;
}

namespace {

// The token with every value name in `names` renamed by `rename`.
std::string rename_token(const std::string& tok, const std::set<std::string>& names,
                         const std::function<std::string(const std::string&)>& rename) {
  if (names.contains(tok)) return rename(tok);
  if (!is_list(tok)) return tok;
  auto items = list_items(tok);
  std::string out = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += ',';
    out += names.contains(items[i]) ? rename(items[i]) : items[i];
  }
  return out + "]";
}

}  // namespace

std::set<std::string> value_names(const Program& p) {
  std::set<std::string> names;
  for (const auto& in : p.inputs) names.insert(in.name);
  for (const auto& c : p.calls) names.insert(c.results.begin(), c.results.end());
  return names;
}

// Value names a token refers to.
std::vector<std::string> refs(const std::string& tok, const std::set<std::string>& names) {
  if (names.contains(tok)) return {tok};
  std::vector<std::string> out;
  if (is_list(tok)) {
    for (const auto& item : list_items(tok)) {
      if (names.contains(item)) out.push_back(item);
    }
  }
  return out;
}

Program merge_programs(const std::vector<Program>& programs, std::vector<size_t>* output_owner) {
  Program merged;
  if (output_owner) output_owner->clear();
  for (size_t k = 0; k < programs.size(); ++k) {
    const Program& p = programs[k];
    std::string prefix = fmt::format("p{}_", k);
    auto names = value_names(p);
    auto rename = [&](const std::string& n) { return fmt::format("{}{}", prefix, n); };
    for (auto in : p.inputs) {
      in.name = rename(in.name);
      merged.inputs.push_back(in);
    }
    for (auto c : p.calls) {
      for (auto& r : c.results) r = rename(r);
      for (auto& a : c.args) a = rename_token(a, names, rename);
      merged.calls.push_back(c);
    }
    for (const auto& o : p.outputs) {
      merged.outputs.push_back(rename(o));
      if (output_owner) output_owner->push_back(k);
    }
  }
  return merged;
}

Program prune(Program p) {
  p = live_calls(std::move(p));
  std::set<std::string> needed(p.outputs.begin(), p.outputs.end());
  auto names = value_names(p);
  for (const auto& c : p.calls) {
    for (const auto& a : c.args) {
      for (const auto& r : refs(a, names)) needed.insert(r);
    }
  }
  std::erase_if(p.inputs, [&](const InputSpec& in) { return !needed.contains(in.name); });
  return p;
}

Program live_calls(Program p) {
  auto names = value_names(p);
  std::set<std::string> needed(p.outputs.begin(), p.outputs.end());
  std::vector<OpCall> kept;
  for (auto it = p.calls.rbegin(); it != p.calls.rend(); ++it) {
    bool used = std::any_of(it->results.begin(), it->results.end(), [&](const auto& r) { return needed.contains(r); });
    if (!used) continue;
    for (const auto& a : it->args) {
      for (const auto& r : refs(a, names)) needed.insert(r);
    }
    kept.push_back(*it);
  }
  std::reverse(kept.begin(), kept.end());
  p.calls = kept;
  return p;
}

}  // namespace kiln::difftest
