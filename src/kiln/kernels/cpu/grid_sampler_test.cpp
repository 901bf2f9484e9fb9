// grid_sampler_2d on hand-checked points: pixel centres give the pixels back in every mode, the
// point half-way between two pixels gives their mean (bilinear) and the even one (nearest), points
// past the edge give 0, the edge pixel or the mirrored pixel by padding mode; bicubic reproduces a
// linear ramp; PyTorch's output layout (contiguous, even for a channels-last input) and its errors.
#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"

namespace kiln::cpu {
namespace {

Tensor sample(const Tensor& x, const Tensor& grid, int64_t interp, int64_t pad, bool align) {
  Stack s{Value(x), Value(grid), Value(interp), Value(pad), Value(align)};
  call_op_boxed(Registry::global().get("aten::grid_sampler_2d"), s);
  return s[0].to_tensor();
}

// A 1 x 1 x 1 x 4 input [10, 20, 30, 40], sampled at x positions (y = 0) given in pixels with
// align_corners (x_pixel = (g + 1) * 3 / 2).
std::vector<float> at_pixels(const std::vector<float>& px, int64_t interp, int64_t pad) {
  Tensor x = from_vector<float>({10, 20, 30, 40}, {1, 1, 1, 4});
  std::vector<float> g;
  for (float p : px) g.push_back(p * 2.0f / 3.0f - 1.0f), g.push_back(0.0f);
  Tensor out = sample(x, from_vector<float>(g, {1, 1, static_cast<int64_t>(px.size()), 2}), interp, pad, true);
  const float* o = out.contiguous().data_ptr<float>();
  return std::vector<float>(o, o + out.numel());
}

TEST(GridSampler2d, PixelCentresGiveThePixelsInEveryMode) {
  for (int64_t interp = 0; interp < 3; ++interp)
    for (int64_t pad = 0; pad < 3; ++pad) {
      std::vector<float> got = at_pixels({0, 1, 2, 3}, interp, pad);
      for (int i = 0; i < 4; ++i) EXPECT_NEAR(got[i], 10.0f * (i + 1), 1e-4) << interp << " " << pad;
    }
}

TEST(GridSampler2d, BetweenPixels) {
  std::vector<float> bilinear = at_pixels({0.5f, 2.25f}, 0, 0);
  EXPECT_NEAR(bilinear[0], 15.0f, 1e-4);
  EXPECT_NEAR(bilinear[1], 32.5f, 1e-4);
  // Without align_corners, g = -0.5, 0, 0.5 on 4 pixels are exactly x = 0.5, 1.5, 2.5: ties go to
  // the even pixel.
  Tensor x = from_vector<float>({10, 20, 30, 40}, {1, 1, 1, 4});
  Tensor ties = sample(x, from_vector<float>({-0.5, 0, 0, 0, 0.5, 0}, {1, 1, 3, 2}), 1, 0, false);
  EXPECT_EQ(ties.to_string(), from_vector<float>({10, 30, 30}, {1, 1, 1, 3}).to_string());
  // Bicubic (A = -0.75, which does not reproduce a ramp exactly): taps 0..3 weigh
  // -0.10546875, 0.87890625, 0.26171875, -0.03515625 at t = 0.25 -> 22.96875 (PyTorch's value).
  EXPECT_NEAR(at_pixels({1.25f}, 2, 1)[0], 22.96875f, 1e-4);
}

TEST(GridSampler2d, PaddingModesPastTheEdge) {
  // x = 4.5 pixels: zeros -> 0 (nearest), border -> the last pixel, reflection about 3 -> 1.5.
  EXPECT_EQ(at_pixels({4.5f}, 1, 0)[0], 0.0f);
  EXPECT_EQ(at_pixels({4.5f}, 1, 1)[0], 40.0f);
  EXPECT_NEAR(at_pixels({4.5f}, 0, 2)[0], 25.0f, 1e-4);
  EXPECT_NEAR(at_pixels({-0.5f}, 0, 0)[0], 5.0f, 1e-4);  // half the weight on a zero pixel
  EXPECT_NEAR(at_pixels({-0.5f}, 0, 1)[0], 10.0f, 1e-4);
}

TEST(GridSampler2d, NotAlignedCornersPutsMinusOneOnTheEdge) {
  Tensor x = from_vector<float>({10, 20, 30, 40}, {1, 1, 1, 4});
  // g = -1 is pixel -0.5: bilinear with zeros gives half of pixel 0; border gives pixel 0.
  Tensor grid = from_vector<float>({-1, 0}, {1, 1, 1, 2});
  EXPECT_NEAR(sample(x, grid, 0, 0, false).item<float>(), 5.0f, 1e-5);
  EXPECT_NEAR(sample(x, grid, 0, 1, false).item<float>(), 10.0f, 1e-5);
  EXPECT_NEAR(sample(x, grid, 0, 2, false).item<float>(), 10.0f, 1e-5);
}

TEST(GridSampler2d, OutputIsContiguousAndErrorsRaise) {
  Tensor x = randn({2, 3, 4, 5}), grid = randn({2, 6, 7, 2});
  Tensor cl = x.permute({0, 2, 3, 1}).contiguous().permute({0, 3, 1, 2});  // channels last
  Tensor out = sample(cl, grid, 2, 1, true);
  EXPECT_EQ(out.sizes().vec(), (std::vector<int64_t>{2, 3, 6, 7}));
  EXPECT_EQ(out.strides().vec(), (std::vector<int64_t>{126, 42, 7, 1}));
  EXPECT_LT(sub(out, sample(x, grid, 2, 1, true)).abs().amax().item<float>(), 1e-6);
  EXPECT_EQ(sample(x.to(DType::BFloat16), grid.to(DType::BFloat16), 0, 0, false).dtype(), DType::BFloat16);
  EXPECT_THROW(sample(x[0], grid[0], 0, 0, false), Error);
  EXPECT_THROW(sample(x.slice(0, 0, 1), grid, 0, 0, false), Error);
  EXPECT_THROW(sample(x, grid.slice(3, 0, 1), 0, 0, false), Error);
  EXPECT_THROW(sample(x.slice(2, 0, 0), grid, 0, 0, false), Error);
  EXPECT_THROW(sample(x, grid.to(DType::Float64), 0, 0, false), Error);
  EXPECT_THROW(sample(x.to(DType::Int64), grid.to(DType::Int64), 0, 0, false), Error);
  EXPECT_THROW(sample(x, grid, 3, 0, false), Error);
  EXPECT_THROW(sample(x, grid, 0, 3, false), Error);
}

}  // namespace
}  // namespace kiln::cpu

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

