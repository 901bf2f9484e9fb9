#include "kiln/ops/registry.h"

#include <span>

namespace kiln {

std::span<const OpDecl> native_op_table();
std::span<const OpDecl> prims_op_table();
std::span<const OpDecl> fused_op_table();
std::span<const OpDecl> aten_library_table();

namespace {

struct PendingRegistrars {
  std::mutex mu;
  std::vector<void (*)(Registry&)> fns;
  Registry* ready = nullptr;
};

PendingRegistrars& pending() {
  static PendingRegistrars p;
  return p;
}

PatternKind derive_pattern(const Schema& s, TagSet tags) {
  if (tags.has(OpTag::Reduction)) return PatternKind::Reduction;
  if (tags.has(OpTag::View)) return PatternKind::Injective;
  if (tags.has(OpTag::Pointwise)) {
    int tensors = 0;
    for (const auto& a : s.arguments) tensors += a.type.base == BaseType::Tensor && !a.type.list ? 1 : 0;
    return tensors > 1 ? PatternKind::Broadcast : PatternKind::Elementwise;
  }
  return PatternKind::Opaque;
}

// A leaf or compound op runs (its kernels may register after this is asked, in static
// initialization); a declared op only with a kernel (the generic in-place one).
bool may_run(OpHandle op) { return op->kind() != OpKind::Declared || op->implemented(); }

}  // namespace

Registry& Registry::global() {
  static Registry* instance = [] {
    auto* r = new Registry();
    for (const OpDecl& decl : native_op_table()) r->declare(decl);
    for (const OpDecl& decl : aten_library_table()) r->declare(decl);
    for (const OpDecl& decl : prims_op_table()) r->declare(decl, Provenance::Native, "prims");
    for (const OpDecl& decl : fused_op_table()) r->declare(decl, Provenance::Native, "kiln");
    auto& p = pending();
    std::vector<void (*)(Registry&)> fns;
    {
      std::lock_guard lock(p.mu);
      p.ready = r;
      fns.swap(p.fns);
    }
    for (auto fn : fns) fn(*r);
    return r;
  }();
  return *instance;
}

KernelRegistrar::KernelRegistrar(void (*fn)(Registry&)) {
  auto& p = pending();
  Registry* ready = nullptr;
  {
    std::lock_guard lock(p.mu);
    if (!p.ready) {
      p.fns.push_back(fn);
      return;
    }
    ready = p.ready;
  }
  fn(*ready);
}

OpEntry& Registry::declare(const OpDecl& decl, Provenance provenance, std::string_view ns) {
  Schema schema = parse_schema(decl.schema);
  if (schema.ns == "aten" && ns != "aten") schema.ns = std::string(ns);
  TagSet tags = TagSet::parse(decl.tags);
  if (schema.is_view()) tags.add(OpTag::View);
  if (schema.is_mutable() && schema.name.ends_with("_")) tags.add(OpTag::Inplace);

  std::unique_lock lock(mu_);
  std::string name = schema.qualified_name();
  KILN_CHECK(!by_name_.contains(name), "op {} is already registered", name);
  OpEntry& e = entries_.emplace_back();
  e.index_ = entries_.size() - 1;
  e.pattern_ = decl.pattern.value_or(derive_pattern(schema, tags));
  e.schema_ = std::move(schema);
  e.name_ = name;
  e.tags_ = tags;
  e.kind_ = decl.kind;
  e.provenance_ = provenance;
  e.reason_ = decl.reason;
  for (const auto& arg : e.schema_.arguments) {
    e.defaults_.push_back(arg.default_text ? std::optional<Value>(parse_default(*arg.default_text, arg.type))
                                           : std::nullopt);
  }
  by_name_.emplace(name, &e);
  by_base_name_[e.schema_.ns + "::" + e.schema_.name].push_back(&e);
  return e;
}

OpEntry& Registry::mutable_entry(std::string_view op) {
  OpHandle h = get(op);
  return const_cast<OpEntry&>(*h);
}

void Registry::set_kernel(std::string_view op, DispatchKey key, BoxedKernel kernel) {
  OpEntry& e = mutable_entry(op);
  std::unique_lock lock(mu_);
  auto& slot = e.kernels_[static_cast<int>(key)];
  KILN_CHECK(!slot, "op {} already has a {} kernel", e.name_, dispatch_key_name(key));
  slot = std::move(kernel);
}

void Registry::set_compound_kernel(std::string_view op, BoxedKernel kernel) {
  OpEntry& e = mutable_entry(op);
  std::unique_lock lock(mu_);
  KILN_CHECK(e.kind_ == OpKind::Compound, "op {} is a leaf op; only compound ops take a compound kernel", e.name_);
  KILN_CHECK(!e.compound_, "op {} already has a compound kernel", e.name_);
  e.compound_ = std::move(kernel);
}

void Registry::set_fallback(DispatchKey key, BoxedFallback fallback) {
  KILN_CHECK(!is_backend_key(key), "fallbacks are for wrapper keys, not the backend {}", dispatch_key_name(key));
  std::unique_lock lock(mu_);
  fallbacks_[static_cast<int>(key)] = std::move(fallback);
}

const BoxedFallback* Registry::fallback(DispatchKey key) const {
  const auto& f = fallbacks_[static_cast<int>(key)];
  return f ? &f : nullptr;
}

OpHandle Registry::find(std::string_view name) const {
  std::shared_lock lock(mu_);
  std::string key(name);
  if (key.find("::") == std::string::npos) key = "aten::" + key;
  auto it = by_name_.find(key);
  return it == by_name_.end() ? nullptr : it->second;
}

OpHandle Registry::get(std::string_view name) const {
  OpHandle h = find(name);
  KILN_CHECK(h != nullptr, "unknown op '{}'", name);
  return h;
}

OpHandle Registry::functional_variant(OpHandle inplace) const {
  const Schema& s = inplace->schema();
  if (!s.name.ends_with("_")) return nullptr;
  std::string name = s.ns;
  name.append("::").append(s.name, 0, s.name.size() - 1);
  std::string plain = name;
  if (!s.overload.empty()) name.append(".").append(s.overload);
  OpHandle f = find(name);
  if (f != nullptr && may_run(f)) return f;
  // Where the plain name is taken by other overloads, PyTorch names the functional form
  // `<name>_functional` (normal_ -> normal_functional).
  f = s.overload.empty() ? find(plain + "_functional") : nullptr;
  return f != nullptr && may_run(f) ? f : nullptr;
}

bool Registry::is_out_variant(OpHandle op) {
  const auto& args = op->schema().arguments;
  return !args.empty() && args.back().name == "out" && args.back().alias && args.back().alias->is_write;
}

OpHandle Registry::functional_of_out_variant(OpHandle op) const {
  if (!is_out_variant(op)) return nullptr;
  const Schema& s = op->schema();
  for (OpHandle candidate : overloads(s.ns + "::" + s.name)) {
    const Schema& c = candidate->schema();
    if (c.is_mutable() || c.arguments.size() + 1 != s.arguments.size() || !may_run(candidate)) continue;
    bool same = true;
    for (size_t i = 0; i < c.arguments.size() && same; ++i) {
      same = c.arguments[i].name == s.arguments[i].name && c.arguments[i].type == s.arguments[i].type;
    }
    if (same) return candidate;
  }
  return nullptr;
}

bool OpEntry::implemented() const {
  if (compound_) return true;
  for (const auto& k : kernels_) {
    if (k) return true;
  }
  return false;
}

std::vector<OpHandle> Registry::overloads(std::string_view qualified_name) const {
  std::shared_lock lock(mu_);
  auto it = by_base_name_.find(std::string(qualified_name));
  if (it == by_base_name_.end()) return {};
  return {it->second.begin(), it->second.end()};
}

std::vector<OpHandle> Registry::ops() const {
  std::shared_lock lock(mu_);
  std::vector<OpHandle> out;
  for (const auto& e : entries_) out.push_back(&e);
  return out;
}

}  // namespace kiln
