// Products and grids of whole tensors, outside Core ATen: kron (every product of an element of one and
// an element of the other, blocked), tensordot (contraction over chosen dims: a permute, one matrix
// product and a reshape), inner (over the last dims), bilinear (x1^T A x2 + b per output feature),
// block_diag, meshgrid, cartesian_prod and _trilinear.
#include <algorithm>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// Each dim of the result is the product of the two inputs' (the shorter padded with leading 1s);
// element [i * m + j] along a dim is a[i] * b[j].
Tensor kron_impl(const Tensor& self, const Tensor& other) {
  int64_t rank = std::max(self.dim(), other.dim());
  std::vector<int64_t> a_sizes, b_sizes, out_sizes;
  for (int64_t d = 0; d < rank; ++d) {
    int64_t a = d < rank - self.dim() ? 1 : self.size(d - (rank - self.dim()));
    int64_t b = d < rank - other.dim() ? 1 : other.size(d - (rank - other.dim()));
    a_sizes.insert(a_sizes.end(), {a, int64_t{1}});
    b_sizes.insert(b_sizes.end(), {int64_t{1}, b});
    out_sizes.push_back(a * b);
  }
  Tensor a = reshape(self, a_sizes);
  Tensor b = reshape(other, b_sizes);
  return reshape(mul(a, b), out_sizes);
}

// self's free dims, then other's, after contracting self's dims_self with other's dims_other pairwise.
Tensor tensordot_impl(const Tensor& self, const Tensor& other, IntArrayRef dims_self, IntArrayRef dims_other) {
  KILN_CHECK(dims_self.size() == dims_other.size(),
             "tensordot: both dimension lists should have same length, got {} and {}", dims_self.vec(),
             dims_other.vec());
  std::vector<bool> contracted_a(static_cast<size_t>(self.dim())), contracted_b(static_cast<size_t>(other.dim()));
  std::vector<int64_t> perm_a, perm_b, free_sizes;
  int64_t k = 1;
  for (size_t i = 0; i < dims_self.size(); ++i) {
    int64_t da = wrap_dim(dims_self[i], self.dim(), "tensordot"),
            db = wrap_dim(dims_other[i], other.dim(), "tensordot");
    KILN_CHECK(self.size(da) == other.size(db),
               "tensordot: contracted dimensions need to match, but first has size {} in dim {} and second has size {} "
               "in dim {}",
               self.size(da), dims_self[i], other.size(db), dims_other[i]);
    contracted_a[static_cast<size_t>(da)] = contracted_b[static_cast<size_t>(db)] = true;
    perm_b.push_back(db);
    k *= self.size(da);
  }
  int64_t m = 1, n = 1;
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (!contracted_a[static_cast<size_t>(d)])
      perm_a.push_back(d), free_sizes.push_back(self.size(d)), m *= self.size(d);
  }
  for (size_t i = 0; i < dims_self.size(); ++i) perm_a.push_back(wrap_dim(dims_self[i], self.dim(), "tensordot"));
  for (int64_t d = 0; d < other.dim(); ++d) {
    if (!contracted_b[static_cast<size_t>(d)])
      perm_b.push_back(d), free_sizes.push_back(other.size(d)), n *= other.size(d);
  }
  Tensor a = reshape(permute(self, perm_a), {m, k}), b = reshape(permute(other, perm_b), {k, n});
  return reshape(mm(a, b), free_sizes);
}

Tensor inner_impl(const Tensor& self, const Tensor& other) {
  if (self.dim() == 0 || other.dim() == 0) return mul(self, other);
  KILN_CHECK(self.size(-1) == other.size(-1),
             "inner() the last dimension must match on both input tensors but got shapes {} and {}", self.sizes().vec(),
             other.sizes().vec());
  return tensordot_impl(self, other, std::vector<int64_t>{-1}, std::vector<int64_t>{-1});
}

// y[..., o] = sum_ij x1[..., i] A[o, i, j] x2[..., j] + b[o].
Tensor bilinear_impl(const Tensor& input1, const Tensor& input2, const Tensor& weight,
                     const std::optional<Tensor>& bias) {
  KILN_CHECK(input1.dim() == input2.dim(), "bilinear(): input dimensions do not match: got {} and {}", input1.dim(),
             input2.dim());
  KILN_CHECK(weight.dim() == 3 && input1.size(-1) == weight.size(1) && input2.size(-1) == weight.size(2),
             "bilinear(): input sizes {} and {} do not match the weight {}", input1.sizes().vec(), input2.sizes().vec(),
             weight.sizes().vec());
  Tensor out = einsum("...i,oij,...j->...o", std::vector<Tensor>{input1, weight, input2});
  return bias ? add(out, *bias) : out;
}

