// Streaming (non-temporal) stores: which outputs of a row kernel are written through a per-thread
// scratch row that kernel_support.h's k_stream_copy writes out when the row is done. A plain store
// first reads the line it writes (a copy moves 3 bytes for every 2 it means to) and keeps the output
// in cache, evicting input still to be read; once a kernel's reads and writes together outgrow the
// last-level cache neither helps, and streaming the rows reaches the bandwidth a non-temporal copy
// reaches. A pass heavy in arithmetic (erf and exp per element) is bound by it, not by memory, and
// would only pay for the copy out of the scratch row: it keeps plain stores.
#pragma once

#include <set>
#include <vector>

#include "kiln/compiler/schedule/fuse.h"

namespace kiln::compiler {

// KILN_STREAM_STORES: 0 off, 1 every output of every threaded row kernel (tests, comparisons),
// anything else (default) by the rule above.
enum class StreamMode { Off, Auto, All };
StreamMode stream_mode();

// Rows of at most this many elements stream (the scratch row stays in L2).
constexpr int64_t kStreamRowsUpTo = 65536;
// A pass streams when its arithmetic weight per element is at most this: 1 an operation, 4 a
// division or square root, 16 a call of a transcendental function; what is computed once per row
// (from the kernel's reductions and constants: a normalization's rstd) weighs nothing.
constexpr int kStreamWeightUpTo = 24;

// The pointwise outputs of kernel `k` (whose nodes run in `passes`, on threads when `threaded`) to
// stream, given the last-level cache's size.
std::set<int> streamed_outputs(const loopir::Program& p, const Kernel& k, const std::vector<std::vector<int>>& passes,
                               bool threaded, StreamMode mode, int64_t cache_bytes);

// The weight of one element of `e` (shared subexpressions once), as above, in a kernel whose
// reductions write `row_values`.
int arithmetic_weight(const loopir::ScalarExpr& e, const std::set<int>& row_values = {});

}  // namespace kiln::compiler
