// The `kiln` command line's subcommands. Each takes its arguments (after the subcommand name)
// and returns the process exit code; usage errors print to stderr and return 2.
#pragma once

#include <string>
#include <vector>

namespace kiln::tools {

int ops_command(const std::vector<std::string>& args);
// `kiln ops --coverage`: each Core ATen overload's eager and compiled path, and the totals.
int coverage_command();
int demo_command(const std::vector<std::string>& args);
int explain_command(const std::vector<std::string>& args);

}  // namespace kiln::tools
