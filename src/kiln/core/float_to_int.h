// Floating-point to integer conversion with a result for every value. C++'s static_cast is
// undefined for NaN, infinities and values whose truncation the target cannot hold, and compilers
// then emit whatever they like (one loop saturates, another wraps). kiln defines these conversions
// as PyTorch's CPU kernels compute them on x86-64 (measured with PyTorch 2.13 on contiguous and
// strided tensors alike, docs/conformance.md): truncation toward zero; to int64, a value outside
// [-2^63, 2^63) or NaN gives INT64_MIN, and to int32 one outside (-2^31 - 1, 2^31) gives INT32_MIN
// (the x86 "integer indefinite"); int16 and int8 take the low bits of the int32 result, uint8 the
// low bits of the int64 one; bool is x != 0 (NaN is true). Eager kernels, Scalar and generated
// code all convert through `float_to_int`.
#pragma once

#include <cstdint>
#include <type_traits>

namespace kiln {

// x truncated toward zero as int64, or INT64_MIN where that is not an int64 (NaN included).
template <class F>
inline int64_t float_to_int64(F x) {
  static_assert(std::is_floating_point_v<F>);
  // -2^63 and 2^63 are exact in every floating type; nothing between -2^63 - 1 and -2^63 is.
  return x >= F(-0x1p63) && x < F(0x1p63) ? static_cast<int64_t>(x) : INT64_MIN;
}

// x truncated toward zero as int32, or INT32_MIN where that is not an int32 (NaN included).
template <class F>
inline int32_t float_to_int32(F x) {
  static_assert(std::is_floating_point_v<F>);
  if constexpr (sizeof(F) > sizeof(float)) {
    return x > F(-2147483649.0) && x < F(0x1p31) ? static_cast<int32_t>(x) : INT32_MIN;
  } else {  // no float lies strictly between -2^31 - 1 and -2^31
    return x >= F(-0x1p31) && x < F(0x1p31) ? static_cast<int32_t>(x) : INT32_MIN;
  }
}

// x (a float or double) as the integer or bool type I, by the rules above.
template <class I, class F>
inline I float_to_int(F x) {
  static_assert(std::is_floating_point_v<F> && std::is_integral_v<I>);
  if constexpr (std::is_same_v<I, bool>) {
    return x != F(0);
  } else if constexpr (std::is_same_v<I, int64_t> || std::is_same_v<I, uint8_t> || sizeof(I) > sizeof(int32_t)) {
    return static_cast<I>(float_to_int64(x));  // uint8: the low byte of the int64 result
  } else {
    return static_cast<I>(float_to_int32(x));  // int32; int16 and int8 keep the low bits
  }
}

}  // namespace kiln
