#include "kiln/ops/schema.h"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "kiln/support/error.h"

namespace kiln {
namespace {

struct BaseTypeName {
  std::string_view name;
  BaseType type;
};
constexpr BaseTypeName kBaseTypes[] = {
    {"Tensor", BaseType::Tensor},
    {"int", BaseType::Int},
    {"SymInt", BaseType::SymInt},
    {"float", BaseType::Float},
    {"bool", BaseType::Bool},
    {"Scalar", BaseType::Scalar},
    {"str", BaseType::Str},
    {"ScalarType", BaseType::ScalarType},
    {"Layout", BaseType::Layout},
    {"Device", BaseType::Device},
    {"MemoryFormat", BaseType::MemoryFormat},
    {"SymBool", BaseType::SymBool},
    {"Generator", BaseType::Generator},
};

std::string_view base_type_name(BaseType t) {
  for (const auto& b : kBaseTypes) {
    if (b.type == t) return b.name;
  }
  return "?";
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Schema parse() {
    Schema s;
    s.text = std::string(text_);
    std::string first = identifier("operator name");
    if (peek("::")) {
      pos_ += 2;
      s.ns = first;
      s.text = std::string(text_.substr(pos_));
      first = identifier("operator name");
    }
    s.name = first;
    if (accept('.')) s.overload = identifier("overload name");
    expect('(');
    bool kwarg_only = false;
    skip_space();
    if (!accept(')')) {
      while (true) {
        skip_space();
        if (accept('*')) {
          kwarg_only = true;
        } else {
          Argument a = argument(/*is_return=*/false);
          a.kwarg_only = kwarg_only;
          s.arguments.push_back(std::move(a));
        }
        skip_space();
        if (accept(')')) break;
        if (!accept(',')) fail("expected ',' or ')'");
      }
    }
    skip_space();
    expect('-');
    expect('>');
    skip_space();
    if (accept('(')) {
      skip_space();
      if (!accept(')')) {
        while (true) {
          s.returns.push_back(argument(/*is_return=*/true));
          skip_space();
          if (accept(')')) break;
          expect(',');
        }
      }
    } else {
      s.returns.push_back(argument(/*is_return=*/true));
    }
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the returns");
    return s;
  }

 private:
  Argument argument(bool is_return) {
    Argument a;
    skip_space();
    std::string base = identifier("type");
    bool found = false;
    for (const auto& b : kBaseTypes) {
      if (b.name == base) {
        a.type.base = b.type;
        found = true;
      }
    }
    if (!found) fail(fmt::format("unknown type '{}'", base), pos_ - base.size());
    if (accept('(')) a.alias = alias_info();
    if (accept('?')) {
      if (peek("[")) {
        a.type.element_optional = true;
      } else {
        a.type.optional = true;
      }
    }
    if (accept('[')) {
      a.type.list = true;
      skip_space();
      if (!accept(']')) {
        a.type.list_size = integer();
        expect(']');
      }
      if (accept('?')) a.type.optional = true;
    }
    skip_space();
    if (pos_ < text_.size() && is_ident_start(text_[pos_])) {
      a.name = identifier("argument name");
    } else if (!is_return) {
      fail("expected an argument name");
    }
    skip_space();
    if (!is_return && accept('=')) a.default_text = default_text();
    return a;
  }

  AliasInfo alias_info() {
    AliasInfo info;
    skip_space();
    info.set = identifier("alias set");
    skip_space();
    if (accept('!')) info.is_write = true;
    skip_space();
    if (accept('-')) {
      expect('>');
      skip_space();
      expect('*');
      info.to_wildcard = true;
      skip_space();
    }
    expect(')');
    return info;
  }

  std::string default_text() {
    size_t start = pos_;
    bool unterminated = false;
    pos_ = scan_literal(text_, pos_, unterminated);
    if (unterminated) fail("unterminated default value", start);
    std::string_view t = text_.substr(start, pos_ - start);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    if (t.empty()) fail("empty default value", start);
    return std::string(t);
  }

  int64_t integer() {
    size_t start = pos_;
    int64_t v = 0;
    auto [end, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), v);
    if (ec != std::errc()) fail("expected an integer", start);
    pos_ = static_cast<size_t>(end - text_.data());
    return v;
  }

  static bool is_ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
  static bool is_ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

  std::string identifier(std::string_view what) {
    skip_space();
    size_t start = pos_;
    if (pos_ >= text_.size() || !is_ident_start(text_[pos_])) fail(fmt::format("expected {}", what));
    while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
    return std::string(text_.substr(start, pos_ - start));
  }

  void skip_space() {
    while (pos_ < text_.size() && text_[pos_] == ' ') ++pos_;
  }
  bool peek(std::string_view s) const { return text_.substr(pos_).starts_with(s); }
  bool accept(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    skip_space();
    if (!accept(c)) fail(fmt::format("expected '{}'", c));
  }
  [[noreturn]] void fail(const std::string& what, size_t at = std::string_view::npos) const {
    size_t col = (at == std::string_view::npos ? pos_ : at) + 1;
    KILN_FAIL(ErrorKind::Value, "schema parse error at column {}: {} in '{}'", col, what, text_);
  }

  std::string_view text_;
  size_t pos_ = 0;
};

}  // namespace

std::string Type::to_string() const {
  std::string s(base_type_name(base));
  if (element_optional) s += "?";
  if (list) s += list_size >= 0 ? fmt::format("[{}]", list_size) : "[]";
  if (optional) s += "?";
  return s;
}

std::string Schema::qualified_name() const { return fmt::format("{}::{}", ns, name_with_overload()); }
std::string Schema::name_with_overload() const { return overload.empty() ? name : name + "." + overload; }

bool Schema::is_mutable() const {
  for (const auto& a : arguments) {
    if (a.alias && a.alias->is_write) return true;
  }
  return false;
}

bool Schema::is_view() const {
  for (const auto& r : returns) {
    if (r.alias && !r.alias->is_write) return true;
  }
  return false;
}

int64_t Schema::num_positional() const {
  int64_t n = 0;
  for (const auto& a : arguments) n += a.kwarg_only ? 0 : 1;
  return n;
}

int64_t Schema::argument_index(std::string_view arg) const {
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (arguments[i].name == arg) return static_cast<int64_t>(i);
  }
  return -1;
}

Schema parse_schema(std::string_view text) { return Parser(text).parse(); }

size_t scan_literal(std::string_view text, size_t pos, bool& unterminated) {
  int depth = 0;
  bool quoted = false;
  for (; pos < text.size() && text[pos] != '\n'; ++pos) {
    char c = text[pos];
    if (quoted) {
      quoted = c != '\'';
    } else if (c == '\'') {
      quoted = true;
    } else if (c == '[') {
      ++depth;
    } else if (c == ']') {
      --depth;
    } else if (depth == 0 && (c == ',' || c == ')')) {
      break;
    }
  }
  unterminated = quoted || depth != 0;
  return pos;
}

}  // namespace kiln
