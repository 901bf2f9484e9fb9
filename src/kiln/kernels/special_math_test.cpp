// kernels/special_math.h against values computed to 40 digits with mpmath (an independent
// arbitrary-precision library), rounded to double: within a few units in the last place, where the
// function is well conditioned. Then the special values and domains PyTorch defines.
#include "kiln/kernels/special_math.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

namespace kiln::special {
namespace {

struct UnaryCase {
  const char* name;
  double (*fn)(double);
  std::vector<std::pair<double, double>> points;  // (x, f(x) to 40 digits, rounded)
};

// |got - want| within `ulps` units of double's rounding of want, or of 1 where |want| < 1: digamma
// sums terms of order 1 (log x and 1/x), so a small result such as digamma(1.5) = 0.036 carries
// their absolute rounding error.
void expect_close(double got, double want, double ulps, const std::string& what) {
  double scale = std::max(std::abs(want), 1.0);
  EXPECT_NEAR(got, want, ulps * std::numeric_limits<double>::epsilon() * scale) << what;
}

TEST(SpecialMath, MatchesArbitraryPrecisionValues) {
  const std::vector<UnaryCase> cases = {
      {"digamma",
       &kiln::special::digamma,
       {{-3.7, -0.8450768588704194},
        {-0.5, 0.03648997397857652},
        {-1e-08, 99999999.42278431},
        {1e-08, -100000000.57721564},
        {0.3, -3.502524222200133},
        {1.0, -0.5772156649015329},
        {2.5, 0.7031566406452432},
        {9.99, 2.250700372831201},
        {15.5, 2.7082352425903653},
        {100.0, 4.600161852738087},
        {100000000.0, 18.420680738952367}}},
      {"erfinv",
       &kiln::special::erfinv,
       {{-0.999999, -3.458910737275499},
        {-0.5, -0.4769362762044699},
        {1e-10, 8.862269254527581e-11},
        {0.1, 0.08885599049425769},
        {0.49, 0.46586860023505733},
        {0.51, 0.4881220505159588},
        {0.9, 1.1630871536766743},
        {0.99999, 3.123413274341571}}},
      {"erfcx",
       &kiln::special::erfcx,
       {{-5.0, 144009798674.66104},
        {-0.5, 1.952360489182557},
        {0.0, 1.0},
        {0.3, 0.7345993345676551},
        {1.0, 0.427583576155807},
        {5.0, 0.11070463773306863},
        {9.99, 0.05619664070685882},
        {10.01, 0.056085454355001924},
        {30.0, 0.01879588886141675},
        {100000.0, 5.6418958351954685e-06}}},
      {"ndtri",
       &kiln::special::ndtri,
       {{1e-300, -37.0470962993612},
        {1e-20, -9.262340089798407},
        {1e-05, -4.264890793922825},
        {0.01, -2.326347874040841},
        {0.2, -0.8416212335729142},
        {0.3, -0.5244005127080408},
        {0.5, 0.0},
        {0.6, 0.2533471031357997},
        {0.9, 1.2815515655446006},
        {0.999, 3.090232306167813}}},
      {"i0",
       &kiln::special::i0,
       {{-40.0, 1.48947747934199e+16},
        {-5.0, 27.239871823604446},
        {0.5, 1.0634833707413236},
        {3.0, 4.8807925858650245},
        {29.9, 708478330489.0145},
        {30.1, 862432920031.7792},
        {50.0, 2.9325537838493362e+20},
        {200.0, 2.0396871734097245e+85},
        {700.0, 1.5295933476718737e+302}}},
      {"i0e",
       &kiln::special::i0e,
       {{-40.0, 0.06327827987523534},
        {0.5, 0.6450352704491501},
        {3.0, 0.2430003541618254},
        {29.9, 0.07326921904600191},
        {30.1, 0.07302329413106094},
        {100.0, 0.03994437929909668},
        {100000.0, 0.0012615678379767768}}},
      {"i1",
       &kiln::special::i1,
       {{-40.0, -1.4707396163259352e+16},
        {-5.0, -24.335642142450528},
        {1e-10, 5e-11},
        {0.5, 0.2578943053908963},
        {3.0, 3.9533702174026093},
        {29.9, 696528308361.0927},
        {30.1, 847983630191.5414},
        {200.0, 2.034581549332063e+85}}},
      {"i1e",
       &kiln::special::i1e,
       {{-40.0, -0.062482229074442064},
        {-0.5, -0.1564208031848717},
        {0.5, 0.1564208031848717},
        {3.0, 0.19682671329730086},
        {30.1, 0.07179985435101434},
        {100.0, 0.03974415302513025},
        {100000.0, 0.0012615615301218171}}},
  };
  for (const auto& c : cases) {
    for (const auto& [x, want] : c.points) {
      expect_close(c.fn(x), want, 16, std::string(c.name) + "(" + std::to_string(x) + ")");
    }
  }
}

TEST(SpecialMath, HurwitzZetaMatchesArbitraryPrecisionValues) {
  const double points[][3] = {
      {2.0, -2.5, 9.539246644989124},  {2.0, 0.1, 101.43329915079275},       {2.0, 1.0, 1.6449340668482264},
      {2.0, 5.0, 0.22132295573711533}, {2.0, 1000.0, 0.0010005001666666333}, {3.0, -7.25, -62.00426301828287},
      {7.5, 0.1, 31622777.095030937},  {7.5, 9.0, 1.361040915668847e-07},    {1.5, 1.0, 2.612375348685488},
      {30.0, 1.0, 1.0000000009313275},
  };
  for (const auto& [s, q, want] : points)
    expect_close(zeta(s, q), want, 16, "zeta(" + std::to_string(s) + ", " + std::to_string(q) + ")");
}

TEST(SpecialMath, SpecialValuesAreTorchs) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(digamma(0.0), -inf);
  EXPECT_EQ(digamma(-0.0), inf);
  EXPECT_TRUE(std::isnan(digamma(-2.0)));
  EXPECT_TRUE(std::isnan(digamma(-inf)));
  EXPECT_EQ(digamma(inf), inf);
  EXPECT_TRUE(std::isnan(digamma(nan)));
  EXPECT_EQ(zeta(1.0, 2.0), inf);           // the pole at s = 1
  EXPECT_TRUE(std::isnan(zeta(0.5, 2.0)));  // s < 1
  EXPECT_EQ(zeta(2.0, -3.0), inf);          // q a non-positive integer
  EXPECT_EQ(zeta(2.0, 0.0), inf);
  EXPECT_TRUE(std::isnan(zeta(2.5, -2.5)));  // a negative q needs an integer s
  EXPECT_TRUE(std::isnan(zeta(2.0, inf)));
  EXPECT_EQ(erfinv(1.0), inf);
  EXPECT_EQ(erfinv(-1.0), -inf);
  EXPECT_TRUE(std::isnan(erfinv(1.5)));
  EXPECT_TRUE(std::signbit(erfinv(-0.0)));
  EXPECT_EQ(erfcx(-inf), inf);
  EXPECT_EQ(erfcx(inf), 0.0);
  EXPECT_EQ(erfcx(-30.0), inf);  // 2 exp(900) overflows
  EXPECT_EQ(ndtri(0.0), -inf);
  EXPECT_EQ(ndtri(1.0), inf);
  EXPECT_TRUE(std::isnan(ndtri(-0.1)));
  EXPECT_TRUE(std::isnan(ndtri(1.1)));
  EXPECT_EQ(ndtri(0.5), 0.0);
  // PyTorch's i0 and i1 are NaN at +-inf and overflow where e^x does; the scaled forms go to 0.
  EXPECT_TRUE(std::isnan(i0(inf)));
  EXPECT_TRUE(std::isnan(i1(-inf)));
  EXPECT_EQ(i0(710.0), inf);
  EXPECT_EQ(i0e(inf), 0.0);
  EXPECT_EQ(i1e(-inf), 0.0);
  EXPECT_TRUE(std::signbit(i1e(-inf)));
  EXPECT_TRUE(std::signbit(i1(-0.0)));
  EXPECT_EQ(i0(0.0), 1.0);
}

// A float argument is computed in double and rounded once: the float result is the double result
// rounded.
TEST(SpecialMath, FloatIsDoubleRoundedOnce) {
  for (float x : {-3.7f, -0.5f, 0.3f, 2.5f, 12.0f, 40.0f}) {
    EXPECT_EQ(digamma(x), float(digamma(double(x)))) << x;
    EXPECT_EQ(i0e(x), float(i0e(double(x)))) << x;
    EXPECT_EQ(erfcx(x), float(erfcx(double(x)))) << x;
    EXPECT_EQ(zeta(x + 5.0f, 1.5f), float(zeta(double(x + 5.0f), 1.5))) << x;
  }
  for (float p : {1e-30f, 0.2f, 0.5f, 0.9f}) EXPECT_EQ(ndtri(p), float(ndtri(double(p)))) << p;
  for (float u : {-0.9f, 0.1f, 0.99f}) EXPECT_EQ(erfinv(u), float(erfinv(double(u)))) << u;
}

}  // namespace
}  // namespace kiln::special
