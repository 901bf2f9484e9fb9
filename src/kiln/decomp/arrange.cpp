// Compound ops that rearrange or join tensors, as PyTorch decomposes them (its
// CompositeImplicitAutograd kernels, which torch.export's default IR keeps): dims moved or swapped,
// the shape of another tensor taken, flattening, outer products, stacking and tiling.
#include <algorithm>
#include <numeric>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// Dims `source` moved to positions `destination`; the others keep their order in the rest.
Tensor movedim_list(const Tensor& self, IntArrayRef source, IntArrayRef destination) {
  KILN_CHECK(source.size() == destination.size(),
             "movedim: invalid source or destination dims: source ({} dims) should contain the same number of dims "
             "as destination ({} dims)",
             source.vec(), destination.vec());
  int64_t n = self.dim();
  if (n == 0) {
    for (int64_t d : source) wrap_dim(d, 1, "movedim");
    for (int64_t d : destination) wrap_dim(d, 1, "movedim");
    return alias(self);
  }
  std::vector<int64_t> src, dst;
  for (int64_t d : source) src.push_back(wrap_dim(d, n, "movedim"));
  for (int64_t d : destination) dst.push_back(wrap_dim(d, n, "movedim"));
  auto unique = [](std::vector<int64_t> v) {
    std::sort(v.begin(), v.end());
    return std::adjacent_find(v.begin(), v.end()) == v.end();
  };
  KILN_CHECK(unique(src), "movedim: repeated dim in `source` ({})", source.vec());
  KILN_CHECK(unique(dst), "movedim: repeated dim in `destination` ({})", destination.vec());
  std::vector<int64_t> order(static_cast<size_t>(n), -1);
  std::vector<bool> moved(static_cast<size_t>(n), false);
  for (size_t i = 0; i < src.size(); ++i) {
    order[static_cast<size_t>(dst[i])] = src[i];
    moved[static_cast<size_t>(src[i])] = true;
  }
  int64_t next = 0;
  for (auto& o : order) {
    if (o >= 0) continue;
    while (moved[static_cast<size_t>(next)]) ++next;
    o = next++;
  }
  return permute(self, order);
}

Tensor movedim_int(const Tensor& self, int64_t source, int64_t destination) {
  return movedim_list(self, std::vector<int64_t>{source}, std::vector<int64_t>{destination});
}

Tensor swapaxes_impl(const Tensor& self, int64_t axis0, int64_t axis1) { return transpose(self, axis0, axis1); }
Tensor view_as_impl(const Tensor& self, const Tensor& other) { return view(self, other.sizes()); }
Tensor reshape_as_impl(const Tensor& self, const Tensor& other) { return reshape(self, other.sizes()); }
Tensor broadcast_to_impl(const Tensor& self, IntArrayRef size) { return expand(self, size); }

// A 1-D view of self when it is contiguous, else of a contiguous copy.
Tensor ravel_impl(const Tensor& self) {
  Tensor c = contiguous(self);
  return view(c, {-1});
}

Tensor outer_impl(const Tensor& self, const Tensor& vec2) {
  KILN_CHECK(self.dim() == 1, "outer: expected 1-D argument self, but got {}-D ({})", self.dim(), self.describe());
  KILN_CHECK(vec2.dim() == 1, "outer: expected 1-D argument vec2, but got {}-D ({})", vec2.dim(), vec2.describe());
  Tensor column = reshape(self, {self.size(0), 1});
  return mul(column, vec2);
}

// The tensors joined along a new dim `dim`: all must have one shape.
Tensor stack_impl(std::span<const Tensor> tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "stack: expects a non-empty TensorList");
  int64_t d = wrap_dim(dim, tensors[0].dim() + 1, "stack");
  std::vector<Tensor> parts;
  for (size_t i = 0; i < tensors.size(); ++i) {
    KILN_CHECK(tensors[i].sizes().equals(tensors[0].sizes()),
               "stack: expects each tensor to be equal size, but got {} at entry 0 and {} at entry {}",
               tensors[0].sizes().vec(), tensors[i].sizes().vec(), i);
    parts.push_back(unsqueeze(tensors[i], d));
  }
  return cat(parts, d);
}

Tensor at_least(const Tensor& t, int64_t dims) {
  if (t.dim() >= dims) return t;
  if (t.dim() == 0) return reshape(t, std::vector<int64_t>(static_cast<size_t>(dims), 1));
  return unsqueeze(t, 0);  // 1-D to 2-D: a row
}

// Along dim 1, or dim 0 for 1-D tensors; 0-D tensors count as 1-D.
Tensor hstack_impl(std::span<const Tensor> tensors) {
  KILN_CHECK(!tensors.empty(), "hstack: expects a non-empty TensorList");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(at_least(t, 1));
  return cat(parts, parts[0].dim() == 1 ? 0 : 1);
}

