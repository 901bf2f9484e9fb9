// Compiling generated C++ just in time, with an on-disk cache. A shared object is keyed by a hash
// of the source, the compiler flags and the compiler's identity; it is written under a temporary
// name and renamed into place (atomic), built under a per-key file lock (several processes
// compiling the same code wait for one build), and rebuilt when the cached file does not load.
// The cache lives in $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln. $CXX picks the
// compiler (default c++); $KILN_INCLUDE_DIR points at kiln's headers when the source tree moved.
#pragma once

#include <memory>
#include <string>

namespace kiln::compiler {

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

 private:
  friend std::shared_ptr<Library> compile_cpp(const std::string& source);
  Library(void* handle, std::string path, bool from_cache) : handle_(handle), path_(std::move(path)), from_cache_(from_cache) {}
  void* handle_;
  std::string path_;
  bool from_cache_;
};

// Returns the compiled `source` (from the cache when present); throws kiln::Error with the
// compiler's messages when it does not compile.
std::shared_ptr<Library> compile_cpp(const std::string& source);

// g++'s report of the loops it vectorized in `source` (-fopt-info-vec-optimized), for checking that
// generated inner loops vectorize; empty when the compiler gives no such report.
std::string vectorization_report(const std::string& source);

std::string cache_dir();
// The compiler command and flags (without file names), part of the cache key.
std::string compiler_command();

}  // namespace kiln::compiler
