// The compile cache: a second request loads the cached object; a corrupt cached file is rebuilt;
// processes compiling the same source at once all get a working library; compiler errors surface
// as kiln::Error with the compiler's message. The key changes with the bytes of every header the
// source includes and with the target the flags resolve to; generated code is built with kiln's
// sanitizers, which catch its out-of-bounds reads. Its kiln headers are found without configuration.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>

#include <fmt/format.h>

#include "kiln/compiler/codegen/build.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/codegen/scratch.h"
#include "kiln/support/error.h"
#include "scoped_env.h"

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

using testing::ScopedEnv;

std::filesystem::path fresh_dir(const char* tag) {
  auto dir = std::filesystem::path(cache_dir()) /
             fmt::format("{}.{}.{}", tag, getpid(), std::chrono::steady_clock::now().time_since_epoch().count());
  std::filesystem::create_directories(dir / "probe");
  return dir;
}

// Removes a fresh_dir. A build in it may have started precompiling the prelude in the background
// (detached, by design: start_precompiling_prelude), whose files come and go while it is removed:
// errors are ignored.
void remove_fresh_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

void write(const std::filesystem::path& path, const std::string& text) { std::ofstream(path) << text; }

TEST(CacheKey, IsTheSha256OfTheBuildInputs) {
  std::string key = cache_key("int x;", toolchain());
  EXPECT_EQ(key.size(), 64u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(cache_key("int x;", toolchain()), key);
  EXPECT_NE(cache_key("int y;", toolchain()), key);
}

TEST(CacheKey, IncludesTheBytesOfEveryIncludedHeader) {
  auto dir = fresh_dir("headers");
  write(dir / "probe/a.h", "#pragma once\n#include \"b.h\"\nint a();\n");
  write(dir / "probe/b.h", "#pragma once\n  #  include \"probe/c.h\"\nint b();\n");
  write(dir / "probe/c.h", "int c();\n");
  Toolchain t = toolchain();
  t.include_dir = dir.string();
  std::string source = "#include <cmath>\n#include \"probe/a.h\"\n#include \"probe/missing.h\"\n";
  auto headers = included_headers(source, t.include_dir);
  ASSERT_EQ(headers.size(), 4u) << fmt::format("{}", fmt::join(headers, " "));
  EXPECT_TRUE(headers[0].ends_with("probe/a.h"));
  EXPECT_EQ(headers[1], "probe/missing.h");
  EXPECT_TRUE(headers[2].ends_with("probe/b.h"));  // beside a.h
  EXPECT_TRUE(headers[3].ends_with("probe/c.h"));
  std::string key = cache_key(source, t);
  write(dir / "probe/c.h", "int c(); \n");  // one byte more, two headers down
  std::string changed = cache_key(source, t);
  EXPECT_NE(changed, key);
  write(dir / "probe/a.h", "#pragma once\n#include \"b.h\"\nint a(int);\n");
  EXPECT_NE(cache_key(source, t), changed);
  remove_fresh_dir(dir);
  // Generated code's own includes (the prelude's kiln headers) are found in kiln's source tree.
  auto kiln_headers = included_headers("#include \"kiln/core/half.h\"\n#include \"kiln/kernels/cpu/vec_math.h\"\n",
                                       toolchain().include_dir);
  ASSERT_GE(kiln_headers.size(), 2u);
  for (const auto& h : kiln_headers) EXPECT_TRUE(std::filesystem::is_regular_file(h)) << h;
}

// An upgraded header is not served from the cache: the same source compiles again.
TEST(CacheKey, AChangedHeaderRebuildsTheObject) {
  auto dir = fresh_dir("rebuild");
  ScopedEnv include("KILN_INCLUDE_DIR", dir.string());
  std::string source = unique_source("header") +
                       "#include \"probe/value.h\"\nextern \"C\" int value() { return VALUE; }\n";
  write(dir / "probe/value.h", "#define VALUE 1\n");
  using ValueFn = int (*)();
  auto first = compile_cpp(source);
  EXPECT_EQ(reinterpret_cast<ValueFn>(first->symbol("value"))(), 1);
  write(dir / "probe/value.h", "#define VALUE 2\n");
  auto second = compile_cpp(source);
  EXPECT_FALSE(second->from_cache());
  EXPECT_EQ(reinterpret_cast<ValueFn>(second->symbol("value"))(), 2);
  remove_fresh_dir(dir);
}

// Generated code's kiln headers: $KILN_INCLUDE_DIR's when set and not empty, else found without it
// (in a build tree, the source tree; an installed kiln finds its own beside libkiln.so, which
// tests/install checks). The headers' paths are part of the key: the same headers in another
// directory key another object.
TEST(IncludeDir, IsTheEnvironmentsElseFoundWithoutIt) {
  namespace fs = std::filesystem;
  auto dir = fresh_dir("include");
  {
    ScopedEnv include("KILN_INCLUDE_DIR", dir.string());
    EXPECT_EQ(include_dir(), dir.string());
    EXPECT_NE(compiler_command().find("-I" + dir.string()), std::string::npos) << compiler_command();
  }
  ScopedEnv empty("KILN_INCLUDE_DIR", "");
  fs::path found = include_dir();
  EXPECT_TRUE(fs::is_regular_file(found / "kiln/compiler/codegen/kernel_support.h")) << found;
  EXPECT_NE(compiler_command().find("-I" + found.string()), std::string::npos) << compiler_command();
  std::string source = "#include \"kiln/core/half.h\"\n";
  Toolchain here = toolchain(), moved = toolchain();
  moved.include_dir = dir.string();
  for (const auto& header : included_headers(source, here.include_dir)) {
    fs::path copy = dir / fs::path(header).lexically_relative(found);
    fs::create_directories(copy.parent_path());
    fs::copy_file(header, copy, fs::copy_options::overwrite_existing);
  }
  EXPECT_EQ(included_headers(source, moved.include_dir).size(), included_headers(source, here.include_dir).size());
  EXPECT_NE(cache_key(source, moved), cache_key(source, here));
  remove_fresh_dir(dir);
}

// The same command line can mean different code on different CPUs (-march=native): the key holds
// what the compiler resolved the flags to. A wrapper script stands in for a compiler on another
// CPU: same path, same --version, same command, different ISA.
TEST(CacheKey, IncludesTheResolvedTargetFeatures) {
#if defined(__x86_64__)
  auto dir = fresh_dir("target");
  std::string cxx = (dir / "cxx").string();
  std::string command = fmt::format("{} -std=c++20 -O3 -march=x86-64-v2", cxx);
  write(cxx, "#!/bin/sh\nexec c++ \"$@\"\n");
  std::filesystem::permissions(cxx, std::filesystem::perms::owner_all);
  Toolchain plain = probe_toolchain(command, toolchain().include_dir);
  write(cxx, "#!/bin/sh\nexec c++ -mavx512f \"$@\"\n");
  Toolchain wide = probe_toolchain(command, toolchain().include_dir);
  EXPECT_EQ(plain.command, wide.command);
  EXPECT_EQ(plain.identity, wide.identity);
  EXPECT_EQ(plain.target.find("__AVX512F__"), std::string::npos);
  EXPECT_NE(wide.target.find("#define __AVX512F__ 1"), std::string::npos);
  EXPECT_NE(cache_key("int x;", plain), cache_key("int x;", wide));
  remove_fresh_dir(dir);
  // The process's own toolchain resolves -march: its macros name the ISA it compiles for.
  EXPECT_NE(toolchain().target.find("#define __x86_64__ 1"), std::string::npos);
  EXPECT_NE(toolchain().target.find("__SSE2__"), std::string::npos);
#else
  GTEST_SKIP() << "x86-64 only";
#endif
}

TEST(CacheKey, SanitizersArePartOfTheCommandAndTheKey) {
  std::string plain, sanitized;
  {
    ScopedEnv none("KILN_CODEGEN_SANITIZE", "");
    EXPECT_EQ(compiler_command().find("-fsanitize"), std::string::npos);
    plain = cache_key("int x;", toolchain());
  }
  {
    ScopedEnv both("KILN_CODEGEN_SANITIZE", "address,undefined");
    EXPECT_NE(compiler_command().find("-fsanitize=address,undefined"), std::string::npos);
    EXPECT_NE(toolchain().target.find("__SANITIZE_ADDRESS__"), std::string::npos);
    sanitized = cache_key("int x;", toolchain());
  }
  EXPECT_NE(plain, sanitized);
}

// In a sanitized build (make test-asan) generated code is instrumented: an out-of-bounds read or
// signed overflow in a compiled kernel stops the process with the sanitizer's report.
TEST(SanitizedCodegen, OutOfBoundsReadsInCompiledCodeAreCaught) {
  if (codegen_sanitizers().find("address") == std::string::npos) {
    GTEST_SKIP() << "generated code is not built with AddressSanitizer in this build (KILN_SANITIZE=OFF)";
  }
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto lib = compile_cpp(unique_source("oob") +
                         "extern \"C\" void kernel(void* const* args) {\n"
                         "  const float* in = static_cast<const float*>(args[0]);\n"
                         "  float* out = static_cast<float*>(args[1]);\n"
                         "  for (int i = 0; i < 8; ++i) out[i] = in[i + 1];  // reads in[8]: one past the end\n"
                         "}\n"
                         "extern \"C\" int next(int x) { return x + 1; }\n");
  using Kernel = void (*)(void* const*);
  auto kernel = reinterpret_cast<Kernel>(lib->symbol("kernel"));
  auto next = reinterpret_cast<int (*)(int)>(lib->symbol("next"));
  auto run_kernel = [kernel](int n) {
    std::vector<float> in(static_cast<size_t>(n), 1.0f), out(8);
    void* args[] = {in.data(), out.data()};
    kernel(args);
    return out[7];
  };
  EXPECT_EQ(run_kernel(9), 1.0f);  // in bounds
  EXPECT_DEATH(run_kernel(8), "heap-buffer-overflow");
  EXPECT_EQ(next(1), 2);
  EXPECT_DEATH(next(INT_MAX), "signed integer overflow");
}

}  // namespace
}  // namespace kiln::compiler

