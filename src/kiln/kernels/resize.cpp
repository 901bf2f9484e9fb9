// resize_: gives a tensor new sizes in place, with contiguous (or channels_last) strides, growing
// its storage when the new sizes reach past it (keeping the bytes there; new elements are
// uninitialized) and never shrinking it. Same sizes and no memory format keep the strides.
// Every tensor sharing the storage sees a grown storage's new memory, as in PyTorch.
// resize, its functional form (what a trace records for resize_, and what PyTorch's functionalized
// graphs call): a new tensor of the new geometry holding the leading elements of self's storage
// from its offset, as resize_ would leave them in place; any past the storage are uninitialized.
#include <algorithm>
#include <cstring>

#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"

namespace kiln::kernels {
namespace {

// The strides resize_ gives sizes `size` in `memory_format`, after its checks.
Shape resized_strides(IntArrayRef size, std::optional<MemoryFormat> memory_format, std::string_view op) {
  KILN_CHECK(memory_format != MemoryFormat::Preserve, "{}: unsupported memory format preserve_format", op);
  KILN_CHECK(memory_format != MemoryFormat::ChannelsLast || size.size() == 4,
             "{}: required rank 4 tensor to use channels_last format, got size {}", op, size);
  return memory_format == MemoryFormat::ChannelsLast ? channels_last_strides(size) : contiguous_strides(size);
}

Tensor resize_(const Tensor& self, IntArrayRef size, std::optional<MemoryFormat> memory_format) {
  int64_t numel = checked_numel(size, "resize_");
  Shape strides = resized_strides(size, memory_format, "resize_");
  TensorImpl& t = *self.impl();
  if (self.sizes().equals(size) && !memory_format) return self;
  int64_t span = storage_span(size, strides);
  if (span > 0) {
    int64_t bytes = 0;
    KILN_CHECK(!__builtin_mul_overflow(t.storage_offset + span, static_cast<int64_t>(element_size(t.dtype)), &bytes),
               "resize_: size {} at storage offset {} needs more bytes than fit in int64", size, t.storage_offset);
    t.storage->grow(static_cast<size_t>(bytes));
  }
  t.sizes = Shape(size.begin(), size.end());
  t.strides = std::move(strides);
  t.numel = numel;
  return self;
}

Tensor resize(const Tensor& self, IntArrayRef size, std::optional<MemoryFormat> memory_format) {
  checked_numel(size, "resize");
  Shape strides = self.sizes().equals(size) && !memory_format ? self.strides().shape()
                                                              : resized_strides(size, memory_format, "resize");
  Tensor out = meta::allocate({self.dtype(), Shape(size.begin(), size.end()), strides}, self.device());
  if (self.device().is_meta()) return out;
  const size_t item = element_size(self.dtype()), from = static_cast<size_t>(self.storage_offset()) * item;
  const size_t have = self.storage()->nbytes() > from ? self.storage()->nbytes() - from : 0;
  const size_t bytes = std::min(have, static_cast<size_t>(storage_span(size, strides)) * item);
  if (bytes > 0) std::memcpy(out.data_ptr(), static_cast<const char*>(self.storage()->data()) + from, bytes);
  return out;
}

const KernelRegistrar kRegister([](Registry& r) {
  def_every_backend<&resize_>(r, "aten::resize_");
  def_meta_and_cpu<&resize>(r, "aten::resize");
});

}  // namespace
}  // namespace kiln::kernels
