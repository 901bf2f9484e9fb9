// The `kiln` command line, run as a user would: `kiln ops --format tsv` must list every Core ATen op
// with its exact schema; formats, filters and usage errors behave as documented.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "core_aten_table.h"
#include "kiln/core/device_hooks.h"
#include "kiln/import/npy.h"

namespace {

struct CliRun {
  int status;
  std::string out;
};

CliRun run(const std::string& args) {
  std::string cmd = std::string(KILN_CLI) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

TEST(Cli, OpsTsvListsEveryCoreOpWithExactSchemaAndTags) {
  CliRun r = run("ops --format tsv --tag core");
  ASSERT_EQ(r.status, 0);
  std::map<std::string, std::string> listed;
  std::istringstream lines(r.out);
  std::string line;
  std::getline(lines, line);
  EXPECT_EQ(line, "name\tschema\ttags\tkind\tdevices");
  while (std::getline(lines, line)) {
    std::istringstream fields(line);
    std::string name, schema, tags;
    std::getline(fields, name, '\t');
    std::getline(fields, schema, '\t');
    std::getline(fields, tags, '\t');
    EXPECT_NE(tags.find("core"), std::string::npos) << line;
    listed[name] = schema;
  }
  auto table = kiln::testing::core_aten_table();
  ASSERT_EQ(table.size(), 193u);
  for (const auto& [name, schema] : table) EXPECT_EQ(listed["aten::" + name], schema) << name;
  EXPECT_EQ(listed.size(), 193u);
}

TEST(Cli, OpsShowsKernelsKindsAndFormats) {
  CliRun tsv = run("ops --format tsv");
  EXPECT_NE(tsv.out.find("aten::exp\texp(Tensor self) -> Tensor\tcore pointwise\tleaf\tMeta,CPU"), std::string::npos);
  EXPECT_NE(
      tsv.out.find("aten::view\tview(Tensor(a) self, SymInt[] size) -> Tensor(a)\tcore view\tleaf\tMeta,CPU,CUDA"),
      std::string::npos);
  EXPECT_NE(tsv.out.find("aten::zeros\t"), std::string::npos);
  EXPECT_NE(tsv.out.find("\tcompound\tany (decomposed)"), std::string::npos);
  EXPECT_NE(tsv.out.find("_scaled_dot_product_flash_attention_for_cpu\t"), std::string::npos);
  EXPECT_NE(tsv.out.find("\tcompound\tMeta,CPU; any (decomposed)"), std::string::npos);
  CliRun md = run("ops --format md --kind compound");
  EXPECT_EQ(md.status, 0);
  EXPECT_EQ(md.out.rfind("| name | schema |", 0), 0u);
  EXPECT_EQ(md.out.find("aten::exp`"), std::string::npos);
  CliRun table = run("ops --tag reduction");
  EXPECT_NE(table.out.find("aten::amax"), std::string::npos);
  EXPECT_EQ(table.out.find("aten::exp "), std::string::npos);
}

// The coverage totals: a kernel or decomposition lost (or a compiled path) fails here; a new one
// raises the count to update (docs/opinfo_replay.md lists what is missing).
TEST(Cli, OpsCoverageTotals) {
  CliRun r = run("ops --coverage");
  ASSERT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Core ATen overloads: 193; eager: 193; compiled: 191\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("aten::index_select"), std::string::npos);
  // resize_ compiles as its functional form (a trace records aten::resize).
  EXPECT_NE(r.out.find("aten::resize_                                 kernel         functionalized"),
            std::string::npos);
}

// With --samples, the replay's results beside a recording: passed/total per overload, eager and compiled.
TEST(Cli, OpsCoverageWithReplayResults) {
  auto dir = std::filesystem::temp_directory_path() / ("kiln_cli_samples_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "replay_eager.txt") << "aten::abs 40 40\naten::convolution 99 100\n";
  std::ofstream(dir / "replay_compiled.txt") << "aten::abs 8 8\n";
  std::ofstream(dir / "derivatives.txt") << "aten::abs grad aten::mul.Tensor aten::sign\n"
                                         << "aten::convolution grad aten::convolution_backward aten::no_such_op\n"
                                         << "aten::eq.Tensor none\naten::resize_ error RuntimeError: cannot\n";
  CliRun r = run("ops --coverage --samples " + dir.string());
  auto line = [&](const std::string& op) {
    size_t at = r.out.find("\n" + op + " ");
    return at == std::string::npos ? std::string() : r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
  };
  EXPECT_TRUE(line("aten::abs").ends_with(" yes")) << line("aten::abs");
  EXPECT_TRUE(line("aten::convolution").ends_with(" no: aten::no_such_op")) << line("aten::convolution");
  EXPECT_TRUE(line("aten::eq.Tensor").ends_with(" n/a")) << line("aten::eq.Tensor");
  EXPECT_TRUE(line("aten::resize_").ends_with(" error")) << line("aten::resize_");
  EXPECT_TRUE(line("aten::exp").ends_with(" -")) << line("aten::exp");
  EXPECT_NE(r.out.find("Differentiable through kiln: 1 of the 2 PyTorch differentiates\n"), std::string::npos) << r.out;
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(
      r.out.find("aten::abs                                     kernel         decomposed     40/40            8/8"),
      std::string::npos)
      << r.out;
  EXPECT_NE(
      r.out.find("aten::convolution                             kernel         extern         99/100           -"),
      std::string::npos);
  std::filesystem::remove_all(dir);
  EXPECT_EQ(run("ops --coverage --samples " + dir.string()).status, 1);  // no results there
  EXPECT_EQ(run("ops --coverage --tag core").status, 2);
}

TEST(Cli, UsageErrorsExitWithTwo) {
  EXPECT_EQ(run("ops --format xml").status, 2);
  EXPECT_EQ(run("ops --tag shiny").status, 2);
  EXPECT_EQ(run("ops --tag").status, 2);
  EXPECT_EQ(run("frobnicate").status, 2);
  CliRun help = run("--help");
  EXPECT_EQ(help.status, 0);
  EXPECT_NE(help.out.find("usage: kiln"), std::string::npos);
  EXPECT_NE(help.out.find("KILN_CUDA_PROFILE=1"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("KILN_CUBLASLT_CANDIDATES=N"), std::string::npos) << help.out;
}

// The version, and the CUDA driver and devices found, or why there are none ("no CUDA device: ...").
TEST(Cli, VersionSaysWhichCudaDriverWasLoaded) {
  CliRun r = run("--version");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_EQ(r.out.rfind("kiln 0.", 0), 0u) << r.out;
  bool found = r.out.find("cuda: CUDA driver") != std::string::npos;
  bool refused = r.out.find("cuda: no CUDA device") != std::string::npos;
  EXPECT_TRUE(found || refused) << r.out;
}

TEST(Cli, DemoRuns) {
  CliRun r = run("demo");
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("each row sums to 1"), std::string::npos);
  EXPECT_NE(r.out.find("tensor([1.0000, 1.0000, 1.0000, 1.0000])"), std::string::npos);
  EXPECT_NE(r.out.find("mm: mat1 and mat2 shapes cannot be multiplied"), std::string::npos);
  EXPECT_NE(r.out.find("ms compiled vs"), std::string::npos) << r.out;
}

}  // namespace

namespace {

// Snapshots: `kiln explain` output is reviewed in diffs. Regenerate after an intended change with
//   for m in mlp ln_gelu_mlp attention convnet; do build/kiln explain $m > tests/data/explain_$m.txt; done
TEST(Cli, ExplainMatchesSnapshots) {
  for (const char* model : {"mlp", "ln_gelu_mlp", "attention", "convnet"}) {
    CliRun r = run(std::string("explain ") + model);
    EXPECT_EQ(r.status, 0) << model;
    std::ifstream in(std::string(KILN_TEST_DATA) + "/explain_" + model + ".txt");
    std::stringstream want;
    want << in.rdbuf();
    EXPECT_EQ(r.out, want.str()) << model;
  }
  EXPECT_EQ(run("explain").status, 2);
  EXPECT_EQ(run("explain resnet").status, 2);
}

// With --cuda, the CUDA target's kernels (no GPU needed): each with its launch configuration.
TEST(Cli, ExplainShowsTheCudaKernels) {
  CliRun r = run("explain ln_gelu_mlp --cuda");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("== generated CUDA (sm_90"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("extern \"C\" __global__ void __launch_bounds__("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("// launch kernel0_"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("#pragma omp"), std::string::npos) << r.out;
  CliRun arch = run("explain mlp --cuda sm_80");
  ASSERT_EQ(arch.status, 0) << arch.out;
  EXPECT_NE(arch.out.find("== generated CUDA (sm_80"), std::string::npos) << arch.out;
}

}  // namespace

// `kiln run` on a model exported by PyTorch (tests/models/fixtures): by name and by position,
// eager and compiled, with the outputs written as .npy and equal to PyTorch's.
namespace run_command {

const std::string kFixtures = std::string(KILN_TEST_DATA) + "/../models/fixtures";

TEST(CliRun, RunsAnExportedModelAndWritesItsOutputs) {
  std::filesystem::path out = std::filesystem::temp_directory_path() / ("kiln_cli_run_" + std::to_string(getpid()));
  for (const char* mode : {"", " --compile"}) {
    std::filesystem::remove_all(out);
    CliRun r = run("run " + kFixtures + "/mlp.pt2 --input x=" + kFixtures + "/mlp/input_0.npy --repeat 3" + mode +
                   " --output-dir " + out.string());
    ASSERT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("1 inputs (x), 1 outputs"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("output_0 (addmm_1): float32[4, 8] sum="), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("over 3 runs"), std::string::npos) << r.out;
    kiln::Tensor got = kiln::read_npy((out / "output_0.npy").string());
    kiln::Tensor want = kiln::read_npy(kFixtures + "/mlp/output_0.npy");
    ASSERT_EQ(got.sizes().shape(), want.sizes().shape());
    const float* g = got.data_ptr<float>();
    const float* w = want.data_ptr<float>();
    for (int64_t i = 0; i < want.numel(); ++i) EXPECT_NEAR(g[i], w[i], 1e-5 + 1.3e-6 * std::abs(w[i])) << mode << i;
  }
  std::filesystem::remove_all(out);
  // Positional inputs and random ones run too.
  EXPECT_EQ(run("run " + kFixtures + "/cnn.pt2 --input " + kFixtures + "/cnn/input_0.npy").status, 0);
  CliRun random = run("run " + kFixtures + "/gpt_block.pt2 --random --seed 3");
  EXPECT_EQ(random.status, 0) << random.out;
}

TEST(CliRun, BadInputsAndUsageAreReported) {
  CliRun r = run("run " + kFixtures + "/mlp.pt2 --input y=" + kFixtures + "/mlp/input_0.npy");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("no input named 'y' (the inputs: x)"), std::string::npos) << r.out;
  r = run("run " + kFixtures + "/mlp.pt2");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("input 'x' is not given (--input x=FILE.npy, or --random)"), std::string::npos) << r.out;
  r = run("run " + kFixtures + "/mlp.pt2 --input x=" + kFixtures + "/cnn/input_0.npy");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("input 'x' is float32[2, 3, 16, 16] on cpu; the model was exported for float32[4, 16]"),
            std::string::npos)
      << r.out;
  r = run("run " + kFixtures + "/mlp/manifest.json --random");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.out.find("manifest.json"), std::string::npos) << r.out;
  EXPECT_EQ(run("run").status, 2);
  EXPECT_EQ(run("run " + kFixtures + "/mlp.pt2 --repeat 0").status, 2);
  EXPECT_EQ(run("run " + kFixtures + "/mlp.pt2 --bogus").status, 2);
}

