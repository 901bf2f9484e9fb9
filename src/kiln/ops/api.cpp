// The typed API: each function boxes its arguments in schema order and calls the dispatcher.
#include "kiln/ops/api.h"

#include <cstring>

#include "kiln/ops/boxing.h"

namespace kiln {

using detail::call;
constexpr std::nullopt_t kNone = std::nullopt;

// ---- Factories
Tensor empty(IntArrayRef size, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::empty.memory_format"), size, o.dtype_, kNone, o.device_, kNone, kNone);
}
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::empty_strided"), size, stride, o.dtype_, kNone, o.device_, kNone);
}
Tensor empty_like(const Tensor& self, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::empty_like"), self, o.dtype_, kNone, o.device_, kNone, kNone);
}
Tensor full(IntArrayRef size, const Scalar& v, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::full"), size, v, o.dtype_, kNone, o.device_, kNone);
}
Tensor full_like(const Tensor& self, const Scalar& v, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::full_like"), self, v, o.dtype_, kNone, o.device_, kNone, kNone);
}
Tensor zeros(IntArrayRef size, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::zeros"), size, o.dtype_, kNone, o.device_, kNone);
}
Tensor ones(IntArrayRef size, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::ones"), size, o.dtype_, kNone, o.device_, kNone);
}
Tensor zeros_like(const Tensor& self, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::zeros_like"), self, o.dtype_, kNone, o.device_, kNone, kNone);
}
Tensor ones_like(const Tensor& self, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::ones_like"), self, o.dtype_, kNone, o.device_, kNone, kNone);
}
Tensor arange(const Scalar& end, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::arange"), end, o.dtype_, kNone, o.device_, kNone);
}
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::arange.start_step"), start, end, step, o.dtype_, kNone, o.device_, kNone);
}
Tensor scalar_tensor(const Scalar& s, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::scalar_tensor"), s, o.dtype_, kNone, o.device_, kNone);
}
Tensor rand(IntArrayRef size, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::rand"), size, o.dtype_, kNone, o.device_, kNone);
}
Tensor randn(IntArrayRef size, TensorOptions o) {
  return call<Tensor>(KILN_OP("aten::randn"), size, o.dtype_, kNone, o.device_, kNone);
}

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

