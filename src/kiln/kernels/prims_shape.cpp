// Kernels of the view, shape, reduction and creation prims. Views build geometry over the same
// storage (one kernel for every backend); the others are written with the tensor API, so the same
// function serves the Meta key (shapes only) and the CPU key.
#include <algorithm>

#include "kiln/kernels/meta/shape.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::kernels {
namespace {

void check_dim(int64_t dim, int64_t ndim, std::string_view prim, std::string_view arg) {
  KILN_CHECK_INDEX(dim >= 0 && dim < ndim, "prims::{}: {} {} is out of range for a tensor of {} dims", prim, arg, dim,
                   ndim);
}

// ---- Views

Tensor broadcast_in_dim(const Tensor& a, IntArrayRef shape, IntArrayRef bdims) {
  KILN_CHECK(static_cast<int64_t>(bdims.size()) == a.dim(),
             "prims::broadcast_in_dim: broadcast_dimensions {} must name one output dim per input dim; input sizes {}",
             bdims, a.sizes());
  KILN_CHECK(shape.size() >= bdims.size(), "prims::broadcast_in_dim: shape {} has fewer dims than the input {}", shape,
             a.sizes());
  Shape strides(shape.size(), 0);
  int64_t previous = -1;
  for (size_t i = 0; i < bdims.size(); ++i) {
    int64_t d = bdims[i];
    KILN_CHECK(d > previous && d < static_cast<int64_t>(shape.size()),
               "prims::broadcast_in_dim: broadcast_dimensions {} must be strictly ascending dims of shape {}", bdims,
               shape);
    previous = d;
    int64_t have = a.sizes()[static_cast<int64_t>(i)];
    KILN_CHECK(have == shape[static_cast<size_t>(d)] || have == 1,
               "prims::broadcast_in_dim: input dim {} of size {} cannot become size {} (input sizes {}, shape {})", i,
               have, shape[static_cast<size_t>(d)], a.sizes(), shape);
    if (have == shape[static_cast<size_t>(d)]) strides[static_cast<size_t>(d)] = a.strides()[static_cast<int64_t>(i)];
  }
  // A new dim of size 1 gets the stride unsqueeze gives it (PyTorch's broadcast_in_dim meta): the
  // next input dim's stride times its size, or 1 after the last. It addresses nothing, but the
  // layout of a pointwise result orders dims by their strides, size-1 dims included.
  size_t next_input = 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    bool from_input = next_input < bdims.size() && bdims[next_input] == static_cast<int64_t>(d);
    if (from_input) {
      ++next_input;
    } else if (shape[d] == 1) {
      auto i = static_cast<int64_t>(next_input);
      strides[d] = next_input == bdims.size() ? 1 : a.strides()[i] * a.sizes()[i];
    }
  }
  return a.view_with(shape, strides, a.storage_offset());
}

Tensor collapse_view(const Tensor& a, int64_t start, int64_t end) {
  int64_t ndim = std::max<int64_t>(a.dim(), 1);
  check_dim(start, ndim, "collapse_view", "start");
  check_dim(end, ndim, "collapse_view", "end");
  KILN_CHECK(start <= end, "prims::collapse_view: end {} is less than start {}", end, start);
  if (a.dim() == 0) return a.view_with({1}, {1}, a.storage_offset());
  Shape sizes = a.sizes().shape(), strides = a.strides().shape();
  int64_t length = 1, stride = strides[static_cast<size_t>(end)];
  bool empty = a.numel() == 0;
  for (int64_t d = end; d >= start; --d) {
    auto i = static_cast<size_t>(d);
    length *= sizes[i];
    if (sizes[i] != 1) stride = std::min(stride, strides[i]);
    if (d < end && !empty) {
      KILN_CHECK(sizes[i] == 1 || sizes[i + 1] == 1 || strides[i] == strides[i + 1] * sizes[i + 1],
                 "prims::collapse_view: dims {}..{} of a tensor with sizes {} and strides {} are not one contiguous "
                 "span; use prims::collapse (a copy)",
                 start, end, a.sizes(), a.strides());
    }
  }
  if (empty) stride = 0;
  Shape out_sizes, out_strides;
  for (int64_t d = 0; d < a.dim(); ++d) {
    if (d > start && d <= end) continue;
    out_sizes.push_back(d == start ? length : sizes[static_cast<size_t>(d)]);
    out_strides.push_back(d == start ? stride : strides[static_cast<size_t>(d)]);
  }
  return a.view_with(out_sizes, out_strides, a.storage_offset());
}

