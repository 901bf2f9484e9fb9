#include "kiln/compiler/codegen/build.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "kiln/compiler/codegen/scratch.h"
#include "kiln/support/content_cache.h"
#include "kiln/support/error.h"
#include "kiln/support/log.h"
#include "kiln/support/sha256.h"

#ifndef KILN_SOURCE_DIR
#error "KILN_SOURCE_DIR must name the source tree (generated code includes kiln headers)"
#endif
// The include directory of an installed kiln relative to the directory libkiln.so is installed in
// (GNUInstallDirs': ../include), or absolute.
#ifndef KILN_INCLUDE_FROM_LIBDIR
#define KILN_INCLUDE_FROM_LIBDIR "../include"
#endif
#ifndef KILN_CODEGEN_ARCH
#define KILN_CODEGEN_ARCH "native"
#endif
// The sanitizers kiln itself is built with: generated code gets the same, so that its bugs are
// caught where kiln's are (a KILN_SANITIZE build defines this as "address,undefined").
#ifndef KILN_CODEGEN_SANITIZE
#define KILN_CODEGEN_SANITIZE ""
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

std::string read_file(const fs::path& path) { return read_file_bytes(path.string()); }

// The names in `#include "name"` lines of `text`.
std::vector<std::string> quoted_includes(const std::string& text) {
  std::vector<std::string> names;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    size_t at = line.find_first_not_of(" \t");
    if (at == std::string::npos || line[at] != '#') continue;
    at = line.find_first_not_of(" \t", at + 1);
    if (at == std::string::npos || line.compare(at, 7, "include") != 0) continue;
    size_t open = line.find_first_not_of(" \t", at + 7);
    if (open == std::string::npos || line[open] != '"') continue;
    size_t close = line.find('"', open + 1);
    if (close != std::string::npos) names.push_back(line.substr(open + 1, close - open - 1));
  }
  return names;
}

void* try_load(const std::string& path) {
  if (!fs::exists(path)) return nullptr;
  return dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
}

}  // namespace

Library::Library(void* handle, std::string path, bool from_cache)
    : handle_(handle), path_(std::move(path)), from_cache_(from_cache) {
  using Bind = void (*)(decltype(&thread_scratch));  // kernel_support.h's ScratchSource
  if (void* bind = dlsym(handle_, "kiln_bind_scratch")) reinterpret_cast<Bind>(bind)(&thread_scratch);
}

Library::~Library() {
  if (handle_) dlclose(handle_);
}

std::shared_ptr<Library> Library::open(const std::string& path) {
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(h != nullptr, "cannot load the kernels in {}: {}", path, dlerror());
  return std::shared_ptr<Library>(new Library(h, path, false));
}

void* Library::symbol(const std::string& name) const {
  void* s = dlsym(handle_, name.c_str());
  KILN_CHECK(s != nullptr, "compile: {} has no symbol {}", path_, name);
  return s;
}

namespace {

// A header every piece of generated code includes: a directory holding it holds kiln's headers.
constexpr const char* kMarkerHeader = "kiln/compiler/codegen/kernel_support.h";

bool holds_kiln_headers(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kMarkerHeader, ec);
}

// The directory of the shared object (or executable) this code was linked into, or empty.
fs::path own_binary_dir() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&holds_kiln_headers), &info) == 0 || info.dli_fname == nullptr ||
      *info.dli_fname == '\0') {
    return {};
  }
  std::error_code ec;
  fs::path binary = fs::weakly_canonical(fs::absolute(info.dli_fname, ec), ec);
  return ec ? fs::path() : binary.parent_path();
}

// Where kiln's headers were looked for, and the first that holds them (empty when none does).
struct IncludeSearch {
  std::vector<fs::path> tried;
  std::string found;
};

