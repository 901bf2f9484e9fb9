// Running compiled graphs: results that depend on extern views of planned buffers equal eager and
// a float64 reference; outputs that view planned memory stay valid across calls; inputs that differ
// from what the code was compiled for are refused with a kiln::Error naming them.
#include <gtest/gtest.h>

#include <string>

#include "kiln/api/compile.h"
#include "kiln/ops/api.h"
#include "kiln/runtime/executable.h"

namespace kiln::runtime {
namespace {

double max_error(const Tensor& a, const Tensor& b) {
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>();
}

std::shared_ptr<Executable> compiled(const trace::TracedFn& fn, const std::vector<Tensor>& inputs) {
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  options.keep_ops_without_prims = true;
  return compile_graph(trace::trace(fn, inputs, options));
}

std::vector<Tensor> diagonal_fn(const std::vector<Tensor>& in) {
  Tensor d = exp(in[0]).diagonal();
  Tensor s = sin(in[0]);
  return {add(add(d.unsqueeze(0), s), s.t())};
}

// Compiled, eager and float64 results of `fn` on `in`: compiled and eager both within float32
// rounding of the float64 reference.
void expect_matches_eager_and_float64(const trace::TracedFn& fn, const std::vector<Tensor>& in) {
  auto got = compiled(fn, in)->run(in);
  auto viaapi = compile(fn)(in);
  auto eager = fn(in);
  std::vector<Tensor> in64;
  for (const auto& t : in) in64.push_back(t.to(DType::Float64));
  auto reference = fn(in64);
  ASSERT_EQ(got.size(), reference.size());
  for (size_t i = 0; i < got.size(); ++i) {
    double scale = 1 + reference[i].abs().amax().item<double>();
    EXPECT_LT(max_error(eager[i], reference[i]) / scale, 1e-6) << i;
    EXPECT_LT(max_error(got[i], reference[i]) / scale, 1e-6) << i;
    EXPECT_LT(max_error(viaapi[i], reference[i]) / scale, 1e-6) << i;
  }
}

TEST(Executable, ExternViewsOfPlannedBuffersReadTheRightMemory) {
  manual_seed(0);
  expect_matches_eager_and_float64(diagonal_fn, {randn({8, 8})});
  // The kernel computing y may not write over exp(x) while it reads its diagonal.
  auto in_place = [](const std::vector<Tensor>& in) {
    Tensor e = exp(in[0]);
    Tensor y = add(mul(e, Scalar(2)), e.diagonal().unsqueeze(0));
    return std::vector<Tensor>{sum(y, IntArrayRef{0}), amax(y, {0})};
  };
  expect_matches_eager_and_float64(in_place, {randn({8, 8})});
  // A view of a view (as_strided of the diagonal's extern result) keeps the first base alive too.
  auto chained = [](const std::vector<Tensor>& in) {
    Tensor d = as_strided(exp(in[0]).diagonal(), {2, 2}, {1, 1}, 0);
    Tensor s = sin(in[0]);
    return std::vector<Tensor>{add(add(s, s.t()), d.sum().unsqueeze(0))};
  };
  expect_matches_eager_and_float64(chained, {randn({8, 8})});
}

// An output that views planned memory is the caller's: later steps of the same call and later calls
// do not write over it.
TEST(Executable, OutputsThatViewComputedBuffersStayValid) {
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor d = exp(in[0]).diagonal();
    Tensor c = cos(in[0]);
    return std::vector<Tensor>{d, add(c, c.t())};
  };
  manual_seed(1);
  Tensor x = randn({8, 8});
  auto exe = compiled(fn, {x});
  auto first = exe->run(std::vector<Tensor>{x});
  Tensor kept = first[0].clone();
  EXPECT_LT(max_error(first[0], exp(x).diagonal()), 1e-6);
  EXPECT_LT(max_error(first[1], fn({x})[1]), 1e-6);
  Tensor other = randn({8, 8});
  auto second = exe->run(std::vector<Tensor>{other});
  EXPECT_EQ(max_error(first[0], kept), 0.0);
  EXPECT_LT(max_error(second[0], exp(other).diagonal()), 1e-6);
}

std::string error_of(const Executable& exe, const Tensor& input) {
  try {
    exe.run(std::vector<Tensor>{input});
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

void expect_error(const Executable& exe, const Tensor& input, std::initializer_list<const char*> parts) {
  std::string message = error_of(exe, input);
  for (const char* part : parts) EXPECT_NE(message.find(part), std::string::npos) << message;
}

TEST(Executable, InputsAreCheckedAgainstTheCompiledSignature) {
  manual_seed(2);
  Tensor x = randn({4, 6});
  auto exe =
      compiled([](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(exp(in[0]), Scalar(2))}; }, {x});
  EXPECT_LT(max_error(exe->run(std::vector<Tensor>{x})[0], mul(exp(x), Scalar(2))), 1e-5);
  expect_error(*exe, x.to(DType::Float64), {"input 0 (arg0)", "dtype float64", "expected float32"});
  expect_error(*exe, randn({4, 7}), {"input 0 (arg0)", "sizes [4, 7]", "expected [4, 6]"});
  expect_error(*exe, randn({6, 4}).t(), {"input 0 (arg0)", "strides [1, 4]", "expected [6, 1]"});
  expect_error(*exe, empty({4, 6}, TensorOptions(DType::Float32).device(kMeta)), {"input 0 (arg0)", "is on meta"});
  // A view whose storage ends before its last element.
  Tensor small = randn({20});
  Tensor too_big = make_tensor(small.storage(), {4, 6}, {6, 1}, 0, DType::Float32);
  expect_error(*exe, too_big, {"input 0 (arg0)", "reaches elements 0 to 23", "80 bytes"});
  Tensor shifted = make_tensor(randn({24}).storage(), {4, 6}, {6, 1}, 1, DType::Float32);
  expect_error(*exe, shifted, {"input 0 (arg0)", "reaches elements 1 to 24"});
  EXPECT_NE(error_of(*exe, Tensor()).find("undefined"), std::string::npos);
  EXPECT_THROW(exe->run(std::vector<Tensor>{x, x}), Error);
  // Strides of size-1 dims never address an element: any value is accepted.
  Tensor row = randn({1, 6});
  auto row_exe = compiled([](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; }, {row});
  Tensor odd = make_tensor(row.storage(), {1, 6}, {99, 1}, 0, DType::Float32);
  EXPECT_LT(max_error(row_exe->run(std::vector<Tensor>{odd})[0], exp(row)), 1e-6);
}

}  // namespace
}  // namespace kiln::runtime
