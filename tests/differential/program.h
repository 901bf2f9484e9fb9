// A differential-test program: inputs (dtype, geometry, how their bytes are filled), a list of op
// calls on kiln's public typed API, and the values it returns. It has a line-based text form that
// a person can read and that tests/differential/torch_ref.py evaluates with PyTorch:
//
//   input a0 float32 [4,5] [1,4] 3 special 1234     name dtype sizes strides offset fill seed
//   v0 = exp a0                                       one op call: results = op args...
//   v1 v2 = var_mean v0 [1] i:1 0
//   output v0 v2
//
// Argument tokens: a value name, a list of value names [a0,v1], an integer, an integer list [1,2],
// a scalar (i:5, f:-0.0, f:nan, f:inf, b:1), a dtype name, a word (floor, trunc) or `none`.
// docs/conformance.md lists every op and its arguments.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kiln/ops/api.h"

namespace kiln::difftest {

struct InputSpec {
  std::string name;
  DType dtype = DType::Float32;
  Shape sizes, strides;
  int64_t offset = 0;
  // normal, pos, nonzero, special (NaN, infinities, subnormals, extremes among normal values),
  // small, constant (one special-drawn element everywhere), limits (an integer dtype's extremes, no 0)
  std::string fill = "normal";
  uint64_t seed = 0;
  // Elements of storage the input needs: offset + its span; the storage ends right there.
  int64_t storage_elements() const;
};

struct OpCall {
  std::vector<std::string> results;
  std::string op;
  std::vector<std::string> args;
  bool operator==(const OpCall&) const = default;
};

struct Program {
  std::vector<InputSpec> inputs;
  std::vector<OpCall> calls;
  std::vector<std::string> outputs;
  std::vector<std::string> comments;  // '#' lines, kept when printed

  std::string str() const;
};

// Parses the text form; throws kiln::Error naming the line on bad input.
Program parse_program(const std::string& text);

// How a run treats floating dtypes: as written, or every floating dtype (inputs, casts,
// constants) replaced by float64 — the float64 reference.
enum class Precision { Native, Float64 };

// Runs the program's calls on `inputs` (one tensor per InputSpec, same order) with kiln's ops
// and returns its outputs; constants (full, scalar_tensor) are made on `factories`. On meta
// tensors (with factories on meta) it checks the program's types.
std::vector<Tensor> run_program(const Program& p, const std::vector<Tensor>& inputs, Precision precision,
                                Device factories = kCPU);

// Whether a program token is a list ("[1,2]"), and its items.
bool is_list(const std::string& tok);
std::vector<std::string> list_items(const std::string& tok);
// The names of `p`'s inputs and call results, and those of them a token refers to (itself, or the
// items of a list).
std::set<std::string> value_names(const Program& p);
std::vector<std::string> refs(const std::string& tok, const std::set<std::string>& names);

// Meta tensors with the inputs' dtypes and geometry (no data).
std::vector<Tensor> meta_inputs(const Program& p);

// Per output, the loosest floating dtype (bfloat16 < float16 < float32 < float64) among the output
// and every value it is computed from; nullopt when none is floating. Tolerances follow it, as
// assert_close takes the loosest dtype of mixed inputs.
// With Precision::Float64, of the float64 reference's run (float64 throughout: the default dtype
// is float64 there, so floats made from integers are float64 too).
std::vector<std::optional<DType>> loosest_float_dtypes(const Program& p, Precision precision = Precision::Native);

// Runs one call with its arguments looked up in `values`; returns its results.
std::vector<Tensor> apply_call(const OpCall& c, const std::map<std::string, Tensor>& values, Precision precision,
                               Device factories = kCPU);

// The ops a program may call, by name.
std::vector<std::string> known_ops();
// The op whose checker rules a variant follows: native_layer_norm is layer_norm, std is var,
// max_dim and min_dim are amax and amin; any other op is its own.
std::string op_family(const std::string& op);

// One program holding all of `programs` side by side (names prefixed p0_, p1_, ...): its outputs
// are theirs in order. `output_owner` receives, per output, the index of its program.
Program merge_programs(const std::vector<Program>& programs, std::vector<size_t>* output_owner = nullptr);

// Removes calls no output needs and inputs no call or output reads.
Program prune(Program p);
// Removes calls no output needs; keeps every input.
Program live_calls(Program p);

}  // namespace kiln::difftest
