#include "kiln/import/json.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "kiln/support/error.h"

namespace kiln::json {

// Recursive descent over the text with a position; every failure names the line and column.
class Parser {
 public:
  Parser(std::string_view text, std::string_view document)
      : text_(text), document_(std::make_shared<const std::string>(document)) {}

  Value document() {
    skip_space();
    Value v = value("$", 0);
    skip_space();
    if (pos_ != text_.size()) fail("unexpected text after the document's value");
    return v;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    KILN_FAIL(ErrorKind::Value, "{}: malformed JSON at line {}, column {}: {}", *document_, line, column, what);
  }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  void skip_space() {
    while (!at_end() && (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  void expect(char c) {
    if (at_end()) fail(fmt::format("unexpected end of the document, expected '{}'", c));
    if (peek() != c) fail(fmt::format("expected '{}'", c));
    ++pos_;
  }

  Value make(std::string path) const {
    Value v;
    v.document_ = document_;
    v.path_ = std::move(path);
    return v;
  }

  Value value(std::string path, int depth) {
    if (depth > kMaxDepth) fail(fmt::format("nesting deeper than {} levels", kMaxDepth));
    Value v = make(std::move(path));
    switch (peek()) {
      case '{': v.v_ = object(v.path_, depth); break;
      case '[': v.v_ = array(v.path_, depth); break;
      case '"': v.v_ = string(); break;
      case 't': word("true"), v.v_ = true; break;
      case 'f': word("false"), v.v_ = false; break;
      case 'n': word("null"); break;
      default:
        if (peek() == '-' || (peek() >= '0' && peek() <= '9')) {
          number(v);
        } else if (at_end()) {
          fail("unexpected end of the document, expected a value");
        } else {
          fail(fmt::format("unexpected character '{}', expected a value", peek()));
        }
    }
    return v;
  }

  void word(std::string_view w) {
    if (text_.substr(pos_, w.size()) != w) fail(fmt::format("expected '{}'", w));
    pos_ += w.size();
  }

  Object object(const std::string& path, int depth) {
    Object members;
    expect('{');
    skip_space();
    if (peek() == '}') {
      ++pos_;
      return members;
    }
    while (true) {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = string();
      skip_space();
      expect(':');
      skip_space();
      Value member = value(path + "." + key, depth + 1);
      members.emplace_back(std::move(key), std::move(member));
      skip_space();
      if (peek() == '}') {
        ++pos_;
        check_unique_keys(members, path);
        return members;
      }
      expect(',');
    }
  }

  // Sorting views of the keys finds a duplicate in O(n log n) (objects such as an exported
  // graph's tensor_values hold one member per value of the graph).
  void check_unique_keys(const Object& members, const std::string& path) const {
    std::vector<std::string_view> keys;
    keys.reserve(members.size());
    for (const auto& [k, unused] : members) keys.push_back(k);
    std::sort(keys.begin(), keys.end());
    auto dup = std::adjacent_find(keys.begin(), keys.end());
    if (dup != keys.end()) fail(fmt::format("duplicate key \"{}\" in the object at {}", *dup, path));
  }

  Array array(const std::string& path, int depth) {
    Array elements;
    expect('[');
    skip_space();
    if (peek() == ']') {
      ++pos_;
      return elements;
    }
    while (true) {
      skip_space();
      elements.push_back(value(fmt::format("{}[{}]", path, elements.size()), depth + 1));
      skip_space();
      if (peek() == ']') {
        ++pos_;
        return elements;
      }
      expect(',');
    }
  }

  uint32_t hex4() {
    if (text_.size() - pos_ < 4) fail("truncated \\u escape");
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= static_cast<uint32_t>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= static_cast<uint32_t>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= static_cast<uint32_t>(c - 'A' + 10);
      } else {
        --pos_;
        fail("bad hexadecimal digit in a \\u escape");
      }
    }
    return code;
  }

  static void append_utf8(std::string& out, uint32_t code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xC0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xE0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  std::string string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --pos_;
        fail("control character inside a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t code = hex4();
          if (code >= 0xD800 && code < 0xDC00) {
            if (text_.substr(pos_, 2) != "\\u") fail("a high surrogate without its low surrogate");
            pos_ += 2;
            uint32_t low = hex4();
            if (low < 0xDC00 || low >= 0xE000) fail("a high surrogate followed by no low surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code < 0xE000) {
            fail("a low surrogate without its high surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default: --pos_, fail(fmt::format("unknown escape '\\{}'", e));
      }
    }
  }

  void number(Value& v) {
    size_t start = pos_;
    if (peek() == '-') ++pos_;
    auto digits = [&] {
      size_t from = pos_;
      while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
      if (pos_ == from) fail("expected a digit");
    };
    if (peek() == '0') {
      ++pos_;
      if (peek() >= '0' && peek() <= '9') fail("a number with a leading zero");
    } else {
      digits();
    }
    bool integer = true;
    if (peek() == '.') {
      ++pos_;
      digits();
      integer = false;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      digits();
      integer = false;
    }
    std::string_view text = text_.substr(start, pos_ - start);
    if (integer) {
      int64_t i = 0;
      auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), i);
      if (ec == std::errc() && end == text.data() + text.size()) {
        v.v_ = i;
        return;
      }
    }
    // strtod needs a terminated string; from_chars for doubles is not in every libstdc++ we build with.
    std::string copy(text);
    v.v_ = std::strtod(copy.c_str(), nullptr);
  }

  std::string_view text_;
  std::shared_ptr<const std::string> document_;
  size_t pos_ = 0;
};

Value parse(std::string_view text, std::string_view document) { return Parser(text, document).document(); }

namespace {

[[noreturn]] void wrong_kind(const Value& v, const std::shared_ptr<const std::string>& document,
                             std::string_view want) {
  KILN_FAIL(ErrorKind::Value, "{}: {} is {} where {} was expected", document ? *document : "<json>", v.path(),
            v.kind_name(), want);
}

}  // namespace

std::string_view Value::kind_name() const {
  switch (kind()) {
    case Kind::Null: return "null";
    case Kind::Bool: return "a bool";
    case Kind::Int: return "an integer";
    case Kind::Double: return "a number";
    case Kind::String: return "a string";
    case Kind::Array: return "an array";
    case Kind::Object: return "an object";
  }
  return "?";
}

std::string Value::path() const { return path_; }

bool Value::as_bool() const {
  if (!is_bool()) wrong_kind(*this, document_, "a bool");
  return std::get<bool>(v_);
}

int64_t Value::as_int() const {
  if (!is_int()) wrong_kind(*this, document_, "an integer");
  return std::get<int64_t>(v_);
}

double Value::as_double() const {
  if (is_int()) return static_cast<double>(std::get<int64_t>(v_));
  if (kind() == Kind::Double) return std::get<double>(v_);
  if (is_string()) {
    const auto& s = std::get<std::string>(v_);
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  wrong_kind(*this, document_, "a number");
}

const std::string& Value::as_string() const {
  if (!is_string()) wrong_kind(*this, document_, "a string");
  return std::get<std::string>(v_);
}

const Array& Value::as_array() const {
  if (!is_array()) wrong_kind(*this, document_, "an array");
  return std::get<Array>(v_);
}

const Object& Value::as_object() const {
  if (!is_object()) wrong_kind(*this, document_, "an object");
  return std::get<Object>(v_);
}

const Value* Value::find(std::string_view key) const {
  for (const auto& [k, v] : as_object()) {
    if (k == key) return &v;
  }
  return nullptr;
}

const Value& Value::at(std::string_view key) const {
  const Value* v = find(key);
  if (!v) {
    KILN_FAIL(ErrorKind::Value, "{}: {} has no member \"{}\"", document_ ? *document_ : "<json>", path_, key);
  }
  return *v;
}

const Value& Value::at(size_t index) const {
  const Array& a = as_array();
  if (index >= a.size()) {
    KILN_FAIL(ErrorKind::Index, "{}: {} has {} elements, index {} is out of range", document_ ? *document_ : "<json>",
              path_, a.size(), index);
  }
  return a[index];
}

size_t Value::size() const {
  if (is_array()) return std::get<Array>(v_).size();
  if (is_object()) return std::get<Object>(v_).size();
  return 0;
}

}  // namespace kiln::json
