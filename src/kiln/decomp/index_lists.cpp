// Ops whose result is a list of positions: tril_indices and triu_indices (computed from the sizes
// alone), combinations and pdist (rows picked by those lists), and the data-dependent ones, which
// run eagerly only (their sizes depend on values): argwhere, masked_select and repeat_interleave by
// a tensor of counts; nonzero_static, whose size is given, traces.
#include "kiln/core/broadcast.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// A host-computed int64 index list, moved to `device` (meta while a program's shapes are computed).
Tensor index_list(const std::vector<int64_t>& values, std::vector<int64_t> sizes, Device device) {
  Tensor t = reshape(from_vector<int64_t>(values), sizes);
  return device.is_cpu() ? t : _to_copy(t, TensorOptions(DType::Int64).device(device));
}

// The [2, N] positions (i, j) of a row x col matrix with j <= i + offset (lower) or j >= i + offset,
// row by row.
Tensor triangle_indices(int64_t row, int64_t col, int64_t offset, bool lower, std::optional<DType> dtype,
                        std::optional<Device> device, std::string_view op) {
  KILN_CHECK(row >= 0, "{}: row must be non-negative, got {}", op, row);
  KILN_CHECK(col >= 0, "{}: col must be non-negative, got {}", op, col);
  std::vector<int64_t> rows, cols;
  for (int64_t i = 0; i < row; ++i) {
    for (int64_t j = 0; j < col; ++j) {
      if (lower ? j <= i + offset : j >= i + offset) rows.push_back(i), cols.push_back(j);
    }
  }
  int64_t n = static_cast<int64_t>(rows.size());
  rows.insert(rows.end(), cols.begin(), cols.end());
  Tensor out = index_list(rows, {2, n}, device.value_or(Device()));
  return to(out, dtype.value_or(DType::Int64));
}
Tensor tril_indices_impl(int64_t row, int64_t col, int64_t offset, std::optional<DType> dtype, std::optional<Layout>,
                         std::optional<Device> device, std::optional<bool>) {
  return triangle_indices(row, col, offset, true, dtype, device, "tril_indices");
}
Tensor triu_indices_impl(int64_t row, int64_t col, int64_t offset, std::optional<DType> dtype, std::optional<Layout>,
                         std::optional<Device> device, std::optional<bool>) {
  return triangle_indices(row, col, offset, false, dtype, device, "triu_indices");
}

// Every r-element combination of the vector's elements in lexicographic order of positions (with
// repetition when asked), as the rows of an [N, r] tensor.
Tensor combinations_impl(const Tensor& self, int64_t r, bool with_replacement) {
  KILN_CHECK(self.dim() == 1, "Expect a 1D vector, but got shape {}", self.sizes().vec());
  KILN_CHECK(r >= 0, "Expect a non-negative number, but got {}", r);
  if (r == 0) return empty({0}, TensorOptions(self.dtype()).device(self.device()));
  int64_t n = self.size(0);
  std::vector<std::vector<int64_t>> columns(static_cast<size_t>(r));
  std::vector<int64_t> pick(static_cast<size_t>(r), 0);
  // Positions as an odometer: each next combination raises the last position that can rise.
  if (!with_replacement) {
    for (int64_t k = 0; k < r; ++k) pick[static_cast<size_t>(k)] = k;
  }
  bool more = with_replacement ? n > 0 : r <= n;
  while (more) {
    for (int64_t k = 0; k < r; ++k) columns[static_cast<size_t>(k)].push_back(pick[static_cast<size_t>(k)]);
    int64_t k = r - 1;
    while (k >= 0 && pick[static_cast<size_t>(k)] == (with_replacement ? n - 1 : n - r + k)) --k;
    more = k >= 0;
    if (!more) break;
    ++pick[static_cast<size_t>(k)];
    for (int64_t m = k + 1; m < r; ++m) {
      pick[static_cast<size_t>(m)] = with_replacement ? pick[static_cast<size_t>(k)]
                                                      : pick[static_cast<size_t>(m - 1)] + 1;
    }
  }
  std::vector<Tensor> picked;
  for (const auto& c : columns) picked.push_back(index_select(self, 0, index_list(c, {-1}, self.device())));
  return stack(picked, 1);
}

// The p-norm distance between each pair of rows i < j, in row-major order of the pairs.
Tensor pdist_impl(const Tensor& self, double p) {
  KILN_CHECK(self.dim() == 2, "pdist only supports 2D tensors, got: {}D", self.dim());
  KILN_CHECK(p >= 0, "pdist only supports non-negative p values, got {}", p);
  KILN_CHECK_TYPE(is_floating(self.dtype()), "pdist only supports floating-point dtypes, got {}", self.describe());
  Tensor pairs = triangle_indices(self.size(0), self.size(0), 1, false, std::nullopt, self.device(), "pdist");
  Tensor first = index_select(self, 0, select(pairs, 0, 0));
  Tensor second = index_select(self, 0, select(pairs, 0, 1));
  return linalg_vector_norm(sub(first, second), Scalar(p), std::vector<int64_t>{-1});
}

Tensor nonzero_of(const Tensor& self) { return detail::call<Tensor>(KILN_OP("aten::nonzero"), self); }

Tensor argwhere_impl(const Tensor& self) { return nonzero_of(self); }