Tensor slice(const Tensor& a, IntArrayRef start, IntArrayRef limit, std::optional<IntArrayRef> step) {
  auto n = static_cast<size_t>(a.dim());
  KILN_CHECK(start.size() == n && limit.size() == n && (!step || step->size() == n),
             "prims::slice: start_indices {}, limit_indices {} and strides need one entry per dim of a tensor of "
             "sizes {}",
             start, limit, a.sizes());
  Shape sizes(n), strides(n);
  int64_t offset = a.storage_offset();
  for (size_t i = 0; i < n; ++i) {
    int64_t s = start[i], e = limit[i], st = step ? (*step)[i] : 1;
    int64_t size = a.sizes()[static_cast<int64_t>(i)];
    KILN_CHECK(0 <= s && s <= e && e <= size && st > 0,
               "prims::slice: dim {} of size {} cannot be sliced [{}:{}:{}] (need 0 <= start <= limit <= size, "
               "stride > 0)",
               i, size, s, e, st);
    sizes[i] = (e - s + st - 1) / st;
    strides[i] = a.strides()[static_cast<int64_t>(i)] * st;
    offset += s * a.strides()[static_cast<int64_t>(i)];
  }
  return a.view_with(sizes, strides, offset);
}

Tensor split_dim(const Tensor& a, int64_t dim, int64_t outer) {
  check_dim(dim, a.dim(), "split_dim", "dim");
  int64_t size = a.sizes()[dim];
  KILN_CHECK(outer > 0 && size % outer == 0, "prims::split_dim: dim {} of size {} cannot be split into {} rows", dim,
             size, outer);
  int64_t inner = size / outer;
  Shape sizes = a.sizes().shape(), strides = a.strides().shape();
  auto d = static_cast<size_t>(dim);
  int64_t stride = strides[d];
  sizes[d] = inner;
  sizes.insert(sizes.begin() + dim, outer);
  strides.insert(strides.begin() + dim, stride * inner);
  return a.view_with(sizes, strides, a.storage_offset());
}

Tensor squeeze(const Tensor& a, IntArrayRef dimensions) {
  for (int64_t d : dimensions) {
    check_dim(d, a.dim(), "squeeze", "dimension");
    KILN_CHECK(a.sizes()[d] == 1, "prims::squeeze: dim {} has size {}, only size-1 dims can be squeezed (sizes {})", d,
               a.sizes()[d], a.sizes());
  }
  return kiln::squeeze(a, dimensions);
}

Tensor transpose(const Tensor& a, IntArrayRef permutation) {
  for (int64_t d : permutation) check_dim(d, a.dim(), "transpose", "permutation entry");
  return permute(a, permutation);
}

Tensor view_of(const Tensor& a) { return a.view_with(a.sizes(), a.strides(), a.storage_offset()); }

Tensor as_strided(const Tensor& a, IntArrayRef size, IntArrayRef stride, int64_t storage_offset) {
  return kiln::as_strided(a, size, stride, storage_offset);
}

// ---- Copies

Tensor reshape(const Tensor& a, IntArrayRef shape) {
  int64_t numel = 1;
  for (int64_t s : shape) {
    KILN_CHECK(s >= 0, "prims::reshape: negative size in shape {} (prims infer no sizes)", shape);
    numel *= s;
  }
  KILN_CHECK(numel == a.numel(), "prims::reshape: shape {} has {} elements, the input {} has {}", shape, numel,
             a.sizes(), a.numel());
  return view(clone(a, MemoryFormat::Contiguous), shape);
}

