#include "check.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../tolerance.h"
#include "dead_code.h"
#include "inputs.h"
#include "kiln/api/compile.h"
#include "row_statistics.h"
#include "values.h"

namespace kiln::difftest {
namespace {

// A run's outcome: outputs, or the kiln::Error message it raised.
struct Outcome {
  bool raised = false;
  std::string error;
  std::vector<Tensor> outputs;
  std::vector<Shape> strides;  // torch's strides (kiln tensors carry their own)
};

using testing::Tolerance;
Tolerance tolerance(DType t) { return testing::default_tolerance(t); }

double round_to(double v, DType t) {
  switch (t) {
    case DType::Float32: return static_cast<float>(v);
    case DType::Float16: return static_cast<float>(Half(static_cast<float>(v)));
    case DType::BFloat16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    default: return v;
  }
}

bool close(double actual, double expected, Tolerance tol) {
  if (std::isnan(actual) || std::isnan(expected)) return std::isnan(actual) && std::isnan(expected);
  if (std::isinf(actual) || std::isinf(expected)) return actual == expected;
  return std::abs(actual - expected) <= tol.atol + tol.rtol * std::abs(expected);
}

Outcome run(const std::function<std::vector<Tensor>()>& fn) {
  Outcome o;
  try {
    o.outputs = fn();
  } catch (const Error& e) {
    o.raised = true;
    o.error = e.what();
  }
  return o;
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

// The gist of an error message, for a failure class: digits as N, parenthesized parts dropped,
// the first six words.
std::string gist(const std::string& message) {
  std::string text;
  int depth = 0;
  for (char ch : first_line(message)) {
    if (ch == '(' || ch == '[') ++depth;
    else if ((ch == ')' || ch == ']') && depth > 0) --depth;
    else if (depth == 0 && !std::isdigit(static_cast<unsigned char>(ch))) text += ch;
    else if (depth == 0 && (text.empty() || text.back() != 'N')) text += 'N';
  }
  std::istringstream in(text);
  std::string word, out;
  for (int n = 0; n < 6 && in >> word; ++n) {
    if (n) out += ' ';
    out += word;
  }
  return out;
}

// Reads torch_ref.py's results for one precision ("native" or "f64") from `dir`.
std::optional<Outcome> read_torch(const std::string& dir, const std::string& which) {
  std::ifstream f(dir + "/torch_" + which + ".txt");
  if (!f) return std::nullopt;
  Outcome o;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "crash") return std::nullopt;  // PyTorch itself died: no reference
    if (tag == "error") {
      o.raised = true;
      o.error = line.substr(6);
    } else if (tag == "out") {
      std::string index, dtype, sizes, strides;
      in >> index >> dtype >> sizes >> strides;
      auto shape = [](const std::string& s) {
        Shape r;
        std::string inner = s.substr(1, s.size() - 2);
        std::istringstream items(inner);
        std::string item;
        while (std::getline(items, item, ',')) r.push_back(std::stoll(item));
        return r;
      };
      auto d = parse_dtype(dtype);
      KILN_CHECK(d.has_value(), "difftest: torch result has unknown dtype {}", dtype);
      Tensor t = empty(shape(sizes), *d);
      std::ifstream bin(dir + "/" + which + "_" + index + ".bin", std::ios::binary);
      bin.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
      KILN_CHECK(t.nbytes() == 0 || bin.good(), "difftest: cannot read torch output {} in {}", index, dir);
      o.outputs.push_back(t);
      o.strides.push_back(shape(strides));
    }
  }
  return o;
}

// The op that produced output `k` (for failure classes and messages).
std::string producer(const Program& p, size_t k) {
  const std::string& name = p.outputs[k];
  for (const auto& c : p.calls) {
    for (const auto& r : c.results) {
      if (r == name) return c.op;
    }
  }
  return "input";
}

double largest_finite(DType t) {
  switch (t) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32: return std::numeric_limits<float>::max();
    default: return std::numeric_limits<double>::max();
  }
}

bool same_significant_strides(IntArrayRef sizes, IntArrayRef a, IntArrayRef b) {
  if (a.size() != b.size()) return false;
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  if (numel == 0) return true;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] > 1 && a[d] != b[d]) return false;
  }
  return true;
}

// Whether `name` is computed, through any chain of calls, by a call for which `pred` holds.
template <class Pred>
bool computed_from(const Program& p, const std::string& name, const Pred& pred, int depth = 0) {
  if (depth > 64) return true;
  for (const auto& c : p.calls) {
    if (std::find(c.results.begin(), c.results.end(), name) == c.results.end()) continue;
    if (pred(c)) return true;
    for (const auto& a : c.args) {
      if (computed_from(p, a, pred, depth + 1)) return true;
    }
  }
  return false;
}

class Checker {
 public:
  // `values`: whether output values are compared (not where they depend on an order of operations).
  // `rounding_decided`: comparisons that their operands' last bits decide (compares_within_a_rounding).
  Checker(const Program& p, bool near_constant_rows, bool values, std::set<std::string> rounding_decided)
      : p_(p),
        rounding_decided_(std::move(rounding_decided)),
        loosest_(loosest_float_dtypes(p)),
        loosest_wide_(loosest_float_dtypes(p, Precision::Float64)),
        near_constant_rows_(near_constant_rows),
        values_(values) {}

  Verdict fail(const std::string& kind, const std::string& detail) {
    if (v_.ok) {
      v_.ok = false;
      v_.kind = kind;
    }
    v_.detail += detail + "\n";
    return v_;
  }

