#include <gtest/gtest.h>

#include <limits>
#include <thread>
#include <vector>

#include "kiln/kernels/cpu/sgemm.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"
#include "scoped_env.h"

namespace kiln {
namespace {

// One cached oneDNN primitive serves every thread: results must not depend on who else is running.
TEST(Matmul, ConcurrentCallsShareCachedPrimitivesSafely) {
  manual_seed(5);
  Tensor a = randn({96, 80}), b = randn({80, 72});
  Tensor expected = mm(a, b);
  std::vector<Tensor> results(4);
  std::vector<std::thread> threads;
  for (size_t t = 0; t < results.size(); ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20; ++i) results[t] = mm(a, b);
    });
  }
  for (auto& th : threads) th.join();
  for (const auto& r : results) EXPECT_EQ(sub(r, expected).abs().amax().item<float>(), 0.0f);
}

// Integer products and sums wrap as PyTorch's (two's complement), with no undefined signed
// overflow (UBSan fails this where the loop computes in int64_t): INT64_MAX * 2 + 3 is 1, and int8
// 100 * 3 + 100 * 2 is 500 - 512 = -12.
TEST(Matmul, IntegerProductsWrap) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  Tensor a = from_vector<int64_t>({kMax, 1, kMax, kMax}, {2, 2}), b = from_vector<int64_t>({2, 3}, {2, 1});
  Tensor c = mm(a, b);
  EXPECT_EQ(c[0][0].item<int64_t>(), 1);
  EXPECT_EQ(c[1][0].item<int64_t>(), static_cast<int64_t>(static_cast<uint64_t>(kMax) * 5));
  Tensor a8 = from_vector<int64_t>({100, 100}, {1, 2}).to(DType::Int8);
  Tensor b8 = from_vector<int64_t>({3, 2}, {2, 1}).to(DType::Int8);
  EXPECT_EQ(mm(a8, b8)[0][0].item<int8_t>(), -12);
}

// mm.dtype: float32 results of 16-bit matrices are the product of them converted (exact in float32);
// out_dtype must be the inputs' dtype or, for 16-bit inputs, float32 (PyTorch's rule).
TEST(Matmul, MmDtypeGivesFloat32ProductsOf16BitMatrices) {
  manual_seed(8);
  Tensor a = randn({9, 40}).to(DType::BFloat16), b = randn({40, 7}).to(DType::BFloat16);
  Tensor wide = mm(a, b, DType::Float32);
  EXPECT_EQ(wide.dtype(), DType::Float32);
  EXPECT_EQ(sub(wide, mm(a.to(DType::Float32), b.to(DType::Float32))).abs().amax().item<float>(), 0.0f);
  EXPECT_EQ(mm(a, b, DType::BFloat16).dtype(), DType::BFloat16);
  try {
    (void)mm(a.to(DType::Float32), b.to(DType::Float32), DType::Float64);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("mm.dtype: out_dtype must be the inputs' dtype (float32), or float32 for "
                                         "float16 and bfloat16 inputs; got float64"),
              std::string::npos)
        << e.what();
  }
}

TEST(Matmul, AddmmFusedBiasMatchesUnfused) {
  manual_seed(6);
  Tensor a = randn({33, 65}), b = randn({65, 17}), bias = randn({17});
  Tensor fused = addmm(bias, a, b);                   // bias goes into oneDNN's epilogue
  Tensor unfused = add(mm(a, b), bias.unsqueeze(0));  // a separate pointwise add
  EXPECT_LT(sub(fused, unfused).abs().amax().item<float>(), 1e-4f);
}

