#include "kiln/support/log.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

namespace kiln {
namespace {

std::vector<std::string> parse_channels() {
  std::vector<std::string> out;
  const char* env = std::getenv("KILN_LOG");
  if (!env) return out;
  std::string_view rest(env);
  while (!rest.empty()) {
    size_t comma = rest.find(',');
    std::string_view item = rest.substr(0, comma);
    if (!item.empty()) out.emplace_back(item);
    rest = comma == std::string_view::npos ? std::string_view() : rest.substr(comma + 1);
  }
  return out;
}

}  // namespace

bool log_enabled(std::string_view channel) {
  static const std::vector<std::string> channels = parse_channels();
  if (channels.empty()) return false;
  for (const auto& c : channels) {
    if (c == channel || c == "all") return true;
  }
  return false;
}

namespace detail {
void log_line(std::string_view channel, std::string_view message) {
  static std::mutex mu;
  std::lock_guard lock(mu);
  std::fprintf(stderr, "[kiln:%.*s] %.*s\n", static_cast<int>(channel.size()), channel.data(),
               static_cast<int>(message.size()), message.data());
}
}  // namespace detail

}  // namespace kiln