  Verdict check(const Outcome& compiled, const Outcome& eager, const std::optional<Outcome>& ref,
                const std::optional<Outcome>& torch, const std::optional<Outcome>& torch64) {
    if (eager.raised || compiled.raised) {
      if (!compiled.raised) fail("raise:eager-only", "eager raised, compiled did not: " + first_line(eager.error));
      if (!eager.raised) {
        fail("raise:compiled-only:" + gist(compiled.error),
             "compiled raised, eager did not: " + first_line(compiled.error));
      }
      v_.raised = eager.raised && compiled.raised;
      if (torch && torch->raised != eager.raised) {
        fail("raise:torch-differs",
             fmt::format("torch {} (kiln eager {}): {}", torch->raised ? "raised" : "did not raise",
                         eager.raised ? "raised" : "did not", first_line(torch->error)));
      }
      return v_;
    }
    if (compiled.outputs.size() != eager.outputs.size()) {
      return fail("meta:count",
                  fmt::format("compiled gave {} outputs, eager {}", compiled.outputs.size(), eager.outputs.size()));
    }
    if (torch && torch->raised) fail("raise:torch-only", "torch raised, kiln did not: " + first_line(torch->error));
    for (size_t k = 0; k < eager.outputs.size(); ++k) {
      const Tensor& c = compiled.outputs[k];
      const Tensor& e = eager.outputs[k];
      std::string where = fmt::format("output {} ({} = {})", k, p_.outputs[k], producer(p_, k));
      std::string op = producer(p_, k);
      if (c.dtype() != e.dtype() || c.sizes().vec() != e.sizes().vec()) {
        fail("meta:dtype-or-sizes:" + op, fmt::format("{}: compiled {}, eager {}", where, c.describe(), e.describe()));
        continue;
      }
      if (!same_significant_strides(e.sizes(), c.strides(), e.strides())) {
        fail("meta:strides", fmt::format("{}: compiled strides {}, eager {} (sizes {})", where, c.strides().vec(),
                                         e.strides().vec(), e.sizes().vec()));
      }
      const Outcome* t = torch && !torch->raised && k < torch->outputs.size() ? &*torch : nullptr;
      // What a comparison decided by its operands' last bits computes may differ from PyTorch's.
      bool torch_values = !computed_from(p_, p_.outputs[k], [&](const OpCall& call) {
        return std::any_of(call.results.begin(), call.results.end(),
                           [&](const std::string& r) { return rounding_decided_.contains(r); });
      });
      if (t && (t->outputs[k].dtype() != e.dtype() || t->outputs[k].sizes().vec() != e.sizes().vec())) {
        fail("meta:torch-dtype-or-sizes:" + op,
             fmt::format("{}: kiln {}, torch {}", where, e.describe(), t->outputs[k].describe()));
        t = nullptr;
      } else if (t && !same_significant_strides(e.sizes(), e.strides(), t->strides[k])) {
        fail("meta:torch-strides", fmt::format("{}: kiln eager strides {}, torch {} (sizes {})", where,
                                               e.strides().vec(), t->strides[k], e.sizes().vec()));
      }
      if (!values_) continue;
      const Tensor* r = ref && !ref->raised ? &ref->outputs[k] : nullptr;
      compare_values(where, op, c, e, r, t && torch_values ? &t->outputs[k] : nullptr, loosest_[k], !torch_values);
      const Outcome* t64 = torch64 && !torch64->raised && k < torch64->outputs.size() ? &*torch64 : nullptr;
      // The float64 runs are compared where they are float64 (both set the default dtype to
      // float64; a program's explicit narrower dtype would stay): two float32 implementations of
      // exp differ by an ulp that exp(exp(x)) amplifies past any tolerance.
      bool wide = !loosest_wide_.at(k) || *loosest_wide_.at(k) == DType::Float64;
      if (r && t64 && wide && torch_values) compare_references(where, op, *r, t64->outputs[k], loosest_wide_.at(k));
    }
    return v_;
  }

