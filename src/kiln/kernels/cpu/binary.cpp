// CPU kernels of the binary pointwise ops (Tensor and Scalar forms). Inputs are converted to
// the result dtype of PyTorch's promotion; Scalar forms run as Tensor forms with the scalar
// wrapped in a 0-d tensor, exactly as PyTorch defines them.
#include <cmath>
#include <type_traits>

#include "kiln/core/type_promotion.h"
#include "kiln/kernels/cpu/binary_loop.h"
#include "kiln/kernels/cpu/convert.h"
#include "kiln/kernels/cpu/wrapping.h"
#include "kiln/kernels/meta/pointwise.h"
#include "kiln/kernels/register.h"
#include "kiln/kernels/special_math.h"

namespace kiln::cpu {
namespace {

template <class T>
constexpr bool kIsFloat = std::is_floating_point_v<T>;

// Runs f over (self, other) converted to `compute`, writing out (of dtype `compute` or bool).
template <class F>
void run_binary(const Tensor& self, const Tensor& other, const Tensor& out, DType compute, const F& make_f) {
  Tensor a = to_dtype(self, compute);
  Tensor b = to_dtype(other, compute);
  visit_dtype(compute, [&]<class C>() {
    auto f = make_f.template operator()<opmath_t<C>>();
    using R = decltype(f(opmath_t<C>(), opmath_t<C>()));
    if constexpr (std::is_same_v<R, bool>) {
      if (out.dtype() == DType::Bool) {
        binary_kernel<bool, C>(a, b, out, f);
        return;
      }
    }
    binary_kernel<C, C>(a, b, out, f);
  });
}

// The divisor as the kernel divides by it: converted to the compute type (an int64 2^63 or 256 is 0
// in int8), as PyTorch checks it.
void check_divisor(const Tensor& other, DType compute, std::string_view op) {
  if (!is_floating(compute)) {
    KILN_CHECK(!any_zero(other.dtype() == compute ? other : other.to(compute)),
               "{}: ZeroDivisionError (integer division by zero)", op);
  }
}

// ---- add / sub
void add_impl(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  run_binary(self, other, out, out.dtype(), [&]<class M>() {
    M a = alpha.to<M>();
    // Floats fuse the multiply-add (one rounding, as PyTorch's vectorized fmadd does), so the
    // result does not depend on whether the compiler contracts it.
    if constexpr (kIsFloat<M>) return [a](M x, M y) -> M { return std::fma(a, y, x); };
    else return [a](M x, M y) -> M { return wrapping_add(x, wrapping_mul(a, y)); };
  });
}
void add_scalar_impl(const Tensor& self, const Scalar& other, const Scalar& alpha, const Tensor& out) {
  add_impl(self, meta::wrapped_scalar(other), alpha, out);
}
void sub_impl(const Tensor& self, const Tensor& other, const Scalar& alpha, const Tensor& out) {
  run_binary(self, other, out, out.dtype(), [&]<class M>() {
    M a = alpha.to<M>();
    if constexpr (kIsFloat<M>) return [a](M x, M y) -> M { return std::fma(-a, y, x); };
    else return [a](M x, M y) -> M { return wrapping_add(x, wrapping_mul(M(-a), y)); };
  });
}
void sub_scalar_impl(const Tensor& self, const Scalar& other, const Scalar& alpha, const Tensor& out) {
  sub_impl(self, meta::wrapped_scalar(other), alpha, out);
}

// ---- ops whose functor depends only on the compute type
struct Mul {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (std::is_same_v<M, bool>) return x && y;
    else return wrapping_mul(x, y);
  }
};
struct TrueDiv {
  template <class M>
  M operator()(M x, M y) const {
    return x / y;
  }
};
struct TruncDiv {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) return std::trunc(x / y);
    else if constexpr (std::is_same_v<M, bool>) return M(x / y);
    else return wrapping_div(x, y);
  }
};
struct FloorDiv {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) {
      if (y == 0) return x / y;
      M mod = std::fmod(x, y);
      M div = (x - mod) / y;
      if (mod != 0 && (y < 0) != (mod < 0)) div -= 1;
      if (div == 0) return std::copysign(M(0), x / y);
      M floored = std::floor(div);
      if (div - floored > M(0.5)) floored += 1;
      return floored;
    } else if constexpr (std::is_same_v<M, bool>) {
      return x;
    } else {
      M q = wrapping_div(x, y);
      if ((wrapping_rem(x, y) != 0) && ((x < 0) != (y < 0))) q = M(q - 1);
      return q;
    }
  }
};
struct Remainder {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) {
      M r = std::fmod(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r += y;
      return r;
    } else if constexpr (std::is_same_v<M, bool>) {
      return false;
    } else {
      M r = wrapping_rem(x, y);
      if (r != 0 && ((r < 0) != (y < 0))) r = M(r + y);
      return r;
    }
  }
};
struct Fmod {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) return std::fmod(x, y);
    else if constexpr (std::is_same_v<M, bool>) return false;
    else return wrapping_rem(x, y);
  }
};
struct Maximum {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) {
      if (x != x) return x;
      if (y != y) return y;
    }
    return x > y ? x : y;
  }
};
struct Minimum {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) {
      if (x != x) return x;
      if (y != y) return y;
    }
    return x < y ? x : y;
  }
};
struct Atan2 {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) return std::atan2(x, y);
    else return x;  // unreachable: atan2's result dtype is always floating
  }
};
// The Hurwitz zeta function zeta(x, q) (special_math.h).
struct Zeta {
  template <class M>
  M operator()(M x, M q) const {
    if constexpr (kIsFloat<M>) return special::zeta(x, q);
    else return x;  // unreachable: zeta's result dtype is always floating
  }
};
struct Pow {
  template <class M>
  M operator()(M base, M exp) const {
    if constexpr (kIsFloat<M>) {
      return std::pow(base, exp);
    } else if constexpr (std::is_same_v<M, bool>) {
      return base || !exp;
    } else {
      // Integer power by squaring; a negative exponent gives 1/base^|e| truncated (0 unless |base| == 1).
      if (exp < 0) {
        if (base == 1) return 1;
        if (base == -1) return (exp % 2 == 0) ? 1 : -1;
        return 0;
      }
      M result = 1;
      M b = base;
      for (auto e = exp; e > 0; e >>= 1) {
        if (e & 1) result = wrapping_mul(result, b);
        b = wrapping_mul(b, b);
      }
      return result;
    }
  }
};
// pow(tensor, scalar): as PyTorch's kernel, an exponent of 0.5 is sqrt and -0.5 is 1 / sqrt, which
// differ from std::pow at -inf (NaN, not inf) and -0 (-0 and -inf, not 0 and inf); 2 and 3 are
// products of the base (as compiled code computes them). float16 has none of these (PyTorch's
// kernel calls pow for it): pow_tensor_scalar_impl takes Pow there.
struct PowScalarExponent {
  template <class M>
  M operator()(M base, M exp) const {
    if constexpr (kIsFloat<M>) {
      if (exp == M(0.5)) return std::sqrt(base);
      if (exp == M(-0.5)) return M(1) / std::sqrt(base);
      if (exp == M(2)) return base * base;  // PyTorch's kernel too: products, not std::pow
      if (exp == M(3)) return base * base * base;
    }
    return Pow{}(base, exp);
  }
};
struct BitwiseAnd {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) return M(0);
    else return M(x & y);
  }
};
struct BitwiseOr {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) return M(0);
    else return M(x | y);
  }
};
struct BitwiseXor {
  template <class M>
  M operator()(M x, M y) const {
    if constexpr (kIsFloat<M>) return M(0);
    else return M(x ^ y);
  }
};
#define KILN_COMPARE_OP(Name, op)     \
  struct Name {                       \
    template <class M>                \
    bool operator()(M x, M y) const { \
      return x op y;                  \
    }                                 \
  };
