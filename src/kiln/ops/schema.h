// Operator schemas in PyTorch's syntax, parsed into types:
//   add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
//   split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]
// Arguments after `*` are keyword-only; `T?` is optional; `T[]`/`T[N]` are lists; `(a)` and `(a!)`
// are alias annotations (the result aliases / the op writes that argument).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kiln {

enum class BaseType : uint8_t {
  Tensor,
  Int,
  SymInt,
  Float,
  Bool,
  Scalar,
  Str,
  ScalarType,
  Layout,
  Device,
  MemoryFormat,
  SymBool,
  Generator
};

struct Type {
  BaseType base = BaseType::Tensor;
  bool optional = false;          // T?
  bool list = false;              // T[] or T[N]
  int64_t list_size = -1;         // N of T[N]; -1 for T[]
  bool element_optional = false;  // Tensor?[]
  std::string to_string() const;
  bool is_tensor_like() const { return base == BaseType::Tensor; }
  bool operator==(const Type&) const = default;
};

struct AliasInfo {
  std::string set;           // "a"
  bool is_write = false;     // (a!)
  bool to_wildcard = false;  // (a -> *)
};

struct Argument {
  std::string name;  // empty for unnamed returns
  Type type;
  std::optional<std::string> default_text;  // as written in the schema
  bool kwarg_only = false;
  std::optional<AliasInfo> alias;
};

struct Schema {
  std::string ns = "aten";
  std::string name;      // "add"
  std::string overload;  // "Tensor", or empty
  std::vector<Argument> arguments;
  std::vector<Argument> returns;
  std::string text;  // the schema exactly as declared (without namespace)

  // "aten::add.Tensor"
  std::string qualified_name() const;
  // "add.Tensor"
  std::string name_with_overload() const;
  // Some argument is written to (an (a!) annotation).
  bool is_mutable() const;
  // Some return aliases an argument without writing it: the op makes a view.
  bool is_view() const;
  int64_t num_positional() const;
  // Index of the argument called `name`, or -1.
  int64_t argument_index(std::string_view name) const;
};

// The end of a literal (a default value, or a constant in graph text) that starts at `pos`: the
// first ',' or ')' outside brackets and quotes, or a newline, or the end of the text. Sets
// `unterminated` when a bracket or quote is still open there.
size_t scan_literal(std::string_view text, size_t pos, bool& unterminated);

// Parses "[ns::]name[.overload](args) -> returns". Throws kiln::Error naming the column of the
// first character it cannot read.
Schema parse_schema(std::string_view text);

}  // namespace kiln