 private:
  // `last_bit`: the output is computed from a comparison its operands' last bits decide; there a
  // discrete compiled value that the float64 reference gives too is accepted (docs/conformance.md).
  void compare_values(const std::string& where, const std::string& op, const Tensor& c, const Tensor& e,
                      const Tensor* r, const Tensor* t, std::optional<DType> loosest, bool last_bit) {
    Values cv = read_values(c), ev = read_values(e);
    std::optional<Values> rv, tv;
    if (r && r->sizes().vec() == c.sizes().vec()) rv = read_values(*r);
    if (t) tv = read_values(*t);
    DType dt = c.dtype();
    Tolerance tol = tolerance(dt);
    if (loosest && !cv.integral) {
      tol.rtol = std::max(tol.rtol, tolerance(*loosest).rtol);
      tol.atol = std::max(tol.atol, tolerance(*loosest).atol);
    }
    size_t bad_eager = 0, bad_ref = 0, bad_torch = 0, worst = 0;
    double worst_diff = -1;
    std::string worst_kind;
    for (size_t k = 0; k < cv.size(); ++k) {
      std::string kind;
      if (cv.integral) {
        bool as_float64 = last_bit && rv && rv->integral && rv->i[k] == cv.i[k];
        if (cv.i[k] != ev.i[k] && !as_float64) kind = "compiled-vs-eager", ++bad_eager;
        else if (tv && tv->i[k] != cv.i[k] && !discrete_outputs_diverge_from_torch())
          kind = "compiled-vs-torch", ++bad_torch;
        if (!kind.empty() && worst_kind.empty()) worst = k, worst_kind = kind;
        continue;
      }
      double cval = cv.f[k], eval = ev.f[k];
      std::optional<double> rval;
      if (rv) rval = round_to(rv->integral ? static_cast<double>(rv->i[k]) : rv->f[k], dt);
      bool near_ref = rval && close(cval, *rval, tol);
      // Ill-conditioned elements (tan of a computed value near a pole): eager is not within the
      // tolerance of float64 either; compiled must then be as accurate as eager (within 2x).
      if (!near_ref && rval && std::isfinite(cval) && std::isfinite(eval) && !close(eval, *rval, tol)) {
        near_ref = std::abs(cval - *rval) <= 2 * std::abs(eval - *rval) + tol.atol;
      }
      // A float64 layer_norm of a row constant to float64's resolution scales the last ulp of its
      // mean, which eager (pairwise) and compiled code (SIMD lanes) sum in different orders
      // (docs/conformance.md): neither is more accurate there.
      if (near_constant_rows_ && dt == DType::Float64 && computes("layer_norm")) continue;
      if (!close(cval, eval, tol) && !near_ref) {
        // Named for what was accurate: eager (compiled is not), or neither (ill-conditioned).
        if (rval && close(eval, *rval, tol)) kind = "compiled-vs-float64", ++bad_ref;
        else kind = "compiled-vs-eager", ++bad_eager;
      }
      // PyTorch's layer_norm is NaN where its x * rstd - mean * rstd overflows (see compare_references).
      bool torch_layer_norm_nan = tv && std::isnan(tv->f[k]) && computes("layer_norm") && close(cval, eval, tol);
      // Where PyTorch itself is outside the tolerance of the float64 reference and kiln eager is
      // within it, compiled code answers to eager (docs/conformance.md: PyTorch's 16-bit rounding).
      bool torch_inaccurate = tv && rval && !close(tv->f[k], *rval, tol) && close(eval, *rval, tol) &&
                              close(cval, eval, tol);
      if (kind.empty() && tv && !close(cval, tv->f[k], tol) && !near_ref && !torch_layer_norm_nan && !torch_inaccurate)
        kind = "compiled-vs-torch", ++bad_torch;
      if (kind.empty()) continue;
      double diff = std::abs(cval - eval);
      if (!std::isfinite(diff)) diff = std::numeric_limits<double>::infinity();
      if (worst_kind.empty() || diff > worst_diff) worst_diff = diff, worst = k, worst_kind = kind;
    }
    size_t bad = bad_eager + bad_ref + bad_torch;
    if (bad == 0) return;
    std::string detail = fmt::format(
        "{}: Mismatched elements: {} / {} ({:.3g}%) [vs eager {}, vs float64 {}, vs torch {}]; greatest difference "
        "at index {}: compiled {}, eager {}",
        where, bad, cv.size(), 100.0 * static_cast<double>(bad) / static_cast<double>(cv.size()), bad_eager, bad_ref,
        bad_torch, worst, cv.at(worst), ev.at(worst));
    if (rv) detail += ", float64 " + rv->at(worst);
    if (tv) detail += ", torch " + tv->at(worst);
    detail += fmt::format(" ({}, rtol {}, atol {})", loosest && !cv.integral ? dtype_name(*loosest) : dtype_name(dt),
                          tol.rtol, tol.atol);
    fail("values:" + worst_kind + ":" + op, detail);
  }

  // PyTorch's var_mean mean is a running (Welford) mean, not correctly rounded: a row of integers
  // whose exact mean is 0 gives 1e-17, where kiln's sum / n gives 0. Within every float tolerance,
  // but an integer or bool output (a comparison) computed from it may differ: those are not
  // compared with PyTorch in a program that computes var_mean (docs/conformance.md).
  // The same holds for the other ops whose float results are accepted to differ from PyTorch's
  // (fmod's and layer_norm's NaN in PyTorch where kiln is finite, remainder's formula): a comparison
  // of such a result is not compared with PyTorch either.
  bool discrete_outputs_diverge_from_torch() const {
    return computes("var_mean") || computes("fmod") || computes("layer_norm") || computes("remainder");
  }

  bool computes(const std::string& op) const {
    for (const auto& c : p_.calls) {
      if (c.op == op) return true;
    }
    return false;
  }

  // The differences docs/conformance.md accepts between kiln and PyTorch, each with its reason there.
  static bool accepted_difference(const std::string& op, double kiln, double torch) {
    // var_mean's mean is sum / n in kiln (inf for [1, inf, -2]); PyTorch's Welford update turns it
    // NaN once an infinity meets another element, depending on the order it visits them.
    if (op == "var_mean" && std::isinf(kiln) && std::isnan(torch)) return true;
    // fmod of a finite x whose quotient overflows (1e308 by 0.5): kiln's is exact (0), PyTorch's
    // vectorized CPU kernel computes x - trunc(x / y) * y, which is NaN there.
    if (op == "fmod" && std::isfinite(kiln) && std::isnan(torch)) return true;
    // float32 layer_norm of values near the float limit: kiln's statistics are computed in double,
    // PyTorch's overflow to inf and give NaN.
    // (remainder past 2^53 and order-dependent prods: whole programs, see check_program.)
    return op == "layer_norm" && std::isfinite(kiln) && std::isnan(torch);
  }

  // The float64 runs: kiln eager against torch, both on widened inputs.
  void compare_references(const std::string& where, const std::string& op, const Tensor& r, const Tensor& t64,
                          std::optional<DType> loosest) {
    if (r.dtype() != t64.dtype() || r.sizes().vec() != t64.sizes().vec()) {
      fail("meta:float64-torch-differs:" + op,
           fmt::format("{}: kiln float64 run {}, torch {}", where, r.describe(), t64.describe()));
      return;
    }
    Values a = read_values(r), b = read_values(t64);
    // The loosest floating dtype the float64 run computed it from: a narrower float there carries
    // its error into a float64 output.
    Tolerance tol = tolerance(r.dtype());
    if (loosest && !a.integral) {
      tol.rtol = std::max(tol.rtol, tolerance(*loosest).rtol);
      tol.atol = std::max(tol.atol, tolerance(*loosest).atol);
    }
    size_t bad = 0, first = 0;
    for (size_t k = 0; k < a.size(); ++k) {
      bool ok = a.integral ? a.i[k] == b.i[k] || discrete_outputs_diverge_from_torch()
                           : close(a.f[k], b.f[k], tol) || accepted_difference(op, a.f[k], b.f[k]);
      // A var_mean mean or an fmod that is NaN in PyTorch only (see accepted_difference) flows into
      // later ops; so does a layer_norm that PyTorch computes as x * rstd - mean * rstd, which is
      // inf - inf for |x| * rstd past the dtype's range, where kiln's (x - mean) * rstd is not.
      ok = ok ||
           (!a.integral && std::isnan(b.f[k]) && (computes("var_mean") || computes("fmod") || computes("layer_norm")));
      // A normalization of rows whose spread is below float64's resolution of their mean scales
      // the rounding of that mean (see near_constant_rows): neither run is accurate there.
      ok = ok || (!a.integral && near_constant_rows_);
      if (!ok && bad++ == 0) first = k;
    }
    if (bad == 0) return;
    fail("values:eager-float64-vs-torch-float64:" + op,
         fmt::format("{}: float64 runs differ in {} / {} elements; first at index {}: kiln {}, torch {}", where, bad,
                     a.size(), first, a.at(first), b.at(first)));
  }

