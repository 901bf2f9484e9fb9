// What generated CUDA kernels call (codegen/cuda/cuda.h): the device-side twin of
// codegen/kernel_support.h, with the same names and the same semantics as eager's CPU kernels —
// integer arithmetic that wraps around, integer division that reports a zero divisor through the
// run's status word, NaN-propagating max/min, float-to-integer conversions as x86's, 16-bit floats
// rounded to nearest even. NVRTC compiles it with no system header: the fixed-width integer types
// and limits it needs are its own. Requires sm_80 or later (bfloat16 conversions).
#pragma once

typedef signed char int8_t;
typedef short int16_t;
typedef int int32_t;
typedef long long int64_t;
typedef unsigned char uint8_t;
typedef unsigned short uint16_t;
typedef unsigned int uint32_t;
typedef unsigned long long uint64_t;
#define INT64_MIN (-9223372036854775807LL - 1)
#define INT32_MIN (-2147483647 - 1)

#include "kiln/kernels/special_math.h"

namespace kiln {

template <class T> struct k_limits;
template <> struct k_limits<float> {
  __device__ static float infinity() { return __int_as_float(0x7f800000); }
  __device__ static float quiet_NaN() { return __int_as_float(0x7fc00000); }
};
template <> struct k_limits<double> {
  __device__ static double infinity() { return __longlong_as_double(0x7ff0000000000000LL); }
  __device__ static double quiet_NaN() { return __longlong_as_double(0x7ff8000000000000LL); }
};
#define KILN_INT_LIMITS(T, LO, HI)                   \
  template <> struct k_limits<T> {                   \
    __device__ static constexpr T lowest() { return LO; } \
    __device__ static constexpr T max() { return HI; }    \
  };
KILN_INT_LIMITS(bool, false, true)
KILN_INT_LIMITS(int8_t, -128, 127)
KILN_INT_LIMITS(uint8_t, 0, 255)
KILN_INT_LIMITS(int16_t, -32768, 32767)
KILN_INT_LIMITS(int32_t, INT32_MIN, 2147483647)
KILN_INT_LIMITS(int64_t, INT64_MIN, 9223372036854775807LL)
#undef KILN_INT_LIMITS

template <class T> struct k_unsigned { typedef T type; };
template <> struct k_unsigned<int8_t> { typedef uint8_t type; };
template <> struct k_unsigned<int16_t> { typedef uint16_t type; };
template <> struct k_unsigned<int32_t> { typedef uint32_t type; };
template <> struct k_unsigned<int64_t> { typedef uint64_t type; };
template <class T> __device__ constexpr bool k_is_signed() { return T(-1) < T(0); }
template <class T> __device__ constexpr bool k_is_float() { return T(0.5) != T(0) && T(1.5) != T(1); }

// Float to integer as x86's conversions (core/float_to_int.h): out of range or NaN gives the
// integer's minimum (int32 and int64; narrower types keep the low bits of the int32 or int64).
template <class I, class F>
__device__ inline I float_to_int(F x) {
  if constexpr (sizeof(I) == 1 && I(-1) > I(0)) {  // uint8 (and bool, handled by the generator): from int64
    return static_cast<I>(x >= F(-0x1p63) && x < F(0x1p63) ? static_cast<int64_t>(x) : INT64_MIN);
  } else if constexpr (sizeof(I) == 8) {
    return static_cast<I>(x >= F(-0x1p63) && x < F(0x1p63) ? static_cast<int64_t>(x) : INT64_MIN);
  } else if constexpr (sizeof(F) > sizeof(float)) {
    return static_cast<I>(x > F(-2147483649.0) && x < F(0x1p31) ? static_cast<int32_t>(x) : INT32_MIN);
  } else {
    return static_cast<I>(x >= F(-0x1p31) && x < F(0x1p31) ? static_cast<int32_t>(x) : INT32_MIN);
  }
}

namespace kernel_support {

template <class T> __device__ inline T k_max(T a, T b) { return a != a ? a : (b != b ? b : (a > b ? a : b)); }
template <class T> __device__ inline T k_min(T a, T b) { return a != a ? a : (b != b ? b : (a < b ? a : b)); }
template <class T> __device__ inline T k_sign(T x) { return T((T(0) < x) - (x < T(0))); }

// Two's complement arithmetic, computed on the unsigned type (C++'s signed overflow is undefined).
template <class T> __device__ inline T k_add(T a, T b) {
  typedef typename k_unsigned<T>::type U;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
}
template <class T> __device__ inline T k_sub(T a, T b) {
  typedef typename k_unsigned<T>::type U;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
}
template <class T> __device__ inline T k_mul(T a, T b) {
  typedef typename k_unsigned<T>::type U;
  return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
}
template <class T> __device__ inline T k_neg(T a) { return k_sub(T(0), a); }
template <class T> __device__ inline T k_abs(T a) { return k_is_signed<T>() && a < T(0) ? k_neg(a) : a; }

// The first site that failed is kept (a later kernel of the run cannot overwrite it).
__device__ inline void k_report(int* status, int site) { atomicCAS(status, 0, site); }
template <class T> __device__ inline T k_div(T a, T b, int* status, int site) {
  if (b == T(0)) return k_report(status, site), T(0);
  if (k_is_signed<T>() && b == T(-1)) return k_neg(a);
  return T(a / b);
}
template <class T> __device__ inline T k_fmod(T a, T b, int* status, int site) {
  if (b == T(0)) return k_report(status, site), T(0);
  if (k_is_signed<T>() && b == T(-1)) return T(0);
  return T(a % b);
}
template <class T> __device__ inline T k_remainder(T a, T b, int* status, int site) {
  T r = k_fmod(a, b, status, site);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? T(r + b) : r;
}
template <class T> __device__ inline T k_remainder(T a, T b) {  // floating point: the divisor's sign
  T r = fmod(a, b);
  return (r != T(0) && ((r < T(0)) != (b < T(0)))) ? r + b : r;
}

// Squares and cubes are products (a square is exactly the correctly rounded pow; a cube within an
// ulp of it, as eager's pow by a scalar computes it): a scalar exponent converted to the compute
// type reaches here (rmsnorm's x.pow(2) of bfloat16), and CUDA's pow is a long polynomial that a
// constant exponent does not shorten. Other exponents: CUDA's pow.
template <class T> __device__ inline T k_pow(T a, T b) {
  if constexpr (k_is_float<T>()) {
    if (b == T(2)) return a * a;
    if (b == T(3)) return a * a * a;
    return pow(a, b);
  } else {
    if (b < T(0)) return a == T(1) ? T(1) : (a == T(-1) ? T(b % 2 == 0 ? 1 : -1) : T(0));
    T result = 1, base = a;
    for (T e = b; e > T(0); e >>= 1, base = k_mul(base, base)) {
      if (e & 1) result = k_mul(result, base);
    }
    return result;
  }
}

__device__ inline int64_t k_opaque(int64_t i) { return i; }

// F(float_to_int<I>(x)) for I int32 or int64, as the CPU's (codegen/kernel_support.h).
template <class I, class F> __device__ inline F k_float_through_int(F x) {
  bool inside;
  if constexpr (sizeof(I) == 8) inside = x >= F(-0x1p63) && x < F(0x1p63);
  else if constexpr (sizeof(F) > sizeof(float)) inside = x > F(-2147483649.0) && x < F(0x1p31);
  else inside = x >= F(-0x1p31) && x < F(0x1p31);
  return inside ? trunc(x) + F(0) : static_cast<F>(k_limits<I>::lowest());
}

// Whether every pointer is a multiple of `Bytes` (a kernel's vector path, codegen/cuda/cuda.cpp).
template <int Bytes, class... P> __device__ inline bool k_aligned(P*... p) {
  return ((reinterpret_cast<uint64_t>(p) | ... | uint64_t{0}) % Bytes) == 0;
}

// N consecutive elements at p, one vector access where p is aligned to the vector (`Align` bytes
// known), else N scalar ones.
template <class T, int N> struct alignas(sizeof(T) * N) k_vec { T v[N]; };
template <int N, int Align, class T> __device__ inline k_vec<T, N> k_load_vec(const T* p) {
  if constexpr (Align % (sizeof(T) * N) == 0) {
    return *reinterpret_cast<const k_vec<T, N>*>(p);
  } else {
    k_vec<T, N> r;
#pragma unroll
    for (int i = 0; i < N; ++i) r.v[i] = p[i];
    return r;
  }
}
template <int N, int Align, class T> __device__ inline void k_store_vec(T* p, const T (&values)[N]) {
  if constexpr (Align % (sizeof(T) * N) == 0) {
    k_vec<T, N> r;
#pragma unroll
    for (int i = 0; i < N; ++i) r.v[i] = values[i];
    *reinterpret_cast<k_vec<T, N>*>(p) = r;
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) p[i] = values[i];
  }
}

// Staged loads (a persistent row kernel's next row, codegen/cuda/cuda.cpp): the N elements at p
// copied into shared memory at `stage` by an asynchronous copy (cp.async, sm_80) while the block
// computes, then read from there after k_staged_wait(); where p is not aligned to the copy (the
// kernel's unaligned path), not copied and read from p when used.
template <int N, int Align, class T> __device__ constexpr bool k_stages() {
  return Align % (sizeof(T) * N) == 0 && (sizeof(T) * N == 4 || sizeof(T) * N == 8 || sizeof(T) * N == 16);
}
template <int N, int Align, class T> __device__ inline void k_copy_async(T* stage, const T* p) {
  if constexpr (k_stages<N, Align, T>()) {
    const unsigned to = static_cast<unsigned>(__cvta_generic_to_shared(stage));
    if constexpr (sizeof(T) * N == 16) {  // around L1: the row is read once
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(to), "l"(p) : "memory");
    } else {
      asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(to), "l"(p), "n"(sizeof(T) * N) : "memory");
    }
  }
}
// A kernel launched as a programmatic dependent (Target::dependent_launch) starts while the previous
// kernel of its stream finishes: before it touches memory, it waits until that kernel has completed
// and its writes are visible. Launched plainly, the wait returns at once.
__device__ inline void k_wait_prior_grids() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// The thread's copies have landed (each thread reads back only what it copied: no barrier).
__device__ inline void k_staged_wait() { asm volatile("cp.async.wait_all;\n" ::: "memory"); }
template <int N, int Align, class T> __device__ inline k_vec<T, N> k_staged_vec(const T* p, const T* stage) {
  if constexpr (k_stages<N, Align, T>()) {
    return *reinterpret_cast<const k_vec<T, N>*>(stage);
  } else {
    return k_load_vec<N, Align>(p);
  }
}

