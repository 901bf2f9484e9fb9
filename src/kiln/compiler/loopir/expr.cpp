#include "kiln/compiler/loopir/expr.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <unordered_map>

#include "kiln/support/error.h"
#include "kiln/support/hash.h"

namespace kiln::loopir {

struct ExprNode {
  ExprKind kind;
  int64_t value = 0;
  std::string name;
  std::vector<Expr> operands;
  std::string text;  // the printed form, computed once
};

namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

struct Key {
  ExprKind kind;
  int64_t value;
  std::string name;
  std::vector<const ExprNode*> operands;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = hash_combine(static_cast<uint64_t>(k.kind), static_cast<uint64_t>(k.value));
    h = hash_combine(h, std::hash<std::string>{}(k.name));
    for (const auto* p : k.operands) h = hash_combine(h, reinterpret_cast<uintptr_t>(p));
    return h;
  }
};

struct Table {
  std::mutex mu;
  std::unordered_map<Key, std::unique_ptr<ExprNode>, KeyHash> nodes;
};
Table& table() {
  static Table* t = new Table();  // expressions live for the whole process
  return *t;
}

// Appends e, parenthesized when it is a sum. (Built with append: g++ 12 warns falsely on a + b.)
void append_wrapped(std::string& s, const Expr& e) {
  bool sum = e.kind() == ExprKind::Add;
  if (sum) s.push_back('(');
  s.append(e.str());
  if (sum) s.push_back(')');
}

std::string div_or_mod(const Expr& x, const char* op, int64_t divisor) {
  std::string s = "(";
  append_wrapped(s, x);
  s.append(op).append(std::to_string(divisor)).push_back(')');
  return s;
}

std::string print(ExprKind kind, int64_t value, const std::string& name, const std::vector<Expr>& ops) {
  switch (kind) {
    case ExprKind::Const: return std::to_string(value);
    case ExprKind::Var: return name;
    case ExprKind::Add: {
      std::string s;
      for (size_t i = 0; i < ops.size(); ++i) {
        std::string t = ops[i].str();
        if (i == 0) {
          s = t;
        } else if (t.starts_with("-")) {
          s.append(" - ").append(t.substr(1));
        } else {
          s.append(" + ").append(t);
        }
      }
      return s;
    }
    case ExprKind::Mul: {
      std::string s;
      if (ops[0].is_constant(-1)) {
        s.push_back('-');
      } else {
        append_wrapped(s, ops[0]);
        s.push_back('*');
      }
      append_wrapped(s, ops[1]);
      return s;
    }
    case ExprKind::FloorDiv: return div_or_mod(ops[0], " // ", value);
    case ExprKind::Mod: return div_or_mod(ops[0], " % ", value);
  }
  return "?";
}

// A sum as constant + sum of coef * atom (atoms: Var, FloorDiv, Mod, non-constant Mul).
struct Terms {
  std::map<Expr, int64_t> coef;
  int64_t constant = 0;
};

void collect(const Expr& e, int64_t factor, Terms& t) {
  switch (e.kind()) {
    case ExprKind::Const: t.constant += factor * e.value(); return;
    case ExprKind::Add:
      for (const Expr& op : e.operands()) collect(op, factor, t);
      return;
    case ExprKind::Mul:
      if (e.operands()[0].is_constant()) return collect(e.operands()[1], factor * e.operands()[0].value(), t);
      break;
    default: break;
  }
  t.coef[e] += factor;
}

// c*(x // d) + m*(x % d) with c == m*d is m*x: undo a split index.
bool recombine(Terms& t) {
  for (const auto& [atom, c] : t.coef) {
    if (atom.kind() != ExprKind::FloorDiv || c == 0) continue;
    int64_t d = atom.value();
    Expr m_atom = mod(atom.operands()[0], d);
    auto it = t.coef.find(m_atom);
    if (it == t.coef.end() || it->second == 0 || c != it->second * d) continue;
    int64_t m = it->second;
    Expr x = atom.operands()[0];
    t.coef.erase(it);
    t.coef.erase(atom);
    collect(x, m, t);
    return true;
  }
  return false;
}

Expr raw_term(const Expr& atom, int64_t c);

