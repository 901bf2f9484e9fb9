// resize_: gives a tensor new sizes in place, with contiguous (or channels_last) strides, growing
// its storage when the new sizes reach past it (keeping the bytes there; new elements are
// uninitialized) and never shrinking it. Same sizes and no memory format keep the strides.
// Every tensor sharing the storage sees a grown storage's new memory, as in PyTorch.
#include "kiln/kernels/register.h"

namespace kiln::kernels {
namespace {

Tensor resize_(const Tensor& self, IntArrayRef size, std::optional<MemoryFormat> memory_format) {
  int64_t numel = checked_numel(size, "resize_");
  KILN_CHECK(memory_format != MemoryFormat::Preserve, "resize_: unsupported memory format preserve_format");
  KILN_CHECK(memory_format != MemoryFormat::ChannelsLast || size.size() == 4,
             "resize_: required rank 4 tensor to use channels_last format, got size {}", size);
  TensorImpl& t = *self.impl();
  if (self.sizes().equals(size) && !memory_format) return self;
  Shape strides = memory_format == MemoryFormat::ChannelsLast ? channels_last_strides(size) : contiguous_strides(size);
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

const KernelRegistrar kRegister([](Registry& r) { def_every_backend<&resize_>(r, "aten::resize_"); });

}  // namespace
}  // namespace kiln::kernels
