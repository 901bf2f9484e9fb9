#include "generator.h"

#include <algorithm>
#include <array>
#include <numeric>
#include <set>

#include <fmt/format.h>

#include "rng.h"

namespace kiln::difftest {
namespace {

struct Value {
  std::string name;
  Tensor meta;
  // A float16/bfloat16 value computed by an arithmetic op (or a view of one): a compiled kernel keeps it in float32
  // (as Inductor does) where eager rounds it, so ops with discrete results (comparisons, floor,
  // isinf, ...) may rightly differ on it; the generator does not apply them there.
  bool rounded = false;
};

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s + "]";
}

const std::vector<std::string> kUnary = {
    "abs",        "neg",   "exp",   "expm1",       "log",         "log1p",  "log2",  "log10", "sqrt",       "rsqrt",
    "reciprocal", "sin",   "cos",   "tan",         "asin",        "acos",   "atan",  "sinh",  "cosh",       "tanh",
    "asinh",      "acosh", "atanh", "sigmoid",     "erf",         "ceil",   "floor", "round", "trunc",      "sign",
    "relu",       "isnan", "isinf", "bitwise_not", "logical_not", "square", "silu",  "clone", "contiguous", "gelu"};
const std::vector<std::string> kDiscrete = {"ceil",  "floor",       "round",       "trunc",      "sign",       "isnan",
                                            "isinf", "eq",          "ne",          "lt",         "le",         "gt",
                                            "ge",    "logical_not", "logical_and", "logical_or", "logical_xor"};
const std::vector<std::string> kBinary = {
    "add", "sub",         "mul",        "maximum",     "minimum",     "fmod",       "remainder",   "atan2",
    "pow", "bitwise_and", "bitwise_or", "bitwise_xor", "logical_and", "logical_or", "logical_xor", "eq",
    "ne",  "lt",          "le",         "gt",          "ge",          "div"};
const std::vector<std::string> kViews = {"transpose", "permute", "slice",   "select",   "expand", "unsqueeze",
                                         "squeeze",   "view",    "reshape", "diagonal", "flip"};

class Generator {
 public:
  Generator(uint64_t seed, const GenOptions& o) : r_(Rng::from_seed(seed)), o_(o) {}

  Program run() {
    choose_flavor();
    int inputs = 1 + (r_.chance(0.6) ? 1 : 0) + (r_.chance(0.3) ? 1 : 0);
    for (int i = 0; i < inputs; ++i) add_input(i == 0 ? base_ : derived_shape(), input_dtype());
    int calls = static_cast<int>(r_.between(o_.min_calls, o_.max_calls));
    // 16-bit chains run long: rounding after every op is where eager and PyTorch part.
    if (is_reduced_float(flavor_) && r_.chance(0.5)) calls *= 2;
    for (int attempt = 0; attempt < 40 * calls && static_cast<int>(p_.calls.size()) < calls; ++attempt) step();
    choose_outputs();
    if (o_.zero_divisors) p_.comments.push_back("may raise");
    return p_;
  }

 private:
  void choose_flavor() {
    double u = r_.uniform();
    flavor_ = u < 0.55   ? DType::Float32
              : u < 0.65 ? DType::Float64
              : u < 0.72 ? DType::BFloat16
              : u < 0.77 ? DType::Float16
              : u < 0.89 ? DType::Int64
              : u < 0.95 ? DType::Int32
              : u < 0.98 ? r_.pick(std::vector<DType>{DType::Int16, DType::Int8, DType::UInt8})
                         : DType::Bool;
    if (o_.large) flavor_ = r_.chance(0.8) ? DType::Float32 : DType::Int64;
    static const std::vector<Shape> shapes = {{},      {0},     {1},       {7},    {33},   {3, 4},
                                              {4, 4},  {1, 5},  {5, 1},    {0, 3}, {3, 0}, {2, 3, 4},
                                              {6, 33}, {17, 9}, {2, 1, 3}, {1, 1}, {8, 8}, {4, 1, 6}};
    static const std::vector<Shape> large = {{2, 1048577}, {1048583}, {1, 1100000}};
    base_ = o_.large ? r_.pick(large) : r_.pick(shapes);
  }

