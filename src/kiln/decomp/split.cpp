// Compound shape ops PyTorch programs call and torch.export's default IR keeps: splitting a tensor
// into views (split, chunk, unbind, narrow, tensor_split and h/v/dsplit; their unsafe_ and _copy
// variants), naming a dim's sizes (unflatten, expand_as), and the
// copies roll and pad make. Each is written once against kiln's ops, so it runs eagerly, traces and
// compiles; errors are PyTorch's.
#include <numeric>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

int64_t dim_size(const Tensor& self, int64_t dim, std::string_view op) {
  KILN_CHECK_INDEX(self.dim() > 0, "{}: dimension specified as {} but tensor has no dimensions", op, dim);
  return self.size(wrap_dim(dim, self.dim(), op));
}

// Pieces of `split_size` along `dim`, the last one smaller when the size does not divide.
std::vector<Tensor> split_impl(const Tensor& self, int64_t split_size, int64_t dim) {
  int64_t n = dim_size(self, dim, "split");
  KILN_CHECK(split_size >= 0, "split: split_size must be non-negative, but got split_size={}", split_size);
  KILN_CHECK(split_size != 0 || n == 0,
             "split: split_size can only be 0 if the dimension size is 0, but got dimension size {} (input {})", n,
             self.describe());
  int64_t pieces = split_size == 0 ? 1 : std::max<int64_t>((n + split_size - 1) / split_size, 1);
  std::vector<int64_t> sizes(static_cast<size_t>(pieces), split_size);
  sizes.back() = split_size - (split_size * pieces - n);
  return split_with_sizes(self, sizes, dim);
}

std::vector<Tensor> split_sizes_impl(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return split_with_sizes(self, split_sizes, dim);
}

// `chunks` pieces of ceil(size / chunks) (fewer when the size runs out first).
std::vector<Tensor> chunk_impl(const Tensor& self, int64_t chunks, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "chunk: expects at least a 1-dimensional tensor, got {}", self.describe());
  KILN_CHECK(chunks > 0, "chunk: expects `chunks` to be greater than 0, got: {}", chunks);
  int64_t n = self.size(wrap_dim(dim, self.dim(), "chunk"));
  int64_t split_size = (n + chunks - 1) / chunks;
  if (split_size == 0 && n == 0) {
    return split_with_sizes(self, std::vector<int64_t>(static_cast<size_t>(chunks), 0), dim);
  }
  return split_impl(self, split_size, dim);
}

std::vector<Tensor> unbind_impl(const Tensor& self, int64_t dim) {
  int64_t n = dim_size(self, dim, "unbind");
  std::vector<Tensor> out;
  for (int64_t i = 0; i < n; ++i) out.push_back(select(self, dim, i));
  return out;
}

Tensor narrow_impl(const Tensor& self, int64_t dim, int64_t start, int64_t length) {
  KILN_CHECK(self.dim() > 0, "narrow: cannot be applied to a 0-dim tensor");
  KILN_CHECK(length >= 0, "narrow: length must be non-negative, got {}", length);
  int64_t d = wrap_dim(dim, self.dim(), "narrow");
  int64_t n = self.size(d);
  KILN_CHECK_INDEX(-n <= start && start <= n,
                   "narrow: start out of range (expected to be in range of [{}, {}], but got {})", -n, n, start);
  if (start < 0) start += n;
  KILN_CHECK(start <= n - length, "narrow: start ({}) + length ({}) exceeds dimension size ({}) of input {}", start,
             length, n, self.describe());
  return slice(self, d, start, start + length, 1);
}

// tensor_split: `sections` views of near-equal length (the first size % sections one longer), or the
// views between consecutive `indices` (clamped as slices are, so they may be empty).
std::vector<Tensor> tensor_split_sections_impl(const Tensor& self, int64_t sections, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "tensor_split: expected at least a 1-dimensional tensor, got {}", self.describe());
  KILN_CHECK(sections > 0, "tensor_split: number of sections must be greater than 0, but was {}", sections);
  int64_t d = wrap_dim(dim, self.dim(), "tensor_split"), n = self.size(d);
  std::vector<Tensor> out;
  for (int64_t i = 0, start = 0; i < sections; ++i) {
    int64_t length = n / sections + (i < n % sections ? 1 : 0);
    out.push_back(slice(self, d, start, start + length, 1));
    start += length;
  }
  return out;
}

std::vector<Tensor> tensor_split_indices_impl(const Tensor& self, IntArrayRef indices, int64_t dim) {
  KILN_CHECK(self.dim() > 0, "tensor_split: expected at least a 1-dimensional tensor, got {}", self.describe());
  int64_t d = wrap_dim(dim, self.dim(), "tensor_split");
  std::vector<Tensor> out;
  int64_t start = 0;
  for (int64_t end : indices) {
    out.push_back(slice(self, d, start, end, 1));
    start = end;
  }
  out.push_back(slice(self, d, start, self.size(d), 1));
  return out;
}