Tensor collapse(const Tensor& a, int64_t start, int64_t end) {
  return collapse_view(clone(a, MemoryFormat::Contiguous), start, end);
}

Tensor cat(std::span<const Tensor> tensors, int64_t dim) {
  KILN_CHECK(!tensors.empty(), "prims::cat: expects at least one tensor");
  check_dim(dim, tensors[0].dim(), "cat", "dim");
  for (const auto& t : tensors) {
    KILN_CHECK_TYPE(t.dtype() == tensors[0].dtype(), "prims::cat: tensors must have one dtype, got {} and {}",
                    dtype_name(tensors[0].dtype()), dtype_name(t.dtype()));
  }
  return kiln::cat(tensors, dim);
}

// ---- Reductions (no keepdim; an empty dim list reduces nothing)

std::vector<int64_t> reduction_dims(const Tensor& inp, std::optional<IntArrayRef> dims, std::string_view prim) {
  std::vector<int64_t> out;
  if (!dims) {
    for (int64_t d = 0; d < inp.dim(); ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : *dims) {
    check_dim(d, std::max<int64_t>(inp.dim(), 1), prim, "dim");
    out.push_back(d);
  }
  return out;
}

Tensor sum(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<DType> output_dtype) {
  auto d = reduction_dims(inp, dims, "sum");
  DType out = output_dtype.value_or(inp.dtype());
  if (d.empty() && inp.dim() > 0) return to(inp, out);
  return kiln::sum(inp, IntArrayRef(d), false, out);
}

Tensor prod(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<DType> output_dtype) {
  auto d = reduction_dims(inp, dims, "prod");
  DType out = output_dtype.value_or(inp.dtype());
  if (inp.dim() == 0) return kiln::prod(inp, out);
  Tensor x = to(inp, out);
  std::sort(d.rbegin(), d.rend());
  for (int64_t dim : d) x = kiln::prod(x, dim, false, out);
  return x;
}

Tensor extremum(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<DType> output_dtype, bool max) {
  std::string_view prim = max ? "amax" : "amin";
  KILN_CHECK_TYPE(!output_dtype || *output_dtype == inp.dtype(),
                  "prims::{}: output_dtype {} differs from the input's {}", prim, dtype_name(*output_dtype),
                  dtype_name(inp.dtype()));
  auto d = reduction_dims(inp, dims, prim);
  if (d.empty() && inp.dim() > 0) return clone(inp);
  return max ? kiln::amax(inp, IntArrayRef(d), false) : kiln::amin(inp, IntArrayRef(d), false);
}
Tensor amax(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<DType> output_dtype) {
  return extremum(inp, dims, output_dtype, true);
}
Tensor amin(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<DType> output_dtype) {
  return extremum(inp, dims, output_dtype, false);
}

Tensor var(const Tensor& inp, std::optional<IntArrayRef> dims, std::optional<double> correction,
           std::optional<DType> output_dtype) {
  KILN_CHECK_TYPE(is_floating(inp.dtype()), "prims::var: needs a floating point input, got {}",
                  dtype_name(inp.dtype()));
  auto d = reduction_dims(inp, dims, "var");
  Tensor v = kiln::var(inp, IntArrayRef(d), Scalar(correction.value_or(1.0)), false);
  return output_dtype ? to(v, *output_dtype) : v;
}

// ---- Creation (factories run on Meta during traces: the device argument names the real one)

Tensor iota(int64_t length, int64_t start, int64_t step, DType dtype, Device device, bool /*requires_grad*/) {
  KILN_CHECK_TYPE(!is_floating(dtype) && dtype != DType::Bool, "prims::iota: needs an integer dtype, got {}",
                  dtype_name(dtype));
  KILN_CHECK(length >= 0 && step != 0, "prims::iota: length {} must be >= 0 and step {} nonzero", length, step);
  // start + i * step in int64 (wrapping past the dtype's range), then cast.
  Tensor i = arange(0, length, 1, TensorOptions(DType::Int64).device(device));
  return to(add(mul(i, Scalar(step)), Scalar(start)), dtype);
}

Tensor empty_strided(IntArrayRef shape, IntArrayRef strides, DType dtype, Device device, bool /*requires_grad*/) {
  return kiln::empty_strided(shape, strides, TensorOptions(dtype).device(device));
}

Tensor full(IntArrayRef shape, const Scalar& value, DType dtype, Device device, bool /*requires_grad*/) {
  return kiln::full(shape, value, TensorOptions(dtype).device(device));
}

Tensor scalar_tensor(const Scalar& s, std::optional<DType> dtype, std::optional<Device> device) {
  return kiln::scalar_tensor(s, TensorOptions(dtype.value_or(DType::Float32)).device(device.value_or(kCPU)));
}

Tensor uniform(IntArrayRef shape, const Scalar& low, const Scalar& high, DType dtype, Device device,
               const Value& /*generator*/) {
  Tensor u = rand(shape, TensorOptions(dtype).device(device));
  return add(mul(u, Scalar(high.to<double>() - low.to<double>())), low);
}

Tensor normal(IntArrayRef shape, const Scalar& mean, const Scalar& std, DType dtype, Device device,
              bool /*requires_grad*/, const Value& /*generator*/) {
  Tensor n = randn(shape, TensorOptions(dtype).device(device));
  return add(mul(n, std), mean);
}

// Factories get the Meta key directly during a trace: there the device argument (the device the
// traced program runs on) is replaced by meta, so nothing is allocated.
template <auto Fn>
void def_factory(Registry& r, std::string_view op) {
  def_kernel<Fn>(r, op, DispatchKey::CPU);
  std::vector<size_t> device_args;
  const auto& args = r.get(op)->schema().arguments;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].type.base == BaseType::Device) device_args.push_back(i);
  }
  r.set_kernel(op, DispatchKey::Meta, [kernel = kiln::detail::boxed<Fn>(), device_args](Stack& stack) {
    for (size_t i : device_args) stack.at(i) = Value(kMeta);
    kernel(stack);
  });
}

