#include "kiln/api/package.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "kiln/import/npy.h"
#include "kiln/import/zip.h"
#include "kiln/import/zip_writer.h"
#include "scoped_env.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

const std::string kFixtures = std::string(KILN_TEST_DATA) + "/../models/fixtures/";

std::string temp(const std::string& name) {
  return (fs::temp_directory_path() / (name + "_" + std::to_string(getpid()) + ".kiln")).string();
}

float max_difference(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.sizes().shape(), b.sizes().shape());
  Tensor x = a.contiguous(), y = b.contiguous();
  float worst = 0;
  for (int64_t i = 0; i < x.numel(); ++i) {
    worst = std::max(worst, std::abs(x.data_ptr<float>()[i] - y.data_ptr<float>()[i]));
  }
  return worst;
}

using testing::ScopedEnv;

TEST(Package, CompiledOnceThenLoadedAndRunWithoutACompiler) {
  for (const char* name : {"mlp", "cnn", "gpt_block"}) {
    std::string path = temp(name);
    Model model = load(kFixtures + name + ".pt2");
    std::vector<std::string> stages;
    compile_package(model, path, {.compile = {}, .progress = [&](const std::string& s) { stages.push_back(s); }});
    ASSERT_GE(stages.size(), 4u);
    EXPECT_EQ(stages.back().rfind("wrote ", 0), 0u) << stages.back();

    Tensor x = read_npy(kFixtures + name + "/input_0.npy");
    Tensor expected = read_npy(kFixtures + name + "/output_0.npy");
    // No C++ compiler: loading a package must not need one.
    ScopedEnv no_compiler("CXX", "/nonexistent/c++");
    Package p = load_package(path);
    EXPECT_EQ(p.input_names(), model.input_names());
    std::vector<Tensor> out = p.run({x});
    ASSERT_EQ(out.size(), 1u);
    EXPECT_LT(max_difference(out[0], expected), 1e-4f) << name;
    // Runs again (the memory plan's slots are reused) with the same answer.
    EXPECT_EQ(max_difference(p.run({x})[0], out[0]), 0.0f) << name;
    // An input laid out otherwise (here: a view over a buffer with the dims reversed) is taken in the
    // exported layout, not refused.
    std::vector<int64_t> reversed;
    for (int64_t d = x.dim() - 1; d >= 0; --d) reversed.push_back(d);
    Tensor transposed = x.permute(reversed).contiguous().permute(reversed);
    ASSERT_NE(transposed.strides().shape(), x.strides().shape());
    EXPECT_EQ(max_difference(p.run({transposed})[0], out[0]), 0.0f) << name;
    fs::remove(path);
  }
}

// The package's records, to write it again with one changed.
std::vector<std::pair<std::string, std::string>> records(const std::string& path) {
  ZipArchive z = ZipArchive::open(path);
  std::vector<std::pair<std::string, std::string>> r;
  for (const auto& e : z.entries()) r.emplace_back(e.name, std::string(z.read(e).text()));
  return r;
}

void write(const std::string& path, const std::vector<std::pair<std::string, std::string>>& r) {
  ZipWriter w(path);
  for (const auto& [name, data] : r) w.add(name, std::string_view(data));
  w.finish();
}

std::string load_error(const std::string& path) {
  try {
    load_package(path);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Package, RefusesAnotherBuildAnotherCpuAndChangedCode) {
  std::string good = temp("mlp_good"), bad = temp("mlp_bad");
  compile_package(load(kFixtures + "mlp.pt2"), good);
  auto edit = [&](const std::string& record, const std::string& from, const std::string& to) {
    auto r = records(good);
    for (auto& [name, data] : r) {
      if (name != "kiln/" + record) continue;
      size_t at = data.find(from);
      EXPECT_NE(at, std::string::npos) << from;
      if (at != std::string::npos) data.replace(at, from.size(), to);
    }
    write(bad, r);
    return load_error(bad);
  };
  EXPECT_EQ(load_error(good), "");
  std::string e = edit("manifest.json", "\"kiln_build\": \"", "\"kiln_build\": \"0ld");
  EXPECT_NE(e.find("compiled by kiln build 0ld"), std::string::npos) << e;
  e = edit("manifest.json", "\"isa\": \"", "\"isa\": \"avx9999 ");
  EXPECT_NE(e.find("compiled for another CPU: this machine lacks the instruction set extensions avx9999"),
            std::string::npos)
      << e;
  e = edit("graph.txt", "prims::lt(", "prims::gt(");
  EXPECT_NE(e.find("the code this machine generates for the package's graph differs"), std::string::npos) << e;
  e = edit("manifest.json", "\"format_version\": 1", "\"format_version\": 2");
  EXPECT_NE(e.find("package format kiln-package version 2"), std::string::npos) << e;
  write(bad, {{"kiln/other", "x"}});
  EXPECT_NE(load_error(bad).find("not a kiln package"), std::string::npos);
  fs::remove(good);
  fs::remove(bad);
}

}  // namespace
}  // namespace kiln