KILN_COMPARE_OP(Eq, ==)
KILN_COMPARE_OP(Ne, !=)
KILN_COMPARE_OP(Lt, <)
KILN_COMPARE_OP(Le, <=)
KILN_COMPARE_OP(Gt, >)
KILN_COMPARE_OP(Ge, >=)
#undef KILN_COMPARE_OP
struct LogicalAnd {
  template <class M>
  bool operator()(M x, M y) const {
    return (x != M(0)) && (y != M(0));
  }
};
struct LogicalOr {
  template <class M>
  bool operator()(M x, M y) const {
    return (x != M(0)) || (y != M(0));
  }
};
struct LogicalXor {
  template <class M>
  bool operator()(M x, M y) const {
    return (x != M(0)) != (y != M(0));
  }
};

template <class Op>
auto functor() {
  return []<class M>() { return [](M x, M y) { return Op{}.template operator()<M>(x, y); }; };
}

// out has the compute dtype.
template <class Op>
void binary_impl(const Tensor& self, const Tensor& other, const Tensor& out) {
  run_binary(self, other, out, out.dtype(), functor<Op>());
}
template <class Op>
void binary_scalar_impl(const Tensor& self, const Scalar& other, const Tensor& out) {
  binary_impl<Op>(self, meta::wrapped_scalar(other), out);
}
// mul and division (true, trunc, floor) of a 16-bit float tensor by a one-element `other`: PyTorch's kernels read
// that value in float as given (TensorIterator's original_scalar_value), not rounded to the
// tensor's dtype as other ops' operands are: x * 0.1 multiplies by float(0.1).
template <class Op>
void opmath_second_impl(const Tensor& self, const Tensor& other, const Tensor& out) {
  if (!is_reduced_float(out.dtype()) || other.numel() != 1 || self.numel() != out.numel()) {
    return binary_impl<Op>(self, other, out);
  }
  const float b = static_cast<float>(*static_cast<const double*>(to_dtype(other, DType::Float64).data_ptr()));
  Tensor a = to_dtype(self, out.dtype());
  auto run = [&]<class C>() {
    PointwiseIter it(out, std::span(&a, 1));
    pointwise_kernel<C, C>(it, [b](float x) { return Op{}.template operator()<float>(x, b); });
  };
  if (out.dtype() == DType::BFloat16) run.template operator()<BFloat16>();
  else run.template operator()<Half>();
}
template <class Op>
void opmath_second_scalar_impl(const Tensor& self, const Scalar& other, const Tensor& out) {
  opmath_second_impl<Op>(self, meta::wrapped_scalar(other), out);
}
// Integer division kinds check the divisor first.
// An empty result divides nothing: no error (PyTorch's), whatever the divisor holds.
template <class Op>
void division_impl(const Tensor& self, const Tensor& other, const Tensor& out) {
  if (out.numel() > 0) check_divisor(other, out.dtype(), "division");
  binary_impl<Op>(self, other, out);
}
template <class Op>
void division_scalar_impl(const Tensor& self, const Scalar& other, const Tensor& out) {
  division_impl<Op>(self, meta::wrapped_scalar(other), out);
}
void div_mode_impl(const Tensor& self, const Tensor& other, std::optional<std::string_view> mode, const Tensor& out) {
  if (!mode) return opmath_second_impl<TrueDiv>(self, other, out);
  // A 16-bit float divided by a one-element divisor: PyTorch reads the divisor in float as given
  // (inf / (2^53 + 1) truncates to inf; the divisor rounded to float16 would be inf, and give NaN).
  if (is_reduced_float(out.dtype()) && other.numel() == 1 && self.numel() == out.numel()) {
    if (*mode == "trunc") return opmath_second_impl<TruncDiv>(self, other, out);
    return opmath_second_impl<FloorDiv>(self, other, out);
  }
  if (*mode == "trunc") return division_impl<TruncDiv>(self, other, out);
  division_impl<FloorDiv>(self, other, out);
}
void div_mode_scalar_impl(const Tensor& self, const Scalar& other, std::optional<std::string_view> mode,
                          const Tensor& out) {
  div_mode_impl(self, meta::wrapped_scalar(other), mode, out);
}
// Bool results: compute in the promoted dtype of the inputs.
template <class Op>
void compare_impl(const Tensor& self, const Tensor& other, const Tensor& out) {
  run_binary(self, other, out, result_type(self, other), functor<Op>());
}
// Logical ops read each operand as a bool in its own dtype, as PyTorch's do: a float32 8.4e-42
// with a float16 tensor is true, though it would be 0 in their promoted dtype, float16.
template <class Op>
void logical_impl(const Tensor& self, const Tensor& other, const Tensor& out) {
  Tensor a = self.dtype() == DType::Bool ? self : to_dtype(self, DType::Bool);
  Tensor b = other.dtype() == DType::Bool ? other : to_dtype(other, DType::Bool);
  run_binary(a, b, out, DType::Bool, functor<Op>());
}
template <class Op>
void compare_scalar_impl(const Tensor& self, const Scalar& other, const Tensor& out) {
  compare_impl<Op>(self, meta::wrapped_scalar(other), out);
}
void pow_tensor_scalar_impl(const Tensor& self, const Scalar& exponent, const Tensor& out) {
  if (out.dtype() == DType::Float16) return binary_impl<Pow>(self, meta::wrapped_scalar(exponent), out);
  binary_impl<PowScalarExponent>(self, meta::wrapped_scalar(exponent), out);
}
void pow_scalar_tensor_impl(const Scalar& self, const Tensor& exponent, const Tensor& out) {
  binary_impl<Pow>(meta::wrapped_scalar(self), exponent, out);
}

