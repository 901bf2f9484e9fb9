// binary_kernel: out = f(a, b) for inputs already in the compute dtype C. A one-element operand
// (a Python-style scalar, or a 0-d tensor) is read once and captured, so `x * 2` runs as a unary
// loop over x — the common case — without a stride-0 input in the inner loop.
#pragma once

#include "kiln/kernels/cpu/pointwise_iter.h"

namespace kiln::cpu {

template <class Out, class C, class F>
void binary_kernel(const Tensor& a, const Tensor& b, const Tensor& out, const F& f) {
  using M = opmath_t<C>;
  if (b.numel() == 1 && a.numel() == out.numel()) {
    M vb = M(*static_cast<const C*>(b.data_ptr()));
    PointwiseIter it(out, std::span(&a, 1));
    pointwise_kernel<Out, C>(it, [&](M x) { return f(x, vb); });
  } else if (a.numel() == 1 && b.numel() == out.numel()) {
    M va = M(*static_cast<const C*>(a.data_ptr()));
    PointwiseIter it(out, std::span(&b, 1));
    pointwise_kernel<Out, C>(it, [&](M y) { return f(va, y); });
  } else {
    const Tensor ab[] = {a, b};
    PointwiseIter it(out, ab);
    pointwise_kernel<Out, C, C>(it, f);
  }
}

}  // namespace kiln::cpu