// The tensors (vectors as rows, scalars as 1x1) down the diagonal of a zero matrix.
Tensor block_diag_impl(std::span<const Tensor> tensors) {
  std::vector<Tensor> blocks;
  int64_t cols = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    KILN_CHECK(t.dim() <= 2,
               "torch.block_diag: Input tensors must have 2 or fewer dimensions. Input {} has {} dimensions", i,
               t.dim());
    blocks.push_back(t.dim() == 2 ? t : reshape(t, {1, -1}));
    cols += blocks.back().size(1);
  }
  if (blocks.empty()) return empty({1, 0});
  std::vector<TensorBase> all(blocks.begin(), blocks.end());
  DType r = result_type(all);
  std::vector<Tensor> rows;
  int64_t start = 0;
  for (const Tensor& b : blocks) {
    TensorOptions o = TensorOptions(r).device(b.device());
    rows.push_back(cat(
        std::vector<Tensor>{zeros({b.size(0), start}, o), to(b, r), zeros({b.size(0), cols - start - b.size(1)}, o)},
        1));
    start += b.size(1);
  }
  return cat(rows, 0);
}

// Each 0-d or 1-d tensor expanded along its own dim of the grid ("xy" swaps the first two dims).
std::vector<Tensor> meshgrid_indexing(std::span<const Tensor> tensors, std::string_view indexing) {
  KILN_CHECK(!tensors.empty(), "torch.meshgrid: expects a non-empty TensorList");
  KILN_CHECK(indexing == "ij" || indexing == "xy",
             "torch.meshgrid: indexing must be one of \"xy\" or \"ij\", but received: {}", indexing);
  std::vector<int64_t> grid;
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].dim() <= 1, "torch.meshgrid: Expected 0D or 1D tensor in the tensor list but got: {}",
               tensors[i].describe());
    KILN_CHECK_TYPE(tensors[i].dtype() == tensors[0].dtype(),
                    "torch.meshgrid: all tensors must have the same dtype, got {} and {}", tensors[0].describe(),
                    tensors[i].describe());
    grid.push_back(tensors[i].numel());
  }
  bool swap = indexing == "xy" && tensors.size() >= 2;
  if (swap) std::swap(grid[0], grid[1]);
  std::vector<Tensor> out;
  for (size_t i = 0; i < tensors.size(); ++i) {
    size_t at = swap && i < 2 ? 1 - i : i;
    std::vector<int64_t> view_sizes(tensors.size(), 1);
    view_sizes[at] = -1;
    out.push_back(expand(view(tensors[i], view_sizes), grid));
  }
  return out;
}
std::vector<Tensor> meshgrid_impl(std::span<const Tensor> tensors) { return meshgrid_indexing(tensors, "ij"); }

// Every combination of one element of each vector, as the rows of an [N, k] matrix.
Tensor cartesian_prod_impl(std::span<const Tensor> tensors) {
  for (const Tensor& t : tensors) {
    KILN_CHECK(t.dim() == 1, "Expect a 1D vector, but got shape {}", t.sizes().vec());
  }
  if (tensors.size() == 1) return tensors[0];
  std::vector<Tensor> columns;
  for (const Tensor& g : meshgrid_indexing(tensors, "ij")) columns.push_back(flatten(g));
  return stack(columns, 1);
}

// _trilinear (what bilinear becomes after run_decompositions()): each input unsqueezed at its
// `expand` dims to a common rank, the three multiplied and summed over `sumdim` (unroll_dim only
// chooses PyTorch's loop order).
Tensor trilinear_impl(const Tensor& i1, const Tensor& i2, const Tensor& i3, IntArrayRef expand1, IntArrayRef expand2,
                      IntArrayRef expand3, IntArrayRef sumdim, int64_t) {
  int64_t total = i1.dim() + static_cast<int64_t>(expand1.size());
  auto widen = [&](const Tensor& t, IntArrayRef expand, std::string_view arg) {
    KILN_CHECK(t.dim() + static_cast<int64_t>(expand.size()) == total,
               "_trilinear: {} ({}) with {} new dims does not reach {} dims", arg, t.describe(), expand.size(), total);
    std::vector<int64_t> dims(expand.begin(), expand.end());
    std::sort(dims.begin(), dims.end());
    Tensor w = t;
    for (int64_t d : dims) w = unsqueeze(w, wrap_dim(d, total, "_trilinear"));
    return w;
  };
  Tensor product = mul(mul(widen(i1, expand1, "i1"), widen(i2, expand2, "i2")), widen(i3, expand3, "i3"));
  if (sumdim.empty()) return product;
  return sum(product, sumdim, false);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::_trilinear", kiln::detail::boxed<&trilinear_impl>());
  r.set_compound_kernel("aten::kron", kiln::detail::boxed<&kron_impl>());
  r.set_compound_kernel("aten::tensordot", kiln::detail::boxed<&tensordot_impl>());
  r.set_compound_kernel("aten::inner", kiln::detail::boxed<&inner_impl>());
  r.set_compound_kernel("aten::bilinear", kiln::detail::boxed<&bilinear_impl>());
  r.set_compound_kernel("aten::block_diag", kiln::detail::boxed<&block_diag_impl>());
  r.set_compound_kernel("aten::meshgrid", kiln::detail::boxed<&meshgrid_impl>());
  r.set_compound_kernel("aten::meshgrid.indexing", kiln::detail::boxed<&meshgrid_indexing>());
  r.set_compound_kernel("aten::cartesian_prod", kiln::detail::boxed<&cartesian_prod_impl>());
});

}  // namespace
}  // namespace kiln::decomp
