// torch.fft's irfft, irfft2, irfftn and hfft (decomp/fft.cpp) against PyTorch 2.13
// (tests/torch_cases.h): real and complex inputs, signal sizes that trim, every norm, several dims.
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
  };
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

TEST(Fft, UnsupportedCasesRaise) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(one("aten::fft_irfft", {x, int64_t{12}, int64_t{-1}, Value()}), "fft_irfft", "pads");
  EXPECT_KILN_ERROR(one("aten::fft_hfft", {to(x, DType::ComplexDouble), Value(), int64_t{-1}, Value()}), "fft_hfft",
                    "conjugate");
  EXPECT_KILN_ERROR(one("aten::fft_irfft", {x, Value(), int64_t{-1}, "half"}), "Invalid normalization");
}

}  // namespace
}  // namespace kiln
