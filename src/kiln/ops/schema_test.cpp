#include <gtest/gtest.h>

#include "core_aten_table.h"
#include "kiln/ops/schema.h"
#include "kiln/ops/value.h"
#include "kiln/support/error.h"

namespace kiln {
namespace {

TEST(Schema, ParsesArgumentsDefaultsAndKeywordOnly) {
  Schema s = parse_schema("add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor");
  EXPECT_EQ(s.ns, "aten");
  EXPECT_EQ(s.name, "add");
  EXPECT_EQ(s.overload, "Tensor");
  ASSERT_EQ(s.arguments.size(), 3u);
  EXPECT_FALSE(s.arguments[1].kwarg_only);
  EXPECT_TRUE(s.arguments[2].kwarg_only);
  EXPECT_EQ(s.arguments[2].type.base, BaseType::Scalar);
  EXPECT_EQ(s.arguments[2].default_text, "1");
  EXPECT_EQ(s.num_positional(), 2);
  EXPECT_EQ(s.qualified_name(), "aten::add.Tensor");
  ASSERT_EQ(s.returns.size(), 1u);
}

TEST(Schema, ParsesListsOptionalsAndAliases) {
  Schema s = parse_schema("split_with_sizes(Tensor(a -> *) self, SymInt[] split_sizes, int dim=0) -> Tensor(a)[]");
  ASSERT_TRUE(s.arguments[0].alias.has_value());
  EXPECT_TRUE(s.arguments[0].alias->to_wildcard);
  EXPECT_TRUE(s.arguments[1].type.list);
  EXPECT_TRUE(s.returns[0].type.list);
  EXPECT_TRUE(s.is_view());

  Schema idx = parse_schema("index.Tensor(Tensor self, Tensor?[] indices) -> Tensor");
  EXPECT_TRUE(idx.arguments[1].type.element_optional);
  EXPECT_FALSE(idx.arguments[1].type.optional);
  EXPECT_EQ(idx.arguments[1].type.to_string(), "Tensor?[]");

  Schema mean =
      parse_schema("mean.dim(Tensor self, int[1]? dim, bool keepdim=False, *, ScalarType? dtype=None) -> Tensor");
  EXPECT_EQ(mean.arguments[1].type.list_size, 1);
  EXPECT_TRUE(mean.arguments[1].type.optional);
  EXPECT_EQ(mean.arguments[1].type.to_string(), "int[1]?");

  Schema inplace = parse_schema("add_.Tensor(Tensor(a!) self, Tensor other, *, Scalar alpha=1) -> Tensor(a!)");
  EXPECT_TRUE(inplace.is_mutable());
  EXPECT_TRUE(inplace.arguments[0].alias->is_write);

  Schema named = parse_schema("max.dim(Tensor self, int dim, bool keepdim=False) -> (Tensor values, Tensor indices)");
  ASSERT_EQ(named.returns.size(), 2u);
  EXPECT_EQ(named.returns[1].name, "indices");

  Schema custom = parse_schema("mylib::op(Tensor x, str mode='fast') -> ()");
  EXPECT_EQ(custom.ns, "mylib");
  EXPECT_TRUE(custom.returns.empty());
  EXPECT_EQ(custom.text, "op(Tensor x, str mode='fast') -> ()");
}

TEST(Schema, EveryCoreAtenSchemaParses) {
  auto table = testing::core_aten_table();
  ASSERT_EQ(table.size(), 193u);
  for (const auto& [name, text] : table) {
    Schema s = parse_schema(text);
    EXPECT_EQ(s.name_with_overload(), name);
    EXPECT_EQ(s.text, text);
    for (const auto& a : s.arguments) {
      if (a.default_text) {
        EXPECT_NO_THROW(parse_default(*a.default_text, a.type)) << text;
      }
    }
  }
}

TEST(Schema, MalformedSchemasNameTheColumn) {
  auto message = [](const char* text) {
    try {
      parse_schema(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message("abs(Tensor self -> Tensor"),
            "schema parse error at column 17: expected ',' or ')' in 'abs(Tensor self -> Tensor'");
  EXPECT_EQ(message("abs(Tensr self) -> Tensor"),
            "schema parse error at column 5: unknown type 'Tensr' in 'abs(Tensr self) -> Tensor'");
  EXPECT_NE(message("abs(Tensor self) Tensor").find("expected '-'"), std::string::npos);
  EXPECT_NE(message("f(int[2 x) -> Tensor").find("column"), std::string::npos);
  EXPECT_NE(message("f(int x=[1,2) -> Tensor").find("unterminated default"), std::string::npos);
}

TEST(Schema, DefaultsParseToTypedValues) {
  Type int2{BaseType::Int, false, true, 2};
  EXPECT_EQ(parse_default("0", int2).to_int_list(), (std::vector<int64_t>{0, 0}));
  EXPECT_EQ(parse_default("[1, 2]", Type{BaseType::Int, false, true}).to_int_list(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(parse_default("'none'", Type{BaseType::Str}).to_string_value(), "none");
  EXPECT_EQ(parse_default("long", Type{BaseType::ScalarType, true}).to_dtype(), DType::Int64);
  EXPECT_DOUBLE_EQ(parse_default("1e-05", Type{BaseType::Float}).to_double(), 1e-5);
  EXPECT_TRUE(parse_default("None", Type{BaseType::Tensor, true}).is_none());
  EXPECT_EQ(parse_default("1", Type{BaseType::Scalar}).tag(), Value::Tag::Int);
  EXPECT_EQ(parse_default("1.5", Type{BaseType::Scalar}).tag(), Value::Tag::Double);
  EXPECT_THROW(parse_default("x", Type{BaseType::Int}), Error);
}

}  // namespace
}  // namespace kiln
