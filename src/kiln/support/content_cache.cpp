#include "kiln/support/content_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kiln/support/error.h"

namespace kiln {

namespace fs = std::filesystem;

std::string cache_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/kiln";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : "/tmp") + "/.cache/kiln";
}

FileLock::FileLock(const std::string& path) : fd_(open(path.c_str(), O_CREAT | O_RDWR | O_CLOEXEC, 0644)) {
  KILN_CHECK(fd_ >= 0, "compile: cannot open lock file {}", path);
  flock(fd_, LOCK_EX);
}

FileLock::~FileLock() {
  flock(fd_, LOCK_UN);
  close(fd_);
}

std::string read_file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream text;
  text << f.rdbuf();
  return text.str();
}

std::string cached_bytes(const std::string& key, const std::string& suffix, const std::function<std::string()>& make,
                         bool& from_cache) {
  std::string dir = cache_dir();
  std::error_code ec;
  fs::create_directories(dir, ec);
  KILN_CHECK(!ec, "compile: cannot create the cache directory {}: {}", dir, ec.message());
  std::string path = fmt::format("{}/{}{}", dir, key, suffix);
  from_cache = true;
  if (fs::exists(path, ec)) return read_file_bytes(path);
  FileLock lock(fmt::format("{}/{}.lock", dir, key));
  if (fs::exists(path, ec)) return read_file_bytes(path);  // built by another process while we waited
  from_cache = false;
  std::string bytes = make();
  std::string tmp = fmt::format("{}/{}.{}{}.tmp", dir, key, getpid(), suffix);
  {
    std::ofstream f(tmp, std::ios::binary);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    KILN_CHECK(f.good(), "compile: cannot write {}", tmp);
  }
  fs::rename(tmp, path, ec);
  KILN_CHECK(!ec, "compile: cannot move {} into the cache: {}", tmp, ec.message());
  return bytes;
}

}  // namespace kiln
