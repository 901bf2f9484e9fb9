// Typed op attributes: one value per op, set once, read by handle, completeness listed.
#include "kiln/ops/op_attr.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>

namespace kiln {
namespace {

struct Spelling {
  std::string cpp;
  int arity = 1;
};

// An attribute a higher layer would define, set from a static registrar as kernels are.
OpAttr<Spelling>& test_spelling() {
  static OpAttr<Spelling> attr("test.spelling");
  return attr;
}
const OpAttrRegistrar kSpellings([](Registry& r) {
  test_spelling().set(r.get("aten::exp"), {"k_exp", 1});
  test_spelling().set(r.get("aten::add.Tensor"), {"+", 2});
});

TEST(OpAttr, ValuesAreSetByRegistrarsAndReadByHandle) {
  auto& r = Registry::global();
  const Spelling* exp = test_spelling().get(r.get("aten::exp"));
  ASSERT_NE(exp, nullptr);
  EXPECT_EQ(exp->cpp, "k_exp");
  EXPECT_EQ(test_spelling().get(r.get("aten::add.Tensor"))->arity, 2);
  EXPECT_EQ(test_spelling().get(r.get("aten::log")), nullptr);  // absent
  EXPECT_EQ(test_spelling().get(nullptr), nullptr);
  EXPECT_TRUE(test_spelling().has(r.get("aten::exp")));
  EXPECT_FALSE(test_spelling().has(r.get("aten::log")));
  // The same object every time: lookups hand out the stored value, never a copy.
  EXPECT_EQ(test_spelling().get(r.get("aten::exp")), exp);
}

TEST(OpAttr, IsSetOncePerOp) {
  OpHandle exp = Registry::global().get("aten::exp");
  try {
    test_spelling().set(exp, {"std::exp", 1});
    FAIL() << "a second value was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op aten::exp already has attribute 'test.spelling' (an attribute is set once per op)");
  }
  EXPECT_EQ(test_spelling().get(exp)->cpp, "k_exp");
  EXPECT_THROW(test_spelling().set(nullptr, {}), Error);
}

TEST(OpAttr, NamesAreUnique) {
  OpAttr<int> first("test.unique");
  try {
    OpAttr<int> second("test.unique");
    FAIL() << "two attributes share a name";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "op attribute 'test.unique' is defined twice");
  }
  EXPECT_EQ(first.name(), "test.unique");
}

TEST(OpAttr, ListsTheOpsOfASetThatLackIt) {
  auto& r = Registry::global();
  std::vector<OpHandle> wanted = {r.get("aten::exp"), r.get("aten::log"), r.get("aten::add.Tensor"),
                                  r.get("aten::sin")};
  auto missing = test_spelling().missing(wanted);
  ASSERT_EQ(missing.size(), 2u);
  EXPECT_EQ(missing[0]->name(), "aten::log");
  EXPECT_EQ(missing[1]->name(), "aten::sin");
  auto with = test_spelling().ops();
  ASSERT_EQ(with.size(), 2u);  // declaration order
  EXPECT_TRUE(with[0]->index() < with[1]->index());
}

TEST(OpAttr, OpsHaveDenseStableIndices) {
  auto ops = Registry::global().ops();
  for (size_t i = 0; i < ops.size(); ++i) ASSERT_EQ(ops[i]->index(), i) << ops[i]->name();
}

TEST(OpAttr, AnOpListsItsAttributes) {
  auto names = op_attr_names(Registry::global().get("aten::exp"));
  EXPECT_NE(std::find(names.begin(), names.end(), "test.spelling"), names.end());
  auto log_names = op_attr_names(Registry::global().get("aten::log"));
  EXPECT_EQ(std::find(log_names.begin(), log_names.end(), "test.spelling"), log_names.end());
}

TEST(OpAttr, ConcurrentReadsWhileAnotherAttributeIsSet) {
  auto& r = Registry::global();
  OpHandle exp = r.get("aten::exp");
  OpAttr<int> counts("test.concurrent");
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&] {
      for (int i = 0; i < 20000; ++i) wrong += test_spelling().get(exp)->cpp != "k_exp";
    });
  }
  auto ops = r.ops();
  for (size_t i = 0; i < ops.size(); ++i) counts.set(ops[i], static_cast<int>(i));  // grows its table meanwhile
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(*counts.get(ops.back()), static_cast<int>(ops.size() - 1));
}

}  // namespace
}  // namespace kiln
