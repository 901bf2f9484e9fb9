// Integer sums and products that wrap around (two's complement), as PyTorch's integer kernels do; signed
// overflow in C++ is undefined, so integers multiply as unsigned. Floats multiply as usual.
#pragma once

#include <type_traits>

namespace kiln::cpu {

template <class T>
inline T wrapping_mul(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<decltype(a * b)>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) * static_cast<U>(b)));
  } else {
    return T(a * b);
  }
}

template <class T>
inline T wrapping_add(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<decltype(a + b)>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) + static_cast<U>(b)));
  } else {
    return T(a + b);
  }
}

template <class T>
inline T wrapping_sub(T a, T b) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    using U = std::make_unsigned_t<decltype(a - b)>;
    return static_cast<T>(static_cast<U>(static_cast<U>(a) - static_cast<U>(b)));
  } else {
    return T(a - b);
  }
}

template <class T>
inline T wrapping_neg(T a) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    return wrapping_sub(T(0), a);
  } else {
    return T(-a);
  }
}

// Integer division truncating toward zero, and its remainder. The one quotient that overflows,
// min / -1, wraps to min (two's complement) where the CPU would trap; its remainder is 0. The
// divisor must be nonzero.
template <class T>
inline T wrapping_div(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return wrapping_neg(a);
  }
  return T(a / b);
}

template <class T>
inline T wrapping_rem(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == T(-1)) return T(0);
  }
  return T(a % b);
}

}  // namespace kiln::cpu
