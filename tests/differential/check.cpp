#include "check.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "../device_tensors.h"
#include "check_support.h"
#include "dead_code.h"
#include "exemptions.h"
#include "inputs.h"
#include "kiln/api/compile.h"
#include "kiln/core/device_hooks.h"
#include "row_statistics.h"
#include "sensitivity.h"
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

// Runs fn on `inputs` copied with their layouts to the device under test, its outputs copied back
// (with_layout_on, tests/device_tensors.h).
std::vector<Tensor> on_device(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                              const std::vector<Tensor>& inputs) {
  if (device_under_test().is_cpu()) return fn(inputs);
  std::vector<Tensor> moved, back;
  for (const auto& t : inputs) moved.push_back(with_layout_on(t, device_under_test()));
  for (const auto& t : fn(moved)) back.push_back(with_layout_on(t, Device(DeviceType::CPU)));
  return back;
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

class Checker {
 public:
  // `values`: whether output values are compared (not where they depend on an order of operations).
  // `rounding_decided`: comparisons that their operands' last bits decide (compares_within_a_rounding).
  // `slack`: per output, how far the rounding of an exponential's computed argument moves it
  // (sensitivity.h; undefined where nothing does).
  Checker(const Program& p, bool near_constant_rows, bool values, std::set<std::string> rounding_decided,
          std::set<std::string> exact_ties, std::vector<Tensor> slack)
      : p_(p),
        rounding_decided_(std::move(rounding_decided)),
        exact_ties_(std::move(exact_ties)),
        slack_(std::move(slack)),
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
    // kiln's float64 run answers to PyTorch's: one that raises alone hides a bug from every float64
    // comparison (seed 20261329: linear of an empty input with a contiguous bias raised in float64).
    if (ref && ref->raised && torch64 && !torch64->raised) {
      fail("raise:float64-only:" + gist(ref->error),
           "kiln's float64 run raised, PyTorch's float64 run did not: " + first_line(ref->error));
    }
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
      const Tensor* slack = k < slack_.size() && slack_[k].defined() ? &slack_[k] : nullptr;
      // ... and what such an index computes where the tie holds in float64 too: no arbiter.
      bool exact_tie = computed_from(p_, p_.outputs[k], [&](const OpCall& call) {
        return std::any_of(call.results.begin(), call.results.end(),
                           [&](const std::string& r) { return exact_ties_.contains(r); });
      });
      compare_values(where, op, c, e, r, t && torch_values ? &t->outputs[k] : nullptr, slack, loosest_[k],
                     !torch_values, exact_tie);
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
  // `slack`: what the rounding of an exponential's argument may move each element by.
  void compare_values(const std::string& where, const std::string& op, const Tensor& c, const Tensor& e,
                      const Tensor* r, const Tensor* t, const Tensor* slack, std::optional<DType> loosest,
                      bool last_bit, bool exact_tie) {
    Values cv = read_values(c), ev = read_values(e);
    std::optional<Values> rv, tv, sv;
    if (r && r->sizes().vec() == c.sizes().vec()) rv = read_values(*r);
    if (t) tv = read_values(*t);
    if (slack && slack->sizes().vec() == c.sizes().vec()) sv = read_values(*slack);
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
        // A tie that holds in the float64 run too has no arbiter: any of its candidates is accepted
        // (an argmin of outputs equal in exact arithmetic).
        bool as_float64 = last_bit && ((rv && rv->integral && rv->i[k] == cv.i[k]) || exact_tie);
        if (cv.i[k] != ev.i[k] && !as_float64) kind = "compiled-vs-eager", ++bad_eager;
        else if (tv && tv->i[k] != cv.i[k] && !discrete_outputs_diverge_from_torch())
          kind = "compiled-vs-torch", ++bad_torch;
        if (!kind.empty() && worst_kind.empty()) worst = k, worst_kind = kind;
        continue;
      }
      double cval = cv.f[k], eval = ev.f[k];
      std::optional<double> rval;
      if (rv) rval = round_to_dtype(rv->integral ? static_cast<double>(rv->i[k]) : rv->f[k], dt);
      bool near_ref = rval && close(cval, *rval, tol);
      // Ill-conditioned elements (tan of a computed value near a pole): eager is not within the
      // tolerance of float64 either; compiled must then be as accurate as eager (within 2x).
      if (!near_ref && rval && std::isfinite(cval) && std::isfinite(eval) && !close(eval, *rval, tol)) {
        near_ref = std::abs(cval - *rval) <= 2 * std::abs(eval - *rval) + tol.atol;
      }
      // Within the tolerance plus what a rounding of an exponential's computed argument moves the
      // element by (sensitivity.h): a float32 attention's scores computed by the flash kernel.
      if (!near_ref && rval && sv && std::isfinite(cval)) {
        near_ref = std::abs(cval - *rval) <= tol.atol + tol.rtol * std::abs(*rval) + sv->f[k];
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
      if (op_family(c.op) == op) return true;
    }
    return false;
  }

  // The differences docs/conformance.md accepts between kiln and PyTorch, each with its reason there.
  static bool accepted_difference(const std::string& producer, double kiln, double torch) {
    std::string op = op_family(producer);
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
  std::set<std::string> exact_ties_;
  std::vector<Tensor> slack_;
  std::vector<std::optional<DType>> loosest_;
  std::vector<std::optional<DType>> loosest_wide_;  // of the float64 runs
  bool near_constant_rows_;
  bool values_;
  Verdict v_;
};
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
    compiled = run([&] { return on_device(fn, inputs); });
    // On a GPU, a program that calls an op without a CUDA kernel yet is not compiled (part 2 of the
    // CUDA work adds them): nothing to compare.
    if (compiled.raised && device_under_test().is_cuda() &&
        (compiled.error.find("has no CUDA kernel yet") != std::string::npos ||
         compiled.error.find("no kernel for the CUDA backend") != std::string::npos ||
         compiled.error.find("CUDA GEMMs take") !=
             std::string::npos)) {  // integer GEMMs: none in PyTorch's CUDA either
      Verdict v;
      v.detail = "not compiled for cuda: " + first_line(compiled.error);
      return v;
    }
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
                         divides_by_a_rounding_residue(p, inputs, wide, false) ||
                         edge_within_a_rounding(p, inputs, wide) || signed_zero_extremum(p, inputs);
  if (!torch_dir.empty() && !dead_raise && !infinite_var_mean(p, inputs) && !remainder_differs_from_torch(p, wide) &&
      !periodic_of_a_huge_argument(p, wide) && !divides_by_a_rounding_residue(p, inputs, wide, true) &&
      !layer_norm_variance_past_float(p, inputs) && !signed_zero_maximum(p, inputs, wide) &&
      !log1p_of_the_smallest_subnormal(p, inputs, wide) && !scatter_into_a_non_dense_self(p, inputs) &&
      !attention_row_of_nan_scores(p, inputs, wide) && !attention_of_an_overlapping_query(p, inputs) &&
      !pow_exponent_rounded_differs_from_torch(p, inputs) && !bfloat16_gemm_flushes_a_subnormal(p, inputs, wide) &&
      !causal_attention_with_a_negative_scale(p) && !hyperbolic_past_exp_range(p, wide) && !ill_conditioned) {
    torch = read_torch(torch_dir, "native");
    torch64 = read_torch(torch_dir, "f64");
  }
  // Accepted (docs/conformance.md): values that depend on an order of addition or multiplication
  // are not compared; dtypes, sizes, strides and errors still are.
  bool prod_order = !ill_conditioned && order_dependent_prod(p, inputs);
  bool values = !ill_conditioned && !prod_order;
  std::vector<Tensor> slack = values ? exp_rounding_slack(p, inputs, wide) : std::vector<Tensor>{};
  // Compiled for the GPU, the program's math functions are CUDA's, not the CPU's eager calls.
  if (values && device_under_test().is_cuda()) {
    std::vector<Tensor> library = math_library_slack(p, inputs, wide);
    for (size_t k = 0; k < slack.size() && k < library.size(); ++k) {
      if (library[k].defined()) slack[k] = slack[k].defined() ? add(slack[k], library[k]) : library[k];
    }
  }
  Verdict v = Checker(p, near_constant_rows(p, wide), values, compares_within_a_rounding(p, inputs, wide),
                      ties_in_float64(p, inputs, wide), std::move(slack))
                  .check(compiled, eager, ref, torch, torch64);
  if (v.ok && (ill_conditioned || prod_order)) {
    v.detail = ill_conditioned
                   ? "a sum, contraction, variance, fmod or pole too ill-conditioned to compare: values not compared"
                   : "a prod's value depends on its order of multiplication: values not compared";
  }
  return v;
}

}  // namespace kiln::difftest
