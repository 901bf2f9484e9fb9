// The PyTorch reference that tests compare against: the interpreter tests find (tests/python_ref.h) runs,
// and has exactly the versions pinned in scripts/requirements.txt, a CPU build of torch. Skipped, with a
// message, where the venv is absent.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <string>

#include "python_ref.h"

namespace {

// "name==version" lines of scripts/requirements.txt.
std::map<std::string, std::string> pinned_versions() {
  std::ifstream in(kiln::testing::python_requirements_path());
  std::map<std::string, std::string> pins;
  std::string line;
  while (std::getline(in, line)) {
    size_t eq = line.find("==");
    if (line.empty() || line[0] == '#' || eq == std::string::npos) continue;
    pins[line.substr(0, eq)] = line.substr(eq + 2);
  }
  return pins;
}

TEST(PythonRef, RequirementsPinTorchAndNumpy) {
  auto pins = pinned_versions();
  EXPECT_EQ(pins.count("torch"), 1u);
  EXPECT_EQ(pins.count("numpy"), 1u);
}

TEST(PythonRef, VenvHasThePinnedCpuTorchAndNumpy) {
  KILN_REQUIRE_PYTHON(python);
  auto r = kiln::testing::run_python(
      python, "import torch, numpy; print(torch.__version__.split(\"+\")[0], numpy.__version__, torch.version.cuda)");
  ASSERT_EQ(r.status, 0) << r.out;
  auto pins = pinned_versions();
  EXPECT_EQ(r.out, pins["torch"] + " " + pins["numpy"] + " None\n");
}

TEST(PythonRef, TorchComputesAsAReference) {
  KILN_REQUIRE_PYTHON(python);
  auto r = kiln::testing::run_python(python,
                                     "import torch; x = torch.tensor([0.0, 1.0], dtype=torch.float64); "
                                     "print([round(v, 12) for v in torch.softmax(x, 0).tolist()])");
  ASSERT_EQ(r.status, 0) << r.out;
  // softmax([0, 1]) = [1 / (1 + e), e / (1 + e)]
  EXPECT_EQ(r.out, "[0.26894142137, 0.73105857863]\n");
}

}  // namespace
