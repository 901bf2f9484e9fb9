// The `kiln` command line's subcommands. Each takes its arguments (after the subcommand name)
// and returns the process exit code; usage errors print to stderr and return 2.
#pragma once

#include <string>
#include <vector>

namespace kiln::tools {

int ops_command(const std::vector<std::string>& args);
// `kiln ops --coverage [--samples DIR]`: each Core ATen overload's eager and compiled path, and the
// totals; with DIR (an OpInfo recording the replay test has run over), how many recorded samples
// passed eagerly and compiled.
int coverage_command(const std::string& samples_dir, bool all);
int demo_command(const std::vector<std::string>& args);
int explain_command(const std::vector<std::string>& args);
// `kiln run MODEL.pt2 ...`: loads a torch.export archive and runs it (eager or compiled).
int run_command(const std::vector<std::string>& args);
// `kiln compile MODEL.pt2 -o MODEL.kiln`: an ahead-of-time package (api/package.h).
int compile_command(const std::vector<std::string>& args);
// `kiln check DIR`: replays a program the check mode (KILN_CHECK=1) reduced and wrote.
int check_command(const std::vector<std::string>& args);

}  // namespace kiln::tools