// A 0-d int64 CPU tensor is a number of sections, a 1-d one the indices.
std::vector<Tensor> tensor_split_tensor_impl(const Tensor& self, const Tensor& indices_or_sections, int64_t dim) {
  const Tensor& t = indices_or_sections;
  KILN_CHECK_TYPE(t.device().is_cpu() && t.dtype() == DType::Int64,
                  "tensor_split expected tensor_indices_or_sections to be a CPU tensor of dtype long, got {}",
                  t.describe());
  KILN_CHECK(t.dim() <= 1,
             "tensor_split expected tensor_indices_or_sections to be a zero-dimensional or one-dimensional tensor, "
             "but got a tensor with {} dims",
             t.dim());
  if (t.dim() == 0) return tensor_split_sections_impl(self, t.item<int64_t>(), dim);
  Tensor c = contiguous(t);
  const int64_t* p = c.data_ptr<int64_t>();
  return tensor_split_indices_impl(self, std::vector<int64_t>(p, p + c.numel()), dim);
}

// hsplit, vsplit and dsplit: tensor_split along dim 1 (0 for a vector), 0 or 2; a number of
// sections must divide the dim.
struct SplitAlong {
  const char* op;
  int64_t min_dims;
};
int64_t split_dim(const Tensor& self, const SplitAlong& along) {
  KILN_CHECK(self.dim() >= along.min_dims,
             "torch.{} requires a tensor with at least {} dimension, but got a tensor with {} dimensions!", along.op,
             along.min_dims, self.dim());
  if (std::string_view(along.op) == "hsplit") return self.dim() == 1 ? 0 : 1;
  return std::string_view(along.op) == "vsplit" ? 0 : 2;
}
std::vector<Tensor> split_sections_along(const Tensor& self, int64_t sections, const SplitAlong& along) {
  int64_t d = split_dim(self, along);
  KILN_CHECK(sections != 0 && self.size(d) % sections == 0,
             "torch.{} attempted to split along dimension {}, but the size of the dimension {} is not divisible by "
             "the split_size {}!",
             along.op, d, self.size(d), sections);
  return tensor_split_sections_impl(self, sections, d);
}
constexpr SplitAlong kH{"hsplit", 1}, kV{"vsplit", 2}, kD{"dsplit", 3};
std::vector<Tensor> hsplit_int(const Tensor& self, int64_t sections) {
  return split_sections_along(self, sections, kH);
}
std::vector<Tensor> vsplit_int(const Tensor& self, int64_t sections) {
  return split_sections_along(self, sections, kV);
}
std::vector<Tensor> dsplit_int(const Tensor& self, int64_t sections) {
  return split_sections_along(self, sections, kD);
}
std::vector<Tensor> hsplit_array(const Tensor& self, IntArrayRef indices) {
  return tensor_split_indices_impl(self, indices, split_dim(self, kH));
}
std::vector<Tensor> vsplit_array(const Tensor& self, IntArrayRef indices) {
  return tensor_split_indices_impl(self, indices, split_dim(self, kV));
}
std::vector<Tensor> dsplit_array(const Tensor& self, IntArrayRef indices) {
  return tensor_split_indices_impl(self, indices, split_dim(self, kD));
}

// The copying variants functionalization writes: each piece a new contiguous tensor.
std::vector<Tensor> copied_pieces(std::vector<Tensor> pieces) {
  for (Tensor& p : pieces) p = clone(p, MemoryFormat::Contiguous);
  return pieces;
}
std::vector<Tensor> split_copy_impl(const Tensor& self, int64_t split_size, int64_t dim) {
  return copied_pieces(split_impl(self, split_size, dim));
}
std::vector<Tensor> split_with_sizes_copy_impl(const Tensor& self, IntArrayRef split_sizes, int64_t dim) {
  return copied_pieces(split_with_sizes(self, split_sizes, dim));
}
std::vector<Tensor> unbind_copy_impl(const Tensor& self, int64_t dim) { return copied_pieces(unbind_impl(self, dim)); }

