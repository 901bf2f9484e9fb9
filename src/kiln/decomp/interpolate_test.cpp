// Interpolation (decomp/interpolate.cpp) against PyTorch 2.13 (tests/torch_cases.h): every mode
// over 1-3 spatial dims, up and down, align_corners both ways, given scale factors (which PyTorch
// uses for the source positions, not only the sizes), the fixed overloads, float32 and uint8
// inputs for the nearest modes; and grid_sampler's choice of sampler.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;
using testing::one;

using Ints = std::vector<int64_t>;
using Doubles = std::vector<double>;

TEST(Interpolate, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x1 = case_input({2, 3, 7}, 1), x2 = case_input({1, 2, 5, 6}, 2), x3 = case_input({1, 2, 3, 4, 5}, 3);
  Tensor f2 = to(x2, DType::Float32), u2 = to(add(mul(x2, Scalar(100)), Scalar(100)), DType::UInt8);
  const std::string F = "torch.nn.functional.interpolate(";
  std::vector<testing::TorchCase> cases = {
      {F + "inp([1,2,5,6],2), size=(8, 4), mode=\"nearest-exact\")",
       {one("aten::_upsample_nearest_exact2d.vec", {x2, Ints{8, 4}, Value()})}},
      {F + "inp([2,3,7],1), scale_factor=1.7, mode=\"nearest-exact\")",
       {one("aten::_upsample_nearest_exact1d.vec", {x1, Value(), Doubles{1.7}})}},
      {F + "inp([1,2,3,4,5],3), size=(5, 2, 9), mode=\"nearest-exact\")",
       {one("aten::_upsample_nearest_exact3d.vec", {x3, Ints{5, 2, 9}, Value()})}},
      {F + "inp([1,2,3,4,5],3), scale_factor=(2.0, 0.5, 1.3), mode=\"nearest\")",
       {one("aten::upsample_nearest3d.vec", {x3, Value(), Doubles{2.0, 0.5, 1.3}})}},
      {F + "(inp([1,2,5,6],2) * 100 + 100).to(torch.uint8), size=(9, 3), mode=\"nearest-exact\")",
       {one("aten::_upsample_nearest_exact2d.vec", {u2, Ints{9, 3}, Value()})}},
      {F + "inp([1,2,3,4,5],3), size=(5, 7, 3), mode=\"trilinear\")",
       {one("aten::upsample_trilinear3d.vec", {x3, Ints{5, 7, 3}, false, Value()})}},
      {F + "inp([1,2,3,4,5],3), size=(5, 7, 3), mode=\"trilinear\", align_corners=True)",
       {one("aten::upsample_trilinear3d.vec", {x3, Ints{5, 7, 3}, true, Value()})}},
      {F + "inp([1,2,3,4,5],3), scale_factor=1.5, mode=\"trilinear\")",
       {one("aten::upsample_trilinear3d.vec", {x3, Value(), false, Doubles{1.5, 1.5, 1.5}})}},
      {F + "inp([1,2,5,6],2), size=(11, 4), mode=\"bicubic\")",
       {one("aten::upsample_bicubic2d.vec", {x2, Ints{11, 4}, false, Value()})}},
      {F + "inp([1,2,5,6],2), size=(11, 4), mode=\"bicubic\", align_corners=True)",
       {one("aten::upsample_bicubic2d.vec", {x2, Ints{11, 4}, true, Value()})}},
      {F + "inp([1,2,5,6],2), scale_factor=(2.3, 0.6), mode=\"bicubic\")",
       {one("aten::upsample_bicubic2d.vec", {x2, Value(), false, Doubles{2.3, 0.6}})}},
      {F + "inp([1,2,5,6],2), size=(5, 6), mode=\"bicubic\")",
       {one("aten::upsample_bicubic2d.vec", {x2, Ints{5, 6}, false, Value()})}},
      {"torch.ops.aten.upsample_bicubic2d(inp([1,2,5,6],2), [7, 9], False, 1.5, 1.6)",
       {one("aten::upsample_bicubic2d", {x2, Ints{7, 9}, false, 1.5, 1.6})}},
      {"torch.ops.aten.upsample_bilinear2d(inp([1,2,5,6],2), [7, 9], True)",
       {one("aten::upsample_bilinear2d", {x2, Ints{7, 9}, true, Value(), Value()})}},
      {"torch.ops.aten.upsample_linear1d(inp([2,3,7],1), [12], False, 1.8)",
       {one("aten::upsample_linear1d", {x1, Ints{12}, false, 1.8})}},
      {"torch.ops.aten.upsample_nearest1d(inp([2,3,7],1), [15])",
       {one("aten::upsample_nearest1d", {x1, Ints{15}, Value()})}},
      {"torch.ops.aten.upsample_nearest2d(inp([1,2,5,6],2), [3, 13], 0.7, 2.2)",
       {one("aten::upsample_nearest2d", {x2, Ints{3, 13}, 0.7, 2.2})}},
      {"torch.ops.aten._upsample_nearest_exact3d(inp([1,2,3,4,5],3), [4, 4, 4])",
       {one("aten::_upsample_nearest_exact3d", {x3, Ints{4, 4, 4}, Value(), Value(), Value()})}},
      {F + "inp([1,2,5,6],2).float(), size=(8, 9), mode=\"bicubic\")",
       {one("aten::upsample_bicubic2d.vec", {f2, Ints{8, 9}, false, Value()})}},
      // Antialiased: down (the filter stretched) and up, both filters, align_corners, float32.
      {F + "inp([1,2,5,6],2), size=(3, 2), mode=\"bilinear\", antialias=True)",
       {one("aten::_upsample_bilinear2d_aa.vec", {x2, Ints{3, 2}, false, Value()})}},
      {F + "inp([1,2,5,6],2), size=(9, 4), mode=\"bilinear\", antialias=True, align_corners=True)",
       {one("aten::_upsample_bilinear2d_aa.vec", {x2, Ints{9, 4}, true, Value()})}},
      {F + "inp([1,2,5,6],2), scale_factor=(0.4, 1.7), mode=\"bicubic\", antialias=True)",
       {one("aten::_upsample_bicubic2d_aa.vec", {x2, Value(), false, Doubles{0.4, 1.7}})}},
      {F + "inp([1,2,5,6],2).float(), size=(2, 3), mode=\"bicubic\", antialias=True)",
       {one("aten::_upsample_bicubic2d_aa.vec", {f2, Ints{2, 3}, false, Value()})}},
  };
  testing::expect_cases_match_torch(python, cases, 1e-6, 1e-6);
}

