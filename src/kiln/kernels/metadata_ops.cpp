// The sym_* ops: a tensor's sizes, strides, element count, storage offset and contiguity, read from
// its metadata. They touch no data, so one kernel serves every backend. kiln's shapes are static,
// so a trace reads them as constants (tag `metadata`); PyTorch's export emits them for symbolic
// sizes.
#include "kiln/kernels/register.h"

namespace kiln::kernels {
namespace {

// The dim of a size or stride query: PyTorch raises for a 0-dim tensor, where most ops wrap 0 and -1.
int64_t queried_dim(const Tensor& self, int64_t dim, std::string_view op) {
  KILN_CHECK_INDEX(self.dim() > 0, "{}: dimension specified as {} but tensor has no dimensions", op, dim);
  return wrap_dim(dim, self.dim(), op);
}

int64_t sym_size(const Tensor& self, int64_t dim) { return self.sizes()[queried_dim(self, dim, "sym_size.int")]; }

int64_t sym_stride(const Tensor& self, int64_t dim) { return self.strides()[queried_dim(self, dim, "sym_stride.int")]; }

int64_t sym_numel(const Tensor& self) { return self.numel(); }

int64_t sym_storage_offset(const Tensor& self) { return self.storage_offset(); }

// channels_last asks for NHWC packing, from the strides alone (an empty tensor too, unlike plain
// contiguity, which holds for every empty tensor: PyTorch's two rules); false below 4 dims.
bool sym_is_contiguous(const Tensor& self, MemoryFormat format) {
  if (format != MemoryFormat::ChannelsLast) return self.is_contiguous();
  if (self.dim() != 4) return false;
  int64_t expected = 1;
  for (int64_t d : {1, 3, 2, 0}) {  // C fastest, then W, H, N
    int64_t size = self.sizes()[d];
    if (size == 1) continue;
    if (self.strides()[d] != expected) return false;
    expected *= size;
  }
  return true;
}

const KernelRegistrar kRegister([](Registry& r) {
  def_every_backend<&sym_size>(r, "aten::sym_size.int");
  def_every_backend<&sym_stride>(r, "aten::sym_stride.int");
  def_every_backend<&sym_numel>(r, "aten::sym_numel");
  def_every_backend<&sym_storage_offset>(r, "aten::sym_storage_offset");
  def_every_backend<&sym_is_contiguous>(r, "aten::sym_is_contiguous");
});

}  // namespace
}  // namespace kiln::kernels