const KernelRegistrar kRegister([](Registry& r) {
  def_every_backend<&broadcast_in_dim>(r, "prims::broadcast_in_dim");
  def_every_backend<&collapse_view>(r, "prims::collapse_view");
  def_every_backend<&slice>(r, "prims::slice");
  def_every_backend<&split_dim>(r, "prims::split_dim");
  def_every_backend<&squeeze>(r, "prims::squeeze");
  def_every_backend<&transpose>(r, "prims::transpose");
  def_every_backend<&view_of>(r, "prims::view_of");
  def_every_backend<&as_strided>(r, "prims::as_strided");
  for (DispatchKey k : {DispatchKey::Meta, DispatchKey::CPU}) {
    r.set_kernel("prims::reshape", k, kiln::detail::boxed<&reshape>());
    r.set_kernel("prims::collapse", k, kiln::detail::boxed<&collapse>());
    r.set_kernel("prims::cat", k, kiln::detail::boxed<&cat>());
    r.set_kernel("prims::sum", k, kiln::detail::boxed<&sum>());
    r.set_kernel("prims::prod", k, kiln::detail::boxed<&prod>());
    r.set_kernel("prims::amax", k, kiln::detail::boxed<&amax>());
    r.set_kernel("prims::amin", k, kiln::detail::boxed<&amin>());
    r.set_kernel("prims::var", k, kiln::detail::boxed<&var>());
  }
  def_factory<&iota>(r, "prims::iota");
  def_factory<&empty_strided>(r, "prims::empty_strided");
  def_factory<&full>(r, "prims::full");
  def_factory<&scalar_tensor>(r, "prims::scalar_tensor");
  def_factory<&uniform>(r, "prims::uniform");
  def_factory<&normal>(r, "prims::normal");
});

}  // namespace
}  // namespace kiln::kernels
