// Compound Tensor-method ops PyTorch programs call and torch.export's default IR keeps: the other
// `to` overloads and type_as, the `new_*` factories (the new tensor takes self's dtype and device
// unless told), the Python operators (`a & b` is aten::__and__), and dropout, which is the identity
// in eval mode (so are its feature and alpha variants).
#include <cmath>

#include "kiln/core/device_hooks.h"
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

// self itself when it has the dtype, device and layout asked for and no copy is asked, as PyTorch's
// `to`; else a copy.
Tensor to_like(const Tensor& self, DType dtype, Device device, bool copy, std::optional<MemoryFormat> memory_format) {
  bool layout_kept = !memory_format || *memory_format == MemoryFormat::Preserve ||
                     (*memory_format == MemoryFormat::Contiguous && self.is_contiguous()) ||
                     (*memory_format == MemoryFormat::ChannelsLast && self.is_channels_last());
  if (self.dtype() == dtype && self.device() == device && !copy && layout_kept) return self;
  return _to_copy(self, TensorOptions(dtype).device(device), memory_format);
}

Tensor to_device(const Tensor& self, Device device, DType dtype, bool, bool copy,
                 std::optional<MemoryFormat> memory_format) {
  return to_like(self, dtype, resolve_device(device, "to"), copy, memory_format);
}

Tensor to_other(const Tensor& self, const Tensor& other, bool, bool copy, std::optional<MemoryFormat> memory_format) {
  return to_like(self, other.dtype(), other.device(), copy, memory_format);
}

Tensor type_as_impl(const Tensor& self, const Tensor& other) {
  return to_like(self, other.dtype(), other.device(), false, std::nullopt);
}

TensorOptions options_like(const Tensor& self, std::optional<DType> dtype, std::optional<Device> device) {
  return TensorOptions(dtype.value_or(self.dtype())).device(device.value_or(self.device()));
}

Tensor new_empty_impl(const Tensor& self, IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>,
                      std::optional<Device> device, std::optional<bool>) {
  return empty(size, options_like(self, dtype, device));
}

Tensor new_zeros_impl(const Tensor& self, IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>,
                      std::optional<Device> device, std::optional<bool>) {
  return zeros(size, options_like(self, dtype, device));
}

Tensor new_ones_impl(const Tensor& self, IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>,
                     std::optional<Device> device, std::optional<bool>) {
  return ones(size, options_like(self, dtype, device));
}

Tensor new_full_impl(const Tensor& self, IntArrayRef size, const Scalar& fill_value, std::optional<DType> dtype,
                     std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  return full(size, fill_value, options_like(self, dtype, device));
}

Tensor new_empty_strided_impl(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<DType> dtype,
                              std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  return empty_strided(size, stride, options_like(self, dtype, device));
}

Tensor and_tensor(const Tensor& self, const Tensor& other) { return bitwise_and(self, other); }
Tensor and_scalar(const Tensor& self, const Scalar& other) { return bitwise_and(self, other); }
Tensor or_tensor(const Tensor& self, const Tensor& other) { return bitwise_or(self, other); }
Tensor or_scalar(const Tensor& self, const Scalar& other) { return bitwise_or(self, other); }
Tensor xor_tensor(const Tensor& self, const Tensor& other) { return bitwise_xor(self, other); }
Tensor xor_scalar(const Tensor& self, const Scalar& other) { return bitwise_xor(self, other); }

// Unary plus: self itself, refused for bool as Python's `+` on a bool tensor is.
Tensor positive_impl(const Tensor& self) {
  KILN_CHECK_TYPE(self.dtype() != DType::Bool, "positive: the `+` operator, on a bool tensor is not supported");
  return self;
}

