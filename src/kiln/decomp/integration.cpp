// The trapezoidal rule along a dim, by PyTorch's formulas: with sample points x, the sum of
// (x[i+1] - x[i]) (y[i+1] + y[i]) / 2; with a constant spacing dx, (sum y - (y[0] + y[-1]) / 2) dx;
// cumulative_trapezoid keeps the running sums. An empty dim integrates to zeros.
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

void check_not_bool(const Tensor& t, std::string_view op) {
  KILN_CHECK_TYPE(t.dtype() != DType::Bool, "{}: received a bool input for `{}`, but bool is not supported", op,
                  t.describe());
}

// y's pairwise sums along dim: y[i+1] + y[i].
Tensor pair_sums(const Tensor& y, int64_t dim) {
  Tensor next = slice(y, dim, 1, std::nullopt, 1);
  return add(next, slice(y, dim, 0, -1, 1));
}

// The spacing x[i+1] - x[i], x viewed to broadcast against y (a vector lies along dim).
Tensor spacing(const Tensor& y, const Tensor& x, int64_t dim, std::string_view op) {
  check_not_bool(x, op);
  Tensor viewed = x;
  if (x.dim() == 1) {
    KILN_CHECK(x.size(0) == y.size(dim),
               "{}: There must be one `x` value for each sample point, got {} sample points along dim {} and {} x "
               "values",
               op, y.size(dim), dim, x.size(0));
    std::vector<int64_t> sizes(static_cast<size_t>(y.dim()), 1);
    sizes[static_cast<size_t>(dim)] = x.size(0);
    viewed = view(x, sizes);
  } else if (x.dim() < y.dim()) {
    std::vector<int64_t> sizes(static_cast<size_t>(y.dim() - x.dim()), 1);
    sizes.insert(sizes.end(), x.sizes().begin(), x.sizes().end());
    viewed = view(x, sizes);
  }
  Tensor next = slice(viewed, dim, 1, std::nullopt, 1);
  return sub(next, slice(viewed, dim, 0, -1, 1));
}

Tensor zeros_without(const Tensor& y, int64_t dim) {
  std::vector<int64_t> sizes = y.sizes().vec();
  sizes.erase(sizes.begin() + dim);
  return zeros(sizes, TensorOptions(y.dtype()).device(y.device()));
}

Tensor trapezoid_x(const Tensor& y, const Tensor& x, int64_t dim) {
  check_not_bool(y, "trapezoid");
  int64_t d = wrap_dim(dim, y.dim(), "trapezoid");
  if (y.size(d) == 0) return zeros_without(y, d);
  Tensor dx = spacing(y, x, d, "trapezoid");
  Tensor sums = pair_sums(y, d);
  return div(sum(mul(dx, sums), std::vector<int64_t>{d}), Scalar(2.0));
}

Tensor trapezoid_of(const Tensor& y, double dx, int64_t dim, std::string_view op) {
  check_not_bool(y, op);
  int64_t d = wrap_dim(dim, y.dim(), op);
  if (y.size(d) == 0) return zeros_without(y, d);
  Tensor first = select(y, d, 0);
  Tensor ends = mul(add(first, select(y, d, -1)), Scalar(0.5));
  return mul(sub(sum(y, std::vector<int64_t>{d}), ends), Scalar(dx));
}
Tensor trapezoid_dx(const Tensor& y, const Scalar& dx, int64_t dim) {
  return trapezoid_of(y, dx.to_double(), dim, "trapezoid");
}
Tensor trapz_dx(const Tensor& y, double dx, int64_t dim) { return trapezoid_of(y, dx, dim, "trapz"); }

Tensor cumulative_trapezoid_x(const Tensor& y, const Tensor& x, int64_t dim) {
  check_not_bool(y, "cumulative_trapezoid");
  int64_t d = wrap_dim(dim, y.dim(), "cumulative_trapezoid");
  Tensor dx = spacing(y, x, d, "cumulative_trapezoid");
  Tensor sums = pair_sums(y, d);
  return div(cumsum(mul(dx, sums), d), Scalar(2.0));
}

Tensor cumulative_trapezoid_dx(const Tensor& y, const Scalar& dx, int64_t dim) {
  check_not_bool(y, "cumulative_trapezoid");
  int64_t d = wrap_dim(dim, y.dim(), "cumulative_trapezoid");
  return cumsum(mul(pair_sums(y, d), Scalar(dx.to_double() / 2.0)), d);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::trapezoid.x", kiln::detail::boxed<&trapezoid_x>());
  r.set_compound_kernel("aten::trapezoid.dx", kiln::detail::boxed<&trapezoid_dx>());
  r.set_compound_kernel("aten::trapz.dx", kiln::detail::boxed<&trapz_dx>());
  r.set_compound_kernel("aten::cumulative_trapezoid.x", kiln::detail::boxed<&cumulative_trapezoid_x>());
  r.set_compound_kernel("aten::cumulative_trapezoid.dx", kiln::detail::boxed<&cumulative_trapezoid_dx>());
});

}  // namespace
}  // namespace kiln::decomp
