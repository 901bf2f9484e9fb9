// A JSON reader for the documents PyTorch writes into `.pt2` archives (the serialized exported
// program, the weights' payload configs). RFC 8259 text, read strictly: a document is one value,
// objects keep their keys in order (duplicate keys are an error), strings are UTF-8 with escapes
// decoded (surrogate pairs joined), nesting is bounded (kMaxDepth), so hostile input gives a
// kiln::Error naming the document, the line, the column and what was expected — never a crash.
//
// Numbers keep their text's kind: an integer literal that fits int64 is an integer (is_int), any
// other number a double. PyTorch writes the floats inf, -inf and nan as the strings "Infinity",
// "-Infinity" and "NaN"; as_double() reads those strings too.
//
// Lookups throw a kiln::Error naming the value's path from the root ("$.graph_module.graph.nodes[3]
// .target") and what was wanted, so a loader reading a malformed file needs no checks of its own.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::json {

class Value;
using Array = std::vector<Value>;
using Object = std::vector<std::pair<std::string, Value>>;

inline constexpr int kMaxDepth = 256;

class Value {
 public:
  enum class Kind : uint8_t { Null, Bool, Int, Double, String, Array, Object };

  Value() = default;
  Kind kind() const { return static_cast<Kind>(v_.index()); }
  bool is_null() const { return kind() == Kind::Null; }
  bool is_bool() const { return kind() == Kind::Bool; }
  bool is_int() const { return kind() == Kind::Int; }
  bool is_number() const { return kind() == Kind::Int || kind() == Kind::Double; }
  bool is_string() const { return kind() == Kind::String; }
  bool is_array() const { return kind() == Kind::Array; }
  bool is_object() const { return kind() == Kind::Object; }

  // Checked accessors: a kiln::Error naming path() and the kind found when the kind differs.
  bool as_bool() const;
  int64_t as_int() const;    // an integer literal (1.0 is not an integer)
  double as_double() const;  // any number, or "Infinity", "-Infinity", "NaN"
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Object members: at() throws naming the path and the missing key; find() gives nullptr.
  const Value& at(std::string_view key) const;
  const Value* find(std::string_view key) const;
  // Array elements, bounds-checked.
  const Value& at(size_t index) const;
  size_t size() const;  // elements of an array or members of an object; 0 otherwise

  // Where this value sits in its document, as "$.key[3].other" ("$" for the root).
  std::string path() const;
  // "null", "bool", "integer", "number", "string", "array", "object".
  std::string_view kind_name() const;

 private:
  friend class Parser;
  std::variant<std::monostate, bool, int64_t, double, std::string, Array, Object> v_;
  // The document (its name) and the path to here, shared by every value of one parse.
  std::shared_ptr<const std::string> document_;
  std::string path_ = "$";
};

// Parses `text`; `document` names it in error messages (a file and record name).
Value parse(std::string_view text, std::string_view document = "<json>");

}  // namespace kiln::json
