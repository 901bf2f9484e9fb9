// Index expressions: canonical forms, the range rules, print/parse round trips, and a seeded fuzz
// test — random expression trees, evaluated naively, agree with their canonical and simplified
// Expr forms at random points.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <random>

#include "kiln/compiler/loopir/expr.h"
#include "kiln/support/error.h"

namespace kiln::loopir {
namespace {

Expr v(const char* name) { return Expr::var(name); }

TEST(Expr, CanonicalFormsAreHashConsed) {
  Expr i = v("i"), j = v("j");
  EXPECT_EQ(i + j, j + i);
  EXPECT_EQ((i + j) * 2, i * 2 + j * 2);
  EXPECT_EQ((i * 3 + 4 - i * 3).str(), "4");
  EXPECT_EQ((i * 8 + j + 3).str(), "8*i + j + 3");
  EXPECT_EQ((i - j * 2).str(), "i - 2*j");
  EXPECT_EQ(floordiv(i * 8 + j * 16 + 5, 8).str(), "i + 2*j");
  EXPECT_EQ(floordiv(floordiv(i, 2), 3), floordiv(i, 6));
  EXPECT_EQ(mod(i * 8 + j + 9, 8).str(), "((j + 1) % 8)");
  EXPECT_EQ(mod(mod(i, 12), 4), mod(i, 4));
  EXPECT_EQ(floordiv(i, 4) * 4 + mod(i, 4), i);  // a split index put back together
  EXPECT_EQ((floordiv(i + j, 3) * 6 + mod(i + j, 3) * 2).str(), "2*i + 2*j");
  // Products are one node however they nest, and read back as that node (found by the fuzz test).
  Expr k = v("k");
  EXPECT_EQ(i * (j * k), (i * j) * k);
  EXPECT_EQ((k * 2) * (j * i), i * j * k * 2);
  EXPECT_EQ(parse_expr((i * (i * k)).str()), i * (i * k));
  EXPECT_EQ(floordiv(Expr::constant(-7), 2).value(), -4);
  EXPECT_EQ(mod(Expr::constant(-7), 3).value(), 2);
  EXPECT_THROW(floordiv(i, 0), Error);
}

TEST(Expr, RangesSimplifyDivisionAndModulo) {
  Expr i = v("i"), j = v("j");
  Ranges r{{"i", {0, 5}}, {"j", {0, 7}}};
  EXPECT_EQ(simplify(floordiv(i * 8 + j, 8), r), i);
  EXPECT_EQ(simplify(mod(i * 8 + j, 8), r), j);
  EXPECT_EQ(simplify(floordiv(j, 8), r), Expr::constant(0));
  EXPECT_EQ(simplify(mod(j + 8, 16), r), j + 8);
  // A view of [6, 8] as [48] and back is the identity.
  Expr flat = i * 8 + j;
  EXPECT_EQ(simplify(floordiv(flat, 8) * 8 + mod(flat, 8), r), flat);
  // A batch split into heads: (64*i + 8*k + m) // 128 is i // 2 when 8*k + m < 64.
  Expr k = v("k"), m = v("m");
  Ranges heads{{"i", {0, 3}}, {"k", {0, 7}}, {"m", {0, 7}}};
  Expr flat3 = i * 64 + k * 8 + m;
  EXPECT_EQ(simplify(floordiv(flat3, 128), heads), floordiv(i, 2));
  EXPECT_EQ(simplify(mod(flat3, 128), heads), mod(i, 2) * 64 + k * 8 + m);
  EXPECT_EQ(simplify(floordiv(flat3, 128) * 128 + mod(flat3, 128), heads), flat3);
  Bounds b = bounds_of(i * 8 + j, r);
  EXPECT_EQ(b.lo, 0);
  EXPECT_EQ(b.hi, 47);
}

TEST(Expr, PrintParseRoundTrip) {
  Expr i = v("i0"), j = v("i1"), n = v("n");
  for (Expr e : {i * 8 + j, floordiv(i + j * 3, 4) - mod(j, 5) * 2, i * n + j, Expr::constant(-3), i * -1 + 2}) {
    EXPECT_EQ(parse_expr(e.str()), e) << e.str();
  }
  EXPECT_EQ(parse_expr("2 * (i0 + 1) - i0"), i + 2);
  try {
    parse_expr("i0 + * 3");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("column 6"), std::string::npos) << e.what();
  }
}

// The fuzz test's reference: a plain expression tree, independent of Expr, evaluated naively with
// Python's // and % (the quotient floors, the remainder takes the divisor's sign). Converting it
// to Expr goes through the canonicalizing constructors, so a wrong rule in them (collecting like
// terms, distributing constants, pulling multiples out of // and %, recombining split indices)
// shows up as a value that differs from the tree's.
struct Tree {
  enum Op { Const, Var, Add, Sub, Mul, FloorDiv, Mod } op = Const;
  int64_t value = 0;  // Const: the value; FloorDiv, Mod: the divisor
  int var = 0;        // Var: an index into kVars
  std::vector<Tree> kids;
};

constexpr const char* kVars[] = {"a", "b", "c", "d"};
// a, b, c are loop indices; d may be negative, so Python semantics of // and % matter.
const Ranges kFuzzRanges{{"a", {0, 6}}, {"b", {0, 15}}, {"c", {0, 2}}, {"d", {-5, 5}}};

int64_t py_floordiv(int64_t x, int64_t y) {
  int64_t q = x / y, r = x % y;
  if (r != 0 && (r < 0) != (y < 0)) --q;
  return q;
}
int64_t py_mod(int64_t x, int64_t y) {
  int64_t r = x % y;
  if (r != 0 && (r < 0) != (y < 0)) r += y;
  return r;
}

using Point = std::array<int64_t, 4>;

int64_t naive(const Tree& t, const Point& p) {
  switch (t.op) {
    case Tree::Const: return t.value;
    case Tree::Var: return p[static_cast<size_t>(t.var)];
    case Tree::Add: return naive(t.kids[0], p) + naive(t.kids[1], p);
    case Tree::Sub: return naive(t.kids[0], p) - naive(t.kids[1], p);
    case Tree::Mul: return naive(t.kids[0], p) * naive(t.kids[1], p);
    case Tree::FloorDiv: return py_floordiv(naive(t.kids[0], p), t.value);
    case Tree::Mod: return py_mod(naive(t.kids[0], p), t.value);
  }
  return 0;
}

// A bound on the magnitude of t's value for variables in [-kOutside, kOutside] (interval
// arithmetic, in double so it cannot overflow); `worst` collects the largest bound of any
// subtree, so trees whose values could overflow int64 are left out.
constexpr int64_t kOutside = 20;
double magnitude(const Tree& t, double& worst) {
  double m = 0;
  switch (t.op) {
    case Tree::Const: m = static_cast<double>(t.value < 0 ? -t.value : t.value); break;
    case Tree::Var: m = kOutside; break;
    case Tree::Add:
    case Tree::Sub: m = magnitude(t.kids[0], worst) + magnitude(t.kids[1], worst); break;
    case Tree::Mul: m = magnitude(t.kids[0], worst) * magnitude(t.kids[1], worst); break;
    case Tree::FloorDiv: m = magnitude(t.kids[0], worst) + 1; break;
    case Tree::Mod: m = std::max(magnitude(t.kids[0], worst), static_cast<double>(t.value)); break;
  }
  worst = std::max(worst, m);
  return m;
}

std::string show(const Tree& t) {
  switch (t.op) {
    case Tree::Const: return std::to_string(t.value);
    case Tree::Var: return kVars[t.var];
    case Tree::Add: return "(" + show(t.kids[0]) + " + " + show(t.kids[1]) + ")";
    case Tree::Sub: return "(" + show(t.kids[0]) + " - " + show(t.kids[1]) + ")";
    case Tree::Mul: return "(" + show(t.kids[0]) + " * " + show(t.kids[1]) + ")";
    case Tree::FloorDiv: return "(" + show(t.kids[0]) + " // " + std::to_string(t.value) + ")";
    case Tree::Mod: return "(" + show(t.kids[0]) + " % " + std::to_string(t.value) + ")";
  }
  return "?";
}

// Through the public constructors only.
Expr to_expr(const Tree& t) {
  switch (t.op) {
    case Tree::Const: return Expr::constant(t.value);
    case Tree::Var: return Expr::var(kVars[t.var]);
    case Tree::Add: return to_expr(t.kids[0]) + to_expr(t.kids[1]);
    case Tree::Sub: return to_expr(t.kids[0]) - to_expr(t.kids[1]);
    case Tree::Mul: return to_expr(t.kids[0]) * to_expr(t.kids[1]);
    case Tree::FloorDiv: return floordiv(to_expr(t.kids[0]), t.value);
    case Tree::Mod: return mod(to_expr(t.kids[0]), t.value);
  }
  return Expr::constant(0);
}

Tree leaf_const(int64_t v) { return Tree{Tree::Const, v, 0, {}}; }
Tree node(Tree::Op op, Tree x, Tree y) { return Tree{op, 0, 0, {std::move(x), std::move(y)}}; }
Tree divmod(Tree::Op op, Tree x, int64_t divisor) { return Tree{op, divisor, 0, {std::move(x)}}; }

class TreeGen {
 public:
  explicit TreeGen(uint64_t seed) : rng_(seed) {}

