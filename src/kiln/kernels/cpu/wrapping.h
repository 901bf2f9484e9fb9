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

}  // namespace kiln::cpu