// ---- Unary pointwise
#define KILN_UNARY(name) \
  Tensor name(const Tensor& self) { return call<Tensor>(KILN_OP("aten::" #name), self); }
KILN_UNARY(abs)
KILN_UNARY(neg)
KILN_UNARY(exp)
KILN_UNARY(expm1)
KILN_UNARY(log)
KILN_UNARY(log1p)
KILN_UNARY(log2)
KILN_UNARY(log10)
KILN_UNARY(sqrt)
KILN_UNARY(rsqrt)
KILN_UNARY(reciprocal)
KILN_UNARY(sin)
KILN_UNARY(cos)
KILN_UNARY(tan)
KILN_UNARY(asin)
KILN_UNARY(acos)
KILN_UNARY(atan)
KILN_UNARY(sinh)
KILN_UNARY(cosh)
KILN_UNARY(tanh)
KILN_UNARY(asinh)
KILN_UNARY(acosh)
KILN_UNARY(atanh)
KILN_UNARY(sigmoid)
KILN_UNARY(erf)
KILN_UNARY(ceil)
KILN_UNARY(floor)
KILN_UNARY(round)
KILN_UNARY(trunc)
KILN_UNARY(sign)
KILN_UNARY(relu)
KILN_UNARY(isnan)
KILN_UNARY(isinf)
KILN_UNARY(bitwise_not)
KILN_UNARY(logical_not)
#undef KILN_UNARY
Tensor gelu(const Tensor& self, std::string_view approximate) {
  return call<Tensor>(KILN_OP("aten::gelu"), self, approximate);
}

// ---- Binary pointwise
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call<Tensor>(KILN_OP("aten::add.Tensor"), a, b, alpha);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return call<Tensor>(KILN_OP("aten::add.Scalar"), a, b, alpha);
}
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  return call<Tensor>(KILN_OP("aten::sub.Tensor"), a, b, alpha);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) {
  return call<Tensor>(KILN_OP("aten::sub.Scalar"), a, b, alpha);
}
Tensor mul(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::mul.Tensor"), a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return call<Tensor>(KILN_OP("aten::mul.Scalar"), a, b); }
Tensor div(const Tensor& a, const Tensor& b, std::optional<std::string_view> mode) {
  if (!mode) return call<Tensor>(KILN_OP("aten::div.Tensor"), a, b);
  return call<Tensor>(KILN_OP("aten::div.Tensor_mode"), a, b, mode);
}
Tensor div(const Tensor& a, const Scalar& b, std::optional<std::string_view> mode) {
  if (!mode) return call<Tensor>(KILN_OP("aten::div.Scalar"), a, b);
  return call<Tensor>(KILN_OP("aten::div.Scalar_mode"), a, b, mode);
}
Tensor pow(const Tensor& a, const Tensor& e) { return call<Tensor>(KILN_OP("aten::pow.Tensor_Tensor"), a, e); }
Tensor pow(const Tensor& a, const Scalar& e) { return call<Tensor>(KILN_OP("aten::pow.Tensor_Scalar"), a, e); }
Tensor pow(const Scalar& a, const Tensor& e) { return call<Tensor>(KILN_OP("aten::pow.Scalar"), a, e); }
Tensor atan2(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::atan2"), a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::maximum"), a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::minimum"), a, b); }
Tensor logical_and(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::logical_and"), a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::logical_or"), a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::logical_xor"), a, b); }

#define KILN_BINARY_TS(name)                                                                                      \
  Tensor name(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::" #name ".Tensor"), a, b); } \
  Tensor name(const Tensor& a, const Scalar& b) { return call<Tensor>(KILN_OP("aten::" #name ".Scalar"), a, b); }
KILN_BINARY_TS(fmod)
KILN_BINARY_TS(remainder)
KILN_BINARY_TS(bitwise_and)
KILN_BINARY_TS(bitwise_or)
KILN_BINARY_TS(bitwise_xor)
KILN_BINARY_TS(eq)
KILN_BINARY_TS(ne)
KILN_BINARY_TS(lt)
KILN_BINARY_TS(le)
KILN_BINARY_TS(gt)
KILN_BINARY_TS(ge)
#undef KILN_BINARY_TS

Tensor where(const Tensor& c, const Tensor& a, const Tensor& b) {
  return call<Tensor>(KILN_OP("aten::where.self"), c, a, b);
}
Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max) {
  return call<Tensor>(KILN_OP("aten::clamp"), self, min, max);
}
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max) {
  return call<Tensor>(KILN_OP("aten::clamp.Tensor"), self, min, max);
}

// ---- Reductions
Tensor sum(const Tensor& self, std::optional<DType> dtype) { return call<Tensor>(KILN_OP("aten::sum"), self, dtype); }
Tensor sum(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  return call<Tensor>(KILN_OP("aten::sum.dim_IntList"), self, dim, keepdim, dtype);
}
Tensor mean(const Tensor& self, std::optional<DType> dtype) { return call<Tensor>(KILN_OP("aten::mean"), self, dtype); }
Tensor mean(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim, std::optional<DType> dtype) {
  return call<Tensor>(KILN_OP("aten::mean.dim"), self, dim, keepdim, dtype);
}
Tensor prod(const Tensor& self, std::optional<DType> dtype) { return call<Tensor>(KILN_OP("aten::prod"), self, dtype); }
Tensor prod(const Tensor& self, int64_t dim, bool keepdim, std::optional<DType> dtype) {
  return call<Tensor>(KILN_OP("aten::prod.dim_int"), self, dim, keepdim, dtype);
}
Tensor amax(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::amax"), self, dim, keepdim);
}
Tensor amin(const Tensor& self, IntArrayRef dim, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::amin"), self, dim, keepdim);
}
Tensor argmax(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::argmax"), self, dim, keepdim);
}
Tensor argmin(const Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::argmin"), self, dim, keepdim);
}
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim) {
  return call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::max.dim"), self, dim, keepdim);
}
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim) {
  return call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::min.dim"), self, dim, keepdim);
}
Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, std::optional<Scalar> correction, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::var.correction"), self, dim, correction, keepdim);
}
std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    std::optional<Scalar> correction, bool keepdim) {
  return call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::var_mean.correction"), self, dim, correction, keepdim);
}
Tensor any(const Tensor& self) { return call<Tensor>(KILN_OP("aten::any"), self); }
Tensor any(const Tensor& self, int64_t dim, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::any.dim"), self, dim, keepdim);
}
Tensor any(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim) {
  return call<Tensor>(KILN_OP("aten::any.dims"), self, dim, keepdim);
}