__device__ inline float k_from_bf16(uint16_t b) { return __uint_as_float(static_cast<uint32_t>(b) << 16); }
__device__ inline uint16_t k_to_bf16(float f) {
  uint16_t r;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
__device__ inline float k_round_bf16(float f) { return k_from_bf16(k_to_bf16(f)); }
__device__ inline float k_from_f16(uint16_t h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}
__device__ inline uint16_t k_to_f16(float f) {
  uint16_t r;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(f));
  return r;
}
__device__ inline float k_exp(float x) { return expf(x); }
__device__ inline double k_exp(double x) { return exp(x); }
__device__ inline float k_erf(float x) { return erff(x); }
__device__ inline double k_erf(double x) { return erf(x); }
__device__ inline float k_tanh(float x) { return tanhf(x); }
__device__ inline double k_tanh(double x) { return tanh(x); }

// The functors reductions combine with. Sums and products commute exactly (IEEE addition and
// multiplication, wrapping integers); max and min of a +0 and a -0 do not (k_max(-0, +0) is +0,
// k_max(+0, -0) is -0), so lanes of a butterfly may end with different zeros.
struct k_sum {
  static constexpr bool kCommutes = true;
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (k_is_float<T>()) return a + b;
    else return k_add(a, b);
  }
};
struct k_prod {
  static constexpr bool kCommutes = true;
  template <class T> __device__ T operator()(T a, T b) const {
    if constexpr (k_is_float<T>()) return a * b;
    else return k_mul(a, b);
  }
};
struct k_maxop {
  static constexpr bool kCommutes = false;
  template <class T> __device__ T operator()(T a, T b) const { return k_max(a, b); }
};
struct k_minop {
  static constexpr bool kCommutes = false;
  template <class T> __device__ T operator()(T a, T b) const { return k_min(a, b); }
};

