// The differential tier: seeded random programs compiled by kiln::compile (the inductor backend)
// against kiln eager, a float64 reference and, when present, PyTorch 2.13 (docs/conformance.md).
// The fast slice runs a few hundred fixed-seed programs; the corpus replays minimized programs
// that once failed. Also tests of the tier itself: the text form, the guard pages, the checker.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <set>

#include "check.h"
#include "dead_code.h"
#include "driver.h"
#include "generator.h"
#include "inputs.h"
#include "kiln/api/compile.h"
#include "kiln/graph/interpreter.h"
#include "sensitivity.h"
#include "values.h"

namespace kiln::difftest {
namespace {

const std::string kCorpus = std::string(KILN_SOURCE_DIR) + "/tests/differential/corpus";

void report(const std::vector<Failure>& failures) {
  for (const auto& f : failures) {
    ADD_FAILURE() << f.result.kind << "\n" << f.result.report << "\nprogram:\n" << f.program.str();
  }
}

TEST(Differential, FastSlice) {
  std::vector<Program> programs;
  for (uint64_t s = 1; s <= 240; ++s) programs.push_back(generate_program(s, {}));
  for (uint64_t s = 0; s < 12; ++s) {
    GenOptions o;
    o.zero_divisors = true;
    programs.push_back(generate_program(10'000 + s, o));
  }
  for (uint64_t s = 0; s < 2; ++s) {
    GenOptions o;
    o.large = true;
    o.max_calls = 4;
    programs.push_back(generate_program(20'000 + s, o));
  }
  Driver driver(true);
  auto failures = driver.run_batched(programs, 30, 60);
  std::printf("fast slice: %zu programs in %zu checks, PyTorch reference %s, %zu failing\n", programs.size(),
              driver.checks(), driver.use_torch() ? "on" : "skipped (no .venv with torch 2.13)", failures.size());
  report(failures);
}

TEST(Differential, CorpusReplays) {
  auto corpus = load_corpus(kCorpus);
  if (corpus.empty()) GTEST_SKIP() << "no corpus programs in " << kCorpus;
  std::vector<Program> programs;
  for (const auto& [name, p] : corpus) programs.push_back(p);
  Driver driver(true);
  auto failures = driver.run_batched(programs, programs.size());
  std::set<std::string> failing;
  for (const auto& f : failures) failing.insert(f.program.str());
  for (const auto& [name, p] : corpus) {
    for (const auto& f : failures) {
      if (f.program.str() == p.str()) ADD_FAILURE() << name << ": " << f.result.kind << "\n" << f.result.report;
    }
  }
  std::printf("corpus: %zu programs in %zu checks, %zu failing\n", corpus.size(), driver.checks(), failures.size());
  // A failing merged batch whose programs all pass alone.
  for (const auto& f : failures) {
    bool named = false;
    for (const auto& [name, p] : corpus) named = named || f.program.str() == p.str();
    if (!named)
      ADD_FAILURE() << "the corpus merged into one program fails: " << f.result.kind << "\n" << f.result.report;
  }
}

TEST(DifferentialTier, TextFormRoundTrips) {
  std::vector<Program> programs;
  for (uint64_t s = 1; s <= 60; ++s) {
    GenOptions o;
    o.zero_divisors = s % 3 == 0;
    programs.push_back(generate_program(s, o));
    Program back = parse_program(programs.back().str());
    EXPECT_EQ(back.str(), programs.back().str());
    EXPECT_GE(programs.back().calls.size(), 1u) << programs.back().str();
  }
  Program merged = merge_programs(programs);
  EXPECT_EQ(parse_program(merged.str()).str(), merged.str());
  EXPECT_THROW(parse_program("v0 = nosuchop a0\noutput v0\n"), Error);
  EXPECT_THROW(parse_program("input a0 float32 [2] [1] 0 normal\noutput a0\n"), Error);
}

TEST(DifferentialTier, GeneratorReachesTheHardCases) {
  std::set<std::string> ops, fills;
  bool transposed = false, expanded = false, offset = false, empty = false, zero_d = false, twice = false;
  bool big_constant = false, negative_zero = false, overlapping = false, float_to_int = false, cmp_as_number = false;
  for (uint64_t s = 1; s <= 240; ++s) {
    Program p = generate_program(s, {});
    for (const auto& in : p.inputs) {
      fills.insert(in.fill);
      for (size_t d = 0; d + 1 < in.strides.size(); ++d) transposed |= in.strides[d] < in.strides[d + 1];
      for (size_t d = 0; d < in.strides.size(); ++d) expanded |= in.strides[d] == 0 && in.sizes[d] > 1;
      offset |= in.offset > 0;
      // overlapping reads: a dim of several elements steps less than the span of the dims inside it
      if (in.sizes.size() >= 2)
        overlapping |= in.sizes[0] > 1 && in.sizes[1] > 1 && in.strides[0] == 1 && in.strides[1] == 1;
      zero_d |= in.sizes.empty();
      for (int64_t n : in.sizes) empty |= n == 0;
    }
    std::set<std::string> floats, comparisons;
    for (const auto& in : p.inputs) {
      if (is_floating(in.dtype)) floats.insert(in.name);
    }
    for (const auto& c : p.calls) {
      ops.insert(c.op);
      if (c.op == "to" && floats.contains(c.args[0]) && !is_floating(*parse_dtype(c.args[1])) && c.args[1] != "bool")
        float_to_int = true;
      if (c.op == "gt") comparisons.insert(c.results[0]);
      if (c.op != "where" && c.op != "gt" && !comparisons.empty()) {
        for (const auto& a : c.args) cmp_as_number |= comparisons.contains(a);
      }
      if (c.args.size() >= 2 && c.args[0] == c.args[1]) twice = true;
      for (const auto& a : c.args) {
        big_constant |= a == "i:9007199254740993";
        negative_zero |= a == "f:-0.0";
        if (c.op == "cat" && a.front() == '[') {
          std::string inner = a.substr(1, a.size() - 2);
          std::string first = inner.substr(0, inner.find(','));
          twice |= inner.find(',' + first) != std::string::npos;
        }
      }
    }
  }
  EXPECT_TRUE(transposed && expanded && offset && empty && zero_d && twice && big_constant && negative_zero);
  EXPECT_TRUE(overlapping && float_to_int && cmp_as_number);
  for (const char* fill : {"normal", "special", "pos", "nonzero", "constant", "limits"})
    EXPECT_TRUE(fills.contains(fill)) << fill;
  for (const char* op : {"add",
                         "div",
                         "where",
                         "clamp",
                         "sum",
                         "mean",
                         "amax",
                         "amin",
                         "prod",
                         "var",
                         "var_mean",
                         "softmax",
                         "log_softmax",
                         "layer_norm",
                         "transpose",
                         "permute",
                         "slice",
                         "select",
                         "expand",
                         "unsqueeze",
                         "view",
                         "reshape",
                         "diagonal",
                         "cat",
                         "full",
                         "remainder",
                         "fmod",
                         "pow",
                         "matmul",
                         "linear",
                         "sdpa",
                         "std",
                         "argmax",
                         "max_dim",
                         "cumsum",
                         "any",
                         "flip",
                         "slice_scatter",
                         "select_scatter",
                         "arange",
                         "native_layer_norm"}) {
    EXPECT_TRUE(ops.contains(op)) << op;
  }
  GenOptions large;
  large.large = true;
  EXPECT_TRUE(is_large(generate_program(20'000, large)));
}

TEST(DifferentialTier, InputsAreFollowedByAGuardPage) {
  InputSpec spec{"a0", DType::Float32, {3, 5}, {1, 3}, 2, "special", 42};
  Tensor t = guarded_input(spec);
  EXPECT_EQ(t.strides().vec(), (std::vector<int64_t>{1, 3}));
  std::vector<uint8_t> bytes = input_bytes(spec);
  ASSERT_EQ(bytes.size(), 17u * 4);
  EXPECT_EQ(std::memcmp(t.storage()->data(), bytes.data(), bytes.size()), 0);
  const float* last = static_cast<const float*>(t.storage()->data()) + 16;
  EXPECT_EQ(std::memcmp(last, bytes.data() + 64, 4), 0);
  // One element past the storage is the guard page; the inputs themselves are read-only.
  EXPECT_DEATH({ std::printf("%f\n", static_cast<double>(last[1])); }, "");
  EXPECT_DEATH({ *const_cast<float*>(last) = 1.0f; }, "");
}

// A backend that is eager except that it adds 1e-3 to every float32 result, registered once as
// "difftest-wrong".
void register_wrong_backend() {
  static const bool registered = [] {
    register_backend("difftest-wrong",
                     Backend{trace::Level::Core, [](graph::Graph g, const std::vector<Tensor>&, const CompileOptions&) {
                               auto shared = std::make_shared<graph::Graph>(std::move(g));
                               return CompiledCallable([shared](const std::vector<Tensor>& in) {
                                 auto out = graph::interpret(*shared, in);
                                 for (auto& t : out) {
                                   if (t.dtype() == DType::Float32) t = add(t, Scalar(1e-3));
                                 }
                                 return out;
                               });
                             }});
    return true;
  }();
  (void)registered;
}

// The checker must reject the wrong backend; plain eager it must accept.
TEST(DifferentialTier, CheckerRejectsAWrongBackend) {
  register_wrong_backend();
  Program p = parse_program(
      "input a0 float32 [4,6] [6,1] 0 normal 7\n"
      "input a1 int64 [6] [1] 0 nonzero 8\n"
      "v0 = exp a0\n"
      "v1 = sum v0 [1] 0\n"
      "v2 = div a1 i:2 floor\n"
      "output v1 v2\n");
  EXPECT_TRUE(check_program(p, "", "eager").ok);
  Verdict v = check_program(p, "", "difftest-wrong");
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.kind, "values:compiled-vs-float64:sum") << v.detail;
  EXPECT_NE(v.detail.find("Mismatched elements: 4 / 4"), std::string::npos) << v.detail;
}

// A product whose terms cancel past float64's precision (1e30 + 1 - 1e30 is 0 or 1 by the order of
// addition) is not compared, as an ill-conditioned sum is not; a well-conditioned one is, and a
// backend that is off by 1e-3 fails there.
TEST(DifferentialTier, IllConditionedContractionsAreNotCompared) {
  register_wrong_backend();
  Program cancels = parse_program(
      "input a0 float32 [3,2] [2,1] 0 normal 7\n"
      "v0 = full [1] f:1e30 float32\n"
      "v1 = full [1] f:1 float32\n"
      "v2 = full [1] f:-1e30 float32\n"
      "v3 = cat [v0,v1,v2] 0\n"
      "v4 = unsqueeze v3 0\n"
      "v5 = full [3,2] f:1 float32\n"
      "v6 = add v5 a0\n"
      "v7 = matmul v4 v5\n"
      "output v7 v6\n");
  Verdict v = check_program(cancels, "", "difftest-wrong");
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find("not compared"), std::string::npos) << v.detail;
  Program fine = parse_program(
      "input a0 float32 [3,4] [4,1] 0 normal 7\n"
      "input a1 float32 [5,4] [4,1] 0 pos 8\n"
      "v0 = linear a0 a1 none\n"
      "output v0\n");
  EXPECT_TRUE(check_program(fine, "", "eager").ok);
  v = check_program(fine, "", "difftest-wrong");
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.kind, "values:compiled-vs-float64:linear") << v.detail;
}

// atanh of a cumsum of a softmax reads a value within an ulp of its pole at 1, where two correct
// roundings give 18.7 and inf: not compared (exemptions.h, edge_within_a_rounding); atanh of half
// the softmax is, and the wrong backend fails there.
TEST(DifferentialTier, PolesWithinARoundingAreNotCompared) {
  register_wrong_backend();
  const std::string softmax_rows =
      "input a0 float32 [3,5] [5,1] 0 normal 7\n"
      "v0 = softmax a0 1\n";
  Verdict v =
      check_program(parse_program(softmax_rows + "v1 = cumsum v0 1\nv2 = atanh v1\noutput v2\n"), "", "difftest-wrong");
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_NE(v.detail.find("not compared"), std::string::npos) << v.detail;
  Program halved = parse_program(softmax_rows + "v1 = mul v0 f:0.5\nv2 = atanh v1\noutput v2\n");
  EXPECT_TRUE(check_program(halved, "", "eager").ok);
  v = check_program(halved, "", "difftest-wrong");
  EXPECT_FALSE(v.ok);
  EXPECT_EQ(v.kind, "values:compiled-vs-float64:atanh") << v.detail;
}

// Compiled for the GPU, a math function's last bits are CUDA's, not eager's: math_library_slack
// gives each output what a move of every such result by its error bound moves it by. atanh of an
// erf within 4e-8 of 1 magnifies four float32 ulps of the erf past 1; an exp read directly does not.
TEST(DifferentialTier, MathLibrarySlackFollowsIllConditionedReaders) {
  Program p = parse_program(
      "input a0 float32 [4,8] [8,1] 0 normal 5\n"
      "v0 = mul a0 f:0.01\n"
      "v1 = add v0 f:3.9\n"
      "v2 = erf v1\n"
      "v3 = atanh v2\n"
      "v4 = exp v0\n"
      "output v3 v4\n");
  std::vector<Tensor> inputs, wide;
  for (const auto& spec : p.inputs) inputs.push_back(guarded_input(spec));
  for (const auto& t : inputs) wide.push_back(widened(t));
  std::vector<Tensor> slack = math_library_slack(p, inputs, wide);
  ASSERT_EQ(slack.size(), 2u);
  ASSERT_TRUE(slack[0].defined() && slack[1].defined());
  Values poles = read_values(slack[0].contiguous()), exps = read_values(slack[1].contiguous());
  EXPECT_GT(*std::max_element(poles.f.begin(), poles.f.end()), 0.1);  // atanh's outputs are near 9
  EXPECT_LT(*std::max_element(exps.f.begin(), exps.f.end()), 1e-5);   // exp's near 1: 4 ulps, 5e-7
  EXPECT_GT(*std::max_element(exps.f.begin(), exps.f.end()), 0.0);
}

// An integer division read only by a call with an empty result (a clamp broadcast to [0]) is
// computed nowhere in compiled code: the rewrite that reruns eager makes its zero divisors 1. Read by
// a call with elements, it is left alone, and eager's error stands.
TEST(DifferentialTier, DivisionReadOnlyByAnEmptyResultIsDead) {
  auto program = [](const std::string& bound) {
    return parse_program(bound +
                         "input a0 int64 [1] [1] 0 normal 3\n"
                         "v0 = full [1] i:0 int64\n"
                         "v1 = fmod a0 v0\n"
                         "v2 = clamp v1 a1 none\n"
                         "output v2\n");
  };
  Program empty_reader = program("input a1 int64 [0] [1] 0 normal 4\n");
  Program rewritten = divide_only_read_elements(empty_reader);
  EXPECT_NE(rewritten.calls, empty_reader.calls);
  EXPECT_NE(rewritten.str().find("where"), std::string::npos) << rewritten.str();
  Program full_reader = program("input a1 int64 [4] [1] 0 normal 4\n");
  EXPECT_EQ(divide_only_read_elements(full_reader).calls, full_reader.calls);
}

TEST(DifferentialTier, BothRaisingIsAgreement) {
  Program p = parse_program(
      "input a0 int64 [3] [1] 0 normal 1\n"
      "v0 = full [3] i:0 int64\n"
      "v1 = remainder a0 v0\n"
      "output v1\n");
  Verdict v = check_program(p, "", "eager");
  EXPECT_TRUE(v.ok) << v.detail;
  EXPECT_TRUE(v.raised);
}

}  // namespace
}  // namespace kiln::difftest
