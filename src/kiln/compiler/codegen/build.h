// Compiling generated C++ just in time, with an on-disk cache. A shared object is keyed by the
// SHA-256 of everything its build depends on: the source, the bytes of the kiln headers it includes
// (transitively), the compiler command and flags, the compiler's identity, and the target the flags
// resolve to (the compiler's predefined macros: -march=native means different ISAs on different
// CPUs). It is written under a temporary name and renamed into place (atomic), built under a
// per-key file lock (several processes compiling the same code wait for one build), and rebuilt when
// the cached file does not load. The cache lives in $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
// ~/.cache/kiln. $CXX picks the compiler (default c++); $KILN_CODEGEN_SANITIZE lists the sanitizers
// generated code is built with (default: kiln's own, `address,undefined` in a KILN_SANITIZE build;
// empty for none). Generated code includes kiln's headers; include_dir() says where they are found.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kiln/support/content_cache.h"

namespace kiln::compiler {

// How compile_cpp may split a source into parts compiled in parallel and linked into one shared
// object: the offsets where kernels begin (the text before the first is a prelude each part
// repeats; a kernel's text runs to the next offset), and a callback told after each part how many
// kernels are compiled of how many.
struct BuildPlan {
  std::vector<size_t> kernel_offsets;
  std::function<void(size_t done, size_t total)> progress;
};

// A part of a generated source for a parallel build: the prelude, then consecutive kernels.
struct SourcePart {
  std::string source;
  size_t kernels = 0;
};

// `source` (kernels starting at `kernel_offsets`) as at most `count` parts of about equal text, each
// the prelude (or `prelude`, when given, in its place) plus consecutive kernels; one part when
// there are no offsets or `count` is 1 or less.
std::vector<SourcePart> split_source(const std::string& source, const std::vector<size_t>& kernel_offsets, size_t count,
                                     const std::optional<std::string>& prelude = std::nullopt);

// A loaded shared object; symbols stay valid while it lives.
class Library {
 public:
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;
  // The address of an extern "C" function; throws kiln::Error naming it when absent.
  void* symbol(const std::string& name) const;
  const std::string& path() const { return path_; }
  bool from_cache() const { return from_cache_; }
  // Loads a shared object built earlier (a compiled package's kernels); throws kiln::Error with the
  // loader's reason when it does not load.
  static std::shared_ptr<Library> open(const std::string& path);

 private:
  friend std::shared_ptr<Library> compile_cpp(const std::string& source, const BuildPlan& plan);
  // Hands the module kiln's per-thread scratch (scratch.h) when it asks for it (kiln_bind_scratch).
  Library(void* handle, std::string path, bool from_cache);
  void* handle_;
  std::string path_;
  bool from_cache_;
};

// Returns the compiled `source` (from the cache when present); throws kiln::Error with the
// compiler's messages when it does not compile. With a plan of several kernels, up to one part per
// hardware thread is compiled at once (the cache key is the whole source's, as without a plan).
std::shared_ptr<Library> compile_cpp(const std::string& source, const BuildPlan& plan = {});

// g++'s report of the loops it vectorized in `source` (-fopt-info-vec-optimized), for checking that
// generated inner loops vectorize; empty when the compiler gives no such report.
std::string vectorization_report(const std::string& source);

// The directory generated code's `#include "kiln/..."` lines are resolved in (its -I), the first of:
//   1. $KILN_INCLUDE_DIR, when set and not empty;
//   2. an installed kiln's include directory, found from where libkiln.so is loaded from at run time
//      (<libdir>/../include for `cmake --install`'s layout), when it holds kiln's headers;
//   3. the source tree kiln was built from (<source>/src), when it holds them (a build tree).
// Throws kiln::Error naming the places looked at when none does. The cache key hashes the headers'
// paths and bytes, so code compiled against one set of headers is never reused for another.
std::string include_dir();
// The compiler command and flags (without file names), part of the cache key.
std::string compiler_command();
// The sanitizers generated code is built with ("address,undefined"), or empty.
std::string codegen_sanitizers();

// What a build depends on besides its source.
struct Toolchain {
  std::string command;      // compiler_command()
  std::string include_dir;  // where `#include "..."` lines of generated code are looked up
  std::string identity;     // the compiler's --version
  std::string target;       // the macros the compiler predefines under `command` (ISA features, sanitizers), sorted
};
// Runs the compiler to describe `command` (the macros show what -march=native resolved to).
Toolchain probe_toolchain(const std::string& command, const std::string& include_dir);
// This process's toolchain (probed once per command).
const Toolchain& toolchain();

// The headers `source` includes with quotes, found under `include_dir` (or beside the including
// header), transitively, in a fixed order; names that are not found are listed as they are written.
std::vector<std::string> included_headers(const std::string& source, const std::string& include_dir);
// The cache key of `source` built by `t`: a SHA-256 (64 hex digits) of the source, the bytes of its
// included headers, and the toolchain.
std::string cache_key(const std::string& source, const Toolchain& t);

// The precompiled prelude. Generated sources all begin with the same text (a plan's text before its
// first kernel: the includes), and parsing it is most of a small source's compile time (2.5 s of
// 2.5 s on the development VM). With GCC, compile_cpp precompiles it once per toolchain and set of
// kiln headers into the cache directory (prelude-<key>/prelude.h and its .gch, about 80 MB; the key
// is cache_key's of the prelude) and compiles sources that begin with it with `-include prelude.h`.
// GCC reads the .gch in place of the headers, and the source's own copy of the prelude then changes
// nothing (include guards); a .gch GCC finds invalid is skipped for the text, so no output depends
// on it, and the cache key of a source is the same with or without it. The first build that misses
// in a cache directory starts precompiling the prelude in a background process and compiles without
// it, so no build waits for it.
struct PreludeHeader {
  bool supported = false;  // the compiler is GCC (clang's precompiled headers work differently)
  std::string header;      // .../prelude-<key>/prelude.h; the precompiled header is header + ".gch"
};
PreludeHeader prelude_header(const std::string& prelude, const Toolchain& t, const std::string& dir);
// Precompiles `prelude` for `t` into the cache directory `dir` unless it is there (under a file lock:
// one process builds it, others wait); returns whether the precompiled header is there. Never throws:
// a prelude that does not precompile only leaves compiles at their old speed.
bool precompile_prelude(const std::string& prelude, const Toolchain& t, const std::string& dir);
// Starts precompiling `prelude` in a detached background process unless it is there, failed before,
// or is being built (a mark beside the header, taken over after ten minutes); returns at once. A
// failure leaves the compiler's messages in prelude.h.failed, and no later build tries again.
void start_precompiling_prelude(const std::string& prelude, const Toolchain& t, const std::string& dir);

}  // namespace kiln::compiler
