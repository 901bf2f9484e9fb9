// Ops whose 16-bit results follow PyTorch's own rounding points, checked bit for bit against the
// venv's PyTorch (skipped without it): log_softmax over the last dim rounds the row's sum of
// exponentials and its log to the input's dtype (PyTorch's last-dim kernel), over another dim it
// does not; kiln eager and compiled code with eager's roundings (emulate_precision_casts) give
// PyTorch's bits. A float32 output of a 16-bit input does not round. scaled_dot_product_attention's
// math formulation (3-D inputs) computes 16-bit inputs in float and rounds once, as PyTorch's.
#include <fmt/format.h>

#include <sstream>

#include "harness.h"
#include "kiln/api/compile.h"
#include "python_ref.h"

namespace kiln::testing {
namespace {

// Values spread over [-6, 6] with repeats and a few large ones: rows whose sums are not round.
std::vector<double> sample(int64_t n) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(6.0 * std::sin(0.37 * static_cast<double>(i) + 0.1 * (i % 7)));
  return v;
}

// A 16-bit tensor's elements as their raw 16-bit patterns.
std::vector<int64_t> bits(const Tensor& t) {
  Tensor c = t.contiguous();
  std::vector<int64_t> out;
  for (int64_t i = 0; i < c.numel(); ++i) out.push_back(static_cast<const uint16_t*>(c.data_ptr())[i]);
  return out;
}

// Runs `code`, which leaves a 16-bit tensor in `y`, and returns y's elements as bit patterns.
std::vector<int64_t> torch_bits(const std::string& python, const std::string& code) {
  PythonRun r =
      run_python(python, code + "print(\" \".join(str(b & 0xFFFF) for b in y.view(torch.int16).flatten().tolist()))");
  EXPECT_EQ(r.status, 0) << r.out;
  std::vector<int64_t> out;
  std::istringstream in(r.out);
  for (int64_t b; in >> b;) out.push_back(b);
  return out;
}

// PyTorch's log_softmax of `values` as a [rows, cols] tensor of `dtype` over `dim`, as bit patterns.
std::vector<int64_t> torch_log_softmax(const std::string& python, const std::vector<double>& values, int64_t rows,
                                       int64_t cols, DType dtype, int64_t dim) {
  std::string code = fmt::format(
      "import torch\nx = torch.tensor([{}], dtype=torch.float64).reshape({}, {}).to(torch.{})\n"
      "y = torch.log_softmax(x, {})\n",
      fmt::join(values, ", "), rows, cols, dtype_name(dtype), dim);
  return torch_bits(python, code);
}

TEST(TorchBits, LogSoftmaxOf16BitFloatsRoundsAsPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  const int64_t rows = 6, cols = 37;
  std::vector<double> v = sample(rows * cols);
  for (DType d : {DType::BFloat16, DType::Float16}) {
    Tensor x = from_vector<double>(v, {rows, cols}).to(d);
    for (int64_t dim : {1, 0}) {
      auto fn = [dim](const std::vector<Tensor>& in) { return std::vector<Tensor>{log_softmax(in[0], dim)}; };
      CompileOptions eager_roundings;
      eager_roundings.emulate_precision_casts = true;
      std::vector<int64_t> want = torch_log_softmax(python, v, rows, cols, d, dim);
      EXPECT_EQ(bits(fn({x})[0]), want) << dtype_name(d) << " dim " << dim << " eager";
      EXPECT_EQ(bits(compile(fn, eager_roundings)({x})[0]), want) << dtype_name(d) << " dim " << dim << " compiled";
    }
  }
}

// A float32 output of a 16-bit input (half_to_float) takes the input in float: no 16-bit rounding
// of the row's sum or its log, the same bits as the float32 log_softmax of the widened input.
TEST(TorchBits, LogSoftmaxToFloatOfA16BitInputDoesNotRound) {
  const int64_t rows = 6, cols = 37;
  Tensor x = from_vector<double>(sample(rows * cols), {rows, cols}).to(DType::BFloat16);
  Tensor y = _log_softmax(x, 1, true);
  ASSERT_EQ(y.dtype(), DType::Float32);
  Tensor want = _log_softmax(x.to(DType::Float32), 1, false);
  EXPECT_EQ(sub(y, want).abs().amax().item<double>(), 0.0);
}

// PyTorch's 3-D (math) scaled_dot_product_attention of `dtype` inputs, [2, 7, 5] queries against
// [2, 9, 5] keys and values, with a [7, 9] float mask or causal, as bit patterns.
std::vector<int64_t> torch_math_sdpa(const std::string& python, const std::vector<double>& values, DType dtype,
                                     bool causal) {
  std::string code = fmt::format(
      "import torch\nx = torch.tensor([{}], dtype=torch.float64).to(torch.{})\n"
      "q, k, v, m = x[:70].reshape(2, 7, 5), x[70:160].reshape(2, 9, 5), x[160:250].reshape(2, 9, 5), "
      "x[250:313].reshape(7, 9)\n"
      "y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=None if {} else m, is_causal={})\n",
      fmt::join(values, ", "), dtype_name(dtype), causal ? "True" : "False", causal ? "True" : "False");
  return torch_bits(python, code);
}

TEST(TorchBits, MathAttentionOf16BitInputsRoundsOnce) {
  KILN_REQUIRE_PYTHON(python);
  std::vector<double> v = sample(313);
  for (DType d : {DType::BFloat16, DType::Float16}) {
    Tensor x = from_vector<double>(v, {313}).to(d);
    Tensor q = x.slice(0, 0, 70).reshape({2, 7, 5}), k = x.slice(0, 70, 160).reshape({2, 9, 5});
    Tensor val = x.slice(0, 160, 250).reshape({2, 9, 5}), m = x.slice(0, 250, 313).reshape({7, 9});
    for (bool causal : {false, true}) {
      auto fn = [causal](const std::vector<Tensor>& in) {
        std::optional<Tensor> mask;
        if (!causal) mask = in[3];
        return std::vector<Tensor>{scaled_dot_product_attention(in[0], in[1], in[2], mask, 0.0, causal)};
      };
      CompileOptions eager_roundings;
      eager_roundings.emulate_precision_casts = true;
      std::vector<int64_t> want = torch_math_sdpa(python, v, d, causal);
      std::string where = fmt::format("{}{}", dtype_name(d), causal ? " causal" : " masked");
      EXPECT_EQ(bits(fn({q, k, val, m})[0]), want) << where << " eager";
      EXPECT_EQ(bits(compile(fn, eager_roundings)({q, k, val, m})[0]), want) << where << " compiled";
    }
  }
}

}  // namespace
}  // namespace kiln::testing