Tensor masked_select_impl(const Tensor& self, const Tensor& mask) {
  KILN_CHECK_TYPE(mask.dtype() == DType::Bool, "masked_select: expected BoolTensor for mask, got {}", mask.describe());
  Shape shape = broadcast_shapes(self.sizes(), mask.sizes(), "masked_select");
  Tensor values = expand(self, shape);
  std::vector<std::optional<Tensor>> indices{expand(mask, shape)};
  return detail::call<Tensor>(KILN_OP("aten::index.Tensor"), values, indices);
}

// nonzero's first `size` rows, padded with rows of fill_value. Its size is static, so it is written
// with static sizes (it traces and compiles): each nonzero element's rank among them (a running
// count) places its flat index in a buffer of `size` slots (later ones go to a discarded slot), and
// the flat indices become coordinates.
Tensor nonzero_static_impl(const Tensor& self, int64_t size, int64_t fill_value) {
  KILN_CHECK(size >= 0, "nonzero_static: 'size' must be an non-negative integer, got {}", size);
  TensorOptions io = TensorOptions(DType::Int64).device(self.device());
  int64_t n = self.numel(), nd = self.dim();
  Tensor flat = reshape(ne(self, Scalar(0)), {-1});
  Tensor rank = sub(cumsum(to(flat, DType::Int64), 0), Scalar(1));
  Tensor slot = where(logical_and(flat, lt(rank, Scalar(size))), rank, full({}, Scalar(size), io));
  Tensor buffer = detail::call<Tensor>(KILN_OP("aten::scatter.src"), full({size + 1}, Scalar(-1), io), int64_t{0}, slot,
                                       arange(Scalar(n), io));
  Tensor index = slice(buffer, 0, 0, size, 1);
  std::vector<Tensor> coords;
  int64_t stride = 1;
  for (int64_t d = nd - 1; d >= 0; --d) {
    coords.insert(coords.begin(), remainder(floor_divide(index, Scalar(stride)), Scalar(self.size(d))));
    stride *= self.size(d);
  }
  Tensor at = nd == 0 ? zeros({size, 0}, io) : stack(coords, 1);
  return where(unsqueeze(ge(index, Scalar(0)), 1), at, full({}, Scalar(fill_value), io));
}

// Position i repeated repeats[i] times.
Tensor repeat_interleave_counts(const Tensor& repeats, std::optional<int64_t> output_size) {
  KILN_CHECK(repeats.dim() <= 1, "repeat_interleave only accept 1D vector as repeat, got {}", repeats.describe());
  KILN_CHECK_TYPE(repeats.dtype() == DType::Int64 || repeats.dtype() == DType::Int32,
                  "repeat_interleave: repeats has to be Long or Int tensor, got {}", repeats.describe());
  KILN_CHECK(repeats.device().is_cpu(),
             "repeat_interleave: the counts decide the result's size, so they are read: a CPU tensor is needed, got {}",
             repeats.describe());
  Tensor counts = to(contiguous(reshape(repeats, {-1})), DType::Int64);
  std::vector<int64_t> positions;
  for (int64_t i = 0; i < counts.numel(); ++i) {
    int64_t c = counts.data_ptr<int64_t>()[i];
    KILN_CHECK(c >= 0, "repeat_interleave: repeats can not be negative, got {}", c);
    positions.insert(positions.end(), static_cast<size_t>(c), i);
  }
  KILN_CHECK(!output_size || *output_size == static_cast<int64_t>(positions.size()),
             "repeat_interleave: allocated size does not match required size ({} vs {})", *output_size,
             positions.size());
  return index_list(positions, {-1}, repeats.device());
}
Tensor repeat_interleave_tensor(const Tensor& self, const Tensor& repeats, std::optional<int64_t> dim,
                                std::optional<int64_t> output_size) {
  Tensor x = dim ? self : reshape(self, {-1});
  int64_t d = wrap_dim(dim.value_or(0), std::max<int64_t>(x.dim(), 1), "repeat_interleave");
  Tensor counts = repeats.dim() == 0 ? expand(reshape(repeats, {1}), {x.size(d)}) : repeats;
  KILN_CHECK(counts.size(0) == x.size(d),
             "repeats must have the same size as input along dim, but got repeats.size(0) = {} and input.size({}) = {}",
             counts.size(0), d, x.size(d));
  return index_select(x, d, repeat_interleave_counts(counts, output_size));
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::tril_indices", kiln::detail::boxed<&tril_indices_impl>());
  r.set_compound_kernel("aten::triu_indices", kiln::detail::boxed<&triu_indices_impl>());
  r.set_compound_kernel("aten::combinations", kiln::detail::boxed<&combinations_impl>());
  r.set_compound_kernel("aten::pdist", kiln::detail::boxed<&pdist_impl>());
  r.set_compound_kernel("aten::argwhere", kiln::detail::boxed<&argwhere_impl>());
  r.set_compound_kernel("aten::masked_select", kiln::detail::boxed<&masked_select_impl>());
  r.set_compound_kernel("aten::nonzero_static", kiln::detail::boxed<&nonzero_static_impl>());
  r.set_compound_kernel("aten::repeat_interleave.Tensor", kiln::detail::boxed<&repeat_interleave_counts>());
  r.set_compound_kernel("aten::repeat_interleave.self_Tensor", kiln::detail::boxed<&repeat_interleave_tensor>());
});

}  // namespace
}  // namespace kiln::decomp