// An installed kiln's headers (beside the library), else the build tree's source tree. Searched once:
// neither moves while the process runs. Not an error here: a process that never compiles generated
// code does not need them.
const IncludeSearch& search_include_dir() {
  static const IncludeSearch search = [] {
    IncludeSearch s;
    if (fs::path lib = own_binary_dir(); !lib.empty()) {
      s.tried.push_back((lib / KILN_INCLUDE_FROM_LIBDIR).lexically_normal());
    }
    s.tried.push_back(fs::path(KILN_SOURCE_DIR) / "src");
    for (const fs::path& dir : s.tried) {
      if (holds_kiln_headers(dir)) {
        s.found = dir.string();
        break;
      }
    }
    return s;
  }();
  return search;
}

}  // namespace

std::string include_dir() {
  if (const char* env = std::getenv("KILN_INCLUDE_DIR"); env && *env) return env;
  const IncludeSearch& search = search_include_dir();
  if (search.found.empty()) {
    std::string tried;
    for (const fs::path& dir : search.tried) tried += (tried.empty() ? "" : ", ") + dir.string();
    KILN_FAIL(ErrorKind::Value,
              "compile: kiln's headers, which generated code includes, are in none of {}; set KILN_INCLUDE_DIR to "
              "the directory that holds {}",
              tried, kMarkerHeader);
  }
  return search.found;
}

namespace {

// The command without sanitizers: what production code is built with. -ffp-contract=off: each op
// rounds as eager's does (a contracted a*b+c differs from eager, and tan near a pole turned that one
// rounding into 6e-6 relative); add/sub with alpha are explicit fmas, as in eager.
std::string optimizing_command() {
  const char* cxx = std::getenv("CXX");
  return fmt::format(
      "{} -std=c++20 -O3 -march={} -mprefer-vector-width=512 -fopenmp -fPIC -shared -fno-math-errno "
      "-fno-trapping-math -ffp-contract=off -I{}",
      cxx && *cxx ? cxx : "c++", KILN_CODEGEN_ARCH, include_dir());
}

}  // namespace

std::string codegen_sanitizers() {
  const char* s = std::getenv("KILN_CODEGEN_SANITIZE");
  return s ? s : KILN_CODEGEN_SANITIZE;
}

std::string compiler_command() {
  std::string command = optimizing_command();
  if (std::string sanitizers = codegen_sanitizers(); !sanitizers.empty()) {
    command += fmt::format(" -g1 -fno-omit-frame-pointer -fsanitize={} -fno-sanitize-recover=all", sanitizers);
  }
  return command;
}

Toolchain probe_toolchain(const std::string& command, const std::string& include_dir) {
  Toolchain t;
  t.command = command;
  t.include_dir = include_dir;
  auto [status, version] = run(fmt::format("{} --version", command.substr(0, command.find(" -"))));
  t.identity = status == 0 ? version : std::string("unknown");
  auto [macro_status, macros] = run(fmt::format("{} -dM -E -x c++ /dev/null", command));
  KILN_CHECK(macro_status == 0, "compile: the C++ compiler cannot preprocess with '{}' (exit {}):\n{}", command,
             macro_status, macros);
  std::vector<std::string> lines;
  std::istringstream in(macros);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  for (const auto& line : lines) t.target += line + "\n";
  return t;
}

const Toolchain& toolchain() {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Toolchain>> probed;  // by command and include dir
  std::string command = compiler_command(), include = include_dir();
  std::lock_guard lock(mu);
  auto& t = probed[command + '\n' + include];
  if (!t) t = std::make_unique<Toolchain>(probe_toolchain(command, include));
  return *t;
}

std::vector<std::string> included_headers(const std::string& source, const std::string& include_dir) {
  std::vector<std::string> found;
  std::set<std::string> seen;
  // (name as written, directory of the file that includes it; empty for the source itself)
  std::vector<std::pair<std::string, fs::path>> pending;
  for (auto& name : quoted_includes(source)) pending.emplace_back(std::move(name), fs::path());
  while (!pending.empty()) {
    auto [name, beside] = std::move(pending.front());
    pending.erase(pending.begin());
    std::error_code ec;
    fs::path path;
    for (const fs::path& dir : {beside, fs::path(include_dir)}) {
      if (!dir.empty() && fs::is_regular_file(dir / name, ec)) {
        path = fs::weakly_canonical(dir / name, ec);
        break;
      }
    }
    std::string entry = path.empty() ? name : path.string();
    if (!seen.insert(entry).second) continue;
    found.push_back(entry);
    if (path.empty()) continue;
    for (auto& next : quoted_includes(read_file(path))) pending.emplace_back(std::move(next), path.parent_path());
  }
  return found;
}