// ---- Normalization
Tensor _softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  return call<Tensor>(KILN_OP("aten::_softmax"), self, dim, half_to_float);
}
Tensor _log_softmax(const Tensor& self, int64_t dim, bool half_to_float) {
  return call<Tensor>(KILN_OP("aten::_log_softmax"), self, dim, half_to_float);
}
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps) {
  return call<std::tuple<Tensor, Tensor, Tensor>>(KILN_OP("aten::native_layer_norm"), input, normalized_shape, weight,
                                                  bias, eps);
}

// ---- Compound ops
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias) {
  return call<Tensor>(KILN_OP("aten::linear"), input, weight, bias);
}
Tensor matmul(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::matmul"), a, b); }
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups) {
  return call<Tensor>(KILN_OP("aten::convolution"), input, weight, bias, stride, padding, dilation, transposed,
                      output_padding, groups);
}
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
              IntArrayRef padding, IntArrayRef dilation, int64_t groups) {
  return call<Tensor>(KILN_OP("aten::conv2d"), input, weight, bias, stride, padding, dilation, groups);
}
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum, double eps) {
  return call<Tensor>(KILN_OP("aten::batch_norm"), input, weight, bias, running_mean, running_var, training, momentum,
                      eps, false);
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
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask, double dropout_p, bool is_causal,
                                    std::optional<double> scale, bool enable_gqa) {
  return call<Tensor>(KILN_OP("aten::scaled_dot_product_attention"), query, key, value, attn_mask, dropout_p, is_causal,
                      scale, enable_gqa);
}
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(const Tensor& query, const Tensor& key,
                                                                       const Tensor& value, double dropout_p,
                                                                       bool is_causal,
                                                                       const std::optional<Tensor>& attn_mask,
                                                                       std::optional<double> scale) {
  return call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::_scaled_dot_product_flash_attention_for_cpu"), query, key,
                                          value, dropout_p, is_causal, attn_mask, scale);
}
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index) {
  return call<Tensor>(KILN_OP("aten::gather"), self, dim, index, false);
}
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index) {
  return call<Tensor>(KILN_OP("aten::index_select"), self, dim, index);
}
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  return call<Tensor>(KILN_OP("aten::scatter_add"), self, dim, index, src);
}
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx) {
  return call<Tensor>(KILN_OP("aten::embedding"), weight, indices, padding_idx, false, false);
}
Tensor flip(const Tensor& self, IntArrayRef dims) { return call<Tensor>(KILN_OP("aten::flip"), self, dims); }
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return call<Tensor>(KILN_OP("aten::cumsum"), self, dim, dtype);
}
Tensor repeat(const Tensor& self, IntArrayRef repeats) { return call<Tensor>(KILN_OP("aten::repeat"), self, repeats); }
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value) {
  return call<Tensor>(KILN_OP("aten::constant_pad_nd"), self, pad, value);
}
Tensor hardtanh(const Tensor& self, const Scalar& min_val, const Scalar& max_val) {
  return call<Tensor>(KILN_OP("aten::hardtanh"), self, min_val, max_val);
}
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope) {
  return call<Tensor>(KILN_OP("aten::leaky_relu"), self, negative_slope);
}
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride, IntArrayRef padding, bool ceil_mode,
                  bool count_include_pad, std::optional<int64_t> divisor_override) {
  return call<Tensor>(KILN_OP("aten::avg_pool2d"), self, kernel_size, stride,
                      padding.empty() ? IntArrayRef{0} : padding, ceil_mode, count_include_pad, divisor_override);
}
Tensor _adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size) {
  return call<Tensor>(KILN_OP("aten::_adaptive_avg_pool2d"), self, output_size);
}
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride,
                                                   IntArrayRef padding, IntArrayRef dilation, bool ceil_mode) {
  return call<std::tuple<Tensor, Tensor>>(KILN_OP("aten::max_pool2d_with_indices"), self, kernel_size, stride,
                                          padding.empty() ? IntArrayRef{0} : padding,
                                          dilation.empty() ? IntArrayRef{1} : dilation, ceil_mode);
}
Tensor elu(const Tensor& self, const Scalar& alpha, const Scalar& scale, const Scalar& input_scale) {
  return call<Tensor>(KILN_OP("aten::elu"), self, alpha, scale, input_scale);
}
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  return call<Tensor>(KILN_OP("aten::layer_norm"), input, normalized_shape, weight, bias, eps, true);
}
Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return call<Tensor>(KILN_OP("aten::softmax.int"), self, dim, dtype);
}
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype) {
  return call<Tensor>(KILN_OP("aten::log_softmax.int"), self, dim, dtype);
}
Tensor silu(const Tensor& self) { return call<Tensor>(KILN_OP("aten::silu"), self); }
Tensor square(const Tensor& self) { return call<Tensor>(KILN_OP("aten::square"), self); }
Tensor clamp_min(const Tensor& self, const Scalar& min) { return call<Tensor>(KILN_OP("aten::clamp_min"), self, min); }
Tensor clamp_max(const Tensor& self, const Scalar& max) { return call<Tensor>(KILN_OP("aten::clamp_max"), self, max); }
Tensor triu(const Tensor& self, int64_t diagonal) { return call<Tensor>(KILN_OP("aten::triu"), self, diagonal); }
Tensor tril(const Tensor& self, int64_t diagonal) { return call<Tensor>(KILN_OP("aten::tril"), self, diagonal); }
Tensor flatten(const Tensor& self, int64_t start_dim, int64_t end_dim) {
  return call<Tensor>(KILN_OP("aten::flatten.using_ints"), self, start_dim, end_dim);
}