  DType input_dtype() {
    if (!r_.chance(0.15)) return flavor_;
    return r_.pick(std::vector<DType>{DType::Float32, DType::Int64, DType::Bool, DType::Float64});
  }

  Shape derived_shape() {
    double u = r_.uniform();
    Shape s = base_;
    if (u < 0.6) return s;
    if (u < 0.8) {
      size_t drop = s.empty() ? 0 : static_cast<size_t>(r_.between(0, static_cast<int64_t>(s.size()) - 1));
      Shape out(s.begin() + static_cast<std::ptrdiff_t>(drop), s.end());
      for (auto& d : out) {
        if (r_.chance(0.3)) d = 1;
      }
      return out;
    }
    if (u < 0.9 && s.size() == 2) return Shape{s[1], s[0]};
    return Shape{};
  }

  void add_input(const Shape& sizes, DType dtype) {
    InputSpec in;
    in.name = "a" + std::to_string(p_.inputs.size());
    in.dtype = dtype;
    in.sizes = sizes;
    in.strides = contiguous_strides(sizes);
    size_t rank = sizes.size();
    double u = r_.uniform();
    bool big = checked_numel(sizes, "difftest") > 4096;
    if (u < 0.15 && rank >= 2) {  // transposed: the dims laid out in reverse order
      Shape rev(sizes);
      std::reverse(rev.begin(), rev.end());
      Shape rs = contiguous_strides(rev);
      for (size_t d = 0; d < rank; ++d) in.strides[rank - 1 - d] = rs[d];
    } else if (u < 0.35 && rank >= 1 && !big) {  // a slice with step 2 in the last dim, at an offset
      Shape parent = sizes;
      parent[0] += 1;
      parent[rank - 1] = 2 * sizes[rank - 1] + 1;
      Shape ps = contiguous_strides(parent);
      for (size_t d = 0; d + 1 < rank; ++d) in.strides[d] = ps[d];
      in.strides[rank - 1] = 2;
      in.offset = ps[0] + 1;
    } else if (u < 0.42 && rank >= 2 && !big) {
      // overlapping reads: every dim steps one element (sliding windows, as_strided(x, sizes, 1s))
      for (auto& st : in.strides) st = 1;
      in.offset = r_.between(0, 3);
    } else if (u < 0.5 && rank >= 1) {  // expanded: one dim of size > 1 has stride 0
      size_t d = static_cast<size_t>(r_.between(0, static_cast<int64_t>(rank) - 1));
      if (sizes[d] > 1) {
        Shape one = sizes;
        one[d] = 1;
        in.strides = contiguous_strides(one);
        in.strides[d] = 0;
      }
    } else if (u < 0.6) {
      in.offset = r_.between(1, 5);
    }
    if (is_floating(dtype)) {
      double f = r_.uniform();
      in.fill = f < 0.4 ? "normal" : f < 0.7 ? "special" : f < 0.82 ? "pos" : f < 0.92 ? "nonzero" : "constant";
    } else if (dtype == DType::Bool) {
      in.fill = r_.chance(0.9) ? "normal" : "constant";
    } else if (o_.zero_divisors) {
      in.fill = r_.chance(0.5) ? "special" : "normal";
    } else {
      // Never zero: divisions stay defined. "limits" holds the dtype's extremes.
      double f = r_.uniform();
      in.fill = f < 0.45 ? "nonzero" : f < 0.75 ? "pos" : "limits";
    }
    in.seed = r_.next() >> 2;
    p_.inputs.push_back(in);
    Tensor storage = empty({in.storage_elements()}, TensorOptions(dtype).device(kMeta));
    Tensor meta = as_strided(storage, in.sizes, in.strides, in.offset);
    env_[in.name] = meta;
    pool_.push_back({in.name, meta, false});
  }

  const Value& pick() {
    if (r_.chance(0.6)) {
      size_t k = std::min<size_t>(3, pool_.size());
      return pool_[pool_.size() - 1 - static_cast<size_t>(r_.between(0, static_cast<int64_t>(k) - 1))];
    }
    return r_.pick(pool_);
  }

