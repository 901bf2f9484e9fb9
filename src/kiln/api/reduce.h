// Reducing a Core ATen graph whose compiled result differs from its eager one to a smallest program
// that still differs. Each call of the graph either stays or is cut: a cut call's eager results
// become inputs of the program (so a call that stays sees exactly the values it saw before). Delta
// debugging (Zeller's ddmin, over the calls the output is computed from) keeps cutting sets of
// calls while the difference stays, until no single call can be cut. The result is a program of a
// few calls with concrete inputs: written as IR text (graph/printer.h) and .npy files, it is a bug
// report a user can attach, and `kiln check DIR` replays it.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kiln/graph/graph.h"

namespace kiln {

// A program that reproduces a difference: a graph with one output and the tensors its placeholders
// take, in order.
struct Repro {
  graph::Graph graph;
  std::vector<Tensor> inputs;
  // The calls it makes (not counting placeholders and the output).
  size_t calls() const;
};

// Tensors with the same sizes, strides and values as `ts`, in storage of their own (a program that
// writes to its inputs leaves the given ones as they were).
std::vector<Tensor> copies_of(const std::vector<Tensor>& ts);

// Whether a candidate program reproduces the difference being reduced.
using StillDiffers = std::function<bool(const Repro&)>;

struct ReducedRepro {
  Repro program;
  size_t tests = 0;        // candidates tried
  bool complete = true;    // false when `max_tests` ran out before no call could be cut
  bool reproduced = true;  // false when the whole graph's program does not differ (then it is that)
};

// Output `output` of `g` (run on copies of `inputs`) reduced as above; `still_differs` is called at
// most `max_tests` times, first on the whole graph's program, never twice on the same candidate. A
// placeholder fed to a program holds its input as given, before the graph's write-backs.
ReducedRepro reduce_program(const graph::Graph& g, const std::vector<Tensor>& inputs, size_t output,
                            const StillDiffers& still_differs, size_t max_tests = 256);

// Writes `p` to directory `dir` (created): program.txt (the IR text) and input_K.npy per input.
void write_program(const Repro& p, const std::string& dir);
// Reads a directory write_program wrote, each input laid out with its placeholder's strides;
// kiln::Error naming the file when one is missing or bad.
Repro read_program(const std::string& dir);

}  // namespace kiln