// --device cuda runs compiled code on the GPU: without --compile it is a usage error; without a GPU
// the error says there is no CUDA device.
TEST(CliRun, DeviceCudaNeedsCompileAndAGpu) {
  const std::string mlp = "run " + kFixtures + "/mlp.pt2 --input x=" + kFixtures + "/mlp/input_0.npy";
  CliRun r = run(mlp + " --device cuda");
  EXPECT_EQ(r.status, 2) << r.out;
  EXPECT_NE(r.out.find("--device cuda:0 runs compiled code: add --compile"), std::string::npos) << r.out;
  EXPECT_EQ(run(mlp + " --compile --device tpu").status, 2);
  r = run(mlp + " --compile --device cuda");
  if (kiln::device_available(kiln::DeviceType::CUDA)) {
    EXPECT_EQ(r.status, 0) << r.out;
    EXPECT_NE(r.out.find("output_0 (addmm_1): float32[4, 8] sum="), std::string::npos) << r.out;
  } else {
    EXPECT_EQ(r.status, 1) << r.out;
    EXPECT_NE(r.out.find("no CUDA device"), std::string::npos) << r.out;
  }
}

TEST(CliRun, CompilesAPackageAndRunsIt) {
  std::string package =
      (std::filesystem::temp_directory_path() / ("kiln_cli_" + std::to_string(getpid()) + ".kiln")).string();
  CliRun c = run("compile " + kFixtures + "/cnn.pt2 -o " + package);
  ASSERT_EQ(c.status, 0) << c.out;
  EXPECT_NE(c.out.find("tracing to the prims level"), std::string::npos) << c.out;
  EXPECT_NE(c.out.find("wrote " + package), std::string::npos) << c.out;
  CliRun r = run("run " + package + " --input " + kFixtures + "/cnn/input_0.npy --repeat 2");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("output_0 (addmm): float32[2, 10]"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("package: median"), std::string::npos) << r.out;
  EXPECT_EQ(run("run " + package + " --random --compile").status, 2);
  EXPECT_EQ(run("compile " + kFixtures + "/cnn.pt2").status, 2);
  std::filesystem::remove(package);
}

TEST(CliRun, ExplainsAnExportedModel) {
  // The ATen-dialect MLP: loaded as exported (linear), decomposed by kiln's tables at the core level.
  CliRun r = run("explain " + kFixtures + "/mlp_aten.pt2");
  ASSERT_EQ(r.status, 0) << r.out;
  for (const char* part : {"== exported: the graph as loaded", "aten::linear(%x, %p_fc1_weight, %p_fc1_bias)",
                           "== core: Core ATen only", "aten::addmm", "== prims:", "== compiled:", "== generated C++"}) {
    EXPECT_NE(r.out.find(part), std::string::npos) << part << "\n" << r.out;
  }
  EXPECT_EQ(run("explain " + kFixtures + "/missing.pt2").status, 1);
}

}  // namespace run_command
