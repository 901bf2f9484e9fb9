// The typed C++ API: one function per op overload, each a call through the dispatcher.
// Names, argument order and defaults follow PyTorch's schemas (see `kiln ops`).
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <tuple>
#include <vector>

#include "kiln/core/generator.h"
#include "kiln/ops/tensor.h"

namespace kiln {

// dtype and device of a new tensor: zeros({2, 3}, DType::Float64), zeros({2}, TensorOptions().device(kMeta)).
struct TensorOptions {
  std::optional<DType> dtype_;
  std::optional<Device> device_;
  TensorOptions() = default;
  TensorOptions(DType d) : dtype_(d) {}    // NOLINT
  TensorOptions(Device d) : device_(d) {}  // NOLINT
  TensorOptions dtype(DType d) const {
    auto o = *this;
    o.dtype_ = d;
    return o;
  }
  TensorOptions device(Device d) const {
    auto o = *this;
    o.device_ = d;
    return o;
  }
};

// ---- Factories
Tensor empty(IntArrayRef size, TensorOptions options = {});
Tensor empty_strided(IntArrayRef size, IntArrayRef stride, TensorOptions options = {});
Tensor empty_like(const Tensor& self, TensorOptions options = {});
Tensor full(IntArrayRef size, const Scalar& fill_value, TensorOptions options = {});
Tensor full_like(const Tensor& self, const Scalar& fill_value, TensorOptions options = {});
Tensor zeros(IntArrayRef size, TensorOptions options = {});
Tensor ones(IntArrayRef size, TensorOptions options = {});
Tensor zeros_like(const Tensor& self, TensorOptions options = {});
Tensor ones_like(const Tensor& self, TensorOptions options = {});
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {});
Tensor scalar_tensor(const Scalar& s, TensorOptions options = {});
Tensor rand(IntArrayRef size, TensorOptions options = {});
Tensor randn(IntArrayRef size, TensorOptions options = {});
// A CPU tensor holding a copy of `data`, shaped `size` (1-D when empty). Not an op: a constructor.
template <class T>
Tensor from_vector(const std::vector<T>& data, IntArrayRef size = {});

// ---- Unary pointwise
Tensor abs(const Tensor& self);
Tensor neg(const Tensor& self);
Tensor exp(const Tensor& self);
Tensor expm1(const Tensor& self);
Tensor log(const Tensor& self);
Tensor log1p(const Tensor& self);
Tensor log2(const Tensor& self);
Tensor log10(const Tensor& self);
Tensor sqrt(const Tensor& self);
Tensor rsqrt(const Tensor& self);
Tensor reciprocal(const Tensor& self);
Tensor sin(const Tensor& self);
Tensor cos(const Tensor& self);
Tensor tan(const Tensor& self);
Tensor asin(const Tensor& self);
Tensor acos(const Tensor& self);
Tensor atan(const Tensor& self);
Tensor sinh(const Tensor& self);
Tensor cosh(const Tensor& self);
Tensor tanh(const Tensor& self);
Tensor asinh(const Tensor& self);
Tensor acosh(const Tensor& self);
Tensor atanh(const Tensor& self);
Tensor sigmoid(const Tensor& self);
Tensor erf(const Tensor& self);
Tensor ceil(const Tensor& self);
Tensor floor(const Tensor& self);
Tensor round(const Tensor& self);
Tensor trunc(const Tensor& self);
Tensor sign(const Tensor& self);
Tensor relu(const Tensor& self);
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& self, std::string_view approximate = "none");
Tensor isnan(const Tensor& self);
Tensor isinf(const Tensor& self);
Tensor bitwise_not(const Tensor& self);
Tensor logical_not(const Tensor& self);

