// torch.fft's irfft, irfft2, irfftn, hfft, hfft2 and hfftn (decomp/fft.cpp), and the ops under them
// (_fft_c2c, _conj, _fft_c2r), against PyTorch 2.13 (tests/torch_cases.h): real and complex
// inputs, signal sizes that trim, every norm, several dims. Complex results are compared through a
// transform back to real values (kiln's complex tensors hold values but have no arithmetic).
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

TEST(Fft, InverseRealTransformsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 6, 5}, 1), c = to(case_input({4, 5}, 2), DType::ComplexDouble);
  std::vector<testing::TorchCase> cases = {
      {"torch.fft.irfft(inp([3,6,5],1))", {one("aten::fft_irfft", {x, Value(), int64_t{-1}, Value()})}},
      {"torch.fft.irfft(inp([3,6,5],1), n=6, dim=1, norm=\"ortho\")",
       {one("aten::fft_irfft", {x, int64_t{6}, int64_t{1}, "ortho"})}},
      // float32: PyTorch's float64 transform of the float32 input, rounded (kiln's runs in double).
      {"torch.fft.irfft(inp([3,6,5],1).float().double(), norm=\"forward\").float()",
       {one("aten::fft_irfft", {to(x, DType::Float32), Value(), int64_t{-1}, "forward"})}},
      {"torch.fft.irfft(inp([4,5],2).to(torch.complex128), 7)",
       {one("aten::fft_irfft", {c, int64_t{7}, int64_t{-1}, Value()})}},
      {"torch.fft.irfft2(inp([3,6,5],1))",
       {one("aten::fft_irfft2", {x, Value(), std::vector<int64_t>{-2, -1}, Value()})}},
      {"torch.fft.irfftn(inp([3,6,5],1), s=(5, 4), dim=(1, 2))",
       {one("aten::fft_irfftn", {x, std::vector<int64_t>{5, 4}, std::vector<int64_t>{1, 2}, Value()})}},
      {"torch.fft.irfftn(inp([3,6,5],1))", {one("aten::fft_irfftn", {x, Value(), Value(), Value()})}},
      {"torch.fft.hfft(inp([3,6,5],1))", {one("aten::fft_hfft", {x, Value(), int64_t{-1}, Value()})}},
      {"torch.fft.hfft(inp([3,6,5],1), n=5, dim=0, norm=\"forward\")",
       {one("aten::fft_hfft", {x, int64_t{5}, int64_t{0}, "forward"})}},
      {"torch.fft.hfft(inp([4,5],2).to(torch.complex128), 7)",
       {one("aten::fft_hfft", {c, int64_t{7}, int64_t{-1}, Value()})}},
      {"torch.fft.hfft2(inp([3,6,5],1))",
       {one("aten::fft_hfft2", {x, Value(), std::vector<int64_t>{-2, -1}, Value()})}},
      {"torch.fft.hfftn(inp([3,6,5],1).to(torch.complex128), s=(2, 6), dim=(0, 1), norm=\"ortho\")",
       {one("aten::fft_hfftn",
            {to(x, DType::ComplexDouble), std::vector<int64_t>{2, 6}, std::vector<int64_t>{0, 1}, "ortho"})}},
      {"torch.fft.hfftn(inp([3,6,5],1), norm=\"forward\")", {one("aten::fft_hfftn", {x, Value(), Value(), "forward"})}},
      // _fft_c2c both ways and _conj, each read back through _fft_c2r.
      {"torch.ops.aten._fft_c2r(torch.ops.aten._fft_c2c(inp([4,5],2).to(torch.complex128), [0], 1, True), [1], 0, "
       "8)",
       {one("aten::_fft_c2r", {one("aten::_fft_c2c", {c, std::vector<int64_t>{0}, int64_t{1}, true}),
                               std::vector<int64_t>{1}, int64_t{0}, int64_t{8}})}},
      {"torch.ops.aten._fft_c2r(torch.ops.aten._fft_c2c(inp([4,5],2).to(torch.complex128), [0, 1], 2, False), [1], "
       "0, 9)",
       {one("aten::_fft_c2r", {one("aten::_fft_c2c", {c, std::vector<int64_t>{0, 1}, int64_t{2}, false}),
                               std::vector<int64_t>{1}, int64_t{0}, int64_t{9}})}},
      {"torch.ops.aten._fft_c2r(torch.ops.aten._conj(inp([4,5],2).to(torch.complex128)).clone(), [1], 0, 8)",
       {one("aten::_fft_c2r", {one("aten::_conj", {c}), std::vector<int64_t>{1}, int64_t{0}, int64_t{8}})}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

// _fft_c2c lays its result out as PyTorch's (MKL) kernel does: the untransformed dims outermost in
// the input's stride order, then the transformed ones by stride (sizes and strides from PyTorch
// 2.13 on a permuted [3, 4, 5] input: sizes [5, 3, 4], strides (1, 20, 5)); no dims is a copy.
TEST(Fft, ComplexTransformStridesArePyTorchs) {
  Tensor c = to(case_input({3, 4, 5}, 1), DType::ComplexFloat).permute({2, 0, 1});
  auto strides = [&](std::vector<int64_t> dims) {
    return one("aten::_fft_c2c", {c, dims, int64_t{0}, true}).strides().vec();
  };
  EXPECT_EQ(strides({0}), (std::vector<int64_t>{1, 20, 5}));
  EXPECT_EQ(strides({1, 2}), (std::vector<int64_t>{12, 4, 1}));
  EXPECT_EQ(strides({2, 0}), (std::vector<int64_t>{1, 20, 5}));
  EXPECT_EQ(strides({}), (std::vector<int64_t>{1, 20, 5}));
}

TEST(Fft, UnsupportedCasesRaise) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(one("aten::fft_irfft", {x, int64_t{12}, int64_t{-1}, Value()}), "fft_irfft", "pads");
  EXPECT_KILN_ERROR(one("aten::_fft_c2c", {x, std::vector<int64_t>{0}, int64_t{0}, true}), "_fft_c2c", "complex input");
  EXPECT_KILN_ERROR(one("aten::_fft_c2c", {to(x, DType::ComplexDouble), std::vector<int64_t>{0, 0}, int64_t{0}, true}),
                    "_fft_c2c", "more than once");
  EXPECT_KILN_ERROR(one("aten::fft_irfft", {x, Value(), int64_t{-1}, "half"}), "Invalid normalization");
}

}  // namespace
}  // namespace kiln
