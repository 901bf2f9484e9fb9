// `kiln ops --coverage`: per Core ATen overload, how kiln runs it eagerly (a kernel of its own, a
// decomposition, or not at all) and compiled (a prims decomposition, an extern call of its
// kernel, its functional form, or not at all), and the totals. PyTorch's OpInfo samples check both
// (docs/opinfo_replay.md). With a recording, also the samples that passed and whether the overload
// is differentiable through kiln: every op of its derivative as PyTorch computes it (the backward
// graph AOT autograd hands a backend, recorded in derivatives.txt) runs in kiln.
#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/decomp/prims/table.h"
#include "kiln/ops/registry.h"
#include "kiln/tools/commands.h"
#include "kiln/trace/trace.h"

namespace kiln::tools {

std::string eager_path(OpHandle op) {
  if (op->kernel(DispatchKey::CPU)) return "kernel";
  if (op->kind() == OpKind::Compound && op->compound_kernel()) return "decomposition";
  return "-";
}

// What a prims-level trace does with the op: decomposes it into prims, keeps it whole as an
// extern call (on purpose, or for want of a decomposition: "kept"), records its functional form
// (a mutating or out= op), reads it as a constant (a size or stride: shapes are static), or cannot
// trace it (a size or value read from the data).
std::string compiled_path(OpHandle op) {
  if (eager_path(op) == "-") return "-";
  if (op->has_tag(OpTag::DynamicOutputShape) || op->has_tag(OpTag::DataDependentOutput)) return "-";
  if (op->has_tag(OpTag::Metadata)) return "constant";  // read at trace time: shapes are static
  if (stays_at_prims_level(op)) return "extern";
  if (prims_decompositions().contains(op) || (op->kind() == OpKind::Compound && op->compound_kernel())) {
    return "decomposed";
  }
  if (op->schema().is_mutable()) return trace::has_functional_form(op) ? "functionalized" : "-";
  return "kept";
}

// Per overload, "passed/total" from a replay's results file ("overload passed total" lines), which
// kiln_opinfo_test writes beside the recording it replays; empty when the file is absent.
std::map<std::string, std::string> replay_results(const std::string& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string op;
  int passed = 0, total = 0;
  while (in >> op >> passed >> total) out[op] = std::to_string(passed) + "/" + std::to_string(total);
  return out;
}

// A recording's derivatives.txt: per overload, "grad" and its backward ops, "none" (PyTorch does
// not differentiate it) or "error" (the probe failed); empty when the file is absent.
std::map<std::string, std::vector<std::string>> derivatives(const std::string& path) {
  std::map<std::string, std::vector<std::string>> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::string op, word;
    words >> op;
    while (words >> word) out[op].push_back(word);
  }
  return out;
}

// "yes" when every backward op runs in kiln, "no: OP" naming the first that does not, "n/a" when
// PyTorch does not differentiate the overload, "error" when the probe failed, "-" when not probed.
std::string differentiable(const std::vector<std::string>* line) {
  if (line == nullptr || line->empty()) return "-";
  if ((*line)[0] == "none") return "n/a";
  if ((*line)[0] != "grad") return "error";
  auto runs = [](const std::string& name) {
    OpHandle op = Registry::global().find(name);
    return op != nullptr && op->runs_on(DispatchKey::CPU);
  };
  for (size_t i = 1; i < line->size(); ++i) {
    const std::string& name = (*line)[i];
    // An in-place op of the backward (index_put_) is its functional form once AOT autograd has
    // functionalized the graph, as kiln's tracer functionalizes it.
    std::string base = name.substr(0, name.find('.')), overload = name.substr(base.size());
    bool functional = base.ends_with('_') && runs(base.substr(0, base.size() - 1) + overload);
    if (!runs(name) && !functional) return "no: " + name;
  }
  return "yes";
}

