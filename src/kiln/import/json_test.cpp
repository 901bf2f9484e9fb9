#include "kiln/import/json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "kiln/support/error.h"

namespace kiln::json {
namespace {

// The message of the kiln::Error that parsing `text` throws ("" when it parses).
std::string parse_error(std::string_view text) {
  try {
    parse(text, "model.json");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Json, ReadsEveryKindOfValue) {
  Value v = parse(R"({"a": [1, -2, 3.5, 1e3, true, false, null], "b": {"c": "x\ty"}, "d": -0})");
  ASSERT_TRUE(v.is_object());
  const Value& a = v.at("a");
  ASSERT_EQ(a.size(), 7u);
  EXPECT_TRUE(a.at(0).is_int());
  EXPECT_EQ(a.at(0).as_int(), 1);
  EXPECT_EQ(a.at(1).as_int(), -2);
  EXPECT_FALSE(a.at(2).is_int());
  EXPECT_EQ(a.at(2).as_double(), 3.5);
  EXPECT_FALSE(a.at(3).is_int());  // 1e3 is written as a float
  EXPECT_EQ(a.at(3).as_double(), 1000.0);
  EXPECT_TRUE(a.at(4).as_bool());
  EXPECT_FALSE(a.at(5).as_bool());
  EXPECT_TRUE(a.at(6).is_null());
  EXPECT_EQ(v.at("b").at("c").as_string(), "x\ty");
  EXPECT_EQ(v.at("d").as_int(), 0);
  // Members keep the document's order.
  ASSERT_EQ(v.as_object().size(), 3u);
  EXPECT_EQ(v.as_object()[0].first, "a");
  EXPECT_EQ(v.as_object()[2].first, "d");
}

TEST(Json, IntegersKeepAllSixtyFourBits) {
  Value v = parse("[9223372036854775807, -9223372036854775808, 9223372036854775808]");
  EXPECT_EQ(v.at(0).as_int(), INT64_MAX);
  EXPECT_EQ(v.at(1).as_int(), INT64_MIN);
  EXPECT_FALSE(v.at(2).is_int());  // past int64: a double
  EXPECT_EQ(v.at(2).as_double(), 9223372036854775808.0);
}

TEST(Json, PyTorchsNonFiniteFloatStringsReadAsDoubles) {
  Value v = parse(R"(["Infinity", "-Infinity", "NaN", "nan"])");
  EXPECT_EQ(v.at(0).as_double(), INFINITY);
  EXPECT_EQ(v.at(1).as_double(), -INFINITY);
  EXPECT_TRUE(std::isnan(v.at(2).as_double()));
  EXPECT_THROW(v.at(3).as_double(), Error);
}

TEST(Json, DecodesEscapesAndSurrogatePairs) {
  Value v = parse(R"(["\u00e9\u4e2d\ud83d\ude00", "\"\\\/\b\f\n\r"])");
  EXPECT_EQ(v.at(0).as_string(), "\xC3\xA9\xE4\xB8\xAD\xF0\x9F\x98\x80");
  EXPECT_EQ(v.at(1).as_string(), "\"\\/\b\f\n\r");
}

TEST(Json, MalformedTextNamesTheDocumentLineAndColumn) {
  EXPECT_EQ(parse_error("{\"a\": 1,\n \"b\" 2}"), "model.json: malformed JSON at line 2, column 6: expected ':'");
  EXPECT_NE(parse_error("[1, 2").find("unexpected end"), std::string::npos);
  EXPECT_NE(parse_error("{\"a\": 1} x").find("unexpected text after"), std::string::npos);
  EXPECT_NE(parse_error("[01]").find("leading zero"), std::string::npos);
  EXPECT_NE(parse_error("[1.]").find("expected a digit"), std::string::npos);
  EXPECT_NE(parse_error("[-]").find("expected a digit"), std::string::npos);
  EXPECT_NE(parse_error("\"abc").find("unterminated string"), std::string::npos);
  EXPECT_NE(parse_error("\"a\nb\"").find("control character"), std::string::npos);
  EXPECT_NE(parse_error(R"("\x")").find("unknown escape"), std::string::npos);
  EXPECT_NE(parse_error(R"("\u12g4")").find("hexadecimal"), std::string::npos);
  EXPECT_NE(parse_error(R"("\ud83d")").find("surrogate"), std::string::npos);
  EXPECT_NE(parse_error(R"("\ude00")").find("surrogate"), std::string::npos);
  EXPECT_NE(parse_error("[tru]").find("expected 'true'"), std::string::npos);
  EXPECT_NE(parse_error("").find("unexpected end"), std::string::npos);
  EXPECT_NE(parse_error("{1: 2}").find("string key"), std::string::npos);
  EXPECT_NE(parse_error("[1 2]").find("expected ','"), std::string::npos);
  EXPECT_NE(parse_error("@").find("unexpected character '@'"), std::string::npos);
}

TEST(Json, DuplicateKeysAreAnError) {
  EXPECT_NE(parse_error(R"({"b": 1, "a": 2, "b": 3})").find("duplicate key \"b\" in the object at $"),
            std::string::npos);
  EXPECT_EQ(parse_error(R"({"b": 1, "a": {"b": 3}})"), "");
}

TEST(Json, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string deep(100000, '[');
  EXPECT_NE(parse_error(deep).find("nesting deeper than"), std::string::npos);
  std::string ok = std::string(kMaxDepth, '[') + std::string(kMaxDepth, ']');
  EXPECT_EQ(parse_error(ok), "");
}

TEST(Json, LookupsNameThePathAndWhatWasWanted) {
  Value v = parse(R"({"graph": {"nodes": [{"target": 3}]}})", "archive/models/model.json");
  const Value& node = v.at("graph").at("nodes").at(0);
  EXPECT_EQ(node.path(), "$.graph.nodes[0]");
  try {
    node.at("target").as_string();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "archive/models/model.json: $.graph.nodes[0].target is an integer where a string was expected");
  }
  try {
    node.at("inputs");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "archive/models/model.json: $.graph.nodes[0] has no member \"inputs\"");
  }
  EXPECT_THROW(v.at("graph").at("nodes").at(1), Error);
  EXPECT_THROW(v.at(0), Error);  // an object is not an array
  EXPECT_EQ(node.find("inputs"), nullptr);
}

}  // namespace
}  // namespace kiln::json
