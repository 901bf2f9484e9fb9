// Compound factories: zeros, ones and their *_like forms are full / full_like; arange without a
// start or step is arange.start_step; eye compares two aranges; linspace and logspace follow
// PyTorch's CPU kernel (the first half of the points counted from start, the rest back from end).
#include <cmath>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

TensorOptions options(std::optional<DType> dtype, std::optional<Device> device) {
  TensorOptions o;
  o.dtype_ = dtype;
  o.device_ = device;
  return o;
}

Tensor zeros(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
             std::optional<bool>) {
  return full(size, 0, options(dtype.value_or(default_float_dtype()), device));
}
Tensor ones(IntArrayRef size, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
            std::optional<bool>) {
  return full(size, 1, options(dtype.value_or(default_float_dtype()), device));
}
Tensor zeros_like(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
                  std::optional<bool>, std::optional<MemoryFormat>) {
  return full_like(self, 0, options(dtype, device));
}
Tensor ones_like(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
                 std::optional<bool>, std::optional<MemoryFormat>) {
  return full_like(self, 1, options(dtype, device));
}
Tensor arange_end(const Scalar& end, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
                  std::optional<bool>) {
  return arange(0, end, 1, options(dtype, device));
}
Tensor arange_start(const Scalar& start, const Scalar& end, std::optional<DType> dtype, std::optional<Layout>,
                    std::optional<Device> device, std::optional<bool>) {
  return arange(start, end, 1, options(dtype, device));
}

Tensor eye_m(int64_t n, int64_t m, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
             std::optional<bool>) {
  KILN_CHECK(n >= 0, "eye: n must be greater or equal to 0, got {}", n);
  KILN_CHECK(m >= 0, "eye: m must be greater or equal to 0, got {}", m);
  TensorOptions o = options(dtype.value_or(default_float_dtype()), device);
  Tensor rows = unsqueeze(arange(0, n, 1, options(DType::Int64, device)), 1);
  return to(eq(rows, arange(0, m, 1, options(DType::Int64, device))), *o.dtype_);
}
Tensor eye_n(int64_t n, std::optional<DType> dtype, std::optional<Layout> layout, std::optional<Device> device,
             std::optional<bool> pin) {
  return eye_m(n, n, dtype, layout, device, pin);
}

// `steps` points from start to end: start + step i for the first steps / 2, end - step (steps - 1 - i)
// after, with step = (end - start) / (steps - 1) rounded to the dtype (integers step in float64 and
// truncate).
Tensor spaced(double start, double end, int64_t steps, DType dtype, std::optional<Device> device, std::string_view op) {
  KILN_CHECK(steps >= 0, "{}: number of steps must be non-negative, got {}", op, steps);
  DType c = is_floating(dtype) ? dtype : DType::Float64;
  if (c == DType::Float32 || is_reduced_float(c)) {
    start = static_cast<float>(start), end = static_cast<float>(end);
  }
  double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
  if (c == DType::Float32 || is_reduced_float(c)) step = static_cast<float>(step);
  Tensor i = arange(0, steps, 1, options(c, device));
  Tensor from_start = add(mul(i, Scalar(step)), Scalar(start));
  Tensor back = neg(sub(i, Scalar(static_cast<double>(steps - 1))));                   // steps - 1 - i
  Tensor from_end = neg(sub(mul(back, Scalar(step)), Scalar(end)));                    // end - step (steps - 1 - i)
  return where(lt(i, Scalar(std::max<int64_t>(steps / 2, 1))), from_start, from_end);  // one point: start
}

Tensor linspace_impl(const Scalar& start, const Scalar& end, int64_t steps, std::optional<DType> dtype,
                     std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  DType r = dtype.value_or(default_float_dtype());
  return to(spaced(start.to_double(), end.to_double(), steps, r, device, "linspace"), r);
}
Tensor logspace_impl(const Scalar& start, const Scalar& end, int64_t steps, double base, std::optional<DType> dtype,
                     std::optional<Layout>, std::optional<Device> device, std::optional<bool>) {
  DType r = dtype.value_or(default_float_dtype());
  return to(pow(Scalar(base), spaced(start.to_double(), end.to_double(), steps, r, device, "logspace")), r);
}

// The Tensor_Tensor overloads: 0-d start and end, read as numbers (on the meta device, where a
// program's shapes are computed, only the shape is known: `steps` elements).
double number_of(const Tensor& t, std::string_view op, std::string_view which) {
  KILN_CHECK(t.dim() == 0, "{}(): {} must be a 0-dimensional tensor, got {}", op, which, t.describe());
  return to(t, DType::Float64).item<double>();
}
Tensor linspace_tensors(const Tensor& start, const Tensor& end, int64_t steps, std::optional<DType> dtype,
                        std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin) {
  if (start.device().is_meta() || end.device().is_meta()) {
    return empty({steps}, options(dtype.value_or(default_float_dtype()), Device(DeviceType::Meta)));
  }
  return linspace_impl(Scalar(number_of(start, "linspace", "start")), Scalar(number_of(end, "linspace", "end")), steps,
                       dtype, layout, device, pin);
}
Tensor logspace_tensors(const Tensor& start, const Tensor& end, int64_t steps, double base, std::optional<DType> dtype,
                        std::optional<Layout> layout, std::optional<Device> device, std::optional<bool> pin) {
  if (start.device().is_meta() || end.device().is_meta()) {
    return empty({steps}, options(dtype.value_or(default_float_dtype()), Device(DeviceType::Meta)));
  }
  return logspace_impl(Scalar(number_of(start, "logspace", "start")), Scalar(number_of(end, "logspace", "end")), steps,
                       base, dtype, layout, device, pin);
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::zeros", kiln::detail::boxed<&zeros>());
  r.set_compound_kernel("aten::ones", kiln::detail::boxed<&ones>());
  r.set_compound_kernel("aten::zeros_like", kiln::detail::boxed<&zeros_like>());
  r.set_compound_kernel("aten::ones_like", kiln::detail::boxed<&ones_like>());
  r.set_compound_kernel("aten::arange", kiln::detail::boxed<&arange_end>());
  r.set_compound_kernel("aten::arange.start", kiln::detail::boxed<&arange_start>());
  r.set_compound_kernel("aten::eye", kiln::detail::boxed<&eye_n>());
  r.set_compound_kernel("aten::eye.m", kiln::detail::boxed<&eye_m>());
  r.set_compound_kernel("aten::linspace", kiln::detail::boxed<&linspace_impl>());
  r.set_compound_kernel("aten::logspace", kiln::detail::boxed<&logspace_impl>());
  r.set_compound_kernel("aten::linspace.Tensor_Tensor", kiln::detail::boxed<&linspace_tensors>());
  r.set_compound_kernel("aten::logspace.Tensor_Tensor", kiln::detail::boxed<&logspace_tensors>());
});

}  // namespace
}  // namespace kiln::decomp
