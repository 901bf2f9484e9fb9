// The fusion rules, each accepted and refused, on loop IR written as text.
#include "kiln/compiler/schedule/fuse.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace kiln::compiler {
namespace {

using loopir::BufferRole;
using loopir::LoopNode;
using loopir::ReduceKind;

// A program built node by node: inputs first, then loop nodes with values in parse_scalar's text.
struct Builder {
  loopir::Program p;

  int input(Shape sizes, DType dtype = DType::Float32) {
    int b = p.add_buffer(dtype, sizes, BufferRole::Input, fmt::format("in{}", p.inputs.size()));
    p.inputs.push_back(b);
    return b;
  }
  int node(const std::string& value, Shape sizes, Shape reduction_sizes = {}, ReduceKind kind = ReduceKind::None,
           DType dtype = DType::Float32) {
    LoopNode n;
    n.id = static_cast<int>(p.steps.size());
    n.origin = fmt::format("n{}", n.id);
    n.out = p.add_buffer(dtype, sizes, BufferRole::Computed, "");
    n.sizes = std::move(sizes);
    n.reduction_sizes = std::move(reduction_sizes);
    n.reduce = kind;
    n.pattern = kind == ReduceKind::None ? PatternKind::Elementwise : PatternKind::Reduction;
    n.value = loopir::parse_scalar(value);
    p.steps.emplace_back(n);
    return n.out;
  }
  const LoopNode& step(size_t i) const { return std::get<LoopNode>(p.steps.at(i)); }
  // A kernel holding steps [0, count) as the scheduler would open it.
  Kernel kernel(size_t count, int64_t rows, int64_t cols) const {
    Kernel k;
    k.name = std::string(1, 'k');  // (assigning "k" trips a false -Wrestrict in g++ 12)
    k.rows = rows;
    k.cols = cols;
    for (size_t i = 0; i < count; ++i) k.nodes.push_back(static_cast<int>(i));
    return k;
  }
};

TEST(Fusion, ConsumerOfTheKernelsElementFuses) {
  Builder b;
  b.input({8, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {8, 16});
  b.node("neg(load(buf1, 16*i0 + i1):float32)", {8, 16});
  EXPECT_EQ(can_fuse(b.p, b.kernel(1, 8, 16), b.step(1)), "");
  EXPECT_EQ(schedule(b.p).kernel_count(), 1u);
}

TEST(Fusion, ReductionAndItsEpilogueFuse) {  // softmax's shape: a row statistic read per row
  Builder b;
  b.input({8, 16});
  b.node("load(buf0, 16*i0 + r0):float32", {8}, {16}, ReduceKind::Max);
  b.node("sub(load(buf0, 16*i0 + i1):float32, load(buf1, i0):float32)", {8, 16});
  EXPECT_EQ(can_fuse(b.p, b.kernel(1, 8, 16), b.step(1)), "");
}

TEST(Fusion, SiblingsReadingTheSameInputFuse) {
  Builder b;
  b.input({8, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {8, 16});
  b.node("sin(load(buf0, 16*i0 + i1):float32)", {8, 16});
  EXPECT_EQ(can_fuse(b.p, b.kernel(1, 8, 16), b.step(1)), "");
}

TEST(Fusion, NodesSharingNoDataStayApart) {
  Builder b;
  b.input({8, 16});
  b.input({8, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {8, 16});
  b.node("sin(load(buf1, 16*i0 + i1):float32)", {8, 16});
  EXPECT_NE(can_fuse(b.p, b.kernel(1, 8, 16), b.step(1)).find("shares no data"), std::string::npos);
  EXPECT_EQ(schedule(b.p).kernel_count(), 2u);
}

TEST(Fusion, SameInputAtAnotherPlaceIsNotSharing) {  // x and x transposed: no load in common
  Builder b;
  b.input({16, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {16, 16});
  b.node("sin(load(buf0, i0 + 16*i1):float32)", {16, 16});
  EXPECT_NE(can_fuse(b.p, b.kernel(1, 16, 16), b.step(1)).find("shares no data"), std::string::npos);
}

TEST(Fusion, OtherIterationSpaceIsRefused) {
  Builder b;
  b.input({8, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {8, 16});
  b.node("load(buf1, 16*i0 + r0):float32", {8}, {16}, ReduceKind::Sum);
  b.node("neg(load(buf2, i0):float32)", {8});
  EXPECT_EQ(can_fuse(b.p, b.kernel(1, 8, 16), b.step(1)), "");
  EXPECT_NE(can_fuse(b.p, b.kernel(2, 8, 16), b.step(2)).find("iteration space"), std::string::npos);
}

TEST(Fusion, ReadingAnotherElementOfTheKernelIsRefused) {
  Builder b;
  b.input({8, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {8, 16});
  b.node("neg(load(buf1, 16*i0 + 15 - i1):float32)", {8, 16});  // flip: another thread's element
  EXPECT_NE(can_fuse(b.p, b.kernel(1, 8, 16), b.step(1)).find("not at the element"), std::string::npos);
}

// Decisions are explained in the pattern kinds of the nodes (the ops they were lowered from): a
// reduction's result is read per row by its epilogue, an injective copy (a transpose realized) reads
// its elementwise producer at another element and is refused.
TEST(Fusion, DecisionsNameThePatternKinds) {
  Builder b;
  b.input({8, 16});
  b.node("load(buf0, 16*i0 + r0):float32", {8}, {16}, ReduceKind::Max);                 // buf1: amax
  b.node("exp(sub(load(buf0, 16*i0 + i1):float32, load(buf1, i0):float32))", {8, 16});  // buf2: exp
  b.node("load(buf2, 16*i0 + r0):float32", {8}, {16}, ReduceKind::Sum);                 // buf3: sum
  b.node("div(load(buf2, 16*i0 + i1):float32, load(buf3, i0):float32)", {8, 16});       // buf4: div
  EXPECT_EQ(fusion_edge(b.p, b.kernel(1, 8, 16), b.step(1)),
            "elementwise epilogue of reduction buf1: reads it per row");
  EXPECT_EQ(fusion_edge(b.p, b.kernel(2, 8, 16), b.step(2)),
            "reduction consumer of elementwise buf2: reads it at the element it computes");
  EXPECT_EQ(fusion_edge(b.p, b.kernel(3, 8, 16), b.step(3)),
            "elementwise epilogue of reduction buf3: reads it per row");
  EXPECT_EQ(schedule(b.p).kernel_count(), 1u);

  Builder t;  // exp, then a copy of it transposed (an injective node)
  t.input({16, 16});
  t.node("exp(load(buf0, 16*i0 + i1):float32)", {16, 16});
  t.node("load(buf1, i0 + 16*i1):float32", {16, 16});
  std::get<LoopNode>(t.p.steps[1]).pattern = PatternKind::Injective;
  EXPECT_EQ(can_fuse(t.p, t.kernel(1, 16, 16), t.step(1)),
            "it reads elementwise buf1 at i0 + 16*i1, not at the element it is computing");
}

// The `reductions` workload at full size: var_mean over rows of a square matrix, then sum over its
// columns. The column sum has the same rows x cols and reads the same input, but as a pass of the
// row kernel it would walk the matrix with a stride of a whole row (the cliff of issue 10): it is
// computed instead as a column sum of the kernel (each thread adds its rows, contiguously).
TEST(Fusion, SquareColumnReductionIsAColumnSumNotARowPass) {
  Builder b;
  b.input({64, 64});
  b.node("load(buf0, 64*i0 + r0):float32", {64}, {64}, ReduceKind::Sum);  // row sums
  b.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum);  // column sums
  EXPECT_NE(can_fuse(b.p, b.kernel(1, 64, 64), b.step(1)).find("strided columns"), std::string::npos);
  EXPECT_EQ(can_fuse_column(b.p, b.kernel(1, 64, 64), b.step(1)), "");
  Schedule s = schedule(b.p);
  ASSERT_EQ(s.kernel_count(), 1u);
  EXPECT_EQ(std::get<Kernel>(s.items[0]).columns, std::set<int>{1});
}

// In program order the column sum may come first (sum(x, 0), then var_mean(x, 1)): the row
// kernel that follows takes it.
TEST(Fusion, ColumnSumBeforeItsRowKernelJoinsIt) {
  Builder b;
  b.input({64, 32});
  b.node("load(buf0, i0 + 32*r0):float32", {32}, {64}, ReduceKind::Sum);  // column sums: 32 of 64 rows
  b.node("load(buf0, 32*i0 + r0):float32", {64}, {32}, ReduceKind::Max);  // row maxima
  Schedule s = schedule(b.p);
  ASSERT_EQ(s.kernel_count(), 1u);
  const auto& k = std::get<Kernel>(s.items[0]);
  EXPECT_EQ(k.rows, 64);
  EXPECT_EQ(k.cols, 32);
  EXPECT_EQ(k.columns, std::set<int>{0});
  EXPECT_EQ(k.nodes, (std::vector<int>{0, 1}));
}

TEST(Fusion, ColumnSumRefusals) {
  Builder b;
  b.input({64, 64});
  b.input({64, 64});
  b.node("exp(load(buf0, 64*i0 + i1):float32)", {64, 64});                // step 0: the row kernel
  b.node("load(buf1, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum);  // another input
  b.node("load(buf2, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum);  // what the kernel writes
  b.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Max);  // not a sum
  b.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum, DType::Int64);
  Kernel k = b.kernel(1, 64, 64);
  EXPECT_NE(can_fuse_column(b.p, k, b.step(1)).find("loads nothing"), std::string::npos);
  EXPECT_NE(can_fuse_column(b.p, k, b.step(2)).find("which the kernel writes"), std::string::npos);
  EXPECT_NE(can_fuse_column(b.p, k, b.step(3)).find("only sums"), std::string::npos);
  EXPECT_NE(can_fuse_column(b.p, k, b.step(4)).find("floating"), std::string::npos);
  EXPECT_NE(can_fuse_column(b.p, b.kernel(1, 32, 128), b.step(1)).find("does not sum"), std::string::npos);
  // Rows so long that the partial sums of a thread would not stay in cache.
  Builder wide;
  wide.input({16, 100000});
  wide.node("exp(load(buf0, 100000*i0 + i1):float32)", {16, 100000});
  wide.node("load(buf0, i0 + 100000*r0):float32", {100000}, {16}, ReduceKind::Sum);
  EXPECT_NE(can_fuse_column(wide.p, wide.kernel(1, 16, 100000), wide.step(1)).find("too many"), std::string::npos);
}

// A column sum is finished only when every row is: nothing in its kernel may read it.
TEST(Fusion, ReadingAColumnSumInsideItsKernelIsRefused) {
  Builder b;
  b.input({64, 64});
  b.node("load(buf0, 64*i0 + r0):float32", {64}, {64}, ReduceKind::Sum);
  b.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum);
  b.node("add(load(buf0, 64*i0 + i1):float32, load(buf2, i1):float32)", {64, 64});  // x + colsum
  Kernel k = b.kernel(2, 64, 64);
  k.columns = {1};
  EXPECT_NE(can_fuse(b.p, k, b.step(2)).find("column sum buf2"), std::string::npos);
  EXPECT_EQ(schedule(b.p).kernel_count(), 2u);
}

// The row kernel that would take a column sum written before it reads that sum (x * 2 + colsum(x)):
// the sum stays a kernel of its own.
TEST(Fusion, ARowKernelReadingTheColumnSumDoesNotTakeIt) {
  Builder b;
  b.input({64, 48});
  b.node("load(buf0, i0 + 48*r0):float32", {48}, {64}, ReduceKind::Sum);
  b.node("add(mul(load(buf0, 48*i0 + i1):float32, 2:float32), load(buf1, i1):float32)", {64, 48});
  Kernel row = b.kernel(0, 64, 48);
  row.nodes = {1};
  EXPECT_NE(can_fuse_column(b.p, row, b.step(0)).find("reads it"), std::string::npos);
  Schedule s = schedule(b.p);
  EXPECT_EQ(s.kernel_count(), 2u);
}

TEST(Fusion, RowReductionOfTheSameShapeFuses) {  // the accept case beside the one above
  Builder b;
  b.input({64, 64});
  b.node("load(buf0, 64*i0 + r0):float32", {64}, {64}, ReduceKind::Sum);
  b.node("load(buf0, 64*i0 + r0):float32", {64}, {64}, ReduceKind::Max);
  EXPECT_EQ(can_fuse(b.p, b.kernel(1, 64, 64), b.step(1)), "");
}

// var's last step, a value for each row from the row's sums (of d*d and of d) and a value per row
// from outside, read at its row: computed once per row inside the kernel, not by a kernel of its
// own; a node reading it per row starts the next pass, as after a reduction.
TEST(Fusion, ValueOfEachRowFromItsReductionsIsComputedOncePerRow) {
  Builder b;
  b.input({8, 16});
  b.input({8});
  b.node("load(buf0, 16*i0 + r0):float32", {8}, {16}, ReduceKind::Sum);  // step 0: buf2
  b.node("mul(load(buf0, 16*i0 + r0):float32, load(buf0, 16*i0 + r0):float32)", {8}, {16},
         ReduceKind::Sum);                                                                          // step 1: buf3
  b.node("sub(load(buf3, i0):float32, mul(load(buf2, i0):float32, load(buf1, i0):float32))", {8});  // step 2: buf4
  b.node("mul(load(buf4, 4*i0 + i1):float32, 2:float32)", {2, 4});                 // step 3: buf5, the rows as [2, 4]
  b.node("div(load(buf0, 16*i0 + i1):float32, load(buf4, i0):float32)", {8, 16});  // step 4: buf6
  EXPECT_NE(can_fuse(b.p, b.kernel(2, 8, 16), b.step(2)).find("iteration space"), std::string::npos);
  EXPECT_EQ(can_fuse_per_row(b.p, b.kernel(2, 8, 16), b.step(2)), "");
  Schedule s = schedule(b.p);
  ASSERT_EQ(s.kernel_count(), 1u);
  const auto& k = std::get<Kernel>(s.items[0]);
  EXPECT_EQ(k.per_row, (std::set<int>{2, 3}));
  EXPECT_EQ(row_passes(b.p, k), (std::vector<std::vector<int>>{{0, 1, 2, 3}, {4}}));
  EXPECT_NE(s.str(b.p).find("buf5 (once per row)"), std::string::npos) << s.str(b.p);
}

// Outputs are written last: var's last step may come after another kernel (amax(x, 0)). A node
// once per row joins the kernel writing the last of what it reads, an earlier one too; one that
// reads a column reduction's result last starts a kernel of its own.
TEST(Fusion, ValueOfEachRowJoinsTheEarlierKernelOfItsReductions) {
  Builder b;
  b.input({64, 64});
  b.node("load(buf0, 64*i0 + r0):float32", {64}, {64}, ReduceKind::Sum);  // step 0: buf1, row sums
  b.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Max);  // step 1: buf2, column maxima
  b.node("mul(load(buf1, i0):float32, 2:float32)", {64});                 // step 2: buf3, once per row
  b.node("add(load(buf1, i0):float32, load(buf2, i0):float32)", {64});    // step 3: buf4
  Schedule s = schedule(b.p);
  ASSERT_EQ(s.kernel_count(), 3u) << s.str(b.p);
  const auto& rows = std::get<Kernel>(s.items[0]);
  EXPECT_EQ(rows.nodes, (std::vector<int>{0, 2}));
  EXPECT_EQ(rows.per_row, std::set<int>{2});
  EXPECT_EQ(std::get<Kernel>(s.items[2]).nodes, std::vector<int>{3});
}

TEST(Fusion, OncePerRowRefusals) {
  Builder b;
  b.input({8, 16});
  b.node("exp(load(buf0, 16*i0 + i1):float32)", {8, 16});                // step 0: buf1, elements
  b.node("load(buf0, 16*i0 + r0):float32", {8}, {16}, ReduceKind::Sum);  // step 1: buf2, row sums
  b.node("neg(load(buf2, 7 - i0):float32)", {8});                        // another row's sum
  b.node("neg(load(buf1, 16*i0):float32)", {8});                         // an element of the row
  b.node("neg(load(buf0, 16*i0):float32)", {8});                         // no reduction of the kernel
  b.node("neg(load(buf2, i0):float32)", {4});                            // half the rows
  Kernel k = b.kernel(2, 8, 16);
  EXPECT_NE(can_fuse_per_row(b.p, k, b.step(2)).find("not at the row"), std::string::npos);
  EXPECT_NE(can_fuse_per_row(b.p, k, b.step(3)).find("a value of each element"), std::string::npos);
  EXPECT_NE(can_fuse_per_row(b.p, k, b.step(4)).find("no reduction"), std::string::npos);
  EXPECT_NE(can_fuse_per_row(b.p, k, b.step(5)).find("one value for each"), std::string::npos);
  // A column reduction's kernel: its rows are its outputs, all finished when it ends.
  Builder c;
  c.input({64, 64});
  c.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum);
  c.node("neg(load(buf1, i0):float32)", {64});
  EXPECT_NE(can_fuse_per_row(c.p, c.kernel(1, 64, 64), c.step(1)).find("column reduction"), std::string::npos);
  EXPECT_EQ(schedule(c.p).kernel_count(), 2u);
  // A column sum of a row kernel is finished only when the kernel ends.
  Builder d;
  d.input({64, 64});
  d.node("load(buf0, 64*i0 + r0):float32", {64}, {64}, ReduceKind::Sum);
  d.node("load(buf0, i0 + 64*r0):float32", {64}, {64}, ReduceKind::Sum);
  d.node("add(load(buf1, i0):float32, load(buf2, i0):float32)", {64});
  Kernel dk = d.kernel(2, 64, 64);
  dk.columns = {1};
  EXPECT_NE(can_fuse_per_row(d.p, dk, d.step(2)).find("column sum buf2"), std::string::npos);
}

}  // namespace
}  // namespace kiln::compiler
