// Where tests find Python with PyTorch (python_ref.h). Only this file is compiled with the paths, so
// that changing them rebuilds one file, not every test.
#include "python_ref.h"

#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>

namespace kiln::testing {

std::string configured_python() { return KILN_PYTHON; }

std::string reference_python() {
  const char* env = std::getenv("KILN_PYTHON");
  std::string path = env && *env ? env : KILN_PYTHON;
  return !path.empty() && access(path.c_str(), X_OK) == 0 ? path : "";
}

std::string python_requirements_path() { return KILN_SOURCE_DIR "/scripts/requirements.txt"; }

PythonRun run_python(const std::string& python, const std::string& code) {
  std::string cmd = python + " -c '" + code + "' 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, "popen failed: " + cmd};
  std::string out;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

}  // namespace kiln::testing
