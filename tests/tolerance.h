// PyTorch's torch.testing.assert_close default tolerances per dtype (core/tolerance.h), shared by the
// op harness and the differential tier.
#pragma once

#include "kiln/core/tolerance.h"

namespace kiln::testing {

using kiln::default_tolerance;
using kiln::Tolerance;

}  // namespace kiln::testing
