// Compiled kernels that write their rows with streaming stores (forced with KILN_STREAM_STORES=1)
// compute what the plain stores compute: every alignment of a row (odd lengths), 16-bit outputs,
// several outputs of one kernel.
#include <gtest/gtest.h>

#include <cstdlib>

#include "kiln/api/compile.h"
#include "kiln/ops/api.h"

namespace kiln {
namespace {

std::vector<Tensor> rows_fn(const std::vector<Tensor>& in) {
  Tensor x = in[0];
  Tensor shifted = add(mul(x, Scalar(2)), Scalar(1));
  return {softmax(x, -1), layer_norm(x, {x.sizes()[1]}, std::nullopt, std::nullopt), shifted, mul(shifted, shifted)};
}

TEST(StreamingStores, CompiledRowsEqualPlainStores) {
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    for (int64_t cols : {1003, 129}) {  // 257 rows: both kernels run threaded
      manual_seed(static_cast<uint64_t>(cols));
      Tensor x = randn({257, cols}).to(dtype);
      auto plain = compile(&rows_fn)({x});
      ::setenv("KILN_STREAM_STORES", "1", 1);
      auto streamed = compile(&rows_fn)({x});
      ::unsetenv("KILN_STREAM_STORES");
      ASSERT_EQ(plain.size(), streamed.size());
      for (size_t i = 0; i < plain.size(); ++i) {
        Tensor diff = sub(plain[i].to(DType::Float64), streamed[i].to(DType::Float64)).abs();
        EXPECT_EQ(diff.amax().item<double>(), 0.0) << "output " << i << ", " << cols << " columns";
      }
    }
  }
}

}  // namespace
}  // namespace kiln
