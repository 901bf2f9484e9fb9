// Models exported by PyTorch 2.13 (tests/models/export_models.py) loaded from their .pt2 archives
// and run by kiln, eagerly, compiled and from an ahead-of-time package, against PyTorch's own
// outputs saved beside them. The small
// fixtures are committed (tests/models/fixtures); the large ones are generated into the build tree
// by the kiln_models_export test (a CTest fixture), and a missing one fails here, naming the
// command that makes it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "kiln/api/model.h"
#include "kiln/api/package.h"
#include "kiln/import/json.h"
#include "kiln/import/npy.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

struct Fixture {
  std::string name;
  fs::path dir;  // holds NAME.pt2 (and variants) and NAME/{manifest.json, input_i.npy, output_i.npy}
};

std::string read_text(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Where the fixture lives: committed, or generated into the build tree.
std::optional<Fixture> find_fixture(const std::string& name) {
  for (const char* dir : {KILN_MODEL_FIXTURES, KILN_MODEL_FIXTURES_BUILD}) {
    if (fs::exists(fs::path(dir) / name / "manifest.json")) return Fixture{name, dir};
  }
  return std::nullopt;
}

// Elementwise |actual - expected| <= atol + rtol * |expected| (integers and booleans: equal), NaN
// where the other is NaN; the message names the worst element.
::testing::AssertionResult close(const Tensor& actual, const Tensor& expected, double rtol, double atol) {
  if (actual.dtype() != expected.dtype() || actual.sizes().shape() != expected.sizes().shape()) {
    return ::testing::AssertionFailure() << "kiln gives " << actual.describe() << ", PyTorch " << expected.describe();
  }
  if (!is_floating(expected.dtype())) rtol = atol = 0;
  Tensor a = actual.to(DType::Float64).contiguous();
  Tensor e = expected.to(DType::Float64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  int64_t bad = 0, worst = -1;
  double worst_excess = 0;
  for (int64_t i = 0; i < e.numel(); ++i) {
    if (std::isnan(pa[i]) || std::isnan(pe[i])) {
      if (std::isnan(pa[i]) != std::isnan(pe[i])) ++bad, worst = worst < 0 ? i : worst;
      continue;
    }
    double excess = std::abs(pa[i] - pe[i]) - (atol + rtol * std::abs(pe[i]));
    if (pa[i] == pe[i]) excess = 0;  // equal infinities
    if (excess > 0) ++bad;
    if (excess > worst_excess) worst_excess = excess, worst = i;
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << bad << " of " << e.numel() << " elements outside rtol " << rtol << " atol "
                                       << atol << "; worst at flat index " << worst << ": kiln " << pa[worst]
                                       << ", PyTorch " << pe[worst];
}

void check_model(const std::string& name, const std::string& archive_key) {
  std::optional<Fixture> f = find_fixture(name);
  ASSERT_TRUE(f) << "fixture '" << name << "' is missing from " << KILN_MODEL_FIXTURES << " and "
                 << KILN_MODEL_FIXTURES_BUILD << ": run `ctest -R kiln_model_fixtures` in the build tree (it runs "
                 << "tests/models/export_models.py with the venv's PyTorch)";
  fs::path dir = f->dir / name;
  json::Value manifest = json::parse(read_text(dir / "manifest.json"), (dir / "manifest.json").string());
  const json::Value* archive = manifest.at("archives").find(archive_key);
  if (!archive) GTEST_SKIP() << name << " has no '" << archive_key << "' archive";
  double rtol = manifest.at("float32_tolerance").at("rtol").as_double();
  double atol = manifest.at("float32_tolerance").at("atol").as_double();

  Model model = load((f->dir / archive->as_string()).string());
  std::vector<Tensor> inputs;
  std::vector<std::string> names;
  for (const auto& in : manifest.at("inputs").as_array()) {
    inputs.push_back(read_npy((dir / in.at("file").as_string()).string()));
    names.push_back(in.at("name").as_string());
  }
  EXPECT_EQ(model.input_names(), names);
  std::vector<Tensor> expected;
  for (const auto& out : manifest.at("outputs").as_array()) {
    expected.push_back(read_npy((dir / out.at("file").as_string()).string()));
  }
  ASSERT_EQ(model.num_outputs(), expected.size());

  std::vector<Tensor> eager = model.run(inputs);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(close(eager[i], expected[i], rtol, atol)) << name << " (" << archive_key << ") eager output " << i;
  }
  CompiledModel compiled = model.compile();
  std::vector<Tensor> fast = compiled.run(inputs);
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(close(fast[i], expected[i], rtol, atol)) << name << " (" << archive_key << ") compiled output " << i;
  }
  // The same through the command line, as a user runs it: kiln run, eager and --compile, and kiln
  // compile then kiln run MODEL.kiln; each writes its outputs as .npy.
  fs::path work = fs::temp_directory_path() / (name + "_" + archive_key + "_cli_" + std::to_string(getpid()));
  std::string archive_path = (f->dir / archive->as_string()).string();
  std::string input_args;
  for (const auto& in : manifest.at("inputs").as_array()) {
    input_args += " --input " + in.at("name").as_string() + "=" + (dir / in.at("file").as_string()).string();
  }
  std::string kiln_package = (work / "model.kiln").string();
  const std::vector<std::pair<std::string, std::string>> runs = {
      {"eager", "run " + archive_path + input_args},
      {"compiled", "run " + archive_path + input_args + " --compile"},
      {"package",
       "compile " + archive_path + " -o " + kiln_package + " && " + KILN_CLI + " run " + kiln_package + input_args}};
  for (const auto& [mode, command] : runs) {
    fs::path out = work / mode;
    std::string line = std::string(KILN_CLI) + " " + command + " --output-dir " + out.string() + " > " +
                       (work / (mode + ".log")).string() + " 2>&1";
    fs::create_directories(work);
    ASSERT_EQ(std::system(line.c_str()), 0) << line << "\n" << read_text(work / (mode + ".log"));
    for (size_t i = 0; i < expected.size(); ++i) {
      Tensor got = read_npy((out / ("output_" + std::to_string(i) + ".npy")).string());
      EXPECT_TRUE(close(got, expected[i], rtol, atol))
          << name << " (" << archive_key << ") kiln " << mode << " output " << i;
    }
  }
  fs::remove_all(work);

  // Ahead of time: the package runs what the compiled model ran (its kernels come from the same cache).
  std::string package =
      (fs::temp_directory_path() / (name + "_" + archive_key + "_" + std::to_string(getpid()) + ".kiln")).string();
  compile_package(model, package);
  std::vector<Tensor> packaged = load_package(package).run(inputs);
  fs::remove(package);
  ASSERT_EQ(packaged.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_TRUE(close(packaged[i], expected[i], rtol, atol)) << name << " (" << archive_key << ") package output " << i;
  }
}

class Pt2Model : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

TEST_P(Pt2Model, MatchesPyTorchEagerAndCompiled) { check_model(GetParam().first, GetParam().second); }

INSTANTIATE_TEST_SUITE_P(Committed, Pt2Model,
                         ::testing::Values(std::pair{"mlp", "core_aten"}, std::pair{"mlp", "aten"},
                                           std::pair{"mlp", "legacy_2_7"}, std::pair{"cnn", "core_aten"},
                                           std::pair{"cnn", "aten"},
                                           std::pair{"transformer_encoder_layer", "core_aten"},
                                           std::pair{"transformer_encoder_layer", "aten"},
                                           std::pair{"gpt_block", "core_aten"}, std::pair{"gpt_block", "aten"}),
                         [](const auto& info) { return std::string(info.param.first) + "_" + info.param.second; });

INSTANTIATE_TEST_SUITE_P(Generated, Pt2Model,
                         ::testing::Values(std::pair{"resnet18", "core_aten"}, std::pair{"resnet18", "aten"},
                                           std::pair{"mobilenet_v3_small", "core_aten"},
                                           std::pair{"mobilenet_v3_small", "aten"}, std::pair{"gpt2", "core_aten"},
                                           std::pair{"gpt2", "aten"}, std::pair{"bert", "core_aten"},
                                           std::pair{"bert", "aten"}, std::pair{"vit", "core_aten"},
                                           std::pair{"vit", "aten"}),
                         [](const auto& info) { return std::string(info.param.first) + "_" + info.param.second; });

// GPT-2 ties its token embedding and its output projection: one stored record, one storage here.
TEST(Pt2Models, TiedWeightsShareOneStorage) {
  std::optional<Fixture> f = find_fixture("gpt2");
  ASSERT_TRUE(f) << "fixture 'gpt2' is missing: run `ctest -R kiln_models_export` in the build tree";
  Model model = load((f->dir / "gpt2.pt2").string());
  std::map<std::string, Tensor> by_name;
  for (size_t i = 0; i < model.program().inputs.size(); ++i) {
    by_name[model.program().inputs[i].target] = model.bound_inputs()[i];
  }
  ASSERT_TRUE(by_name.count("model.transformer.wte.weight") && by_name.count("model.lm_head.weight"));
  EXPECT_EQ(by_name["model.transformer.wte.weight"].storage().get(), by_name["model.lm_head.weight"].storage().get());
}

}  // namespace
}  // namespace kiln
