// PointwiseIter: the iteration engine under every elementwise kernel. Given an output and inputs
// that broadcast to it, it drops size-1 dims, orders dims by the output's strides (fastest first),
// merges dims that are contiguous for every operand, and then visits the elements as runs along
// the innermost dim, in parallel over the outer index space. Kernels supply the inner loop.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <tuple>
#include <utility>

#include "kiln/kernels/cpu/parallel.h"
#include "kiln/ops/tensor.h"

namespace kiln::cpu {

inline constexpr int kMaxOperands = 5;

class PointwiseIter {
 public:
  // `out` is operand 0; inputs follow. Every input must broadcast to out's sizes.
  PointwiseIter(const Tensor& out, std::span<const Tensor> inputs);

  int ntensors() const { return ntensors_; }
  int ndim() const { return static_cast<int>(shape_.size()); }
  int64_t numel() const { return numel_; }
  // Byte stride of operand `t` along iteration dim `d` (dim 0 is the innermost).
  int64_t stride(int t, int d) const { return strides_[static_cast<size_t>(d * ntensors_ + t)]; }
  IntArrayRef shape() const { return shape_; }

  // Calls loop(char* const* data, const int64_t* inner_strides, int64_t n) for every run of n
  // elements along the innermost dim; data[t] points at operand t's first element of the run.
  template <class Loop>
  void for_each(const Loop& loop, int64_t grain = kGrainSize) const {
    if (numel_ == 0) return;
    int nd = ndim();
    if (nd == 0) {
      std::array<char*, kMaxOperands> ptrs = base_;
      std::array<int64_t, kMaxOperands> zero{};
      loop(ptrs.data(), zero.data(), int64_t{1});
      return;
    }
    std::array<int64_t, kMaxOperands> inner{};
    for (int t = 0; t < ntensors_; ++t) inner[t] = stride(t, 0);
    parallel_for(0, numel_, grain, [&](int64_t begin, int64_t end) {
      SmallVector<int64_t, 8> idx(static_cast<size_t>(nd));
      int64_t rest = begin;
      for (int d = 0; d < nd; ++d) {
        idx[d] = rest % shape_[d];
        rest /= shape_[d];
      }
      std::array<char*, kMaxOperands> ptrs{};
      int64_t pos = begin;
      while (pos < end) {
        for (int t = 0; t < ntensors_; ++t) {
          char* p = base_[t];
          for (int d = 0; d < nd; ++d) p += idx[d] * stride(t, d);
          ptrs[t] = p;
        }
        int64_t n = std::min(shape_[0] - idx[0], end - pos);
        loop(ptrs.data(), inner.data(), n);
        pos += n;
        idx[0] += n;
        for (int d = 0; d + 1 < nd && idx[d] >= shape_[d]; ++d) {
          idx[d] = 0;
          ++idx[d + 1];
        }
      }
    });
  }

 private:
  int ntensors_;
  int64_t numel_;
  Shape shape_;
  SmallVector<int64_t, 24> strides_;  // [dim][tensor], bytes
  std::array<char*, kMaxOperands> base_{};
};

// One run of pointwise_kernel where every input is contiguous or, where bit I of Broadcast is set,
// has inner stride 0 (a row of x * column, x + bias along rows): those are read once, before the
// loop, so the loop is plain indexing the compiler vectorizes.
template <unsigned Broadcast, class Out, class... In, class F, size_t... I>
void pointwise_run(char* const* data, int64_t n, const F& f, std::index_sequence<I...>) {
  Out* out = reinterpret_cast<Out*>(data[0]);
  std::tuple<const In*...> in{reinterpret_cast<const In*>(data[I + 1])...};
  std::tuple<opmath_t<In>...> once{opmath_t<In>(std::get<I>(in)[0])...};
  auto element = [&]<size_t J>(std::integral_constant<size_t, J>, int64_t i) {
    if constexpr ((Broadcast >> J) & 1u) return std::get<J>(once);
    else return opmath_t<std::tuple_element_t<J, std::tuple<In...>>>(std::get<J>(in)[i]);
  };
  for (int64_t i = 0; i < n; ++i) out[i] = Out(f(element(std::integral_constant<size_t, I>{}, i)...));
}

// out[i] = f(in0[i], in1[i], ...), with In the inputs' storage types; f sees their opmath types
// (float for the 16-bit floats) and its result is converted to Out. Runs where the output is
// contiguous and every input contiguous or broadcast along the run use plain indexing, so the
// compiler vectorizes them; other runs step through byte strides.
template <class Out, class... In, class F>
void pointwise_kernel(const PointwiseIter& it, const F& f) {
  constexpr size_t kN = sizeof...(In);
  using Inputs = std::make_index_sequence<kN>;
  it.for_each([&](char* const* data, const int64_t* strides, int64_t n) {
    bool plain = strides[0] == static_cast<int64_t>(sizeof(Out));
    unsigned broadcast = 0;
    size_t k = 0;
    ((++k, broadcast |= strides[k] == 0 && n > 1 ? 1u << (k - 1) : 0u,
      plain = plain && (strides[k] == static_cast<int64_t>(sizeof(In)) || strides[k] == 0)),
     ...);
    if (plain && broadcast == 0) return pointwise_run<0u, Out, In...>(data, n, f, Inputs{});
    if constexpr (kN == 2) {
      if (plain && broadcast == 1u) return pointwise_run<1u, Out, In...>(data, n, f, Inputs{});
      if (plain && broadcast == 2u) return pointwise_run<2u, Out, In...>(data, n, f, Inputs{});
    }
    if constexpr (kN == 3) {  // where(cond, x, scalar-like), addcmul-style ternaries
      if (plain && broadcast == 4u) return pointwise_run<4u, Out, In...>(data, n, f, Inputs{});
    }
    [&]<size_t... I>(std::index_sequence<I...>) {
      for (int64_t i = 0; i < n; ++i) {
        *reinterpret_cast<Out*>(data[0] + i * strides[0]) =
            Out(f(opmath_t<In>(*reinterpret_cast<const In*>(data[I + 1] + i * strides[I + 1]))...));
      }
    }
    (Inputs{});
  });
}

}  // namespace kiln::cpu
