// PyTorch's own OpInfo samples, recorded as Core ATen calls (tests/tools/record_opinfo.py, run by the
// kiln_opinfo_record fixture), replayed in kiln eager: per overload, how many calls pass.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "kiln/ops/dispatcher.h"
#include "replay.h"

namespace kiln::opinfo {
namespace {

std::string recording_dir() {
  const char* env = std::getenv("KILN_OPINFO_DIR");
  return env && *env ? env : KILN_OPINFO_DIR;
}

// Calls per overload the compiled replay takes: 8, or $KILN_OPINFO_COMPILED_PER_OP (a longer run).
int per_overload() {
  const char* env = std::getenv("KILN_OPINFO_COMPILED_PER_OP");
  return env && *env ? std::atoi(env) : 8;
}

struct Tally {
  int passed = 0, total = 0;
  std::map<std::string, int> kinds;
  std::string example;
};

void count(std::map<std::string, Tally>& by_op, const Call& call, const Verdict& v) {
  Tally& t = by_op[call.op];
  ++t.total;
  if (v.ok) {
    ++t.passed;
    return;
  }
  ++t.kinds[v.kind];
  if (t.example.empty()) t.example = call.source + ": " + v.kind + ": " + v.detail;
}

// Whether KILN_OPINFO_SHOW (a comma-separated list of overloads) names `op`: its line is printed
// even when every call passes.
bool shown(const std::string& op) {
  const char* env = std::getenv("KILN_OPINFO_SHOW");
  if (env == nullptr) return false;
  std::string list = std::string(",") + env + ",";
  return list.find("," + op + ",") != std::string::npos;
}

// Prints the overloads with failures and a totals line; returns the failures of kinds other than
// no-kernel (ops kiln has no kernel for yet: issue 11).
// Writes "overload passed total" lines to `path` (read by `kiln ops --coverage --samples DIR`).
void write_results(const std::map<std::string, Tally>& by_op, const std::string& path) {
  std::ofstream out(path);
  for (const auto& [op, t] : by_op) out << op << ' ' << t.passed << ' ' << t.total << '\n';
}

int report(const std::map<std::string, Tally>& by_op, const char* what) {
  write_results(by_op, recording_dir() + "/replay_" + what + ".txt");
  int passed = 0, total = 0, clean = 0;
  for (const auto& [op, t] : by_op) {
    passed += t.passed;
    total += t.total;
    clean += t.passed == t.total;
    if (t.passed != t.total || shown(op))
      std::printf("%-40s %3d/%3d  %s\n", op.c_str(), t.passed, t.total, t.example.c_str());
  }
  std::printf("opinfo replay, %s: %d of %d calls pass; %d of %zu overloads pass every call\n", what, passed, total,
              clean, by_op.size());
  int wrong = 0;
  for (const auto& [op, t] : by_op) {
    for (const auto& [kind, n] : t.kinds) wrong += kind == "no-kernel" ? 0 : n;
  }
  return wrong;
}

std::optional<Recording> load() {
  std::string dir = recording_dir();
  if (!std::filesystem::exists(dir + "/calls.txt")) return std::nullopt;
  return read_recording(dir);
}

#define KILN_REQUIRE_RECORDING(r)                                                      \
  auto r##_opt = load();                                                               \
  if (!r##_opt) {                                                                      \
    GTEST_SKIP() << "no recording in " << recording_dir()                              \
                 << " (the kiln_opinfo_record test makes it with the venv's PyTorch)"; \
  }                                                                                    \
  const Recording& r = *r##_opt

// Every recorded call of an overload kiln has a kernel for matches PyTorch eagerly.
TEST(OpInfoReplay, Eager) {
  KILN_REQUIRE_RECORDING(r);
  std::map<std::string, Tally> by_op;
  for (const Call& call : r.calls)
    count(by_op, call, replay(r, call, [](OpHandle op, Stack& s) { call_op_boxed(op, s); }));
  EXPECT_EQ(report(by_op, "eager"), 0);
}

// The same calls through kiln::compile, up to per_overload() per overload, 200 to a compiled function.
TEST(OpInfoReplay, Compiled) {
  KILN_REQUIRE_RECORDING(r);
  std::map<std::string, int> taken;
  std::vector<const Call*> calls;
  for (const Call& call : r.calls) {
    if (!compilable(call) || taken[call.op] >= per_overload()) continue;
    if (!replay(r, call, [](OpHandle op, Stack& s) { call_op_boxed(op, s); }).ok) continue;  // eager fails: above
    ++taken[call.op];
    calls.push_back(&call);
  }
  std::map<std::string, Tally> by_op;
  for (size_t start = 0; start < calls.size(); start += 200) {
    std::vector<const Call*> batch(calls.begin() + static_cast<std::ptrdiff_t>(start),
                                   calls.begin() + static_cast<std::ptrdiff_t>(std::min(calls.size(), start + 200)));
    auto verdicts = replay_compiled(r, batch);
    for (size_t k = 0; k < batch.size(); ++k) count(by_op, *batch[k], verdicts[k]);
  }
  EXPECT_EQ(report(by_op, "compiled"), 0);
}

}  // namespace
}  // namespace kiln::opinfo