// The input itself in eval mode (or with p = 0), as PyTorch's; in training, native_dropout's values.
Tensor dropout_impl(const Tensor& input, double p, bool train) {
  KILN_CHECK(p >= 0 && p <= 1, "dropout: dropout probability has to be between 0 and 1, but got {}", p);
  if (!train || p == 0 || input.numel() == 0) return input;
  return std::get<0>(
      detail::call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::native_dropout"), input, p, std::optional<bool>(true)));
}

// The dropout variants, the input itself in eval (or with p = 0): feature_dropout zeroes whole
// channels (a mask of [N, C, 1, ...]); alpha_dropout keeps the mean and variance of a SELU network's
// activations (dropped elements become -alpha', then an affine a x + b); feature_alpha_dropout both.
Tensor dropout_variant(const Tensor& input, double p, bool train, bool feature, bool alpha, std::string_view op) {
  KILN_CHECK(p >= 0 && p <= 1, "{}: dropout probability has to be between 0 and 1, but got {}", op, p);
  if (!train || p == 0 || input.numel() == 0) return input;
  KILN_CHECK(!feature || input.dim() >= 2, "{}: Feature dropout requires at least 2 dimensions in the input, got {}",
             op, input.describe());
  std::vector<int64_t> noise_sizes = input.sizes().vec();
  for (size_t d = 2; feature && d < noise_sizes.size(); ++d) noise_sizes[d] = 1;
  TensorOptions o = TensorOptions(input.dtype()).device(input.device());
  if (p == 1) return mul(input, zeros({}, o));
  Tensor keep = to(lt(rand(noise_sizes, o), Scalar(1 - p)), input.dtype());
  if (!alpha) return mul(input, div(keep, Scalar(1 - p)));
  constexpr double kAlpha = 1.7580993408473766;
  double a = 1.0 / std::sqrt((kAlpha * kAlpha * p + 1) * (1 - p));
  Tensor b = add(mul(sub(keep, Scalar(1)), Scalar(kAlpha * a)), Scalar(kAlpha * a * p));
  Tensor scaled = mul(input, mul(keep, Scalar(a)));
  return add(scaled, b);
}
Tensor feature_dropout_impl(const Tensor& input, double p, bool train) {
  return dropout_variant(input, p, train, true, false, "feature_dropout");
}
Tensor alpha_dropout_impl(const Tensor& input, double p, bool train) {
  return dropout_variant(input, p, train, false, true, "alpha_dropout");
}
Tensor feature_alpha_dropout_impl(const Tensor& input, double p, bool train) {
  return dropout_variant(input, p, train, true, true, "feature_alpha_dropout");
}

// dropout's gradient: grad * mask * scale.
Tensor native_dropout_backward_impl(const Tensor& grad_output, const Tensor& mask, double scale) {
  Tensor kept = mul(grad_output, to(mask, grad_output.dtype()));
  return mul(kept, Scalar(scale));
}

// An uninitialized tensor whose dims lie in memory in the order `physical_layout` (outermost first).
Tensor empty_permuted_impl(IntArrayRef size, IntArrayRef physical_layout, std::optional<DType> dtype,
                           std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  KILN_CHECK(size.size() == physical_layout.size(),
             "empty_permuted: Number of dimensions in size does not match the length of the physical_layout; "
             "size {}, physical_layout {}",
             size.vec(), physical_layout.vec());
  std::vector<int64_t> strides(size.size(), 0);
  std::vector<bool> seen(size.size(), false);
  int64_t step = 1;
  for (size_t k = physical_layout.size(); k-- > 0;) {
    int64_t d = physical_layout[k];
    KILN_CHECK(d >= 0 && d < static_cast<int64_t>(size.size()) && !seen[static_cast<size_t>(d)],
               "empty_permuted: physical_layout {} is not a permutation of the dims", physical_layout.vec());
    seen[static_cast<size_t>(d)] = true;
    strides[static_cast<size_t>(d)] = step;
    step *= std::max<int64_t>(size[static_cast<size_t>(d)], 1);
  }
  return empty_strided(size, strides,
                       TensorOptions(dtype.value_or(default_float_dtype())).device(device.value_or(Device())));
}

// What torch.export records of a tensor's metadata: checked, nothing computed (a trace records no op).
void assert_tensor_metadata(const Tensor& a, std::optional<IntArrayRef> size, std::optional<IntArrayRef> stride,
                            std::optional<DType> dtype, std::optional<Device> device, std::optional<Layout> layout) {
  KILN_CHECK(!size || a.sizes().equals(*size), "_assert_tensor_metadata: tensor sizes mismatch! expected {}, got {}",
             size->vec(), a.sizes().vec());
  KILN_CHECK(!stride || a.strides().equals(*stride),
             "_assert_tensor_metadata: tensor strides mismatch! expected {}, got {}", stride->vec(), a.strides().vec());
  KILN_CHECK_TYPE(!dtype || a.dtype() == *dtype, "_assert_tensor_metadata: tensor dtype mismatch! expected {}, got {}",
                  dtype_name(*dtype), dtype_name(a.dtype()));
  KILN_CHECK(!device || resolve_device(*device, "_assert_tensor_metadata") == a.device(),
             "_assert_tensor_metadata: tensor device mismatch! expected {}, got {}", *device, a.device());
  KILN_CHECK(!layout || *layout == Layout::Strided,
             "_assert_tensor_metadata: tensor layout mismatch! kiln's tensors are strided");
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::_assert_tensor_metadata", kiln::detail::boxed<&assert_tensor_metadata>());
  r.set_compound_kernel("aten::to.device", kiln::detail::boxed<&to_device>());
  r.set_compound_kernel("aten::to.other", kiln::detail::boxed<&to_other>());
  r.set_compound_kernel("aten::type_as", kiln::detail::boxed<&type_as_impl>());
  r.set_compound_kernel("aten::new_empty", kiln::detail::boxed<&new_empty_impl>());
  r.set_compound_kernel("aten::new_zeros", kiln::detail::boxed<&new_zeros_impl>());
  r.set_compound_kernel("aten::new_ones", kiln::detail::boxed<&new_ones_impl>());
  r.set_compound_kernel("aten::new_full", kiln::detail::boxed<&new_full_impl>());
  r.set_compound_kernel("aten::new_empty_strided", kiln::detail::boxed<&new_empty_strided_impl>());
  r.set_compound_kernel("aten::__and__.Tensor", kiln::detail::boxed<&and_tensor>());
  r.set_compound_kernel("aten::__and__.Scalar", kiln::detail::boxed<&and_scalar>());
  r.set_compound_kernel("aten::__or__.Tensor", kiln::detail::boxed<&or_tensor>());
  r.set_compound_kernel("aten::__or__.Scalar", kiln::detail::boxed<&or_scalar>());
  r.set_compound_kernel("aten::__xor__.Tensor", kiln::detail::boxed<&xor_tensor>());
  r.set_compound_kernel("aten::__xor__.Scalar", kiln::detail::boxed<&xor_scalar>());
  r.set_compound_kernel("aten::dropout", kiln::detail::boxed<&dropout_impl>());
  r.set_compound_kernel("aten::native_dropout_backward", kiln::detail::boxed<&native_dropout_backward_impl>());
  r.set_compound_kernel("aten::empty_permuted", kiln::detail::boxed<&empty_permuted_impl>());
  r.set_compound_kernel("aten::feature_dropout", kiln::detail::boxed<&feature_dropout_impl>());
  r.set_compound_kernel("aten::alpha_dropout", kiln::detail::boxed<&alpha_dropout_impl>());
  r.set_compound_kernel("aten::feature_alpha_dropout", kiln::detail::boxed<&feature_alpha_dropout_impl>());
  r.set_compound_kernel("aten::positive", kiln::detail::boxed<&positive_impl>());
});

}  // namespace
}  // namespace kiln::decomp
