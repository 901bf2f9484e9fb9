// torch.special's Bessel functions of the first and second kind (J0, J1, Y0, Y1), the modified ones
// of the second kind (K0, K1, and e^x K0, e^x K1), the Airy function Ai, and the regularized
// incomplete gamma functions (igamma = P(a, x), igammac = Q(a, x)). Each is computed in double
// from its power series where that converges without cancellation beyond a few digits, and from
// its asymptotic expansion (Hankel's for J and Y, the exponential one for Ai), an integral (K, by
// the trapezoidal rule) or, for the incomplete gamma, a continued fraction elsewhere; a float32 result is the double
// one rounded once. Special values are PyTorch's: J, Y and Ai are NaN at the infinities (their limits are 0), Y and K
// are -inf and +inf at 0 and NaN below, K is 0 at inf, P and Q are NaN for a negative argument. CPU kernels (float32
// and float64, integers computing in float32, as PyTorch's); compiled code calls them (extern).
#include <cmath>
#include <limits>
#include <numbers>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

constexpr double kPi = std::numbers::pi;
constexpr double kEuler = 0.57721566490153286061;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// ---- J and Y of order 0 and 1

// Hankel's expansion: P and Q of order nu at x (J = sqrt(2 / (pi x)) (P cos chi - Q sin chi),
// Y = sqrt(2 / (pi x)) (P sin chi + Q cos chi), chi = x - (nu / 2 + 1 / 4) pi), summed while the
// terms shrink.
void hankel(int nu, double x, double& p, double& q) {
  double mu = 4.0 * nu * nu;
  p = 1;
  q = 0;
  double term = 1;
  for (int k = 1; k < 80; ++k) {
    double next = term * (mu - (2.0 * k - 1) * (2.0 * k - 1)) / (k * 8.0 * x);
    if (std::abs(next) >= std::abs(term) && k > 2) break;
    term = next;
    // Terms alternate between Q (odd k) and P (even k), with signs (-1)^(k/2) within each.
    if (k % 2 == 1) {
      q += ((k / 2) % 2 == 0 ? 1 : -1) * term;
    } else {
      p += ((k / 2) % 2 == 0 ? 1 : -1) * term;
    }
    if (std::abs(term) < 1e-17 * std::max(std::abs(p), std::abs(q))) break;
  }
}

// J and Y: series below (cancellation leaves ~1e-11), Hankel's expansion above (its smallest term,
// about sqrt(4 pi x) e^(-2x), is ~1e-13 relative there).
constexpr double kHankelFrom = 16;

// J_nu(x) for x >= 0 and nu 0 or 1 by its series: sum (-1)^k (x/2)^(2k + nu) / (k! (k + nu)!).
double j_series(int nu, double x) {
  double half = x / 2, q = -half * half;
  double term = nu == 0 ? 1 : half, sum = term;
  for (int k = 1; k < 200; ++k) {
    term *= q / (k * double(k + nu));
    sum += term;
    if (std::abs(term) < 1e-17 * std::abs(sum)) break;
  }
  return sum;
}

double bessel_j(int nu, double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return kNaN;           // PyTorch's value (the limit is 0)
  double sign = nu == 1 && x < 0 ? -1 : 1;  // J0 is even, J1 odd
  x = std::abs(x);
  if (x <= kHankelFrom) return sign * j_series(nu, x);
  double p, q;
  hankel(nu, x, p, q);
  double chi = x - (nu / 2.0 + 0.25) * kPi;
  return sign * std::sqrt(2 / (kPi * x)) * (p * std::cos(chi) - q * std::sin(chi));
}

