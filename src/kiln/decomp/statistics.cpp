// The other overloads of PyTorch's reductions, each one call of the overload kiln implements: var,
// std, var_mean and std_mean with `unbiased` (a correction of 1 or 0), std_mean with a correction,
// max and min of a whole tensor, count_nonzero, nanmean (nansum over the count of non-NaN
// elements), msort (sort's values along dim 0), and median and nanmedian of all elements.
#include <limits>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Scalar correction_of(bool unbiased) { return Scalar(static_cast<int64_t>(unbiased ? 1 : 0)); }

Tensor var_all(const Tensor& self, bool unbiased) { return var(self, std::nullopt, correction_of(unbiased)); }
Tensor std_all(const Tensor& self, bool unbiased) { return kiln::std(self, std::nullopt, correction_of(unbiased)); }
Tensor std_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased, bool keepdim) {
  return kiln::std(self, dim, correction_of(unbiased), keepdim);
}

std::tuple<Tensor, Tensor> var_mean_all(const Tensor& self, bool unbiased) {
  return var_mean(self, std::nullopt, correction_of(unbiased));
}
std::tuple<Tensor, Tensor> var_mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased,
                                        bool keepdim) {
  return var_mean(self, dim, correction_of(unbiased), keepdim);
}

// (sqrt(var), mean), var and mean computed together.
std::tuple<Tensor, Tensor> std_mean_correction(const Tensor& self, std::optional<IntArrayRef> dim,
                                               const std::optional<Scalar>& correction, bool keepdim) {
  auto [v, m] = var_mean(self, dim, correction, keepdim);
  return {sqrt(v), m};
}
std::tuple<Tensor, Tensor> std_mean_all(const Tensor& self, bool unbiased) {
  return std_mean_correction(self, std::nullopt, correction_of(unbiased), false);
}
std::tuple<Tensor, Tensor> std_mean_dim(const Tensor& self, std::optional<IntArrayRef> dim, bool unbiased,
                                        bool keepdim) {
  return std_mean_correction(self, dim, correction_of(unbiased), keepdim);
}

Tensor extremum_of_all(const Tensor& self, bool largest) {
  KILN_CHECK(self.numel() > 0,
             "{}(): Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with the "
             "'dim' argument (input {}).",
             largest ? "max" : "min", self.describe());
  return largest ? amax(self) : amin(self);
}
Tensor max_all(const Tensor& self) { return extremum_of_all(self, true); }
Tensor min_all(const Tensor& self) { return extremum_of_all(self, false); }

Tensor count_nonzero_dims(const Tensor& self, IntArrayRef dim) {
  return sum(ne(self, Scalar(0)), dim, false, DType::Int64);
}
Tensor count_nonzero_dim(const Tensor& self, std::optional<int64_t> dim) {
  if (!dim) return sum(ne(self, Scalar(0)), std::nullopt, false, DType::Int64);
  return count_nonzero_dims(self, std::vector<int64_t>{*dim});
}

Tensor nanmean_impl(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  KILN_CHECK_TYPE(is_floating(self.dtype()),
                  "nanmean(): expected input to have floating point or complex dtype but got {} (input {})",
                  dtype_name(self.dtype()), self.describe());
  Tensor count = sum(logical_not(isnan(self)), dim, keepdim);
  return div(nansum(self, dim, keepdim, dtype), count);
}

