// Logging channels selected by the KILN_LOG environment variable, a comma-separated list
// (KILN_LOG=dispatch,graph). Disabled channels cost one cached boolean test.
#pragma once

#include <string_view>

#include <fmt/format.h>

namespace kiln {

// True when `channel` is named in KILN_LOG (or KILN_LOG=all).
bool log_enabled(std::string_view channel);

namespace detail {
void log_line(std::string_view channel, std::string_view message);
}

}  // namespace kiln

#define KILN_LOG(channel, ...)                                       \
  do {                                                               \
    if (::kiln::log_enabled(channel)) {                              \
      ::kiln::detail::log_line(channel, ::fmt::format(__VA_ARGS__)); \
    }                                                                \
  } while (0)
