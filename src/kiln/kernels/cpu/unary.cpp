// CPU kernels of the unary pointwise ops. Each op is a functor over its compute type; float math
// runs in float for float16/bfloat16, and integer inputs of float ops are converted first.
#include <cmath>

#include "kiln/kernels/cpu/activations.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/pointwise_iter.h"
#include "kiln/kernels/cpu/vec_math.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/meta/pointwise.h"
#include "kiln/kernels/register.h"
#include "kiln/kernels/special_math.h"

namespace kiln::cpu {
namespace {

// ---- Float ops: T is float or double.
#define KILN_FLOAT_OP(Name, expr) \
  struct Name {                   \
    template <class T>            \
    T operator()(T x) const {     \
      return expr;                \
    }                             \
  };
KILN_FLOAT_OP(Expm1, std::expm1(x))
KILN_FLOAT_OP(Log, std::log(x))
KILN_FLOAT_OP(Log1p, std::log1p(x))
KILN_FLOAT_OP(Log2, std::log2(x))
KILN_FLOAT_OP(Log10, std::log10(x))
KILN_FLOAT_OP(Sqrt, std::sqrt(x))
KILN_FLOAT_OP(Rsqrt, T(1) / std::sqrt(x))
KILN_FLOAT_OP(Reciprocal, T(1) / x)
KILN_FLOAT_OP(Sin, std::sin(x))
KILN_FLOAT_OP(Cos, std::cos(x))
KILN_FLOAT_OP(Tan, std::tan(x))
KILN_FLOAT_OP(Asin, std::asin(x))
KILN_FLOAT_OP(Acos, std::acos(x))
KILN_FLOAT_OP(Atan, std::atan(x))
KILN_FLOAT_OP(Sinh, std::sinh(x))
KILN_FLOAT_OP(Cosh, std::cosh(x))
KILN_FLOAT_OP(Asinh, std::asinh(x))
KILN_FLOAT_OP(Acosh, std::acosh(x))
KILN_FLOAT_OP(Atanh, std::atanh(x))
// Shared with GEMM epilogues (activations.h): float through kiln's vectorizable exp, erf and tanh.
KILN_FLOAT_OP(Exp, act::exp(x))
KILN_FLOAT_OP(Tanh, act::tanh(x))
KILN_FLOAT_OP(Erf, act::erf(x))
KILN_FLOAT_OP(Sigmoid, act::sigmoid(x))
KILN_FLOAT_OP(GeluErf, act::gelu_erf(x))
KILN_FLOAT_OP(GeluTanh, act::gelu_tanh(x))
// The special functions: C++'s where it has them, special_math.h's otherwise.
KILN_FLOAT_OP(Lgamma, std::lgamma(x))
KILN_FLOAT_OP(Erfc, std::erfc(x))
KILN_FLOAT_OP(Digamma, special::digamma(x))
KILN_FLOAT_OP(Erfinv, special::erfinv(x))
KILN_FLOAT_OP(Erfcx, special::erfcx(x))
KILN_FLOAT_OP(Ndtri, special::ndtri(x))
KILN_FLOAT_OP(I0, special::i0(x))
KILN_FLOAT_OP(I0e, special::i0e(x))
KILN_FLOAT_OP(I1, special::i1(x))
KILN_FLOAT_OP(I1e, special::i1e(x))
#undef KILN_FLOAT_OP

// ---- Ops on every dtype: T is the compute type (an integer, bool, float or double).
struct Abs {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(x);
    else if constexpr (std::is_signed_v<T>) return x < 0 ? wrapping_neg(x) : x;  // abs(min) is min
    else return x;
  }
};
struct Neg {
  template <class T>
  T operator()(T x) const {
    return wrapping_neg(x);
  }
};
struct Relu {
  template <class T>
  T operator()(T x) const {
    return x < T(0) ? T(0) : x;
  }  // NaN stays NaN
};
struct Sign {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return x;
    else return T((T(0) < x) - (x < T(0)));
  }
};
#define KILN_ROUNDING_OP(Name, fn)                             \
  struct Name {                                                \
    template <class T>                                         \
    T operator()(T x) const {                                  \
      if constexpr (std::is_floating_point_v<T>) return fn(x); \
      else return x;                                           \
    }                                                          \
  };
