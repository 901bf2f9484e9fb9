// PickleValue: constructors, typed access and printing (pickle.h). The VM is pickle.cpp.
#include <cmath>

#include "kiln/import/pickle.h"

namespace kiln {

std::string_view pickle_kind_name(PickleValue::Kind kind) {
  switch (kind) {
    case PickleValue::Kind::None: return "None";
    case PickleValue::Kind::Bool: return "bool";
    case PickleValue::Kind::Int: return "int";
    case PickleValue::Kind::Float: return "float";
    case PickleValue::Kind::String: return "str";
    case PickleValue::Kind::Bytes: return "bytes";
    case PickleValue::Kind::Tuple: return "tuple";
    case PickleValue::Kind::List: return "list";
    case PickleValue::Kind::Dict: return "dict";
    case PickleValue::Kind::Tensor: return "tensor";
    case PickleValue::Kind::Global: return "global";
    case PickleValue::Kind::Object: return "object";
  }
  return "?";
}

PickleValue PickleValue::boolean(bool v) {
  PickleValue r;
  r.kind_ = Kind::Bool;
  r.int_ = v ? 1 : 0;
  return r;
}

PickleValue PickleValue::integer(int64_t v) {
  PickleValue r;
  r.kind_ = Kind::Int;
  r.int_ = v;
  return r;
}

PickleValue PickleValue::floating(double v) {
  PickleValue r;
  r.kind_ = Kind::Float;
  r.float_ = v;
  return r;
}

PickleValue PickleValue::string(std::string v) {
  PickleValue r;
  r.kind_ = Kind::String;
  r.str_ = std::move(v);
  return r;
}

PickleValue PickleValue::bytes(std::string v) {
  PickleValue r;
  r.kind_ = Kind::Bytes;
  r.str_ = std::move(v);
  return r;
}

PickleValue PickleValue::tuple(std::vector<PickleValue> items) {
  PickleValue r;
  r.kind_ = Kind::Tuple;
  r.items_ = std::move(items);
  return r;
}

PickleValue PickleValue::list(std::vector<PickleValue> items) {
  PickleValue r;
  r.kind_ = Kind::List;
  r.items_ = std::move(items);
  return r;
}

PickleValue PickleValue::dict(std::vector<PickleItem> items) {
  PickleValue r;
  r.kind_ = Kind::Dict;
  r.dict_ = std::move(items);
  return r;
}

PickleValue PickleValue::tensor(Tensor t) {
  PickleValue r;
  r.kind_ = Kind::Tensor;
  r.tensor_ = std::move(t);
  return r;
}

PickleValue PickleValue::global(std::string module, std::string name) {
  PickleValue r;
  r.kind_ = Kind::Global;
  r.str_ = std::move(module);
  r.name_ = std::move(name);
  return r;
}

PickleValue PickleValue::object(std::shared_ptr<const PickleObject> obj) {
  KILN_ASSERT(obj != nullptr);
  PickleValue r;
  r.kind_ = Kind::Object;
  r.object_ = std::move(obj);
  return r;
}

namespace {
void expect_kind(const PickleValue& v, PickleValue::Kind want) {
  KILN_CHECK_TYPE(v.kind() == want, "pickle value: expected {}, got {} {}", pickle_kind_name(want),
                  pickle_kind_name(v.kind()), v.describe(4));
}
}  // namespace

bool PickleValue::as_bool() const {
  expect_kind(*this, Kind::Bool);
  return int_ != 0;
}

int64_t PickleValue::as_int() const {
  expect_kind(*this, Kind::Int);
  return int_;
}

double PickleValue::as_float() const {
  expect_kind(*this, Kind::Float);
  return float_;
}

const std::string& PickleValue::as_string() const {
  expect_kind(*this, Kind::String);
  return str_;
}

const std::string& PickleValue::as_bytes() const {
  expect_kind(*this, Kind::Bytes);
  return str_;
}

const std::vector<PickleValue>& PickleValue::as_tuple() const {
  expect_kind(*this, Kind::Tuple);
  return items_;
}

const std::vector<PickleValue>& PickleValue::as_list() const {
  expect_kind(*this, Kind::List);
  return items_;
}

const std::vector<PickleValue>& PickleValue::as_sequence() const {
  KILN_CHECK_TYPE(kind_ == Kind::Tuple || kind_ == Kind::List, "pickle value: expected a tuple or list, got {} {}",
                  pickle_kind_name(kind_), describe(4));
  return items_;
}

const std::vector<PickleItem>& PickleValue::as_dict() const {
  expect_kind(*this, Kind::Dict);
  return dict_;
}

const Tensor& PickleValue::as_tensor() const {
  expect_kind(*this, Kind::Tensor);
  return tensor_;
}

const std::string& PickleValue::global_module() const {
  expect_kind(*this, Kind::Global);
  return str_;
}

const std::string& PickleValue::global_name() const {
  expect_kind(*this, Kind::Global);
  return name_;
}

std::string PickleValue::global_qualname() const { return global_module() + "." + global_name(); }

const PickleObject& PickleValue::as_object() const { return *object_ptr(); }

const std::shared_ptr<const PickleObject>& PickleValue::object_ptr() const {
  expect_kind(*this, Kind::Object);
  return object_;
}

const PickleValue* PickleValue::find(std::string_view key) const {
  for (const PickleItem& item : as_dict()) {
    if (item.key.is(Kind::String) && item.key.str_ == key) return &item.value;
  }
  return nullptr;
}

std::vector<PickleValue>& PickleValue::mutable_sequence() {
  as_sequence();
  return items_;
}

std::vector<PickleItem>& PickleValue::mutable_dict() {
  as_dict();
  return dict_;
}

namespace {
void quote(std::string& out, std::string_view s, char prefix) {
  if (prefix) out += prefix;
  out += '\'';
  for (unsigned char c : s.substr(0, 64)) {
    if (c == '\'' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20 || c == 0x7f || (prefix == 'b' && c >= 0x80)) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += static_cast<char>(c);
    }
  }
  if (s.size() > 64) out += "...";
  out += '\'';
}
}  // namespace