Expr make_sum(Terms t) {
  while (recombine(t)) {
  }
  std::vector<Expr> ops;
  for (const auto& [atom, c] : t.coef) {
    if (c != 0) ops.push_back(raw_term(atom, c));
  }
  if (t.constant != 0 || ops.empty()) ops.push_back(Expr::constant(t.constant));
  if (ops.size() == 1) return ops[0];
  return intern(ExprKind::Add, 0, "", std::move(ops));
}

}  // namespace

Expr intern(ExprKind kind, int64_t value, std::string name, std::vector<Expr> operands) {
  Key key{kind, value, name, {}};
  for (const Expr& e : operands) key.operands.push_back(e.node());
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.nodes.find(key);
  if (it != t.nodes.end()) return Expr(it->second.get());
  auto node = std::make_unique<ExprNode>();
  node->kind = kind;
  node->value = value;
  node->name = std::move(name);
  node->operands = std::move(operands);
  node->text = print(kind, value, node->name, node->operands);
  const ExprNode* raw = node.get();
  t.nodes.emplace(std::move(key), std::move(node));
  return Expr(raw);
}

namespace {
Expr raw_term(const Expr& atom, int64_t c) {
  if (c == 1) return atom;
  return intern(ExprKind::Mul, 0, "", {Expr::constant(c), atom});
}
}  // namespace

Expr Expr::constant(int64_t v) { return intern(ExprKind::Const, v, "", {}); }
Expr Expr::var(const std::string& name) {
  KILN_CHECK(!name.empty(), "loop IR: a variable needs a name");
  return intern(ExprKind::Var, 0, name, {});
}

ExprKind Expr::kind() const { return node_->kind; }
int64_t Expr::value() const { return node_->value; }
const std::string& Expr::name() const { return node_->name; }
std::span<const Expr> Expr::operands() const { return node_->operands; }
std::string Expr::str() const { return node_->text; }

Expr operator+(Expr a, Expr b) {
  Terms t;
  collect(a, 1, t);
  collect(b, 1, t);
  return make_sum(std::move(t));
}

Expr operator-(Expr a, Expr b) {
  Terms t;
  collect(a, 1, t);
  collect(b, -1, t);
  return make_sum(std::move(t));
}

namespace {
// The non-constant factors of a product (multiplying constant ones into c).
void collect_factors(const Expr& e, int64_t& c, std::vector<Expr>& out) {
  if (e.kind() != ExprKind::Mul) {
    out.push_back(e);
  } else if (e.operands()[0].is_constant()) {
    c *= e.operands()[0].value();
    collect_factors(e.operands()[1], c, out);
  } else {
    collect_factors(e.operands()[0], c, out);
    collect_factors(e.operands()[1], c, out);
  }
}
}  // namespace

Expr operator*(Expr a, Expr b) {
  if (!a.is_constant() && b.is_constant()) std::swap(a, b);
  if (a.is_constant()) {
    if (b.is_constant()) return Expr::constant(a.value() * b.value());
    Terms t;
    collect(b, a.value(), t);
    return make_sum(std::move(t));
  }
  // (x + y) * z distributes, so sums stay sums of atoms.
  for (int side = 0; side < 2; ++side) {
    const Expr& sum = side == 0 ? a : b;
    const Expr& other = side == 0 ? b : a;
    if (sum.kind() != ExprKind::Add) continue;
    Expr out = Expr::constant(0);
    for (const Expr& term : sum.operands()) out = out + term * other;
    return out;
  }
  // Constant factors move to the front: (2*x) * y = 2*(x*y). The other factors are flattened and
  // sorted, and the product nests to the left, so a*(b*c) and (a*b)*c are one node (both print
  // "a*b*c"; nesting as given made them two, and parsing the text back gave the other one).
  int64_t c = 1;
  std::vector<Expr> factors;
  collect_factors(a, c, factors);
  collect_factors(b, c, factors);
  std::sort(factors.begin(), factors.end());
  Expr product = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) product = intern(ExprKind::Mul, 0, "", {product, factors[i]});
  return product * Expr::constant(c);
}

