// The orthogonal polynomials of torch.special at (x, n): Chebyshev T, U, V, W and their shifted
// forms, physicists' and probabilists' Hermite, Laguerre and Legendre. PyTorch's definitions: n is
// truncated to an integer and a negative n gives 0; Chebyshev values at |x| = 1 are exact; for
// |x| < 1 and large n the trigonometric forms replace the three-term recurrence. Computed in
// double, rounded once to the result's dtype (float32 or float64, as PyTorch's CPU kernels take).
#include <cmath>
#include <span>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/parallel.h"
#include "kiln/kernels/meta/spec.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::cpu {
namespace {

enum class Poly { ChebyshevT, ChebyshevU, ChebyshevV, ChebyshevW, HermiteH, HermiteHe, LaguerreL, LegendreP };

// p_n from p_0 = 1, p_1 = first and p_{k} = 2 x p_{k-1} - p_{k-2} (the Chebyshev recurrence).
double chebyshev_recurrence(double x, double first, int64_t n) {
  if (n == 0) return 1;
  double p = 1, q = first;
  for (int64_t k = 2; k <= n; ++k) {
    double r = (x + x) * q - p;
    p = q;
    q = r;
  }
  return q;
}

double odd_sign(int64_t n) { return n % 2 == 0 ? 1.0 : -1.0; }

double evaluate(Poly kind, double x, int64_t n) {
  if (n < 0) return 0;
  double dn = static_cast<double>(n);
  switch (kind) {
    case Poly::ChebyshevT:
      if (std::abs(x) == 1) return x > 0 ? 1 : odd_sign(n);
      if (n > 6 && std::abs(x) < 1) return std::cos(dn * std::acos(x));
      return chebyshev_recurrence(x, x, n);
    case Poly::ChebyshevU:
      if (std::abs(x) == 1) return (x > 0 ? 1 : odd_sign(n)) * (dn + 1);
      if (n > 8 && std::abs(x) < 1) {
        double t = std::acos(x);
        if (std::sin(t) != 0) return std::sin((dn + 1) * t) / std::sin(t);
        return (dn + 1) * std::cos((dn + 1) * t) / x;
      }
      return chebyshev_recurrence(x, x + x, n);
    case Poly::ChebyshevV:
      if (std::abs(x) == 1) return x > 0 ? 1 : odd_sign(n) * (dn + dn + 1);
      if (n > 8 && std::abs(x) < 1) {
        double t = std::acos(x);
        if (std::sin(t / 2) != 1) return std::cos((dn + 0.5) * t) / std::cos(t / 2);
        return odd_sign(n) * (dn + dn + 1);
      }
      return chebyshev_recurrence(x, x + x - 1, n);
    case Poly::ChebyshevW:
      if (std::abs(x) == 1) return x > 0 ? dn + dn + 1 : odd_sign(n);
      if (n > 8 && std::abs(x) < 1) {
        double t = std::acos(x);
        if (std::cos(t / 2) != 1) return std::sin((dn + 0.5) * t) / std::sin(t / 2);
        return x > 0 ? dn + dn + 1 : odd_sign(n);
      }
      return chebyshev_recurrence(x, x + x + 1, n);
    case Poly::HermiteH: {  // H_{k+1} = 2x H_k - 2k H_{k-1}
      if (n == 0) return 1;
      double p = 1, q = x + x;
      for (int64_t k = 1; k < n; ++k) {
        double r = (x + x) * q - 2 * static_cast<double>(k) * p;
        p = q;
        q = r;
      }
      return q;
    }
    case Poly::HermiteHe: {  // He_{k+1} = x He_k - k He_{k-1}
      if (n == 0) return 1;
      double p = 1, q = x;
      for (int64_t k = 1; k < n; ++k) {
        double r = x * q - static_cast<double>(k) * p;
        p = q;
        q = r;
      }
      return q;
    }
    case Poly::LaguerreL: {  // (k+1) L_{k+1} = (2k + 1 - x) L_k - k L_{k-1}
      if (x == 0 || n == 0) return 1;
      double p = 1, q = 1 - x;
      for (int64_t k = 1; k < n; ++k) {
        double dk = static_cast<double>(k);
        double r = ((dk + dk + (1 - x)) * q - dk * p) / (dk + 1);
        p = q;
        q = r;
      }
      return q;
    }
    case Poly::LegendreP: {  // (k+1) P_{k+1} = (2k + 1) x P_k - k P_{k-1}
      if (std::abs(x) == 1) return x > 0 || n == 0 ? 1 : odd_sign(n);
      if (n == 0) return 1;
      double p = 1, q = x;
      for (int64_t k = 1; k < n; ++k) {
        double dk = static_cast<double>(k);
        double r = ((dk + dk + 1) * x * q - dk * p) / (dk + 1);
        p = q;
        q = r;
      }
      return q;
    }
  }
  return 0;
}

// n as PyTorch's kernels take it: truncated toward zero; NaN and values past int64 (which x86's
// conversion turns into INT64_MIN) count as negative.
int64_t degree_of(double n) {
  if (!(n > -9.2e18 && n < 9.2e18)) return -1;
  return static_cast<int64_t>(n);
}

template <Poly kind, bool shifted>
Tensor polynomial(const Tensor& x, const Tensor& n, std::string_view op) {
  DType dtype = result_type(x, n);
  KILN_CHECK_TYPE(dtype == DType::Float32 || dtype == DType::Float64, "{}: \"{}_cpu\" not implemented for '{}'", op, op,
                  dtype_name(dtype));
  Tensor inputs[] = {x, n};
  meta::TensorSpec spec = meta::pointwise_spec(inputs, dtype, op);
  Tensor out = meta::allocate(spec, x.device());
  if (x.device().is_meta() || out.numel() == 0) return out;
  Tensor xs = to_dtype(expand(x, spec.sizes).contiguous(), DType::Float64).contiguous();
  Tensor ns = to_dtype(expand(n, spec.sizes).contiguous(), DType::Float64).contiguous();
  Tensor result = empty(spec.sizes, TensorOptions(DType::Float64));
  const double* px = xs.data_ptr<double>();
  const double* pn = ns.data_ptr<double>();
  double* pr = result.data_ptr<double>();
  parallel_for(0, out.numel(), kGrainSize / 16, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      // Rounded to the dtype first, as PyTorch evaluates in it; the shifted forms at 2x - 1.
      double xi = dtype == DType::Float32 ? static_cast<double>(static_cast<float>(px[i])) : px[i];
      if (shifted) xi = xi + xi - 1;
      pr[i] = evaluate(kind, xi, degree_of(pn[i]));
    }
  });
  copy_into(out, result);
  return out;
}

