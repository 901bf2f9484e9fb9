#include "kiln/compiler/codegen/build.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <fmt/format.h>

#include "kiln/support/error.h"
#include "kiln/support/log.h"

#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must name the source tree (generated code includes kiln headers)"
#endif
#ifndef KILN_CODEGEN_ARCH
#define KILN_CODEGEN_ARCH "native"
#endif

namespace kiln::compiler {
namespace {

namespace fs = std::filesystem;

// Runs a shell command; returns its exit status and output (stdout and stderr).
std::pair<int, std::string> run(const std::string& command) {
  std::string output;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  KILN_CHECK(pipe != nullptr, "compile: cannot run '{}'", command);
  std::array<char, 4096> chunk{};
  while (size_t n = fread(chunk.data(), 1, chunk.size(), pipe)) output.append(chunk.data(), n);
  int status = pclose(pipe);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

const std::string& compiler_identity() {
  static const std::string id = [] {
    const char* cxx = std::getenv("CXX");
    auto [status, out] = run(fmt::format("{} --version", cxx ? cxx : "c++"));
    return status == 0 ? out : std::string("unknown");
  }();
  return id;
}

// FNV-1a, 64 bits, as hex: stable across runs and builds.
std::string stable_hash(const std::string& text) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return fmt::format("{:016x}", h);
}

struct FileLock {
  int fd;
  explicit FileLock(const std::string& path) : fd(open(path.c_str(), O_CREAT | O_RDWR, 0644)) {
    KILN_CHECK(fd >= 0, "compile: cannot open lock file {}", path);
    flock(fd, LOCK_EX);
  }
  ~FileLock() {
    flock(fd, LOCK_UN);
    close(fd);
  }
};

void* try_load(const std::string& path) {
  if (!fs::exists(path)) return nullptr;
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

Library::~Library() {
  if (handle_) dlclose(handle_);
}

void* Library::symbol(const std::string& name) const {
  void* s = dlsym(handle_, name.c_str());
  KILN_CHECK(s != nullptr, "compile: {} has no symbol {}", path_, name);
  return s;
}

std::string cache_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/kiln";
}

std::string compiler_command() {
  const char* cxx = std::getenv("CXX");
  const char* include = std::getenv("KILN_INCLUDE_DIR");  // where kiln's headers are, if moved
  return fmt::format("{} -std=c++20 -O3 -march={} -mprefer-vector-width=512 -fopenmp -fPIC -shared -fno-math-errno "
                     "-fno-trapping-math -I{}",
                     cxx && *cxx ? cxx : "c++", KILN_CODEGEN_ARCH, include && *include ? include : KILN_SOURCE_DIR "/src");
}

std::string vectorization_report(const std::string& source) {
  std::string dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::string base = fmt::format("{}/vecreport.{}", dir, getpid());
  {
    std::ofstream f(base + ".cpp");
    f << source;
  }
  auto [status, output] = run(fmt::format("{} -fopt-info-vec-optimized -o {}.so {}.cpp", compiler_command(), base, base));
  fs::remove(base + ".cpp", ec);
  fs::remove(base + ".so", ec);
  return status == 0 ? output : std::string();
}

std::shared_ptr<Library> compile_cpp(const std::string& source) {
  std::string command = compiler_command();
  std::string key = stable_hash(source + "\n" + command + "\n" + compiler_identity());
  std::string dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  KILN_CHECK(!ec, "compile: cannot create the cache directory {}: {}", dir, ec.message());
  std::string so = fmt::format("{}/{}.so", dir, key);
  if (void* h = try_load(so)) {
    KILN_LOG("compile", "cache hit {}", so);
    return std::shared_ptr<Library>(new Library(h, so, true));
  }
  FileLock lock(fmt::format("{}/{}.lock", dir, key));
  // Another process may have built it while we waited for the lock.
  if (void* h = try_load(so)) return std::shared_ptr<Library>(new Library(h, so, true));
  if (fs::exists(so)) {
    KILN_LOG("compile", "{} does not load ({}); rebuilding", so, dlerror());
    fs::remove(so, ec);
  }
  std::string tag = fmt::format("{}.{}", key, getpid());
  std::string cpp = fmt::format("{}/{}.cpp", dir, tag), tmp = fmt::format("{}/{}.so.tmp", dir, tag);
  {
    std::ofstream f(cpp);
    f << source;
    KILN_CHECK(f.good(), "compile: cannot write {}", cpp);
  }
  auto [status, output] = run(fmt::format("{} -o {} {}", command, tmp, cpp));
  if (status != 0) {
    fs::remove(tmp, ec);
    KILN_FAIL(ErrorKind::Internal, "compile: the C++ compiler failed on {} (exit {}):\n{}", cpp, status, output);
  }
  fs::remove(cpp, ec);
  fs::rename(tmp, so, ec);
  KILN_CHECK(!ec, "compile: cannot move {} into the cache: {}", tmp, ec.message());
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(h != nullptr, "compile: cannot load {}: {}", so, dlerror());
  KILN_LOG("compile", "built {}", so);
  return std::shared_ptr<Library>(new Library(h, so, false));
}

}  // namespace kiln::compiler
