// The hand-written part of the typed API (api.h); the rest is generated from the op table.
#include "kiln/ops/api.h"

#include "kiln/ops/boxing.h"

namespace kiln {

using detail::call;

template <class T>
Tensor from_vector(const std::vector<T>& data, IntArrayRef size) {
  Shape shape = size.empty() ? Shape{static_cast<int64_t>(data.size())} : size.shape();
  KILN_CHECK(checked_numel(shape, "from_vector") == static_cast<int64_t>(data.size()),
             "from_vector: {} values cannot fill size {}", data.size(), shape);
  Tensor t = empty_tensor(shape, dtype_of<T>, kCPU);
  T* out = t.data_ptr<T>();
  for (size_t i = 0; i < data.size(); ++i) out[i] = data[i];
  return t;
}
template Tensor from_vector(const std::vector<bool>&, IntArrayRef);
template Tensor from_vector(const std::vector<uint8_t>&, IntArrayRef);
template Tensor from_vector(const std::vector<int8_t>&, IntArrayRef);
template Tensor from_vector(const std::vector<int16_t>&, IntArrayRef);
template Tensor from_vector(const std::vector<int32_t>&, IntArrayRef);
template Tensor from_vector(const std::vector<int64_t>&, IntArrayRef);
template Tensor from_vector(const std::vector<Half>&, IntArrayRef);
template Tensor from_vector(const std::vector<BFloat16>&, IntArrayRef);
template Tensor from_vector(const std::vector<float>&, IntArrayRef);
template Tensor from_vector(const std::vector<double>&, IntArrayRef);

Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  if (!mode) return call<Tensor>(KILN_OP("aten::div.Tensor"), a, b);
  return call<Tensor>(KILN_OP("aten::div.Tensor_mode"), a, b, mode);
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> mode) {
  if (!mode) return call<Tensor>(KILN_OP("aten::div.Scalar"), a, b);
  return call<Tensor>(KILN_OP("aten::div.Scalar_mode"), a, b, mode);
}

Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, Reduction reduction,
                int64_t ignore_index) {
  return call<Tensor>(KILN_OP("aten::nll_loss"), self, target, weight, static_cast<int64_t>(reduction), ignore_index);
}
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight, Reduction reduction,
                     int64_t ignore_index, double label_smoothing) {
  return call<Tensor>(KILN_OP("aten::cross_entropy_loss"), self, target, weight, static_cast<int64_t>(reduction),
                      ignore_index, label_smoothing);
}

Tensor to_meta(const Tensor& t) {
  if (t.device().is_meta()) return t;
  auto elements = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  Tensor m = empty_tensor({elements}, t.dtype(), kMeta).view_with(t.sizes(), t.strides(), t.storage_offset());
  m.impl()->wrapped_number = t.is_wrapped_number();
  return m;
}

}  // namespace kiln