Expr floordiv(Expr a, int64_t divisor) {
  KILN_CHECK(divisor > 0, "loop IR: // needs a positive constant divisor, got {}", divisor);
  if (divisor == 1) return a;
  if (a.is_constant()) return Expr::constant(floor_div(a.value(), divisor));
  if (a.kind() == ExprKind::FloorDiv) return floordiv(a.operands()[0], a.value() * divisor);
  Terms t, quotient, rest;
  collect(a, 1, t);
  for (const auto& [atom, c] : t.coef) {
    if (c % divisor == 0) {
      quotient.coef[atom] += c / divisor;
    } else {
      rest.coef[atom] += c;
    }
  }
  quotient.constant = floor_div(t.constant, divisor);
  rest.constant = floor_mod(t.constant, divisor);
  if (quotient.coef.empty() && quotient.constant == 0) return intern(ExprKind::FloorDiv, divisor, "", {a});
  Expr remainder = make_sum(std::move(rest));
  Expr q = make_sum(std::move(quotient));
  if (remainder.is_constant()) return q;  // 0 <= remainder constant < divisor
  return q + intern(ExprKind::FloorDiv, divisor, "", {remainder});
}

Expr mod(Expr a, int64_t divisor) {
  KILN_CHECK(divisor > 0, "loop IR: % needs a positive constant divisor, got {}", divisor);
  if (divisor == 1) return Expr::constant(0);
  if (a.is_constant()) return Expr::constant(floor_mod(a.value(), divisor));
  if (a.kind() == ExprKind::Mod && a.value() % divisor == 0) return mod(a.operands()[0], divisor);
  Terms t, rest;
  collect(a, 1, t);
  for (const auto& [atom, c] : t.coef) {
    if (c % divisor != 0) rest.coef[atom] += c;
  }
  rest.constant = floor_mod(t.constant, divisor);
  Expr r = make_sum(std::move(rest));
  if (r.is_constant()) return Expr::constant(floor_mod(r.value(), divisor));
  return intern(ExprKind::Mod, divisor, "", {r});
}

int64_t Expr::evaluate(const std::map<std::string, int64_t>& env) const {
  switch (kind()) {
    case ExprKind::Const: return value();
    case ExprKind::Var: {
      auto it = env.find(name());
      KILN_CHECK(it != env.end(), "loop IR: no value for variable {} in {}", name(), str());
      return it->second;
    }
    case ExprKind::Add: {
      int64_t s = 0;
      for (const Expr& op : operands()) s += op.evaluate(env);
      return s;
    }
    case ExprKind::Mul: return operands()[0].evaluate(env) * operands()[1].evaluate(env);
    case ExprKind::FloorDiv: return floor_div(operands()[0].evaluate(env), value());
    case ExprKind::Mod: return floor_mod(operands()[0].evaluate(env), value());
  }
  return 0;
}

Expr Expr::substitute(const std::map<std::string, Expr>& replacements) const {
  switch (kind()) {
    case ExprKind::Const: return *this;
    case ExprKind::Var: {
      auto it = replacements.find(name());
      return it == replacements.end() ? *this : it->second;
    }
    case ExprKind::Add: {
      Expr s = constant(0);
      for (const Expr& op : operands()) s = s + op.substitute(replacements);
      return s;
    }
    case ExprKind::Mul: return operands()[0].substitute(replacements) * operands()[1].substitute(replacements);
    case ExprKind::FloorDiv: return floordiv(operands()[0].substitute(replacements), value());
    case ExprKind::Mod: return mod(operands()[0].substitute(replacements), value());
  }
  return *this;
}

