// Index expressions: canonical forms, the range rules, print/parse round trips, and a seeded fuzz
// test — random expressions evaluated before and after simplification agree at random points.
#include <gtest/gtest.h>

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

// Random expressions over three variables with ranges; simplification must not change the value
// at any point inside the ranges.
Expr random_expr(std::mt19937_64& rng, int depth) {
  std::uniform_int_distribution<int> pick(0, depth <= 0 ? 1 : 6);
  std::uniform_int_distribution<int64_t> small(-9, 9), divisor(1, 12);
  const char* names[] = {"a", "b", "c"};
  switch (pick(rng)) {
    case 0: return Expr::constant(small(rng));
    case 1: return Expr::var(names[rng() % 3]);
    case 2: return random_expr(rng, depth - 1) + random_expr(rng, depth - 1);
    case 3: return random_expr(rng, depth - 1) - random_expr(rng, depth - 1);
    case 4: return random_expr(rng, depth - 1) * Expr::constant(small(rng));
    case 5: return floordiv(random_expr(rng, depth - 1), divisor(rng));
    default: return mod(random_expr(rng, depth - 1), divisor(rng));
  }
}

TEST(Expr, FuzzSimplificationKeepsValues) {
  std::mt19937_64 rng(20261121);
  Ranges ranges{{"a", {0, 6}}, {"b", {0, 15}}, {"c", {0, 2}}};
  std::uniform_int_distribution<int64_t> a(0, 6), b(0, 15), c(0, 2);
  int changed = 0;
  for (int n = 0; n < 3000; ++n) {
    Expr e = random_expr(rng, 4);
    Expr s = simplify(e, ranges);
    changed += s != e;
    EXPECT_EQ(parse_expr(s.str()), s) << s.str();
    for (int k = 0; k < 8; ++k) {
      std::map<std::string, int64_t> env{{"a", a(rng)}, {"b", b(rng)}, {"c", c(rng)}};
      ASSERT_EQ(e.evaluate(env), s.evaluate(env)) << e.str() << "  ->  " << s.str();
    }
  }
  EXPECT_GT(changed, 100);  // the range rules fired
}

}  // namespace
}  // namespace kiln::loopir
