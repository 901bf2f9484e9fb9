#include "row_statistics.h"

#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "values.h"

namespace kiln::difftest {
namespace {

// The mean and (biased) variance of row `row` of `v`, a run of `n` elements, in long double.
struct RowMoments {
  long double mean = 0, variance = 0;
};
RowMoments row_moments(const Values& v, size_t row, size_t n) {
  RowMoments m;
  for (size_t i = 0; i < n; ++i) m.mean += v.f[row * n + i];
  m.mean /= static_cast<long double>(n);
  for (size_t i = 0; i < n; ++i) {
    long double d = v.f[row * n + i] - m.mean;
    m.variance += d * d;
  }
  m.variance /= static_cast<long double>(n);
  return m;
}

// Whether a row of `v` (consecutive runs of `n` elements) has a spread (standard deviation) below
// 1e-9 of its mean's magnitude: x - mean keeps fewer than 7 of float64's digits there.
bool has_near_constant_row(const Values& v, int64_t n) {
  auto len = static_cast<size_t>(n);
  for (size_t row = 0; n > 1 && (row + 1) * len <= v.size(); ++row) {
    RowMoments m = row_moments(v, row, len);
    if (std::isfinite(static_cast<double>(m.mean)) && std::sqrt(m.variance) < 1e-9L * std::fabs(m.mean)) return true;
  }
  return false;
}

// The rows a layer_norm call normalizes: its input's values in the run at `precision` (floats
// only), their dtype and the length of a row; nothing where the call has no such input.
struct NormalizedRows {
  Values values;
  DType dtype;
  size_t n;
};
std::optional<NormalizedRows> layer_norm_rows(const Program& p, const OpCall& c, const std::vector<Tensor>& inputs,
                                              Precision precision) {
  if (op_family(c.op) != "layer_norm" || c.args.size() < 2 || c.args[1] == "[]") return std::nullopt;
  auto x = probe_value(p, c.args[0], inputs, precision);
  if (!x || !is_floating(x->dtype())) return std::nullopt;
  auto normalized_dims = static_cast<size_t>(std::count(c.args[1].begin(), c.args[1].end(), ',') + 1);
  IntArrayRef sizes = x->sizes();
  if (normalized_dims > sizes.size()) return std::nullopt;
  size_t n = 1;
  for (size_t d = sizes.size() - normalized_dims; d < sizes.size(); ++d) n *= static_cast<size_t>(sizes[d]);
  return NormalizedRows{read_values(*x), x->dtype(), n};
}

// A row's sum with its rounding errors carried (Neumaier): exact where large terms cancel exactly,
// as +-3.4e38 do, which leaves the small terms' sum that a plain float64 sum lost.
double compensated_sum(const double* x, size_t n) {
  double s = 0, c = 0;
  for (size_t i = 0; i < n; ++i) {
    double t = s + x[i];
    c += std::fabs(s) >= std::fabs(x[i]) ? (s - t) + x[i] : (x[i] - t) + s;
    s = t;
  }
  return s + c;
}

// The most a float64 sum of the row differs from its compensated sum in the orders of addition
// kiln uses: one after another (eager), and in 8 interleaved partial sums (a vectorized loop).
double order_dependence_of_sum(const double* x, size_t n) {
  double exact = compensated_sum(x, n), worst = 0;
  double forward = 0;
  for (size_t i = 0; i < n; ++i) forward += x[i];
  worst = std::max(worst, std::fabs(forward - exact));
  std::array<double, 8> lanes{};
  for (size_t i = 0; i < n; ++i) lanes[i % 8] += x[i];
  double interleaved = 0;
  for (double lane : lanes) interleaved += lane;
  return std::max(worst, std::fabs(interleaved - exact));
}

}  // namespace

// Whether a layer_norm of the program normalizes a row whose spread is below 1e-9 of its mean's
// magnitude in the float64 run: two correct implementations differ past float64's tolerance there.
bool near_constant_rows(const Program& p, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    auto rows = layer_norm_rows(p, c, wide, Precision::Float64);
    if (rows && has_near_constant_row(rows->values, static_cast<int64_t>(rows->n))) return true;
  }
  return false;
}

