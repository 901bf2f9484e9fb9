// Compound factories: zeros, ones and their *_like forms are full / full_like; arange without a
// start or step is arange.start_step.
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

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::zeros", kiln::detail::boxed<&zeros>());
  r.set_compound_kernel("aten::ones", kiln::detail::boxed<&ones>());
  r.set_compound_kernel("aten::zeros_like", kiln::detail::boxed<&zeros_like>());
  r.set_compound_kernel("aten::ones_like", kiln::detail::boxed<&ones_like>());
  r.set_compound_kernel("aten::arange", kiln::detail::boxed<&arange_end>());
  r.set_compound_kernel("aten::arange.start", kiln::detail::boxed<&arange_start>());
});

}  // namespace
}  // namespace kiln::decomp
