#include "kiln/compiler/codegen/cpp_expr.h"

#include "kiln/compiler/codegen/dialect.h"
#include "kiln/compiler/loopir/operations.h"

#include <cmath>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "kiln/support/error.h"

namespace kiln::compiler {
namespace {

using loopir::Expr;
using loopir::ExprKind;
using loopir::ScalarExpr;
using loopir::ScalarKind;

bool wraps(DType d) { return !is_floating(d) && d != DType::Bool; }

// The code of operation `op` (a row of loopir/operations.h) on operands `a` of dtype `in`, giving
// `out`, in dialect `dialect`.
std::string apply(const Dialect& dialect, const std::string& op, const std::vector<std::string>& a, DType out,
                  DType in) {
  const loopir::ElementwiseOp* row = loopir::elementwise_op(op);
  if (row == nullptr) KILN_FAIL(ErrorKind::NotImplemented, "{} codegen: no operation {}", dialect.name, op);
  const OpSpelling& spelling = dialect.op(op);
  std::string t = compute_type(out);
  if (op == "convert_element_type") {
    if (out == DType::Bool) return fmt::format("({} != 0)", a[0]);
    // A conversion to a 16-bit float rounds (held in float32 afterwards), as eager's does: x < to(x,
    // bfloat16) must compare the rounded value.
    if (out == DType::BFloat16) return fmt::format("k_round_bf16(static_cast<float>({}))", a[0]);
    if (out == DType::Float16) return fmt::format("k_from_f16(k_to_f16(static_cast<float>({})))", a[0]);
    // Float to integer: defined for NaN, infinities and out-of-range values, as eager's (core/float_to_int.h).
    if (is_floating(in) && !is_floating(out)) return fmt::format("kiln::float_to_int<{}>({})", t, a[0]);
    return fmt::format("static_cast<{}>({})", t, a[0]);
  }
  // Integer arithmetic wraps around (two's complement), as eager's does; C++'s would be undefined.
  if (wraps(out) && !row->wrapping.empty()) return fmt::format("{}({})", row->wrapping, fmt::join(a, ", "));
  switch (spelling.spelling) {
    case Spelling::Special:
      if (op == "neg") return fmt::format("(-{})", a[0]);
      if (op == "reciprocal") return fmt::format("({}(1) / {})", t, a[0]);
      if (op == "rsqrt") return fmt::format("({}(1) / {}({}))", t, dialect.sqrt, a[0]);
      if (op == "bitwise_not")
        return in == DType::Bool ? fmt::format("(!{})", a[0]) : fmt::format("static_cast<{}>(~{})", t, a[0]);
      break;
    case Spelling::Call: {
      if (row->integer_identity && !is_floating(in)) return a[0];
      if (spelling.propagate_nan && is_floating(in))
        return fmt::format("({0} != {0} ? {0} : {1}({0}))", a[0], spelling.text);
      return fmt::format("{}({})", spelling.text, fmt::join(a, ", "));
    }
    case Spelling::Infix: {
      std::string e = fmt::format("({} {} {})", a[0], spelling.text, a[1]);
      // Integer arithmetic on narrow types promotes to int in C++; cast back.
      return is_floating(out) || out == DType::Bool || out == DType::Int64 ? e : fmt::format("static_cast<{}>{}", t, e);
    }
  }
  KILN_FAIL(ErrorKind::NotImplemented, "{} codegen: no code for operation {}", dialect.name, op);
}

// Integer division and remainder: a zero divisor is reported, never a trap.
bool is_integer_division(const std::string& op, DType in) {
  return !is_floating(in) && (op == "div" || op == "fmod" || op == "remainder");
}

std::string conjunction(const std::string& guard, const std::string& condition) {
  return guard.empty() ? condition : fmt::format("({} && {})", guard, condition);
}

// True when every value of `e` over `ranges` is an element of a buffer of `extent` elements and
// C++'s truncating / and % agree with the IR's floor semantics (their operands are never negative).
// A condition that reads data and not the index: a `where` of the program, whose branches eager
// computed in full. A condition on the index (a cat's or a pad's part; possibly with data) decides
// which elements exist at all, so what its branches read and divide is guarded by it.
bool reads_data_only(const ScalarExpr& e) {
  bool data = false, index = false;
  auto visit = [&](auto&& self, const ScalarExpr& x) -> void {
    if (x.kind() == ScalarKind::Load) data = true;
    if (x.kind() == ScalarKind::Index) index = true;
    if (x.kind() == ScalarKind::Op) {
      for (const auto& o : x.operands()) self(self, o);
    }
  };
  visit(visit, e);
  return data && !index;
}

}  // namespace

bool provably_inside(const Expr& e, const loopir::Ranges& ranges, int64_t extent) {
  loopir::Bounds b = loopir::bounds_of(e, ranges);
  if (!b.known || b.lo < 0 || b.hi >= extent) return false;
  std::vector<Expr> pending{e};
  while (!pending.empty()) {
    Expr x = pending.back();
    pending.pop_back();
    if (x.kind() == ExprKind::FloorDiv || x.kind() == ExprKind::Mod) {
      loopir::Bounds ob = loopir::bounds_of(x.operands()[0], ranges);
      if (!ob.known || ob.lo < 0) return false;
    }
    for (const auto& o : x.operands()) pending.push_back(o);
  }
  return true;
}

std::string storage_type(DType d) {
  switch (d) {
    case DType::Bool: return "bool";
    case DType::UInt8: return "uint8_t";
    case DType::Int8: return "int8_t";
    case DType::Int16: return "int16_t";
    case DType::Int32: return "int32_t";
    case DType::Int64: return "int64_t";
    case DType::Float16:
    case DType::BFloat16: return "uint16_t";  // the bits; see load_expr() and store_expr()
    case DType::Float32: return "float";
    case DType::Float64: return "double";
    case DType::ComplexFloat:
    case DType::ComplexDouble: break;
  }
  // Complex tensors reach generated code only through extern calls (the FFT ops); a loop kernel
  // over complex elements would need complex arithmetic the code generator does not have.
  KILN_FAIL(ErrorKind::NotImplemented, "C++ codegen: no generated kernels for {} tensors", dtype_name(d));
}

std::string compute_type(DType d) { return is_reduced_float(d) ? "float" : storage_type(d); }

std::string load_expr(DType d, const std::string& element) {
  if (d == DType::BFloat16) return fmt::format("k_from_bf16({})", element);
  if (d == DType::Float16) return fmt::format("k_from_f16({})", element);
  return fmt::format("static_cast<{}>({})", storage_type(d), element);
}

std::string store_expr(DType d, const std::string& value) {
  if (d == DType::BFloat16) return fmt::format("k_to_bf16({})", value);
  if (d == DType::Float16) return fmt::format("k_to_f16({})", value);
  return fmt::format("static_cast<{}>({})", storage_type(d), value);
}

std::string float_literal(double v, DType d, const Dialect& dialect) {
  std::string t = compute_type(d);
  if (std::isnan(v)) return dialect.limit("quiet_NaN", t);
  // Parenthesized: a literal can follow a minus sign ("--x" would be a decrement).
  if (std::isinf(v)) return fmt::format("({}{})", v < 0 ? "-" : "", dialect.limit("infinity", t));
  std::string text = fmt::format("{:.17g}", v);
  // "-0" would be the integer zero: a decimal point keeps the sign of -0.0.
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return fmt::format("{}({})", t, text);
}

std::string literal(const ScalarExpr& c, const Dialect& dialect) {
  DType d = c.dtype();
  if (is_floating(d)) return float_literal(c.constant(), d, dialect);
  if (d == DType::Bool) return c.int_constant() != 0 ? "true" : "false";
  int64_t v = c.int_constant();
  // -2^63 has no literal of its own (the minus applies to 2^63, which does not fit).
  if (v == std::numeric_limits<int64_t>::min()) return fmt::format("static_cast<{}>(INT64_MIN)", storage_type(d));
  return fmt::format("{}({})", storage_type(d), v);
}

std::string cpp_index(const Expr& e) {
  switch (e.kind()) {
    case ExprKind::Const: return std::to_string(e.value());
    case ExprKind::Var: return e.name();
    case ExprKind::Add: {
      std::vector<std::string> terms;
      for (const auto& o : e.operands()) terms.push_back(cpp_index(o));
      return fmt::format("({})", fmt::join(terms, " + "));
    }
    case ExprKind::Mul: return fmt::format("({} * {})", cpp_index(e.operands()[0]), cpp_index(e.operands()[1]));
    case ExprKind::FloorDiv: return fmt::format("({} / {})", cpp_index(e.operands()[0]), e.value());
    case ExprKind::Mod: return fmt::format("({} % {})", cpp_index(e.operands()[0]), e.value());
  }
  return "0";
}

std::string reduce_init(loopir::ReduceKind k, DType d, const Dialect& dialect) {
  std::string t = compute_type(d);
  switch (k) {
    case loopir::ReduceKind::Sum: return t + "(0)";
    case loopir::ReduceKind::Prod: return t + "(1)";
    case loopir::ReduceKind::Max:
      return is_floating(d) ? fmt::format("-{}", dialect.limit("infinity", t)) : dialect.limit("lowest", t);
    case loopir::ReduceKind::Min: return is_floating(d) ? dialect.limit("infinity", t) : dialect.limit("max", t);
    case loopir::ReduceKind::None: break;
  }
  return "";
}

int ErrorSites::add(std::string what) {
  sites.push_back(std::move(what));
  return static_cast<int>(sites.size());
}

BodyWriter::BodyWriter(Context ctx, const std::map<int, std::string>& locals, std::string& out, std::string indent,
                       std::string prefix)
    : ctx_(std::move(ctx)), locals_(locals), out_(out), indent_(std::move(indent)), prefix_(std::move(prefix)) {}

std::string BodyWriter::name(const ScalarExpr& e, const std::string& guard, bool masked, const std::string& value) {
  std::string n = fmt::format("{}{}", prefix_, next_++);
  out_ += fmt::format("{}const {} {} = {};\n", indent_, compute_type(e.dtype()), n, value);
  // Statements run unconditionally: a value that masks nothing is valid under every guard.
  names_[{e.node(), masked ? guard : ""}] = n;
  if (masked) masked_.insert(n);
  return n;
}

std::string BodyWriter::emit(const ScalarExpr& e, const std::string& guard) {
  if (auto it = names_.find({e.node(), guard}); it != names_.end()) return it->second;
  if (auto it = names_.find({e.node(), ""}); it != names_.end()) return it->second;  // computed unconditionally
  switch (e.kind()) {
    case ScalarKind::Load: return emit_load(e, guard);
    case ScalarKind::Constant: return literal(e, ctx_.dialect);
    case ScalarKind::Index:
      return name(e, guard, false, fmt::format("static_cast<{}>({})", compute_type(e.dtype()), cpp_index(e.index())));
    case ScalarKind::Op: return emit_op(e, guard);
  }
  return "?";
}

std::string BodyWriter::emit_load(const ScalarExpr& e, const std::string& guard) {
  auto local = locals_.find(e.buffer());
  if (local != locals_.end()) return local->second;  // a register or this row's element
  const auto& buf = ctx_.program.buffers[static_cast<size_t>(e.buffer())];
  std::string index = cpp_index(e.index());
  if (guard.empty() || provably_inside(e.index(), ctx_.ranges, buf.extent())) {
    std::string text = load_expr(e.dtype(), fmt::format("buf{}[{}]", e.buffer(), index));
    if (!load_cache_) return name(e, guard, false, text);
    if (auto it = load_cache_->held.find(text); it != load_cache_->held.end()) return it->second;
    if (!load_cache_->keep) return name(e, guard, false, text);
    std::string n = name(e, guard, false, text);
    std::string kept = load_cache_->keep(compute_type(e.dtype()));
    out_ += fmt::format("{}{} = {};\n", indent_, kept, n);
    load_cache_->held[text] = kept;
    return n;
  }
  // Read only where the branch is taken: elsewhere the index may be outside the buffer. The index
  // itself is selected (element 0 where the branch is not taken) and hidden from the optimizer
  // (k_opaque), because g++ vectorizing `g ? buf[i] : 0` or `buf[g ? i : 0]` widens the load over
  // elements the program never reads.
  std::string zero = fmt::format("{}(0)", compute_type(e.dtype()));
  if (buf.extent() == 0) return zero;  // an empty buffer: the branch is never taken
  masked_loads_ = true;
  std::string value = load_expr(e.dtype(), fmt::format("buf{}[k_opaque({} ? {} : 0)]", e.buffer(), guard, index));
  return name(e, guard, true, fmt::format("({} ? {} : {})", guard, value, zero));
}

std::string BodyWriter::emit_op(const ScalarExpr& e, const std::string& guard) {
  const auto& ops = e.operands();
  std::vector<std::string> args;
  // A name that depends on the guard (a masked load below it) is only valid under it.
  auto guarded = [&](const std::string& n) { return masked_.contains(n); };
  if (e.name() == "where") {
    std::string c = emit(ops[0], guard);
    // Eager computed both branches of a data `where` everywhere (an integer division in the branch
    // not taken still raises): only an index condition guards its branches.
    bool structural = !reads_data_only(ops[0]);
    std::string a = emit(ops[1], structural ? conjunction(guard, c) : guard);
    std::string b = emit(ops[2], structural ? conjunction(guard, "!" + c) : guard);
    bool masked = guarded(c) || guarded(a) || guarded(b);
    return name(e, guard, masked, fmt::format("({} ? {} : {})", c, a, b));
  }
  bool masked = false;
  for (const auto& o : ops) {
    args.push_back(emit(o, guard));
    masked = masked || guarded(args.back());
  }
  DType in = ops[0].dtype();
  // A float converted to int32 or int64 and back to the same float type: g++ -O3 (-fno-trapping-math,
  // with SSE4.1's roundss) folds float(int(x)) into trunc(x), which keeps the sign of a zero that
  // the integer loses (int(-0.5) became -0.0, and x / int(x) +inf where eager's is -inf), and drops
  // a +0 written after it. k_float_through_int computes it as trunc(x) + 0 (in range) itself.
  if (e.name() == "convert_element_type" && is_floating(e.dtype()) && ops[0].kind() == ScalarKind::Op &&
      ops[0].name() == "convert_element_type" && (in == DType::Int32 || in == DType::Int64) &&
      ops[0].operands()[0].dtype() == e.dtype()) {
    std::string x = emit(ops[0].operands()[0], guard);
    std::string v = fmt::format("k_float_through_int<{}>({})", compute_type(in), x);
    // A 16-bit float rounds, as apply's conversions do (float16's -inf for an int's minimum).
    if (e.dtype() == DType::Float16) v = fmt::format("k_from_f16(k_to_f16({}))", v);
    if (e.dtype() == DType::BFloat16) v = fmt::format("k_round_bf16({})", v);
    return name(e, guard, masked || guarded(x), v);
  }
  if (is_integer_division(e.name(), in)) {
    int site = ctx_.sites.add(ctx_.origin);
    std::string call = fmt::format("k_{}({}, {}, kiln_status, {})", e.name(), args[0], args[1], site);
    // Outside a cat's or pad's part nothing is divided (eager never computed those elements).
    if (!guard.empty())
      return name(e, guard, true, fmt::format("({} ? {} : {}(0))", guard, call, compute_type(e.dtype())));
    return name(e, guard, masked, call);
  }
  // a ± alpha * b (add/sub with alpha): one rounding, as eager's fma(±alpha, b, a). Generated code
  // is built with -ffp-contract=off, so no other product is fused and every op rounds as eager's.
  if ((e.name() == "add" || e.name() == "sub") && is_floating(e.dtype()) && ops[1].kind() == ScalarKind::Op &&
      ops[1].name() == "mul" && ops[1].operands()[1].kind() == ScalarKind::Constant) {
    const ScalarExpr& product = ops[1];
    std::string b = emit(product.operands()[0], guard);
    std::string alpha = literal(product.operands()[1], ctx_.dialect);
    masked = masked || guarded(b);
    std::string value =
        fmt::format("{}({}({}), {}, {})", ctx_.dialect.fma, e.name() == "sub" ? "-" : "", alpha, b, args[0]);
    return name(e, guard, masked, value);
  }
  // Small constant powers are products (std::pow does not vectorize): x^2 is exactly x*x.
  if (e.name() == "pow" && is_floating(e.dtype()) && ops[1].kind() == ScalarKind::Constant) {
    double exponent = ops[1].constant();
    if (exponent == 1) return args[0];
    if (exponent == 2) return name(e, guard, masked, fmt::format("({0} * {0})", args[0]));
    if (exponent == 3) return name(e, guard, masked, fmt::format("({0} * {0} * {0})", args[0]));
  }
  return name(e, guard, masked, apply(ctx_.dialect, e.name(), args, e.dtype(), in));
}

}  // namespace kiln::compiler