namespace kiln::compiler {
namespace {

// A source of `n` kernels k0..k{n-1} returning 10 + i, after a prelude they all use, and its plan.
std::pair<std::string, BuildPlan> kernels_source(int n, const std::string& salt) {
  std::string source = "// " + salt + "\nstatic int base() { return 10; }\n";
  BuildPlan plan;
  for (int i = 0; i < n; ++i) {
    plan.kernel_offsets.push_back(source.size());
    source += fmt::format("extern \"C\" int k{}() {{ return base() + {}; }}\n", i, i);
  }
  return {source, plan};
}

TEST(ParallelBuild, PartsLinkIntoOneLibraryAndReportProgress) {
  auto dir = fresh_dir("parallel");
  ScopedEnv cache("KILN_CACHE_DIR", dir.string());
  auto [source, plan] = kernels_source(9, "parallel build test");
  std::vector<std::pair<size_t, size_t>> reports;
  plan.progress = [&](size_t done, size_t total) { reports.emplace_back(done, total); };
  auto lib = compile_cpp(source, plan);
  for (int i = 0; i < 9; ++i) {
    auto fn = reinterpret_cast<int (*)()>(lib->symbol(fmt::format("k{}", i)));
    EXPECT_EQ(fn(), 10 + i);
  }
  ASSERT_FALSE(reports.empty());
  EXPECT_EQ(reports.back(), (std::pair<size_t, size_t>{9, 9}));
  for (size_t r = 1; r < reports.size(); ++r) EXPECT_GT(reports[r].first, reports[r - 1].first);
  // No part's source or object is left behind; the same source is a cache hit, plan or not.
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    EXPECT_FALSE(e.path().string().ends_with(".o")) << e.path();
    if (codegen_sanitizers().empty()) {
      EXPECT_FALSE(e.path().string().ends_with(".cpp")) << e.path();
    }
  }
  EXPECT_TRUE(compile_cpp(source)->from_cache());
  remove_fresh_dir(dir);
}

TEST(ParallelBuild, ACompileErrorNamesItsPart) {
  auto dir = fresh_dir("parallel_error");
  ScopedEnv cache("KILN_CACHE_DIR", dir.string());
  auto [source, plan] = kernels_source(8, "parallel build error");
  source += "extern \"C\" int broken() { return undeclared_name; }\n";
  try {
    compile_cpp(source, plan);
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("undeclared_name"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(".cpp"), std::string::npos) << e.what();
  }
  remove_fresh_dir(dir);
}

}  // namespace
}  // namespace kiln::compiler

