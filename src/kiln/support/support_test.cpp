#include <gtest/gtest.h>

#include "kiln/support/error.h"
#include "kiln/support/hash.h"
#include "kiln/support/ref_counted.h"
#include "kiln/support/small_vector.h"

namespace kiln {
namespace {

TEST(Error, CheckThrowsWithKindAndFormattedMessage) {
  try {
    KILN_CHECK_INDEX(1 > 2, "op: index {} out of range for size {}", 5, 3);
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Index);
    EXPECT_STREQ(e.what(), "op: index 5 out of range for size 3");
  }
  EXPECT_NO_THROW(KILN_CHECK(true, "never"));
  EXPECT_THROW(KILN_ASSERT(false), Error);
  EXPECT_EQ(error_kind_name(ErrorKind::Type), "TypeError");
}

TEST(SmallVector, StaysInlineThenSpills) {
  SmallVector<int64_t, 2> v{1, 2};
  v.push_back(3);
  v.push_back(4);
  EXPECT_EQ(v.size(), 4u);
  EXPECT_EQ(v[3], 4);
  SmallVector<int64_t, 2> moved(std::move(v));
  EXPECT_EQ(moved.size(), 4u);
  EXPECT_EQ(moved[0], 1);
  EXPECT_TRUE(v.empty());
  SmallVector<int64_t, 4> small{5, 6, 7};
  small.insert(small.begin() + 1, 9);
  EXPECT_EQ(small, (SmallVector<int64_t, 4>{5, 9, 6, 7}));
  small.erase(small.begin());
  EXPECT_EQ(small, (SmallVector<int64_t, 4>{9, 6, 7}));
  SmallVector<int64_t, 4> copy = small;
  copy.resize(6, 1);
  EXPECT_EQ(copy.size(), 6u);
  EXPECT_EQ(copy.back(), 1);
  EXPECT_EQ(small.size(), 3u);
}

struct Counted : RefCounted {
  explicit Counted(int* deaths) : deaths_(deaths) {}
  ~Counted() override { ++*deaths_; }
  int* deaths_;
};

TEST(RefCounted, LastOwnerDeletes) {
  int deaths = 0;
  {
    Ref<Counted> a = make_ref<Counted>(&deaths);
    Ref<Counted> b = a;
    EXPECT_EQ(a->use_count(), 2u);
    a = Ref<Counted>();
    EXPECT_EQ(deaths, 0);
  }
  EXPECT_EQ(deaths, 1);
}

TEST(Hash, CombineDependsOnOrder) {
  EXPECT_NE(hash_values(1, 2), hash_values(2, 1));
  EXPECT_EQ(hash_values(1, 2), hash_values(1, 2));
}

}  // namespace
}  // namespace kiln