KILN_ROUNDING_OP(Ceil, std::ceil)
KILN_ROUNDING_OP(Floor, std::floor)
KILN_ROUNDING_OP(Round, std::nearbyint)  // half to even, as PyTorch
KILN_ROUNDING_OP(Trunc, std::trunc)
#undef KILN_ROUNDING_OP
struct BitwiseNot {
  template <class T>
  T operator()(T x) const {
    if constexpr (std::is_same_v<T, bool>) return !x;
    else if constexpr (std::is_integral_v<T>) return T(~x);
    else return x;  // unreachable: the meta function rejects floating inputs
  }
};

// ---- Bool results.
struct IsNan {
  template <class T>
  bool operator()(T x) const {
    return x != x;
  }
};
struct IsInf {
  template <class T>
  bool operator()(T x) const {
    if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
    else return false;
  }
};
struct LogicalNot {
  template <class T>
  bool operator()(T x) const {
    return !(x != T(0));
  }
};

template <class Op>
void float_impl(const Tensor& self, const Tensor& out) {
  Tensor in = to_dtype(self, out.dtype());
  PointwiseIter it(out, std::span(&in, 1));
  visit_floating(out.dtype(), "unary op", [&]<class T>() { pointwise_kernel<T, T>(it, Op{}); });
}

template <class Op>
void same_impl(const Tensor& self, const Tensor& out) {
  PointwiseIter it(out, std::span(&self, 1));
  visit_dtype(out.dtype(), [&]<class T>() { pointwise_kernel<T, T>(it, Op{}); });
}

template <class Op>
void to_bool_impl(const Tensor& self, const Tensor& out) {
  PointwiseIter it(out, std::span(&self, 1));
  visit_dtype(self.dtype(), [&]<class T>() { pointwise_kernel<bool, T>(it, Op{}); });
}

void gelu_impl(const Tensor& self, std::string_view approximate, const Tensor& out) {
  if (approximate == "tanh") {
    float_impl<GeluTanh>(self, out);
  } else {
    float_impl<GeluErf>(self, out);
  }
}

using namespace kiln::kernels;