std::string cache_key(const std::string& source, const Toolchain& t) {
  Sha256 h;
  // Each part is preceded by its length, so no two different lists of parts hash the same text.
  auto part = [&h](std::string_view text) { h.update(fmt::format("{}:", text.size())).update(text); };
  part(source);
  part(t.command);
  part(t.identity);
  part(t.target);
  for (const auto& header : included_headers(source, t.include_dir)) {
    part(header);
    std::error_code ec;
    part(fs::is_regular_file(header, ec) ? read_file(header) : std::string("(not found)"));
  }
  return h.hex_digest();
}

PreludeHeader prelude_header(const std::string& prelude, const Toolchain& t, const std::string& dir) {
  PreludeHeader h;
  h.supported = t.target.find("#define __GNUC__ ") != std::string::npos &&
                t.target.find("#define __clang__ ") == std::string::npos;
  h.header = fmt::format("{}/prelude-{}/prelude.h", dir, cache_key(prelude, t));
  return h;
}

namespace {

// The files of a precompiled prelude beside its header.
struct PreludeFiles {
  std::string header, gch, failed, building;
  explicit PreludeFiles(const PreludeHeader& h)
      : header(h.header), gch(h.header + ".gch"), failed(h.header + ".failed"), building(h.header + ".building") {}
};

// Writes the prelude's header unless it is there (whole: written under a temporary name, renamed).
bool write_prelude_header(const std::string& prelude, const PreludeFiles& f) {
  std::error_code ec;
  if (fs::exists(f.header, ec)) return true;
  fs::create_directories(fs::path(f.header).parent_path(), ec);
  std::string tmp = f.header + "." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    out << prelude;
    if (!out.good()) return false;
  }
  fs::rename(tmp, f.header, ec);
  return !ec;
}

// The shell command that precompiles the header into a temporary file and renames it into place,
// or else leaves the compiler's messages in the failure mark.
std::string precompile_command(const Toolchain& t, const PreludeFiles& f, const std::string& tag) {
  std::string tmp = f.gch + "." + tag, log = f.failed + "." + tag;
  return fmt::format(
      "if {} -x c++-header -o {} {} > {} 2>&1; then mv -f {} {}; rm -f {}; else mv -f {} {}; rm -f {}; fi", t.command,
      tmp, f.header, log, tmp, f.gch, log, log, f.failed, tmp);
}

}  // namespace

bool precompile_prelude(const std::string& prelude, const Toolchain& t, const std::string& dir) {
  try {
    PreludeHeader h = prelude_header(prelude, t, dir);
    PreludeFiles f(h);
    std::error_code ec;
    if (!h.supported || fs::exists(f.failed, ec)) return false;
    if (fs::exists(f.gch, ec)) return true;
    if (!write_prelude_header(prelude, f)) return false;
    FileLock lock(f.header + ".lock");
    if (!fs::exists(f.gch, ec) && !fs::exists(f.failed, ec)) {
      run(precompile_command(t, f, std::to_string(getpid())));
    }
    bool made = fs::exists(f.gch, ec);
    if (made) {
      KILN_LOG("compile", "precompiled the prelude: {}", f.gch);
    } else {
      KILN_LOG("compile", "the prelude did not precompile: see {}", f.failed);
    }
    return made;
  } catch (const std::exception& e) {  // a lock file that cannot be opened, a full disk
    KILN_LOG("compile", "the prelude did not precompile: {}", e.what());
    return false;
  }
}