// The whole aten:: library (ops/aten_library/): how many overloads each kind has, how many run,
// and why the others do not; with `all`, a row per overload.
void print_library(bool all) {
  int total = 0, runs = 0;
  std::map<std::string, int> kinds, reasons;
  if (all) std::printf("\n%-55s %-9s %-14s %-14s %s\n", "aten overload", "kind", "eager", "compiled", "reason");
  for (OpHandle op : Registry::global().ops()) {
    if (op->schema().ns != "aten") continue;
    ++total;
    ++kinds[std::string(op_kind_name(op->kind()))];
    std::string e = op->implemented() ? eager_path(op) : "-";
    if (e == "-" && op->implemented()) e = "other device";
    runs += op->implemented();
    if (!op->implemented()) ++reasons[std::string(op->reason())];
    if (all) {
      std::printf("%-55s %-9s %-14s %-14s %s\n", op->name().c_str(), std::string(op_kind_name(op->kind())).c_str(),
                  e.c_str(), compiled_path(op).c_str(), op->implemented() ? "" : std::string(op->reason()).c_str());
    }
  }
  std::printf("\naten:: overloads declared: %d (leaf %d, compound %d, declared %d); run: %d\n", total, kinds["leaf"],
              kinds["compound"], kinds["declared"], runs);
  std::vector<std::pair<int, std::string>> by_count;
  for (const auto& [reason, n] : reasons) by_count.emplace_back(n, reason);
  std::sort(by_count.rbegin(), by_count.rend());
  std::printf("Not implemented, by reason:\n");
  for (const auto& [n, reason] : by_count) std::printf("%6d  %s\n", n, reason.c_str());
}

int coverage_command(const std::string& samples_dir, bool all) {
  int total = 0, eager = 0, compiled = 0;
  bool samples = !samples_dir.empty();
  auto eager_samples = replay_results(samples_dir + "/replay_eager.txt");
  auto compiled_samples = replay_results(samples_dir + "/replay_compiled.txt");
  auto derivative = derivatives(samples_dir + "/derivatives.txt");
  int differentiated = 0, differentiable_in_kiln = 0;
  if (samples && eager_samples.empty()) {
    std::fprintf(stderr, "kiln ops: no replay results in %s (run kiln_opinfo_test on that recording first)\n",
                 samples_dir.c_str());
    return 1;
  }
  std::printf("%-45s %-14s %s", "overload", "eager", samples ? "compiled       " : "compiled");
  if (samples) std::printf("%-16s %-17s %s", "samples eager", "samples compiled", "differentiable");
  std::printf("\n");
  auto cell = [](const std::map<std::string, std::string>& m, const std::string& op) {
    auto it = m.find(op);
    return it == m.end() ? std::string("-") : it->second;
  };
  for (OpHandle op : Registry::global().ops()) {
    if (!op->has_tag(OpTag::Core)) continue;
    std::string e = eager_path(op), c = compiled_path(op);
    ++total;
    eager += e != "-";
    compiled += c != "-";
    std::printf("%-45s %-14s %s", op->name().c_str(), e.c_str(),
                samples ? fmt::format("{:<15}", c).c_str() : c.c_str());
    if (samples) {
      auto d = derivative.find(op->name());
      std::string diff = differentiable(d == derivative.end() ? nullptr : &d->second);
      differentiated += diff == "yes" || diff.starts_with("no");
      differentiable_in_kiln += diff == "yes";
      std::printf("%-16s %-17s %s", cell(eager_samples, op->name()).c_str(), cell(compiled_samples, op->name()).c_str(),
                  diff.c_str());
    }
    std::printf("\n");
  }
  std::printf("\nCore ATen overloads: %d; eager: %d; compiled: %d\n", total, eager, compiled);
  if (samples) {
    std::printf("Differentiable through kiln: %d of the %d PyTorch differentiates\n", differentiable_in_kiln,
                differentiated);
  }
  print_library(all);
  return 0;
}

}  // namespace kiln::tools
