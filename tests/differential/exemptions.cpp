#include "exemptions.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <span>

#include "check_support.h"
#include "program_ops.h"
#include "values.h"

namespace kiln::difftest {

// The values of `x` as rows along dim `dim` (an integer, or "none": all of `x` one row), and the
// length of a row.
static std::pair<Values, size_t> rows_along(const Tensor& x, const std::string& dim) {
  Tensor rows = x;
  if (dim != "none" && x.dim() > 0) {
    int64_t d = std::stoll(dim);
    if (d < 0) d += x.dim();
    std::vector<int64_t> perm;
    for (int64_t k = 0; k < x.dim(); ++k)
      if (k != d) perm.push_back(k);
    perm.push_back(d);
    rows = permute(x, perm);
  }
  auto n = static_cast<size_t>(dim == "none" || rows.dim() == 0 ? rows.numel() : rows.sizes().back());
  return {read_values(rows.contiguous()), n};
}

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

// Whether value `m` of the program, or anything computed from it, is an argument of a call `reader`
// accepts.
template <class Reader>
static bool read_by(const Program& p, const std::string& m, const Reader& reader) {
  auto reads_m = [&](const OpCall& call) {
    return std::find(call.results.begin(), call.results.end(), m) != call.results.end();
  };
  for (const auto& d : p.calls) {
    if (!reader(d)) continue;
    for (const auto& a : d.args) {
      if (a == m || computed_from(p, a, reads_m)) return true;
    }
  }
  return false;
}

// Whether value `m` of the program, or anything computed from it, is read by an op that turns a
// small absolute error of a small value into a large one (a logarithm, a division, a power).
static bool magnified_later(const Program& p, const std::string& m) {
  static const std::set<std::string> kMagnifying = {"log",   "log2",      "log10", "log1p", "div",  "reciprocal",
                                                    "rsqrt", "remainder", "fmod",  "pow",   "atan2"};
  return read_by(p, m, [](const OpCall& d) { return kMagnifying.contains(op_family(d.op)); });
}

// Whether a float fmod or remainder of the program takes an `a` or a `b` computed from a reduction
// (or on the GPU a math function, depends_on_reduction) whose last bit, in the native run, moves
// the result past its tolerance: a - n * b moves by about |a| ulps either way (n = a / b), one ulp
// of var near 3 in float16 is 0.002 where fmod(var, x) is 0.23. Eager's and compiled code's `a` and
// `b`, each correctly rounded, then give results that differ past it. Such values are not
// compared. The absolute tolerance hides the difference of a tiny result unless a later op
// magnifies it (log2(fmod(1, softmax(x))) on the CPU; on the GPU, where math functions' last bits
// differ, always: fmod(log1p(x), 1e-40)).
bool fmod_magnifies_a_rounding(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if ((c.op != "fmod" && c.op != "remainder") || c.args.size() < 2) continue;
    if (!depends_on_reduction(p, c.args[0]) && !depends_on_reduction(p, c.args[1])) continue;
    auto a = probe_value(p, c.args[0], inputs, Precision::Native);
    auto r = probe_value(p, c.results.at(0), inputs, Precision::Native);
    if (!a || !r || !is_floating(r->dtype())) continue;
    Values av = read_values(to(expand(*a, r->sizes()), DType::Float64).contiguous()), rv = read_values(r->contiguous());
    double ulp = r->dtype() == DType::Float64   ? 0x1p-52
                 : r->dtype() == DType::Float32 ? 0x1p-23
                 : r->dtype() == DType::Float16 ? 0x1p-10
                                                : 0x1p-7;
    Tolerance tol = tolerance(r->dtype());
    const double atol = device_under_test().is_cuda() || magnified_later(p, c.results.at(0)) ? 0.0 : tol.atol;
    for (size_t k = 0; k < rv.size(); ++k) {
      if (std::isfinite(av.f[k]) && std::fabs(av.f[k]) * ulp > tol.rtol * std::fabs(rv.f[k]) + atol) return true;
    }
  }
  return false;
}

