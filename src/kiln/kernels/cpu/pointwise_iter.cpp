#include "kiln/kernels/cpu/pointwise_iter.h"

#include <algorithm>
#include <numeric>

namespace kiln::cpu {

PointwiseIter::PointwiseIter(const Tensor& out, std::span<const Tensor> inputs)
    : ntensors_(static_cast<int>(inputs.size()) + 1), numel_(out.numel()) {
  KILN_ASSERT(ntensors_ <= kMaxOperands);
  const int64_t nd_out = out.dim();
  // Byte strides of every operand along out's dims (0 where an input broadcasts).
  auto operand_stride = [&](int t, int64_t d) -> int64_t {
    const Tensor& x = t == 0 ? out : inputs[static_cast<size_t>(t - 1)];
    int64_t xd = d - (nd_out - x.dim());
    if (xd < 0 || x.sizes()[xd] == 1) return 0;
    return x.strides()[xd] * static_cast<int64_t>(x.element_size());
  };
  base_[0] = static_cast<char*>(out.data_ptr());
  for (size_t i = 0; i < inputs.size(); ++i) base_[i + 1] = static_cast<char*>(inputs[i].data_ptr());

  // Dims of size > 1, fastest first by the output's stride (then by the first input's).
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < nd_out; ++d) {
    if (out.sizes()[d] != 1) dims.push_back(d);
  }
  std::stable_sort(dims.begin(), dims.end(), [&](int64_t a, int64_t b) {
    for (int t = 0; t < ntensors_; ++t) {
      int64_t sa = operand_stride(t, a), sb = operand_stride(t, b);
      if (sa != sb && sa != 0 && sb != 0) return sa < sb;
    }
    return a > b;
  });
  // Merge dim j into the run when every operand steps through it contiguously after the run.
  for (int64_t d : dims) {
    int64_t size = out.sizes()[d];
    if (!shape_.empty()) {
      bool mergeable = true;
      size_t last = shape_.size() - 1;
      for (int t = 0; t < ntensors_ && mergeable; ++t) {
        mergeable = operand_stride(t, d) == strides_[last * ntensors_ + t] * shape_[last];
      }
      if (mergeable) {
        shape_[last] *= size;
        continue;
      }
    }
    shape_.push_back(size);
    for (int t = 0; t < ntensors_; ++t) strides_.push_back(operand_stride(t, d));
  }
}

}  // namespace kiln::cpu
