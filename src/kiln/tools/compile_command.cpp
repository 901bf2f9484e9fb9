// `kiln compile MODEL.pt2 -o MODEL.kiln`: compiles a torch.export archive ahead of time into a
// package that `kiln run` and kiln::load_package run with no tracing and no C++ compiler.
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/api/package.h"
#include "kiln/tools/commands.h"

namespace kiln::tools {

int compile_command(const std::vector<std::string>& args) {
  std::string model, out;
  bool emulate = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if ((args[i] == "-o" || args[i] == "--output") && i + 1 < args.size()) {
      out = args[++i];
    } else if (args[i] == "--emulate-precision-casts") {
      emulate = true;
    } else if (model.empty() && !args[i].starts_with("-")) {
      model = args[i];
    } else {
      model.clear();
      break;
    }
  }
  if (model.empty() || out.empty()) {
    std::fputs("usage: kiln compile MODEL.pt2 -o MODEL.kiln [--emulate-precision-casts]\n", stderr);
    return 2;
  }
  auto start = std::chrono::steady_clock::now();
  auto stamp = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  PackageOptions options;
  options.compile.emulate_precision_casts = emulate;
  options.progress = [&](const std::string& line) {
    std::printf("[%6.2f s] %s\n", stamp(), line.c_str());
    std::fflush(stdout);
  };
  options.progress("loading " + model);
  compile_package(load(model), out, options);
  return 0;
}

}  // namespace kiln::tools