double bessel_y(int nu, double x) {
  if (std::isnan(x) || x < 0 || std::isinf(x)) return kNaN;  // PyTorch's NaN at inf (the limit is 0)
  if (x == 0) return -kInf;
  if (x > kHankelFrom) {
    double p, q;
    hankel(nu, x, p, q);
    double chi = x - (nu / 2.0 + 0.25) * kPi;
    return std::sqrt(2 / (kPi * x)) * (p * std::sin(chi) + q * std::cos(chi));
  }
  double half = x / 2, q4 = half * half, lead = std::log(half);
  if (nu == 0) {  // Y0 = (2/pi)(ln(x/2) + gamma) J0 + (2/pi) sum (-1)^(k+1) H_k (x^2/4)^k / (k!)^2
    double term = 1, harmonic = 0, sum = 0;
    for (int k = 1; k < 200; ++k) {
      term *= -q4 / (double(k) * k);
      harmonic += 1.0 / k;
      double add = -term * harmonic;
      sum += add;
      if (std::abs(add) < 1e-17 * std::abs(sum)) break;
    }
    return 2 / kPi * ((lead + kEuler) * j_series(0, x) + sum);
  }
  // Y1 = (2/pi) J1 ln(x/2) - 2/(pi x) - (1/pi) sum (-1)^k (psi(k+1) + psi(k+2)) (x/2)^(2k+1) / (k! (k+1)!)
  double term = half, psi_k = -kEuler, psi_k1 = 1 - kEuler, sum = term * (psi_k + psi_k1);
  for (int k = 1; k < 200; ++k) {
    term *= -q4 / (double(k) * (k + 1));
    psi_k = psi_k1;
    psi_k1 += 1.0 / (k + 1);
    double add = term * (psi_k + psi_k1);
    sum += add;
    if (std::abs(add) < 1e-17 * std::abs(sum)) break;
  }
  return 2 / kPi * j_series(1, x) * lead - 2 / (kPi * x) - sum / kPi;
}

// ---- K of order 0 and 1

// e^x K_nu(x) = integral over t >= 0 of exp(-x (cosh t - 1)) cosh(nu t), for x > 1 by the
// trapezoidal rule, which converges geometrically for this analytic, doubly exponentially decaying
// integrand (error about exp(-pi^2 / h) for step h in t; the step shrinks as 1 / sqrt(x) with the
// integrand's width).
double scaled_k_integral(int nu, double x) {
  double h = 0.25 / std::sqrt(x), sum = 0.5;
  for (int i = 1; i < 100000; ++i) {
    double t = i * h;
    double f = std::exp(-x * (std::cosh(t) - 1)) * (nu == 0 ? 1 : std::cosh(t));
    sum += f;
    if (f < 1e-18 * sum) break;
  }
  return sum * h;
}

// K_nu(x) for 0 < x <= 1 by its series (I the modified Bessel function of the first
// kind): K0 = -(ln(x/2) + gamma) I0 + sum H_k (x^2/4)^k / (k!)^2,
// K1 = 1/x + ln(x/2) I1 - (x/4) sum (psi(k+1) + psi(k+2)) (x^2/4)^k / (k! (k+1)!).
double k_series(int nu, double x) {
  double half = x / 2, q4 = half * half, lead = std::log(half);
  if (nu == 0) {
    double term = 1, i0 = 1, harmonic = 0, sum = 0;
    for (int k = 1; k < 200; ++k) {
      term *= q4 / (double(k) * k);
      harmonic += 1.0 / k;
      i0 += term;
      sum += term * harmonic;
      if (term < 1e-17 * i0) break;
    }
    return -(lead + kEuler) * i0 + sum;
  }
  double term = 1, psi_k = -kEuler, psi_k1 = 1 - kEuler;
  double i1 = half, sum = psi_k + psi_k1;
  for (int k = 1; k < 200; ++k) {
    term *= q4 / (double(k) * (k + 1));
    psi_k = psi_k1;
    psi_k1 += 1.0 / (k + 1);
    i1 += half * term;
    sum += term * (psi_k + psi_k1);
    if (term < 1e-17) break;
  }
  return 1 / x + lead * i1 - x / 4 * sum;
}

double bessel_k(int nu, double x, bool scaled) {
  if (std::isnan(x) || x < 0) return kNaN;
  if (x == 0) return kInf;
  if (std::isinf(x)) return 0;
  if (x > 1) {
    double s = scaled_k_integral(nu, x);
    return scaled ? s : s * std::exp(-x);
  }
  double k = k_series(nu, x);
  return scaled ? k * std::exp(x) : k;
}

// ---- Airy Ai

constexpr double kAi0 = 0.35502805388781723926;   // Ai(0) = 1 / (3^(2/3) Gamma(2/3))
constexpr double kAiP0 = 0.25881940379280679840;  // -Ai'(0) = 1 / (3^(1/3) Gamma(1/3))