// Dim `dim` as the sizes `sizes` (one of them may be -1: inferred).
Tensor unflatten_impl(const Tensor& self, int64_t dim, IntArrayRef sizes) {
  int64_t d = wrap_dim(dim, std::max<int64_t>(self.dim(), 1), "unflatten");
  KILN_CHECK(self.dim() > 0, "unflatten: cannot unflatten a 0-dim tensor");
  KILN_CHECK(!sizes.empty(), "unflatten: sizes must be non-empty");
  int64_t n = self.size(d), known = 1, inferred = -1;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] == -1) {
      KILN_CHECK(inferred < 0, "unflatten: only one dimension can be inferred, sizes {}", sizes.vec());
      inferred = static_cast<int64_t>(i);
    } else {
      KILN_CHECK(sizes[i] >= 0, "unflatten: invalid size {} in sizes {}", sizes[i], sizes.vec());
      known *= sizes[i];
    }
  }
  std::vector<int64_t> inner = sizes.vec();
  if (inferred >= 0) {
    KILN_CHECK(known != 0 && n % known == 0,
               "unflatten: provided sizes {} don't multiply up to the size of dim {} ({}) in the input tensor", inner,
               dim, n);
    inner[static_cast<size_t>(inferred)] = n / known;
  }
  KILN_CHECK(inferred >= 0 || known == n,
             "unflatten: provided sizes {} don't multiply up to the size of dim {} ({}) in the input tensor", inner,
             dim, n);
  std::vector<int64_t> shape(self.sizes().begin(), self.sizes().begin() + d);
  shape.insert(shape.end(), inner.begin(), inner.end());
  shape.insert(shape.end(), self.sizes().begin() + d + 1, self.sizes().end());
  return view(self, shape);
}

Tensor expand_as_impl(const Tensor& self, const Tensor& other) { return expand(self, other.sizes()); }

// Elements shifted along each of `dims` by its shift, wrapping around; with no dims, along the
// flattened tensor. A new tensor, as PyTorch's.
Tensor roll_impl(const Tensor& self, IntArrayRef shifts, IntArrayRef dims) {
  KILN_CHECK(!shifts.empty(), "roll: `shifts` required");
  if (dims.empty()) {
    KILN_CHECK(shifts.size() == 1, "roll: shifts {} without dims must hold one shift", shifts.vec());
    return view(roll_impl(flatten(self), shifts, std::vector<int64_t>{0}), self.sizes());
  }
  KILN_CHECK(shifts.size() == dims.size(), "roll: shifts and dimensions must align. shifts: {}, dims: {}",
             shifts.size(), dims.size());
  Tensor out = self;
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = wrap_dim(dims[i], self.dim(), "roll");
    int64_t n = self.size(d);
    if (n == 0) continue;
    int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    out = cat(std::vector<Tensor>{slice(out, d, n - s, n, 1), slice(out, d, 0, n - s, 1)}, d);
  }
  return out.is_same(self) ? clone(self) : out;
}

// `x` along `d` cropped by negative padding, then with what circular or replicate padding puts
// before and after it: the cropped body's other end, or its edge element repeated.
Tensor pad_dim(const Tensor& x, int64_t d, int64_t before, int64_t after, std::string_view mode) {
  Tensor body = x;
  if (before < 0) body = slice(body, d, -before, std::nullopt, 1);
  if (after < 0) body = slice(body, d, 0, body.size(d) + after, 1);
  int64_t n = body.size(d);
  if (n == 0 && mode == "replicate" && x.size(d) > 0) {
    // Cropped to nothing: PyTorch's output[j] is input[clamp(j - before, 0, size - 1)], the edge on the
    // side the padding is added, repeated to the output's size.
    int64_t out_n = x.size(d) + before + after;
    KILN_CHECK(out_n >= 0, "pad: padding ({}, {}) of dim {} leaves a negative size, input {}", before, after, d,
               x.describe());
    int64_t index = after > 0 ? x.size(d) - 1 : 0;
    std::vector<int64_t> sizes = x.sizes().vec();
    sizes[static_cast<size_t>(d)] = out_n;
    return expand(slice(x, d, index, index + 1, 1), sizes);
  }
  KILN_CHECK(n > 0 || (before <= 0 && after <= 0), "pad: {} padding of dim {} needs a non-empty input, got {}", mode, d,
             x.describe());
  auto edge = [&](int64_t index, int64_t count) {
    std::vector<int64_t> sizes = body.sizes().vec();
    sizes[static_cast<size_t>(d)] = count;
    return expand(slice(body, d, index, index + 1, 1), sizes);
  };
  std::vector<Tensor> parts;
  for (int64_t width : {before, after}) {
    KILN_CHECK(mode != "circular" || width <= n,
               "pad: padding value {} must be at most the size {} of dim {} in circular mode (input {})", width, n, d,
               x.describe());
  }
  if (before > 0) parts.push_back(mode == "circular" ? slice(body, d, n - before, n, 1) : edge(0, before));
  parts.push_back(body);
  if (after > 0) parts.push_back(mode == "circular" ? slice(body, d, 0, after, 1) : edge(n - 1, after));
  return parts.size() == 1 ? body : cat(parts, d);
}