  std::string scalar(DType dtype) {
    if (!is_floating(dtype) && r_.chance(0.7)) {
      std::vector<std::string> ints = {"i:2", "i:-3", "i:7", "i:1", "i:9007199254740993", "i:-9007199254740993"};
      if (o_.zero_divisors) ints.insert(ints.end(), {"i:0", "i:-1", "i:-9223372036854775808"});
      return r_.pick(ints);
    }
    return r_.pick(std::vector<std::string>{"f:0.5", "f:-0.0", "f:2.5", "f:-1.75", "f:nan", "f:inf", "f:-inf",
                                            "f:1e-40", "f:3", "i:2", "b:1", "i:9007199254740993", "i:-1", "f:-0.5",
                                            "f:1e-300", "f:3e38"});
  }

  int64_t dim_of(const Tensor& t) { return t.dim() == 0 ? 0 : r_.between(-t.dim(), t.dim() - 1); }

  std::vector<int64_t> dims_of(const Tensor& t) {
    std::vector<int64_t> all(static_cast<size_t>(t.dim()));
    std::iota(all.begin(), all.end(), 0);
    std::vector<int64_t> out;
    for (int64_t d : all) {
      if (r_.chance(0.4)) out.push_back(d);
    }
    if (out.empty() && !all.empty()) out.push_back(r_.pick(all));
    return out;
  }

  // Adds `results = op args` if kiln's meta kernels accept it.
  bool add(const std::string& op, std::vector<std::string> args, int results = 1, bool arithmetic = true) {
    OpCall c;
    for (int i = 0; i < results; ++i) c.results.push_back(fmt::format("v{}", next_value_ + i));
    c.op = op;
    c.args = std::move(args);
    std::vector<Tensor> out;
    try {
      out = apply_call(c, env_, Precision::Native, kMeta);
    } catch (const Error&) {
      return false;
    }
    int64_t limit = o_.large ? 3'000'000 : 100'000;
    for (const auto& t : out) {
      if (t.numel() > limit || t.dim() > 5) return false;
    }
    next_value_ += results;
    p_.calls.push_back(c);
    // A view or copy (not arithmetic) of a rounded value is rounded too.
    bool of_rounded = std::any_of(pool_.begin(), pool_.end(), [&](const Value& v) {
      return v.rounded && std::find(c.args.begin(), c.args.end(), v.name) != c.args.end();
    });
    for (size_t i = 0; i < out.size(); ++i) {
      env_[c.results[i]] = out[i];
      pool_.push_back({c.results[i], out[i], (arithmetic || of_rounded) && is_reduced_float(out[i].dtype())});
    }
    return true;
  }

  bool discrete_ok(const Value& v) { return !v.rounded; }

  void step() {
    const Value x = pick();
    double u = r_.uniform();
    if (u < 0.22) {
      std::string op = r_.pick(kUnary);
      if (!discrete_ok(x) && std::find(kDiscrete.begin(), kDiscrete.end(), op) != kDiscrete.end()) return;
      if (op == "gelu") {
        add(op, {x.name, r_.chance(0.5) ? "none" : "tanh"});
      } else {
        add(op, {x.name}, 1, op != "clone" && op != "contiguous");
      }
    } else if (u < 0.5) {
      std::string op = r_.pick(kBinary);
      if (!discrete_ok(x) && std::find(kDiscrete.begin(), kDiscrete.end(), op) != kDiscrete.end()) return;
      double w = r_.uniform();
      std::string other = w < 0.45 ? pick().name : w < 0.8 ? scalar(x.meta.dtype()) : x.name;
      std::vector<std::string> args = {x.name, other};
      if (op == "pow" && r_.chance(0.1)) args = {scalar(x.meta.dtype()), x.name};
      if (op == "div") args.push_back(r_.pick(std::vector<std::string>{"none", "trunc", "floor"}));
      add(op, args);
    } else if (u < 0.6) {
      reduction(x);
    } else if (u < 0.75) {
      view(x);
    } else if (u < 0.8) {
      normalization(x);
    } else if (u < 0.87) {
      select_or_clamp(x);
    } else if (u < 0.91) {
      concat(x);
    } else if (u < 0.94) {
      contraction(x);
    } else if (u < 0.96) {
      constant(x);
    } else if (u < 0.98) {
      scatter(x);
    } else {
      convert(x);
    }
  }

