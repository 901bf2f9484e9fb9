// The check mode: KILN_CHECK=1, CompileOptions::check, or torch.compile(backend="kiln",
// options={"check": True}). The first call of each compiled input signature also runs the function
// eagerly (on copies of its inputs) and compares the two with the differential tier's value rules
// (docs/conformance.md; its program-level exemptions are not applied): dtypes and sizes equal, NaN
// and infinities where eager has them, integers equal to eager's or to a float64 run's, floats
// within PyTorch's tolerance of the loosest floating dtype they are computed from, or as close to a
// float64 run of the graph as eager is; complex outputs are not compared. A mismatch is reduced to
// the smallest Core ATen program that still differs (api/reduce.h), written to a directory as IR
// text, .npy inputs and the options (KILN_CHECK_DIR, else ./kiln-check), and raised as a
// kiln::Error that prints the program; `kiln check DIR` replays it. An error the compiled code
// raises is the caller's, as without the check. The float64 run sets the default float dtype,
// which is process-wide: check one call at a time.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/api/compile.h"
#include "kiln/api/reduce.h"

namespace kiln {

// Whether `options` asks for the check, or KILN_CHECK=1 is set; false inside a check (its own
// compilations are not checked).
bool check_enabled(const CompileOptions& options);

struct OutputMismatch {
  size_t output = 0;
  std::string detail;  // how many elements differ and the worst one, with the tolerance used
};

// The first output where `compiled` differs from `eager` by the rules above. `reference` is the
// float64 run (empty when there is none); `loosest[k]` the loosest floating dtype output k is
// computed from.
std::optional<OutputMismatch> compare_outputs(const std::vector<Tensor>& compiled, const std::vector<Tensor>& eager,
                                              const std::vector<Tensor>& reference,
                                              const std::vector<std::optional<DType>>& loosest);

// Per output of `g`, the loosest floating dtype (bfloat16 < float16 < float32 < float64) among it and
// every value it is computed from; nullopt where none is floating.
std::vector<std::optional<DType>> loosest_float_dtypes(const graph::Graph& g);

// `g` run by the eager kernels with every floating dtype float64, its inputs widened too (a Core
// ATen graph: dtypes appear as arguments); nullopt when that raises.
std::optional<std::vector<Tensor>> float64_reference(const graph::Graph& g, const std::vector<Tensor>& inputs);

// Compares a program compiled (with `options`, the check off) against its eager run.
std::optional<OutputMismatch> check_program(const Repro& p, const CompileOptions& options);

// The options a mismatch was found with, in DIR/options.txt (the backend, emulate_precision_casts),
// for `kiln check DIR` to replay it with; the defaults where DIR has no such file.
void write_check_options(const CompileOptions& options, const std::string& dir);
CompileOptions read_check_options(const std::string& dir);

// The check of a compiled signature's first call: `compiled` on `inputs`, `fn` eagerly on copies.
// Returns compiled's outputs; on a mismatch raises kiln::Error with the reduced program.
std::vector<Tensor> checked_call(const trace::TracedFn& fn, const CompiledCallable& compiled,
                                 const std::vector<Tensor>& inputs, const CompileOptions& options);

}  // namespace kiln