// KILN_GEMM=kiln routes float32 products through kiln's sgemm: mm, bmm, addmm (scaled, accumulated,
// fused bias) and gemm_epilogue (every activation, a strided residual) on odd shapes and
// transposed operands agree with oneDNN's path.
TEST(Matmul, KilnGemmAgreesWithOneDnn) {
  if (!cpu::sgemm_available()) GTEST_SKIP() << "this build has no float32 GEMM kernel";
  manual_seed(7);
  OpHandle epilogue = Registry::global().get("kiln::gemm_epilogue");
  auto results = [&] {
    std::vector<Tensor> out;
    Tensor a = randn({37, 300}), b = randn({300, 45}), w = randn({45, 300}), bias = randn({45});
    out.push_back(mm(a, b));
    out.push_back(mm(a, w.t()));      // b transposed, as a linear layer's weight
    out.push_back(mm(b.t(), a.t()));  // both transposed
    out.push_back(bmm(randn({3, 70, 64}), randn({3, 64, 90})));
    out.push_back(addmm(bias, a, w.t()));  // bias fused
    out.push_back(addmm(randn({37, 45}), a, b, 0.5, -2.0));
    for (std::string act : {"none", "relu", "gelu", "gelu_tanh", "silu"}) {
      Stack s{Value(a), Value(w.t()), Value(bias), Value(act), Value(randn({45, 37}).t())};
      call_op_boxed(epilogue, s);
      out.push_back(s.at(0).to_tensor());
    }
    return out;
  };
  std::vector<Tensor> onednn, kiln_gemm;
  {
    testing::ScopedEnv env("KILN_GEMM", "onednn");
    onednn = results();
  }
  manual_seed(7);
  {
    testing::ScopedEnv env("KILN_GEMM", "kiln");
    kiln_gemm = results();
    // The route is sgemm's: mm's result is bit for bit a direct call's (k = 700 spans three of
    // sgemm's K blocks, whose partial sums oneDNN does not round the same way).
    Tensor a = randn({29, 700}), b = randn({700, 33});
    Tensor direct = empty({29, 33});
    cpu::sgemm(29, 33, 700, {a.data_ptr<float>(), 700, 1}, {b.data_ptr<float>(), 33, 1}, direct.data_ptr<float>(), 33,
               {});
    EXPECT_EQ(sub(mm(a, b), direct).abs().amax().item<float>(), 0.0f);
  }
  ASSERT_EQ(onednn.size(), kiln_gemm.size());
  for (size_t i = 0; i < onednn.size(); ++i) {
    ASSERT_EQ(onednn[i].numel(), kiln_gemm[i].numel()) << "result " << i;
    float scale = onednn[i].abs().amax().item<float>();
    EXPECT_LE(sub(onednn[i], kiln_gemm[i]).abs().amax().item<float>(), 2e-5f * std::max(scale, 1.0f)) << "result " << i;
  }
}

// gemm_epilogue with dtype float32 takes bfloat16 operands to a float32 product (what a bfloat16
// addmm's decomposition computes on its widened operands): the float32 epilogue of the converted
// operands' product, any activation, with a bias and a strided residual; K = 0 gives the bias. Other
// dtype combinations are errors that name the op.
TEST(Matmul, EpilogueOfBfloat16OperandsToAFloat32Product) {
  manual_seed(9);
  OpHandle epilogue = Registry::global().get("kiln::gemm_epilogue");
  for (int64_t k : {70, 0}) {
    Tensor a = randn({13, k}).to(DType::BFloat16), w = randn({21, k}).to(DType::BFloat16);
    Tensor bias = randn({21}), residual = randn({21, 13}).t();
    for (std::string act : {"none", "relu", "gelu", "silu"}) {
      Stack s{Value(a), Value(w.t()), Value(bias), Value(act), Value(residual), Value(DType::Float32)};
      call_op_boxed(epilogue, s);
      Tensor got = s.at(0).to_tensor();
      ASSERT_EQ(got.dtype(), DType::Float32);
      Stack want_stack{Value(a.to(DType::Float32)),
                       Value(w.t().to(DType::Float32)),
                       Value(bias),
                       Value(act),
                       Value(residual),
                       Value()};
      call_op_boxed(epilogue, want_stack);
      Tensor want = want_stack.at(0).to_tensor();
      EXPECT_LT(sub(got, want).abs().amax().item<float>(), 1e-4f) << act << " k " << k;
    }
  }
  auto fails = [&](Stack s) {
    try {
      call_op_boxed(epilogue, s);
    } catch (const Error& e) {
      return std::string(e.what()).find("gemm_epilogue") != std::string::npos;
    }
    return false;
  };
  Tensor a = randn({4, 5}).to(DType::BFloat16), b = randn({5, 3}).to(DType::BFloat16);
  EXPECT_TRUE(fails({Value(a), Value(b), Value(), Value(std::string("none")), Value(), Value(DType::Float16)}));
  EXPECT_TRUE(fails({Value(a.to(DType::Float16)), Value(b.to(DType::Float16)), Value(), Value(std::string("none")),
                     Value(), Value(DType::Float32)}));
  EXPECT_TRUE(fails({Value(a), Value(b), Value(randn({3}).to(DType::BFloat16)), Value(std::string("none")), Value(),
                     Value(DType::Float32)}));
}

}  // namespace
}  // namespace kiln
