// Which outputs stream: a light pass whose kernel outgrows the cache does, a compute-bound pass,
// a kernel that fits in cache, one on a single thread and one with KILN_STREAM_STORES=0 do not.
#include <gtest/gtest.h>

#include "kiln/compiler/codegen/codegen_testing.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/codegen/streaming.h"
#include "kiln/ops/api.h"

namespace kiln::compiler {
namespace {

using testing::Compiled;
using testing::compiled;

// The kernel's passes as the generator splits them: one pass per node is enough here (each
// node's weight then counts alone), except where the test says so.
std::vector<std::vector<int>> one_pass(const Kernel& k) { return {k.nodes}; }

std::vector<Tensor> layer_norm_fn(const std::vector<Tensor>& in) {
  return {layer_norm(in[0], {in[0].sizes()[1]}, in[1], in[1])};
}

std::vector<Tensor> chain_fn(const std::vector<Tensor>& in) {
  return {mul(gelu(add(mul(in[0], in[1]), in[1])), sigmoid(in[0]))};
}

TEST(Streaming, ALightKernelOutgrowingTheCacheStreamsItsOutput) {
  Compiled c = compiled(&layer_norm_fn, {randn({64, 512}), randn({512})});
  const Kernel& k = c.kernel(0);
  auto passes = std::vector<std::vector<int>>{{k.nodes.back()}};  // the normalizing pass alone
  int out = std::get<loopir::LoopNode>(c.program.steps[static_cast<size_t>(k.nodes.back())]).out;
  EXPECT_EQ(streamed_outputs(c.program, k, passes, true, StreamMode::Auto, 1024), std::set<int>{out});
  EXPECT_TRUE(streamed_outputs(c.program, k, passes, true, StreamMode::Auto, int64_t{1} << 30).empty());
  EXPECT_TRUE(streamed_outputs(c.program, k, passes, true, StreamMode::Off, 1024).empty());
  EXPECT_TRUE(streamed_outputs(c.program, k, passes, false, StreamMode::All, 1024).empty());  // one thread
}

TEST(Streaming, AComputeBoundPassKeepsPlainStores) {
  Compiled c = compiled(&chain_fn, {randn({64, 512}), randn({512})});
  const Kernel& k = c.kernel(0);
  EXPECT_GT(arithmetic_weight(std::get<loopir::LoopNode>(c.program.steps[static_cast<size_t>(k.nodes.back())]).value),
            kStreamWeightUpTo);
  EXPECT_TRUE(streamed_outputs(c.program, k, one_pass(k), true, StreamMode::Auto, 1024).empty());
  EXPECT_FALSE(streamed_outputs(c.program, k, one_pass(k), true, StreamMode::All, 1024).empty());
}

TEST(Streaming, WeightsCountSharedValuesOnce) {
  auto e = loopir::parse_scalar("mul(exp(load(buf0, i0):float32), exp(load(buf0, i0):float32))");
  EXPECT_EQ(arithmetic_weight(e), 1 + 16);
  EXPECT_EQ(arithmetic_weight(loopir::parse_scalar("div(add(load(buf0, i0):float32, 1:float32), 3:float32)")), 5);
  EXPECT_EQ(arithmetic_weight(loopir::parse_scalar("load(buf0, i0):float32")), 0);
  // rsqrt of a row's reduction (buf1) is computed once per row: only the multiplication counts.
  auto normalize = loopir::parse_scalar("mul(load(buf0, i0):float32, rsqrt(add(load(buf1, i0):float32, 1:float32)))");
  EXPECT_EQ(arithmetic_weight(normalize, {1}), 1);
  EXPECT_EQ(arithmetic_weight(normalize), 1 + 4 + 1);
}

TEST(Streaming, TheGeneratedKernelCopiesRowsOutAndFences) {
  Compiled c = compiled(&layer_norm_fn, {randn({64, 1003}), randn({1003})});
  ::setenv("KILN_STREAM_STORES", "1", 1);
  std::string code = generate_cpp(c.program, c.schedule).code;
  ::unsetenv("KILN_STREAM_STORES");
  EXPECT_NE(code.find("k_stream_copy(buf"), std::string::npos) << code;
  EXPECT_NE(code.find("k_stream_fence();"), std::string::npos) << code;
  std::string plain = generate_cpp(c.program, c.schedule).code;  // 64 x 1003 floats fit in any cache
  EXPECT_EQ(plain.find("k_stream_copy"), std::string::npos) << plain;
}

}  // namespace
}  // namespace kiln::compiler
