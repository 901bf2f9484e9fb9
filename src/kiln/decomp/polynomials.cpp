// The scalar overloads of torch.special's orthogonal polynomials (x_scalar, n_scalar): the number
// becomes a 0-d tensor of the dtype PyTorch's promotion gives the pair, then the tensor kernel
// (kernels/cpu/polynomials.cpp) runs.
#include "kiln/core/type_promotion.h"
#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

template <const char* Op>
Tensor x_scalar(const Scalar& x, const Tensor& n) {
  DType dtype = result_type(n, x);
  return detail::call<Tensor>(Registry::global().get(Op), scalar_tensor(x, TensorOptions(dtype).device(n.device())), n);
}

template <const char* Op>
Tensor n_scalar(const Tensor& x, const Scalar& n) {
  DType dtype = result_type(x, n);
  return detail::call<Tensor>(Registry::global().get(Op), x, scalar_tensor(n, TensorOptions(dtype).device(x.device())));
}

#define KILN_POLYNOMIAL_NAME(NAME) constexpr char NAME[] = "aten::special_" #NAME;
KILN_POLYNOMIAL_NAME(chebyshev_polynomial_t)
KILN_POLYNOMIAL_NAME(chebyshev_polynomial_u)
KILN_POLYNOMIAL_NAME(chebyshev_polynomial_v)
KILN_POLYNOMIAL_NAME(chebyshev_polynomial_w)
KILN_POLYNOMIAL_NAME(shifted_chebyshev_polynomial_t)
KILN_POLYNOMIAL_NAME(shifted_chebyshev_polynomial_u)
KILN_POLYNOMIAL_NAME(shifted_chebyshev_polynomial_v)
KILN_POLYNOMIAL_NAME(shifted_chebyshev_polynomial_w)
KILN_POLYNOMIAL_NAME(hermite_polynomial_h)
KILN_POLYNOMIAL_NAME(hermite_polynomial_he)
KILN_POLYNOMIAL_NAME(laguerre_polynomial_l)
KILN_POLYNOMIAL_NAME(legendre_polynomial_p)
#undef KILN_POLYNOMIAL_NAME

template <const char* Op>
void register_scalar_overloads(Registry& r) {
  std::string name(Op);
  r.set_compound_kernel(name + ".x_scalar", kiln::detail::boxed<&x_scalar<Op>>());
  r.set_compound_kernel(name + ".n_scalar", kiln::detail::boxed<&n_scalar<Op>>());
}

const KernelRegistrar kRegister([](Registry& r) {
  register_scalar_overloads<chebyshev_polynomial_t>(r);
  register_scalar_overloads<chebyshev_polynomial_u>(r);
  register_scalar_overloads<chebyshev_polynomial_v>(r);
  register_scalar_overloads<chebyshev_polynomial_w>(r);
  register_scalar_overloads<shifted_chebyshev_polynomial_t>(r);
  register_scalar_overloads<shifted_chebyshev_polynomial_u>(r);
  register_scalar_overloads<shifted_chebyshev_polynomial_v>(r);
  register_scalar_overloads<shifted_chebyshev_polynomial_w>(r);
  register_scalar_overloads<hermite_polynomial_h>(r);
  register_scalar_overloads<hermite_polynomial_he>(r);
  register_scalar_overloads<laguerre_polynomial_l>(r);
  register_scalar_overloads<legendre_polynomial_p>(r);
});

}  // namespace
}  // namespace kiln::decomp
