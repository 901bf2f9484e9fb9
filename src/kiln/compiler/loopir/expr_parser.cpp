// Reads index expressions as Expr::str() prints them: sums and differences of terms; a term is a
// product of factors, or a factor followed by `// c` or `% c`; a factor is an integer, a name, a
// parenthesized expression or a negated factor.
#include <cctype>

#include "kiln/compiler/loopir/expr.h"
#include "kiln/support/error.h"

namespace kiln::loopir {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Expr parse() {
    Expr e = sum();
    skip();
    if (at_ < s_.size()) fail("unexpected '" + std::string(1, s_[at_]) + "'");
    return e;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    KILN_FAIL(ErrorKind::Value, "index expression parse error at column {}: {} in '{}'", at_ + 1, what, s_);
  }
  void skip() {
    while (at_ < s_.size() && s_[at_] == ' ') ++at_;
  }
  bool eat(std::string_view token) {
    skip();
    if (s_.compare(at_, token.size(), token) != 0) return false;
    at_ += token.size();
    return true;
  }
  int64_t integer() {
    skip();
    size_t start = at_;
    while (at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_]))) ++at_;
    if (start == at_) fail("expected an integer");
    return std::stoll(s_.substr(start, at_ - start));
  }
  Expr sum() {
    Expr e = term();
    while (true) {
      if (eat("+")) {
        e = e + term();
      } else if (eat("-")) {
        e = e - term();
      } else {
        return e;
      }
    }
  }
  Expr term() {
    Expr e = factor();
    while (true) {
      if (eat("//")) {
        e = floordiv(e, integer());
      } else if (eat("*")) {
        e = e * factor();
      } else if (eat("%")) {
        e = mod(e, integer());
      } else {
        return e;
      }
    }
  }
  Expr factor() {
    skip();
    if (eat("-")) return Expr::constant(-1) * factor();
    if (eat("(")) {
      Expr e = sum();
      if (!eat(")")) fail("expected ')'");
      return e;
    }
    if (at_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[at_]))) return Expr::constant(integer());
    size_t start = at_;
    while (at_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[at_])) || s_[at_] == '_')) ++at_;
    if (start == at_) fail(at_ < s_.size() ? "unexpected '" + std::string(1, s_[at_]) + "'" : "unexpected end");
    return Expr::var(s_.substr(start, at_ - start));
  }

  const std::string& s_;
  size_t at_ = 0;
};

}  // namespace

Expr parse_expr(const std::string& text) { return Parser(text).parse(); }

}  // namespace kiln::loopir
