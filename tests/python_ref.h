// The Python interpreter with PyTorch that tests may use as a reference: .venv/bin/python, created by
// scripts/setup.sh python (make test does) with the pinned versions of scripts/requirements.txt. The
// environment variable KILN_PYTHON overrides the path configured in tests/CMakeLists.txt. A test that
// needs it starts with KILN_REQUIRE_PYTHON(var), which skips the test, saying why, when it is absent.
#pragma once

#include <gtest/gtest.h>

#include <string>

namespace kiln::testing {

// The configured path (CMake's KILN_PYTHON), whether or not it exists.
std::string configured_python();
// $KILN_PYTHON if set, else the configured path; "" unless that is an executable file.
std::string reference_python();
// scripts/requirements.txt in the source tree.
std::string python_requirements_path();

struct PythonRun {
  int status;
  std::string out;  // stdout and stderr together
};
// Runs `python -c code`; `code` must not contain a single quote.
PythonRun run_python(const std::string& python, const std::string& code);

}  // namespace kiln::testing

// Declares `std::string var`, the interpreter, or skips the test when there is none.
#define KILN_REQUIRE_PYTHON(var)                                                                    \
  std::string var = ::kiln::testing::reference_python();                                            \
  if (var.empty()) {                                                                                \
    GTEST_SKIP() << "no Python with PyTorch at '" << ::kiln::testing::configured_python()           \
                 << "' (nor in $KILN_PYTHON): scripts/setup.sh python creates it (make test does)"; \
  }