#define KILN_POLYNOMIAL(NAME, KIND, SHIFTED) \
  Tensor NAME(const Tensor& x, const Tensor& n) { return polynomial<Poly::KIND, SHIFTED>(x, n, "special_" #NAME); }
KILN_POLYNOMIAL(chebyshev_polynomial_t, ChebyshevT, false)
KILN_POLYNOMIAL(chebyshev_polynomial_u, ChebyshevU, false)
KILN_POLYNOMIAL(chebyshev_polynomial_v, ChebyshevV, false)
KILN_POLYNOMIAL(chebyshev_polynomial_w, ChebyshevW, false)
KILN_POLYNOMIAL(shifted_chebyshev_polynomial_t, ChebyshevT, true)
KILN_POLYNOMIAL(shifted_chebyshev_polynomial_u, ChebyshevU, true)
KILN_POLYNOMIAL(shifted_chebyshev_polynomial_v, ChebyshevV, true)
KILN_POLYNOMIAL(shifted_chebyshev_polynomial_w, ChebyshevW, true)
KILN_POLYNOMIAL(hermite_polynomial_h, HermiteH, false)
KILN_POLYNOMIAL(hermite_polynomial_he, HermiteHe, false)
KILN_POLYNOMIAL(laguerre_polynomial_l, LaguerreL, false)
KILN_POLYNOMIAL(legendre_polynomial_p, LegendreP, false)
#undef KILN_POLYNOMIAL

using namespace kiln::kernels;

const KernelRegistrar kRegister([](Registry& r) {
  def_meta_and_cpu<&chebyshev_polynomial_t>(r, "aten::special_chebyshev_polynomial_t");
  def_meta_and_cpu<&chebyshev_polynomial_u>(r, "aten::special_chebyshev_polynomial_u");
  def_meta_and_cpu<&chebyshev_polynomial_v>(r, "aten::special_chebyshev_polynomial_v");
  def_meta_and_cpu<&chebyshev_polynomial_w>(r, "aten::special_chebyshev_polynomial_w");
  def_meta_and_cpu<&shifted_chebyshev_polynomial_t>(r, "aten::special_shifted_chebyshev_polynomial_t");
  def_meta_and_cpu<&shifted_chebyshev_polynomial_u>(r, "aten::special_shifted_chebyshev_polynomial_u");
  def_meta_and_cpu<&shifted_chebyshev_polynomial_v>(r, "aten::special_shifted_chebyshev_polynomial_v");
  def_meta_and_cpu<&shifted_chebyshev_polynomial_w>(r, "aten::special_shifted_chebyshev_polynomial_w");
  def_meta_and_cpu<&hermite_polynomial_h>(r, "aten::special_hermite_polynomial_h");
  def_meta_and_cpu<&hermite_polynomial_he>(r, "aten::special_hermite_polynomial_he");
  def_meta_and_cpu<&laguerre_polynomial_l>(r, "aten::special_laguerre_polynomial_l");
  def_meta_and_cpu<&legendre_polynomial_p>(r, "aten::special_legendre_polynomial_p");
});

}  // namespace
}  // namespace kiln::cpu