// Along dim 0, with 0-D and 1-D tensors as rows.
Tensor vstack_impl(std::span<const Tensor> tensors) {
  KILN_CHECK(!tensors.empty(), "vstack: expects a non-empty TensorList");
  std::vector<Tensor> parts;
  for (const Tensor& t : tensors) parts.push_back(at_least(t, 2));
  return cat(parts, 0);
}

// repeat, with `dims` padded with leading ones to self's rank.
Tensor tile_impl(const Tensor& self, IntArrayRef dims) {
  std::vector<int64_t> reps = dims.vec();
  if (static_cast<int64_t>(reps.size()) < self.dim()) {
    reps.insert(reps.begin(), static_cast<size_t>(self.dim()) - reps.size(), 1);
  }
  return repeat(self, reps);
}

Tensor atleast_1d_impl(const Tensor& self) { return at_least(self, 1); }
Tensor atleast_2d_impl(const Tensor& self) { return at_least(self, 2); }
// 0-D as [1, 1, 1], 1-D [n] as [1, n, 1], 2-D [m, n] as [m, n, 1].
Tensor atleast_3d_impl(const Tensor& self) {
  if (self.dim() >= 3) return self;
  if (self.dim() == 2) return unsqueeze(self, -1);
  Tensor row = at_least(self, 2);
  return unsqueeze(row, -1);
}

Tensor fliplr_impl(const Tensor& self) {
  KILN_CHECK(self.dim() >= 2, "fliplr: input must be >= 2-d, got {}", self.describe());
  return flip(self, {1});
}
Tensor flipud_impl(const Tensor& self) {
  KILN_CHECK(self.dim() >= 1, "flipud: input must be >= 1-d, got {}", self.describe());
  return flip(self, {0});
}

// The dot product of two vectors of one dtype and length, in that dtype.
Tensor dot_impl(const Tensor& self, const Tensor& other) {
  KILN_CHECK(self.dim() == 1 && other.dim() == 1, "dot: 1D tensors expected, but got {}D and {}D tensors", self.dim(),
             other.dim());
  KILN_CHECK_TYPE(self.dtype() == other.dtype(), "dot: expected both vectors to have same dtype, but found {} and {}",
                  dtype_name(self.dtype()), dtype_name(other.dtype()));
  KILN_CHECK(self.numel() == other.numel(),
             "dot: inconsistent tensor size, expected tensor [{}] and src [{}] to have the same number of elements, "
             "but got {} and {} elements respectively",
             self.numel(), other.numel(), self.numel(), other.numel());
  Tensor products = mul(self, other);
  return sum(products, std::nullopt, false, self.dtype());
}

// A matrix times a vector: mm with the vector as a column.
Tensor mv_impl(const Tensor& self, const Tensor& vec) {
  KILN_CHECK(self.dim() == 2 && vec.dim() == 1, "mv: vector + matrix @ vector expected, got {}D and {}D ({} and {})",
             self.dim(), vec.dim(), self.describe(), vec.describe());
  Tensor column = unsqueeze(vec, 1);
  return squeeze(mm(self, column), 1);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::atleast_1d", kiln::detail::boxed<&atleast_1d_impl>());
  r.set_compound_kernel("aten::atleast_2d", kiln::detail::boxed<&atleast_2d_impl>());
  r.set_compound_kernel("aten::atleast_3d", kiln::detail::boxed<&atleast_3d_impl>());
  r.set_compound_kernel("aten::fliplr", kiln::detail::boxed<&fliplr_impl>());
  r.set_compound_kernel("aten::flipud", kiln::detail::boxed<&flipud_impl>());
  r.set_compound_kernel("aten::dot", kiln::detail::boxed<&dot_impl>());
  r.set_compound_kernel("aten::mv", kiln::detail::boxed<&mv_impl>());
  r.set_compound_kernel("aten::movedim.intlist", kiln::detail::boxed<&movedim_list>());
  r.set_compound_kernel("aten::movedim.int", kiln::detail::boxed<&movedim_int>());
  r.set_compound_kernel("aten::swapaxes", kiln::detail::boxed<&swapaxes_impl>());
  r.set_compound_kernel("aten::swapdims", kiln::detail::boxed<&swapaxes_impl>());
  r.set_compound_kernel("aten::view_as", kiln::detail::boxed<&view_as_impl>());
  r.set_compound_kernel("aten::reshape_as", kiln::detail::boxed<&reshape_as_impl>());
  r.set_compound_kernel("aten::broadcast_to", kiln::detail::boxed<&broadcast_to_impl>());
  r.set_compound_kernel("aten::ravel", kiln::detail::boxed<&ravel_impl>());
  r.set_compound_kernel("aten::outer", kiln::detail::boxed<&outer_impl>());
  r.set_compound_kernel("aten::stack", kiln::detail::boxed<&stack_impl>());
  r.set_compound_kernel("aten::hstack", kiln::detail::boxed<&hstack_impl>());
  r.set_compound_kernel("aten::vstack", kiln::detail::boxed<&vstack_impl>());
  r.set_compound_kernel("aten::tile", kiln::detail::boxed<&tile_impl>());
});

}  // namespace
}  // namespace kiln::decomp
