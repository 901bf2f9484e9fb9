// `kiln ops`: the op table as a user sees it — one row per op with its exact schema, tags,
// kind and the backends that have kernels — as an aligned table, TSV or Markdown.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/ops/registry.h"
#include "kiln/tools/commands.h"

namespace kiln::tools {
namespace {

struct Row {
  std::string name, schema, tags, kind, devices;
};

// The backends with a kernel of the op's own; a compound op runs its decomposition on any other
// (flash attention has kernels and a decomposition: "Meta,CPU; any (decomposed)").
std::string devices_of(OpHandle op) {
  std::vector<std::string> names;
  for (DispatchKey k : kBackendKeys) {
    if (op->kernel(k)) names.emplace_back(dispatch_key_name(k));
  }
  std::string kernels = fmt::format("{}", fmt::join(names, ","));
  if (op->kind() == OpKind::Compound && op->compound_kernel()) {
    return names.empty() ? "any (decomposed)" : kernels + "; any (decomposed)";
  }
  return names.empty() ? "-" : kernels;
}

void print_table(const std::vector<Row>& rows) {
  const Row header{"name", "schema", "tags", "kind", "devices"};
  size_t w[5] = {header.name.size(), 0, header.tags.size(), header.kind.size(), header.devices.size()};
  for (const auto& r : rows) {
    w[0] = std::max(w[0], r.name.size());
    w[2] = std::max(w[2], r.tags.size());
    w[3] = std::max(w[3], r.kind.size());
    w[4] = std::max(w[4], r.devices.size());
  }
  auto line = [&](const Row& r) {
    std::printf("%s\n", fmt::format("{:<{}}  {:<{}}  {:<{}}  {:<{}}  {}", r.name, w[0], r.kind, w[3], r.devices, w[4],
                                    r.tags, w[2], r.schema)
                            .c_str());
  };
  line(header);
  for (const auto& r : rows) line(r);
}

std::string md_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += '\\';
    out += c;
  }
  return out;
}

int usage_error(const std::string& what) {
  std::fprintf(stderr,
               "kiln ops: %s\nusage: kiln ops [--format table|tsv|md] [--tag TAG]... [--kind leaf|compound|declared] | "
               "--coverage [--samples DIR] [--all]\n",
               what.c_str());
  return 2;
}

}  // namespace

int ops_command(const std::vector<std::string>& args) {
  std::string format = "table";
  std::vector<OpTag> tags;
  std::string kind;
  if (!args.empty() && args[0] == "--coverage") {
    std::string samples;
    bool all = false;
    for (size_t i = 1; i < args.size(); ++i) {
      if (args[i] == "--all") all = true;
      else if (args[i] == "--samples" && i + 1 < args.size()) samples = args[++i];
      else return usage_error("--coverage takes only --samples DIR and --all");
    }
    return coverage_command(samples, all);
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--format" || a == "--tag" || a == "--kind") && i + 1 >= args.size()) {
      return usage_error(a + " needs a value");
    }
    if (a == "--format") {
      format = args[++i];
      if (format != "table" && format != "tsv" && format != "md") return usage_error("unknown format '" + format + "'");
    } else if (a == "--tag") {
      auto t = parse_op_tag(args[++i]);
      if (!t) return usage_error("unknown tag '" + args[i] + "'");
      tags.push_back(*t);
    } else if (a == "--kind") {
      kind = args[++i];
      if (kind != "leaf" && kind != "compound" && kind != "declared") return usage_error("unknown kind '" + kind + "'");
    } else {
      return usage_error("unknown option '" + a + "'");
    }
  }

  std::vector<Row> rows;
  for (OpHandle op : Registry::global().ops()) {
    bool keep = std::all_of(tags.begin(), tags.end(), [&](OpTag t) { return op->has_tag(t); });
    if (!kind.empty() && op_kind_name(op->kind()) != kind) keep = false;
    if (!keep) continue;
    rows.push_back(
        {op->name(), op->schema().text, op->tags().to_string(), std::string(op_kind_name(op->kind())), devices_of(op)});
  }
  if (format == "tsv") {
    std::printf("name\tschema\ttags\tkind\tdevices\n");
    for (const auto& r : rows) {
      std::printf("%s\t%s\t%s\t%s\t%s\n", r.name.c_str(), r.schema.c_str(), r.tags.c_str(), r.kind.c_str(),
                  r.devices.c_str());
    }
  } else if (format == "md") {
    std::printf("| name | schema | tags | kind | devices |\n|---|---|---|---|---|\n");
    for (const auto& r : rows) {
      std::printf("| `%s` | `%s` | %s | %s | %s |\n", r.name.c_str(), md_escape(r.schema).c_str(), r.tags.c_str(),
                  r.kind.c_str(), r.devices.c_str());
    }
  } else {
    print_table(rows);
    std::printf("\n%zu ops\n", rows.size());
  }
  return 0;
}

}  // namespace kiln::tools
