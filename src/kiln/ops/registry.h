// The op registry: every op declared once (schema, tags, kind, provenance), with its kernels per
// dispatch key. Native ops come from the op table (native_ops.def, compiled in by native_ops.cpp);
// kernels attach through KernelRegistrar objects in the kernel layers; users add custom ops with
// register_custom_op.
#pragma once

#include <array>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "kiln/ops/dispatch_key.h"
#include "kiln/ops/op_info.h"
#include "kiln/ops/schema.h"
#include "kiln/ops/value.h"

namespace kiln {

class OpEntry;
using OpHandle = const OpEntry*;

// A kernel in the boxed convention: arguments on the stack in schema order, replaced by results.
using BoxedKernel = std::function<void(Stack&)>;
// A kernel for every op at one key (tracing, say): it gets the op too.
using BoxedFallback = std::function<void(OpHandle, Stack&, DispatchKeySet)>;

// One op table row: the declaration, as data.
struct OpDecl {
  const char* schema;
  const char* tags = "";
  OpKind kind = OpKind::Leaf;
  std::optional<PatternKind> pattern = std::nullopt;  // derived from the tags when not given
  const char* reason = "";                            // a declared op's: why kiln does not implement it
};

class OpEntry {
 public:
  const Schema& schema() const { return schema_; }
  const std::string& name() const { return name_; }  // "aten::add.Tensor"
  // The op's position in declaration order: stable for the process, dense (0, 1, ...), so tables
  // indexed by op (OpAttr, op_attr.h) are vectors.
  size_t index() const { return index_; }
  TagSet tags() const { return tags_; }
  bool has_tag(OpTag t) const { return tags_.has(t); }
  OpKind kind() const { return kind_; }
  Provenance provenance() const { return provenance_; }
  PatternKind pattern() const { return pattern_; }
  // The parsed default of each argument (nullopt where there is none).
  const std::vector<std::optional<Value>>& defaults() const { return defaults_; }
  const BoxedKernel* kernel(DispatchKey k) const {
    const auto& f = kernels_[static_cast<int>(k)];
    return f ? &f : nullptr;
  }
  const BoxedKernel* compound_kernel() const { return compound_ ? &compound_ : nullptr; }
  // True when a call on `backend` can run: a kernel there, or a compound kernel.
  bool runs_on(DispatchKey backend) const { return kernel(backend) != nullptr || compound_ != nullptr; }
  // True when some backend can run it (a declared op with the generic in-place kernel can).
  bool implemented() const;
  // Why a declared op is not implemented ("sparse tensors ..."); empty for the others.
  std::string_view reason() const { return reason_; }

 private:
  friend class Registry;
  Schema schema_;
  std::string name_;
  size_t index_ = 0;
  TagSet tags_;
  OpKind kind_ = OpKind::Leaf;
  Provenance provenance_ = Provenance::Native;
  PatternKind pattern_ = PatternKind::Opaque;
  const char* reason_ = "";
  std::vector<std::optional<Value>> defaults_;
  std::array<BoxedKernel, kNumDispatchKeys> kernels_;
  BoxedKernel compound_;
};

class Registry {
 public:
  // The process-wide registry, with the native op table and every registrar's kernels.
  static Registry& global();

  // Declares an op; throws kiln::Error when the schema does not parse or the name is taken.
  OpEntry& declare(const OpDecl& decl, Provenance provenance = Provenance::Native, std::string_view ns = "aten");
  // Attaches a kernel; throws kiln::Error for an unknown op or a second kernel at the same key.
  void set_kernel(std::string_view op, DispatchKey key, BoxedKernel kernel);
  // Attaches the decomposition kernel of a compound op, used on every backend.
  void set_compound_kernel(std::string_view op, BoxedKernel kernel);
  // A kernel run for every op at `key` (a wrapper key) that has no kernel of its own there.
  void set_fallback(DispatchKey key, BoxedFallback fallback);
  const BoxedFallback* fallback(DispatchKey key) const;

  // Looks up "aten::add.Tensor", or "add.Tensor" for an aten op; nullptr when absent.
  OpHandle find(std::string_view name) const;
  // Like find, but throws kiln::Error naming the op when it is absent.
  OpHandle get(std::string_view name) const;
  // The functional op an in-place op stands for (add_.Tensor -> add.Tensor), or nullptr; only an
  // op that runs (resize_'s `resize` is declared, not implemented: nullptr).
  OpHandle functional_variant(OpHandle inplace) const;
  // The functional op an out= op stands for: same name, no mutable argument, the out= op's
  // arguments without the trailing `out` (atan2.out -> atan2), or nullptr; only an op that runs.
  OpHandle functional_of_out_variant(OpHandle op) const;
  // True for an op whose last argument is a written `out` tensor.
  static bool is_out_variant(OpHandle op);
  // All ops in declaration order.
  std::vector<OpHandle> ops() const;
  // Every overload of one op name ("aten::max": max, max.dim, max.other, ...), in declaration order.
  std::vector<OpHandle> overloads(std::string_view qualified_name) const;

 private:
  Registry() = default;
  OpEntry& mutable_entry(std::string_view op);

  mutable std::shared_mutex mu_;
  std::deque<OpEntry> entries_;
  std::unordered_map<std::string, OpEntry*> by_name_;
  std::unordered_map<std::string, std::vector<OpEntry*>> by_base_name_;  // "aten::max" -> its overloads
  std::array<BoxedFallback, kNumDispatchKeys> fallbacks_;
};

// Runs `fn` on the global registry once it exists (immediately if it already does). Kernel
// layers define static KernelRegistrar objects, so linking a layer registers its kernels.
class KernelRegistrar {
 public:
  explicit KernelRegistrar(void (*fn)(Registry&));
};

// Looks an op up once and caches the handle: KILN_OP("aten::add.Tensor").
#define KILN_OP(name)                                                            \
  ([]() -> ::kiln::OpHandle {                                                    \
    static const ::kiln::OpHandle handle = ::kiln::Registry::global().get(name); \
    return handle;                                                               \
  }())

}  // namespace kiln