  // Children are generated in statements of their own, so the tree for a seed does not depend on
  // the compiler's order of evaluating arguments.
  Tree tree(int depth) {
    int pick = static_cast<int>(depth <= 0 ? uniform(0, 1) : uniform(0, 13));
    switch (pick) {
      case 0: return leaf_const(uniform(-9, 9));
      case 1: return Tree{Tree::Var, 0, static_cast<int>(uniform(0, 3)), {}};
      case 2:
      case 3:
      case 4: {
        Tree x = tree(depth - 1);
        Tree y = tree(depth - 1);
        return node(pick == 4 ? Tree::Sub : Tree::Add, std::move(x), std::move(y));
      }
      // Constant multiples on either side, and a product of two small expressions.
      case 5: {
        Tree x = tree(depth - 1);
        return node(Tree::Mul, std::move(x), leaf_const(uniform(-9, 9)));
      }
      case 6: {
        Tree x = tree(depth - 1);
        return node(Tree::Mul, leaf_const(divisor()), std::move(x));
      }
      case 7: {
        Tree x = tree(std::min(depth - 1, 1));
        Tree y = tree(std::min(depth - 1, 1));
        return node(Tree::Mul, std::move(x), std::move(y));
      }
      case 8:
      case 9:
      case 10: {
        Tree x = tree(depth - 1);
        return divmod(pick == 10 ? Tree::Mod : Tree::FloorDiv, std::move(x), divisor());
      }
      case 11: {
        // A split index put back together: (x // q) * (m*q) + (x % q) * m, sometimes with a
        // coefficient off by a little, which must not be recombined.
        Tree x = tree(depth - 1);
        int64_t q = divisor();
        int64_t m = uniform(-3, 3);
        int64_t c = m * q;
        if (uniform(0, 3) == 0) c += uniform(-2, 2);
        return node(Tree::Add, node(Tree::Mul, divmod(Tree::FloorDiv, x, q), leaf_const(c)),
                    node(Tree::Mul, divmod(Tree::Mod, x, q), leaf_const(m)));
      }
      case 12: {
        // A scaled index plus an offset, divided or reduced by a multiple or a divisor of the scale.
        int64_t scale = divisor();
        Tree x = tree(depth - 1);
        Tree offset = tree(depth - 1);
        Tree e = node(Tree::Add, node(Tree::Mul, std::move(x), leaf_const(scale)), std::move(offset));
        int64_t d = scale;
        if (uniform(0, 1)) {
          d *= uniform(1, 3);
        } else {
          d = std::max<int64_t>(1, scale / uniform(1, 4));
        }
        return divmod(uniform(0, 1) ? Tree::FloorDiv : Tree::Mod, std::move(e), d);
      }
      default: {
        // Nested // and %: (x // p) // q, (x % (p*q)) % p, (x % p) % q.
        Tree x = tree(depth - 1);
        int64_t p = divisor();
        int64_t q = divisor();
        switch (uniform(0, 2)) {
          case 0: return divmod(Tree::FloorDiv, divmod(Tree::FloorDiv, std::move(x), p), q);
          case 1: return divmod(Tree::Mod, divmod(Tree::Mod, std::move(x), p * q), p);
          default: return divmod(Tree::Mod, divmod(Tree::Mod, std::move(x), p), q);
        }
      }
    }
  }

