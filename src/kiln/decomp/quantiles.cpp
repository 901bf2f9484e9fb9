// quantile and nanquantile by PyTorch's rule: the values sorted along dim (all elements without a
// dim), the rank q (n - 1) of each requested q, and the value there interpolated between its
// neighbours ("linear", "lower", "higher", "nearest" (half to even), "midpoint"). quantile is NaN
// for a row holding NaN; nanquantile counts only a row's non-NaN values (NaN when there is none).
#include <limits>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor quantile_of(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                   std::string_view interpolation, bool skip_nan, std::string_view op) {
  KILN_CHECK_TYPE(is_floating(self.dtype()), "{}() input tensor must be either float or double dtype, got {}", op,
                  self.describe());
  KILN_CHECK_TYPE(q.dtype() == self.dtype(), "{}() q tensor must be same dtype as the input tensor ({} and {})", op,
                  dtype_name(q.dtype()), dtype_name(self.dtype()));
  KILN_CHECK(q.dim() <= 1, "{}() q must be a scalar or 1D tensor, got {}", op, q.describe());
  KILN_CHECK(interpolation == "linear" || interpolation == "lower" || interpolation == "higher" ||
                 interpolation == "nearest" || interpolation == "midpoint",
             "{}() interpolation must be one of linear, lower, higher, midpoint or nearest. Got {}", op, interpolation);
  KILN_CHECK(self.numel() > 0, "{}() input tensor must be non-empty, got {}", op, self.describe());
  int64_t d = dim ? wrap_dim(*dim, std::max<int64_t>(self.dim(), 1), op) : 0;
  Tensor rows = dim ? movedim(self, d, -1) : reshape(self, {-1});
  if (rows.dim() == 0) rows = reshape(rows, {1});
  Tensor sorted =
      std::get<0>(detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::sort"), rows, int64_t{-1}, false));
  int64_t n = sorted.size(-1);
  Tensor nan_in = isnan(sorted);
  Tensor count = skip_nan ? sum(logical_not(nan_in), std::vector<int64_t>{-1}, true, self.dtype())
                          : full({}, Scalar(n), TensorOptions(self.dtype()).device(self.device()));
  // ranks [..., Q]: q (count - 1), clamped into the row.
  Tensor qs = reshape(q, {-1});
  Tensor ranks = mul(sub(count, Scalar(1)), qs);
  ranks = clamp_min(ranks, Scalar(0));
  Tensor below = clamp(floor(ranks), Scalar(0), Scalar(n - 1));
  Tensor above = clamp(ceil(ranks), Scalar(0), Scalar(n - 1));
  Shape gather_sizes(sorted.sizes().begin(), sorted.sizes().end() - 1);
  gather_sizes.push_back(qs.numel());
  auto at = [&](const Tensor& position) {
    Tensor index = expand(to(position, DType::Int64), gather_sizes);
    return gather(sorted, -1, index);
  };
  Tensor result;
  if (interpolation == "lower") {
    result = at(below);
  } else if (interpolation == "higher") {
    result = at(above);
  } else if (interpolation == "nearest") {
    result = at(round(ranks));
  } else {
    Tensor low = at(below);
    Tensor high = at(above);
    Tensor weight = interpolation == "midpoint" ? full_like(ranks, Scalar(0.5)) : sub(ranks, below);
    result = lerp(low, high, expand(weight, gather_sizes));
  }
  Tensor nan =
      full({}, Scalar(std::numeric_limits<double>::quiet_NaN()), TensorOptions(self.dtype()).device(self.device()));
  Tensor undefined = skip_nan ? eq(count, Scalar(0)) : any(nan_in, -1, true);
  result = where(undefined, nan, result);
  // [..., Q] -> [Q, ...] with the reduced dim kept (as 1) when asked, inserted before the move as
  // PyTorch does (its strides follow); a 0-d q has no Q dim.
  if (keepdim && dim) result = unsqueeze(result, d);
  result = movedim(result, -1, 0);
  if (keepdim && !dim) {
    std::vector<int64_t> ones(static_cast<size_t>(self.dim()), 1);
    ones.insert(ones.begin(), qs.numel());
    result = reshape(result, ones);
  }
  return q.dim() == 0 ? squeeze(result, 0) : result;
}

Tensor q_tensor(double q, const Tensor& like, std::string_view op) {
  KILN_CHECK(q >= 0 && q <= 1, "{}() q must be in the range [0, 1] but got {}", op, q);
  return full({}, Scalar(q), TensorOptions(like.dtype()).device(like.device()));
}

Tensor quantile_tensor(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                       std::string_view interpolation) {
  return quantile_of(self, q, dim, keepdim, interpolation, false, "quantile");
}
Tensor quantile_scalar(const Tensor& self, double q, std::optional<int64_t> dim, bool keepdim,
                       std::string_view interpolation) {
  return quantile_of(self, q_tensor(q, self, "quantile"), dim, keepdim, interpolation, false, "quantile");
}
Tensor nanquantile_tensor(const Tensor& self, const Tensor& q, std::optional<int64_t> dim, bool keepdim,
                          std::string_view interpolation) {
  return quantile_of(self, q, dim, keepdim, interpolation, true, "nanquantile");
}
Tensor nanquantile_scalar(const Tensor& self, double q, std::optional<int64_t> dim, bool keepdim,
                          std::string_view interpolation) {
  return quantile_of(self, q_tensor(q, self, "nanquantile"), dim, keepdim, interpolation, true, "nanquantile");
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::quantile", kiln::detail::boxed<&quantile_tensor>());
  r.set_compound_kernel("aten::quantile.scalar", kiln::detail::boxed<&quantile_scalar>());
  r.set_compound_kernel("aten::nanquantile", kiln::detail::boxed<&nanquantile_tensor>());
  r.set_compound_kernel("aten::nanquantile.scalar", kiln::detail::boxed<&nanquantile_scalar>());
});

}  // namespace
}  // namespace kiln::decomp
