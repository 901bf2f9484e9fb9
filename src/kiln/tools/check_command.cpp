// `kiln check DIR`: replays a program the check mode reduced (api/check.h): compiled against eager
// on its inputs, by the differential tier's rules. Exit status 0 when they agree, 1 when they differ.
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/api/check.h"
#include "kiln/graph/printer.h"
#include "kiln/tools/commands.h"

namespace kiln::tools {

int check_command(const std::vector<std::string>& args) {
  std::string dir;
  bool emulate = false;
  for (const auto& a : args) {
    if (a == "--emulate-precision-casts") {
      emulate = true;
    } else if (dir.empty() && !a.starts_with("-")) {
      dir = a;
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::fputs("usage: kiln check DIR [--emulate-precision-casts]   (DIR: a program KILN_CHECK=1 wrote)\n", stderr);
    return 2;
  }
  Repro p = read_program(dir);
  std::printf("%s", graph::print(p.graph).c_str());
  CompileOptions options = read_check_options(dir);  // those the mismatch was found with
  options.emulate_precision_casts = options.emulate_precision_casts || emulate;
  auto mismatch = check_program(p, options);
  if (!mismatch) {
    std::printf("compiled and eager agree (%zu call(s), %zu input(s))\n", p.calls(), p.inputs.size());
    return 0;
  }
  std::printf("compiled output %zu differs from eager: %s\n", mismatch->output, mismatch->detail.c_str());
  return 1;
}

}  // namespace kiln::tools
