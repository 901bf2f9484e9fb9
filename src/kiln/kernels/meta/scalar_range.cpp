#include "kiln/kernels/meta/scalar_range.h"

#include <cmath>
#include <limits>

#include "kiln/support/error.h"

namespace kiln::meta {
namespace {

// The range of an integer dtype.
struct IntRange {
  int64_t lowest, max;
};

IntRange int_range(DType dtype) {
  return visit_dtype(dtype, []<class T>() {
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return IntRange{static_cast<int64_t>(std::numeric_limits<T>::lowest()),
                      static_cast<int64_t>(std::numeric_limits<T>::max())};
    } else {
      return IntRange{0, 0};
    }
  });
}

// The largest finite value of a floating dtype.
double float_max(DType dtype) {
  switch (dtype) {
    case DType::Float16: return 65504.0;
    case DType::BFloat16: return 3.3895313892515355e38;
    case DType::Float32:
    case DType::ComplexFloat: return static_cast<double>(std::numeric_limits<float>::max());
    default: return std::numeric_limits<double>::max();
  }
}

bool int_fits(int64_t v, DType dtype) {
  IntRange r = int_range(dtype);
  if (r.lowest == 0 && v < 0) {
    // Unsigned: a negative value wraps, as long as its magnitude is in range.
    return static_cast<uint64_t>(0) - static_cast<uint64_t>(v) <= static_cast<uint64_t>(r.max);
  }
  return v >= r.lowest && v <= r.max;
}

bool double_fits_int(double v, DType dtype) {
  if (!std::isfinite(v)) return false;
  IntRange r = int_range(dtype);
  // 2^63 is the first double past int64's range (its max rounds up to it as a double).
  if (dtype == DType::Int64) return v >= -9223372036854775808.0 && v < 9223372036854775808.0;
  return v >= static_cast<double>(r.lowest) && v <= static_cast<double>(r.max);
}

}  // namespace

bool scalar_fits(const Scalar& value, DType dtype) {
  if (dtype == DType::Bool || value.is_bool()) return true;
  if (is_floating(dtype) || is_complex(dtype)) {  // a complex dtype: the real part's range
    double v = value.to_double();
    return !std::isfinite(v) || std::abs(v) <= float_max(dtype);
  }
  return value.is_integral() ? int_fits(value.to_int(), dtype) : double_fits_int(value.to_double(), dtype);
}

void check_scalar_fits(const Scalar& value, DType dtype, std::string_view op, std::string_view arg) {
  KILN_CHECK(scalar_fits(value, dtype), "{}: value cannot be converted to type {} without overflow ({} = {})", op,
             dtype_name(dtype), arg, value);
}

}  // namespace kiln::meta