  // A point inside the ranges, the bounds more often than the rest.
  Point inside() {
    Point p{};
    size_t i = 0;
    for (const char* name : kVars) {
      Range r = kFuzzRanges.at(name);
      int k = static_cast<int>(uniform(0, 5));
      p[i++] = k == 0 ? r.lo : k == 1 ? r.hi : uniform(r.lo, r.hi);
    }
    return p;
  }
  Point anywhere() {
    Point p{};
    for (auto& x : p) x = uniform(-kOutside, kOutside);
    return p;
  }

 private:
  int64_t uniform(int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng_); }
  int64_t divisor() {
    static constexpr int64_t kDivisors[] = {1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 32, 64};
    return kDivisors[uniform(0, static_cast<int64_t>(std::size(kDivisors)) - 1)];
  }
  std::mt19937_64 rng_;
};

std::map<std::string, int64_t> env_of(const Point& p) {
  std::map<std::string, int64_t> env;
  for (size_t i = 0; i < p.size(); ++i) env[kVars[i]] = p[i];
  return env;
}

TEST(Expr, FuzzNaiveEvaluatorFollowsPython) {
  EXPECT_EQ(py_floordiv(-7, 2), -4);
  EXPECT_EQ(py_floordiv(7, 2), 3);
  EXPECT_EQ(py_floordiv(-6, 3), -2);
  EXPECT_EQ(py_mod(-7, 3), 2);
  EXPECT_EQ(py_mod(7, 3), 1);
  EXPECT_EQ(py_mod(-6, 3), 0);
  Tree t = divmod(Tree::Mod, node(Tree::Sub, leaf_const(1), Tree{Tree::Var, 0, 3, {}}), 4);  // (1 - d) % 4
  EXPECT_EQ(naive(t, {0, 0, 0, 5}), 0);
  EXPECT_EQ(naive(t, {0, 0, 0, 4}), 1);
  EXPECT_EQ(show(t), "((1 - d) % 4)");
}

