// The pickle VM: opcodes by hand, Python's own pickles of protocols 2 to 5, and malformed streams that
// must each be a kiln::Error naming the opcode and the byte offset.
#include "kiln/import/pickle.h"

#include <gtest/gtest.h>

#include <random>
#include <sstream>

#include "kiln/import/pickle_writer_test_util.h"
#include "python_ref.h"

namespace kiln {
namespace {

using namespace std::string_literals;

using testing::PickleWriter;
using K = PickleValue::Kind;

std::string error_of(std::string_view bytes, const PickleHooks& hooks = {}) {
  try {
    PickleValue v = unpickle(testing::as_bytes(bytes), hooks, "t.pkl");
    return "no error; value " + v.describe();
  } catch (const Error& e) {
    return e.message();
  }
}

#define EXPECT_ERROR(bytes, text) EXPECT_PRED_FORMAT2(::testing::IsSubstring, text, error_of(bytes))

TEST(Pickle, ScalarOpcodes) {
  PickleWriter w;
  w.proto(2).mark();
  w.none().boolean(true).boolean(false);
  w.op('K').op(255).op('M').le(65535, 2).op('J').le(static_cast<uint32_t>(-5), 4);
  w.op(0x8a).op(0);                    // LONG1 of no bytes: 0
  w.op(0x8a).op(2).op(0x7f).op(0xff);  // -129
  w.op(0x8a).op(6).le(uint64_t{1} << 40, 6);
  w.op(0x8b).le(8, 4).le(static_cast<uint64_t>(INT64_MIN), 8);  // LONG4
  w.op('G').raw("\x3f\xf8\0\0\0\0\0\0"s);                       // 1.5, big-endian
  w.str("é").op(0x8c).op(2).raw("ab").op(0x8d).le(1, 8).raw("c");
  w.op('C').op(2).raw("\0\xff"s).op('B').le(1, 4).raw("x").op(0x8e).le(0, 8);
  w.tuple().stop();
  PickleValue v = unpickle(w.span());
  EXPECT_EQ(v.describe(100),
            "(None, True, False, 255, 65535, -5, 0, -129, 1099511627776, -9223372036854775808, 1.5, 'é', 'ab', 'c', "
            "b'\\x00\\xff', b'x', b'')");
  EXPECT_EQ(v.as_tuple()[5].as_int(), -5);
  EXPECT_EQ(v.as_tuple()[14].as_bytes(), "\0\xff"s);
}

TEST(Pickle, ContainersAndMemo) {
  // d = {}; memoized, then filled (how Python writes every dict); then (d, d) reads it back whole.
  PickleWriter w;
  w.proto(2).op('}').put(0).mark().str("a").integer(1).str("b").op(']').put(1).mark().integer(2).integer(3);
  w.op('e').op('u');                        // APPENDS, SETITEMS
  w.str("a").integer(7).op('s');            // SETITEM of an existing key replaces, keeps its place
  w.op(0x88).str("one").op('s');            // True
  w.integer(1).str("uno").op('s');          // 1 == True: the same key
  w.op('0').get(0).get(0).op(0x86).stop();  // POP the dict, push it twice from the memo as a pair
  PickleValue v = unpickle(w.span());
  EXPECT_EQ(v.describe(), "({'a': 7, 'b': [2, 3], True: 'uno'}, {'a': 7, 'b': [2, 3], True: 'uno'})");
  const PickleValue& d = v.as_tuple()[0];
  ASSERT_NE(d.find("b"), nullptr);
  EXPECT_EQ(d.find("b")->as_list().size(), 2u);
  EXPECT_EQ(d.find("zz"), nullptr);
}

TEST(Pickle, OwnGlobals) {
  PickleWriter w;
  w.proto(2).global("collections", "OrderedDict").op(')').op('R').put(0);
  w.mark().str("k").global("_codecs", "encode").str("a\xc3\xbf").str("latin1").op(0x86).op('R').op('u');
  w.stop();
  PickleValue v = unpickle(w.span());
  EXPECT_EQ(v.describe(), "{'k': b'a\\xff'}");
}

// Python's pickles of one structure in each protocol kiln reads: FRAME, MEMOIZE, STACK_GLOBAL,
// SHORT_BINUNICODE, BINBYTES come with the newer ones.
TEST(Pickle, ReadsPythonProtocols2To5) {
  KILN_REQUIRE_PYTHON(python);
  auto r = testing::run_python(
      python,
      "import pickle, collections\n"
      "s = [1, 2]\n"
      "od = collections.OrderedDict([(\"x\", 1.25), (\"y\", -3)])\n"
      "obj = {\"a\": [0, 255, 65536, -1, 2**40, -2**63, 1e300, float(\"-inf\"), None, True, False],\n"
      "       \"b\": (b\"x\\x00\\xff\", \"\\u00e9\\u4e2d\", \"\"), 3: (), (1, \"k\"): [], \"shared\": (s, s), \"od\": od}\n"
      "for p in (2, 3, 4, 5): print(pickle.dumps(obj, protocol=p).hex())\n");
  ASSERT_EQ(r.status, 0) << r.out;
  std::istringstream lines(r.out);
  std::string hex;
  int protocol = 2;
  while (std::getline(lines, hex)) {
    std::string bytes;
    for (size_t i = 0; i + 1 < hex.size(); i += 2) bytes += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
    PickleValue v = unpickle(testing::as_bytes(bytes));
    EXPECT_EQ(v.describe(100),
              "{'a': [0, 255, 65536, -1, 1099511627776, -9223372036854775808, 1e+300, -inf, None, True, False], "
              "'b': (b'x\\x00\\xff', 'é中', ''), 3: (), (1, 'k'): [], 'shared': ([1, 2], [1, 2]), "
              "'od': {'x': 1.25, 'y': -3}}")
        << "protocol " << protocol;
    ++protocol;
  }
  EXPECT_EQ(protocol, 6);
}

TEST(Pickle, HooksResolveGlobalsAndPersistentIds) {
  PickleHooks hooks;
  hooks.allow_global = [](std::string_view m, std::string_view n) { return m == "lib" && n == "pair"; };
  hooks.persistent_load = [](const PickleValue& pid) { return PickleValue::string("loaded " + pid.as_string()); };
  hooks.call = [](const PickleValue& f, std::vector<PickleValue> args) {
    EXPECT_EQ(f.global_qualname(), "lib.pair");
    return PickleValue::list(std::move(args));
  };
  PickleWriter w;
  w.proto(2).global("lib", "pair").str("p").op('Q').integer(4).op(0x86).op('R').stop();
  EXPECT_EQ(unpickle(w.span(), hooks).describe(), "['loaded p', 4]");

  PickleWriter bad;
  bad.proto(2).global("lib", "other").stop();
  try {
    unpickle(bad.span(), hooks, "h.pkl");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "h.pkl: byte 2: GLOBAL: global 'lib.other' is not allowed: kiln's unpickler resolves only the names "
              "torch.save writes for tensors and containers (docs/import.md)");
    EXPECT_EQ(e.kind(), ErrorKind::NotImplemented);
  }
  // A hook's own error comes back with the place it happened.
  hooks.call = [](const PickleValue&, std::vector<PickleValue>) -> PickleValue { KILN_FAIL(ErrorKind::Value, "boom"); };
  EXPECT_PRED_FORMAT2(::testing::IsSubstring, "t.pkl: byte 22: REDUCE: boom", error_of(w.bytes(), hooks));
}

TEST(Pickle, MalformedStreamsAreErrors) {
  EXPECT_ERROR("", "t.pkl: byte 0: truncated: the stream ends without a STOP opcode");
  EXPECT_ERROR("\x80\x02N"s, "t.pkl: byte 3: truncated: the stream ends without a STOP");
  EXPECT_ERROR("\x80\x02X\x0a\0\0\0abc"s, "t.pkl: byte 2: BINUNICODE: truncated: needs 10 bytes, 3 left");
  EXPECT_ERROR("\x80\x02J\x01\x02"s, "t.pkl: byte 2: BININT: truncated: needs 4 bytes, 2 left");
  EXPECT_ERROR("\x80\x02\x8d\xff\xff\xff\xff\xff\xff\xff\xff"s,
               "BINUNICODE8: truncated: needs 18446744073709551615 bytes");
  EXPECT_ERROR("\x80\x02N\x86."s, "t.pkl: byte 3: TUPLE2: stack underflow: needs 2 values, has 1");
  EXPECT_ERROR("\x80\x02."s, "t.pkl: byte 2: STOP: expected one value on the stack, found 0");
  EXPECT_ERROR("\x80\x02NN."s, "t.pkl: byte 4: STOP: expected one value on the stack, found 2");
  EXPECT_ERROR("\x80\x02(N."s, "t.pkl: byte 4: STOP: a MARK is still open");
  EXPECT_ERROR("\x80\x02N.N"s, "t.pkl: byte 3: 1 bytes follow the STOP opcode");
  EXPECT_ERROR("\x80\x02(a."s, "t.pkl: byte 3: APPEND: stack underflow (down to a MARK)");
  EXPECT_ERROR("\x80\x02Ne."s, "t.pkl: byte 3: APPENDS: no MARK to pop to");
  EXPECT_ERROR("\x80\x02N(Ne."s, "t.pkl: byte 5: APPENDS: appending to a None, not a list");
  EXPECT_ERROR("\x80\x02}(Nu."s, "t.pkl: byte 5: SETITEMS: an odd number (1) of keys and values");
  EXPECT_ERROR("\x80\x02}]Ns."s, "SETITEM: a dict key of type list (unhashable or not supported)");
  EXPECT_ERROR("\x80\x02h\x07."s, "t.pkl: byte 2: BINGET: memo index 7 was never stored (0 stored)");
  EXPECT_ERROR("\x80\x02Nq\x00j\x00\x01\x00\x00."s,
               "t.pkl: byte 5: LONG_BINGET: memo index 256 was never stored (1 stored)");
  EXPECT_ERROR("\x80\x02q\x00."s, "t.pkl: byte 2: BINPUT: stack underflow: nothing to store at memo index 0");
  EXPECT_ERROR("\x80\x06N."s, "t.pkl: byte 0: PROTO: pickle protocol 6 is newer than 5");
  EXPECT_ERROR("\x80\x02\x8a\x09\0\0\0\0\0\0\0\0\x01."s,
               "t.pkl: byte 2: LONG1: an integer of 9 bytes does not fit in int64");
  EXPECT_ERROR("\x80\x02"s + "cos\nsystem\n.", "t.pkl: byte 2: GLOBAL: global 'os.system' is not allowed");
  EXPECT_ERROR("\x80\x02"s + "cos\nsys", "t.pkl: byte 2: GLOBAL: truncated: a name without its end of line");
  EXPECT_ERROR("\x80\x02\x8c\x02os\x8c\x06system\x93."s,
               "t.pkl: byte 14: STACK_GLOBAL: global 'os.system' is not allowed");
  EXPECT_ERROR("\x80\x02(cos\nsystem\no."s, "t.pkl: byte 3: GLOBAL: global 'os.system' is not allowed");
  EXPECT_ERROR("\x80\x02i__main__\nX\n."s, "t.pkl: byte 2: INST: opcode 0x69 is outside kiln's pickle subset");
  EXPECT_ERROR("\x80\x02\xff."s, "t.pkl: byte 2: unknown opcode 0xff: opcode 0xff is outside kiln's pickle subset");
  EXPECT_ERROR("\x80\x02NNR."s, "t.pkl: byte 4: REDUCE: calling a None (None), not a global");
  EXPECT_ERROR("\x80\x02"s + "ccollections\nOrderedDict\nNR.",
               "REDUCE: arguments of collections.OrderedDict are a None, not a tuple");
  EXPECT_ERROR("\x80\x02}}\x8c\x01k\x88sb."s,
               "t.pkl: byte 9: BUILD: setting the state {'k': True} of a dict is outside");
  EXPECT_ERROR("\x80\x02NQ."s, "t.pkl: byte 3: BINPERSID: persistent id None but no loader for persistent ids");
  EXPECT_ERROR("\x80\x02\x95\x10\0\0\0\0\0\0\0N."s, "t.pkl: byte 2: FRAME: truncated: a frame of 16 bytes, 2 left");
}

TEST(Pickle, RecursiveAndExplodingStructuresAreRefused) {
  // l = []; l.append(l)
  EXPECT_ERROR(
      "\x80\x02]q\x00h\x00"
      "a."s,
      "APPEND: a list appended to itself");
  // l = []; l.append((l,)): the tuple holds a copy, so filling l afterwards is refused.
  EXPECT_ERROR(
      "\x80\x02]q\x00h\x00\x85"
      "a."s,
      "APPEND: the list is changed after it was used elsewhere");
  // 40 levels of (x, x): 2^40 copies of a 64 KiB string from 64 KiB of pickle.
  PickleWriter w;
  w.proto(2).str(std::string(65536, 'x')).put(0);
  for (int i = 0; i < 40; ++i)
    w.get(static_cast<uint8_t>(i % 2))
        .get(static_cast<uint8_t>(i % 2))
        .op(0x86)
        .put(static_cast<uint8_t>((i + 1) % 2))
        .op('0');
  w.get(0).stop();
  EXPECT_ERROR(w.bytes(), "shared references expand the pickle past 16777216 copied values");
  // 300 nested lists.
  PickleWriter deep;
  deep.proto(2);
  for (int i = 0; i < 300; ++i) deep.op(']');
  for (int i = 0; i < 299; ++i) deep.op('a');
  deep.stop();
  EXPECT_ERROR(deep.bytes(), "values nest deeper than 200 levels");
}

// Every prefix of a valid pickle, and random byte changes of it, are values or kiln::Errors: never a
// crash (this test runs under the sanitizers too).
TEST(Pickle, TruncationsAndMutationsNeverCrash) {
  PickleWriter w;
  w.proto(2).global("collections", "OrderedDict").put(0).op(')').op('R').put(1).mark();
  w.str("a").op(']').put(2).mark().integer(1).integer(-70000).op(0x8a).op(3).le(0x800000, 3).op('e');
  w.str("b").mark().none().op(0x88).op('G').le(0, 8).str("xyz").op(0x8c).op(1).raw("q").get(2).tuple().put(3);
  w.str("c").get(0).op(')').op('R').op('u').stop();
  ASSERT_NO_THROW(unpickle(w.span()));
  const std::string& good = w.bytes();
  int errors = 0;
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(unpickle(testing::as_bytes(std::string_view(good).substr(0, n))), Error) << n;
  }
  std::mt19937 rng(1234);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string bad = good;
    int changes = 1 + static_cast<int>(rng() % 3);
    for (int c = 0; c < changes; ++c) bad[rng() % bad.size()] = static_cast<char>(rng() & 0xff);
    try {
      unpickle(testing::as_bytes(bad));
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 1000);
}

}  // namespace
}  // namespace kiln