std::vector<std::string> Expr::variables() const {
  std::vector<std::string> out;
  if (kind() == ExprKind::Var) out.push_back(name());
  for (const Expr& op : operands()) {
    for (auto& v : op.variables()) out.push_back(std::move(v));
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

Bounds bounds_of(const Expr& e, const Ranges& ranges) {
  switch (e.kind()) {
    case ExprKind::Const: return {e.value(), e.value(), true};
    case ExprKind::Var: {
      auto it = ranges.find(e.name());
      if (it == ranges.end()) return {};
      return {it->second.lo, it->second.hi, true};
    }
    case ExprKind::Add: {
      Bounds b{0, 0, true};
      for (const Expr& op : e.operands()) {
        Bounds o = bounds_of(op, ranges);
        if (!o.known) return {};
        b.lo += o.lo;
        b.hi += o.hi;
      }
      return b;
    }
    case ExprKind::Mul: {
      Bounds x = bounds_of(e.operands()[0], ranges), y = bounds_of(e.operands()[1], ranges);
      if (!x.known || !y.known) return {};
      int64_t c[] = {x.lo * y.lo, x.lo * y.hi, x.hi * y.lo, x.hi * y.hi};
      return {*std::min_element(c, c + 4), *std::max_element(c, c + 4), true};
    }
    case ExprKind::FloorDiv: {
      Bounds x = bounds_of(e.operands()[0], ranges);
      if (!x.known) return {};
      return {floor_div(x.lo, e.value()), floor_div(x.hi, e.value()), true};
    }
    case ExprKind::Mod: {
      Bounds x = bounds_of(e.operands()[0], ranges);
      if (x.known && x.lo >= 0 && x.hi < e.value()) return x;
      return {0, e.value() - 1, true};
    }
  }
  return {};
}

namespace {

// x = stride * coarse + fine with 0 <= fine < stride, where stride divides `divisor` (> 1):
// then x // divisor = coarse // (divisor / stride) and x % divisor = (coarse % (divisor / stride))
// * stride + fine. Strides tried: the common factors of the divisor and the coefficients.
struct StrideSplit {
  int64_t stride;
  Expr coarse, fine;
};

std::optional<StrideSplit> split_by_stride(const Expr& x, int64_t divisor, const Ranges& ranges) {
  Terms t;
  collect(x, 1, t);
  std::vector<int64_t> strides;
  for (const auto& [atom, c] : t.coef) {
    int64_t g = std::gcd(c < 0 ? -c : c, divisor);
    if (g > 1) strides.push_back(g);
  }
  std::sort(strides.rbegin(), strides.rend());
  for (int64_t stride : strides) {
    Terms coarse, fine;
    for (const auto& [atom, c] : t.coef) {
      if (c % stride == 0) {
        coarse.coef[atom] += c / stride;
      } else {
        fine.coef[atom] += c;
      }
    }
    coarse.constant = floor_div(t.constant, stride);
    fine.constant = floor_mod(t.constant, stride);
    Expr f = make_sum(fine);
    Bounds b = bounds_of(f, ranges);
    if (!b.known || b.lo < 0 || b.hi >= stride || coarse.coef.empty()) continue;
    return StrideSplit{stride, make_sum(coarse), f};
  }
  return std::nullopt;
}

}  // namespace

Expr simplify(const Expr& e, const Ranges& ranges) {
  switch (e.kind()) {
    case ExprKind::Const: return e;
    case ExprKind::Var: {
      // A variable of a single value (the index of a dim of size 1) is that value.
      auto it = ranges.find(e.name());
      return it != ranges.end() && it->second.lo == it->second.hi ? Expr::constant(it->second.lo) : e;
    }
    case ExprKind::Add: {
      Expr s = Expr::constant(0);
      for (const Expr& op : e.operands()) s = s + simplify(op, ranges);
      return s;
    }
    case ExprKind::Mul: return simplify(e.operands()[0], ranges) * simplify(e.operands()[1], ranges);
    case ExprKind::FloorDiv: {
      Expr x = simplify(e.operands()[0], ranges);
      Bounds b = bounds_of(x, ranges);
      if (b.known && floor_div(b.lo, e.value()) == floor_div(b.hi, e.value())) {
        return Expr::constant(floor_div(b.lo, e.value()));
      }
      if (auto split = split_by_stride(x, e.value(), ranges)) {
        return simplify(floordiv(split->coarse, e.value() / split->stride), ranges);
      }
      Expr q = floordiv(x, e.value());
      return q == e ? q : simplify(q, ranges);
    }
    case ExprKind::Mod: {
      Expr x = simplify(e.operands()[0], ranges);
      Bounds b = bounds_of(x, ranges);
      if (b.known && floor_div(b.lo, e.value()) == floor_div(b.hi, e.value())) {
        return x - Expr::constant(floor_div(b.lo, e.value()) * e.value());
      }
      if (auto split = split_by_stride(x, e.value(), ranges)) {
        return simplify(mod(split->coarse, e.value() / split->stride) * split->stride + split->fine, ranges);
      }
      Expr r = mod(x, e.value());
      return r == e ? r : simplify(r, ranges);
    }
  }
  return e;
}

}  // namespace kiln::loopir
