// Bucketing as comparisons and sums, so it traces and compiles: searchsorted (the insertion point of
// each value in a sorted row: the count of row entries below it, or at most it with right/side
// "right"; NaN past the end), bucketize (searchsorted in one boundary row) and histc (each value's
// bin over [min, max] counted with scatter_add; values outside, and NaN, are not counted).
#include <optional>
#include <string>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor search(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
              std::optional<std::string_view> side, const std::optional<Tensor>& sorter, std::string_view op) {
  KILN_CHECK(!side || *side == "left" || *side == "right", "{}: side can only be 'left' or 'right' but got {}", op,
             side.value_or(""));
  KILN_CHECK(!side || !right || *side == "right",
             "{}: side and right can't be set to opposites, got side of {} while right was True", op, *side);
  bool upper = right || (side && *side == "right");
  KILN_CHECK(sorted_sequence.dim() >= 1, "{}: boundaries tensor should have at least 1 dimension, got {}", op,
             sorted_sequence.describe());
  bool one_row = sorted_sequence.dim() == 1;
  if (!one_row) {
    IntArrayRef b = sorted_sequence.sizes(), v = self.sizes();
    bool match = self.dim() == sorted_sequence.dim();
    for (int64_t d = 0; match && d + 1 < sorted_sequence.dim(); ++d) match = b[d] == v[d];
    KILN_CHECK(match,
               "{}: boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor "
               "and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
               op, b, v);
  }
  KILN_CHECK_TYPE(sorted_sequence.dtype() != DType::Bool && self.dtype() != DType::Bool,
                  "{}: boundaries and input value tensors of bool are not supported", op);
  Tensor row = sorted_sequence;
  if (sorter) {
    KILN_CHECK(sorter->sizes().equals(sorted_sequence.sizes()),
               "{}: boundary and sorter must have the same size, but "
               "got boundary tensor {} and got sorter tensor {}",
               op, sorted_sequence.sizes(), sorter->sizes());
    row = gather(sorted_sequence, -1, to(*sorter, DType::Int64));
  }
  DType common = promote_types(row.dtype(), self.dtype());
  Tensor r = to(row, common), v = to(self, common);
  // [..., K, 1] against [..., 1, M] (or [M] for one row).
  Tensor values = unsqueeze(v, -1);
  Tensor edges = one_row ? r : unsqueeze(r, -2);
  Tensor below = upper ? le(edges, values) : lt(edges, values);
  Tensor count = sum(to(below, DType::Int64), IntArrayRef{-1});
  if (is_floating(common)) {  // NaN sorts last: its insertion point is past every entry
    count = where(isnan(v), full({}, Scalar(row.size(-1)), TensorOptions(DType::Int64).device(v.device())), count);
  }
  return out_int32 ? to(count, DType::Int32) : count;
}

Tensor searchsorted_tensor(const Tensor& sorted_sequence, const Tensor& self, bool out_int32, bool right,
                           std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  return search(sorted_sequence, self, out_int32, right, side, sorter, "torch.searchsorted()");
}
Tensor searchsorted_scalar(const Tensor& sorted_sequence, const Scalar& self, bool out_int32, bool right,
                           std::optional<std::string_view> side, const std::optional<Tensor>& sorter) {
  KILN_CHECK(sorted_sequence.dim() == 1,
             "torch.searchsorted(): input value can be a scalar only when boundaries "
             "tensor dimension is 1, but we got boundaries tensor dim({}) and input value's dim(0) numel(1)",
             sorted_sequence.dim());
  Tensor v = scalar_tensor(self, TensorOptions(sorted_sequence.dtype()).device(sorted_sequence.device()));
  return search(sorted_sequence, v, out_int32, right, side, sorter, "torch.searchsorted()");
}
Tensor bucketize_tensor(const Tensor& self, const Tensor& boundaries, bool out_int32, bool right) {
  KILN_CHECK(boundaries.dim() == 1, "bucketize: boundaries tensor must be 1 dimension, but got dim({})",
             boundaries.dim());
  return search(boundaries, self, out_int32, right, std::nullopt, std::nullopt, "bucketize");
}
Tensor bucketize_scalar(const Scalar& self, const Tensor& boundaries, bool out_int32, bool right) {
  return bucketize_tensor(scalar_tensor(self, TensorOptions(boundaries.dtype()).device(boundaries.device())),
                          boundaries, out_int32, right);
}

// `bins` equal bins over [min, max] (the data's range where min == max, widened by 1 each way if
// that is one value); a value at max counts in the last bin.
Tensor histc_impl(const Tensor& self, int64_t bins, const Scalar& min, const Scalar& max) {
  KILN_CHECK(bins > 0, "torch.histc: bins must be > 0, but got {} for bins", bins);
  KILN_CHECK_TYPE(is_floating(self.dtype()),
                  "torch.histc: input tensor and bins tensors should have the same dtype, "
                  "floating point, but got {}",
                  self.describe());
  double lo = min.to_double(), hi = max.to_double();
  KILN_CHECK(!(lo > hi), "torch.histc: max must be larger than min, got min {} and max {}", lo, hi);
  TensorOptions o = TensorOptions(self.dtype()).device(self.device());
  Tensor x = reshape(self, {-1});
  Tensor low = full({}, Scalar(lo), o), high = full({}, Scalar(hi), o);
  if (lo == hi && x.numel() > 0) {
    low = amin(x);
    high = amax(x);
  }
  Tensor same = eq(low, high);
  low = where(same, sub(low, Scalar(1)), low);
  high = where(same, add(high, Scalar(1)), high);
  Tensor inside = logical_and(ge(x, low), le(x, high));
  Tensor position = floor(div(mul(sub(x, low), Scalar(static_cast<double>(bins))), sub(high, low)));
  Tensor bin = clamp(to(nan_to_num(position, 0.0, 0.0, 0.0), DType::Int64), Scalar(0), Scalar(bins - 1));
  Tensor counts = zeros({bins}, o);
  return scatter_add(counts, 0, bin, to(inside, self.dtype()));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::searchsorted.Tensor", kiln::detail::boxed<&searchsorted_tensor>());
  r.set_compound_kernel("aten::searchsorted.Scalar", kiln::detail::boxed<&searchsorted_scalar>());
  r.set_compound_kernel("aten::bucketize.Tensor", kiln::detail::boxed<&bucketize_tensor>());
  r.set_compound_kernel("aten::bucketize.Scalar", kiln::detail::boxed<&bucketize_scalar>());
  r.set_compound_kernel("aten::histc", kiln::detail::boxed<&histc_impl>());
});

}  // namespace
}  // namespace kiln::decomp