  const Program& p_;
  std::set<std::string> rounding_decided_;
  std::vector<std::optional<DType>> loosest_;
  std::vector<std::optional<DType>> loosest_wide_;  // of the float64 runs
  bool near_constant_rows_;
  bool values_;
  Verdict v_;
};

// Whether a var_mean of the program has an infinite mean in kiln, where PyTorch's running mean may
// be NaN instead (see docs/conformance.md); what is computed from it then differs from PyTorch, a
// comparison included (inf > 0.5 but not NaN > 0.5).
bool infinite_var_mean(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if (c.op != "var_mean" || c.results.size() != 2) continue;
    auto mean = probe_value(p, c.results[1], inputs, Precision::Native);
    if (!mean) continue;
    Values v = read_values(*mean);
    if (!v.integral && std::any_of(v.f.begin(), v.f.end(), [](double x) { return std::isinf(x); })) return true;
  }
  return false;
}

// Whether `name` is computed, through any chain of calls, from a reduction: its last bits may then
// differ between eager and compiled code (an order of addition, a Welford update), each correct.
bool depends_on_reduction(const Program& p, const std::string& name) {
  static const std::set<std::string> kReductions = {"sum",        "mean",    "prod",        "var",  "var_mean",
                                                    "layer_norm", "softmax", "log_softmax", "amax", "amin",
                                                    "matmul",     "linear",  "sdpa"};
  return computed_from(p, name, [](const OpCall& c) { return kReductions.contains(c.op); });
}

// Whether a float fmod or remainder of the program takes an `a` computed from a reduction whose
// last bit, in the native run, is beyond the result's tolerance (fmod(var, x) of float16: one ulp
// of var near 3 is 0.002, the result 0.23): eager's and compiled code's `a`, each correctly
// rounded, then give results that differ past it. Such values are not compared.
bool fmod_magnifies_a_rounding(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if ((c.op != "fmod" && c.op != "remainder") || c.args.size() < 2 || !depends_on_reduction(p, c.args[0])) continue;
    auto a = probe_value(p, c.args[0], inputs, Precision::Native);
    auto r = probe_value(p, c.results.at(0), inputs, Precision::Native);
    if (!a || !r || !is_floating(r->dtype()) || !is_floating(a->dtype())) continue;
    Values av = read_values(expand(*a, r->sizes()).contiguous()), rv = read_values(r->contiguous());
    double ulp = a->dtype() == DType::Float64   ? 0x1p-52
                 : a->dtype() == DType::Float32 ? 0x1p-23
                 : a->dtype() == DType::Float16 ? 0x1p-10
                                                : 0x1p-7;
    Tolerance tol = tolerance(r->dtype());
    for (size_t k = 0; k < rv.size(); ++k) {
      if (std::isfinite(av.f[k]) && std::fabs(av.f[k]) * ulp > tol.rtol * std::fabs(rv.f[k]) + tol.atol) return true;
    }
  }
  return false;
}

// The divisors of the program's float divisions (div, remainder, fmod) that are values, not literals.
std::vector<std::string> divisors(const Program& p) {
  std::vector<std::string> out;
  for (const auto& c : p.calls) {
    bool divides = c.op == "div" || c.op == "remainder" || c.op == "fmod";
    if (divides && c.args.size() >= 2 && !(c.args[1].size() > 2 && c.args[1][1] == ':')) out.push_back(c.args[1]);
  }
  return out;
}

// Whether a float division of the program (div, remainder, fmod) divides by a value whose float64
// run is nonzero but within the native dtype's tolerance of 0 — x - mean of a row, a residue of
// rounding — where it is `rounded_to_zero`: an exact 0 in kiln's native run (x / x is NaN in kiln
// and 1 in PyTorch, whose rounding left a residue), or, with `from_reduction`, anything: eager's and
// compiled code's reductions round differently too (one leaves 1e-39 where the other gives 0, and
// remainder(x, 0) is NaN). Each is correct to the tolerance; what is computed from them differs.
bool divides_by_a_rounding_residue(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide,
                                   bool rounded_to_zero) {
  for (const auto& name : divisors(p)) {
    if (!rounded_to_zero && !depends_on_reduction(p, name)) continue;
    auto native = probe_value(p, name, inputs, Precision::Native);
    auto f64 = probe_value(p, name, wide, Precision::Float64);
    if (!native || !f64 || !is_floating(native->dtype()) || native->sizes().vec() != f64->sizes().vec()) continue;
    Values n = read_values(native->contiguous()), w = read_values(f64->contiguous());
    if (w.integral) continue;
    Tolerance tol = tolerance(native->dtype());
    for (size_t k = 0; k < n.size(); ++k) {
      bool residue = w.f[k] != 0 && std::fabs(w.f[k]) <= tol.atol;
      if (residue && (!rounded_to_zero || n.f[k] == 0)) return true;
    }
  }
  return false;
}

