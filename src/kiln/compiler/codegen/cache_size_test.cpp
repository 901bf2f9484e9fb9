// The cache size that decides streaming stores: sysfs's spelling parsed, a positive size found.
#include <gtest/gtest.h>

#include "kiln/compiler/codegen/cache_size.h"

namespace kiln::compiler {
namespace {

TEST(CacheSize, SysfsSpellings) {
  EXPECT_EQ(parse_cache_size("32768K"), int64_t{32} << 20);
  EXPECT_EQ(parse_cache_size("300M"), int64_t{300} << 20);
  EXPECT_EQ(parse_cache_size("1G"), int64_t{1} << 30);
  EXPECT_EQ(parse_cache_size("49152"), 49152);
  EXPECT_EQ(parse_cache_size(""), -1);
  EXPECT_EQ(parse_cache_size("K"), -1);
  EXPECT_EQ(parse_cache_size("12X"), -1);
  EXPECT_EQ(parse_cache_size("99999999999999999999K"), -1);
}

TEST(CacheSize, TheMachineHasOne) {
  EXPECT_GE(last_level_cache_bytes(), int64_t{256} << 10);
  EXPECT_EQ(last_level_cache_bytes(), last_level_cache_bytes());
}

}  // namespace
}  // namespace kiln::compiler
