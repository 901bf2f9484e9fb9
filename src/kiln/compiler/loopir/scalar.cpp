#include "kiln/compiler/loopir/scalar.h"

#include <cmath>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include "kiln/core/half.h"
#include "kiln/support/error.h"
#include "kiln/support/hash.h"

namespace kiln::loopir {
namespace {

struct Key {
  ScalarKind kind;
  DType dtype;
  int buffer;
  const ExprNode* index;
  uint64_t constant_bits;
  int64_t int_constant;
  std::string name;
  std::vector<const ScalarNode*> operands;
  bool operator==(const Key&) const = default;
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = hash_combine(static_cast<uint64_t>(k.kind), static_cast<uint64_t>(k.dtype));
    h = hash_combine(h, static_cast<uint64_t>(k.buffer));
    h = hash_combine(h, reinterpret_cast<uintptr_t>(k.index));
    h = hash_combine(h, k.constant_bits);
    h = hash_combine(h, static_cast<uint64_t>(k.int_constant));
    h = hash_combine(h, std::hash<std::string>{}(k.name));
    for (const auto* p : k.operands) h = hash_combine(h, reinterpret_cast<uintptr_t>(p));
    return h;
  }
};
struct Table {
  std::mutex mu;
  std::unordered_map<Key, std::unique_ptr<ScalarNode>, KeyHash> nodes;
};
Table& table() {
  static Table* t = new Table();  // scalar expressions live for the whole process
  return *t;
}

std::string print(const ScalarNode& n) {
  switch (n.kind) {
    case ScalarKind::Load: return fmt::format("load(buf{}, {}):{}", n.buffer, n.index.str(), dtype_name(n.dtype));
    case ScalarKind::Constant:
      if (!is_floating(n.dtype)) return fmt::format("{}:{}", n.int_constant, dtype_name(n.dtype));
      return fmt::format("{}:{}", n.constant, dtype_name(n.dtype));
    case ScalarKind::Index: return fmt::format("index({}):{}", n.index.str(), dtype_name(n.dtype));
    case ScalarKind::Op: {
      std::vector<std::string> parts;
      for (const auto& o : n.operands) parts.push_back(o.str());
      std::string head = n.name == "convert_element_type" ? fmt::format("to_{}", dtype_name(n.dtype)) : n.name;
      return fmt::format("{}({})", head, fmt::join(parts, ", "));
    }
  }
  return "?";
}

}  // namespace

ScalarExpr ScalarExpr::intern(ScalarKind kind, DType dtype, int buffer, Expr index, double constant,
                              int64_t int_constant, std::string name, std::vector<ScalarExpr> operands) {
  uint64_t bits = 0;
  std::memcpy(&bits, &constant, sizeof bits);
  Key key{kind, dtype, buffer, index.node(), bits, int_constant, name, {}};
  for (const auto& o : operands) key.operands.push_back(o.node_);
  auto& t = table();
  std::lock_guard lock(t.mu);
  auto it = t.nodes.find(key);
  if (it != t.nodes.end()) return ScalarExpr(it->second.get());
  auto node = std::make_unique<ScalarNode>(
      ScalarNode{kind, dtype, buffer, index, constant, int_constant, std::move(name), std::move(operands), ""});
  node->text = print(*node);
  const ScalarNode* raw = node.get();
  t.nodes.emplace(std::move(key), std::move(node));
  return ScalarExpr(raw);
}

ScalarExpr ScalarExpr::load(int buffer, Expr index, DType dtype) {
  return intern(ScalarKind::Load, dtype, buffer, index, 0, 0, "", {});
}
ScalarExpr ScalarExpr::constant(Scalar value, DType dtype) {
  if (is_floating(dtype)) {
    // The value the dtype holds (through float, as PyTorch converts a Scalar): a bfloat16 constant
    // of 1e-40 is 9.2e-41, as eager's full() stores it.
    double v = value.to_double();
    if (dtype == DType::Float32) v = static_cast<float>(v);
    if (dtype == DType::BFloat16) v = static_cast<float>(BFloat16(static_cast<float>(v)));
    if (dtype == DType::Float16) v = static_cast<float>(Half(static_cast<float>(v)));
    return intern(ScalarKind::Constant, dtype, -1, Expr(), v, 0, "", {});
  }
  int64_t v = 0;
  if (dtype == DType::Bool) {
    v = value.to<bool>() ? 1 : 0;
  } else if (value.is_floating_point()) {
    double d = value.to_double();
    // 2^63 is exact as a double; every finite double below it in magnitude truncates to an int64.
    KILN_CHECK(std::isfinite(d) && d >= -0x1p63 && d < 0x1p63, "loop IR: constant {} does not fit {}", d,
               dtype_name(dtype));
    v = static_cast<int64_t>(d);
  } else {
    v = value.to<int64_t>();
  }
  return intern(ScalarKind::Constant, dtype, -1, Expr(), static_cast<double>(v), v, "", {});
}
ScalarExpr ScalarExpr::index(Expr e, DType dtype) { return intern(ScalarKind::Index, dtype, -1, e, 0, 0, "", {}); }
ScalarExpr ScalarExpr::op(const std::string& name, std::vector<ScalarExpr> operands, DType dtype) {
  KILN_CHECK(!operands.empty(), "loop IR: operation {} needs operands", name);
  return intern(ScalarKind::Op, dtype, -1, Expr(), 0, 0, name, std::move(operands));
}

ScalarKind ScalarExpr::kind() const { return node_->kind; }
DType ScalarExpr::dtype() const { return node_->dtype; }
int ScalarExpr::buffer() const { return node_->buffer; }
const Expr& ScalarExpr::index() const { return node_->index; }
double ScalarExpr::constant() const { return node_->constant; }
int64_t ScalarExpr::int_constant() const { return node_->int_constant; }
const std::string& ScalarExpr::name() const { return node_->name; }
const std::vector<ScalarExpr>& ScalarExpr::operands() const { return node_->operands; }
std::string ScalarExpr::str() const { return node_->text; }

ScalarExpr ScalarExpr::substitute(const std::map<std::string, Expr>& r) const {
  switch (kind()) {
    case ScalarKind::Load: return load(buffer(), index().substitute(r), dtype());
    case ScalarKind::Index: return ScalarExpr::index(index().substitute(r), dtype());
    case ScalarKind::Op: {
      std::vector<ScalarExpr> ops;
      for (const auto& o : operands()) ops.push_back(o.substitute(r));
      return op(name(), std::move(ops), dtype());
    }
    default: return *this;
  }
}

int ScalarExpr::op_count() const {
  int n = kind() == ScalarKind::Op ? 1 : 0;
  for (const auto& o : operands()) n += o.op_count();
  return n;
}

}  // namespace kiln::loopir
