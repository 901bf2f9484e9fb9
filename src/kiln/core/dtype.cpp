#include "kiln/core/dtype.h"

#include <utility>

namespace kiln {

size_t element_size(DType t) {
  return visit_dtype_with_complex(t, []<class T>() { return sizeof(T); });
}

std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8";
    case DType::Int8: return "int8";
    case DType::Int16: return "int16";
    case DType::Int32: return "int32";
    case DType::Int64: return "int64";
    case DType::Float16: return "float16";
    case DType::BFloat16: return "bfloat16";
    case DType::Float32: return "float32";
    case DType::Float64: return "float64";
    case DType::ComplexFloat: return "complex64";
    case DType::ComplexDouble: return "complex128";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  static constexpr std::pair<std::string_view, DType> kAliases[] = {
      {"bool", DType::Bool},
      {"uint8", DType::UInt8},
      {"byte", DType::UInt8},
      {"int8", DType::Int8},
      {"char", DType::Int8},
      {"int16", DType::Int16},
      {"short", DType::Int16},
      {"int32", DType::Int32},
      {"int", DType::Int32},
      {"int64", DType::Int64},
      {"long", DType::Int64},
      {"float16", DType::Float16},
      {"half", DType::Float16},
      {"bfloat16", DType::BFloat16},
      {"float32", DType::Float32},
      {"float", DType::Float32},
      {"float64", DType::Float64},
      {"double", DType::Float64},
      {"complex64", DType::ComplexFloat},
      {"cfloat", DType::ComplexFloat},
      {"complex128", DType::ComplexDouble},
      {"cdouble", DType::ComplexDouble},
  };
  for (const auto& [alias, t] : kAliases) {
    if (alias == name) return t;
  }
  return std::nullopt;
}

std::optional<DType> complex_of(DType t) {
  if (t == DType::Float32) return DType::ComplexFloat;
  if (t == DType::Float64) return DType::ComplexDouble;
  return std::nullopt;
}

std::optional<DType> real_part_of(DType t) {
  if (t == DType::ComplexFloat) return DType::Float32;
  if (t == DType::ComplexDouble) return DType::Float64;
  return std::nullopt;
}

namespace detail {
void complex_dtype_unsupported(DType t) {
  KILN_FAIL(ErrorKind::NotImplemented,
            "{} tensors are storage only in kiln: this kernel has no complex implementation (complex tensors "
            "support views, copies, printing and the FFT ops)",
            dtype_name(t));
}
}  // namespace detail

}  // namespace kiln
