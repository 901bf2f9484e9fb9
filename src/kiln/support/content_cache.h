// kiln's content-addressed cache on disk: what a build made (a generated kernel's shared object, a
// cubin), stored under a key that hashes everything that went into making it (support/sha256.h), so
// a second process, or a second run, finds it instead of building it again. Entries are written
// under a temporary name and renamed into place (a reader never sees half a file); processes that
// build the same key wait on the key's file lock for one of them.
#pragma once

#include <functional>
#include <string>

namespace kiln {

// The cache's directory: $KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else ~/.cache/kiln.
std::string cache_dir();

// An exclusive advisory lock (flock) on a file, created when missing, held for the object's life.
// Close-on-exec: processes started while it is held (compilers) do not keep it.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

// The whole of the file at `path` (empty when it cannot be read).
std::string read_file_bytes(const std::string& path);

// The bytes cached as `key` + `suffix` in cache_dir(); when absent, made by `make` under the key's
// file lock, written under a temporary name and renamed into place. `from_cache` says whether they
// were there. Throws kiln::Error naming the path when the directory or the file cannot be written.
std::string cached_bytes(const std::string& key, const std::string& suffix, const std::function<std::string()>& make,
                         bool& from_cache);

}  // namespace kiln