  // slice_scatter and select_scatter of x, the written values computed from x's own slice (so its
  // NaNs and extremes move) or a constant.
  void scatter(const Value& x) {
    const Tensor& t = x.meta;
    if (t.dim() == 0) return;
    int64_t d = dim_of(t), n = t.size(d);
    bool select = n > 0 && r_.chance(0.35);
    std::string index = std::to_string(select ? r_.between(-n, n - 1) : 0);
    std::string start = r_.chance(0.2) ? "none" : std::to_string(r_.between(-n - 1, n));
    std::string end = r_.chance(0.3) ? "none" : std::to_string(r_.between(-n, n + 2));
    std::string step = std::to_string(r_.between(1, 3));
    std::vector<std::string> view_args = select ? std::vector<std::string>{x.name, std::to_string(d), index}
                                                : std::vector<std::string>{x.name, std::to_string(d), start, end, step};
    if (!add(select ? "select" : "slice", view_args, 1, false)) return;
    std::string part = p_.calls.back().results[0];
    std::string src;
    if (r_.chance(0.6)) {
      std::string op = r_.pick(std::vector<std::string>{"neg", "exp", "abs", "reciprocal", "sqrt", "clone"});
      if (!add(op, {part})) return;
      src = p_.calls.back().results[0];
      if (env_[src].dtype() != t.dtype()) {
        if (!add("to", {src, std::string(dtype_name(t.dtype()))})) return;
        src = p_.calls.back().results[0];
      }
    } else {
      if (!add("full", {list_str(env_[part].sizes().vec()), scalar(t.dtype()), std::string(dtype_name(t.dtype()))}))
        return;
      src = p_.calls.back().results[0];
    }
    if (select) {
      add("select_scatter", {x.name, src, std::to_string(d), index});
    } else {
      add("slice_scatter", {x.name, src, std::to_string(d), start, end, step});
    }
  }

  void reduction(const Value& x) {
    std::string keep = r_.chance(0.3) ? "1" : "0";
    std::string dims = r_.chance(0.25) ? "none" : list_str(dims_of(x.meta));
    std::string op = r_.pick(std::vector<std::string>{"sum", "mean", "amax", "amin", "prod", "var", "var_mean", "std",
                                                      "argmax", "argmin", "max_dim", "min_dim", "cumsum", "any"});
    std::string dim = std::to_string(dim_of(x.meta));
    if (op == "argmax" || op == "argmin") {
      if (!discrete_ok(x)) return;  // which element is largest is decided by roundings
      add(op, {x.name, r_.chance(0.3) ? "none" : dim, keep});
    } else if (op == "max_dim" || op == "min_dim") {
      if (!discrete_ok(x)) return;
      add(op, {x.name, dim, keep}, 2);
    } else if (op == "cumsum") {
      add(op, {x.name, dim});
    } else if (op == "any") {
      add(op, {x.name, dims, keep});
    } else if (op == "sum" || op == "mean") {
      add(op, {x.name, dims, keep});
    } else if (op == "amax" || op == "amin") {
      add(op, {x.name, dims == "none" ? "[]" : dims, keep});
    } else if (op == "prod") {
      add(op, {x.name, r_.chance(0.3) ? "none" : std::to_string(dim_of(x.meta)), keep});
    } else {
      // A correction at or past a row's length divides by a dof of 0 or less (NaN or inf).
      std::string correction = r_.pick(std::vector<std::string>{"i:0", "i:1", "i:1", "f:0.5", "i:2", "i:5"});
      add(op, {x.name, dims, correction, keep}, op == "var_mean" ? 2 : 1);
    }
  }

