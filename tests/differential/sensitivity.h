// How far a program's outputs move when a value that an exponential or a logarithm reads is
// rounded. exp, expm1, sinh, cosh, softmax and log_softmax magnify an absolute error in their
// argument into a relative one in their result (log, log1p, log2 and log10 a relative one into an
// absolute one, large near 1 or -1):
// a score of 12 rounded to float32 is off by up to 5e-7, its weight by 5e-7 relative too, and a
// weighted sum of values far apart by more. Two correct float32 programs that compute the scores
// differently (a GEMM's blocking, the flash kernel's tiles) round them differently, and their
// outputs may differ past the dtype's tolerance on account of that alone (docs/conformance.md).
#pragma once

#include <vector>

#include "program.h"

namespace kiln::difftest {

// Per output of `p`, the float64 run's change when every value an exponential (above) reads
// that a reduction computed (a matmul's scores, a sum) moves by two ulps of its native dtype (four
// for a contraction's result: a GEMM's, attention's), each
// element up or down (a fixed pseudo-random pattern): float64 magnitudes, or an undefined tensor
// where nothing moves it (no such exponential, an integer output, a run that raises).
std::vector<Tensor> exp_rounding_slack(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& wide);

// Per output of `p`, the float64 run's change when the result of every call to a function a math
// library computes (exp, log, erf, tanh, pow, sigmoid, softmax, ...) moves by its error bound
// (four ulps of float32, two of float64, one of a 16-bit float), each element up or down: two
// correct libraries (the CPU's and CUDA's) differ by that much, and an ill-conditioned op after
// one (atanh near 1, fmod by a tiny divisor) magnifies it. Applied to code compiled for a device
// whose library is not eager's (docs/conformance.md); undefined tensors where nothing moves.
std::vector<Tensor> math_library_slack(const Program& p, const std::vector<Tensor>& inputs,
                                       const std::vector<Tensor>& wide);

}  // namespace kiln::difftest
