// The compiled CPU suite's workloads (shared/reference/torch_baseline.py's CPU suite) written with
// kiln's API, by name: kiln_compiled_bench runs them eagerly and through kiln::compile on PyTorch's
// inputs (their count, order, shapes and dtypes come from bench/torch_suite.py), and
// kiln_eager_bench times the eager ones beside PyTorch (bench/torch_eager_rows.py).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "kiln/ops/api.h"

namespace bench {

using Inputs = std::vector<kiln::Tensor>;
using Workload = std::function<Inputs(const Inputs&)>;

const std::map<std::string, Workload>& workloads();

}  // namespace bench