  void view(const Value& x) {
    const Tensor& t = x.meta;
    std::string op = r_.pick(kViews);
    int64_t rank = t.dim();
    if (op == "transpose") {
      add(op, {x.name, std::to_string(dim_of(t)), std::to_string(dim_of(t))}, 1, false);
    } else if (op == "permute") {
      std::vector<int64_t> perm(static_cast<size_t>(rank));
      std::iota(perm.begin(), perm.end(), 0);
      for (size_t i = perm.size(); i > 1; --i) std::swap(perm[i - 1], perm[r_.next() % i]);
      add(op, {x.name, list_str(perm)}, 1, false);
    } else if (op == "slice" && rank > 0) {
      int64_t d = dim_of(t), n = t.size(d);
      std::string start = r_.chance(0.2) ? "none" : std::to_string(r_.between(-n - 1, n));
      std::string end = r_.chance(0.3) ? "none" : std::to_string(r_.between(-n, n + 2));
      add(op, {x.name, std::to_string(d), start, end, std::to_string(r_.between(1, 3))}, 1, false);
    } else if (op == "select" && rank > 0) {
      int64_t d = dim_of(t), n = t.size(d);
      if (n > 0) add(op, {x.name, std::to_string(d), std::to_string(r_.between(-n, n - 1))}, 1, false);
    } else if (op == "expand") {
      std::vector<int64_t> sizes(t.sizes().begin(), t.sizes().end());
      for (auto& s : sizes) {
        if (s == 1 && r_.chance(0.7)) s = r_.between(2, 4);
        else if (r_.chance(0.2)) s = -1;
      }
      if (r_.chance(0.4)) sizes.insert(sizes.begin(), r_.between(1, 3));
      add(op, {x.name, list_str(sizes)}, 1, false);
    } else if (op == "unsqueeze") {
      add(op, {x.name, std::to_string(r_.between(-rank - 1, rank))}, 1, false);
    } else if (op == "squeeze") {
      add(op, {x.name, std::to_string(dim_of(t))}, 1, false);
    } else if (op == "view" || op == "reshape") {
      std::vector<int64_t> shape;
      if (r_.chance(0.5) || rank == 0) {
        shape = {-1};
      } else {
        for (int64_t s : t.sizes()) shape.push_back(s);
        size_t d = r_.next() % shape.size();
        if (shape[d] % 2 == 0 && shape[d] > 0) {
          shape[d] /= 2;
          shape.insert(shape.begin() + static_cast<std::ptrdiff_t>(d), 2);
        } else if (shape.size() >= 2) {
          shape[0] *= shape[1];
          shape.erase(shape.begin() + 1);
        }
      }
      add(op, {x.name, list_str(shape)}, 1, false);
    } else if (op == "flip" && rank >= 1) {
      add(op, {x.name, list_str(dims_of(t))}, 1, false);
    } else if (op == "diagonal" && rank >= 2) {
      int64_t d1 = dim_of(t), d2 = dim_of(t);
      add(op, {x.name, std::to_string(r_.between(-2, 2)), std::to_string(d1), std::to_string(d2)}, 1, false);
    }
  }

  void normalization(const Value& x) {
    const Tensor& t = x.meta;
    double u = r_.uniform();
    if (u < 0.35) {
      add("softmax", {x.name, std::to_string(dim_of(t))});
    } else if (u < 0.6) {
      add("log_softmax", {x.name, std::to_string(dim_of(t))});
    } else if (t.dim() >= 1) {
      int64_t k = t.dim() >= 2 && r_.chance(0.3) ? 2 : 1;
      std::vector<int64_t> shape(t.sizes().end() - k, t.sizes().end());
      auto affine = [&]() -> std::string {
        if (r_.chance(0.4)) return "none";
        for (auto it = pool_.rbegin(); it != pool_.rend(); ++it) {
          if (it->meta.sizes().vec() == shape && it->meta.dtype() == t.dtype()) return it->name;
        }
        return "none";
      };
      // eps 0 normalizes a constant row by 1 / sqrt(0); an empty normalized shape makes rows of one.
      std::string eps = r_.pick(std::vector<std::string>{"f:1e-05", "f:0.001", "f:0"});
      if (r_.chance(0.1)) shape.clear();
      std::string w = affine(), b = affine();
      if (r_.chance(0.35)) {
        add("native_layer_norm", {x.name, list_str(shape), w, b, eps}, 3);
      } else {
        add("layer_norm", {x.name, list_str(shape), w, b, eps});
      }
    }
  }

