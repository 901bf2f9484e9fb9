// The trapezoidal rule along a dim, by PyTorch's formulas: with sample points x, the sum of
// (x[i+1] - x[i]) (y[i+1] + y[i]) / 2; with a constant spacing dx, (sum y - (y[0] + y[-1]) / 2) dx;
// cumulative_trapezoid keeps the running sums. An empty dim integrates to zeros. And torch.gradient
// with a constant spacing: central differences inside, one-sided ones (first or second order) at
// the two ends of each dim.
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

// df/dx along dim for samples `h` apart: (f[i+1] - f[i-1]) / h / 2 inside; at the ends
// (f[1] - f[0]) / h and (f[-1] - f[-2]) / h, or with edge_order 2 the three-point formulas.
Tensor gradient_along(const Tensor& f, int64_t dim, double h, int64_t edge_order) {
  auto part = [&](int64_t start, std::optional<int64_t> end) { return slice(f, dim, start, end, 1); };
  Tensor after = part(2, std::nullopt);
  Tensor center = div(div(sub(after, part(0, -2)), Scalar(h)), Scalar(2));
  Tensor first, last;
  if (edge_order == 1) {
    Tensor second = part(1, 2);
    first = div(sub(second, part(0, 1)), Scalar(h));
    Tensor end = part(-1, std::nullopt);
    last = div(sub(end, part(-2, -1)), Scalar(h));
  } else {
    Tensor a = mul(part(0, 1), Scalar(-1.5));
    Tensor b = add(a, mul(part(1, 2), Scalar(2)));
    first = div(sub(b, mul(part(2, 3), Scalar(0.5))), Scalar(h));
    Tensor c = mul(part(-3, -2), Scalar(0.5));
    Tensor e = sub(c, mul(part(-2, -1), Scalar(2)));
    last = div(add(e, mul(part(-1, std::nullopt), Scalar(1.5))), Scalar(h));
  }
  return cat(std::vector<Tensor>{first, center, last}, dim);
}

std::vector<Tensor> gradient_of(const Tensor& self, double h, const std::vector<int64_t>& dims, int64_t edge_order) {
  KILN_CHECK(edge_order == 1 || edge_order == 2, "torch.gradient only supports edge_order=1 and edge_order=2, got {}",
             edge_order);
  std::vector<Tensor> out;
  for (int64_t dim : dims) {
    int64_t d = wrap_dim(dim, self.dim(), "gradient");
    KILN_CHECK(self.size(d) >= edge_order + 1,
               "torch.gradient expected each dimension size to be at least edge_order+1, got size {} along dim {}",
               self.size(d), d);
    out.push_back(gradient_along(self, d, h, edge_order));
  }
  return out;
}
std::vector<int64_t> all_dims(const Tensor& self) {
  std::vector<int64_t> dims(static_cast<size_t>(self.dim()));
  for (int64_t d = 0; d < self.dim(); ++d) dims[static_cast<size_t>(d)] = d;
  return dims;
}
std::vector<Tensor> gradient_scalar_int(const Tensor& self, const std::optional<Scalar>& spacing,
                                        std::optional<int64_t> dim, int64_t edge_order) {
  double h = spacing ? spacing->to_double() : 1.0;
  return gradient_of(self, h, dim ? std::vector<int64_t>{*dim} : all_dims(self), edge_order);
}
std::vector<Tensor> gradient_scalar_array(const Tensor& self, const Scalar& spacing, IntArrayRef dim,
                                          int64_t edge_order) {
  return gradient_of(self, spacing.to_double(), dim.vec(), edge_order);
}
std::vector<Tensor> gradient_array(const Tensor& self, IntArrayRef dim, int64_t edge_order) {
  return gradient_of(self, 1.0, dim.vec(), edge_order);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::gradient.scalarint", kiln::detail::boxed<&gradient_scalar_int>());
  r.set_compound_kernel("aten::gradient.scalararray", kiln::detail::boxed<&gradient_scalar_array>());
  r.set_compound_kernel("aten::gradient.array", kiln::detail::boxed<&gradient_array>());
  r.set_compound_kernel("aten::trapezoid.x", kiln::detail::boxed<&trapezoid_x>());
  r.set_compound_kernel("aten::trapezoid.dx", kiln::detail::boxed<&trapezoid_dx>());
  r.set_compound_kernel("aten::trapz.dx", kiln::detail::boxed<&trapz_dx>());
  r.set_compound_kernel("aten::cumulative_trapezoid.x", kiln::detail::boxed<&cumulative_trapezoid_x>());
  r.set_compound_kernel("aten::cumulative_trapezoid.dx", kiln::detail::boxed<&cumulative_trapezoid_dx>());
});

}  // namespace
}  // namespace kiln::decomp
