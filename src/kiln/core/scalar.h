// Scalar: a number that is not a tensor — a bool, a 64-bit integer or a double — as passed to ops
// like add(x, 2.5). Its kind matters for type promotion (a Python-style "wrapped number").
#pragma once

#include <concepts>
#include <cstdint>
#include <string>

#include "kiln/core/dtype.h"
#include "kiln/core/float_to_int.h"

namespace kiln {

class Scalar {
 public:
  enum class Kind : uint8_t { Bool, Int, Double };

  Scalar() : Scalar(int64_t{0}) {}
  template <std::integral T>
  Scalar(T v) {  // NOLINT: implicit, like a number literal
    if constexpr (std::same_as<T, bool>) {
      kind_ = Kind::Bool;
      i_ = v ? 1 : 0;
    } else {
      kind_ = Kind::Int;
      i_ = static_cast<int64_t>(v);
    }
  }
  template <std::floating_point T>
  Scalar(T v) : kind_(Kind::Double), d_(static_cast<double>(v)) {}  // NOLINT
  Scalar(Half v) : Scalar(static_cast<float>(v)) {}                 // NOLINT
  Scalar(BFloat16 v) : Scalar(static_cast<float>(v)) {}             // NOLINT

  Kind kind() const { return kind_; }
  bool is_bool() const { return kind_ == Kind::Bool; }
  bool is_integral() const { return kind_ == Kind::Int; }
  bool is_floating_point() const { return kind_ == Kind::Double; }

  // The value converted to T with C++ conversion rules (the caller checks range where it matters);
  // a double to an integer type as a tensor's conversion does (float_to_int.h), never undefined.
  template <class T>
  T to() const {
    if constexpr (std::same_as<T, bool>) {
      return kind_ == Kind::Double ? d_ != 0.0 : i_ != 0;
    } else if constexpr (std::integral<T>) {
      return kind_ == Kind::Double ? float_to_int<T>(d_) : static_cast<T>(i_);
    } else if (kind_ == Kind::Double) {
      return static_cast<T>(static_cast<opmath_t<T>>(d_));
    } else {
      return static_cast<T>(static_cast<opmath_t<T>>(i_));
    }
  }
  double to_double() const { return kind_ == Kind::Double ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return kind_ == Kind::Double ? float_to_int64(d_) : i_; }

  // The dtype of a tensor holding this value exactly: bool, int64 or float64.
  DType natural_dtype() const;
  // PyTorch's repr: "2", "2.5", "True", "inf", "nan".
  std::string to_string() const;
  bool operator==(const Scalar& o) const;

 private:
  Kind kind_;
  union {
    int64_t i_;
    double d_;
  };
};

}  // namespace kiln

template <>
struct fmt::formatter<kiln::Scalar> : fmt::formatter<std::string> {
  auto format(const kiln::Scalar& s, fmt::format_context& ctx) const {
    return fmt::formatter<std::string>::format(s.to_string(), ctx);
  }
};