namespace {

// start_precompiling_prelude for the header `h` of `prelude` (computed once by the caller).
void start_precompiling(const std::string& prelude, const PreludeHeader& h, const Toolchain& t) {
  try {
    PreludeFiles f(h);
    std::error_code ec;
    if (!h.supported || fs::exists(f.gch, ec) || fs::exists(f.failed, ec)) return;
    if (!write_prelude_header(prelude, f)) return;
    // One build at a time: the one that creates the mark starts it. A mark older than ten minutes
    // is a build that died; it is taken over.
    int fd = open(f.building.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
    if (fd < 0) {
      auto age = fs::file_time_type::clock::now() - fs::last_write_time(f.building, ec);
      if (ec || age < std::chrono::minutes(10)) return;
      fs::remove(f.building, ec);
      fd = open(f.building.c_str(), O_CREAT | O_EXCL | O_WRONLY, 0644);
      if (fd < 0) return;
    }
    close(fd);
    // Detached from this process (its own output, no pipe to ours): it outlives a process that
    // exits before it is done.
    std::string command = fmt::format("({}; rm -f {}) < /dev/null > /dev/null 2>&1 &",
                                      precompile_command(t, f, std::to_string(getpid())), f.building);
    if (std::system(command.c_str()) != 0) fs::remove(f.building, ec);
    KILN_LOG("compile", "precompiling the prelude in the background: {}", f.gch);
  } catch (const std::exception& e) {
    KILN_LOG("compile", "the prelude did not start precompiling: {}", e.what());
  }
}

}  // namespace

void start_precompiling_prelude(const std::string& prelude, const Toolchain& t, const std::string& dir) {
  try {
    start_precompiling(prelude, prelude_header(prelude, t, dir), t);
  } catch (const std::exception& e) {  // the header hash reads kiln's headers
    KILN_LOG("compile", "the prelude did not start precompiling: {}", e.what());
  }
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
  // Without sanitizers: their checks keep loops from vectorizing that production code vectorizes.
  auto [status, output] =
      run(fmt::format("{} -fopt-info-vec-optimized -o {}.so {}.cpp", optimizing_command(), base, base));
  fs::remove(base + ".cpp", ec);
  fs::remove(base + ".so", ec);
  return status == 0 ? output : std::string();
}

namespace {

// One translation unit of a split build and the kernels it holds.
// The source as parts for the C++ compiler: one per hardware thread, two kernels a part at least
// (each part repeats the prelude, which takes g++ a while). With `precompiled`, the prelude comes
// from its precompiled header (-include), and a #line directive takes its place in each part, so
// that line numbers stay the source's.
std::vector<SourcePart> split(const std::string& source, const BuildPlan& plan, bool precompiled) {
  const auto& at = plan.kernel_offsets;
  if (at.empty()) return {SourcePart{source, 0}};
  std::optional<std::string> prelude;
  if (precompiled) {
    prelude =
        fmt::format("#line {}\n", 1 + std::count(source.begin(), source.begin() + static_cast<long>(at.front()), '\n'));
  }
  size_t threads = std::max(1u, std::thread::hardware_concurrency());
  return split_source(source, at, std::min(threads, at.size() / 2), prelude);
}

// Compiles `parts` (in parallel when there are several) into the shared object `out`; `base` names
// the temporary files.
void build_parts(const std::vector<SourcePart>& parts, const std::string& command, const std::string& base,
                 const std::string& out, const std::function<void(size_t, size_t)>& progress) {
  std::error_code ec;
  size_t total = 0;
  for (const auto& p : parts) total += p.kernels;
  std::vector<std::string> files;
  for (size_t i = 0; i < parts.size(); ++i) {
    files.push_back(parts.size() == 1 ? base + ".cpp" : fmt::format("{}.part{}.cpp", base, i));
    std::ofstream f(files.back());
    f << parts[i].source;
    KILN_CHECK(f.good(), "compile: cannot write {}", files.back());
  }
  std::vector<std::pair<int, std::string>> results(parts.size());
  if (parts.size() == 1) {
    results[0] = run(fmt::format("{} -o {} {}", command, out, files[0]));
  } else {
    std::mutex mu;
    size_t done = 0;
    std::vector<std::thread> workers;
    for (size_t i = 0; i < parts.size(); ++i) {
      workers.emplace_back([&, i] {
        results[i] = run(fmt::format("{} -c -o {}.o {}", command, files[i], files[i]));
        std::lock_guard lock(mu);
        done += parts[i].kernels;
        if (progress) progress(done, total);
      });
    }
    for (auto& w : workers) w.join();
    if (std::all_of(results.begin(), results.end(), [](const auto& r) { return r.first == 0; })) {
      std::string objects;
      for (const auto& f : files) objects += " " + f + ".o";
      auto linked = run(fmt::format("{} -o {}{}", command, out, objects));
      if (linked.first != 0) {
        fs::remove(out, ec);
        KILN_FAIL(ErrorKind::Internal, "compile: linking {} failed (exit {}):\n{}", out, linked.first, linked.second);
      }
    }
    for (const auto& f : files) fs::remove(f + ".o", ec);
  }
  for (size_t i = 0; i < results.size(); ++i) {
    if (results[i].first == 0) continue;
    fs::remove(out, ec);
    KILN_FAIL(ErrorKind::Internal, "compile: the C++ compiler failed on {} (exit {}):\n{}", files[i], results[i].first,
              results[i].second);
  }
  if (parts.size() == 1 && progress) progress(total, total);
  // A sanitizer's report names the source line; keep the source it names.
  if (codegen_sanitizers().empty()) {
    for (const auto& f : files) fs::remove(f, ec);
  }
}

}  // namespace

std::vector<SourcePart> split_source(const std::string& source, const std::vector<size_t>& kernel_offsets, size_t count,
                                     const std::optional<std::string>& prelude) {
  const auto& at = kernel_offsets;
  if (at.empty()) return {SourcePart{source, 0}};
  const std::string head = prelude ? *prelude : source.substr(0, at.front());
  if (count <= 1) return {SourcePart{head + source.substr(at.front()), at.size()}};
  size_t target = (source.size() - at.front()) / count + 1;
  std::vector<SourcePart> parts(1, SourcePart{head, 0});
  for (size_t k = 0; k < at.size(); ++k) {
    size_t end = k + 1 < at.size() ? at[k + 1] : source.size();
    if (parts.back().kernels > 0 && parts.back().source.size() - head.size() >= target) {
      parts.push_back(SourcePart{head, 0});
    }
    parts.back().source.append(source, at[k], end - at[k]);
    ++parts.back().kernels;
  }
  return parts;
}

std::shared_ptr<Library> compile_cpp(const std::string& source, const BuildPlan& plan) {
  // Loading AddressSanitizer-instrumented code into a process without its runtime kills the process.
  if (std::string sanitizers = codegen_sanitizers(); sanitizers.find("address") != std::string::npos) {
    KILN_CHECK(dlsym(RTLD_DEFAULT, "__asan_init") != nullptr,
               "compile: generated code is to be built with -fsanitize={} (KILN_CODEGEN_SANITIZE), which needs "
               "AddressSanitizer's runtime in this process (a KILN_SANITIZE build of kiln, or LD_PRELOAD of libasan)",
               sanitizers);
  }
  const Toolchain& tools = toolchain();
  const std::string& command = tools.command;
  std::string key = cache_key(source, tools);
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
  // The precompiled prelude when it is there; else it is made in the background, for later builds.
  std::string flags;
  if (!plan.kernel_offsets.empty()) {
    std::string prelude = source.substr(0, plan.kernel_offsets.front());
    PreludeHeader h = prelude_header(prelude, tools, dir);
    if (h.supported && fs::exists(h.header + ".gch", ec)) {
      flags = " -include " + h.header;
    } else {
      start_precompiling(prelude, h, tools);
    }
  }
  std::string tag = fmt::format("{}.{}", key, getpid());
  std::string tmp = fmt::format("{}/{}.so.tmp", dir, tag);
  build_parts(split(source, plan, !flags.empty()), command + flags, fmt::format("{}/{}", dir, tag), tmp, plan.progress);
  fs::rename(tmp, so, ec);
  KILN_CHECK(!ec, "compile: cannot move {} into the cache: {}", tmp, ec.message());
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  KILN_CHECK(h != nullptr, "compile: cannot load {}: {}", so, dlerror());
  KILN_LOG("compile", "built {}", so);
  return std::shared_ptr<Library>(new Library(h, so, false));
}

}  // namespace kiln::compiler
