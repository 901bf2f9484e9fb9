// How a loop node's loads look from inside a kernel of rows x cols: its index variables as
// functions of `row` and `col`, and the element strides of each load along them. The scheduler
// decides fusion on these, and the code generator writes the loops from them.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "kiln/compiler/loopir/program.h"

namespace kiln::compiler {

// The node's index variables (i0.., r0..) in terms of `row` and `col`: a reduction's output dims
// run along row and its reduced dims along col; a pointwise node's trailing dims whose sizes
// multiply to `cols` run along col, the rest along row.
std::map<std::string, loopir::Expr> node_vars(const loopir::LoopNode& n, int64_t cols);

// A column reduction computed inside a row kernel (its partial sums accumulated row by row): its
// output dims run along col and its reduced dims along row.
std::map<std::string, loopir::Expr> column_node_vars(const loopir::LoopNode& n);

// The row x col ranges of a kernel.
loopir::Ranges kernel_ranges(int64_t rows, int64_t cols);

// The node's value with every load index in terms of row and col, simplified over the kernel.
loopir::ScalarExpr row_col_value(const loopir::LoopNode& n, int64_t cols, const loopir::Ranges& ranges);

// The same for a column reduction computed inside a row kernel (column_node_vars).
loopir::ScalarExpr column_value(const loopir::LoopNode& n, const loopir::Ranges& ranges);

// The same for a pointwise node computed once per row of a row kernel (Kernel::per_row): all its
// dims run along row.
loopir::ScalarExpr per_row_value(const loopir::LoopNode& n, const loopir::Ranges& ranges);

// Element stride of an index in row and col along row and along col.
std::pair<int64_t, int64_t> strides_of(const loopir::Expr& index);

// Every load of `e`, outermost first.
void collect_loads(const loopir::ScalarExpr& e, std::vector<loopir::ScalarExpr>& out);

// A reduction whose reduced elements are far apart in memory while neighbouring outputs are
// neighbours (sum over dim 0 of a row-major matrix), as a kernel of its own (`rows` outputs of
// `cols` elements): the code generator walks its reduced dim outside and keeps a block of outputs
// in SIMD lanes, so every load is contiguous. Fused into a row kernel it would stride instead.
bool is_column_reduction(const loopir::LoopNode& n, int64_t rows, int64_t cols);

}  // namespace kiln::compiler
