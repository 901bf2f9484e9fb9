// Scalar expressions of the loop IR: what one element of a loop body computes. Leaves are loads
// (a buffer at an index expression), constants and index values; inner nodes apply the elementwise prims' operations
// by name ("exp", "add", "where", "convert_element_type"). Immutable and hash-consed like Expr.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/compiler/loopir/expr.h"
#include "kiln/core/dtype.h"
#include "kiln/core/scalar.h"

namespace kiln::loopir {

enum class ScalarKind : uint8_t { Load, Constant, Index, Op };

struct ScalarNode;

class ScalarExpr {
 public:
  static ScalarExpr load(int buffer, Expr index, DType dtype);
  // A constant of `dtype`: integral and bool dtypes keep the exact 64-bit integer (never a double,
  // which rounds above 2^53), floating dtypes a double (signed zeros, NaN and infinities included).
  static ScalarExpr constant(Scalar value, DType dtype);
  static ScalarExpr index(Expr e, DType dtype);
  // An operation: unary/binary prims by name, "where" (pred, a, b), "convert_element_type".
  static ScalarExpr op(const std::string& name, std::vector<ScalarExpr> operands, DType dtype);

  ScalarKind kind() const;
  DType dtype() const;
  int buffer() const;               // Load
  const Expr& index() const;        // Load, Index
  double constant() const;          // Constant, as a double
  int64_t int_constant() const;     // Constant of an integral or bool dtype, exact
  const std::string& name() const;  // Op
  const std::vector<ScalarExpr>& operands() const;
  bool operator==(const ScalarExpr& o) const { return node_ == o.node_; }
  bool operator!=(const ScalarExpr& o) const { return node_ != o.node_; }

  // Replaces index variables in every index expression.
  ScalarExpr substitute(const std::map<std::string, Expr>& replacements) const;
  // Rewrites every load with `fn(buffer, index, dtype)`.
  template <class F>
  ScalarExpr map_loads(const F& fn) const;
  // Number of operation nodes (a cost estimate for recomputation).
  int op_count() const;
  // "exp(sub(load(buf0, 8*i0 + i1):float32, 2:float32))": leaves carry their dtype,
  // operations infer theirs (comparisons bool, where its values', to_<dtype> its target, others
  // their first operand's). parse_scalar reads it back.
  std::string str() const;

  const ScalarNode* node() const { return node_; }

 private:
  explicit ScalarExpr(const ScalarNode* n) : node_(n) {}
  static ScalarExpr intern(ScalarKind kind, DType dtype, int buffer, Expr index, double constant, int64_t int_constant,
                           std::string name, std::vector<ScalarExpr> operands);
  const ScalarNode* node_;
};

struct ScalarNode {
  ScalarKind kind;
  DType dtype;
  int buffer = -1;
  Expr index;
  double constant = 0;
  int64_t int_constant = 0;
  std::string name;
  std::vector<ScalarExpr> operands;
  std::string text;
};

// Reads ScalarExpr::str()'s form; throws kiln::Error naming the column on malformed text.
ScalarExpr parse_scalar(const std::string& text);

template <class F>
ScalarExpr ScalarExpr::map_loads(const F& fn) const {
  switch (kind()) {
    case ScalarKind::Load: return fn(buffer(), index(), dtype());
    case ScalarKind::Op: {
      std::vector<ScalarExpr> ops;
      for (const auto& o : operands()) ops.push_back(o.map_loads(fn));
      return op(name(), std::move(ops), dtype());
    }
    default: return *this;
  }
}

}  // namespace kiln::loopir
