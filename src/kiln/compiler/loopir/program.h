// A lowered program: buffers, loop nodes (one element computation over an iteration space,
// optionally reduced) and extern calls (library or eager kernels), in execution order. The
// scheduler groups loop nodes into kernels; the code generator writes one C++ function per kernel.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "kiln/compiler/loopir/scalar.h"
#include "kiln/ops/registry.h"
#include "kiln/ops/tensor.h"

namespace kiln::loopir {

enum class BufferRole : uint8_t {
  Input,         // a graph input: bound to the caller's tensor
  Computed,      // written by a loop node (contiguous)
  ExternResult,  // produced by an extern call at run time
};

struct Buffer {
  int id = 0;
  std::string name;
  DType dtype = DType::Float32;
  Shape sizes;    // for Computed: the logical sizes, stored contiguously
  Shape strides;  // Input and ExternResult: the tensor's strides (empty: contiguous)
  BufferRole role = BufferRole::Computed;
  int64_t numel() const;
  // Elements from the data pointer to one past the farthest element: the loads of index
  // 0..extent()-1 are the ones inside the buffer (0 when it has no elements).
  int64_t extent() const;
};

enum class ReduceKind : uint8_t { None, Sum, Max, Min, Prod };
std::string_view reduce_kind_name(ReduceKind k);

// out[i0, ..., in-1] = value over the index variables i0.. (and, for a reduction, the reduction
// of value over r0.. ranging over reduction_sizes, divided by `divisor`: a mean's count, divided
// as eager's and PyTorch's mean divide, not multiplied by its reciprocal). Stored contiguously.
struct LoopNode {
  int id = 0;
  std::string origin;  // the graph nodes it computes, e.g. "exp"
  int out = -1;
  Shape sizes;
  Shape reduction_sizes;
  ReduceKind reduce = ReduceKind::None;
  // The pattern kind of the op it was lowered from (OpEntry::pattern()), as the scheduler reads it:
  // Reduction exactly when `reduce` is set (a reduction op's pointwise remainder, var's formula, is
  // Elementwise); the verifier checks that.
  PatternKind pattern = PatternKind::Elementwise;
  double divisor = 1.0;
  ScalarExpr value = ScalarExpr::constant(0, DType::Float32);
  // The buffers `value` loads.
  std::vector<int> reads() const;
};

// A tensor argument of an extern call: a strided view of a buffer.
struct BufferView {
  int buffer = -1;
  Shape sizes, strides;
  int64_t offset = 0;
};
// A tensor list's elements may be None (index.Tensor's indices for the dims it does not index).
using ExternArg = std::variant<Value, BufferView, std::vector<std::optional<BufferView>>>;

struct ExternCall {
  int id = 0;
  OpHandle op = nullptr;
  std::vector<ExternArg> args;
  std::vector<int> outs;  // one ExternResult buffer per tensor result
};

// Calls f(view) for every buffer view among an extern call's arguments.
template <class F>
void for_each_view(const ExternCall& call, F&& f) {
  for (const auto& a : call.args) {
    if (const auto* v = std::get_if<BufferView>(&a)) f(*v);
    if (const auto* l = std::get_if<std::vector<std::optional<BufferView>>>(&a)) {
      for (const auto& v : *l) {
        if (v) f(*v);
      }
    }
  }
}

using Step = std::variant<LoopNode, ExternCall>;

struct Program {
  std::vector<Buffer> buffers;
  std::vector<Step> steps;
  std::vector<int> inputs;  // buffer per graph input, in order
  // A graph constant (a get_attr: a lifted constant or a folded value): its buffer, read like an
  // input's, and the tensor the executable binds to it.
  std::vector<std::pair<int, Tensor>> constants;
  std::vector<BufferView> outputs;  // what the graph returns
  int add_buffer(DType dtype, Shape sizes, BufferRole role, std::string name, Shape strides = {});
  // One line per step: "buf3 = sum over [r0 < 64] of exp(...)".
  std::string str() const;
};

// Loop variable names: i0.. for the iteration space, r0.. for reduced dims.
Expr index_var(size_t k);
Expr reduction_var(size_t k);
// The contiguous (row-major) flat index of `idx` in `sizes`.
Expr flat_index(const std::vector<Expr>& idx, IntArrayRef sizes);

}  // namespace kiln::loopir
