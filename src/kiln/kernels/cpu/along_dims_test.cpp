// The scans beside cumsum — cumprod and logcumsumexp — against PyTorch 2.13 (tests/torch_cases.h):
// every dim, 0-d and empty inputs, integer and bool inputs with cumprod's int64 result, wrapping
// integer products, special values, and 16-bit floats (compiled: api/composite_compile_test.cpp).
#include <gtest/gtest.h>

#include <cmath>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

TEST(Scans, MatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = mul(case_input({3, 4, 5}, 1), Scalar(2)), s = testing::special_values();
  Tensor ints = from_vector<int64_t>({3, -2, int64_t{1} << 40, int64_t{1} << 30, 7, 0}),
         flags = gt(case_input({6}, 2), Scalar(0));
  std::vector<testing::TorchCase> cases = {
      {"torch.cumprod(inp([3,4,5],1) * 2, 0)", {cumprod(x, 0)}},
      {"torch.cumprod(inp([3,4,5],1) * 2, -1)", {cumprod(x, -1)}},
      {"torch.cumprod(inp([3,4,5],1) * 2, 1, dtype=torch.float32)", {cumprod(x, 1, DType::Float32)}},
      {"torch.cumprod(inp([3,4,5],1).transpose(0, 2), 1)", {cumprod(transpose(case_input({3, 4, 5}, 1), 0, 2), 1)}},
      // int64 products wrap around, as PyTorch's do.
      {"torch.cumprod(torch.tensor([3, -2, 1 << 40, 1 << 30, 7, 0]), 0)", {cumprod(ints, 0)}},
      {"torch.cumprod(inp([6],2) > 0, 0)", {cumprod(flags, 0)}},
      {"torch.cumprod(" + testing::kSpecialValues + ", 0)", {cumprod(s, 0)}},
      {"torch.cumprod(inp([],1), 0)", {cumprod(case_input({}, 1), 0)}},
      {"torch.cumprod(torch.zeros(2, 0), 1)", {cumprod(zeros({2, 0}, DType::Float32), 1)}},
      {"torch.logcumsumexp(inp([3,4,5],1) * 2, 0)", {logcumsumexp(x, 0)}},
      {"torch.logcumsumexp(inp([3,4,5],1) * 40, -1)", {logcumsumexp(mul(case_input({3, 4, 5}, 1), Scalar(40)), -1)}},
      {"torch.logcumsumexp(" + testing::kSpecialValues + ", 0)", {logcumsumexp(s, 0)}},
      {"torch.logcumsumexp(torch.tensor([float(\"-inf\"), -float(\"inf\"), 0.0, float(\"inf\"), 1.0, float(\"nan\"), 2.0]).double(), 0)",
       {logcumsumexp(from_vector<double>({-INFINITY, -INFINITY, 0.0, INFINITY, 1.0, NAN, 2.0}), 0)}},
      {"torch.logcumsumexp(inp([],1), 0)", {logcumsumexp(case_input({}, 1), 0)}},
  };
  testing::expect_cases_match_torch(python, cases);
  Tensor x32 = to(x, DType::Float32), xb = to(x, DType::BFloat16);
  std::vector<testing::TorchCase> narrow = {
      {"torch.cumprod((inp([3,4,5],1) * 2).float(), 2)", {cumprod(x32, 2)}},
      {"torch.logcumsumexp((inp([3,4,5],1) * 2).float(), 1)", {logcumsumexp(x32, 1)}},
      {"torch.cumprod((inp([3,4,5],1) * 2).bfloat16(), 2)", {cumprod(xb, 2)}},
      {"torch.logcumsumexp((inp([3,4,5],1) * 2).bfloat16(), 1)", {logcumsumexp(xb, 1)}},
  };
  testing::expect_cases_match_torch(python, narrow, 2e-2, 1e-5);
}

TEST(Scans, BadArgumentsRaise) {
  Tensor x = case_input({3, 4}, 1);
  EXPECT_KILN_ERROR(cumprod(x, 2), "cumprod");
  EXPECT_KILN_ERROR(cumprod(x, 0, DType::Bool), "cumprod: not implemented for bool");
  EXPECT_KILN_ERROR(logcumsumexp(from_vector<int64_t>({1, 2}), 0), "logcumsumexp: not implemented for int64");
  EXPECT_KILN_ERROR(logcumsumexp(x, -3), "logcumsumexp");
}

}  // namespace
}  // namespace kiln