  void select_or_clamp(const Value& x) {
    if (r_.chance(0.5)) {
      // where(x > s, a, b): the condition is computed in the program.
      if (!discrete_ok(x)) return;
      if (!add("gt", {x.name, r_.pick(std::vector<std::string>{"f:0", "i:0", "f:0.5"})})) return;
      std::string cond = p_.calls.back().results[0];
      if (r_.chance(0.35)) {  // the comparison used as a number
        std::string op = r_.pick(std::vector<std::string>{"mul", "add", "sub", "sum", "pow", "div"});
        if (op == "sum") add(op, {cond, "none", "0"});
        else if (op == "div") add(op, {pick().name, cond, "none"});
        else add(op, {r_.chance(0.5) ? cond : pick().name, r_.chance(0.5) ? pick().name : cond});
        return;
      }
      std::string a = r_.chance(0.3) ? x.name : pick().name, b = r_.chance(0.3) ? x.name : pick().name;
      add("where", {cond, a, b});
    } else if (r_.chance(0.7)) {
      auto bound = [&] {
        return r_.pick(std::vector<std::string>{"none", "f:-1", "f:0.5", "i:2", "f:nan", "f:-0.0", "i:-3"});
      };
      add("clamp", {x.name, bound(), bound()});
    } else {
      add("clamp", {x.name, r_.chance(0.2) ? "none" : pick().name, r_.chance(0.2) ? "none" : pick().name});
    }
  }

