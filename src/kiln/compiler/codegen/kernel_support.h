// What generated kernels call besides the C++ library: NaN-propagating max/min, PyTorch's
// remainder and integer pow, integer arithmetic that wraps around as eager's does (never undefined),
// integer division that reports a zero divisor instead of trapping, 16-bit float conversions that
// vectorize, kiln's vectorizable exp/erf/tanh, per-thread scratch rows and streaming (non-temporal) row stores.
// Generated code includes this header; so do its tests.
#pragma once

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "kiln/core/float_to_int.h"
#include "kiln/core/half.h"
#include "kiln/kernels/cpu/vec_math.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/special_math.h"

namespace kiln::kernel_support {

template <class T>
inline T k_max(T a, T b) {
  return a != a ? a : (b != b ? b : (a > b ? a : b));
}
template <class T>
inline T k_min(T a, T b) {
  return a != a ? a : (b != b ? b : (a < b ? a : b));
}
template <class T>
inline T k_sign(T x) {
  return T((T(0) < x) - (x < T(0)));
}  // NaN -> 0, as eager

template <class T>
inline constexpr bool kWraps = std::is_integral_v<T> && !std::is_same_v<T, bool>;

// Integer +, -, *, negation and abs in two's complement (what PyTorch's kernels produce).
template <class T>
inline T k_add(T a, T b) {
  return cpu::wrapping_add(a, b);
}
template <class T>
inline T k_sub(T a, T b) {
  return cpu::wrapping_sub(a, b);
}
template <class T>
inline T k_mul(T a, T b) {
  return cpu::wrapping_mul(a, b);
}
template <class T>
inline T k_neg(T a) {
  return cpu::wrapping_neg(a);
}
template <class T>
inline T k_abs(T a) {
  if constexpr (std::is_unsigned_v<T>) return a;
  else return a < 0 ? cpu::wrapping_neg(a) : a;
}

// A zero integer divisor stores `site` (which node divided, see GeneratedSource::error_sites) in
// *status and yields 0; the runtime raises kiln::Error after the kernel returns. min / -1 wraps.
inline void k_report(int* status, int site) { __atomic_store_n(status, site, __ATOMIC_RELAXED); }
template <class T>
inline T k_div(T a, T b, int* status, int site) {
  if (b == 0) return k_report(status, site), T(0);
  return cpu::wrapping_div(a, b);
}
template <class T>
inline T k_fmod(T a, T b, int* status, int site) {
  if (b == 0) return k_report(status, site), T(0);
  return cpu::wrapping_rem(a, b);
}
template <class T>
inline T k_remainder(T a, T b, int* status, int site) {
  if (b == 0) return k_report(status, site), T(0);
  T r = cpu::wrapping_rem(a, b);
  return (r != 0 && ((r < 0) != (b < 0))) ? T(r + b) : r;
}
template <class T>
inline T k_remainder(T a, T b) {  // floating point: the divisor's sign
  T r = std::fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}

// F(float_to_int<I>(x)) for I int32 or int64: trunc(x) + 0 where x converts (the +0 turns trunc's
// -0 into the +0 an integer gives back), I's minimum elsewhere (NaN included). Written out because
// g++ folds float(int(x)) into trunc(x), sign of zero and all (codegen/cpp_expr.cpp).
template <class I, class F>
inline F k_float_through_int(F x) {
  static_assert(std::is_same_v<I, int32_t> || std::is_same_v<I, int64_t>);
  bool inside;
  if constexpr (sizeof(I) == 8) inside = x >= F(-0x1p63) && x < F(0x1p63);
  else if constexpr (sizeof(F) > sizeof(float)) inside = x > F(-2147483649.0) && x < F(0x1p31);
  else inside = x >= F(-0x1p31) && x < F(0x1p31);
  return inside ? std::trunc(x) + F(0) : static_cast<F>(std::numeric_limits<I>::min());
}

template <class T>
inline T k_pow(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    return std::pow(a, b);
  } else {
    if (b < 0) return a == 1 ? T(1) : (a == -1 ? T(b % 2 == 0 ? 1 : -1) : T(0));
    T result = 1, base = a;
    for (T e = b; e > 0; e >>= 1, base = cpu::wrapping_mul(base, base)) {
      if (e & 1) result = cpu::wrapping_mul(result, base);
    }
    return result;
  }
}

// An index the optimizer cannot see through. A masked load reads buf[k_opaque(g ? i : 0)]: with a
// plain `buf[g ? i : 0]` g++ proves every address valid, then vectorizes it as whole-vector loads
// and blends that run past the end of the buffer (seen against a guard page). The price: a loop
// with masked loads (cat, slice_scatter) stays scalar.
inline int64_t k_opaque(int64_t i) {
  asm("" : "+r"(i));
  return i;
}

