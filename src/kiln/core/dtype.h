// DType: the element types a tensor can hold, PyTorch's names for them, their C++ types, and
// visit_dtype, which calls a generic lambda with the C++ type of a runtime dtype.
//
// The two complex dtypes (complex64, complex128) are storage dtypes: tensors of them can be made,
// viewed, copied and printed, and the FFT ops produce and consume them, but no arithmetic kernel
// handles them. visit_dtype therefore never instantiates a kernel for a complex type (it throws);
// the few ops that move complex elements use visit_dtype_with_complex.
#pragma once

#include <complex>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <type_traits>
#include <utility>

#include <fmt/format.h>

#include "kiln/core/half.h"
#include "kiln/support/error.h"

namespace kiln {

enum class DType : uint8_t {
  Bool,
  UInt8,
  Int8,
  Int16,
  Int32,
  Int64,
  Float16,
  BFloat16,
  Float32,
  Float64,
  ComplexFloat,   // complex64: two float32 (real, imaginary), std::complex<float>
  ComplexDouble,  // complex128: two float64, std::complex<double>
};
inline constexpr int kNumDTypes = 12;
inline constexpr DType kAllDTypes[] = {DType::Bool,    DType::UInt8,   DType::Int8,         DType::Int16,
                                       DType::Int32,   DType::Int64,   DType::Float16,      DType::BFloat16,
                                       DType::Float32, DType::Float64, DType::ComplexFloat, DType::ComplexDouble};
// The dtypes arithmetic kernels handle: every dtype but the complex ones.
inline constexpr DType kRealDTypes[] = {DType::Bool,  DType::UInt8,   DType::Int8,     DType::Int16,   DType::Int32,
                                        DType::Int64, DType::Float16, DType::BFloat16, DType::Float32, DType::Float64};

size_t element_size(DType t);
// PyTorch's canonical name: "float32", "int64", "bool", ...
std::string_view dtype_name(DType t);
// Accepts canonical names and PyTorch's aliases ("float", "long", "half", "double", "int", ...).
std::optional<DType> parse_dtype(std::string_view name);

constexpr bool is_floating(DType t) {
  return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
constexpr bool is_complex(DType t) { return t == DType::ComplexFloat || t == DType::ComplexDouble; }
constexpr bool is_integral(DType t, bool include_bool) {
  return (include_bool && t == DType::Bool) || (t != DType::Bool && !is_floating(t) && !is_complex(t));
}
constexpr bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
// torch.finfo(t).eps of a floating dtype: the distance from 1 to the next larger value.
constexpr double machine_epsilon(DType t) {
  switch (t) {
    case DType::Float16: return 0x1p-10;
    case DType::BFloat16: return 0x1p-7;
    case DType::Float32: return 0x1p-23;
    default: return 0x1p-52;
  }
}
constexpr bool is_signed(DType t) { return t != DType::Bool && t != DType::UInt8; }

template <class T>
struct DTypeOf;
template <>
struct DTypeOf<bool> {
  static constexpr DType value = DType::Bool;
};
template <>
struct DTypeOf<uint8_t> {
  static constexpr DType value = DType::UInt8;
};
template <>
struct DTypeOf<int8_t> {
  static constexpr DType value = DType::Int8;
};
template <>
struct DTypeOf<int16_t> {
  static constexpr DType value = DType::Int16;
};
template <>
struct DTypeOf<int32_t> {
  static constexpr DType value = DType::Int32;
};
template <>
struct DTypeOf<int64_t> {
  static constexpr DType value = DType::Int64;
};
template <>
struct DTypeOf<Half> {
  static constexpr DType value = DType::Float16;
};
template <>
struct DTypeOf<BFloat16> {
  static constexpr DType value = DType::BFloat16;
};
template <>
struct DTypeOf<float> {
  static constexpr DType value = DType::Float32;
};
template <>
struct DTypeOf<double> {
  static constexpr DType value = DType::Float64;
};
template <>
struct DTypeOf<std::complex<float>> {
  static constexpr DType value = DType::ComplexFloat;
};
template <>
struct DTypeOf<std::complex<double>> {
  static constexpr DType value = DType::ComplexDouble;
};
template <class T>
inline constexpr DType dtype_of = DTypeOf<T>::value;

// The type arithmetic happens in: float for the 16-bit floats, the type itself otherwise.
template <class T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<Half> {
  using type = float;
};
template <>
struct OpMath<BFloat16> {
  using type = float;
};
template <class T>
using opmath_t = typename OpMath<T>::type;

// The complex dtype whose parts are `t` (float32 -> complex64, float64 -> complex128), and back.
std::optional<DType> complex_of(DType t);
std::optional<DType> real_part_of(DType t);

namespace detail {
// Thrown by visit_dtype for a complex dtype: kernels are never instantiated for complex types.
[[noreturn]] void complex_dtype_unsupported(DType t);
}  // namespace detail

// Calls f.template operator()<T>() with T the C++ type of `t`, for every real dtype; a complex
// dtype throws kiln::Error (kind NotImplemented) without instantiating `f` for a complex type.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Bool: return f.template operator()<bool>();
    case DType::UInt8: return f.template operator()<uint8_t>();
    case DType::Int8: return f.template operator()<int8_t>();
    case DType::Int16: return f.template operator()<int16_t>();
    case DType::Int32: return f.template operator()<int32_t>();
    case DType::Int64: return f.template operator()<int64_t>();
    case DType::Float16: return f.template operator()<Half>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    case DType::ComplexFloat:
    case DType::ComplexDouble: detail::complex_dtype_unsupported(t);
  }
  KILN_FAIL(ErrorKind::Internal, "visit_dtype: bad dtype {}", static_cast<int>(t));
}

// Like visit_dtype, and also calls f with std::complex<float> / std::complex<double>: for the
// few kernels that only move elements (copies, fills) or that are written for complex (FFT).
template <class F>
decltype(auto) visit_dtype_with_complex(DType t, F&& f) {
  if (t == DType::ComplexFloat) return f.template operator()<std::complex<float>>();
  if (t == DType::ComplexDouble) return f.template operator()<std::complex<double>>();
  return visit_dtype(t, std::forward<F>(f));
}

// Like visit_dtype, restricted to the floating dtypes; `op` names the caller in the error.
template <class F>
decltype(auto) visit_floating(DType t, std::string_view op, F&& f) {
  switch (t) {
    case DType::Float16: return f.template operator()<Half>();
    case DType::BFloat16: return f.template operator()<BFloat16>();
    case DType::Float32: return f.template operator()<float>();
    case DType::Float64: return f.template operator()<double>();
    default: break;
  }
  KILN_FAIL(ErrorKind::Type, "{}: expected a floating point dtype, got {}", op, dtype_name(t));
}

}  // namespace kiln

template <>
struct fmt::formatter<kiln::DType> : fmt::formatter<std::string_view> {
  auto format(kiln::DType t, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(kiln::dtype_name(t), ctx);
  }
};
