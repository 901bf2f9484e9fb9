// The differential checker's rules about rows that a normalization or a variance reduces, where
// two correct implementations differ past the tolerance (docs/conformance.md): rows constant to
// float64's resolution, rows whose mean depends on the order of addition, and float rows whose
// variance passes the float range.
#pragma once

#include <vector>

#include "program.h"

namespace kiln::difftest {

// Whether a layer_norm of the program normalizes a row whose spread is below 1e-9 of its mean's
// magnitude in the float64 run (`wide`: the inputs widened to float64).
bool near_constant_rows(const Program& p, const std::vector<Tensor>& wide);

// Whether a layer_norm of the program normalizes a row whose mean depends on the order of addition
// past 1e-6 of some element's distance from it, in the float64 run.
bool layer_norm_mean_order_dependent(const Program& p, const std::vector<Tensor>& wide);

// Whether a layer_norm of the program normalizes, in a 32- or 16-bit float, a row whose variance is
// past the float range: such programs are not compared with PyTorch.
bool layer_norm_variance_past_float(const Program& p, const std::vector<Tensor>& inputs);

// Whether a var or var_mean of the program reduces a row constant to float64's resolution: then no
// run is a reference for the other, and values are not compared.
bool near_constant_variance(const Program& p, const std::vector<Tensor>& wide);

}  // namespace kiln::difftest
