#include <gtest/gtest.h>

#include <thread>
#include <vector>

#include "kiln/ops/api.h"

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

TEST(Matmul, AddmmFusedBiasMatchesUnfused) {
  manual_seed(6);
  Tensor a = randn({33, 65}), b = randn({65, 17}), bias = randn({17});
  Tensor fused = addmm(bias, a, b);                   // bias goes into oneDNN's epilogue
  Tensor unfused = add(mm(a, b), bias.unsqueeze(0));  // a separate pointwise add
  EXPECT_LT(sub(fused, unfused).abs().amax().item<float>(), 1e-4f);
}

}  // namespace
}  // namespace kiln