using namespace kiln::kernels;

// zeta: PyTorch's CPU kernel has float32 and float64 only; float16 and bfloat16 are refused as there.
meta::TensorSpec zeta_meta(const Tensor& self, const Tensor& other) {
  meta::TensorSpec spec = meta::binary_float(self, other);
  KILN_CHECK_KIND(
      !is_reduced_float(spec.dtype), ErrorKind::NotImplemented,
      "special_zeta: not implemented for {} (PyTorch's kernel has float32 and float64 only), inputs {} and {}",
      dtype_name(spec.dtype), self.describe(), other.describe());
  return spec;
}

const KernelRegistrar kRegister([](Registry& r) {
  def_structured<&meta::add, &add_impl>(r, "aten::add.Tensor");
  def_structured<&meta::add_scalar, &add_scalar_impl>(r, "aten::add.Scalar");
  def_structured<&meta::sub, &sub_impl>(r, "aten::sub.Tensor");
  def_structured<&meta::sub_scalar, &sub_scalar_impl>(r, "aten::sub.Scalar");
  def_structured<&meta::binary, &opmath_second_impl<Mul>>(r, "aten::mul.Tensor");
  def_structured<&meta::binary_scalar, &opmath_second_scalar_impl<Mul>>(r, "aten::mul.Scalar");
  def_structured<&meta::binary_float, &opmath_second_impl<TrueDiv>>(r, "aten::div.Tensor");
  def_structured<&meta::binary_float_scalar, &opmath_second_scalar_impl<TrueDiv>>(r, "aten::div.Scalar");
  def_structured<&meta::div_mode, &div_mode_impl>(r, "aten::div.Tensor_mode");
  def_structured<&meta::div_mode_scalar, &div_mode_scalar_impl>(r, "aten::div.Scalar_mode");
  def_structured<&meta::remainder, &division_impl<Remainder>>(r, "aten::remainder.Tensor");
  def_structured<&meta::remainder_scalar, &division_scalar_impl<Remainder>>(r, "aten::remainder.Scalar");
  def_structured<&meta::fmod, &division_impl<Fmod>>(r, "aten::fmod.Tensor");
  def_structured<&meta::fmod_scalar, &division_scalar_impl<Fmod>>(r, "aten::fmod.Scalar");
  def_structured<&meta::binary, &binary_impl<Maximum>>(r, "aten::maximum");
  def_structured<&meta::binary, &binary_impl<Minimum>>(r, "aten::minimum");
  def_structured<&meta::binary_float, &binary_impl<Atan2>>(r, "aten::atan2");
  def_structured<&zeta_meta, &binary_impl<Zeta>>(r, "aten::special_zeta");
  def_structured<&meta::pow, &binary_impl<Pow>>(r, "aten::pow.Tensor_Tensor");
  def_structured<&meta::pow_tensor_scalar, &pow_tensor_scalar_impl>(r, "aten::pow.Tensor_Scalar");
  def_structured<&meta::pow_scalar_tensor, &pow_scalar_tensor_impl>(r, "aten::pow.Scalar");
  def_structured<&meta::bitwise, &binary_impl<BitwiseAnd>>(r, "aten::bitwise_and.Tensor");
  def_structured<&meta::bitwise_scalar, &binary_scalar_impl<BitwiseAnd>>(r, "aten::bitwise_and.Scalar");
  def_structured<&meta::bitwise, &binary_impl<BitwiseOr>>(r, "aten::bitwise_or.Tensor");
  def_structured<&meta::bitwise_scalar, &binary_scalar_impl<BitwiseOr>>(r, "aten::bitwise_or.Scalar");
  def_structured<&meta::bitwise, &binary_impl<BitwiseXor>>(r, "aten::bitwise_xor.Tensor");
  def_structured<&meta::bitwise_scalar, &binary_scalar_impl<BitwiseXor>>(r, "aten::bitwise_xor.Scalar");
  def_structured<&meta::logical, &logical_impl<LogicalAnd>>(r, "aten::logical_and");
  def_structured<&meta::logical, &logical_impl<LogicalOr>>(r, "aten::logical_or");
  def_structured<&meta::logical, &logical_impl<LogicalXor>>(r, "aten::logical_xor");
  def_structured<&meta::compare, &compare_impl<Eq>>(r, "aten::eq.Tensor");
  def_structured<&meta::compare_scalar, &compare_scalar_impl<Eq>>(r, "aten::eq.Scalar");
  def_structured<&meta::compare, &compare_impl<Ne>>(r, "aten::ne.Tensor");
  def_structured<&meta::compare_scalar, &compare_scalar_impl<Ne>>(r, "aten::ne.Scalar");
  def_structured<&meta::compare, &compare_impl<Lt>>(r, "aten::lt.Tensor");
  def_structured<&meta::compare_scalar, &compare_scalar_impl<Lt>>(r, "aten::lt.Scalar");
  def_structured<&meta::compare, &compare_impl<Le>>(r, "aten::le.Tensor");
  def_structured<&meta::compare_scalar, &compare_scalar_impl<Le>>(r, "aten::le.Scalar");
  def_structured<&meta::compare, &compare_impl<Gt>>(r, "aten::gt.Tensor");
  def_structured<&meta::compare_scalar, &compare_scalar_impl<Gt>>(r, "aten::gt.Scalar");
  def_structured<&meta::compare, &compare_impl<Ge>>(r, "aten::ge.Tensor");
  def_structured<&meta::compare_scalar, &compare_scalar_impl<Ge>>(r, "aten::ge.Scalar");
});

}  // namespace
}  // namespace kiln::cpu