// ---- Matrix products
Tensor mm(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::mm"), a, b); }
Tensor bmm(const Tensor& a, const Tensor& b) { return call<Tensor>(KILN_OP("aten::bmm"), a, b); }
Tensor addmm(const Tensor& self, const Tensor& m1, const Tensor& m2, const Scalar& beta, const Scalar& alpha) {
  return call<Tensor>(KILN_OP("aten::addmm"), self, m1, m2, beta, alpha);
}

// ---- Views
Tensor view(const Tensor& self, IntArrayRef size) { return call<Tensor>(KILN_OP("aten::view"), self, size); }
Tensor permute(const Tensor& self, IntArrayRef dims) { return call<Tensor>(KILN_OP("aten::permute"), self, dims); }
Tensor expand(const Tensor& self, IntArrayRef size, bool implicit) {
  return call<Tensor>(KILN_OP("aten::expand"), self, size, implicit);
}
Tensor slice(const Tensor& self, int64_t dim, std::optional<int64_t> start, std::optional<int64_t> end, int64_t step) {
  return call<Tensor>(KILN_OP("aten::slice.Tensor"), self, dim, start, end, step);
}
Tensor select(const Tensor& self, int64_t dim, int64_t index) {
  return call<Tensor>(KILN_OP("aten::select.int"), self, dim, index);
}
Tensor squeeze(const Tensor& self) { return call<Tensor>(KILN_OP("aten::squeeze"), self); }
Tensor squeeze(const Tensor& self, int64_t dim) { return call<Tensor>(KILN_OP("aten::squeeze.dim"), self, dim); }
Tensor squeeze(const Tensor& self, IntArrayRef dims) { return call<Tensor>(KILN_OP("aten::squeeze.dims"), self, dims); }
Tensor unsqueeze(const Tensor& self, int64_t dim) { return call<Tensor>(KILN_OP("aten::unsqueeze"), self, dim); }
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride, std::optional<int64_t> offset) {
  return call<Tensor>(KILN_OP("aten::as_strided"), self, size, stride, offset);
}
Tensor alias(const Tensor& self) { return call<Tensor>(KILN_OP("aten::alias"), self); }
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef sizes, int64_t dim) {
  return call<std::vector<Tensor>>(KILN_OP("aten::split_with_sizes"), self, sizes, dim);
}
Tensor diagonal(const Tensor& self, int64_t offset, int64_t dim1, int64_t dim2) {
  return call<Tensor>(KILN_OP("aten::diagonal"), self, offset, dim1, dim2);
}
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1) {
  return call<Tensor>(KILN_OP("aten::transpose.int"), self, dim0, dim1);
}
Tensor t(const Tensor& self) { return call<Tensor>(KILN_OP("aten::t"), self); }
Tensor reshape(const Tensor& self, IntArrayRef shape) { return call<Tensor>(KILN_OP("aten::reshape"), self, shape); }
Tensor contiguous(const Tensor& self, MemoryFormat mf) { return call<Tensor>(KILN_OP("aten::contiguous"), self, mf); }