// grid_sampler_3d against PyTorch 2.13 (tests/torch_cases.h): trilinear and nearest, every padding
// mode, align_corners both ways, points inside and past the edges, float64 and float32.
TEST(GridSampler3d, MatchesPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor input = testing::case_input({2, 3, 3, 4, 5}, 1),
         grid = mul(testing::case_input({2, 2, 3, 4, 3}, 2), Scalar(1.3));
  std::vector<testing::TorchCase> cases;
  for (int64_t mode : {0, 1})
    for (int64_t padding : {0, 1, 2})
      for (bool align : {false, true}) {
        cases.push_back({fmt::format("torch.grid_sampler_3d(inp([2,3,3,4,5],1), inp([2,2,3,4,3],2) * 1.3, {}, {}, {})",
                                     mode, padding, align ? "True" : "False"),
                         testing::call_by_name("aten::grid_sampler_3d", {input, grid, mode, padding, align})});
      }
  cases.push_back({"torch.grid_sampler_3d(inp([2,3,3,4,5],1).float(), (inp([2,2,3,4,3],2) * 1.3).float(), 0, 2, False)",
                   testing::call_by_name("aten::grid_sampler_3d", {to(input, DType::Float32), to(grid, DType::Float32),
                                                                   int64_t{0}, int64_t{2}, false})});
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-6);
  EXPECT_KILN_ERROR(testing::call_by_name("aten::grid_sampler_3d", {input, grid, int64_t{2}, int64_t{0}, false}),
                    "grid_sampler_3d", "bicubic is 2-d only");
  EXPECT_KILN_ERROR(testing::call_by_name("aten::grid_sampler_3d", {input, testing::case_input({2, 2, 3, 4, 2}, 2),
                                                                    int64_t{0}, int64_t{0}, false}),
                    "grid_sampler_3d", "size 3 in its last dim");
}

}  // namespace
}  // namespace kiln
