#include "kiln/decomp/prims/table.h"

#include <set>

#include "kiln/decomp/leaf.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatch_key.h"

namespace kiln {

namespace {

// A copy of the arguments with every tensor on the meta device (same geometry, no data).
Stack on_meta(const Stack& args) {
  Stack meta;
  for (const Value& v : args) {
    if (v.is_tensor()) {
      meta.emplace_back(to_meta(v.to_tensor()));
    } else if (v.tag() == Value::Tag::TensorList) {
      std::vector<Tensor> list;
      for (const auto& t : v.to_tensor_list()) list.push_back(to_meta(t));
      meta.emplace_back(std::move(list));
    } else {
      meta.push_back(v);
    }
  }
  return meta;
}

// As PyTorch's prims run their meta function before their implementation, every decomposition
// first runs the op's meta kernel: bad arguments fail with the op's own message, and the
// decomposition only ever sees arguments the kernel accepts.
BoxedKernel checked(OpHandle op, BoxedKernel decomposition) {
  return [op, decomposition = std::move(decomposition)](Stack& stack) {
    if (const BoxedKernel* meta = op->kernel(DispatchKey::Meta)) {
      // A meta kernel written with ops must not be recorded by a trace in progress.
      ExcludeDispatchKeys untraced{DispatchKeySet(DispatchKey::Trace)};
      Stack probe = on_meta(stack);
      (*meta)(probe);
    }
    decomposition(stack);
  };
}

}  // namespace

const DecompositionMap& prims_decompositions() {
  static const DecompositionMap table = [] {
    const Registry& r = Registry::global();
    DecompositionMap t = leaf_decompositions();
    decomp::add_pointwise_prims(t, r);
    decomp::add_shape_prims(t, r);
    decomp::add_reduction_prims(t, r);
    for (auto& [op, kernel] : t) kernel = checked(op, std::move(kernel));
    return t;
  }();
  return table;
}

bool has_complex_operand(const Stack& args) {
  for (const Value& v : args) {
    if (v.is_tensor() && is_complex(v.to_tensor().dtype())) return true;
    if (v.tag() == Value::Tag::DType && is_complex(v.to_dtype())) return true;
    if (v.tag() == Value::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) {
        if (is_complex(t.dtype())) return true;
      }
    }
  }
  return false;
}

bool stays_at_prims_level(OpHandle op) {
  static const std::set<std::string_view> kExterns = {
      "aten::mm",
      "aten::mm.dtype",
      "aten::bmm",
      "aten::convolution",
      "aten::convolution_backward",
      "aten::gather",
      "aten::argmax",
      "aten::argmin",
      "aten::max.dim",
      "aten::min.dim",
      "aten::scatter.src",
      "aten::_scaled_dot_product_flash_attention_for_cpu",
      "kiln::attention",
      "kiln::gemm_epilogue",
      "aten::scatter_add",
      "aten::scatter.value",
      "aten::index_select",
      "aten::flip",
      "aten::cumsum",
      "aten::cumprod",
      "aten::logcumsumexp",
      "aten::max_pool2d_with_indices",
      "aten::max_pool3d_with_indices",
      "aten::max_pool2d_with_indices_backward",
      "aten::avg_pool2d",
      "aten::avg_pool3d",
      "aten::_adaptive_avg_pool2d",
      "aten::_adaptive_avg_pool3d",
      "aten::avg_pool2d_backward",
      "aten::_adaptive_avg_pool2d_backward",
      "aten::sort",
      "aten::topk",
      "aten::index.Tensor",
      "aten::index_put",
      "aten::scatter_reduce.two",
      "aten::masked_scatter",
      "aten::_cdist_forward",
      "aten::_pdist_forward",
      "aten::native_dropout",
      "aten::randperm",
      "aten::col2im",
      "aten::grid_sampler_2d",
      "aten::grid_sampler_3d",
      "aten::_embedding_bag",
      "aten::_fft_r2c",  // FFTs: complex tensors, which generated code does not handle
      "aten::_fft_c2r",
      "aten::resize",  // its new elements are uninitialized memory, which no prim makes
      // Linear algebra (kernels/cpu/linalg_*.cpp) and torch.special's polynomials (polynomials.cpp)
      "aten::linalg_lu_factor_ex",
      "aten::linalg_lu_solve",
      "aten::linalg_cholesky_ex",
      "aten::linalg_solve_triangular",
      "aten::linalg_ldl_solve",
      "aten::_linalg_eigh",
      "aten::_linalg_svd",
      "aten::geqrf",
      "aten::linalg_householder_product",
      "aten::linalg_matrix_exp",
      "aten::special_chebyshev_polynomial_t",
      "aten::special_chebyshev_polynomial_u",
      "aten::special_chebyshev_polynomial_v",
      "aten::special_chebyshev_polynomial_w",
      "aten::special_shifted_chebyshev_polynomial_t",
      "aten::special_shifted_chebyshev_polynomial_u",
      "aten::special_shifted_chebyshev_polynomial_v",
      "aten::special_shifted_chebyshev_polynomial_w",
      "aten::special_hermite_polynomial_h",
      "aten::special_hermite_polynomial_he",
      "aten::special_laguerre_polynomial_l",
      "aten::special_legendre_polynomial_p",
      "aten::adaptive_max_pool2d",
      "aten::adaptive_max_pool3d",
      "aten::fractional_max_pool2d",
      "aten::fractional_max_pool3d",
      "aten::signbit",
      "aten::gcd",
      "aten::lcm",
      "aten::nextafter",
      "aten::special_bessel_j0",
      "aten::special_bessel_j1",
      "aten::special_bessel_y0",
      "aten::special_bessel_y1",
      "aten::special_modified_bessel_k0",
      "aten::special_modified_bessel_k1",
      "aten::special_scaled_modified_bessel_k0",
      "aten::special_scaled_modified_bessel_k1",
      "aten::special_airy_ai",
      "aten::igamma",
      "aten::igammac",
  };
  return kExterns.contains(op->name());
}

}  // namespace kiln
