// SHA-256 (FIPS 180-4), for content-addressed keys that must not collide by accident: the compile
// cache names a shared object after the hash of everything that went into building it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln {

class Sha256 {
 public:
  Sha256();
  // Appends bytes to the message.
  Sha256& update(std::string_view bytes);
  // The 64 lowercase hex digits of the digest; the hasher must not be updated afterwards.
  std::string hex_digest();

 private:
  void compress(const uint8_t* block);
  std::array<uint32_t, 8> state_;
  std::array<uint8_t, 64> block_{};
  size_t used_ = 0;      // bytes waiting in block_
  uint64_t length_ = 0;  // message bytes so far
};

// The hex SHA-256 digest of `bytes`.
std::string sha256_hex(std::string_view bytes);

}  // namespace kiln
