// Inflation of a zip entry's raw DEFLATE stream (RFC 1951) with zlib: the one place zip.cpp
// needs a codec. Internal to import/.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace kiln::detail {

// Inflates `compressed` into exactly `expected_size` bytes. Throws kiln::Error, prefixed by
// `what` (file and entry), when the stream is corrupt, ends early, or holds more or fewer bytes.
std::vector<std::byte> zip_inflate(std::span<const std::byte> compressed, uint64_t expected_size,
                                   std::string_view what);

}  // namespace kiln::detail
