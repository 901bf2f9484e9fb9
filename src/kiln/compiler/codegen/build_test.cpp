// The compile cache: a second request loads the cached object; a corrupt cached file is rebuilt;
// processes compiling the same source at once all get a working library; compiler errors surface
// as kiln::Error with the compiler's message.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "kiln/compiler/codegen/build.h"
#include "kiln/support/error.h"

namespace kiln::compiler {
namespace {

std::string unique_source(const char* tag) {
  auto now = std::chrono::steady_clock::now().time_since_epoch().count();
  return fmt::format("// {} {} {}\nextern \"C\" int answer() {{ return 42; }}\n", tag, now, getpid());
}

using AnswerFn = int (*)();

TEST(CompileCache, SecondRequestLoadsTheCachedObject) {
  std::string src = unique_source("hit");
  auto first = compile_cpp(src);
  EXPECT_FALSE(first->from_cache());
  EXPECT_EQ(reinterpret_cast<AnswerFn>(first->symbol("answer"))(), 42);
  auto second = compile_cpp(src);
  EXPECT_TRUE(second->from_cache());
  EXPECT_EQ(second->path(), first->path());
  EXPECT_THROW(second->symbol("missing"), Error);
}

TEST(CompileCache, ACorruptCachedFileIsRebuilt) {
  std::string src = unique_source("corrupt");
  std::string path = compile_cpp(src)->path();
  std::filesystem::remove(path);
  std::ofstream(path) << "not an ELF file";
  auto rebuilt = compile_cpp(src);
  EXPECT_FALSE(rebuilt->from_cache());
  EXPECT_EQ(reinterpret_cast<AnswerFn>(rebuilt->symbol("answer"))(), 42);
}

TEST(CompileCache, ConcurrentProcessesShareOneBuild) {
  std::string src = unique_source("concurrent");
  std::vector<pid_t> children;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      int status = 1;
      try {
        status = reinterpret_cast<AnswerFn>(compile_cpp(src)->symbol("answer"))() == 42 ? 0 : 1;
      } catch (...) {
      }
      _exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = -1;
    waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_TRUE(compile_cpp(src)->from_cache());
}

TEST(CompileCache, CompilerErrorsAreReported) {
  try {
    compile_cpp(unique_source("broken") + "this is not C++;\n");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the C++ compiler failed"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace kiln::compiler
