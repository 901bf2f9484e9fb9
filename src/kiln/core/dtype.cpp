#include "kiln/core/dtype.h"

#include <utility>

namespace kiln {

size_t element_size(DType t) {
  return visit_dtype(t, []<class T>() { return sizeof(T); });
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
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
  static constexpr std::pair<std::string_view, DType> kAliases[] = {
      {"bool", DType::Bool},     {"uint8", DType::UInt8},       {"byte", DType::UInt8},
      {"int8", DType::Int8},     {"char", DType::Int8},         {"int16", DType::Int16},
      {"short", DType::Int16},   {"int32", DType::Int32},       {"int", DType::Int32},
      {"int64", DType::Int64},   {"long", DType::Int64},        {"float16", DType::Float16},
      {"half", DType::Float16},  {"bfloat16", DType::BFloat16}, {"float32", DType::Float32},
      {"float", DType::Float32}, {"float64", DType::Float64},   {"double", DType::Float64},
  };
  for (const auto& [alias, t] : kAliases) {
    if (alias == name) return t;
  }
  return std::nullopt;
}

}  // namespace kiln