// ---- Binary pointwise (Tensor and Scalar forms)
Tensor add(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor add(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Tensor& other, const Scalar& alpha = 1);
Tensor sub(const Tensor& self, const Scalar& other, const Scalar& alpha = 1);
Tensor mul(const Tensor& self, const Tensor& other);
Tensor mul(const Tensor& self, const Scalar& other);
// rounding_mode: none (true division), "trunc" or "floor".
Tensor div(const Tensor& self, const Tensor& other, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor div(const Tensor& self, const Scalar& other, std::optional<std::string_view> rounding_mode = std::nullopt);
Tensor pow(const Tensor& self, const Tensor& exponent);
Tensor pow(const Tensor& self, const Scalar& exponent);
Tensor pow(const Scalar& self, const Tensor& exponent);
Tensor maximum(const Tensor& self, const Tensor& other);
Tensor minimum(const Tensor& self, const Tensor& other);
Tensor fmod(const Tensor& self, const Tensor& other);
Tensor fmod(const Tensor& self, const Scalar& other);
Tensor remainder(const Tensor& self, const Tensor& other);
Tensor remainder(const Tensor& self, const Scalar& other);
Tensor atan2(const Tensor& self, const Tensor& other);
Tensor bitwise_and(const Tensor& self, const Tensor& other);
Tensor bitwise_and(const Tensor& self, const Scalar& other);
Tensor bitwise_or(const Tensor& self, const Tensor& other);
Tensor bitwise_or(const Tensor& self, const Scalar& other);
Tensor bitwise_xor(const Tensor& self, const Tensor& other);
Tensor bitwise_xor(const Tensor& self, const Scalar& other);
Tensor logical_and(const Tensor& self, const Tensor& other);
Tensor logical_or(const Tensor& self, const Tensor& other);
Tensor logical_xor(const Tensor& self, const Tensor& other);
Tensor eq(const Tensor& self, const Tensor& other);
Tensor eq(const Tensor& self, const Scalar& other);
Tensor ne(const Tensor& self, const Tensor& other);
Tensor ne(const Tensor& self, const Scalar& other);
Tensor lt(const Tensor& self, const Tensor& other);
Tensor lt(const Tensor& self, const Scalar& other);
Tensor le(const Tensor& self, const Tensor& other);
Tensor le(const Tensor& self, const Scalar& other);
Tensor gt(const Tensor& self, const Tensor& other);
Tensor gt(const Tensor& self, const Scalar& other);
Tensor ge(const Tensor& self, const Tensor& other);
Tensor ge(const Tensor& self, const Scalar& other);
Tensor where(const Tensor& condition, const Tensor& self, const Tensor& other);
Tensor clamp(const Tensor& self, std::optional<Scalar> min, std::optional<Scalar> max);
Tensor clamp(const Tensor& self, const std::optional<Tensor>& min, const std::optional<Tensor>& max);

// ---- Reductions
Tensor sum(const Tensor& self, std::optional<DType> dtype = std::nullopt);
Tensor sum(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim = false,
           std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& self, std::optional<DType> dtype = std::nullopt);
Tensor mean(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim = false,
            std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& self, std::optional<DType> dtype = std::nullopt);
Tensor prod(const Tensor& self, int64_t dim, bool keepdim = false, std::optional<DType> dtype = std::nullopt);
Tensor amax(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor amin(const Tensor& self, IntArrayRef dim = {}, bool keepdim = false);
Tensor argmax(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& self, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
std::tuple<Tensor, Tensor> max(const Tensor& self, int64_t dim, bool keepdim = false);
std::tuple<Tensor, Tensor> min(const Tensor& self, int64_t dim, bool keepdim = false);
// correction = 1 is Bessel's correction (unbiased); dim = nullopt reduces everything.
Tensor var(const Tensor& self, std::optional<IntArrayRef> dim, std::optional<Scalar> correction = std::nullopt,
           bool keepdim = false);
std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::optional<IntArrayRef> dim,
                                    std::optional<Scalar> correction = std::nullopt, bool keepdim = false);
Tensor any(const Tensor& self);
Tensor any(const Tensor& self, int64_t dim, bool keepdim = false);
Tensor any(const Tensor& self, std::optional<IntArrayRef> dim, bool keepdim = false);
// Braced dim lists, `sum(x, {-1}, true)`: without these a braced list reaches the optional
// IntArrayRef through a temporary that dies before the call runs (the dims read as garbage).
inline Tensor sum(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false,
                  std::optional<DType> dtype = std::nullopt) {
  return sum(self, std::optional<IntArrayRef>(IntArrayRef(dim)), keepdim, dtype);
}
inline Tensor mean(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false,
                   std::optional<DType> dtype = std::nullopt) {
  return mean(self, std::optional<IntArrayRef>(IntArrayRef(dim)), keepdim, dtype);
}
inline Tensor var(const Tensor& self, std::initializer_list<int64_t> dim,
                  std::optional<Scalar> correction = std::nullopt, bool keepdim = false) {
  return var(self, std::optional<IntArrayRef>(IntArrayRef(dim)), std::move(correction), keepdim);
}
inline std::tuple<Tensor, Tensor> var_mean(const Tensor& self, std::initializer_list<int64_t> dim,
                                           std::optional<Scalar> correction = std::nullopt, bool keepdim = false) {
  return var_mean(self, std::optional<IntArrayRef>(IntArrayRef(dim)), std::move(correction), keepdim);
}
inline Tensor any(const Tensor& self, std::initializer_list<int64_t> dim, bool keepdim = false) {
  return any(self, std::optional<IntArrayRef>(IntArrayRef(dim)), keepdim);
}

// ---- Normalization
Tensor _softmax(const Tensor& self, int64_t dim, bool half_to_float = false);
Tensor _log_softmax(const Tensor& self, int64_t dim, bool half_to_float = false);
// Returns (output, mean, rstd).
std::tuple<Tensor, Tensor, Tensor> native_layer_norm(const Tensor& input, IntArrayRef normalized_shape,
                                                     const std::optional<Tensor>& weight,
                                                     const std::optional<Tensor>& bias, double eps);

// ---- Compound ops (decomposed into Core ATen; see decomp/)
Tensor linear(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt);
// PyTorch's matmul: dot, mv, mm or broadcast batched mm by the operands' ranks.
Tensor matmul(const Tensor& self, const Tensor& other);
Tensor layer_norm(const Tensor& input, IntArrayRef normalized_shape, const std::optional<Tensor>& weight = std::nullopt,
                  const std::optional<Tensor>& bias = std::nullopt, double eps = 1e-5);
Tensor softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor log_softmax(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor silu(const Tensor& self);
Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, IntArrayRef stride,
                   IntArrayRef padding, IntArrayRef dilation, bool transposed, IntArrayRef output_padding,
                   int64_t groups);
Tensor conv2d(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias = std::nullopt,
              IntArrayRef stride = {1, 1}, IntArrayRef padding = {0, 0}, IntArrayRef dilation = {1, 1},
              int64_t groups = 1);
// Batch normalization over dim 1 (channels): batch statistics when training (updating the
// running statistics in place when given), running statistics otherwise.
Tensor batch_norm(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  const std::optional<Tensor>& running_mean, const std::optional<Tensor>& running_var, bool training,
                  double momentum = 0.1, double eps = 1e-5);
// Loss reductions, as at::Reduction numbers them.
enum class Reduction : int64_t { None = 0, Mean = 1, Sum = 2 };
Tensor nll_loss(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                Reduction reduction = Reduction::Mean, int64_t ignore_index = -100);
Tensor cross_entropy(const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight = std::nullopt,
                     Reduction reduction = Reduction::Mean, int64_t ignore_index = -100, double label_smoothing = 0.0);
Tensor scaled_dot_product_attention(const Tensor& query, const Tensor& key, const Tensor& value,
                                    const std::optional<Tensor>& attn_mask = std::nullopt, double dropout_p = 0.0,
                                    bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    bool enable_gqa = false);
// PyTorch's CPU flash attention: (output, logsumexp over the keys, [B, H, L]); 4-D query, key and
// value of one floating dtype and head size, an additive mask of the query's dtype.
std::tuple<Tensor, Tensor> _scaled_dot_product_flash_attention_for_cpu(
    const Tensor& query, const Tensor& key, const Tensor& value, double dropout_p = 0.0, bool is_causal = false,
    const std::optional<Tensor>& attn_mask = std::nullopt, std::optional<double> scale = std::nullopt);
Tensor gather(const Tensor& self, int64_t dim, const Tensor& index);
Tensor index_select(const Tensor& self, int64_t dim, const Tensor& index);
Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
Tensor embedding(const Tensor& weight, const Tensor& indices, int64_t padding_idx = -1);
Tensor flip(const Tensor& self, IntArrayRef dims);
Tensor cumsum(const Tensor& self, int64_t dim, std::optional<DType> dtype = std::nullopt);
Tensor repeat(const Tensor& self, IntArrayRef repeats);
Tensor constant_pad_nd(const Tensor& self, IntArrayRef pad, const Scalar& value = 0);
Tensor hardtanh(const Tensor& self, const Scalar& min_val = -1, const Scalar& max_val = 1);
Tensor leaky_relu(const Tensor& self, const Scalar& negative_slope = 0.01);
Tensor elu(const Tensor& self, const Scalar& alpha = 1, const Scalar& scale = 1, const Scalar& input_scale = 1);
Tensor avg_pool2d(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {}, IntArrayRef padding = {},
                  bool ceil_mode = false, bool count_include_pad = true,
                  std::optional<int64_t> divisor_override = std::nullopt);
Tensor _adaptive_avg_pool2d(const Tensor& self, IntArrayRef output_size);
std::tuple<Tensor, Tensor> max_pool2d_with_indices(const Tensor& self, IntArrayRef kernel_size, IntArrayRef stride = {},
                                                   IntArrayRef padding = {}, IntArrayRef dilation = {},
                                                   bool ceil_mode = false);
Tensor square(const Tensor& self);
Tensor clamp_min(const Tensor& self, const Scalar& min);
Tensor clamp_max(const Tensor& self, const Scalar& max);
Tensor triu(const Tensor& self, int64_t diagonal = 0);
Tensor tril(const Tensor& self, int64_t diagonal = 0);
Tensor flatten(const Tensor& self, int64_t start_dim = 0, int64_t end_dim = -1);

// ---- Matrix products (BLAS)
Tensor mm(const Tensor& self, const Tensor& mat2);
Tensor bmm(const Tensor& self, const Tensor& mat2);
Tensor addmm(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
             const Scalar& alpha = 1);

// ---- Views (share storage with their input)
Tensor view(const Tensor& self, IntArrayRef size);
Tensor permute(const Tensor& self, IntArrayRef dims);
Tensor expand(const Tensor& self, IntArrayRef size, bool implicit = false);
Tensor slice(const Tensor& self, int64_t dim = 0, std::optional<int64_t> start = std::nullopt,
             std::optional<int64_t> end = std::nullopt, int64_t step = 1);
Tensor select(const Tensor& self, int64_t dim, int64_t index);
Tensor squeeze(const Tensor& self);
Tensor squeeze(const Tensor& self, int64_t dim);
Tensor squeeze(const Tensor& self, IntArrayRef dims);
Tensor unsqueeze(const Tensor& self, int64_t dim);
Tensor as_strided(const Tensor& self, IntArrayRef size, IntArrayRef stride,
                  std::optional<int64_t> storage_offset = std::nullopt);
Tensor alias(const Tensor& self);
std::vector<Tensor> split_with_sizes(const Tensor& self, IntArrayRef split_sizes, int64_t dim = 0);
Tensor diagonal(const Tensor& self, int64_t offset = 0, int64_t dim1 = 0, int64_t dim2 = 1);
Tensor transpose(const Tensor& self, int64_t dim0, int64_t dim1);
Tensor t(const Tensor& self);
// A view when the strides allow one, else a copy.
Tensor reshape(const Tensor& self, IntArrayRef shape);
Tensor contiguous(const Tensor& self, MemoryFormat memory_format = MemoryFormat::Contiguous);

// ---- Copies
Tensor cat(std::span<const Tensor> tensors, int64_t dim = 0);
Tensor clone(const Tensor& self, std::optional<MemoryFormat> memory_format = std::nullopt);
// Functional copy: a new tensor shaped like self holding src (broadcast, converted).
Tensor copy(const Tensor& self, const Tensor& src);
Tensor& copy_(Tensor& self, const Tensor& src);
Tensor _to_copy(const Tensor& self, TensorOptions options = {},
                std::optional<MemoryFormat> memory_format = std::nullopt);
Tensor to(const Tensor& self, DType dtype);
Tensor fill(const Tensor& self, const Scalar& value);
Scalar _local_scalar_dense(const Tensor& self);
// Real FFTs over `dim` (normalization 0: none, 1: 1/sqrt(n), 2: 1/n): float32/float64 to
// complex64/complex128 (the last dim halved + 1 when onesided), and back to `last_dim_size` reals.
Tensor _fft_r2c(const Tensor& self, IntArrayRef dim, int64_t normalization, bool onesided);
Tensor _fft_c2r(const Tensor& self, IntArrayRef dim, int64_t normalization, int64_t last_dim_size);
// Metadata reads (the sym_* ops): constants in a trace, as shapes are static.
int64_t sym_size(const Tensor& self, int64_t dim);
int64_t sym_stride(const Tensor& self, int64_t dim);
int64_t sym_numel(const Tensor& self);
int64_t sym_storage_offset(const Tensor& self);
bool sym_is_contiguous(const Tensor& self, MemoryFormat memory_format = MemoryFormat::Contiguous);
// The same geometry (dtype, sizes, strides, storage offset, wrapped-number flag) on the meta
// device, with no data: what traces and shape checks run on.
Tensor to_meta(const Tensor& t);

}  // namespace kiln