double airy_ai(double x) {
  if (std::isnan(x) || std::isinf(x)) return kNaN;  // PyTorch's NaN at both infinities
  double ax = std::abs(x);
  double zeta = 2.0 / 3.0 * ax * std::sqrt(ax);
  bool expansion = x > 5.5 || x < -8;
  if (!expansion) {  // Ai = Ai(0) f(x) - (-Ai'(0)) g(x), f and g Maclaurin's series in x^3
    double x3 = x * x * x, f = 1, g = x, tf = 1, tg = x;
    for (int k = 1; k < 300; ++k) {
      tf *= x3 / ((3.0 * k - 1) * (3.0 * k));
      tg *= x3 / ((3.0 * k) * (3.0 * k + 1));
      f += tf;
      g += tg;
      if (std::abs(tf) < 1e-17 * std::abs(f) && std::abs(tg) < 1e-17 * std::abs(g)) break;
    }
    return kAi0 * f - kAiP0 * g;
  }
  // u_k = (6k - 5)(6k - 3)(6k - 1) / ((2k - 1) 216 k) u_(k-1), summed against zeta^-k while they shrink.
  auto u_next = [](int k, double u) {
    return u * (6.0 * k - 5) * (6.0 * k - 3) * (6.0 * k - 1) / ((2.0 * k - 1) * 216 * k);
  };
  if (x > 0) {
    double u = 1, sum = 1, term = 1;
    for (int k = 1; k < 100; ++k) {
      u = u_next(k, u);
      double next = u / std::pow(zeta, k) * (k % 2 ? -1 : 1);
      if (std::abs(next) >= std::abs(term)) break;
      term = next;
      sum += term;
      if (std::abs(term) < 1e-17) break;
    }
    return std::exp(-zeta) / (2 * std::sqrt(kPi) * std::sqrt(std::sqrt(ax))) * sum;
  }
  // Ai(-a) = (sin(zeta + pi/4) P - cos(zeta + pi/4) Q) / (sqrt(pi) a^(1/4)),
  // P = sum (-1)^k u_2k / zeta^2k, Q = sum (-1)^k u_(2k+1) / zeta^(2k+1).
  double u = 1, p = 1, q = 0, last = 1;
  for (int k = 1; k < 100; ++k) {
    u = u_next(k, u);
    double term = u / std::pow(zeta, k);
    if (term >= last) break;
    last = term;
    double sign = ((k / 2) % 2 == 0) ? 1 : -1;
    if (k % 2 == 0) {
      p += sign * term;
    } else {
      q += sign * term;
    }
    if (term < 1e-17) break;
  }
  double phase = zeta + kPi / 4;
  return (std::sin(phase) * p - std::cos(phase) * q) / (std::sqrt(kPi) * std::sqrt(std::sqrt(ax)));
}

// ---- the regularized incomplete gamma functions

// P(a, x) by its series e^-x x^a / Gamma(a + 1) sum x^k / ((a + 1)...(a + k)), for x < a + 1.
double gamma_p_series(double a, double x) {
  double term = 1 / a, sum = term;
  for (int k = 1; k < 100000; ++k) {
    term *= x / (a + k);
    sum += term;
    if (std::abs(term) < 1e-17 * std::abs(sum)) break;
  }
  return sum * std::exp(-x + a * std::log(x) - std::lgamma(a));
}

// Q(a, x) by Legendre's continued fraction (modified Lentz), for x >= a + 1.
double gamma_q_fraction(double a, double x) {
  constexpr double tiny = 1e-300;
  double b = x + 1 - a, c = 1 / tiny, d = 1 / b, h = d;
  for (int i = 1; i < 100000; ++i) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < tiny) d = tiny;
    c = b + an / c;
    if (std::abs(c) < tiny) c = tiny;
    d = 1 / d;
    double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < 1e-16) break;
  }
  return std::exp(-x + a * std::log(x) - std::lgamma(a)) * h;
}

// P(a, x) (upper false) or Q(a, x) (upper true), with PyTorch's values at the edges.
double incomplete_gamma(double a, double x, bool upper) {
  if (std::isnan(a) || std::isnan(x) || a < 0 || x < 0) return kNaN;
  if (a == 0) {
    if (x > 0) return upper ? 0 : 1;
    return kNaN;
  }
  if (x == 0) return upper ? 1 : 0;
  if (std::isinf(a)) return std::isinf(x) ? kNaN : (upper ? 1 : 0);
  if (std::isinf(x)) return upper ? 0 : 1;
  if (x < a + 1) {
    double p = gamma_p_series(a, x);
    return upper ? 1 - p : p;
  }
  double q = gamma_q_fraction(a, x);
  return upper ? q : 1 - q;
}

// ---- kernels

DType float_result(DType t, std::string_view op) {
  DType r = is_floating(t) ? t : DType::Float32;  // integers compute in float32, as PyTorch's
  KILN_CHECK_TYPE(r == DType::Float32 || r == DType::Float64, "{}: \"{}_cpu\" not implemented for '{}'", op, op,
                  dtype_name(r));
  return r;
}