// The divisors of the program's float divisions (div, remainder, fmod) that are values, not literals.
static std::vector<std::string> divisors(const Program& p) {
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

// Whether an op with a pole or a domain edge at +-1 or -1 (atanh at +-1, log1p at -1; asin and acos
// beyond +-1, acosh below 1) takes an argument computed from a reduction whose float64 run is within
// four ulps of the native dtype of that point: eager's and compiled code's reductions, each correct
// to the last ulp (an order of addition), may land on either side of it or on it, and the results
// differ without bound (18.7 and inf, a number and NaN). A cumsum of a softmax ends within an ulp
// of 1. Such values are not compared (docs/conformance.md).
bool edge_within_a_rounding(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide) {
  static const std::map<std::string, std::vector<double>> kEdges = {
      {"atanh", {-1.0, 1.0}}, {"log1p", {-1.0}}, {"asin", {-1.0, 1.0}}, {"acos", {-1.0, 1.0}}, {"acosh", {1.0}}};
  for (const auto& c : p.calls) {
    auto edges = kEdges.find(c.op);
    if (edges == kEdges.end() || c.args.empty() || !depends_on_reduction(p, c.args[0])) continue;
    auto native = probe_value(p, c.args[0], inputs, Precision::Native);
    auto f64 = probe_value(p, c.args[0], wide, Precision::Float64);
    if (!native || !f64 || !is_floating(native->dtype())) continue;
    Values w = read_values(f64->contiguous());
    if (w.integral) continue;
    double band = 4 * (native->dtype() == DType::Float64   ? 0x1p-52
                       : native->dtype() == DType::Float32 ? 0x1p-23
                       : native->dtype() == DType::Float16 ? 0x1p-10
                                                           : 0x1p-7);
    for (double x : w.f) {
      for (double e : edges->second) {
        if (std::fabs(x - e) <= band) return true;
      }
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
static std::optional<Tensor> argument_values(const Program& p, const std::string& name,
                                             const std::vector<Tensor>& inputs, Precision precision,
                                             IntArrayRef sizes) {
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

// Whether a sinh or cosh of the float64 run takes an argument past exp's range whose result is still
// finite: log(DBL_MAX) < |x| <= log(2 DBL_MAX) (709.78 to 710.48). PyTorch's float64 kernels compute
// exp(|x|) / 2 and give inf there; kiln (and libm) the finite value (docs/conformance.md).
bool hyperbolic_past_exp_range(const Program& p, const std::vector<Tensor>& wide) {
  const double lo = std::log(std::numeric_limits<double>::max()), hi = lo + std::log(2.0);
  for (const auto& c : p.calls) {
    if ((c.op != "sinh" && c.op != "cosh") || c.args.empty()) continue;
    auto x = probe_value(p, c.args[0], wide, Precision::Float64);
    if (!x || !is_floating(x->dtype())) continue;
    for (double e : read_values(*x).f) {
      if (std::fabs(e) > lo && std::fabs(e) <= hi) return true;
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
// The indices (results) of the program's arg-reductions (argmax, argmin, max and min over a dim)
// that, in the run on `in` at `precision`, have a row holding another element within the
// tolerance of that run's dtype of the extreme.
static std::set<std::string> arg_reduction_ties(const Program& p, const std::vector<Tensor>& in, Precision precision) {
  std::set<std::string> ties;
  for (const auto& c : p.calls) {
    // max_dim and min_dim by name: their family is amax's and amin's (op_family).
    bool index_only = c.op == "max_dim" || c.op == "min_dim";
    if ((c.op != "argmax" && c.op != "argmin" && !index_only) || c.args.size() < 2) continue;
    const std::string& index = c.results.at(index_only ? 1 : 0);
    auto x = probe_value(p, c.args[0], in, precision);
    if (!x || !is_floating(x->dtype()) || x->numel() == 0 || ties.contains(index)) continue;
    auto [v, n] = rows_along(*x, c.args[1]);
    bool largest = c.op == "argmax" || c.op == "max_dim";
    Tolerance tol = tolerance(x->dtype());
    for (size_t r = 0; r + n <= v.size() && n > 0; r += n) {
      auto row = std::span<const double>(v.f).subspan(r, n);
      if (std::any_of(row.begin(), row.end(), [](double e) { return std::isnan(e); })) continue;
      double extreme = largest ? *std::max_element(row.begin(), row.end()) : *std::min_element(row.begin(), row.end());
      if (!std::isfinite(extreme)) continue;
      auto near = std::count_if(row.begin(), row.end(), [&](double e) { return close(e, extreme, tol); });
      if (near > 1) ties.insert(index);
    }
  }
  return ties;
}

// The results of the program's roundings to an integer (floor, ceil, trunc, round, a conversion to
// an integer dtype) whose float argument, in the run on `in` at `precision`, lies within its dtype's
// tolerance of where the result steps (an integer; k + 0.5 for round): off the step only, or
// (`on_step`) on it too.
static std::set<std::string> roundings_near_a_step(const Program& p, const std::vector<Tensor>& in, Precision precision,
                                                   bool on_step) {
  static const std::set<std::string> kRoundings = {"floor", "ceil", "trunc", "round", "to"};
  std::set<std::string> near;
  for (const auto& c : p.calls) {
    if (!kRoundings.contains(c.op) || c.args.empty() || near.contains(c.results.at(0))) continue;
    if (c.op == "to" && (c.args.size() < 2 || !parse_dtype(c.args[1]) || is_floating(*parse_dtype(c.args[1]))))
      continue;
    auto x = probe_value(p, c.args[0], in, precision);
    if (!x || !is_floating(x->dtype())) continue;
    Values v = read_values(x->contiguous());
    Tolerance tol = tolerance(x->dtype());
    for (double e : v.f) {
      double step = c.op == "round" ? std::floor(e) + 0.5 : std::round(e);
      if (std::isfinite(e) && (on_step || e != step) && close(e, step, tol)) near.insert(c.results[0]);
    }
  }
  return near;
}

// Roundings of a float64 program's value computed by a reduction, on or near a step: no run is more
// precise than the program's own, and the summation order decides the side of the step it lands
// on (the variance of arange(0.9, 3.9) is 2 - 2^-52 exactly rounded, kiln's compiled order; 2 in
// PyTorch's and kiln's eager order; as int32 1 and 2; seed 20261326).
static std::set<std::string> float64_roundings_at_a_step(const Program& p, const std::vector<Tensor>& inputs) {
  std::set<std::string> out;
  for (const auto& r : roundings_near_a_step(p, inputs, Precision::Native, true)) {
    auto c = std::find_if(p.calls.begin(), p.calls.end(), [&](const OpCall& call) { return call.results.at(0) == r; });
    auto x = probe_value(p, c->args[0], inputs, Precision::Native);
    if (x && x->dtype() == DType::Float64 && depends_on_reduction(p, c->args[0])) out.insert(r);
  }
  return out;
}

std::set<std::string> ties_in_float64(const Program& p, const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& wide) {
  std::set<std::string> ties = arg_reduction_ties(p, wide, Precision::Float64);
  for (const auto& r : float64_roundings_at_a_step(p, inputs)) ties.insert(r);
  return ties;
}

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
  // Roundings to an integer (floor, ceil, trunc, round, a conversion to an integer dtype) of a float
  // within its dtype's tolerance of where the result steps (an integer; k + 0.5 for round) but not
  // on it: 2.9999999 and 3.0000001 are both 3 to the tolerance, their floors 2 and 3.
  for (auto [in, precision] : {std::pair{&inputs, Precision::Native}, std::pair{&wide, Precision::Float64}}) {
    for (const auto& r : roundings_near_a_step(p, *in, precision, false)) decided.insert(r);
  }
  // On it too where a float64 program's reduction computes the value (float64_roundings_at_a_step).
  for (const auto& r : float64_roundings_at_a_step(p, inputs)) decided.insert(r);
  // The index of an arg-reduction (argmax, argmin, max and min over a dim) whose row holds another
  // element within its dtype's tolerance of the extreme: which of the two is largest is decided by
  // last bits (atan2(1, 1) rounds one way in PyTorch's vector loop, the other in its scalar tail).
  for (auto [in, precision] : {std::pair{&inputs, Precision::Native}, std::pair{&wide, Precision::Float64}}) {
    for (const auto& index : arg_reduction_ties(p, *in, precision)) decided.insert(index);
  }
  return decided;
}

// Whether an op sensitive to the sign of zero (atan2, a division, remainder, fmod, pow, sign,
// reciprocal) reads value `m` of the program or anything computed from it.
static bool sign_of_zero_read(const Program& p, const std::string& m) {
  static const std::set<std::string> kSignSensitive = {"atan2", "div",  "remainder", "fmod",
                                                       "pow",   "sign", "reciprocal"};
  return read_by(p, m, [](const OpCall& d) { return kSignSensitive.contains(d.op); });
}

// Whether an amax or amin of the program reduces values holding both +0 and -0 to a zero that an op
// sensitive to the sign of zero reads (atan2, a division, remainder, fmod, pow, sign): which zero a
// max of +0 and -0 returns depends on the order of the comparisons (eager's and compiled code's
// differ), and atan2(-0, -0) is -pi where atan2(0, 0) is 0 (docs/conformance.md).
bool signed_zero_extremum(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if ((op_family(c.op) != "amax" && op_family(c.op) != "amin") || c.args.empty()) continue;
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
static double accumulation_range(const Program& p, const std::string& name, const std::vector<Tensor>& inputs) {
  auto native = probe_value(p, name, inputs, Precision::Native);
  return native && is_floating(native->dtype()) && native->dtype() != DType::Float64
             ? largest_finite(DType::Float32)
             : std::numeric_limits<double>::infinity();
}

// Appends `result = op args` to `probe`; returns `result`.
static std::string add_call(Program& probe, const std::string& result, const std::string& op,
                            std::vector<std::string> args) {
  probe.calls.push_back({{result}, op, std::move(args)});
  return result;
}

// Appends to `probe` the magnitudes of value `t` and those of its finite elements alone (infinities
// count 0; NaN stays NaN), named after `tag`; returns their names.

static std::pair<std::string, std::string> add_magnitudes(Program& probe, const std::string& t,
                                                          const std::string& tag) {
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
static bool cancels_or_overflows(Program probe, const std::array<std::string, 3>& names,
                                 const std::vector<Tensor>& wide, double range) {
  probe.outputs = {names.begin(), names.end()};
  std::vector<Tensor> out;
  try {
    out = run_program(live_calls(probe), wide, Precision::Float64);
  } catch (const Error&) {
    return false;
  }
  Values mag = read_values(out[0]), total = read_values(out[1]), finite = read_values(out[2]);
  if (mag.integral) return false;
  // Within 8 ulps of the range's end, a rounding decides between its largest value and inf (the
  // weights of a softmax summing to 1 + 1 ulp times a value of 1.8e308).
  const double edge = std::isinf(range) ? largest_finite(DType::Float64) * (1 - 0x1p-49) : range * (1 - 0x1p-20);
  for (size_t k = 0; k < mag.size(); ++k) {
    if (std::isfinite(mag.f[k]) && mag.f[k] > 1e6 * std::fabs(total.f[k])) return true;
    if (std::isinf(finite.f[k]) || finite.f[k] > edge) return true;
  }
  return false;
}

// Whether value `name` of `probe`'s float64 run passes `range` (within 8 ulps of its end) somewhere.
static bool passes_range(Program probe, const std::string& name, const std::vector<Tensor>& wide, double range) {
  probe.outputs = {name};
  std::vector<Tensor> out;
  try {
    out = run_program(live_calls(probe), wide, Precision::Float64);
  } catch (const Error&) {
    return false;
  }
  Values v = read_values(out[0]);
  const double edge = std::isinf(range) ? largest_finite(DType::Float64) * (1 - 0x1p-49) : range * (1 - 0x1p-20);
  return !v.integral && std::any_of(v.f.begin(), v.f.end(), [&](double x) { return std::isinf(x) || x > edge; });
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
    bool means = (op_family(c.op) == "var" || c.op == "var_mean") && c.args.size() >= 4;
    // cumsum (x, dim): its running sums, judged by the whole row's.
    bool running = c.op == "cumsum" && c.args.size() == 2;
    if (!sums && !means && !running) continue;
    const std::string keepdim = running ? "0" : c.args[sums ? 2 : 3];
    const std::string dims = running ? "[" + c.args[1] + "]" : c.args[1];
    Program probe = p;
    auto [magnitude, finite] = add_magnitudes(probe, c.args[0], "x");
    std::array<std::string, 3> totals = {add_call(probe, "zz_abs_sum", "sum", {magnitude, dims, keepdim}),
                                         add_call(probe, "zz_sum", "sum", {c.args[0], dims, keepdim}),
                                         add_call(probe, "zz_finite_sum", "sum", {finite, dims, keepdim})};
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
      // A flash kernel (PyTorch's on the CPU) adds exp(s - max) * v, each weight at most 1, before
      // it divides by the weights' sum: its partial sums reach the values' magnitudes summed over
      // the keys, past the range where the normalized result is not (seed 20261327: PyTorch's
      // float64 attention inf, kiln's 1.47e308).
      call("zz_vkeys", "sum", {fv, "[-2]", "0"});
    }
    double range = accumulation_range(p, c.results.at(0), inputs);
    for (const auto& names : contractions) {
      if (cancels_or_overflows(probe, names, wide, range)) return true;
    }
    if (sdpa && passes_range(probe, "zz_vkeys", wide, range)) return true;
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
    auto [v, n] = rows_along(*x, c.args[1]);
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

// Whether a float32 pow (of a float32 base, or an integer one promoted to float32) by a float scalar
// exponent that float32 does not hold (1e-300, 1/3) gives, at some element of the base in the native
// run, a result that differs past the tolerance between the exponent rounded to float32 and the
// exact one: PyTorch's vector loop uses the first, its scalar
// tail (std::pow(float, double)) the second, so its result depends on where an element falls
// (pow(-2, 1e-300) is 1 in a vector, NaN in the tail). kiln uses the float32 exponent everywhere
// (docs/conformance.md).
bool pow_exponent_rounded_differs_from_torch(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if (c.op != "pow" || c.args.size() < 2 || !c.args[1].starts_with("f:")) continue;
    const double e = to_scalar(c.args[1]).to_double();
    const auto rounded = static_cast<double>(static_cast<float>(e));
    if (rounded == e || std::isnan(e)) continue;
    auto base = probe_value(p, c.args[0], inputs, Precision::Native);
    auto result = c.results.empty() ? std::nullopt : probe_value(p, c.results[0], inputs, Precision::Native);
    // A float32 result: a float32 base, or an integer or bool one promoted to it (int8 ** 1e-300).
    if (!base || !result || result->dtype() != DType::Float32) continue;
    Values b = read_values(base->to(DType::Float64));
    for (double x : b.f) {
      double vector = std::pow(static_cast<float>(x), static_cast<float>(rounded));
      auto tail = static_cast<double>(static_cast<float>(std::pow(x, e)));
      if (!(std::isnan(vector) && std::isnan(tail)) && !close(vector, tail, tolerance(DType::Float32))) return true;
    }
  }
  return false;
}

// Whether a bfloat16 matmul or linear of the program has a result in (or near) float's subnormal
// range in the float64 run: kiln's bfloat16 GEMM (oneDNN's bf16 dot products) flushes subnormal
// products and sums to 0, as PyTorch's does for square products of 32x32 and up (measured); at
// 16x16 it keeps them (docs/conformance.md). What a sign- or zero-sensitive op (log, division)
// computes from them differs.
bool bfloat16_gemm_flushes_a_subnormal(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& wide) {
  constexpr double kNearSubnormal = 0x1p-110;  // a flushed partial sum moves a result by <= K * 2^-126
  constexpr double kSmallestNormal = 0x1p-126;
  // A subnormal operand flushed to 0 moves a product past the tolerance only against a huge or a
  // non-finite value (0 * inf is NaN where the subnormal's product was inf).
  constexpr double kHuge = 0x1p100;
  auto operand = [&](const std::string& name) -> std::optional<Values> {
    auto v = probe_value(p, name, inputs, Precision::Native);
    if (!v) return std::nullopt;
    return read_values(*v);
  };
  for (const auto& c : p.calls) {
    if ((c.op != "matmul" && c.op != "linear") || c.results.empty() || c.args.size() < 2) continue;
    auto native = probe_value(p, c.results[0], inputs, Precision::Native);
    if (!native || native->dtype() != DType::BFloat16) continue;
    auto r = probe_value(p, c.results[0], wide, Precision::Float64);
    if (r) {
      for (double x : read_values(*r).f) {
        if (x != 0 && std::fabs(x) < kNearSubnormal) return true;
      }
    }
    auto a = operand(c.args[0]), b = operand(c.args[1]);
    if (!a || !b) continue;
    auto subnormal = [&](const Values& v) {
      return std::any_of(v.f.begin(), v.f.end(), [&](double x) { return x != 0 && std::fabs(x) < kSmallestNormal; });
    };
    auto huge = [&](const Values& v) {
      return std::any_of(v.f.begin(), v.f.end(), [&](double x) { return !std::isfinite(x) || std::fabs(x) > kHuge; });
    };
    if ((subnormal(*a) && huge(*b)) || (subnormal(*b) && huge(*a))) return true;
  }
  return false;
}

// Whether a slice_scatter or select_scatter of the program writes into a copy of a `self` whose
// elements are not laid out densely: PyTorch copies self's whole storage and keeps its strides
// (gaps, and overlaps, where its result then depends on the order of its writes); kiln's result is
// dense (docs/conformance.md). What reads its layout (a view, the strides) differs from PyTorch.
bool scatter_into_a_non_dense_self(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if ((c.op != "slice_scatter" && c.op != "select_scatter") || c.args.empty()) continue;
    auto self = probe_value(p, c.args[0], inputs, Precision::Native);
    if (self && self->numel() > 1 && !self->is_non_overlapping_and_dense()) return true;
  }
  return false;
}

// Whether a scaled_dot_product_attention of the program reads a query whose elements overlap or
// are not dense: PyTorch 2.13's CPU kernel then returns unwritten memory (its output's strides are
// not the layout it writes; docs/conformance.md). kiln's result is the math's.
bool attention_of_an_overlapping_query(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    if (c.op != "sdpa" || c.args.empty()) continue;
    auto q = probe_value(p, c.args[0], inputs, Precision::Native);
    if (q && q->numel() > 1 && !q->is_non_overlapping_and_dense()) return true;
  }
  return false;
}

// Whether a scaled_dot_product_attention of the program has a row whose scores are all NaN (a NaN
// in its query), in either run. PyTorch's CPU flash kernel gives such a row NaN where a NaN falls in
// its vector loop (a block of 16 keys or more with AVX-512) and 0 where all fall in its scalar tail,
// whose std::max passes NaN over; kiln's row is NaN, as softmax's is (docs/conformance.md).
bool attention_row_of_nan_scores(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    if (c.op != "sdpa" || c.args.size() < 2) continue;
    for (auto [in, precision] : {std::pair{&inputs, Precision::Native}, std::pair{&wide, Precision::Float64}}) {
      auto q = probe_value(p, c.args[0], *in, precision);
      auto k = probe_value(p, c.args[1], *in, precision);
      if (!q || !k || q->dim() < 2 || k->dim() < 2 || k->size(-2) == 0) continue;
      Tensor scores = matmul(q->to(DType::Float64), transpose(k->to(DType::Float64), -1, -2)).contiguous();
      Values v = read_values(scores);
      auto keys = static_cast<size_t>(k->size(-2));
      for (size_t row = 0; row + keys <= v.size(); row += keys) {
        if (std::all_of(v.f.begin() + static_cast<std::ptrdiff_t>(row),
                        v.f.begin() + static_cast<std::ptrdiff_t>(row + keys), [](double x) { return std::isnan(x); }))
          return true;
      }
    }
  }
  return false;
}

// Whether a scaled_dot_product_attention of the program is causal with a negative scale. PyTorch's
// CPU flash kernel masks the unscaled scores with -inf and scales them after, so a negative scale
// turns the masked scores into +inf and every row that masks a key into NaN; kiln masks the scaled
// scores, as the math formulation (softmax of the scaled, masked scores) does (docs/conformance.md).
bool causal_attention_with_a_negative_scale(const Program& p) {
  for (const auto& c : p.calls) {
    if (c.op != "sdpa" || c.args.size() < 6 || c.args[4] == "0" || c.args[4] == "i:0") continue;
    const std::string& scale = c.args[5];
    if (scale.size() > 2 && scale[1] == ':' && std::stod(scale.substr(2)) < 0) return true;
  }
  return false;
}

}  // namespace kiln::difftest
