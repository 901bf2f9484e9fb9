// Every alias against its target: the same call (arguments built from the alias's schema) gives the
// same dtype, sizes and values, or both raise.
#include "kiln/decomp/aliases.h"

#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

// One argument of each schema type the aliases take: tensors in (-0.9, 0.9) (inside acos' and
// atanh's domains), 1 for ints and dims, 0.5 for numbers, None for optionals.
Value sample_argument(const Argument& a, int position) {
  if (a.type.optional) return Value(std::nullopt);
  if (a.type.list && a.type.base == BaseType::Tensor) {
    return Value(std::vector<Tensor>{testing::case_input({2, 3}, 1), testing::case_input({2, 3}, 2)});
  }
  if (a.type.list) return Value(std::vector<int64_t>{1});
  switch (a.type.base) {
    case BaseType::Tensor: return Value(mul(testing::case_input({2, 3}, position), Scalar(0.9)));
    case BaseType::Int: return Value(int64_t{1});
    case BaseType::Float: return Value(0.5);
    case BaseType::Bool: return Value(false);
    case BaseType::Scalar: return Value(Scalar(0.5));
    case BaseType::Str: return Value(std::string("floor"));
    default: ADD_FAILURE() << "no sample for type " << a.type.to_string(); return Value();
  }
}

TEST(Aliases, EachRunsAsItsTarget) {
  for (const decomp::OpAlias& a : decomp::op_aliases()) {
    SCOPED_TRACE(a.alias);
    OpHandle alias = Registry::global().get(a.alias);
    ASSERT_NE(alias->compound_kernel(), nullptr);
    Stack args;
    int position = 0;
    for (const Argument& arg : alias->schema().arguments) args.push_back(sample_argument(arg, ++position));
    std::vector<Tensor> got, want;
    std::string got_error, want_error;
    try {
      got = testing::call_by_name(a.alias, args);
    } catch (const Error& e) {
      got_error = e.what();
    }
    try {
      want = testing::call_by_name(a.target, args);
    } catch (const Error& e) {
      want_error = e.what();
    }
    EXPECT_EQ(got_error.empty(), want_error.empty()) << got_error << " / " << want_error;
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].dtype(), want[i].dtype());
      EXPECT_EQ(got[i].to_string(), want[i].to_string());
    }
  }
}

TEST(Aliases, TakeTheirTargetsArguments) {
  Tensor x = from_vector<int64_t>({-7, 7}), y = from_vector<int64_t>({2, 2});
  Tensor floor =
      testing::call_by_name("aten::divide.Tensor_mode", {Value(x), Value(y), Value(std::string("floor"))})[0];
  EXPECT_EQ(floor.to_string(), from_vector<int64_t>({-4, 3}).to_string());
  Tensor r = testing::call_by_name("aten::special_round", {Value(from_vector<double>({1.2345})), Value(int64_t{2})})[0];
  EXPECT_DOUBLE_EQ(r.item<double>(), 1.23);
  EXPECT_THROW(testing::call_by_name("aten::clip.Tensor", {Value(x)}), Error);  // at least one bound, as clamp
}

}  // namespace
}  // namespace kiln
