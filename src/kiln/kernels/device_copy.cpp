// Copies across devices and the kernels every device with data shares: `_to_copy` (`.to(device)`,
// `.cpu()`, `.to(dtype)`), `copy_` (between any two devices), reading one element (`item()`), and
// the factories that only allocate.
// Bytes move between devices as they lie (core/device_hooks.h); a conversion of dtype or layout
// runs on the host. A conversion between two places on one GPU goes through the host too until the
// GPU has its own copy kernel (the issue of eager CUDA kernels). Its registrar must run before
// inplace.cpp's, which gives every in-place op still without a CPU kernel a generic one: libkiln's
// objects are linked, and so constructed, in path order.
#include <cstring>
#include <type_traits>

#include "kiln/core/device_hooks.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/meta/factory.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::kernels {
namespace {

// A CPU tensor with `t`'s sizes, strides and values: `t` itself on the CPU, else the bytes its view
// spans, copied to the host.
Tensor on_host(const Tensor& t, std::string_view what) {
  if (t.device().is_cpu()) return t;
  Tensor host = empty_strided_tensor(t.sizes(), t.strides(), t.dtype(), kCPU);
  if (t.numel() > 0) {
    auto nbytes = static_cast<size_t>(storage_span(t.sizes(), t.strides())) * element_size(t.dtype());
    copy_bytes(host.data_ptr(), kCPU, t.data_ptr(), t.device(), nbytes, what);
  }
  return host;
}

Tensor to_copy(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device> device,
               std::optional<bool>, bool, std::optional<MemoryFormat> memory_format) {
  Device target = device.value_or(self.device());
  DType dt = dtype.value_or(self.dtype());
  Tensor out = meta::allocate(meta::like_spec(self, dt, memory_format), target);
  if (out.device().is_meta()) return out;
  KILN_CHECK(!self.device().is_meta(), "_to_copy: cannot copy out of a meta tensor (it has no data)");
  if (self.device().is_cpu() && out.device().is_cpu()) {
    cpu::copy_into(out, self);
    return out;
  }
  if (out.numel() == 0) return out;
  auto nbytes = static_cast<size_t>(out.numel()) * element_size(dt);
  // The same bytes in the same places: one copy between the devices.
  if (dt == self.dtype() && self.is_non_overlapping_and_dense() && out.strides().vec() == self.strides().vec()) {
    copy_bytes(out.data_ptr(), out.device(), self.data_ptr(), self.device(), nbytes, "_to_copy");
    return out;
  }
  Tensor staged = out.device().is_cpu() ? out : empty_strided_tensor(out.sizes(), out.strides(), dt, kCPU);
  cpu::copy_into(staged, on_host(self, "_to_copy"));
  if (!staged.is_same(out)) {
    copy_bytes(out.data_ptr(), out.device(), staged.data_ptr(), kCPU,
               static_cast<size_t>(storage_span(out.sizes(), out.strides())) * element_size(dt), "_to_copy");
  }
  return out;
}

// copy_ within or across devices (the dispatcher lets its two tensors differ: crosses_devices_attr).
// Across devices the bytes move as they lie when self and src have the same dtype and dense layout;
// otherwise self's span is read to the host, src (broadcast) written into it there, and the span
// copied back, so the elements between a strided self's keep their values.
Tensor copy_inplace(const Tensor& self, const Tensor& src, bool) {
  meta::check_copy(self, src, "copy_");
  if (self.device().is_meta()) return self;
  KILN_CHECK(!src.device().is_meta(), "copy_: cannot copy out of a meta tensor (it has no data)");
  if (self.device().is_cpu() && src.device().is_cpu()) {
    cpu::copy_into(self, src);
    return self;
  }
  if (self.numel() == 0) return self;
  if (self.dtype() == src.dtype() && self.sizes().vec() == src.sizes().vec() &&
      self.strides().vec() == src.strides().vec() && self.is_non_overlapping_and_dense()) {
    copy_bytes(self.data_ptr(), self.device(), src.data_ptr(), src.device(),
               static_cast<size_t>(self.numel()) * element_size(self.dtype()), "copy_");
    return self;
  }
  Tensor staged = on_host(self, "copy_");
  cpu::copy_into(staged, on_host(src, "copy_"));
  if (!staged.is_same(self)) {
    copy_bytes(self.data_ptr(), self.device(), staged.data_ptr(), kCPU,
               static_cast<size_t>(storage_span(self.sizes(), self.strides())) * element_size(self.dtype()), "copy_");
  }
  return self;
}

// The Meta kernel: what a copy would be, on the meta device whatever the target (tracing runs meta
// tensors that stand for CPU or CUDA ones, and `x.to(dtype, device=cpu)` asks for the CPU).
Tensor to_copy_meta(const Tensor& self, std::optional<DType> dtype, std::optional<Layout>, std::optional<Device>,
                    std::optional<bool>, bool, std::optional<MemoryFormat> memory_format) {
  return meta::allocate(meta::like_spec(self, dtype.value_or(self.dtype()), memory_format), self.device());
}

Scalar local_scalar_dense(const Tensor& self) {
  KILN_CHECK(self.numel() == 1, "_local_scalar_dense: a Tensor with {} elements cannot be converted to Scalar",
             self.numel());
  KILN_CHECK(!self.device().is_meta(), "_local_scalar_dense: cannot read the value of a meta tensor");
  return visit_dtype(self.dtype(), [&]<class T>() {
    T v;
    copy_bytes(&v, kCPU, self.data_ptr(), self.device(), sizeof(T), "_local_scalar_dense");
    if constexpr (std::is_same_v<T, bool>) return Scalar(v);
    else if constexpr (std::is_integral_v<T>) return Scalar(static_cast<int64_t>(v));
    else return Scalar(static_cast<double>(static_cast<opmath_t<T>>(v)));
  });
}

void nothing(IntArrayRef, std::optional<DType>, std::optional<Layout>, std::optional<Device>, std::optional<bool>,
             std::optional<MemoryFormat>, const Tensor&) {}
void nothing_strided(IntArrayRef, IntArrayRef, std::optional<DType>, std::optional<Layout>, std::optional<Device>,
                     std::optional<bool>, const Tensor&) {}
void nothing_like(const Tensor&, std::optional<DType>, std::optional<Layout>, std::optional<Device>,
                  std::optional<bool>, std::optional<MemoryFormat>, const Tensor&) {}

const KernelRegistrar kRegister([](Registry& r) {
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA}) {
    def_kernel<&to_copy>(r, "aten::_to_copy", k);
    def_kernel<&local_scalar_dense>(r, "aten::_local_scalar_dense", k);
  }
  def_kernel<&to_copy_meta>(r, "aten::_to_copy", DispatchKey::Meta);
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta}) {
    def_kernel<&copy_inplace>(r, "aten::copy_", k);
  }
  crosses_devices_attr().set(r.get("aten::copy_"), true);
  def_kernel<&local_scalar_dense>(r, "aten::_local_scalar_dense", DispatchKey::Meta);
  // Allocation only.
  def_structured<&meta::empty, &nothing>(r, "aten::empty.memory_format");
  def_structured<&meta::empty_strided, &nothing_strided>(r, "aten::empty_strided");
  def_structured<&meta::empty_like, &nothing_like>(r, "aten::empty_like");
  def_structured<&meta::empty, &nothing>(r, "aten::empty.memory_format", DispatchKey::CUDA);
  def_structured<&meta::empty_strided, &nothing_strided>(r, "aten::empty_strided", DispatchKey::CUDA);
  def_structured<&meta::empty_like, &nothing_like>(r, "aten::empty_like", DispatchKey::CUDA);
});

}  // namespace
}  // namespace kiln::kernels
