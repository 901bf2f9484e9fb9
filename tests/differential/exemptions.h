// The differential checker's rules about whole programs whose values two correct implementations
// compute differently past the tolerance (an order of addition, a last bit PyTorch rounds the other
// way, a signed zero): each says whether a program has such a spot, and docs/conformance.md says why
// it is accepted. `inputs` are the program's inputs, `wide` the same widened to float64.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "program.h"

namespace kiln::difftest {

// A var_mean with an infinite mean in kiln, where PyTorch's running mean may be NaN.
bool infinite_var_mean(const Program& p, const std::vector<Tensor>& inputs);
// A float fmod or remainder of a reduction's value one ulp of which is beyond the result's relative
// tolerance.
bool fmod_magnifies_a_rounding(const Program& p, const std::vector<Tensor>& inputs);
// A float division by a float64 residue within the tolerance of 0 (see the definition).
bool divides_by_a_rounding_residue(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide,
                                   bool rounded_to_zero);
// An atanh, log1p, asin, acos or acosh of a reduction's value within four ulps of its pole or edge.
bool edge_within_a_rounding(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide);
// A sin, cos or tan of a float64 argument past about 4.5e8.
bool periodic_of_a_huge_argument(const Program& p, const std::vector<Tensor>& wide);
// A log1p of the dtype's smallest subnormal.
bool log1p_of_the_smallest_subnormal(const Program& p, const std::vector<Tensor>& inputs,
                                     const std::vector<Tensor>& wide);
// A remainder or fmod where kiln's exact result and PyTorch's vectorized formula differ.
bool remainder_differs_from_torch(const Program& p, const std::vector<Tensor>& wide);
// The results of comparisons, conversions to integers and arg-reductions decided by last bits.
std::set<std::string> compares_within_a_rounding(const Program& p, const std::vector<Tensor>& inputs,
                                                 const std::vector<Tensor>& wide);
// The arg-reductions whose index is decided by last bits even in the float64 run (a row holding
// another element within float64's tolerance of the extreme: equal in exact arithmetic, as the
// rows of an attention whose values are one vector), and the roundings to an integer of a float64
// program's reduction on or near a step; no run is more precise than another there.
std::set<std::string> ties_in_float64(const Program& p, const std::vector<Tensor>& inputs,
                                      const std::vector<Tensor>& wide);
// An amax or amin reducing +0 and -0 to a zero a sign-sensitive op reads.
bool signed_zero_extremum(const Program& p, const std::vector<Tensor>& inputs);
// A maximum or minimum meeting +0 and -0 where a sign-sensitive op reads the result.
bool signed_zero_maximum(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide);
// A sum or mean whose terms cancel past float64's precision or overflow the accumulation range.
bool ill_conditioned_sum(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide);
// The same for a contraction (matmul, linear, attention).
bool ill_conditioned_contraction(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide);
// A float32 pow by a scalar exponent whose float32 rounding changes a result past the tolerance.
bool pow_exponent_rounded_differs_from_torch(const Program& p, const std::vector<Tensor>& inputs);
// A float64 sinh or cosh whose argument is past exp's range with a finite result (PyTorch: inf).
bool hyperbolic_past_exp_range(const Program& p, const std::vector<Tensor>& wide);
// A bfloat16 matmul or linear with a result near float's subnormal range, or a subnormal operand
// that meets a huge or non-finite one (flushed by the GEMM).
bool bfloat16_gemm_flushes_a_subnormal(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& wide);
// A slice_scatter or select_scatter into a copy of a self whose elements are not dense.
bool scatter_into_a_non_dense_self(const Program& p, const std::vector<Tensor>& inputs);
// A scaled_dot_product_attention of a query that is not dense (PyTorch's output is unwritten memory).
bool attention_of_an_overlapping_query(const Program& p, const std::vector<Tensor>& inputs);
// A scaled_dot_product_attention with a row whose scores are all NaN.
bool attention_row_of_nan_scores(const Program& p, const std::vector<Tensor>& inputs, const std::vector<Tensor>& wide);
// A causal scaled_dot_product_attention with a negative scale.
bool causal_attention_with_a_negative_scale(const Program& p);
// A prod whose partial products can overflow or underflow.
bool order_dependent_prod(const Program& p, const std::vector<Tensor>& inputs);

}  // namespace kiln::difftest
