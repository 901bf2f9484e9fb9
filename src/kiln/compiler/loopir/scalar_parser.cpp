// Reads scalar expressions as ScalarExpr::str() prints them.
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "kiln/compiler/loopir/scalar.h"
#include "kiln/support/error.h"

namespace kiln::loopir {
namespace {

bool is_comparison(const std::string& op) {
  return op == "eq" || op == "ne" || op == "lt" || op == "le" || op == "gt" || op == "ge";
}

class ScalarParser {
 public:
  explicit ScalarParser(const std::string& text) : s_(text) {}

  ScalarExpr parse() {
    ScalarExpr e = expr();
    skip();
    if (at_ != s_.size()) fail("unexpected text");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    KILN_FAIL(ErrorKind::Value, "scalar expression parse error at column {}: {} in '{}'", at_ + 1, what, s_);
  }
  void skip() {
    while (at_ < s_.size() && s_[at_] == ' ') ++at_;
  }
  void expect(char c) {
    skip();
    if (at_ >= s_.size() || s_[at_] != c) fail(std::string("expected '") + c + "'");
    ++at_;
  }
  std::string word() {
    skip();
    size_t start = at_;
    while (at_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[at_])) || s_[at_] == '_')) ++at_;
    if (start == at_) fail("expected a name");
    return s_.substr(start, at_ - start);
  }
  DType dtype() {
    expect(':');
    std::string name = word();
    auto d = parse_dtype(name);
    if (!d) fail("unknown dtype '" + name + "'");
    return *d;
  }
  // The text up to the ')' closing the current call (index expressions nest parentheses).
  Expr index_until_close() {
    size_t start = at_;
    int depth = 0;
    while (at_ < s_.size() && !(depth == 0 && s_[at_] == ')')) {
      depth += s_[at_] == '(' ? 1 : s_[at_] == ')' ? -1 : 0;
      ++at_;
    }
    Expr e = parse_expr(s_.substr(start, at_ - start));
    expect(')');
    return e;
  }
  ScalarExpr expr() {
    skip();
    if (at_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[at_])) || s_[at_] == '-' || s_[at_] == '.' ||
                            s_.compare(at_, 3, "inf") == 0 || s_.compare(at_, 3, "nan") == 0)) {
      const char* begin = s_.c_str() + at_;
      char* end = nullptr;
      double v = std::strtod(begin, &end);
      if (end == begin) fail("expected a number");
      std::string text(begin, static_cast<size_t>(end - begin));
      at_ += static_cast<size_t>(end - begin);
      DType d = dtype();
      if (is_floating(d)) return ScalarExpr::constant(v, d);
      // Integers are read exactly: a double would round those above 2^53.
      char* int_end = nullptr;
      errno = 0;
      long long i = std::strtoll(text.c_str(), &int_end, 10);
      if (errno != 0 || *int_end != '\0') fail("expected an integer constant");
      return ScalarExpr::constant(static_cast<int64_t>(i), d);
    }
    std::string head = word();
    expect('(');
    if (head == "load") {
      skip();
      if (s_.compare(at_, 3, "buf") != 0) fail("expected a buffer (bufN)");
      at_ += 3;
      std::string id = word();
      expect(',');
      Expr index = index_until_close();
      return ScalarExpr::load(std::atoi(id.c_str()), index, dtype());
    }
    if (head == "index") {
      Expr index = index_until_close();
      return ScalarExpr::index(index, dtype());
    }
    std::vector<ScalarExpr> operands{expr()};
    while (true) {
      skip();
      if (at_ < s_.size() && s_[at_] == ',') {
        ++at_;
        operands.push_back(expr());
        continue;
      }
      break;
    }
    expect(')');
    if (head.starts_with("to_")) {
      auto d = parse_dtype(head.substr(3));
      if (!d) fail("unknown dtype in '" + head + "'");
      return ScalarExpr::op("convert_element_type", operands, *d);
    }
    DType d = is_comparison(head) ? DType::Bool : head == "where" ? operands.at(1).dtype() : operands[0].dtype();
    return ScalarExpr::op(head, operands, d);
  }

  const std::string& s_;
  size_t at_ = 0;
};

}  // namespace

ScalarExpr parse_scalar(const std::string& text) { return ScalarParser(text).parse(); }

}  // namespace kiln::loopir