Tensor msort_impl(const Tensor& self) {
  return std::get<0>(detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::sort"), self, int64_t{0}, false));
}

// The lower median of all elements: the ((n - 1) / 2)-th in sorted order; NaN if any is NaN (median)
// or of the non-NaN elements, NaN if all are (nanmedian).
Tensor median_of_all(const Tensor& self, bool skip_nan, std::string_view op) {
  Tensor flat = reshape(self, {-1});
  if (flat.numel() == 0) {
    KILN_CHECK_TYPE(is_floating(self.dtype()), "{}: cannot compute the median of an empty {} tensor", op,
                    dtype_name(self.dtype()));
    return full({}, Scalar(std::numeric_limits<double>::quiet_NaN()),
                TensorOptions(self.dtype()).device(self.device()));
  }
  Tensor sorted = std::get<0>(detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::sort"), flat, int64_t{0}, false));
  if (!is_floating(self.dtype())) return select(sorted, 0, (flat.numel() - 1) / 2);
  Tensor nan = isnan(flat);
  if (!skip_nan) {
    Tensor middle = select(sorted, 0, (flat.numel() - 1) / 2);
    Tensor any_nan = any(nan);
    return where(any_nan, full_like(middle, Scalar(std::numeric_limits<double>::quiet_NaN())), middle);
  }
  // NaN sorts last: the middle of the non-NaN prefix, the first element (NaN) when there is none.
  Tensor count = sum(logical_not(nan), std::nullopt, false, DType::Int64);
  Tensor position = clamp_min(div(sub(count, Scalar(1)), Scalar(2), std::string("floor")), Scalar(0));
  return reshape(gather(sorted, 0, reshape(position, {1})), std::vector<int64_t>{});
}
Tensor median_impl(const Tensor& self) { return median_of_all(self, false, "median"); }
Tensor nanmedian_impl(const Tensor& self) { return median_of_all(self, true, "nanmedian"); }

// all: no element is false (bool, or uint8 for a uint8 input, as PyTorch's).
Tensor all_of(const Tensor& self, const Tensor& any_false) {
  Tensor r = logical_not(any_false);
  return self.dtype() == DType::UInt8 ? to(r, DType::UInt8) : r;
}
Tensor all_impl(const Tensor& self) { return all_of(self, any(logical_not(self))); }
Tensor all_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return all_of(self, any(logical_not(self), dim, keepdim));
}
Tensor all_dims(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  return all_of(self, any(logical_not(self), dim, keepdim));
}

// The lower median along `dim` and its index: of the non-NaN elements (nanmedian; NaN, at the
// first NaN, where all are), or NaN at the lane's first NaN where it has one (median). The sort is
// stable with NaN last, so a NaN's index is its lane's first.
std::tuple<Tensor, Tensor> median_along(const Tensor& self, int64_t dim, bool keepdim, bool skip_nan,
                                        std::string_view op) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), op);
  Tensor x = self.dim() == 0 ? reshape(self, {1}) : self;
  int64_t n = x.size(d);
  KILN_CHECK_INDEX(n > 0, "{}: Expected reduction dim {} to have non-zero size, got {}", op, dim, self.describe());
  auto [sorted, order] = detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::sort"), x, d, false);
  Tensor count = is_floating(x.dtype()) ? sum(logical_not(isnan(x)), IntArrayRef{d}, true)
                                        : full({}, Scalar(n), TensorOptions(DType::Int64).device(x.device()));
  Tensor middle = floor_divide(sub(to(count, DType::Int64), Scalar(1)), Scalar(2));
  // median: a lane with a NaN takes its first NaN, at sorted position `count`.
  Tensor position = skip_nan ? clamp_min(middle, Scalar(0))
                             : where(lt(count, Scalar(n)), to(count, DType::Int64), clamp_min(middle, Scalar(0)));
  Shape at_sizes(x.sizes());
  at_sizes[static_cast<size_t>(d)] = 1;
  Tensor at = expand(position, at_sizes);
  Tensor values = gather(sorted, d, at), indices = gather(order, d, at);
  if (!keepdim || self.dim() == 0) {
    values = squeeze(values, d);
    indices = squeeze(indices, d);
  }
  return {values, indices};
}
std::tuple<Tensor, Tensor> median_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return median_along(self, dim, keepdim, false, "median");
}
std::tuple<Tensor, Tensor> nanmedian_dim(const Tensor& self, int64_t dim, bool keepdim) {
  return median_along(self, dim, keepdim, true, "nanmedian");
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::median.dim", kiln::detail::boxed<&median_dim>());
  r.set_compound_kernel("aten::nanmedian.dim", kiln::detail::boxed<&nanmedian_dim>());
  r.set_compound_kernel("aten::all", kiln::detail::boxed<&all_impl>());
  r.set_compound_kernel("aten::all.dim", kiln::detail::boxed<&all_dim>());
  r.set_compound_kernel("aten::all.dims", kiln::detail::boxed<&all_dims>());
  r.set_compound_kernel("aten::median", kiln::detail::boxed<&median_impl>());
  r.set_compound_kernel("aten::nanmedian", kiln::detail::boxed<&nanmedian_impl>());
  r.set_compound_kernel("aten::var", kiln::detail::boxed<&var_all>());
  r.set_compound_kernel("aten::std", kiln::detail::boxed<&std_all>());
  r.set_compound_kernel("aten::std.dim", kiln::detail::boxed<&std_dim>());
  r.set_compound_kernel("aten::var_mean", kiln::detail::boxed<&var_mean_all>());
  r.set_compound_kernel("aten::var_mean.dim", kiln::detail::boxed<&var_mean_dim>());
  r.set_compound_kernel("aten::std_mean", kiln::detail::boxed<&std_mean_all>());
  r.set_compound_kernel("aten::std_mean.dim", kiln::detail::boxed<&std_mean_dim>());
  r.set_compound_kernel("aten::std_mean.correction", kiln::detail::boxed<&std_mean_correction>());
  r.set_compound_kernel("aten::max", kiln::detail::boxed<&max_all>());
  r.set_compound_kernel("aten::min", kiln::detail::boxed<&min_all>());
  r.set_compound_kernel("aten::count_nonzero", kiln::detail::boxed<&count_nonzero_dim>());
  r.set_compound_kernel("aten::count_nonzero.dim_IntList", kiln::detail::boxed<&count_nonzero_dims>());
  r.set_compound_kernel("aten::nanmean", kiln::detail::boxed<&nanmean_impl>());
  r.set_compound_kernel("aten::msort", kiln::detail::boxed<&msort_impl>());
});

}  // namespace
}  // namespace kiln::decomp