// A float op PyTorch's CPU kernel computes in float32 and float64 only: float16 and bfloat16 (the
// result dtype) are refused, as PyTorch refuses them.
constexpr char kNdtri[] = "special_ndtri";
constexpr char kErfcx[] = "special_erfcx";
template <const char* Op>
meta::TensorSpec wide_float(const Tensor& self) {
  meta::TensorSpec spec = meta::unary_float(self);
  KILN_CHECK_KIND(!is_reduced_float(spec.dtype), ErrorKind::NotImplemented,
                  "{}: not implemented for {} (PyTorch's kernel has float32 and float64 only), input {}", Op,
                  dtype_name(spec.dtype), self.describe());
  return spec;
}

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::unary_float, &float_impl<Exp>>(r, "aten::exp");
  def_structured<&meta::unary_float, &float_impl<Expm1>>(r, "aten::expm1");
  def_structured<&meta::unary_float, &float_impl<Log>>(r, "aten::log");
  def_structured<&meta::unary_float, &float_impl<Log1p>>(r, "aten::log1p");
  def_structured<&meta::unary_float, &float_impl<Log2>>(r, "aten::log2");
  def_structured<&meta::unary_float, &float_impl<Log10>>(r, "aten::log10");
  def_structured<&meta::unary_float, &float_impl<Sqrt>>(r, "aten::sqrt");
  def_structured<&meta::unary_float, &float_impl<Rsqrt>>(r, "aten::rsqrt");
  def_structured<&meta::unary_float, &float_impl<Reciprocal>>(r, "aten::reciprocal");
  def_structured<&meta::unary_float, &float_impl<Sin>>(r, "aten::sin");
  def_structured<&meta::unary_float, &float_impl<Cos>>(r, "aten::cos");
  def_structured<&meta::unary_float, &float_impl<Tan>>(r, "aten::tan");
  def_structured<&meta::unary_float, &float_impl<Asin>>(r, "aten::asin");
  def_structured<&meta::unary_float, &float_impl<Acos>>(r, "aten::acos");
  def_structured<&meta::unary_float, &float_impl<Atan>>(r, "aten::atan");
  def_structured<&meta::unary_float, &float_impl<Sinh>>(r, "aten::sinh");
  def_structured<&meta::unary_float, &float_impl<Cosh>>(r, "aten::cosh");
  def_structured<&meta::unary_float, &float_impl<Tanh>>(r, "aten::tanh");
  def_structured<&meta::unary_float, &float_impl<Asinh>>(r, "aten::asinh");
  def_structured<&meta::unary_float, &float_impl<Acosh>>(r, "aten::acosh");
  def_structured<&meta::unary_float, &float_impl<Atanh>>(r, "aten::atanh");
  def_structured<&meta::unary_float, &float_impl<Sigmoid>>(r, "aten::sigmoid");
  def_structured<&meta::unary_float, &float_impl<Erf>>(r, "aten::erf");
  def_structured<&meta::gelu, &gelu_impl>(r, "aten::gelu");
  def_structured<&meta::unary_float, &float_impl<Lgamma>>(r, "aten::lgamma");
  def_structured<&meta::unary_float, &float_impl<Erfc>>(r, "aten::erfc");
  def_structured<&meta::unary_float, &float_impl<Digamma>>(r, "aten::digamma");
  def_structured<&meta::unary_float, &float_impl<Erfinv>>(r, "aten::erfinv");
  def_structured<&wide_float<kErfcx>, &float_impl<Erfcx>>(r, "aten::special_erfcx");
  def_structured<&wide_float<kNdtri>, &float_impl<Ndtri>>(r, "aten::special_ndtri");
  def_structured<&meta::unary_float, &float_impl<I0>>(r, "aten::i0");
  def_structured<&meta::unary_float, &float_impl<I0e>>(r, "aten::special_i0e");
  def_structured<&meta::unary_float, &float_impl<I1>>(r, "aten::special_i1");
  def_structured<&meta::unary_float, &float_impl<I1e>>(r, "aten::special_i1e");

  def_structured<&meta::unary_signed, &same_impl<Abs>>(r, "aten::abs");
  def_structured<&meta::unary_signed, &same_impl<Neg>>(r, "aten::neg");
  def_structured<&meta::unary_signed, &same_impl<Relu>>(r, "aten::relu");
  def_structured<&meta::unary_same, &same_impl<Sign>>(r, "aten::sign");
  def_structured<&meta::ceil, &same_impl<Ceil>>(r, "aten::ceil");
  def_structured<&meta::floor, &same_impl<Floor>>(r, "aten::floor");
  def_structured<&meta::round, &same_impl<Round>>(r, "aten::round");
  def_structured<&meta::trunc, &same_impl<Trunc>>(r, "aten::trunc");
  def_structured<&meta::unary_integral, &same_impl<BitwiseNot>>(r, "aten::bitwise_not");

  def_structured<&meta::unary_bool, &to_bool_impl<IsNan>>(r, "aten::isnan");
  def_structured<&meta::unary_bool, &to_bool_impl<IsInf>>(r, "aten::isinf");
  def_structured<&meta::unary_bool, &to_bool_impl<LogicalNot>>(r, "aten::logical_not");
});

}  // namespace
}  // namespace kiln::cpu