// Whether a floating remainder or fmod of the program has an element where kiln's exact result
// (C's fmod) and PyTorch's vectorized a - b * floor(a / b) (trunc for fmod) differ by more than the
// float64 tolerance (|a / b| past 2^53, b tiny), or where one ulp of a moves the result past that
// tolerance: then anything computed from it (its sign, say) differs from PyTorch too (see
// docs/conformance.md).
// The values of argument `name` of a call (a value of the program, or a literal "f:x" / "i:x") in
// `precision`, as float64 broadcast to `sizes`; nothing when computing it raises.
std::optional<Tensor> argument_values(const Program& p, const std::string& name, const std::vector<Tensor>& inputs,
                                      Precision precision, IntArrayRef sizes) {
  if (name.size() > 2 && name[1] == ':') return full(sizes, Scalar(std::stod(name.substr(2))), DType::Float64);
  auto v = probe_value(p, name, inputs, precision);
  if (!v) return std::nullopt;
  return expand(v->to(DType::Float64), sizes).contiguous();
}

// Whether a sin, cos or tan of the program takes, in its float64 run, a finite argument one ulp of
// which is above float64's tolerance (|x| past about 4.5e8): two correctly computed arguments, or
// two argument reductions, that differ in that last bit give results that differ past it (tan of a
// float64 layer norm near 1e38 is any number). Such a program is not compared with PyTorch
// (docs/conformance.md); its compiled values still are with eager and float64.
bool periodic_of_a_huge_argument(const Program& p, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    if ((c.op != "sin" && c.op != "cos" && c.op != "tan") || c.args.empty()) continue;
    auto x = probe_value(p, c.args[0], wide, Precision::Float64);
    if (!x || !is_floating(x->dtype())) continue;
    Values v = read_values(*x);
    if (v.integral) continue;
    for (double e : v.f) {
      if (std::isfinite(e) && std::fabs(e) * 0x1p-52 > 1e-7) return true;
    }
  }
  return false;
}

// Whether a log1p of the program takes, in either run, the smallest subnormal of its dtype (+-5e-324
// in float64, +-1.4e-45 in float32): PyTorch's log1p returns 0 there, kiln (and libm) the input, the
// correctly rounded value. Any other tiny input agrees; a sign of it makes the difference discrete,
// so such programs are not compared with PyTorch (docs/conformance.md).
bool log1p_of_the_smallest_subnormal(const Program& p, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    if (c.op != "log1p" || c.args.empty()) continue;
    for (auto [in, precision] : {std::pair{&inputs, Precision::Native}, std::pair{&wide, Precision::Float64}}) {
      auto x = probe_value(p, c.args[0], *in, precision);
      if (!x || !is_floating(x->dtype())) continue;
      double smallest = x->dtype() == DType::Float64 ? std::numeric_limits<double>::denorm_min()
                                                     : static_cast<double>(std::numeric_limits<float>::denorm_min());
      Values v = read_values(x->contiguous());
      if (v.integral) continue;
      for (double e : v.f) {
        if (std::fabs(e) == smallest) return true;
      }
    }
  }
  return false;
}

bool remainder_differs_from_torch(const Program& p, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    if ((c.op != "remainder" && c.op != "fmod") || c.args.size() < 2) continue;
    double (*quotient)(double) = c.op == "fmod" ? static_cast<double (*)(double)>(std::trunc)
                                                : static_cast<double (*)(double)>(std::floor);
    auto r = probe_value(p, c.results.at(0), wide, Precision::Float64);
    if (!r || !is_floating(r->dtype())) continue;
    auto a = argument_values(p, c.args[0], wide, Precision::Float64, r->sizes());
    auto b = argument_values(p, c.args[1], wide, Precision::Float64, r->sizes());
    if (!a || !b) continue;
    Values av = read_values(*a), bv = read_values(*b), rv = read_values(*r);
    if (rv.integral) continue;
    for (size_t k = 0; k < rv.size(); ++k) {
      // An ulp of a moves the result past the tolerance (fmod(1 + 2^-52, 1e-40)): an input that
      // is correctly computed either way (log1p's last bit) gives results that differ.
      if (std::isfinite(av.f[k]) && std::fabs(av.f[k]) * 0x1p-52 > 1e-7 * std::fabs(rv.f[k])) return true;
      double formula = av.f[k] - bv.f[k] * quotient(av.f[k] / bv.f[k]);
      if (!close(rv.f[k], formula, tolerance(DType::Float64)) && !(std::isnan(rv.f[k]) && std::isnan(formula)))
        return true;
    }
  }
  return false;
}

// The comparisons of the program (their results) that compare two float values equal to their
// dtype's tolerance, in either run (log1p(x) > x for tiny x: kiln's log1p is x, PyTorch's one ulp
// above). Each side is correct to the tolerance; the comparison is decided by the last bit, which
// the two libraries round differently, and so is all computed from it (docs/conformance.md).
std::set<std::string> compares_within_a_rounding(const Program& p, const std::vector<Tensor>& inputs,
                                                 const std::vector<Tensor>& wide) {
  static const std::set<std::string> kComparisons = {"eq", "ne", "lt", "le", "gt", "ge"};
  std::set<std::string> decided;
  for (const auto& c : p.calls) {
    if (!kComparisons.contains(c.op) || c.args.size() < 2 || c.args[0] == c.args[1]) continue;
    for (auto [in, precision] : {std::pair{&inputs, Precision::Native}, std::pair{&wide, Precision::Float64}}) {
      auto r = probe_value(p, c.results.at(0), *in, precision);
      if (!r) continue;
      // The loosest floating dtype of the operands (a literal takes the other's).
      std::optional<DType> loosest;
      for (const auto& name : c.args) {
        if (name.size() > 2 && name[1] == ':') continue;
        auto v = probe_value(p, name, *in, precision);
        if (v && is_floating(v->dtype()) && (!loosest || tolerance(v->dtype()).rtol > tolerance(*loosest).rtol))
          loosest = v->dtype();
      }
      if (!loosest) continue;
      auto a = argument_values(p, c.args[0], *in, precision, r->sizes());
      auto b = argument_values(p, c.args[1], *in, precision, r->sizes());
      if (!a || !b) continue;
      Values av = read_values(*a), bv = read_values(*b);
      for (size_t k = 0; k < av.size() && !decided.contains(c.results[0]); ++k) {
        if (std::isfinite(av.f[k]) && close(av.f[k], bv.f[k], tolerance(*loosest))) decided.insert(c.results[0]);
      }
    }
  }
  return decided;
}

