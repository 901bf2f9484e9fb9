// arange in every mode against PyTorch 2.13's rule: an int64 arange's length is exact integer
// arithmetic on start, end and step truncated toward zero, any other's ceil((end - start) / step)
// in double;
// the values are start + i * step computed in the accumulate type (int64 with start and step
// truncated for integer dtypes, float for 16-bit floats, double else), then cast. The eager
// kernel, its meta function, the prims decomposition (iota) a trace records and the compiled code
// must all agree.
#include <cmath>

#include "harness.h"
#include "kiln/api/compile.h"
#include "kiln/trace/trace.h"

namespace kiln::testing {
namespace {

struct ArangeCase {
  Scalar start, end, step;
  DType dtype;
  std::vector<double> expected;  // PyTorch's result
};

std::string describe(const ArangeCase& c) {
  return fmt::format("arange({}, {}, {}, dtype={})", c.start, c.end, c.step, dtype_name(c.dtype));
}

Tensor arange_of(const ArangeCase& c) { return arange(c.start, c.end, c.step, c.dtype); }

std::vector<ArangeCase> cases() {
  return {
      // A fractional start: an int64 length comes from the truncated bounds ((-1 - 0) / -1 = 1),
      // any other integer dtype's from the doubles (ceil(1.5) = 2); the values from the truncated
      // start and step.
      {0.5, -1, -1, DType::Int64, {0}},
      {0.5, -1, -1, DType::Int32, {0, -1}},
      {-3, 3.5, 1.5, DType::Int64, {-3, -2, -1, 0, 1, 2}},
      {0.5, 3.7, 1.1, DType::Int64, {0, 1, 2}},
      {-0.5, -3.2, -1, DType::Int64, {0, -1, -2}},
      {0.2, 0.9, 1, DType::Int64, {}},
      {0.2, 0.9, 1, DType::Int32, {0}},
      // A step that truncates to 0, not for int64 (an error there, below): every value is the start.
      {1, 2.5, 0.5, DType::Int16, {1, 1, 1}},
      {0, 5, 0.5, DType::Int32, std::vector<double>(10, 0.0)},
      // Values past the dtype's range wrap.
      {-3, 3, 1, DType::UInt8, {253, 254, 255, 0, 1, 2}},
      {3, 0, -2, DType::Int8, {3, 1}},
      // float64 accumulation for float32/float64.
      {0.9, 0, -0.3, DType::Float64, {0.9, 0.6000000000000001, 0.30000000000000004}},
      {0.5, 3.7, 1.1, DType::Float32, {0.5, 1.600000023841858, 2.700000047683716}},
      {0, 5, 2, DType::Float32, {0, 2, 4}},
  };
}

TEST(Arange, EagerAndMetaFollowPyTorch) {
  for (const auto& c : cases()) {
    Tensor t = arange_of(c);
    EXPECT_EQ(t.dtype(), c.dtype) << describe(c);
    EXPECT_EQ(to_doubles(t), c.expected) << describe(c);
    Tensor m = arange(c.start, c.end, c.step, TensorOptions(c.dtype).device(kMeta));
    expect_same_metadata(m, t, describe(c));
  }
}

// Bounds past 2^53 are exact with int64 arguments: the length is not computed through doubles
// (where 2^60 + 10 - 2^60 is 0), in the kernel, the decomposition or the compiled code.
TEST(Arange, LargeInt64BoundsAreExact) {
  static constexpr int64_t base = int64_t{1} << 60;
  auto fn = [](const std::vector<Tensor>&) { return std::vector<Tensor>{arange(base, base + 10, 3)}; };
  for (const Tensor& t : {fn({})[0], compile(fn)({})[0]}) {
    ASSERT_EQ(t.sizes().shape(), Shape{4});
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(t.data_ptr<int64_t>()[i], base + 3 * i);
  }
  graph::Graph g = trace::trace(fn, std::vector<Tensor>{}, trace::Level::Prims);
  const auto& results = std::get<std::vector<graph::ValueRef>>(g.output_node()->args().at(0));
  EXPECT_EQ(results.at(0).node->meta().at(0).sizes, Shape{4});
}

// 16-bit floats accumulate in float32: 1.3f * 1295 is 1683.49994 (1683 as float16), while in
// double 1.3 * 1295 is 1683.5, which rounds to the even 1684.
TEST(Arange, HalfAccumulatesInFloat) {
  auto fn = [](const std::vector<Tensor>&) { return std::vector<Tensor>{arange(0, 1700, 1.3, DType::Float16)}; };
  Tensor t = fn({})[0];
  ASSERT_EQ(t.numel(), 1308);
  EXPECT_EQ(to_doubles(t)[1295], 1683.0);
  EXPECT_EQ(to_doubles(compile(fn)({})[0]), to_doubles(t));
}

TEST(Arange, TracedAndCompiledMatchEager) {
  for (const auto& c : cases()) {
    trace::TracedFn fn = [c](const std::vector<Tensor>&) { return std::vector<Tensor>{arange_of(c)}; };
    Tensor eager = fn({})[0];
    for (trace::Level level : {trace::Level::Core, trace::Level::Prims}) {
      graph::Graph g = trace::trace(fn, std::vector<Tensor>{}, level);
      const auto& results = std::get<std::vector<graph::ValueRef>>(g.output_node()->args().at(0));
      const auto& meta = results.at(0).node->meta().at(0);
      EXPECT_EQ(meta.sizes, eager.sizes().shape()) << describe(c) << " at the " << trace::level_name(level) << " level";
      EXPECT_EQ(meta.dtype, eager.dtype()) << describe(c);
    }
    Tensor out = compile(fn)({})[0];
    EXPECT_EQ(out.dtype(), eager.dtype()) << describe(c);
    EXPECT_EQ(to_doubles(out), to_doubles(eager)) << describe(c) << " compiled";
  }
}

TEST(Arange, BadArgumentsAreErrors) {
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // PyTorch has no bool arange.
  EXPECT_EQ(message([] { arange(0, 3, 1, DType::Bool); }), "arange: not implemented for bool (start 0, end 3, step 1)");
  // start and step must convert to the accumulate type (int64 here, float for float16).
  EXPECT_EQ(message([] { arange(0, 1e20, 1e19, DType::Int64); }),
            "arange: value cannot be converted to type int64 without overflow (step = 1e+19)");
  EXPECT_EQ(message([] { arange(0, 1e300, 1e299, DType::Float16); }),
            "arange: value cannot be converted to type float32 without overflow (step = 1e+299)");
  EXPECT_EQ(message([] { arange(0, 1e20, 1, DType::Int64); }),
            "arange: value cannot be converted to type int64 without overflow (end = 1e+20)");
  // An int64 length is computed in int64, whose range the span can pass.
  EXPECT_EQ(message([] { arange(int64_t{-9'000'000'000'000'000'000}, int64_t{9'000'000'000'000'000'000}, 1); }),
            "arange: the range from -9000000000000000000 to 9000000000000000000 (step 1) overflows int64");
  EXPECT_EQ(message([] { arange(0, 5, 0); }), "arange: step must be nonzero");
  EXPECT_EQ(message([] { arange(0, 5, 0.5, DType::Int64); }),
            "arange: step must be nonzero (step 0.5 truncated to int64 is 0)");
  EXPECT_EQ(message([] { arange(0, 5, -1); }),
            "arange: upper bound and lower bound inconsistent with step sign (start 0, end 5, step -1)");
  // The decomposition a trace runs checks the same.
  EXPECT_EQ(message([] {
              trace::trace([](const std::vector<Tensor>&) { return std::vector<Tensor>{arange(0, 3, 1, DType::Bool)}; },
                           std::vector<Tensor>{}, trace::Level::Prims);
            }),
            "arange: not implemented for bool (start 0, end 3, step 1)");
}

}  // namespace
}  // namespace kiln::testing