namespace kiln::compiler {
namespace {

// What GCC's -H says of the precompiled `header` under `t`'s flags: "!" when it reads the .gch,
// "x" when it finds it invalid (and parses the text instead).
std::string pch_report(const Toolchain& t, const std::string& header) {
  std::string out;
  FILE* pipe =
      popen(fmt::format("{} -include {} -H -fsyntax-only -x c++ /dev/null 2>&1", t.command, header).c_str(), "r");
  EXPECT_NE(pipe, nullptr);
  if (!pipe) return out;
  char chunk[4096];
  while (size_t n = fread(chunk, 1, sizeof chunk, pipe)) out.append(chunk, n);
  pclose(pipe);
  return out;
}

// Whether `path` exists within two minutes (a background build on a busy machine), or is gone.
bool appears(const std::string& path, bool present = true) {
  for (int i = 0; i < 1200; ++i) {
    if (std::filesystem::exists(path) == present) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}
bool gone(const std::string& path) { return appears(path, false); }

// Kernels get per-thread scratch from kiln (scratch.h), not from a thread_local of their module:
// a kernel in every part of a module built in parts sees the runtime's region.
TEST(KernelScratch, EveryPartOfAModuleUsesTheRuntimesScratch) {
  std::string src = cpp_prelude();
  BuildPlan plan;
  constexpr int kKernels = 4;
  for (int k = 0; k < kKernels; ++k) {
    plan.kernel_offsets.push_back(src.size());
    src += fmt::format("extern \"C\" void* scratch_of_slot{0}() {{ return k_scratch<float>({0}, 16); }}\n", k);
  }
  src += cpp_module_end();
  auto lib = compile_cpp(src, plan);
  using ScratchFn = void* (*)();
  for (int k = 0; k < kKernels; ++k) {
    void* got = reinterpret_cast<ScratchFn>(lib->symbol(fmt::format("scratch_of_slot{}", k)))();
    EXPECT_EQ(got, thread_scratch(k, 16 * sizeof(float))) << "kernel " << k;
  }
}

TEST(PrecompiledPrelude, IsBuiltOnceAndReadByLaterBuilds) {
  auto dir = fresh_dir("prelude");
  ScopedEnv cache("KILN_CACHE_DIR", dir.string());
  const Toolchain& t = toolchain();
  PreludeHeader h = prelude_header("// precompiled prelude test\nstatic int base() { return 10; }\n", t, dir.string());
  if (!h.supported) GTEST_SKIP() << "the compiler is not GCC";
  // Two sources with one prelude (which defines a function: were it compiled twice, the second
  // build would fail with a redefinition); the first build starts precompiling it in the background.
  std::string prelude = "// precompiled prelude test\nstatic int base() { return 10; }\n";
  auto source = [&](int bias, int n) {
    std::pair<std::string, BuildPlan> r{prelude, {}};
    for (int i = 0; i < n; ++i) {
      r.second.kernel_offsets.push_back(r.first.size());
      r.first += fmt::format("extern \"C\" int k{}() {{ return base() + {}; }}\n", i, bias + i);
    }
    return r;
  };
  EXPECT_FALSE(std::filesystem::exists(h.header + ".gch"));
  auto [first, first_plan] = source(0, 1);
  auto a = compile_cpp(first, first_plan);
  EXPECT_EQ(reinterpret_cast<int (*)()>(a->symbol("k0"))(), 10);
  ASSERT_TRUE(appears(h.header + ".gch")) << "the first build did not precompile the prelude";
  EXPECT_TRUE(gone(h.header + ".building"));
  EXPECT_NE(pch_report(t, h.header).find("! " + h.header + ".gch"), std::string::npos) << pch_report(t, h.header);
  // Later builds, in one part and in several, read it, and the prelude's function is defined once.
  for (int n : {1, 6}) {
    auto [later, plan] = source(100 * n, n);
    auto lib = compile_cpp(later, plan);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(reinterpret_cast<int (*)()>(lib->symbol(fmt::format("k{}", i)))(), 10 + 100 * n + i);
    }
  }
  // Its key is the prelude's and the toolchain's: another prelude gets another header.
  EXPECT_NE(prelude_header(prelude + "// more\n", t, dir.string()).header, h.header);
  remove_fresh_dir(dir);
}

TEST(PrecompiledPrelude, OneThatFailsIsMarkedWithTheCompilersMessageAndNotTriedAgain) {
  auto dir = fresh_dir("prelude_failed");
  std::string prelude = "#include \"kiln/no_such_header.h\"\n";
  const Toolchain& t = toolchain();
  PreludeHeader h = prelude_header(prelude, t, dir.string());
  if (!h.supported) GTEST_SKIP() << "the compiler is not GCC";
  start_precompiling_prelude(prelude, t, dir.string());
  ASSERT_TRUE(appears(h.header + ".failed"));
  EXPECT_TRUE(gone(h.header + ".building"));
  std::ifstream mark(h.header + ".failed");
  std::string text((std::istreambuf_iterator<char>(mark)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("no_such_header.h"), std::string::npos) << text;
  EXPECT_FALSE(std::filesystem::exists(h.header + ".gch"));
  EXPECT_FALSE(precompile_prelude(prelude, t, dir.string()));  // not tried again
  start_precompiling_prelude(prelude, t, dir.string());
  EXPECT_FALSE(std::filesystem::exists(h.header + ".building"));
  remove_fresh_dir(dir);
}

TEST(PrecompiledPrelude, ACompileErrorKeepsTheSourcesLineNumbers) {
  auto dir = fresh_dir("prelude_lines");
  ScopedEnv cache("KILN_CACHE_DIR", dir.string());
  std::string prelude = "// line 1\n// line 2\nstatic int base() { return 10; }\n";
  if (!precompile_prelude(prelude, toolchain(), dir.string())) GTEST_SKIP() << "no precompiled prelude (not GCC)";
  BuildPlan plan{{prelude.size()}, {}};
  try {
    compile_cpp(prelude + "extern \"C\" int k0() {\n  return base() + undeclared_name;\n}\n", plan);
    FAIL() << "expected a compile error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(":5:"), std::string::npos) << e.what();  // line 5 of the source
  }
  remove_fresh_dir(dir);
}

// Generated code's own prelude precompiles under this build's flags (sanitizers included), and GCC
// takes the result as valid for them, so every generated source after the first reads it. In the
// suite's shared cache directory: built once for all the tests.
TEST(PrecompiledPrelude, GeneratedCodesPreludeIsValid) {
  const Toolchain& t = toolchain();
  PreludeHeader h = prelude_header(cpp_prelude(), t, cache_dir());
  if (!h.supported) GTEST_SKIP() << "the compiler is not GCC";
  ASSERT_TRUE(precompile_prelude(cpp_prelude(), t, cache_dir()));
  EXPECT_NE(pch_report(t, h.header).find("! " + h.header + ".gch"), std::string::npos) << pch_report(t, h.header);
}

}  // namespace
}  // namespace kiln::compiler