template <class F>
Tensor unary(const Tensor& self, std::string_view op, F f) {
  DType r = float_result(self.dtype(), op);
  Tensor inputs[] = {self};
  meta::TensorSpec spec = meta::pointwise_spec(inputs, r, op);
  Tensor out = meta::allocate(spec, self.device());
  if (self.device().is_meta() || out.numel() == 0) return out;
  // The argument in the result's dtype (an integer becomes float32 first, as PyTorch's), read as double.
  Tensor x = to_dtype(to_dtype(self.contiguous(), r), DType::Float64).contiguous();
  Tensor y = empty(spec.sizes, TensorOptions(DType::Float64));
  const double* px = x.data_ptr<double>();
  double* py = y.data_ptr<double>();
  parallel_for(0, y.numel(), kGrainSize / 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = f(px[i]);
  });
  copy_into(out, y);
  return out;
}

template <bool Upper>
Tensor igamma_kernel(const Tensor& self, const Tensor& other) {
  constexpr std::string_view op = Upper ? "igammac" : "igamma";
  DType r = float_result(result_type(self, other), op);
  Tensor inputs[] = {self, other};
  meta::TensorSpec spec = meta::pointwise_spec(inputs, r, op);
  Tensor out = meta::allocate(spec, self.device());
  if (self.device().is_meta() || out.numel() == 0) return out;
  auto widened = [&](const Tensor& t) {
    Tensor w = to_dtype(expand(t, spec.sizes).contiguous(), r).contiguous();
    return to_dtype(w, DType::Float64).contiguous();
  };
  Tensor a = widened(self), x = widened(other);
  Tensor y = empty(spec.sizes, TensorOptions(DType::Float64));
  const double* pa = a.data_ptr<double>();
  const double* px = x.data_ptr<double>();
  double* py = y.data_ptr<double>();
  parallel_for(0, y.numel(), kGrainSize / 64, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) py[i] = incomplete_gamma(pa[i], px[i], Upper);
  });
  copy_into(out, y);
  return out;
}

Tensor j0(const Tensor& t) {
  return unary(t, "special_bessel_j0", [](double x) { return bessel_j(0, x); });
}
Tensor j1(const Tensor& t) {
  return unary(t, "special_bessel_j1", [](double x) { return bessel_j(1, x); });
}
Tensor y0(const Tensor& t) {
  return unary(t, "special_bessel_y0", [](double x) { return bessel_y(0, x); });
}
Tensor y1(const Tensor& t) {
  return unary(t, "special_bessel_y1", [](double x) { return bessel_y(1, x); });
}
Tensor k0(const Tensor& t) {
  return unary(t, "special_modified_bessel_k0", [](double x) { return bessel_k(0, x, false); });
}
Tensor k1(const Tensor& t) {
  return unary(t, "special_modified_bessel_k1", [](double x) { return bessel_k(1, x, false); });
}
Tensor k0e(const Tensor& t) {
  return unary(t, "special_scaled_modified_bessel_k0", [](double x) { return bessel_k(0, x, true); });
}
Tensor k1e(const Tensor& t) {
  return unary(t, "special_scaled_modified_bessel_k1", [](double x) { return bessel_k(1, x, true); });
}
Tensor ai(const Tensor& t) {
  return unary(t, "special_airy_ai", [](double x) { return airy_ai(x); });
}

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&j0>(r, "aten::special_bessel_j0");
  def_meta_and_cpu<&j1>(r, "aten::special_bessel_j1");
  def_meta_and_cpu<&y0>(r, "aten::special_bessel_y0");
  def_meta_and_cpu<&y1>(r, "aten::special_bessel_y1");
  def_meta_and_cpu<&k0>(r, "aten::special_modified_bessel_k0");
  def_meta_and_cpu<&k1>(r, "aten::special_modified_bessel_k1");
  def_meta_and_cpu<&k0e>(r, "aten::special_scaled_modified_bessel_k0");
  def_meta_and_cpu<&k1e>(r, "aten::special_scaled_modified_bessel_k1");
  def_meta_and_cpu<&ai>(r, "aten::special_airy_ai");
  def_meta_and_cpu<&igamma_kernel<false>>(r, "aten::igamma");
  def_meta_and_cpu<&igamma_kernel<true>>(r, "aten::igammac");
});

}  // namespace
}  // namespace kiln::cpu
