// Index expressions of the loop IR: integer expressions over loop variables and sizes — sums of
// constant multiples of atoms, where an atom is a variable, a product, a floor division or a
// modulo by a positive constant. Nodes are immutable and hash-consed (equal expressions are the
// same node, so == is a pointer comparison), and always in canonical form: the constructors
// apply the algebraic rules (constant folding, collecting like terms, distributing constants,
// pulling multiples out of // and %, c*(x // c) + x % c = x). `simplify` adds the rules that need
// the variables' ranges (x // c = 0 and x % c = x when 0 <= x < c).
//   Expr i = Expr::var("i0"), j = Expr::var("i1");
//   Expr flat = i * 8 + j;                    // i0*8 + i1
//   floordiv(flat, 8) == i  (given 0 <= i1 < 8, after simplify)
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

namespace kiln::loopir {

enum class ExprKind : uint8_t { Const, Var, Add, Mul, FloorDiv, Mod };

struct ExprNode;

class Expr {
 public:
  Expr() : Expr(constant(0)) {}
  static Expr constant(int64_t v);
  static Expr var(const std::string& name);

  ExprKind kind() const;
  int64_t value() const;            // Const: the value; FloorDiv, Mod: the divisor
  const std::string& name() const;  // Var
  std::span<const Expr> operands() const;
  bool is_constant() const { return kind() == ExprKind::Const; }
  bool is_constant(int64_t v) const { return is_constant() && value() == v; }

  // Python semantics: // floors, % takes the divisor's sign. Divisors must be positive constants.
  friend Expr operator+(Expr a, Expr b);
  friend Expr operator-(Expr a, Expr b);
  friend Expr operator*(Expr a, Expr b);
  friend Expr operator+(Expr a, int64_t b) { return a + constant(b); }
  friend Expr operator*(Expr a, int64_t b) { return a * constant(b); }
  friend Expr floordiv(Expr a, int64_t divisor);
  friend Expr mod(Expr a, int64_t divisor);
  bool operator==(const Expr& o) const { return node_ == o.node_; }
  bool operator!=(const Expr& o) const { return node_ != o.node_; }

  int64_t evaluate(const std::map<std::string, int64_t>& env) const;
  // Replaces variables by expressions.
  Expr substitute(const std::map<std::string, Expr>& replacements) const;
  // The variables the expression reads, sorted.
  std::vector<std::string> variables() const;
  // "i0*8 + i1", "(i2 // 3)", "(i2 % 3)"; parse_expr reads it back.
  std::string str() const;
  // A total order (by printed form) used to sort terms, so output is the same on every run.
  friend bool operator<(const Expr& a, const Expr& b) { return a.str() < b.str(); }

  const ExprNode* node() const { return node_; }

 private:
  explicit Expr(const ExprNode* n) : node_(n) {}
  friend Expr intern(ExprKind kind, int64_t value, std::string name, std::vector<Expr> operands);
  const ExprNode* node_;
};

// Inclusive bounds of each variable: i in [lo, hi].
struct Range {
  int64_t lo = 0, hi = 0;
};
using Ranges = std::map<std::string, Range>;

// The bounds an expression takes when its variables stay within `ranges` (unknown variables make
// the bounds unknown: nullopt-like wide bounds with known = false).
struct Bounds {
  int64_t lo = 0, hi = 0;
  bool known = false;
};
Bounds bounds_of(const Expr& e, const Ranges& ranges);

// Canonical form plus the range rules, applied bottom-up until nothing changes.
Expr simplify(const Expr& e, const Ranges& ranges);

// Reads the printed form; throws kiln::Error naming the column on malformed text.
Expr parse_expr(const std::string& text);

}  // namespace kiln::loopir
