// The scheduler: groups loop nodes into kernels. A kernel is a loop over `rows` (run in parallel)
// whose body runs each of its nodes over `cols` in turn: a reduction node reduces a row, a
// pointwise node computes a row's elements. A node joins the open kernel (can_fuse) when it has
// the same rows and cols, shares data with it (reads a buffer the kernel writes, or an outside
// buffer a node of the kernel loads at the same place), reads what the kernel wrote only where it
// is computing — by the pattern kind of the writer (LoopNode::pattern, the op's): a reduction's
// result per row (the node is its epilogue), an elementwise, broadcast or injective result per
// element (the node continues its chain) — and is not a column reduction (which runs faster alone, its
// reduced dim outside, unless it is a column sum of the kernel: Kernel::columns) — so softmax, layer_norm and RMSNorm
// become one kernel each, pointwise chains one loop, and nodes that merely have the same shape stay apart. Groups
// follow program order, so fusion never forms a cycle. A pointwise node over the kernel's rows that reads
// its reductions per row is computed once per row (Kernel::per_row). Buffers that no later step and no output reads
// stay inside their kernel (a value per row, or a row kept in cache) and are never allocated. Every decision is logged
// with its reason on KILN_LOG=fusion.
#pragma once

#include <set>
#include <string>
#include <variant>
#include <vector>

#include "kiln/compiler/loopir/program.h"

namespace kiln::compiler {

struct Kernel {
  std::string name;        // after what it computes: "kernel2_amax_exp_sum_div"
  std::vector<int> nodes;  // indices of LoopNode steps, in order
  int64_t rows = 1, cols = 1;
  std::set<int> local;  // buffers that live only inside this kernel
  // Column sums computed along the way (steps among `nodes`): a sum over the kernel's rows of
  // values at each col (sum(x, 0) beside var_mean(x, 1)). Each thread adds its rows into partial
  // sums; when every row is done the partials are added in thread order (deterministic for a team
  // size). Nothing in the kernel reads them.
  std::set<int> columns;
  // Pointwise nodes computed once per row (steps among `nodes`): a node whose iteration space is the
  // kernel's rows and which reads the kernel's reductions at its row (var's (sum(d*d) - sum(d)^2 /
  // n) / (n - 1) beside var_mean, a mean's reciprocal square root) is their epilogue: computed when
  // the row's reductions are, not by a kernel of its own. What it reads of the kernel it reads per
  // row; later nodes of the kernel read it per row, as they read a reduction.
  std::set<int> per_row;
};

// What a target's kernels can hold, as the scheduler reads it (compiler/target.h).
struct FusionLimits {
  // The most cols a row kernel computes column sums of (Kernel::columns): each CPU thread keeps a
  // row of partial sums in double, at most 512 KiB (in L2). 0: the target computes none.
  int64_t column_sums_up_to = 65536;
};

struct Schedule {
  // Kernels and extern calls (the index of the ExternCall step) in execution order.
  std::vector<std::variant<Kernel, int>> items;
  size_t kernel_count() const;
  std::string str(const loopir::Program& p) const;
};

// Why loop node `n` cannot join kernel `k` (whose nodes are steps of `p`), or "" when it can.
std::string can_fuse(const loopir::Program& p, const Kernel& k, const loopir::LoopNode& n);

// How loop node `n` joins kernel `k` (can_fuse accepted it), in pattern kinds: the epilogue of a
// reduction it reads per row, the consumer of an elementwise/broadcast/injective node it reads at its
// element, or a sibling loading what the kernel loads. For the fusion log (KILN_LOG=fusion).
std::string fusion_edge(const loopir::Program& p, const Kernel& k, const loopir::LoopNode& n);

// Why column reduction `n` cannot be computed as a column sum of row kernel `k` (Kernel::columns):
// it must be a floating-point sum of k.cols outputs over k.rows reduced elements, read no buffer
// the kernel writes, and load an outside buffer at a place a node of the kernel loads it.
std::string can_fuse_column(const loopir::Program& p, const Kernel& k, const loopir::LoopNode& n,
                            const FusionLimits& limits = {});

// Why pointwise node `n`, over as many elements as kernel `k` has rows, cannot be computed once per
// row of it (Kernel::per_row), or "" when it can: it must read a reduction of the kernel's rows (or
// a node computed once per row) and read every such value at the row it is computing, never an
// element of a row or a column sum.
std::string can_fuse_per_row(const loopir::Program& p, const Kernel& k, const loopir::LoopNode& n);

// Node `i` of kernel `k`, in terms of row and col by its role: a column sum's (column_value), a
// node computed once per row (per_row_value) or any other's (row_col_value).
loopir::ScalarExpr kernel_value(const loopir::Program& p, const Kernel& k, int i, const loopir::Ranges& ranges);

Schedule schedule(const loopir::Program& p, const FusionLimits& limits = {});

// The nodes of row kernel `k` (its column sums left out) split into passes over a row: consecutive
// nodes share one pass unless a node reads a reduction finished in the same pass (softmax: amax |
// exp + sum | div). A node computed once per row (Kernel::per_row) ends the pass it is in: it is
// computed after the pass's reductions, and a node that reads it starts a new pass. What every
// target's code generator loops over.
std::vector<std::vector<int>> row_passes(const loopir::Program& p, const Kernel& k);

}  // namespace kiln::compiler