// Whether an op sensitive to the sign of zero (atan2, a division, remainder, fmod, pow, sign,
// reciprocal) reads value `m` of the program or anything computed from it.
bool sign_of_zero_read(const Program& p, const std::string& m) {
  static const std::set<std::string> kSignSensitive = {"atan2", "div",  "remainder", "fmod",
                                                       "pow",   "sign", "reciprocal"};
  auto reads_m = [&](const OpCall& call) {
    return std::find(call.results.begin(), call.results.end(), m) != call.results.end();
  };
  for (const auto& d : p.calls) {
    if (!kSignSensitive.contains(d.op)) continue;
    for (const auto& a : d.args) {
      if (a == m || computed_from(p, a, reads_m)) return true;
    }
  }
  return false;
}

// Whether an amax or amin of the program reduces values holding both +0 and -0 to a zero that an op
// sensitive to the sign of zero reads (atan2, a division, remainder, fmod, pow, sign): which zero a
// max of +0 and -0 returns depends on the order of the comparisons (eager's and compiled code's
// differ), and atan2(-0, -0) is -pi where atan2(0, 0) is 0 (docs/conformance.md).
bool signed_zero_extremum(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if ((c.op != "amax" && c.op != "amin") || c.args.empty()) continue;
    auto x = probe_value(p, c.args[0], inputs, Precision::Native);
    auto r = probe_value(p, c.results.at(0), inputs, Precision::Native);
    if (!x || !r || !is_floating(x->dtype())) continue;
    Values xv = read_values(x->contiguous()), rv = read_values(r->contiguous());
    bool positive = false, negative = false, zero = false;
    for (double v : xv.f) (std::signbit(v) ? negative : positive) |= v == 0;
    for (double v : rv.f) zero = zero || v == 0;
    if (positive && negative && zero && sign_of_zero_read(p, c.results[0])) return true;
  }
  return false;
}

// Whether a maximum or minimum of the program meets +0 and -0 at one element, in either run, and an
// op sensitive to the sign of zero reads the result. PyTorch returns the second argument's zero
// from its vectorized loop (_mm512_max_ps) and the first's from its scalar loop (std::max), so
// which zero it gives depends on the operands' layout; kiln gives the second's in every path, and
// its compiled code is still compared with eager (docs/conformance.md).
bool signed_zero_maximum(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    if ((c.op != "maximum" && c.op != "minimum") || c.args.size() < 2 || !sign_of_zero_read(p, c.results.at(0)))
      continue;
    for (auto [in, precision] : {std::pair{&inputs, Precision::Native}, std::pair{&wide, Precision::Float64}}) {
      auto r = probe_value(p, c.results.at(0), *in, precision);
      if (!r || !is_floating(r->dtype())) continue;
      auto a = argument_values(p, c.args[0], *in, precision, r->sizes());
      auto b = argument_values(p, c.args[1], *in, precision, r->sizes());
      if (!a || !b) continue;
      Values av = read_values(*a), bv = read_values(*b);
      for (size_t k = 0; k < av.size(); ++k) {
        if (av.f[k] == 0 && bv.f[k] == 0 && std::signbit(av.f[k]) != std::signbit(bv.f[k])) return true;
      }
    }
  }
  return false;
}

// The range a native run accumulates `name`'s terms in: float32's for float32 and 16-bit terms (eager
// sums float32 in float32, where max + max overflows; compiled code in double), float64's else.
double accumulation_range(const Program& p, const std::string& name, const std::vector<Tensor>& inputs) {
  auto native = probe_value(p, name, inputs, Precision::Native);
  return native && is_floating(native->dtype()) && native->dtype() != DType::Float64
             ? largest_finite(DType::Float32)
             : std::numeric_limits<double>::infinity();
}

// Appends to `probe` the magnitudes of value `t` and those of its finite elements alone (infinities
// count 0; NaN stays NaN), named after `tag`; returns their names.
// Appends `result = op args` to `probe`; returns `result`.
std::string add_call(Program& probe, const std::string& result, const std::string& op, std::vector<std::string> args) {
  probe.calls.push_back({{result}, op, std::move(args)});
  return result;
}

std::pair<std::string, std::string> add_magnitudes(Program& probe, const std::string& t, const std::string& tag) {
  std::string a = add_call(probe, "zz_abs_" + tag, "abs", {t});
  std::string one = add_call(probe, "zz_one_" + tag, "clamp", {a, "none", "f:1"});
  std::string zero = add_call(probe, "zz_zero_" + tag, "sub", {one, one});
  std::string inf = add_call(probe, "zz_inf_" + tag, "isinf", {t});
  return {a, add_call(probe, "zz_finite_" + tag, "where", {inf, zero, a})};
}

// Whether `probe`'s float64 run gives, in some element, a sum (or contraction) of magnitudes
// `names[0]` above 1e6 times the magnitude of the sum itself `names[1]` (an exact 0 of nonzero terms
// included), or a sum of the finite terms' magnitudes `names[2]` past `range`: finite terms whose
// partial sums can overflow, where the order decides where an infinity appears (max + max - inf is
// NaN, max - inf + max is -inf).
bool cancels_or_overflows(Program probe, const std::array<std::string, 3>& names, const std::vector<Tensor>& wide,
                          double range) {
  probe.outputs = {names.begin(), names.end()};
  std::vector<Tensor> out;
  try {
    out = run_program(probe, wide, Precision::Float64);
  } catch (const Error&) {
    return false;
  }
  Values mag = read_values(out[0]), total = read_values(out[1]), finite = read_values(out[2]);
  if (mag.integral) return false;
  for (size_t k = 0; k < mag.size(); ++k) {
    if (std::isfinite(mag.f[k]) && mag.f[k] > 1e6 * std::fabs(total.f[k])) return true;
    if (std::isinf(finite.f[k]) || finite.f[k] > range) return true;
  }
  return false;
}

