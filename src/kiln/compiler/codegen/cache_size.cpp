#include "kiln/compiler/codegen/cache_size.h"

#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>

namespace kiln::compiler {
namespace {

std::string read_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

int64_t from_sysfs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path dir = "/sys/devices/system/cpu/cpu0/cache";
  int best_level = 0;
  int64_t best = -1;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind("index", 0) != 0) continue;
    std::string type = read_line(entry.path() / "type");
    if (type == "Instruction") continue;
    int level = std::atoi(read_line(entry.path() / "level").c_str());
    int64_t size = parse_cache_size(read_line(entry.path() / "size"));
    if (level > best_level && size > 0) best_level = level, best = size;
  }
  return best;
}

}  // namespace

int64_t parse_cache_size(const std::string& text) {
  size_t i = 0;
  int64_t n = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    if (n > (int64_t{1} << 40)) return -1;
    n = n * 10 + (text[i++] - '0');
  }
  if (i == 0) return -1;
  std::string unit = text.substr(i);
  if (unit.empty()) return n;
  if (unit == "K") return n << 10;
  if (unit == "M") return n << 20;
  if (unit == "G") return n << 30;
  return -1;
}

int64_t last_level_cache_bytes() {
  static const int64_t bytes = [] {
    int64_t b = from_sysfs();
#ifdef _SC_LEVEL3_CACHE_SIZE
    if (b <= 0) b = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
    return b > 0 ? b : int64_t{32} << 20;
  }();
  return bytes;
}

}  // namespace kiln::compiler
