#include "kiln/ops/custom_op.h"

namespace kiln {

OpHandle register_custom_op(const CustomOpDef& def) {
  Schema parsed = parse_schema(def.schema);
  KILN_CHECK(def.schema.find("::") != std::string::npos,
             "register_custom_op: schema '{}' needs a namespace (\"mylib::op(...) -> ...\")", def.schema);
  KILN_CHECK(parsed.ns != "aten", "register_custom_op: the aten namespace is reserved for native ops ('{}')",
             def.schema);
  KILN_CHECK(static_cast<bool>(def.meta), "register_custom_op: {} needs a meta kernel", parsed.qualified_name());
  Registry& r = Registry::global();
  OpDecl decl{def.schema.c_str(), def.tags.c_str()};
  OpEntry& entry = r.declare(decl, Provenance::Custom, parsed.ns);
  r.set_kernel(entry.name(), DispatchKey::Meta, def.meta);
  if (def.cpu) r.set_kernel(entry.name(), DispatchKey::CPU, def.cpu);
  return &entry;
}

}  // namespace kiln
