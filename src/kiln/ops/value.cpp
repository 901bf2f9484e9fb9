#include "kiln/ops/value.h"

#include <charconv>
#include <cstdlib>

namespace kiln {

Value::Value(const Scalar& s) {
  switch (s.kind()) {
    case Scalar::Kind::Bool: v_ = s.to<bool>(); break;
    case Scalar::Kind::Int: v_ = s.to_int(); break;
    case Scalar::Kind::Double: v_ = s.to_double(); break;
  }
}

double Value::to_double() const {
  if (tag() == Tag::Int) return static_cast<double>(std::get<int64_t>(v_));
  return get<double>("float");
}

Scalar Value::to_scalar() const {
  switch (tag()) {
    case Tag::Int: return Scalar(std::get<int64_t>(v_));
    case Tag::Double: return Scalar(std::get<double>(v_));
    case Tag::Bool: return Scalar(std::get<bool>(v_));
    default: break;
  }
  KILN_FAIL(ErrorKind::Type, "expected a boxed Scalar, got {}", type_name());
}

std::string_view Value::type_name() const {
  static constexpr std::string_view kNames[] = {"None",      "Tensor",     "int",     "float",  "bool",
                                                "str",       "int[]",      "float[]", "bool[]", "Tensor[]",
                                                "Tensor?[]", "ScalarType", "Device",  "Layout", "MemoryFormat"};
  return kNames[v_.index()];
}

std::string Value::repr() const {
  switch (tag()) {
    case Tag::None: return "None";
    case Tag::Tensor: return to_tensor().describe();
    case Tag::Int: return std::to_string(to_int());
    case Tag::Double: return Scalar(std::get<double>(v_)).to_string();
    case Tag::Bool: return to_bool() ? "True" : "False";
    case Tag::String: return fmt::format("'{}'", to_string_value());
    case Tag::IntList: return fmt::format("{}", IntArrayRef(to_int_list()));
    case Tag::DoubleList: {
      std::vector<std::string> parts;
      for (double d : to_double_list()) parts.push_back(Scalar(d).to_string());
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case Tag::BoolList: {
      std::vector<std::string_view> parts;
      for (bool b : to_bool_list()) parts.push_back(b ? "True" : "False");
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case Tag::TensorList: {
      std::vector<std::string> parts;
      for (const auto& t : to_tensor_list()) parts.push_back(t.describe());
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case Tag::OptionalTensorList: {
      std::vector<std::string> parts;
      for (const auto& t : to_optional_tensor_list()) parts.push_back(t ? t->describe() : "None");
      return fmt::format("[{}]", fmt::join(parts, ", "));
    }
    case Tag::DType: return std::string(dtype_name(to_dtype()));
    case Tag::Device: return to_device().to_string();
    case Tag::Layout: return "strided";
    case Tag::MemoryFormat: return std::string(memory_format_name(to_memory_format()));
  }
  return "?";
}

namespace {

bool element_matches(const Value& v, BaseType base) {
  using Tag = Value::Tag;
  switch (base) {
    case BaseType::Tensor: return v.tag() == Tag::Tensor;
    case BaseType::Int:
    case BaseType::SymInt: return v.tag() == Tag::Int;
    case BaseType::Float: return v.tag() == Tag::Double;
    case BaseType::Bool:
    case BaseType::SymBool: return v.tag() == Tag::Bool;
    case BaseType::Scalar: return v.tag() == Tag::Int || v.tag() == Tag::Double || v.tag() == Tag::Bool;
    case BaseType::Str: return v.tag() == Tag::String;
    case BaseType::ScalarType: return v.tag() == Tag::DType;
    case BaseType::Layout: return v.tag() == Tag::Layout;
    case BaseType::Device: return v.tag() == Tag::Device;
    case BaseType::MemoryFormat: return v.tag() == Tag::MemoryFormat;
    case BaseType::Generator: return false;
  }
  return false;
}

Value::Tag list_tag(const Type& t) {
  switch (t.base) {
    case BaseType::Int:
    case BaseType::SymInt: return Value::Tag::IntList;
    case BaseType::Float: return Value::Tag::DoubleList;
    case BaseType::Bool: return Value::Tag::BoolList;
    case BaseType::Tensor: return t.element_optional ? Value::Tag::OptionalTensorList : Value::Tag::TensorList;
    default: return Value::Tag::None;
  }
}

}  // namespace

bool value_matches(const Value& v, const Type& t) {
  if (v.is_none()) return t.optional;
  if (t.list) {
    if (v.tag() != list_tag(t)) return false;
    return t.list_size < 0 || t.base != BaseType::Bool || v.to_bool_list().size() == static_cast<size_t>(t.list_size);
  }
  return element_matches(v, t.base);
}

bool coerce_value(Value& v, const Type& t) {
  if (value_matches(v, t)) return true;
  using Tag = Value::Tag;
  if (!t.list && t.base == BaseType::Float && v.tag() == Tag::Int) {
    v = Value(static_cast<double>(v.to_int()));
    return true;
  }
  if (t.list && (t.base == BaseType::Int || t.base == BaseType::SymInt) && v.tag() == Tag::Int && t.list_size > 0) {
    v = Value(std::vector<int64_t>(static_cast<size_t>(t.list_size), v.to_int()));
    return true;
  }
  if (t.list && t.base == BaseType::Float && v.tag() == Tag::IntList) {
    std::vector<double> d(v.to_int_list().begin(), v.to_int_list().end());
    v = Value(std::move(d));
    return true;
  }
  if (t.list && t.element_optional && v.tag() == Tag::TensorList) {
    std::vector<std::optional<Tensor>> out(v.to_tensor_list().begin(), v.to_tensor_list().end());
    v = Value(std::move(out));
    return true;
  }
  return false;
}

bool number_as_tensor(Value& v, const Type& t) {
  using Tag = Value::Tag;
  if (t.list || t.base != BaseType::Tensor || (v.tag() != Tag::Int && v.tag() != Tag::Double && v.tag() != Tag::Bool)) {
    return false;
  }
  Scalar s = v.to_scalar();
  Tensor n(empty_tensor({}, s.natural_dtype(), kCPU));
  if (s.is_bool()) *n.data_ptr<bool>() = s.to<bool>();
  else if (s.is_integral()) *n.data_ptr<int64_t>() = s.to_int();
  else *n.data_ptr<double>() = s.to_double();
  n.impl()->wrapped_number = true;
  v = Value(std::move(n));
  return true;
}

namespace {

int64_t parse_int(std::string_view s, std::string_view whole) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  KILN_CHECK(ec == std::errc() && end == s.data() + s.size(), "schema default '{}' is not an integer", whole);
  return v;
}

double parse_double(std::string_view s, std::string_view whole) {
  std::string copy(s);
  char* end = nullptr;
  double v = std::strtod(copy.c_str(), &end);
  KILN_CHECK(end == copy.c_str() + copy.size(), "schema default '{}' is not a number", whole);
  return v;
}

bool is_float_literal(std::string_view s) {
  return s.find_first_of(".eE") != std::string_view::npos || s.ends_with("inf") || s == "nan";
}

}  // namespace

Value parse_default(const std::string& text, const Type& t) {
  if (text == "None") return Value();
  if (t.list) {
    std::vector<std::string_view> items;
    std::string_view body = text;
    if (body.starts_with("[")) {
      KILN_CHECK(body.ends_with("]"), "schema default '{}' is not a list", text);
      body = body.substr(1, body.size() - 2);
      while (!body.empty()) {
        size_t comma = body.find(',');
        std::string_view item = body.substr(0, comma);
        while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
        items.push_back(item);
        body = comma == std::string_view::npos ? std::string_view() : body.substr(comma + 1);
      }
    } else {
      // A bare value for a sized list repeats: int[2] padding=0 is [0, 0].
      KILN_CHECK(t.list_size > 0, "schema default '{}' for {} must be a list", text, t.to_string());
      items.assign(static_cast<size_t>(t.list_size), std::string_view(text));
    }
    switch (t.base) {
      case BaseType::Int:
      case BaseType::SymInt: {
        std::vector<int64_t> out;
        for (auto item : items) out.push_back(parse_int(item, text));
        return Value(std::move(out));
      }
      case BaseType::Float: {
        std::vector<double> out;
        for (auto item : items) out.push_back(parse_double(item, text));
        return Value(std::move(out));
      }
      case BaseType::Bool: {
        std::vector<bool> out;
        for (auto item : items) out.push_back(item == "True");
        return Value(std::move(out));
      }
      default: KILN_FAIL(ErrorKind::Value, "schema default '{}' unsupported for {}", text, t.to_string());
    }
  }
  switch (t.base) {
    case BaseType::Int:
    case BaseType::SymInt:
      // at::Reduction, as loss schemas spell their defaults.
      if (text == "Mean") return Value(int64_t{1});
      if (text == "Sum") return Value(int64_t{2});
      return Value(parse_int(text, text));
    case BaseType::Float: return Value(parse_double(text, text));
    case BaseType::Bool:
    case BaseType::SymBool:
      KILN_CHECK(text == "True" || text == "False", "schema default '{}' is not a bool", text);
      return Value(text == "True");
    case BaseType::Scalar:
      if (text == "True" || text == "False") return Value(text == "True");
      return is_float_literal(text) ? Value(parse_double(text, text)) : Value(parse_int(text, text));
    case BaseType::Str:
      KILN_CHECK(text.size() >= 2 && text.front() == '\'' && text.back() == '\'', "schema default {} is not a string",
                 text);
      return Value(text.substr(1, text.size() - 2));
    case BaseType::ScalarType: {
      auto d = parse_dtype(text);
      KILN_CHECK(d.has_value(), "schema default '{}' is not a dtype", text);
      return Value(*d);
    }
    case BaseType::MemoryFormat: {
      auto m = parse_memory_format(text);
      KILN_CHECK(m.has_value(), "schema default '{}' is not a memory format", text);
      return Value(*m);
    }
    case BaseType::Device: return Value(Device::parse(text));
    case BaseType::Layout:
      KILN_CHECK(text == "strided", "schema default '{}' is not a layout", text);
      return Value(Layout::Strided);
    default: break;
  }
  KILN_FAIL(ErrorKind::Value, "schema default '{}' unsupported for {}", text, t.to_string());
}

}  // namespace kiln