// 16-bit floats are stored as their bits; conversions are branch-free so loops vectorize.
inline float k_from_bf16(uint16_t b) { return std::bit_cast<float>(static_cast<uint32_t>(b) << 16); }
inline uint16_t k_to_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  return static_cast<uint16_t>(f != f ? (x >> 16) | 0x40u : rounded);
}
// k_from_bf16(k_to_bf16(f)) in 32-bit lanes only: rounding a float32 value to bfloat16's precision
// without narrowing to 16 bits and widening back (two shuffles per vector when vectorized).
inline float k_round_bf16(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  uint32_t rounded = f != f ? x | 0x400000u : x + 0x7fffu + ((x >> 16) & 1u);
  return std::bit_cast<float>(rounded & 0xffff0000u);
}
inline float k_from_f16(uint16_t h) { return kiln::detail::half_bits_to_float(h); }
inline uint16_t k_to_f16(float f) { return kiln::detail::float_to_half_bits(f); }
inline float k_exp(float x) { return kiln::cpu::vec::vexp(x); }
inline double k_exp(double x) { return std::exp(x); }
inline float k_erf(float x) { return kiln::cpu::vec::erf(x); }
inline double k_erf(double x) { return std::erf(x); }
inline float k_tanh(float x) { return kiln::cpu::vec::tanh(x); }
inline double k_tanh(double x) { return std::tanh(x); }

// Where per-thread scratch comes from: kiln's runtime (compiler/codegen/scratch.h's thread_scratch),
// handed to each module it loads through the module's kiln_bind_scratch (generated code ends with
// it). Not a thread_local here: that would live in the dlopen'ed module's dynamic TLS, which
// LeakSanitizer's exit-time scan misread for some packages. Hidden: one per module.
using ScratchSource = void* (*)(int slot, size_t bytes);
__attribute__((visibility("hidden"))) inline ScratchSource k_scratch_source = nullptr;

// `count` elements of per-thread scratch (slot `slot` of the calling kernel): the rows a kernel
// keeps between its passes. A region grows when a longer row asks for it and lives as long as its
// thread, so a warm call allocates nothing (a fresh `new T[cols]` per call maps and faults in fresh
// pages once rows pass the allocator's mmap threshold). Kernels do not nest, so kernels share the
// regions.
template <class T>
inline T* k_scratch(int slot, int64_t count) {
  return static_cast<T*>(k_scratch_source(slot, static_cast<size_t>(count > 0 ? count : 1) * sizeof(T)));
}

// Copies `bytes` from `src` to `dst` with non-temporal stores (x86: the widest the target has, from
// the first boundary of that width in dst; ordinary stores for the unaligned head and the tail). A kernel whose
// output is larger than the last-level cache writes each finished row this way: the store does not
// read the line first (a plain store's read-for-ownership makes a copy move 3 bytes per 2), and the
// row does not evict the input it is still reading. The rows are ordered before other threads read
// them by k_stream_fence() at the end of each thread's loop.
inline void k_stream_copy(void* dst, const void* src, size_t bytes) {
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
#if defined(__AVX512F__)
  constexpr size_t kLine = 64;  // one store per cache line: the write-combining buffer fills at once
#elif defined(__AVX__)
  constexpr size_t kLine = 32;
#elif defined(__SSE2__)
  constexpr size_t kLine = 16;
#endif
#if defined(__SSE2__)
  size_t head = (kLine - (reinterpret_cast<uintptr_t>(d) & (kLine - 1))) & (kLine - 1);
  if (head > bytes) head = bytes;
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + kLine <= bytes; i += kLine) {
#if defined(__AVX512F__)
    _mm512_stream_si512(reinterpret_cast<__m512i*>(d + i), _mm512_loadu_si512(s + i));
#elif defined(__AVX__)
    _mm256_stream_si256(reinterpret_cast<__m256i*>(d + i), _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s + i)));
#else
    _mm_stream_si128(reinterpret_cast<__m128i*>(d + i), _mm_loadu_si128(reinterpret_cast<const __m128i*>(s + i)));
#endif
  }
  std::memcpy(d + i, s + i, bytes - i);
#else
  std::memcpy(d, s, bytes);
#endif
}
inline void k_stream_fence() {
#if defined(__SSE2__)
  _mm_sfence();
#endif
}

// Adds a row kernel's float partial column sums into its double ones and zeroes them (codegen's
// write_columns: every few rows, so that no float partial adds many values).
inline void k_fold_columns(double* __restrict total, float* __restrict part, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    total[i] += static_cast<double>(part[i]);
    part[i] = 0.0f;
  }
}

}  // namespace kiln::kernel_support
