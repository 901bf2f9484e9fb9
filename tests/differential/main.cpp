// kiln_differential_test: the differential tier's binary.
//   kiln_differential_test                       GoogleTest: the fast slice and the corpus replay
//   kiln_differential_test --fuzz [--seed S] [--minutes M] [--corpus DIR]
//                                                generate programs until M minutes pass; minimize
//                                                each new failure class and save it to the corpus
//   kiln_differential_test --run FILE...          check program files (each in a child process)
//   kiln_differential_test --print SEED [raise|large]  print the program a seed generates
//   kiln_differential_test --check DIR [--torch]  (internal) check DIR/program.txt in this process
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "driver.h"
#include "generator.h"

namespace kiln::difftest {
namespace {

int fuzz_main(int argc, char** argv) {
  uint64_t seed = 1;
  double minutes = 5;
  std::string corpus = std::string(KILN_SOURCE_DIR) + "/tests/differential/corpus";
  for (int i = 2; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--seed") seed = std::stoull(value);
    else if (flag == "--minutes") minutes = std::stod(value);
    else if (flag == "--corpus") corpus = value;
    else if (flag == "--device") setenv("KILN_DIFFTEST_DEVICE", value.c_str(), 1);  // the checks inherit it
    else {
      std::fprintf(stderr, "unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  Driver driver(true);
  std::printf("fuzz-compiled: seed %llu, %.1f minutes, corpus %s, PyTorch reference %s\n",
              static_cast<unsigned long long>(seed), minutes, corpus.c_str(),
              driver.use_torch() ? torch_python().c_str() : "skipped (no .venv with torch 2.13)");
  std::fflush(stdout);
  auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / 60; };
  std::map<std::string, int> classes;  // failure class -> programs failing with it
  std::set<std::string> saved;         // classes the corpus already holds a program for
  for (const auto& [name, p] : load_corpus(corpus)) {
    for (const auto& c : p.comments) {
      if (c.starts_with("fails: ")) saved.insert(c.substr(7));
    }
  }
  size_t programs = 0;
  uint64_t next = seed * 1'000'000;
  while (elapsed() < minutes) {
    std::vector<Program> round;
    for (int k = 0; k < 30; ++k, ++next) {
      GenOptions o;
      o.zero_divisors = next % 12 == 0;
      o.large = next % 97 == 0;
      if (o.large) o.max_calls = 5;
      round.push_back(generate_program(next, o));
    }
    programs += round.size();
    for (const auto& f : driver.run_batched(round, 15)) {
      classes[f.result.kind]++;
      std::printf("FAIL %s\n%s\n%s", f.result.kind.c_str(), f.result.report.c_str(), f.program.str().c_str());
      if (!saved.contains(f.result.kind) && elapsed() < minutes) {
        saved.insert(f.result.kind);
        Program small = driver.minimize(f.program, f.result, 40);
        std::printf("minimized to %zu calls: %s\n", small.calls.size(),
                    save_to_corpus(small, f.result, corpus).c_str());
      }
      std::fflush(stdout);
    }
    std::printf("[%.1f min] %zu programs, %zu checks, %zu failure classes\n", elapsed(), programs, driver.checks(),
                classes.size());
    std::fflush(stdout);
  }
  std::printf("fuzz-compiled: %zu programs, %zu checks\n", programs, driver.checks());
  for (const auto& [kind, n] : classes) std::printf("  %4d  %s\n", n, kind.c_str());
  return classes.empty() ? 0 : 1;
}

}  // namespace
}  // namespace kiln::difftest

int main(int argc, char** argv) {
  using namespace kiln::difftest;
  if (argc >= 3 && std::string(argv[1]) == "--check") {
    return check_main(argv[2], argc >= 4 && std::string(argv[3]) == "--torch");
  }
  if (argc >= 2 && std::string(argv[1]) == "--fuzz") return fuzz_main(argc, argv);
  if (argc >= 3 && std::string(argv[1]) == "--run") {
    std::vector<Program> programs;
    for (int i = 2; i < argc; ++i) {
      std::ifstream f(argv[i]);
      std::stringstream text;
      text << f.rdbuf();
      programs.push_back(parse_program(text.str()));
    }
    Driver driver(true);
    auto results = driver.run_each(programs);
    int failed = 0;
    for (size_t i = 0; i < results.size(); ++i) {
      std::printf("%s: %s\n%s", argv[i + 2],
                  results[i].ok ? (results[i].raised ? "ok (both raise)" : "ok") : results[i].kind.c_str(),
                  results[i].report.c_str());
      failed += results[i].ok ? 0 : 1;
    }
    return failed == 0 ? 0 : 1;
  }
  if (argc >= 3 && std::string(argv[1]) == "--print") {
    GenOptions o;
    o.zero_divisors = argc >= 4 && std::string(argv[3]) == "raise";
    o.large = argc >= 4 && std::string(argv[3]) == "large";
    std::fputs(generate_program(std::stoull(argv[2]), o).str().c_str(), stdout);
    return 0;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
