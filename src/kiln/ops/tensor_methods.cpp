// Tensor's methods and operators: each forwards to the free function of ops/api.h.
#include "kiln/ops/api.h"
#include "kiln/ops/boxing.h"

namespace kiln {

Tensor Tensor::add(const Tensor& o, const Scalar& alpha) const { return kiln::add(*this, o, alpha); }
Tensor Tensor::add(const Scalar& o, const Scalar& alpha) const { return kiln::add(*this, o, alpha); }
Tensor Tensor::sub(const Tensor& o, const Scalar& alpha) const { return kiln::sub(*this, o, alpha); }
Tensor Tensor::sub(const Scalar& o, const Scalar& alpha) const { return kiln::sub(*this, o, alpha); }
Tensor Tensor::mul(const Tensor& o) const { return kiln::mul(*this, o); }
Tensor Tensor::mul(const Scalar& o) const { return kiln::mul(*this, o); }
Tensor Tensor::div(const Tensor& o) const { return kiln::div(*this, o); }
Tensor Tensor::div(const Scalar& o) const { return kiln::div(*this, o); }
Tensor Tensor::pow(const Tensor& e) const { return kiln::pow(*this, e); }
Tensor Tensor::pow(const Scalar& e) const { return kiln::pow(*this, e); }
Tensor Tensor::abs() const { return kiln::abs(*this); }
Tensor Tensor::neg() const { return kiln::neg(*this); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor Tensor::log() const { return kiln::log(*this); }
Tensor Tensor::sqrt() const { return kiln::sqrt(*this); }
Tensor Tensor::sigmoid() const { return kiln::sigmoid(*this); }
Tensor Tensor::tanh() const { return kiln::tanh(*this); }
Tensor Tensor::relu() const { return kiln::relu(*this); }
Tensor Tensor::clamp(std::optional<Scalar> min, std::optional<Scalar> max) const {
  return kiln::clamp(*this, min, max);
}
Tensor Tensor::eq(const Tensor& o) const { return kiln::eq(*this, o); }
Tensor Tensor::eq(const Scalar& o) const { return kiln::eq(*this, o); }
Tensor Tensor::lt(const Scalar& o) const { return kiln::lt(*this, o); }
Tensor Tensor::gt(const Scalar& o) const { return kiln::gt(*this, o); }

Tensor& Tensor::add_(const Tensor& o, const Scalar& alpha) {
  detail::call<Tensor>(KILN_OP("aten::add_.Tensor"), *this, o, alpha);
  return *this;
}
Tensor& Tensor::mul_(const Tensor& o) {
  detail::call<Tensor>(KILN_OP("aten::mul_.Tensor"), *this, o);
  return *this;
}
Tensor& Tensor::copy_(const Tensor& src) { return kiln::copy_(*this, src); }
Tensor& Tensor::fill_(const Scalar& v) {
  detail::call<Tensor>(KILN_OP("aten::fill_.Scalar"), *this, v);
  return *this;
}
Tensor& Tensor::zero_() {
  detail::call<Tensor>(KILN_OP("aten::zero_"), *this);
  return *this;
}

Tensor Tensor::sum(std::optional<DType> dtype) const { return kiln::sum(*this, dtype); }
Tensor Tensor::sum(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::sum(*this, std::optional<IntArrayRef>(dim), keepdim, dtype);
}
Tensor Tensor::mean(std::optional<DType> dtype) const { return kiln::mean(*this, dtype); }
Tensor Tensor::mean(IntArrayRef dim, bool keepdim, std::optional<DType> dtype) const {
  return kiln::mean(*this, std::optional<IntArrayRef>(dim), keepdim, dtype);
}
Tensor Tensor::amax(IntArrayRef dim, bool keepdim) const { return kiln::amax(*this, dim, keepdim); }
Tensor Tensor::amin(IntArrayRef dim, bool keepdim) const { return kiln::amin(*this, dim, keepdim); }
Tensor Tensor::argmax(std::optional<int64_t> dim, bool keepdim) const { return kiln::argmax(*this, dim, keepdim); }
Tensor Tensor::var(IntArrayRef dim, int64_t correction, bool keepdim) const {
  return kiln::var(*this, std::optional<IntArrayRef>(dim), Scalar(correction), keepdim);
}

Tensor Tensor::view(IntArrayRef size) const { return kiln::view(*this, size); }
Tensor Tensor::reshape(IntArrayRef shape) const { return kiln::reshape(*this, shape); }
Tensor Tensor::permute(IntArrayRef dims) const { return kiln::permute(*this, dims); }
Tensor Tensor::transpose(int64_t d0, int64_t d1) const { return kiln::transpose(*this, d0, d1); }
Tensor Tensor::t() const { return kiln::t(*this); }
Tensor Tensor::expand(IntArrayRef size) const { return kiln::expand(*this, size); }
Tensor Tensor::slice(int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) const {
  return kiln::slice(*this, dim, start, end, step);
}
Tensor Tensor::select(int64_t dim, int64_t index) const { return kiln::select(*this, dim, index); }
Tensor Tensor::squeeze() const { return kiln::squeeze(*this); }
Tensor Tensor::squeeze(int64_t dim) const { return kiln::squeeze(*this, dim); }
Tensor Tensor::unsqueeze(int64_t dim) const { return kiln::unsqueeze(*this, dim); }
Tensor Tensor::diagonal(int64_t offset, int64_t d1, int64_t d2) const { return kiln::diagonal(*this, offset, d1, d2); }
Tensor Tensor::as_strided(IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset) const {
  return kiln::as_strided(*this, size, stride, offset);
}
Tensor Tensor::contiguous() const { return kiln::contiguous(*this); }
Tensor Tensor::operator[](int64_t index) const { return kiln::select(*this, 0, index); }

Tensor Tensor::clone() const { return kiln::clone(*this); }
Tensor Tensor::to(DType dtype) const { return kiln::to(*this, dtype); }
Tensor Tensor::mm(const Tensor& mat2) const { return kiln::mm(*this, mat2); }
Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }
Scalar Tensor::item() const { return detail::call<Scalar>(KILN_OP("aten::item"), *this); }

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