// Warp and block reductions of one value per thread, in a fixed order (deterministic for a block
// size). `Combine` is one of the functors above; `shared` holds one value per warp; every thread
// gets the same result (a butterfly combines the same two values at each step, in either order;
// where the functor does not commute, every lane then takes lane 0's).
template <class T> __device__ inline T k_shfl_xor(T v, int mask) {
  if constexpr (sizeof(T) < sizeof(int)) {
    return static_cast<T>(__shfl_xor_sync(0xffffffffu, static_cast<int>(v), mask));
  } else {
    return __shfl_xor_sync(0xffffffffu, v, mask);
  }
}
template <class T, class Combine> __device__ inline T k_uniform(T v, Combine) {
  if constexpr (Combine::kCommutes) {
    return v;
  } else if constexpr (sizeof(T) < sizeof(int)) {
    return static_cast<T>(__shfl_sync(0xffffffffu, static_cast<int>(v), 0));
  } else {
    return __shfl_sync(0xffffffffu, v, 0);
  }
}
// The values of each group of Lanes consecutive lanes combined by a butterfly (lane 0's is the
// group's total; k_uniform makes it every lane's).
template <int Lanes, class T, class Combine> __device__ inline T k_butterfly(T v, Combine combine) {
#pragma unroll
  for (int mask = Lanes >> 1; mask > 0; mask >>= 1) v = combine(v, k_shfl_xor(v, mask));
  return v;
}
template <class T, class Combine> __device__ inline T k_warp_reduce(T v, Combine combine) {
  return k_uniform(k_butterfly<32>(v, combine), combine);
}
// A block of Warps warps (a power of two: the block sizes of codegen/cuda/cuda.cpp's row kernels).
template <int Warps, class T, class Combine> __device__ inline T k_block_reduce(T v, Combine combine, T* shared) {
  static_assert(Warps >= 1 && Warps <= 32 && (Warps & (Warps - 1)) == 0, "a power of two of warps");
  if constexpr (Warps == 1) {
    return k_warp_reduce(v, combine);
  } else {
    v = k_butterfly<32>(v, combine);  // lane 0's is its warp's total
    __syncthreads();                  // `shared` may still be read by the previous reduction
    if ((threadIdx.x & 31) == 0) shared[threadIdx.x >> 5] = v;
    __syncthreads();
    // Each warp combines the warps' totals (lane i holds warp i % Warps's).
    return k_uniform(k_butterfly<Warps>(shared[threadIdx.x & (Warps - 1)], combine), combine);
  }
}

}  // namespace kernel_support
}  // namespace kiln
