#include "tensor_compare.h"

#include <cmath>
#include <complex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "tolerance.h"

namespace kiln::testing {
namespace {

// The first of `n` elements `close(k)` rejects, and how many it rejects.
template <typename Close>
std::pair<int64_t, int64_t> mismatches(int64_t n, Close close) {
  int64_t bad = 0, first = -1;
  for (int64_t k = 0; k < n; ++k) {
    if (!close(k) && bad++ == 0) first = k;
  }
  return {bad, first};
}

std::string compare_complex(const Tensor& want, const Tensor& got, const std::string& where) {
  using C = std::complex<double>;
  auto tol = default_tolerance(want.dtype());
  Tensor a = got.to(DType::ComplexDouble).contiguous(), b = want.to(DType::ComplexDouble).contiguous();
  const C *pa = a.data_ptr<C>(), *pb = b.data_ptr<C>();
  auto has_nan = [](C v) { return std::isnan(v.real()) || std::isnan(v.imag()); };
  auto [bad, first] = mismatches(a.numel(), [&](int64_t k) {
    C x = pa[k], y = pb[k];
    return has_nan(y) ? has_nan(x) : (x == y || std::abs(x - y) <= tol.atol + tol.rtol * std::abs(y));
  });
  if (bad == 0) return "";
  auto show = [](C v) { return fmt::format("{}{:+}j", v.real(), v.imag()); };
  return fmt::format("{}: {} of {} elements differ; element {} is {}, PyTorch {}", where, bad, a.numel(), first,
                     show(pa[first]), show(pb[first]));
}

}  // namespace

std::string compare_metadata(const Tensor& want, const Tensor& got, const std::string& where) {
  if (want.dtype() == got.dtype() && want.sizes().vec() == got.sizes().vec()) return "";
  return fmt::format("{}: {}, PyTorch {}", where, got.describe(), want.describe());
}

std::string compare_strides(const std::vector<int64_t>& want, const Tensor& got, const std::string& where,
                            const std::string& what) {
  if (got.numel() == 0) return "";
  if (static_cast<int64_t>(want.size()) != got.dim()) {
    return fmt::format("{}: {} dims, PyTorch's strides {} ({})", where, got.dim(), want, what);
  }
  for (int64_t d = 0; d < got.dim(); ++d) {
    if (got.sizes()[d] > 1 && want[static_cast<size_t>(d)] != got.strides()[d]) {
      return fmt::format("{}: strides {}, PyTorch {} ({})", where, got.strides().vec(), want, what);
    }
  }
  return "";
}

std::string compare_values(const Tensor& want, const Tensor& got, const std::string& where) {
  if (want.numel() == 0) return "";
  if (is_complex(want.dtype())) return compare_complex(want, got, where);
  if (!is_floating(want.dtype())) {
    Tensor a = got.to(DType::Int64).contiguous(), b = want.to(DType::Int64).contiguous();
    const int64_t *pa = a.data_ptr<int64_t>(), *pb = b.data_ptr<int64_t>();
    auto [bad, first] = mismatches(a.numel(), [&](int64_t k) { return pa[k] == pb[k]; });
    if (bad == 0) return "";
    return fmt::format("{}: {} of {} elements differ; element {} is {}, PyTorch {}", where, bad, a.numel(), first,
                       pa[first], pb[first]);
  }
  auto tol = default_tolerance(want.dtype());
  Tensor a = got.to(DType::Float64).contiguous(), b = want.to(DType::Float64).contiguous();
  const double *pa = a.data_ptr<double>(), *pb = b.data_ptr<double>();
  auto [bad, first] = mismatches(a.numel(), [&](int64_t k) {
    double x = pa[k], y = pb[k];
    return std::isnan(y) ? std::isnan(x) : (x == y || std::abs(x - y) <= tol.atol + tol.rtol * std::abs(y));
  });
  if (bad == 0) return "";
  return fmt::format("{}: {} of {} elements differ; element {} is {}, PyTorch {}", where, bad, a.numel(), first,
                     pa[first], pb[first]);
}

}  // namespace kiln::testing
