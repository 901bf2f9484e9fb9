#include "program_ops.h"

#include "../unary_ops.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/generated/handles.h"

namespace kiln::difftest {

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

namespace {

void need(const Args& a, size_t n, const char* op) {
  KILN_CHECK(a.size() == n, "difftest: {} takes {} arguments, got {}", op, n, a.size());
}

std::optional<IntArrayRef> opt_dims(const std::string& tok, Shape& storage) {
  if (tok == "none") return std::nullopt;
  storage = to_shape(tok);
  return IntArrayRef(storage);
}

std::optional<int64_t> opt_int(const std::string& tok) {
  if (tok == "none") return std::nullopt;
  return to_int(tok);
}

std::optional<std::string_view> mode(const std::string& tok) {
  if (tok == "none") return std::nullopt;
  KILN_CHECK(tok == "trunc" || tok == "floor", "difftest: div rounding mode '{}'", tok);
  return tok;
}

}  // namespace

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
    // Reductions that index: argmax and argmin (x, dim or none, keepdim), max and min over a dim
    // (x, dim, keepdim; values and indices); cumsum (x, dim); any (x, dims or none, keepdim); std
    // (x, dims, correction, keepdim).
    m["argmax"] = [](const Env& e, const Args& a) {
      need(a, 3, "argmax");
      return std::vector<Tensor>{argmax(e.t(a[0]), opt_int(a[1]), to_int(a[2]) != 0)};
    };
    m["argmin"] = [](const Env& e, const Args& a) {
      need(a, 3, "argmin");
      return std::vector<Tensor>{argmin(e.t(a[0]), opt_int(a[1]), to_int(a[2]) != 0)};
    };
    m["max_dim"] = [](const Env& e, const Args& a) {
      need(a, 3, "max_dim");
      auto [values, indices] = max(e.t(a[0]), to_int(a[1]), to_int(a[2]) != 0);
      return std::vector<Tensor>{values, indices};
    };
    m["min_dim"] = [](const Env& e, const Args& a) {
      need(a, 3, "min_dim");
      auto [values, indices] = min(e.t(a[0]), to_int(a[1]), to_int(a[2]) != 0);
      return std::vector<Tensor>{values, indices};
    };
    m["cumsum"] = [](const Env& e, const Args& a) {
      need(a, 2, "cumsum");
      return std::vector<Tensor>{cumsum(e.t(a[0]), to_int(a[1]))};
    };
    m["any"] = [](const Env& e, const Args& a) {
      need(a, 3, "any");
      Shape dims;
      return std::vector<Tensor>{any(e.t(a[0]), opt_dims(a[1], dims), to_int(a[2]) != 0)};
    };
    m["std"] = [](const Env& e, const Args& a) {
      need(a, 4, "std");
      Shape dims;
      return std::vector<Tensor>{kiln::std(e.t(a[0]), opt_dims(a[1], dims), to_scalar(a[2]), to_int(a[3]) != 0)};
    };
    m["flip"] = [](const Env& e, const Args& a) {
      need(a, 2, "flip");
      return std::vector<Tensor>{flip(e.t(a[0]), to_shape(a[1]))};
    };
    // Writes into a copy: slice_scatter (x, src, dim, start or none, end or none, step) and
    // select_scatter (x, src, dim, index), through the dispatcher (no typed API).
    m["slice_scatter"] = [](const Env& e, const Args& a) {
      need(a, 6, "slice_scatter");
      auto opt = [](const std::string& tok) { return tok == "none" ? Value() : Value(to_int(tok)); };
      Stack s{e.t(a[0]), e.t(a[1]), to_int(a[2]), opt(a[3]), opt(a[4]), to_int(a[5])};
      call_op_boxed(op::aten::slice_scatter(), s);
      return std::vector<Tensor>{s.at(0).to_tensor()};
    };
    m["select_scatter"] = [](const Env& e, const Args& a) {
      need(a, 4, "select_scatter");
      Stack s{e.t(a[0]), e.t(a[1]), to_int(a[2]), to_int(a[3])};
      call_op_boxed(op::aten::select_scatter(), s);
      return std::vector<Tensor>{s.at(0).to_tensor()};
    };
    // arange (start, end, step, dtype) on the factories' device.
    m["arange"] = [](const Env& e, const Args& a) {
      need(a, 4, "arange");
      return std::vector<Tensor>{
          arange(to_scalar(a[0]), to_scalar(a[1]), to_scalar(a[2]), TensorOptions(e.dtype(a[3])).device(e.factories))};
    };
    // native_layer_norm (x, normalized shape, weight or none, bias or none, eps): out, mean, rstd.
    m["native_layer_norm"] = [](const Env& e, const Args& a) {
      need(a, 5, "native_layer_norm");
      auto [out, mu, rstd] =
          native_layer_norm(e.t(a[0]), to_shape(a[1]), e.opt_t(a[2]), e.opt_t(a[3]), to_scalar(a[4]).to_double());
      return std::vector<Tensor>{out, mu, rstd};
    };
    return m;
  }();
  return table;
}

}  // namespace kiln::difftest