std::string PickleValue::describe(size_t max_items) const {
  std::string out;
  switch (kind_) {
    case Kind::None: return "None";
    case Kind::Bool: return int_ ? "True" : "False";
    case Kind::Int: return std::to_string(int_);
    case Kind::Float:
      if (std::isnan(float_)) return "nan";
      if (std::isinf(float_)) return float_ > 0 ? "inf" : "-inf";
      return fmt::format("{}", float_);
    case Kind::String: quote(out, str_, 0); return out;
    case Kind::Bytes: quote(out, str_, 'b'); return out;
    case Kind::Tuple:
    case Kind::List: {
      out += kind_ == Kind::Tuple ? '(' : '[';
      for (size_t i = 0; i < items_.size() && i < max_items; ++i) {
        if (i) out += ", ";
        out += items_[i].describe(max_items);
      }
      if (items_.size() > max_items) out += fmt::format(", ... ({} items)", items_.size());
      if (kind_ == Kind::Tuple && items_.size() == 1) out += ',';
      out += kind_ == Kind::Tuple ? ')' : ']';
      return out;
    }
    case Kind::Dict: {
      out += '{';
      for (size_t i = 0; i < dict_.size() && i < max_items; ++i) {
        if (i) out += ", ";
        out += dict_[i].key.describe(max_items) + ": " + dict_[i].value.describe(max_items);
      }
      if (dict_.size() > max_items) out += fmt::format(", ... ({} items)", dict_.size());
      out += '}';
      return out;
    }
    case Kind::Tensor: return "tensor " + tensor_.describe();
    case Kind::Global: return str_ + "." + name_;
    case Kind::Object: return object_->describe();
  }
  return "?";
}

}  // namespace kiln
