#include "sensitivity.h"

#include <cmath>
#include <set>

#include "check_support.h"
#include "rng.h"
#include "values.h"

namespace kiln::difftest {
namespace {

// The relative size of two ulps of `t`'s values (its mantissa's last place, times 2).
double two_ulps(DType t) { return 2 * machine_epsilon(t); }

bool depends_on_contraction(const Program& p, const std::string& name) {
  return computed_from(p, name, [](const OpCall& c) {
    const std::string f = op_family(c.op);
    return f == "matmul" || f == "linear" || f == "sdpa";
  });
}

// `x` (float64) with each element moved by `ulps` of its magnitude, up or down by a pattern of
// seed `seed`; infinities and NaN stay.
Tensor perturbed(const Tensor& x, double ulps, uint64_t seed) {
  Tensor t = x.to(DType::Float64).contiguous().clone();
  double* d = t.data_ptr<double>();
  Rng r = Rng::from_seed(seed);
  for (int64_t k = 0; k < t.numel(); ++k) d[k] += (r.chance(0.5) ? ulps : -ulps) * std::fabs(d[k]);
  return t;
}

// Adds to `slack` how far each output of `probe` (the program with a value read from its last
// input, `moved`, instead) moves from `base` (the program's float64 outputs).
void add_movement(const Program& probe, std::vector<Tensor> probe_inputs, const Tensor& moved,
                  const std::vector<Tensor>& base, std::vector<Tensor>& slack) {
  probe_inputs.push_back(moved);
  try {
    std::vector<Tensor> out = run_program(probe, probe_inputs, Precision::Float64);
    for (size_t k = 0; k < out.size() && k < base.size(); ++k) {
      if (!is_floating(out[k].dtype()) || out[k].sizes().vec() != base[k].sizes().vec()) continue;
      Tensor moved_by = abs(sub(out[k].to(DType::Float64), base[k].to(DType::Float64)));
      // NaN where one run overflows and the other does not: no slack there.
      moved_by = where(isnan(moved_by), zeros_like(moved_by), moved_by);
      slack[k] = slack[k].defined() ? add(slack[k], moved_by) : moved_by;
    }
  } catch (const Error&) {
  }
}

// `p` with a float64 input "zz_moved" of `x`'s sizes appended.
Program with_moved_input(const Program& p, const Tensor& x) {
  Program probe = p;
  InputSpec moved;
  moved.name = "zz_moved";
  moved.dtype = DType::Float64;
  moved.sizes = Shape(x.sizes().begin(), x.sizes().end());
  moved.strides = contiguous_strides(moved.sizes);
  probe.inputs.push_back(moved);
  return probe;
}

}  // namespace

std::vector<Tensor> exp_rounding_slack(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& wide) {
  // Logarithms magnify a relative error of their argument near 1 (log) or -1 (log1p) the same way.
  static const std::set<std::string> kExponentials = {"exp",         "expm1", "sinh",  "cosh", "softmax",
                                                      "log_softmax", "log",   "log1p", "log2", "log10"};
  std::vector<Tensor> slack(p.outputs.size());
  std::optional<std::vector<Tensor>> base;
  for (size_t at = 0; at < p.calls.size(); ++at) {
    const OpCall& c = p.calls[at];
    if (!kExponentials.contains(c.op) || c.args.empty() || !depends_on_reduction(p, c.args[0])) continue;
    auto native = probe_value(p, c.args[0], inputs, Precision::Native);
    auto x = probe_value(p, c.args[0], wide, Precision::Float64);
    if (!native || !x || !is_floating(native->dtype()) || x->numel() == 0) continue;
    // The program with the exponential's argument an input of its own, moved.
    Program probe = with_moved_input(p, *x);
    probe.calls[at].args[0] = "zz_moved";
    // A contraction's result (a GEMM, attention) carries the rounding of every term it adds: four ulps.
    double ulps = two_ulps(native->dtype()) * (depends_on_contraction(p, c.args[0]) ? 2 : 1);
    try {
      if (!base) base = run_program(p, wide, Precision::Float64);
    } catch (const Error&) {
      break;
    }
    add_movement(probe, wide, perturbed(*x, ulps, at), *base, slack);
  }
  return slack;
}

std::vector<Tensor> math_library_slack(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& wide) {
  std::vector<Tensor> slack(p.outputs.size());
  std::optional<std::vector<Tensor>> base;
  for (size_t at = 0; at < p.calls.size(); ++at) {
    const OpCall& c = p.calls[at];
    if (!is_math_library_function(op_family(c.op)) || c.results.empty()) continue;
    const std::string& result = c.results[0];
    auto native = probe_value(p, result, inputs, Precision::Native);
    auto x = probe_value(p, result, wide, Precision::Float64);
    if (!native || !x || !is_floating(native->dtype()) || x->numel() == 0) continue;
    // The program with every reader of the result reading it moved instead.
    Program probe = with_moved_input(p, *x);
    for (size_t later = at + 1; later < probe.calls.size(); ++later) {
      for (auto& a : probe.calls[later].args) {
        if (a == result) a = "zz_moved";
      }
    }
    for (auto& o : probe.outputs) {
      if (o == result) o = "zz_moved";
    }
    // Four ulps of float32 or two of float64; a 16-bit result computed in float32 and rounded may
    // round to the neighbour: one ulp of it.
    const DType d = native->dtype();
    double ulps = is_reduced_float(d) ? two_ulps(d) / 2 : d == DType::Float32 ? 2 * two_ulps(d) : two_ulps(d);
    try {
      if (!base) base = run_program(p, wide, Precision::Float64);
    } catch (const Error&) {
      break;
    }
    add_movement(probe, wide, perturbed(*x, ulps, at + 7919), *base, slack);
  }
  return slack;
}

}  // namespace kiln::difftest