// torch.nn.functional.pad: `pad` holds (before, after) pairs from the last dim backwards.
Tensor pad_impl(const Tensor& self, IntArrayRef pad, std::string_view mode, std::optional<double> value) {
  KILN_CHECK(pad.size() % 2 == 0, "pad: padding length must be divisible by 2, got {}", pad.size());
  KILN_CHECK(static_cast<int64_t>(pad.size() / 2) <= self.dim(),
             "pad: padding length {} is too large for an input of {} dimensions", pad.size(), self.dim());
  if (mode == "constant") return constant_pad_nd(self, pad, value.value_or(0.0));
  KILN_CHECK(!value.has_value() || *value == 0.0, "pad: padding mode \"{}\" doesn't take in value argument", mode);
  int64_t dims = static_cast<int64_t>(pad.size() / 2);
  if (mode == "reflect") {
    KILN_CHECK(dims >= 1 && dims <= 3 && (self.dim() == dims + 1 || self.dim() == dims + 2),
               "pad: reflect padding of {} dims needs a {}-D or {}-D input, got {}", dims, dims + 1, dims + 2,
               self.describe());
    static const char* kOps[] = {"aten::reflection_pad1d", "aten::reflection_pad2d", "aten::reflection_pad3d"};
    return detail::call<Tensor>(Registry::global().get(kOps[dims - 1]), self, pad);
  }
  KILN_CHECK(mode == "replicate" || mode == "circular",
             "pad: unrecognised padding mode '{}' (constant, reflect, replicate or circular)", mode);
  KILN_CHECK(self.dim() == dims + 1 || self.dim() == dims + 2,
             "pad: {} padding of {} dims needs a {}-D or {}-D input, got {}", mode, dims, dims + 1, dims + 2,
             self.describe());
  Tensor out = self;
  for (int64_t i = 0; i < dims; ++i) {
    int64_t d = self.dim() - 1 - i;
    out = pad_dim(out, d, pad[static_cast<size_t>(2 * i)], pad[static_cast<size_t>(2 * i + 1)], mode);
  }
  return out.is_same(self) ? clone(self) : contiguous(out);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::split.Tensor", kiln::detail::boxed<&split_impl>());
  r.set_compound_kernel("aten::split.sizes", kiln::detail::boxed<&split_sizes_impl>());
  r.set_compound_kernel("aten::chunk", kiln::detail::boxed<&chunk_impl>());
  r.set_compound_kernel("aten::unbind.int", kiln::detail::boxed<&unbind_impl>());
  r.set_compound_kernel("aten::narrow", kiln::detail::boxed<&narrow_impl>());
  r.set_compound_kernel("aten::unflatten.int", kiln::detail::boxed<&unflatten_impl>());
  r.set_compound_kernel("aten::expand_as", kiln::detail::boxed<&expand_as_impl>());
  r.set_compound_kernel("aten::roll", kiln::detail::boxed<&roll_impl>());
  r.set_compound_kernel("aten::pad", kiln::detail::boxed<&pad_impl>());
  r.set_compound_kernel("aten::unsafe_split.Tensor", kiln::detail::boxed<&split_impl>());
  r.set_compound_kernel("aten::unsafe_split_with_sizes", kiln::detail::boxed<&split_sizes_impl>());
  r.set_compound_kernel("aten::unsafe_chunk", kiln::detail::boxed<&chunk_impl>());
  r.set_compound_kernel("aten::tensor_split.sections", kiln::detail::boxed<&tensor_split_sections_impl>());
  r.set_compound_kernel("aten::tensor_split.indices", kiln::detail::boxed<&tensor_split_indices_impl>());
  r.set_compound_kernel("aten::tensor_split.tensor_indices_or_sections",
                        kiln::detail::boxed<&tensor_split_tensor_impl>());
  r.set_compound_kernel("aten::hsplit.int", kiln::detail::boxed<&hsplit_int>());
  r.set_compound_kernel("aten::vsplit.int", kiln::detail::boxed<&vsplit_int>());
  r.set_compound_kernel("aten::dsplit.int", kiln::detail::boxed<&dsplit_int>());
  r.set_compound_kernel("aten::hsplit.array", kiln::detail::boxed<&hsplit_array>());
  r.set_compound_kernel("aten::vsplit.array", kiln::detail::boxed<&vsplit_array>());
  r.set_compound_kernel("aten::dsplit.array", kiln::detail::boxed<&dsplit_array>());
  r.set_compound_kernel("aten::split_copy.Tensor", kiln::detail::boxed<&split_copy_impl>());
  r.set_compound_kernel("aten::split_with_sizes_copy", kiln::detail::boxed<&split_with_sizes_copy_impl>());
  r.set_compound_kernel("aten::unbind_copy.int", kiln::detail::boxed<&unbind_copy_impl>());
});

}  // namespace
}  // namespace kiln::decomp