// ---- Copies
Tensor cat(std::span<const Tensor> tensors, int64_t dim) { return call<Tensor>(KILN_OP("aten::cat"), tensors, dim); }
Tensor clone(const Tensor& self, std::optional<MemoryFormat> mf) {
  return call<Tensor>(KILN_OP("aten::clone"), self, mf);
}
Tensor copy(const Tensor& self, const Tensor& src) { return call<Tensor>(KILN_OP("aten::copy"), self, src, false); }
Tensor& copy_(Tensor& self, const Tensor& src) {
  call<Tensor>(KILN_OP("aten::copy_"), self, src, false);
  return self;
}
Tensor _to_copy(const Tensor& self, TensorOptions o, std::optional<MemoryFormat> mf) {
  return call<Tensor>(KILN_OP("aten::_to_copy"), self, o.dtype_, kNone, o.device_, kNone, false, mf);
}
Tensor to(const Tensor& self, DType dtype) {
  return call<Tensor>(KILN_OP("aten::to.dtype"), self, dtype, false, false, kNone);
}
Tensor fill(const Tensor& self, const Scalar& value) { return call<Tensor>(KILN_OP("aten::fill.Scalar"), self, value); }
Scalar _local_scalar_dense(const Tensor& self) { return call<Scalar>(KILN_OP("aten::_local_scalar_dense"), self); }
Tensor _fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided) {
  return call<Tensor>(KILN_OP("aten::_fft_r2c"), self, dim, normalization, onesided);
}
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size) {
  return call<Tensor>(KILN_OP("aten::_fft_c2r"), self, dim, normalization, last_dim_size);
}
int64_t sym_size(const Tensor& self, int64_t dim) { return call<int64_t>(KILN_OP("aten::sym_size.int"), self, dim); }
int64_t sym_stride(const Tensor& self, int64_t dim) {
  return call<int64_t>(KILN_OP("aten::sym_stride.int"), self, dim);
}
int64_t sym_numel(const Tensor& self) { return call<int64_t>(KILN_OP("aten::sym_numel"), self); }
int64_t sym_storage_offset(const Tensor& self) { return call<int64_t>(KILN_OP("aten::sym_storage_offset"), self); }
bool sym_is_contiguous(const Tensor& self, MemoryFormat memory_format) {
  return call<bool>(KILN_OP("aten::sym_is_contiguous"), self, memory_format);
}

Tensor to_meta(const Tensor& t) {
  if (t.device().is_meta()) return t;
  auto elements = static_cast<int64_t>(t.storage()->nbytes() / t.element_size());
  Tensor m = empty_tensor({elements}, t.dtype(), kMeta).view_with(t.sizes(), t.strides(), t.storage_offset());
  m.impl()->wrapped_number = t.is_wrapped_number();
  return m;
}

}  // namespace kiln