// Whether a sum or mean of the program (var's and var_mean's mean too) adds terms that cancel past
// float64's precision in its float64 run (condition number sum |x| / |sum x| above 1e6, or an exact
// 0 from nonzero terms), or finite terms whose magnitudes add past the range the native run sums in
// (float32's for float32 terms, float64's for float64 ones): two correct
// orders of summation then differ by more than float64's tolerance, and so does what is computed
// from the result (see docs/conformance.md).
bool ill_conditioned_sum(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    // sum and mean (x, dims, keepdim); var and var_mean (x, dims, correction, keepdim) sum for their mean.
    bool sums = (c.op == "sum" || c.op == "mean") && c.args.size() >= 3;
    bool means = (c.op == "var" || c.op == "var_mean") && c.args.size() >= 4;
    if (!sums && !means) continue;
    const std::string& keepdim = c.args[sums ? 2 : 3];
    Program probe = p;
    auto [magnitude, finite] = add_magnitudes(probe, c.args[0], "x");
    std::array<std::string, 3> totals = {add_call(probe, "zz_abs_sum", "sum", {magnitude, c.args[1], keepdim}),
                                         add_call(probe, "zz_sum", "sum", {c.args[0], c.args[1], keepdim}),
                                         add_call(probe, "zz_finite_sum", "sum", {finite, c.args[1], keepdim})};
    if (cancels_or_overflows(probe, totals, wide, accumulation_range(p, c.args[0], inputs))) {
      return true;
    }
  }
  return false;
}

// Whether a contraction of the program (matmul, linear, scaled_dot_product_attention: its scores
// and its weighted sum of values) is ill-conditioned as ill_conditioned_sum's sums are: in the
// float64 run, the contraction of the magnitudes |a| @ |b| is above 1e6 times |a @ b| (or a @ b is
// an exact 0 of nonzero terms), or that of the finite magnitudes passes the range the native run
// accumulates in. Two correct orders of accumulation (oneDNN's blocking, the flash kernel's tiles)
// then differ past float64's tolerance (docs/conformance.md).
bool ill_conditioned_contraction(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    bool matmul = c.op == "matmul" && c.args.size() == 2, linear = c.op == "linear" && c.args.size() == 3;
    bool sdpa = c.op == "sdpa" && c.args.size() == 6;
    if (!matmul && !linear && !sdpa) continue;
    Program probe = p;
    auto call = [&probe](const std::string& result, const std::string& op, std::vector<std::string> args) {
      return add_call(probe, result, op, std::move(args));
    };
    // (|a| @ |b|, a @ b, finite |a| @ finite |b|) for each contraction the call makes.
    std::vector<std::array<std::string, 3>> contractions;
    if (matmul || linear) {
      auto [a, fa] = add_magnitudes(probe, c.args[0], "a");
      auto [b, fb] = add_magnitudes(probe, c.args[1], "b");
      std::string bias = linear && c.args[2] != "none" ? add_magnitudes(probe, c.args[2], "c").first : "none";
      auto contract = [&](const std::string& r, const std::string& x, const std::string& y, const std::string& z) {
        return linear ? call(r, "linear", {x, y, z}) : call(r, "matmul", {x, y});
      };
      contractions.push_back({contract("zz_mag", a, b, bias), contract("zz_total", c.args[0], c.args[1], c.args[2]),
                              contract("zz_finite", fa, fb, bias)});
    } else {
      std::string kt = call("zz_kt", "transpose", {c.args[1], "-1", "-2"});
      auto [q, fq] = add_magnitudes(probe, c.args[0], "q");
      auto [k, fk] = add_magnitudes(probe, kt, "k");
      contractions.push_back({call("zz_smag", "matmul", {q, k}), call("zz_stotal", "matmul", {c.args[0], kt}),
                              call("zz_sfinite", "matmul", {fq, fk})});
      auto [v, fv] = add_magnitudes(probe, c.args[2], "v");
      auto attend = [&](const std::string& r, const std::string& values) {
        return call(r, "sdpa", {c.args[0], c.args[1], values, c.args[3], c.args[4], c.args[5]});
      };
      contractions.push_back({attend("zz_omag", v), attend("zz_ototal", c.args[2]), attend("zz_ofinite", fv)});
    }
    double range = accumulation_range(p, c.results.at(0), inputs);
    for (const auto& names : contractions) {
      if (cancels_or_overflows(probe, names, wide, range)) return true;
    }
  }
  return false;
}