// Whether a layer_norm of the program normalizes a row whose mean depends on the order of addition
// past 1e-6 of some element's distance from it: a row holding +-3.4e38 and small values sums to
// -2.5 in one order and 0 in another, so x - mean for a value near the mean (x_hat near 0, then a
// log10 of it) has no float64 reference. So does a row of finite values whose partial sums can
// overflow (values near 1.8e308 of both signs): its mean is finite, ±inf or NaN (inf - inf) by the
// order of addition, and its rstd 0 or NaN with it (found by seed 20261333: eager 0, compiled NaN).
// Rows whose sums are exact in every order (small integers) are compared.
bool layer_norm_mean_order_dependent(const Program& p, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    auto rows = layer_norm_rows(p, c, wide, Precision::Float64);
    if (!rows || rows->n == 0) continue;
    const Values& v = rows->values;
    size_t n = rows->n;
    for (size_t row = 0; (row + 1) * n <= v.size(); ++row) {
      const double* x = v.f.data() + row * n;
      double magnitude = 0;
      bool finite = true;
      for (size_t i = 0; i < n; ++i) {
        finite = finite && std::isfinite(x[i]);
        magnitude += std::fabs(x[i]);
      }
      if (finite && !std::isfinite(magnitude)) return true;
      double spread = order_dependence_of_sum(x, n) / static_cast<double>(n);
      double mean = compensated_sum(x, n) / static_cast<double>(n);
      if (!(spread > 0) || !std::isfinite(mean)) continue;
      for (size_t i = 0; i < n; ++i) {
        if (std::isfinite(x[i]) && std::fabs(x[i] - mean) < 1e6 * spread) return true;
      }
    }
  }
  return false;
}

// Whether a layer_norm of the program normalizes, in a 32- or 16-bit float, a row whose variance is
// past the float range (values near 3.4e38): kiln's statistics are in double and normalize it;
// PyTorch's float variance overflows, so its rstd is 0 and its output 0 (or NaN), and what is
// computed from it (a sign) differs. Such programs are not compared with PyTorch.
bool layer_norm_variance_past_float(const Program& p, const std::vector<Tensor>& inputs) {
  for (const auto& c : p.calls) {
    auto rows = layer_norm_rows(p, c, inputs, Precision::Native);
    if (!rows || rows->dtype == DType::Float64) continue;
    const Values& v = rows->values;
    size_t n = rows->n;
    for (size_t row = 0; n > 0 && (row + 1) * n <= v.size(); ++row) {
      RowMoments m = row_moments(v, row, n);
      if (std::isfinite(static_cast<double>(m.mean)) && m.variance > std::numeric_limits<float>::max()) return true;
    }
  }
  return false;
}

// Whether a var or var_mean of the program reduces such a row. Then no run is a reference for the
// other: kiln eager and PyTorch update a running (Welford) mean whose every step rounds at the
// row's magnitude, compiled code sums deviations from a rounded mean, and the float64 run is
// eager's algorithm again (rows of integers near 2^53 have a variance of 9.58 exactly; Welford
// gives 8). Values of such programs are not compared (docs/conformance.md).
bool near_constant_variance(const Program& p, const std::vector<Tensor>& wide) {
  for (const auto& c : p.calls) {
    if ((op_family(c.op) != "var" && c.op != "var_mean") || c.args.size() < 2) continue;
    auto x = probe_value(p, c.args[0], wide, Precision::Float64);
    if (!x || !is_floating(x->dtype()) || x->dim() == 0) continue;
    std::set<int64_t> reduced;
    if (c.args[1] == "none") {
      for (int64_t d = 0; d < x->dim(); ++d) reduced.insert(d);
    } else {
      for (const auto& item : list_items(c.args[1])) reduced.insert((std::stoll(item) + x->dim()) % x->dim());
    }
    std::vector<int64_t> perm;
    int64_t n = 1;
    for (int64_t d = 0; d < x->dim(); ++d) {
      if (!reduced.contains(d)) perm.push_back(d);
    }
    for (int64_t d : reduced) perm.push_back(d), n *= x->sizes()[d];
    if (has_near_constant_row(read_values(permute(*x, perm).contiguous()), n)) return true;
  }
  return false;
}

}  // namespace kiln::difftest