TEST(Interpolate, BadInputsRaise) {
  Tensor x2 = case_input({1, 2, 5, 6}, 2);
  EXPECT_KILN_ERROR(one("aten::upsample_bicubic2d.vec", {x2, Ints{3}, false, Value()}), "upsample_bicubic2d", "2");
  EXPECT_KILN_ERROR(one("aten::upsample_trilinear3d.vec", {x2, Ints{3, 3, 3}, false, Value()}), "upsample_trilinear3d",
                    "5-D");
  EXPECT_KILN_ERROR(one("aten::upsample_bicubic2d.vec", {x2, Ints{3, 3}, false, Doubles{2.0, 2.0}}),
                    "exactly one of output_size and scale_factors");
  EXPECT_KILN_ERROR(one("aten::upsample_bicubic2d.vec", {to(x2, DType::Int64), Ints{3, 3}, false, Value()}),
                    "upsample_bicubic2d", "int64");
  EXPECT_KILN_ERROR(one("aten::_upsample_nearest_exact2d.vec", {x2, Ints{0, 3}, Value()}), "greater than 0");
  EXPECT_KILN_ERROR(one("aten::_upsample_nearest_exact2d.vec", {to(x2, DType::Int64), Ints{3, 3}, Value()}),
                    "_upsample_nearest_exact", "int64");
  // grid_sampler picks the sampler by rank.
  Tensor grid = mul(case_input({1, 3, 4, 2}, 3), Scalar(0.9));
  Tensor sampled = one("aten::grid_sampler", {x2, grid, int64_t{0}, int64_t{0}, false});
  Tensor direct = one("aten::grid_sampler_2d", {x2, grid, int64_t{0}, int64_t{0}, false});
  EXPECT_EQ(ne(sampled, direct).sum().item<int64_t>(), 0);
  Tensor volume = case_input({1, 2, 3, 4, 5}, 1), points = case_input({1, 2, 3, 4, 3}, 2);
  Tensor sampled3d = one("aten::grid_sampler", {volume, points, int64_t{0}, int64_t{0}, false});
  Tensor direct3d = one("aten::grid_sampler_3d", {volume, points, int64_t{0}, int64_t{0}, false});
  EXPECT_EQ(ne(sampled3d, direct3d).sum().item<int64_t>(), 0);
  EXPECT_KILN_ERROR(one("aten::grid_sampler", {case_input({1, 2, 3}, 1), points, int64_t{0}, int64_t{0}, false}),
                    "grid_sampler()", "4D or 5D");
}

}  // namespace
}  // namespace kiln
