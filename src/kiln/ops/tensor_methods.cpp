// Tensor's hand-written methods and its operators; the other methods are generated from the op
// table (kiln/ops/generated/methods.cpp).
#include "kiln/ops/api.h"

namespace kiln {

Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::sum(*this, std::optional<IntArrayRef>(dim), keepdim, dtype);
}
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::mean(*this, std::optional<IntArrayRef>(dim), keepdim, dtype);
}
Tensor Tensor::var(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return kiln::var(*this, std::optional<IntArrayRef>(dim), Scalar(correction), keepdim);
}
Tensor Tensor::operator[](int64_t index) const { return kiln::select(*this, 0, index); }
Tensor Tensor::cpu() const { return kiln::to(*this, TensorOptions(kCPU)); }
Tensor Tensor::cuda() const { return kiln::to(*this, TensorOptions(Device(DeviceType::CUDA))); }

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(b, a); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return add(neg(b), a); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(b, a); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace kiln