// Whether a prod of the program multiplies a row whose product may depend on the order: partial
// products can overflow (the factors above 1 multiply past the dtype's range) or underflow (those
// below 1 multiply under its smallest normal), unless an exact 0 and an infinity make it NaN in
// every order (see docs/conformance.md). What is computed from such a product depends on the order
// too (maximum(NaN, x) is NaN, maximum(-inf, x) is x). So does a periodic function of a product
// too large for its order not to show in its last bits.
bool order_dependent_prod(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if (c.op != "prod" || c.args.size() < 2) continue;
    auto x = probe_value(p, c.args[0], inputs, Precision::Native);
    if (!x || !is_floating(x->dtype()) || x->numel() == 0) continue;
    Tensor rows = *x;
    if (c.args[1] != "none" && x->dim() > 0) {
      int64_t d = std::stoll(c.args[1]);
      if (d < 0) d += x->dim();
      std::vector<int64_t> perm;
      for (int64_t k = 0; k < x->dim(); ++k)
        if (k != d) perm.push_back(k);
      perm.push_back(d);
      rows = permute(*x, perm);
    }
    auto n = static_cast<size_t>(c.args[1] == "none" || rows.dim() == 0 ? rows.numel() : rows.sizes().back());
    Values v = read_values(rows.contiguous());
    // float16/bfloat16 multiply in float.
    double max_log = x->dtype() == DType::Float64 ? 1024 : 128, min_log = x->dtype() == DType::Float64 ? -1022 : -126;
    // A product past 2^(mantissa bits + 1) has ulps above 2: its last bits, which the order of
    // multiplication decides, are all a sin/cos/tan of it or a remainder by a small divisor sees.
    double mantissa = x->dtype() == DType::Float64 ? 53 : x->dtype() == DType::Float32 ? 24 : 11;
    bool periodic = std::any_of(p.calls.begin(), p.calls.end(), [](const OpCall& k) {
      return k.op == "sin" || k.op == "cos" || k.op == "tan" || k.op == "fmod" || k.op == "remainder";
    });
    for (size_t r = 0; n > 0 && (r + 1) * n <= v.size(); ++r) {
      bool zero = false, inf = false, nan = false;
      double big = 0, small = 0;  // log2 of the product of the factors above 1, below 1
      for (size_t i = r * n; i < (r + 1) * n; ++i) {
        double a = std::fabs(v.f[i]);
        if (std::isnan(a)) nan = true;
        else if (a == 0) zero = true;
        else if (std::isinf(a)) inf = true;
        else if (a > 1) big += std::log2(a);
        else small += std::log2(a);
      }
      if (nan || (zero && inf)) continue;  // NaN in every order
      bool overflow = big > max_log - 1, underflow = small < min_log + 1;
      if ((zero && overflow) || (inf && underflow) || (!zero && !inf && (overflow || underflow))) return true;
      if (periodic && !zero && !inf && big + small > mantissa + 1) return true;
    }
  }
  return false;
}

}  // namespace

Verdict check_program(const Program& p, const std::string& torch_dir, const std::string& backend) {
  std::vector<Tensor> inputs, wide;
  for (const auto& spec : p.inputs) inputs.push_back(guarded_input(spec));
  for (const auto& t : inputs) wide.push_back(widened(t));
  // The stage goes to stderr first, so a crash can be attributed (driver.cpp reads it back).
  auto stage = [](const char* s) { std::fprintf(stderr, "difftest stage: %s\n", s); };
  stage("eager");
  Outcome eager = run([&] { return run_program(p, inputs, Precision::Native); });
  stage("float64");
  Outcome ref = run([&] { return run_program(p, wide, Precision::Float64); });
  stage("compiled");
  Outcome compiled;
  try {
    CompileOptions options;
    options.backend = backend;
    // Eager's roundings: the tier holds compiled code to eager's. By default a 16-bit chain rounds
    // once, which an ill-conditioned program (pow of a huge base) turns into differences past the
    // dtype's tolerance, as torch.compile's (docs/conformance.md); the op harness checks that mode.
    options.emulate_precision_casts = true;
    auto fn = compile([p](const std::vector<Tensor>& in) { return run_program(p, in, Precision::Native); }, options);
    compiled = run([&] { return fn(inputs); });
  } catch (const std::exception& e) {
    Verdict v;
    v.ok = false;
    v.kind = "raise:compiled-non-kiln-exception";
    v.detail = e.what();
    return v;
  }
  // Dead code: an integer division by zero whose result no output uses raises in eager but is
  // dropped from the compiled graph (as torch.compile drops it), and one read only through views
  // is computed there only where they read (dead_code.h). Eager of the live calls, then with those
  // divisions' zero divisors made 1, decides.
  bool dead_raise = false;
  if (eager.raised && !compiled.raised) {
    Program live = live_calls(fold_float_tests_of_integers(p));
    for (const Program& q : {live, divide_only_read_elements(live)}) {
      if (q.calls == p.calls) continue;
      stage("eager");
      eager = run([&] { return run_program(q, inputs, Precision::Native); });
      ref = run([&] { return run_program(q, wide, Precision::Float64); });
      dead_raise = !eager.raised;
      if (dead_raise) break;
    }
  }
  stage("compare");
  std::optional<Outcome> torch, torch64;
  // PyTorch ran every call, the dead ones too; where kiln's var_mean mean is infinite, PyTorch's
  // may be NaN, and so may differ anything computed from it.
  bool ill_conditioned = ill_conditioned_sum(p, inputs, wide) || ill_conditioned_contraction(p, inputs, wide) ||
                         near_constant_variance(p, wide) || layer_norm_mean_order_dependent(p, wide) ||
                         fmod_magnifies_a_rounding(p, inputs) ||
                         divides_by_a_rounding_residue(p, inputs, wide, false) || signed_zero_extremum(p, inputs);
  if (!torch_dir.empty() && !dead_raise && !infinite_var_mean(p, inputs) && !remainder_differs_from_torch(p, wide) &&
      !periodic_of_a_huge_argument(p, wide) && !divides_by_a_rounding_residue(p, inputs, wide, true) &&
      !layer_norm_variance_past_float(p, inputs) && !signed_zero_maximum(p, inputs, wide) &&
      !log1p_of_the_smallest_subnormal(p, inputs, wide) && !ill_conditioned) {
    torch = read_torch(torch_dir, "native");
    torch64 = read_torch(torch_dir, "f64");
  }
  // Accepted (docs/conformance.md): values that depend on an order of addition or multiplication
  // are not compared; dtypes, sizes, strides and errors still are.
  bool prod_order = !ill_conditioned && order_dependent_prod(p, inputs);
  Verdict v = Checker(p, near_constant_rows(p, wide), !ill_conditioned && !prod_order,
                      compares_within_a_rounding(p, inputs, wide))
                  .check(compiled, eager, ref.raised ? std::nullopt : std::optional(ref), torch, torch64);
  if (v.ok && (ill_conditioned || prod_order)) {
    v.detail = ill_conditioned
                   ? "a sum, contraction, variance or fmod too ill-conditioned to compare: values not compared"
                   : "a prod's value depends on its order of multiplication: values not compared";
  }
  return v;
}

}  // namespace kiln::difftest