  void concat(const Value& x) {
    std::vector<std::string> parts = {x.name};
    int n = static_cast<int>(r_.between(1, 3));
    for (int i = 0; i < n; ++i) parts.push_back(r_.chance(0.4) ? x.name : pick().name);
    std::string list = "[";
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) list += ',';
      list += parts[i];
    }
    add("cat", {list + "]", std::to_string(x.meta.dim() == 0 ? 0 : dim_of(x.meta))});
  }

  // A new input of the given geometry and dtype (added mid-program, listed with the others).
  std::string new_input(const Shape& sizes, DType dtype) {
    add_input(sizes, dtype);
    return p_.inputs.back().name;
  }

  // The dtype a contraction's new operand takes: x's (PyTorch's matmul wants one dtype), now and
  // then another (kiln must raise where PyTorch does).
  DType partner_dtype(DType d) { return r_.chance(0.92) ? d : input_dtype(); }

  // Contractions, the compiler's extern GEMMs and its flash attention: x @ y with y a new input
  // shaped to fit (1-D, 2-D, batched, broadcast) or x's own transpose; linear(x, w, bias) with an
  // activation or a residual now and then (the epilogues a GEMM fuses); attention over new inputs,
  // written as ops (the pattern kiln fuses: scores, scale, mask, softmax, weights @ v) or as
  // scaled_dot_product_attention (masks float or bool, causal, a scale).
  void contraction(const Value& x) {
    const Tensor& t = x.meta;
    double u = r_.uniform();
    if (u < 0.35) {
      matmul_of(x);
    } else if (u < 0.65 && t.dim() >= 1) {
      int64_t k = t.size(-1), m = r_.pick(std::vector<int64_t>{1, 3, 8, 17});
      std::string w = new_input({m, k}, partner_dtype(t.dtype()));
      std::string bias = r_.chance(0.6) ? new_input({m}, partner_dtype(t.dtype())) : "none";
      if (!add("linear", {x.name, w, bias})) return;
      std::string y = p_.calls.back().results[0];
      double v = r_.uniform();
      if (v < 0.45) {
        std::string act = r_.pick(std::vector<std::string>{"relu", "gelu", "silu", "tanh", "sigmoid"});
        add(act, act == "gelu" ? std::vector<std::string>{y, r_.chance(0.5) ? "none" : "tanh"}
                               : std::vector<std::string>{y});
      } else if (v < 0.65) {
        add("add", {y, new_input(Shape(env_[y].sizes().begin(), env_[y].sizes().end()), env_[y].dtype())});
      }
    } else {
      attention();
    }
  }

  void matmul_of(const Value& x) {
    const Tensor& t = x.meta;
    if (t.dim() == 0) return;
    double u = r_.uniform();
    if (u < 0.25 && t.dim() >= 2) {
      if (!add("transpose", {x.name, "-1", "-2"}, 1, false)) return;
      add("matmul", {x.name, p_.calls.back().results[0]});
      return;
    }
    int64_t k = t.size(-1), m = r_.pick(std::vector<int64_t>{1, 3, 8, 17});
    Shape other;
    if (u < 0.4) {
      other = {k};  // a matrix-vector product, or a dot product of 1-D x
    } else if (u < 0.75 || t.dim() <= 2) {
      other = {k, m};
    } else {
      // batched: x's leading dims, some of them 1 (broadcast), or fewer of them
      other.assign(t.sizes().begin(), t.sizes().end() - 2);
      for (auto& d : other) {
        if (r_.chance(0.3)) d = 1;
      }
      if (r_.chance(0.3)) other.erase(other.begin());
      other.push_back(k);
      other.push_back(m);
    }
    std::string y = new_input(other, partner_dtype(t.dtype()));
    if (r_.chance(0.2)) {
      add("matmul", {y, x.name});  // y on the left: its last dim must match x's first
    } else {
      add("matmul", {x.name, y});
    }
  }

  void attention() {
    DType d = r_.pick(std::vector<DType>{DType::Float32, DType::Float32, DType::Float64, DType::BFloat16});
    Shape lead = r_.pick(std::vector<Shape>{{1}, {2}, {2, 3}, {1, 2}});
    int64_t l = r_.pick(std::vector<int64_t>{1, 5, 17, 64, 65}), s = r_.pick(std::vector<int64_t>{1, 7, 64, 65}),
            e = r_.pick(std::vector<int64_t>{1, 8, 16});
    auto shaped = [&](int64_t n) {
      Shape x = lead;
      x.push_back(n);
      x.push_back(e);
      return x;
    };
    std::string q = new_input(shaped(l), d), k = new_input(shaped(s), d), v = new_input(shaped(s), d);
    double u = r_.uniform();
    std::string mask = "none";
    if (u < 0.5) {
      mask = new_input({l, s}, r_.chance(0.3) ? DType::Bool : d);
    }
    if (r_.chance(0.5)) {
      std::string causal = mask == "none" && r_.chance(0.4) ? "1" : "0";
      std::string scale = r_.chance(0.5) ? "none" : r_.pick(std::vector<std::string>{"f:0.125", "f:1.5", "f:-0.5"});
      add("sdpa", {q, k, v, mask, causal, scale});
      return;
    }
    // The pattern as ops, as a model writes it.
    if (!add("transpose", {k, "-1", "-2"}, 1, false)) return;
    if (!add("matmul", {q, p_.calls.back().results[0]})) return;
    std::string scores = p_.calls.back().results[0];
    if (!add(r_.chance(0.5) ? "mul" : "div", {scores, r_.pick(std::vector<std::string>{"f:0.25", "f:3"})})) return;
    scores = p_.calls.back().results[0];
    if (mask != "none" && env_[mask].dtype() != DType::Bool) {
      if (!add("add", {scores, mask})) return;
      scores = p_.calls.back().results[0];
    }
    if (!add("softmax", {scores, "-1"})) return;
    add("matmul", {p_.calls.back().results[0], v});
  }

  void constant(const Value& x) {
    DType d = r_.chance(0.5) ? x.meta.dtype()
                             : r_.pick(std::vector<DType>{DType::Int64, DType::Float32, DType::Float64});
    std::string value =
        r_.pick(std::vector<std::string>{"i:9007199254740993", "i:-9223372036854775807", "f:-0.0", "f:nan", "f:inf",
                                         "f:0.1", "i:3", "f:1e-40", "i:4611686018427387905"});
    std::vector<int64_t> shape;
    if (x.meta.dim() > 0 && r_.chance(0.5)) shape = {x.meta.size(-1)};
    bool ok = false;
    if (r_.chance(0.25)) {
      // arange with float bounds and an integer dtype: PyTorch truncates start and step, and takes
      // an int64 length from the truncated bounds.
      auto bounds = r_.pick(std::vector<std::array<const char*, 3>>{{"f:0.5", "i:-1", "i:-1"},
                                                                    {"i:0", "i:5", "i:1"},
                                                                    {"f:-2.5", "i:3", "f:0.7"},
                                                                    {"i:1", "i:-4", "f:-1.5"},
                                                                    {"f:0.2", "f:4.9", "i:1"},
                                                                    {"f:0.9", "f:3.9", "i:1"}});
      DType ad = r_.pick(std::vector<DType>{DType::Int64, DType::Int32, DType::Float32, DType::Float64, DType::UInt8});
      ok = add("arange", {bounds[0], bounds[1], bounds[2], std::string(dtype_name(ad))});
    } else if (r_.chance(0.3)) {
      ok = add("scalar_tensor", {value, std::string(dtype_name(d))});
    } else {
      ok = add("full", {list_str(shape), value, std::string(dtype_name(d))});
    }
    if (!ok) return;
    std::string c = p_.calls.back().results[0];
    std::string op = r_.pick(std::vector<std::string>{"add", "sub", "mul", "maximum", "minimum"});
    add(op, {x.name, c});
  }

  void convert(const Value& x) {
    // Float to integer conversion is defined for every value, NaN and out-of-range ones included
    // (core/float_to_int.h: PyTorch's results on x86-64).
    std::vector<DType> to = {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Bool,
                             DType::Int64,   DType::Int32,   DType::Int16,   DType::Int8,     DType::UInt8};
    DType d = r_.pick(to);
    if (!is_floating(d) && !discrete_ok(x)) return;
    add("to", {x.name, std::string(dtype_name(d))});
  }

  void choose_outputs() {
    std::set<std::string> used;
    for (const auto& c : p_.calls) {
      for (const auto& a : c.args) {
        used.insert(a);
        if (a.size() > 2 && a.front() == '[') {
          std::string inner = a.substr(1, a.size() - 2);
          size_t at = 0;
          while (at <= inner.size()) {
            size_t comma = inner.find(',', at);
            if (comma == std::string::npos) comma = inner.size();
            used.insert(inner.substr(at, comma - at));
            at = comma + 1;
          }
        }
      }
    }
    for (const auto& c : p_.calls) {
      for (const auto& r : c.results) {
        if (p_.outputs.size() < 6 && (!used.contains(r) || r_.chance(0.25))) p_.outputs.push_back(r);
      }
    }
    if (p_.outputs.empty() && !p_.calls.empty()) p_.outputs.push_back(p_.calls.back().results[0]);
    if (p_.outputs.empty()) p_.outputs.push_back(p_.inputs[0].name);
  }

  Rng r_;
  GenOptions o_;
  Program p_;
  std::vector<Value> pool_;
  std::map<std::string, Tensor> env_;
  int next_value_ = 0;
  DType flavor_ = DType::Float32;
  Shape base_;
};

}  // namespace

Program generate_program(uint64_t seed, const GenOptions& options) {
  Program p = Generator(seed, options).run();
  p.comments.insert(p.comments.begin(), "seed " + std::to_string(seed));
  return p;
}

bool may_raise(const Program& p) {
  return std::find(p.comments.begin(), p.comments.end(), "may raise") != p.comments.end();
}

bool is_large(const Program& p) {
  return std::any_of(p.inputs.begin(), p.inputs.end(), [](const InputSpec& in) {
    int64_t n = 1;
    for (int64_t s : in.sizes) n *= s;
    return n > 1'000'000;
  });
}

bool is_elementwise_op(const std::string& op) {
  return std::find(kUnary.begin(), kUnary.end(), op) != kUnary.end() ||
         std::find(kBinary.begin(), kBinary.end(), op) != kBinary.end();
}

}  // namespace kiln::difftest
