// C++ for one element's computation, in a target's dialect (dialect.h: C++ for CPUs, CUDA C++ for
// GPUs): the spelling of dtypes, constants and operations, and a writer that turns a scalar
// expression into statements (each shared subexpression once). Loads
// inside a branch of `where` that cannot be proven in bounds are masked — read only where the
// branch is taken (cat's parts, slice_scatter) — as Inductor's masked loads and Halide's predicated
// loads are. Integer division reports a zero divisor through the kernel's status word.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "kiln/compiler/codegen/dialect.h"
#include "kiln/compiler/loopir/program.h"

namespace kiln::compiler {

// The C++ type a dtype is stored as (16-bit floats as their bits) and computes in (float).
std::string storage_type(DType d);
std::string compute_type(DType d);
// A stored element as a value of its compute type, and back.
std::string load_expr(DType d, const std::string& element);
std::string store_expr(DType d, const std::string& value);
// A constant of dtype d in its compute type: integers exact, -0.0, NaN and infinities kept.
std::string literal(const loopir::ScalarExpr& constant, const Dialect& dialect);
std::string float_literal(double v, DType d, const Dialect& dialect);
// The identity a reduction of kind k over dtype d starts from (-inf for max, the lowest integer, ...).
std::string reduce_init(loopir::ReduceKind k, DType d, const Dialect& dialect);

// Whether index `e` stays inside [0, extent) for every value of its variables in `ranges` (its
// floor divisions and remainders of non-negative operands only).
bool provably_inside(const loopir::Expr& e, const loopir::Ranges& ranges, int64_t extent);

// The C++ spelling of an index expression.
std::string cpp_index(const loopir::Expr& e);

// Where integer divisions are, so a kernel's status word can say which node divided by zero.
struct ErrorSites {
  std::vector<std::string> sites;  // site k + 1 (status value) is sites[k]
  int add(std::string what);
};

// Writes the statements computing scalar expressions into `out`, naming each value once.
class BodyWriter {
 public:
  struct Context {
    const loopir::Program& program;
    const loopir::Ranges& ranges;  // of row and col, for proving loads in bounds
    ErrorSites& sites;
    std::string origin;  // the node being written, for error messages
    const Dialect& dialect;
  };
  // `prefix` starts every name it declares ("t": t0, t1, ...), so two writers can share a scope.
  BodyWriter(Context ctx, const std::map<int, std::string>& locals, std::string& out, std::string indent,
             std::string prefix = "t");
  // The name (or literal) holding e's value.
  std::string emit(const loopir::ScalarExpr& e) { return emit(e, ""); }
  // e's value is already held by `name` (computed before, another writer's).
  void bind(const loopir::ScalarExpr& e, const std::string& name) { names_[{e.node(), ""}] = name; }
  void set_origin(std::string origin) { ctx_.origin = std::move(origin); }
  // Loads kept across writers (a CUDA row kernel's passes over the same elements): `held` maps a
  // load's text to where it is kept; a load not there is named as usual, stored into `keep(type)`
  // (a new place, e.g. an array element of a register array) and added; without `keep`, named as
  // usual and not added.
  struct LoadCache {
    std::map<std::string, std::string> held;
    std::function<std::string(const std::string& type)> keep;
  };
  void set_load_cache(LoadCache* cache) { load_cache_ = cache; }
  // Whether a load was masked. Such a loop must not be an `omp simd` loop: under that pragma g++
  // treats conditional loads as safe to execute in every lane and widens them past the buffer.
  bool masked_loads() const { return masked_loads_; }

 private:
  // `guard`: the C++ condition under which this value is used ("" when always).
  std::string emit(const loopir::ScalarExpr& e, const std::string& guard);
  std::string emit_load(const loopir::ScalarExpr& e, const std::string& guard);
  std::string emit_op(const loopir::ScalarExpr& e, const std::string& guard);
  // Declares a value; `masked` when it is only valid where `guard` holds.
  std::string name(const loopir::ScalarExpr& e, const std::string& guard, bool masked, const std::string& value);

  Context ctx_;
  const std::map<int, std::string>& locals_;
  std::string& out_;
  std::string indent_;
  std::string prefix_;
  std::map<std::pair<const loopir::ScalarNode*, std::string>, std::string> names_;
  std::set<std::string> masked_;
  bool masked_loads_ = false;
  int next_ = 0;
  LoadCache* load_cache_ = nullptr;
};

}  // namespace kiln::compiler
