#include "kiln/core/scalar.h"

#include <cmath>

namespace kiln {

DType Scalar::natural_dtype() const {
  switch (kind_) {
    case Kind::Bool: return DType::Bool;
    case Kind::Int: return DType::Int64;
    case Kind::Double: return DType::Float64;
  }
  return DType::Float64;
}

std::string Scalar::to_string() const {
  switch (kind_) {
    case Kind::Bool: return i_ ? "True" : "False";
    case Kind::Int: return std::to_string(i_);
    case Kind::Double:
      if (std::isnan(d_)) return "nan";
      if (std::isinf(d_)) return d_ > 0 ? "inf" : "-inf";
      if (d_ == std::floor(d_) && std::abs(d_) < 1e16) return fmt::format("{:.1f}", d_);
      return fmt::format("{}", d_);
  }
  return "?";
}

bool Scalar::operator==(const Scalar& o) const {
  if (kind_ != o.kind_) return false;
  return kind_ == Kind::Double ? d_ == o.d_ : i_ == o.i_;
}

}  // namespace kiln