// Random trees: the canonical Expr built from each must agree with the naive value of the tree at
// any point (the constructors use no ranges), and its simplification at points inside the ranges.
TEST(Expr, FuzzCanonicalAndSimplifiedMatchNaiveTree) {
  TreeGen gen(20261123);
  int trees = 0, simplified = 0;
  while (trees < 20000) {
    Tree t = gen.tree(5);
    double worst = 0;
    magnitude(t, worst);
    if (worst > 0x1p40) continue;
    ++trees;
    Expr e = to_expr(t);
    for (int k = 0; k < 4; ++k) {
      Point p = gen.anywhere();
      ASSERT_EQ(e.evaluate(env_of(p)), naive(t, p)) << show(t) << "  built as  " << e.str();
    }
    Expr s = simplify(e, kFuzzRanges);
    simplified += s != e;
    ASSERT_EQ(parse_expr(s.str()), s) << s.str();
    for (int k = 0; k < 8; ++k) {
      Point p = gen.inside();
      ASSERT_EQ(s.evaluate(env_of(p)), naive(t, p))
          << show(t) << "  built as  " << e.str() << "  simplified to  " << s.str();
    }
  }
  EXPECT_GT(simplified, 2000);  // the range rules fired
}

}  // namespace
}  // namespace kiln::loopir
