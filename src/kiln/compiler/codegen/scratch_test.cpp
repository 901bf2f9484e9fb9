// Per-thread scratch: a slot's region is aligned, reused by a later request of the same thread that
// fits, separate from other slots and from other threads' regions, and holds what was written to it.
#include "kiln/compiler/codegen/scratch.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <thread>

namespace kiln::compiler {
namespace {

bool aligned64(const void* p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(ThreadScratch, SlotsAreAlignedSeparateAndReused) {
  auto* a = static_cast<char*>(thread_scratch(7, 4096));
  auto* b = static_cast<char*>(thread_scratch(8, 4096));
  ASSERT_TRUE(aligned64(a));
  ASSERT_TRUE(aligned64(b));
  EXPECT_TRUE(a + 4096 <= b || b + 4096 <= a) << "slots 7 and 8 overlap";
  std::memset(a, 1, 4096);
  std::memset(b, 2, 4096);
  EXPECT_EQ(a[4095], 1);
  EXPECT_EQ(thread_scratch(7, 4096), a) << "a warm request allocates again";
  EXPECT_TRUE(aligned64(thread_scratch(7, 0)));  // an empty row still gets a valid pointer
  auto* grown = static_cast<char*>(thread_scratch(7, 1 << 20));
  ASSERT_TRUE(aligned64(grown));
  std::memset(grown, 3, 1 << 20);  // the whole larger row is usable
  EXPECT_EQ(grown[(1 << 20) - 1], 3);
  EXPECT_EQ(b[0], 2) << "growing slot 7 touched slot 8";
}

TEST(ThreadScratch, ThreadsGetTheirOwnRegions) {
  void* mine = thread_scratch(3, 256);
  void* theirs = nullptr;
  std::thread([&] { theirs = thread_scratch(3, 256); }).join();
  EXPECT_NE(theirs, nullptr);
  EXPECT_NE(mine, theirs);
  EXPECT_EQ(thread_scratch(3, 256), mine);
}

}  // namespace
}  // namespace kiln::compiler
