// kiln::compile end to end: compiled results equal eager ones, fused kernels are counted, guards
// recompile on a new signature, backends are chosen by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <set>

#include "fake_cuda.h"
#include "kiln/api/compile.h"
#include "kiln/compiler/codegen/build.h"
#include "kiln/compiler/codegen/cpp.h"
#include "kiln/compiler/lower/lower.h"
#include "kiln/compiler/pipeline.h"
#include "kiln/compiler/schedule/fuse.h"
#include "kiln/core/type_promotion.h"
#include "kiln/graph/interpreter.h"
#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/runtime/executable.h"

namespace kiln {
namespace {

double max_error(const Tensor& a, const Tensor& b) {
  return sub(a.to(DType::Float64), b.to(DType::Float64)).abs().amax().item<double>();
}

// The kernels a function compiles to at the prims level.
compiler::Schedule schedule_of(const trace::TracedFn& fn, const std::vector<Tensor>& inputs) {
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  options.keep_ops_without_prims = true;
  graph::Graph g = trace::trace(fn, inputs, options);
  return compiler::run_pipeline(g, /*build=*/false).schedule;
}

size_t extern_count(const compiler::Schedule& s) { return s.items.size() - s.kernel_count(); }

std::vector<Tensor> pointwise_chain(const std::vector<Tensor>& in) {
  Tensor y = gelu(add(mul(in[0], in[1]), in[2]));
  return {mul(y, sigmoid(in[0]))};
}

TEST(Compile, PointwiseChainIsOneKernelAndMatchesEager) {
  manual_seed(0);
  std::vector<Tensor> in = {randn({64, 256}), randn({256}), randn({256})};
  EXPECT_EQ(schedule_of(pointwise_chain, in).kernel_count(), 1u);
  auto f = compile(pointwise_chain);
  auto want = pointwise_chain(in);
  auto got = f(in);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0].sizes().vec(), want[0].sizes().vec());
  EXPECT_LT(max_error(got[0], want[0]), 1e-5);
}

// A mean is its sum with the division folded into the accumulator: one kernel, whose buffer is the
// output (no second kernel copying the sum's buffer into the division's), keepdim or not.
TEST(Compile, MeanIsOneKernelWritingTheOutput) {
  manual_seed(2);
  Tensor x = randn({6, 40, 3});
  for (bool keepdim : {false, true}) {
    SCOPED_TRACE(keepdim);
    auto fn = [keepdim](const std::vector<Tensor>& in) {
      return std::vector<Tensor>{mean(in[0], IntArrayRef{1}, keepdim)};
    };
    EXPECT_EQ(schedule_of(fn, {x}).kernel_count(), 1u);
    auto got = compile(fn)({x});
    auto want = fn({x});
    EXPECT_EQ(got[0].sizes().vec(), want[0].sizes().vec());
    EXPECT_EQ(got[0].strides().vec(), want[0].strides().vec());
    EXPECT_LT(max_error(got[0], want[0]), 1e-6);
  }
}

// A dim of size 1 (a batch of one) does not split a kernel: softmax(q k^T * s) over [1, 4, 32, 32]
// reads its row max at the row it computes, whatever the index of the size-1 dim is called.
TEST(Compile, SoftmaxOfScaledScoresWithABatchOfOneIsOneKernel) {
  manual_seed(4);
  Tensor scores = randn({1, 4, 32, 32});
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(mul(in[0], Scalar(0.125)), -1)}; };
  EXPECT_EQ(schedule_of(fn, {scores}).kernel_count(), 1u);
  EXPECT_LT(max_error(compile(fn)({scores})[0], fn({scores})[0]), 1e-6);
}

// Down a dim with later elements (not a contiguous row) the eager kernel, as PyTorch's, divides
// each exponential by its column's sum; compiled code does the same, to the bit: a multiplication
// by the reciprocal was an ulp off in most elements, and atanh of a cumsum of them that reached
// 1 gave inf (tests/differential/corpus/atanh-of-a-float64-softmax-cumsum-near-one.txt). float64:
// float32's vectorized exponential and sums may differ from eager's scalar loop by an ulp.
TEST(Compile, SoftmaxDownAColumnDividesAsEagerToTheBit) {
  manual_seed(6);
  for (DType dt : {DType::Float64}) {
    for (int64_t dim : {0, 1}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " dim " + std::to_string(dim));
      Tensor x = randn({40, 3, 6}, dt);
      auto fn = [dim](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], dim)}; };
      Tensor got = compile(fn)({x})[0], want = fn({x})[0];
      EXPECT_EQ(max_error(got, want), 0.0);
    }
  }
}

// Generated code reads its buffers on the host: CUDA inputs are refused with an error naming the
// input and its device, never handed to it (the compiler has only its CPU target so far). The
// eager backend runs them through the dispatcher, which names the op without a CUDA kernel.
TEST_F(FakeDevice, CompilingCudaInputsIsAnErrorNotACrash) {
  Tensor x = ones({4, 8}).to(kCuda);
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{exp(in[0])}; };
  try {
    (void)compile(fn)({x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    // The CUDA target reads the GPU's properties from the driver, which a fake device has not.
    EXPECT_NE(std::string(e.what()).find("the CUDA device hooks are not the driver's"), std::string::npos) << e.what();
  }
  CompileOptions eager;
  eager.backend = "eager";
  try {
    (void)compile(fn, eager)({x});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no kernel for the CUDA backend"), std::string::npos) << e.what();
  }
}

TEST(Compile, NormalizationsAreOneKernelEach) {
  manual_seed(1);
  Tensor x = randn({32, 200}), w = randn({200}), b = randn({200});
  auto softmax_fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; };
  auto layer_norm_fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{layer_norm(in[0], {200}, in[1], in[2])};
  };
  auto rms_fn = [](const std::vector<Tensor>& in) {
    Tensor ms = mean(pow(in[0], Scalar(2)), IntArrayRef{-1}, true);
    Tensor scaled = mul(in[0], rsqrt(add(ms, Scalar(1e-6))));
    return std::vector<Tensor>{mul(scaled, in[1])};
  };
  struct Case {
    const char* name;
    trace::TracedFn fn;
    std::vector<Tensor> in;
  };
  for (const Case& c : {Case{"softmax", softmax_fn, {x}}, Case{"layer_norm", layer_norm_fn, {x, w, b}},
                        Case{"rmsnorm", rms_fn, {x, w}}}) {
    SCOPED_TRACE(c.name);
    EXPECT_EQ(schedule_of(c.fn, c.in).kernel_count(), 1u);
    auto got = compile(c.fn)(c.in);
    auto want = c.fn(c.in);
    EXPECT_LT(max_error(got[0], want[0]), 1e-5);
  }
}

// Values of each row from its reductions (var's last step, a sum scaled by a value per row from
// outside, the square of that, a keepdim max read again by the row's elements) are computed once
// per row by the row kernel: one kernel, equal to eager, for short, long and single rows; a total's
// epilogue (sum(x) * 2 + 1) is its kernel's too.
TEST(Compile, ValuesOfEachRowAreComputedInTheRowKernel) {
  auto fn = [](const std::vector<Tensor>& in) {
    auto [v, m] = var_mean(in[0], IntArrayRef{1}, 1, false);
    Tensor scaled = mul(sum(in[0], {1}), in[1]);
    Tensor peak = add(amax(in[0], {1}, true), 1.0);
    return std::vector<Tensor>{v, m, scaled, mul(scaled, scaled), peak, div(in[0], peak)};
  };
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{37, 1000}, {5, 3}, {1, 5000}, {64, 20000}}) {
    SCOPED_TRACE(std::to_string(rows) + " x " + std::to_string(cols));
    manual_seed(static_cast<uint64_t>(cols));
    std::vector<Tensor> in = {randn({rows, cols}), randn({rows})};
    compiler::Schedule s = schedule_of(fn, in);
    ASSERT_EQ(s.kernel_count(), 1u);
    EXPECT_EQ(std::get<compiler::Kernel>(s.items[0]).per_row.size(), 5u);  // mean, var, scaled, its square, peak
    auto got = compile(fn)(in);
    auto want = fn(in);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].sizes().vec(), want[i].sizes().vec()) << "output " << i;
      double scale = want[i].abs().amax().item<double>();
      EXPECT_LE(max_error(got[i], want[i]), 1e-5 * scale + 1e-6) << "output " << i;
    }
  }
  auto total = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(mul(sum(in[0]), 2.0), 1.0)}; };
  Tensor x = randn({100000});
  EXPECT_EQ(schedule_of(total, {x}).kernel_count(), 1u);
  EXPECT_LE(max_error(compile(total)({x})[0], total({x})[0]), 1e-3);
}

TEST(Compile, MlpIsGemmsPlusFusedEpilogues) {
  manual_seed(2);
  std::vector<Tensor> in = {randn({16, 32}), randn({64, 32}), randn({64}), randn({8, 64}), randn({8})};
  auto mlp = [](const std::vector<Tensor>& in) {
    Tensor h = gelu(linear(in[0], in[1], in[2]));
    return std::vector<Tensor>{linear(h, in[3], in[4])};
  };
  auto s = schedule_of(mlp, in);
  // Each GEMM runs with its bias (and the first with its gelu) as oneDNN post-ops: one
  // kiln::gemm_epilogue call each, no pointwise kernel reading a product back.
  EXPECT_EQ(extern_count(s), 2u);
  EXPECT_EQ(s.kernel_count(), 0u);
  auto got = compile(mlp)(in);
  EXPECT_LT(max_error(got[0], mlp(in)[0]), 1e-4);
}

TEST(Compile, MemoryPlanReusesSlotsAndWritesInPlace) {
  // e = exp(x) is read by a column sum (another kernel) and then, element by element, by the
  // kernel computing y, which may write y over e; y's column sum and column max run as a kernel
  // each (column reductions run alone, their reduced dim outside).
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor e = exp(in[0]);
    Tensor s = sum(e, IntArrayRef{0}, true);
    Tensor y = add(mul(e, Scalar(2)), s);
    Tensor total = sum(y, IntArrayRef{0});
    return std::vector<Tensor>{total, amax(y, {0})};
  };
  manual_seed(5);
  std::vector<Tensor> in = {randn({64, 48})};
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  graph::Graph g = trace::trace(fn, in, options);
  auto exe = runtime::compile_graph(std::move(g));
  EXPECT_EQ(exe->schedule().kernel_count(), 5u);
  EXPECT_EQ(exe->memory_plan().in_place, 1) << exe->memory_plan().str();
  EXPECT_EQ(exe->memory_plan().slot_bytes.size(), 2u) << exe->memory_plan().str();
  auto got = exe->run(in);
  auto want = fn(in);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_LT(max_error(got[i], want[i]) / want[i].abs().amax().item<double>(), 1e-6);
  }
}

// Every `omp simd` loop the code generator writes is one the C++ compiler vectorizes.
TEST(Compile, GeneratedInnerLoopsVectorize) {
  manual_seed(7);
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor s = softmax(in[0], -1);
    Tensor chain = mul(gelu(add(mul(in[0], in[1]), in[1])), sigmoid(in[0]));
    Tensor ln = layer_norm(in[2], {64}, std::nullopt, std::nullopt);
    return std::vector<Tensor>{s, chain, sum(in[0], IntArrayRef{0}), amax(in[0], {1}), ln, tanh(in[0])};
  };
  std::vector<Tensor> in = {randn({128, 64}), randn({64}), randn({32, 64}).to(DType::BFloat16)};
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  loopir::Program p = compiler::lower(trace::trace(fn, in, options));
  compiler::Schedule s = compiler::schedule(p);
  std::string code = compiler::generate_cpp(p, s).code;
  std::string report = compiler::vectorization_report(code);
  if (report.empty()) GTEST_SKIP() << "the C++ compiler gives no vectorization report";
  // Lines the compiler reported inside a vectorized loop.
  std::set<size_t> vectorized_lines;
  for (size_t r = report.find(".cpp:"); r != std::string::npos; r = report.find(".cpp:", r + 1)) {
    size_t eol = report.find('\n', r);
    if (report.substr(r, eol - r).find("optimized: loop vectorized") != std::string::npos) {
      vectorized_lines.insert(std::stoul(report.substr(r + 5)));
    }
  }
  std::vector<std::string> lines;
  for (size_t at = 0; at < code.size();) {
    size_t end = code.find('\n', at);
    if (end == std::string::npos) end = code.size();
    lines.push_back(code.substr(at, end - at));
    at = end + 1;
  }
  int loops = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (!lines[i].starts_with("#pragma omp simd")) continue;
    ++loops;
    // The loop runs from the `for` line to the closing brace at the same indentation.
    std::string indent = lines[i + 1].substr(0, lines[i + 1].find_first_not_of(' '));
    size_t last = i + 2;
    while (last < lines.size() && lines[last] != indent + "}") ++last;
    bool vectorized = false;
    for (size_t l = i + 2; l <= last + 1 && !vectorized; ++l) vectorized = vectorized_lines.contains(l);
    EXPECT_TRUE(vectorized) << "the loop at line " << i + 2 << " of the generated code:\n" << code;
  }
  EXPECT_GE(loops, 8);
}

// The loop IR prints and parses back: every node of several lowered programs round-trips.
TEST(Compile, LoopIrTextRoundTrips) {
  manual_seed(6);
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor ln = layer_norm(in[0], {40}, in[1], in[1]);
    Tensor both = cat(std::vector<Tensor>{softmax(in[0], -1), where(gt(in[0], Scalar(0)), ln, in[0])}, 0);
    return std::vector<Tensor>{both, amax(in[0].t(), {1}), in[0].to(DType::Float16)};
  };
  std::vector<Tensor> in = {randn({12, 40}), randn({40})};
  trace::TraceOptions options;
  options.level = trace::Level::Prims;
  loopir::Program p = compiler::lower(trace::trace(fn, in, options));
  int nodes = 0;
  for (const auto& step : p.steps) {
    if (const auto* n = std::get_if<loopir::LoopNode>(&step)) {
      EXPECT_EQ(loopir::parse_scalar(n->value.str()), n->value) << n->value.str();
      ++nodes;
    }
  }
  EXPECT_GE(nodes, 5);
  EXPECT_THROW(loopir::parse_scalar("exp(load(buf0, i0):float32"), Error);
  EXPECT_THROW(loopir::parse_scalar("exp(2:notatype)"), Error);
}

// Every graph compiles: ops without a lowering (argmax, as_strided of a computed value, random
// numbers, a convolution) run as extern calls of their eager kernels between fused kernels.
TEST(Compile, OpsWithoutALoweringRunAsExterns) {
  manual_seed(8);
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor y = exp(in[0]);
    Tensor window = as_strided(y, {3, 3}, {4, 1}, 2);
    Tensor conv = conv2d(in[1], in[2], std::nullopt, {1, 1}, {1, 1});
    return std::vector<Tensor>{argmax(y, 1), add(window, Scalar(1)), relu(conv)};
  };
  std::vector<Tensor> in = {randn({6, 4}), randn({1, 2, 5, 5}), randn({3, 2, 3, 3})};
  auto got = compile(fn)(in);
  auto want = fn(in);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].dtype(), DType::Int64);
  for (size_t i = 0; i < 3; ++i) EXPECT_LT(max_error(got[i], want[i]), 1e-5) << i;
}

// A kernel of one long row (a full reduction, a 1-D chain) splits the row across threads.
TEST(Compile, SingleRowKernelsSplitTheRow) {
  manual_seed(9);
  auto fn = [](const std::vector<Tensor>& in) {
    Tensor centered = sub(in[0], mean(in[0]));
    return std::vector<Tensor>{sum(in[0]), amax(in[0], {0}), mul(exp(centered), Scalar(2))};
  };
  Tensor x = randn({100003});
  std::vector<Tensor> in = {x};
  auto got = compile(fn)(in);
  auto want = fn(in);
  EXPECT_LT(max_error(got[0], want[0]), 1e-2);  // a sum of 1e5 float32 values, summed in another order
  EXPECT_EQ(max_error(got[1], want[1]), 0.0);
  EXPECT_LT(max_error(got[2], want[2]), 1e-4);
  Tensor with_nan = x.clone();
  with_nan.select(0, 777).fill_(std::numeric_limits<double>::quiet_NaN());
  EXPECT_TRUE(std::isnan(compile(fn)({with_nan})[1].item<double>()));
}

TEST(Compile, GuardsRecompileOnANewSignature) {
  auto f = compile(pointwise_chain);
  manual_seed(3);
  std::vector<Tensor> small = {randn({4, 8}), randn({8}), randn({8})};
  std::vector<Tensor> large = {randn({6, 8}), randn({8}), randn({8})};
  f(small);
  f(small);
  EXPECT_EQ(f.compiled_signatures(), 1u);
  auto got = f(large);
  EXPECT_EQ(f.compiled_signatures(), 2u);
  EXPECT_LT(max_error(got[0], pointwise_chain(large)[0]), 1e-5);
  std::vector<Tensor> transposed = {randn({8, 4}).t(), randn({8}), randn({8})};
  EXPECT_LT(max_error(f(transposed)[0], pointwise_chain(transposed)[0]), 1e-5);
  EXPECT_EQ(f.compiled_signatures(), 3u);
}

// Compiled var corrects the rounding of its mean (the corrected two-pass formula): rows of integers
// just below 2^53, whose mean rounds by up to a unit, keep their exact variance. (Eager's Welford
// mean rounds at every step: 8 for the first row.)
TEST(Compile, VarianceOfRowsNearTwoToThe53IsExact) {
  auto f = compile(
      [](const std::vector<Tensor>& in) { return std::vector<Tensor>{var(in[0], IntArrayRef{1}, Scalar(1), false)}; });
  double base = 9007199254740992.0 - 16;  // 2^53 - 16: integers are exact, the mean is not
  Tensor x =
      from_vector<double>({base + 1, base + 2, base + 8, base + 4, base + 3, base + 3, base + 3, base + 3}, {2, 4});
  Tensor got = f({x})[0];
  EXPECT_DOUBLE_EQ(got[0].item<double>(), 115.0 / 12.0);  // var of [1, 2, 8, 4]
  EXPECT_EQ(got[1].item<double>(), 0.0);
}

// Scalars in bfloat16 arithmetic, as PyTorch's CPU kernels take them: mul and true division read a
// one-element second operand in float as given (x * 0.1 multiplies by float(0.1)); every other op
// rounds it to bfloat16 first (x + 0.1 adds bfloat16(0.1) = 0.10009765625), and so do integers
// (x + 257 adds 256). Eager and compiled alike, bit for bit against that arithmetic.
TEST(Compile, BFloat16ScalarOperandsRoundAsPyTorchDoes) {
  manual_seed(3);
  Tensor x = to(mul(randn({4, 64}), Scalar(3.0)), DType::BFloat16);
  Tensor ints = to(mul(randn({4, 64}), Scalar(150.0)), DType::Int64);
  auto fn = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{mul(in[0], Scalar(0.1)), div(in[0], Scalar(0.3)),           add(in[0], Scalar(0.1)),
                               sub(in[0], Scalar(0.3)), mul(in[0], full({}, Scalar(0.1))), add(in[0], in[1])};
  };
  auto compiled = compile(fn);
  auto rounded = [](double v) { return static_cast<float>(BFloat16(static_cast<float>(v))); };
  const float tenth = 0.1f, third = 0.3f;
  for (const auto& got : {fn({x, ints}), compiled({x, ints})}) {
    for (int64_t i = 0; i < x.numel(); ++i) {
      float xv = x.reshape({-1})[i].item<float>();
      float iv = rounded(static_cast<double>(ints.reshape({-1})[i].item<int64_t>()));
      EXPECT_EQ(got[0].reshape({-1})[i].item<float>(), rounded(xv * tenth)) << i;
      EXPECT_EQ(got[1].reshape({-1})[i].item<float>(), rounded(xv / third)) << i;
      EXPECT_EQ(got[2].reshape({-1})[i].item<float>(), rounded(xv + rounded(0.1))) << i;
      EXPECT_EQ(got[3].reshape({-1})[i].item<float>(), rounded(xv - rounded(0.3))) << i;
      EXPECT_EQ(got[4].reshape({-1})[i].item<float>(), rounded(xv * tenth)) << i;
      EXPECT_EQ(got[5].reshape({-1})[i].item<float>(), rounded(xv + iv)) << i;
    }
  }
}

// A constant float64 row normalizes to exact zeros, eagerly and compiled: both take the mean around
// the row's first element (sum / n of six 0.1s misses 0.1 by an ulp, which 2^62 then magnifies).
TEST(Compile, LayerNormOfConstantFloat64RowsIsExactlyZero) {
  auto f = [](const std::vector<Tensor>& in) {
    auto [y, mean, rstd] = native_layer_norm(in[0], IntArrayRef{6}, std::nullopt, std::nullopt, 1e-5);
    return std::vector<Tensor>{mul(y, Scalar(int64_t{1} << 62)), mean};
  };
  Tensor x = expand(from_vector<double>({0.1, -0.7, 1e308, 3.3}, {4, 1}), IntArrayRef{4, 6});
  auto compiled = compile(f);
  for (const auto& got : {f({x}), compiled({x})}) {
    for (int64_t i = 0; i < 24; ++i) EXPECT_EQ(got[0].reshape({24})[i].item<double>(), 0.0) << i;
    EXPECT_EQ(got[1][2][0].item<double>(), 1e308);
  }
}

// The default dtype decides the dtype of floats made from integers: a graph traced under float32
// must not serve a call under float64 (torch.compile guards on it too).
TEST(Compile, GuardsRecompileOnANewDefaultDtype) {
  auto f = compile([](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(sinh(in[0]), Scalar(0.5))}; });
  Tensor ints = arange(Scalar(-4), Scalar(5), Scalar(1));
  EXPECT_EQ(f({ints})[0].dtype(), DType::Float32);
  {
    DefaultFloatDType wide(DType::Float64);
    Tensor got = f({ints})[0];
    EXPECT_EQ(got.dtype(), DType::Float64);
    EXPECT_EQ(f.compiled_signatures(), 2u);
    for (int64_t i = 0; i < 9; ++i) EXPECT_DOUBLE_EQ(got[i].item<double>(), 0.5 * std::sinh(double(i - 4)));
  }
  EXPECT_EQ(f({ints})[0].dtype(), DType::Float32);
  EXPECT_EQ(f.compiled_signatures(), 2u);
}

// A trace sees its inputs as distinct tensors; when they overlap in memory and the function mutates
// one, the compiled function must still do what eager does (a write through one input shows in the
// other).
TEST(Compile, InputsSharingMemoryWithAMutationMatchEager) {
  auto mutating = [](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    a.mul_(in[1]);
    return std::vector<Tensor>{add(in[1], Scalar(1)), exp(a)};
  };
  for (const char* backend : {"inductor", "eager"}) {
    SCOPED_TRACE(backend);
    auto f = compile(mutating, {.backend = backend});
    manual_seed(10);
    Tensor base = randn({4, 6});
    // Distinct inputs first: compiled, with the write-back into the first input.
    Tensor x = base.clone(), y = base.clone(), xe = base.clone(), ye = base.clone();
    auto got = f({x, y});
    auto want = mutating({xe, ye});
    EXPECT_LT(max_error(x, xe), 1e-6);
    for (size_t i = 0; i < 2; ++i) EXPECT_LT(max_error(got[i], want[i]), 1e-5) << i;
    // f(x, x): the multiplication squares x and in[1] sees it.
    Tensor same = base.clone(), same_eager = base.clone();
    got = f({same, same});
    want = mutating({same_eager, same_eager});
    EXPECT_LT(max_error(same, same_eager), 1e-6);
    for (size_t i = 0; i < 2; ++i) EXPECT_LT(max_error(got[i], want[i]), 1e-5) << i;
    // f(x, view of x) with the same sizes and strides: only the aliasing differs from the first call.
    Tensor viewed = base.clone(), viewed_eager = base.clone();
    got = f({viewed, viewed.view({4, 6})});
    want = mutating({viewed_eager, viewed_eager.view({4, 6})});
    EXPECT_LT(max_error(viewed, viewed_eager), 1e-6);
    for (size_t i = 0; i < 2; ++i) EXPECT_LT(max_error(got[i], want[i]), 1e-5) << i;
    EXPECT_EQ(f.compiled_signatures(), 2u);
    // Overlapping only in part: rows 0-3 and rows 1-4 of one tensor (the signature of f(x, x)).
    Tensor tall = randn({5, 6}), tall_eager = tall.clone();
    got = f({tall.slice(0, 0, 4), tall.slice(0, 1, 5)});
    want = mutating({tall_eager.slice(0, 0, 4), tall_eager.slice(0, 1, 5)});
    EXPECT_LT(max_error(tall, tall_eager), 1e-6);
    for (size_t i = 0; i < 2; ++i) EXPECT_LT(max_error(got[i], want[i]), 1e-5) << i;
    // Disjoint parts of one storage are distinct tensors: no overlap, but the second starts at
    // another storage offset, which is part of a signature (InputsAtAnotherStorageOffsetRecompile).
    Tensor wide = randn({8, 6});
    f({wide.slice(0, 0, 4), wide.slice(0, 4, 8)});
    EXPECT_EQ(f.compiled_signatures(), 4u);
  }
}

// Inputs sharing memory go to the backend as usual when the function mutates nothing (self-attention
// passes one tensor as query, key and value); with a mutation they run eagerly.
TEST(Compile, InputsSharingMemoryReachTheBackendWithoutAMutation) {
  int compiles = 0;
  register_backend(
      "counting_interpreter",
      Backend{trace::Level::Core, [&compiles](graph::Graph g, const std::vector<Tensor>&, const CompileOptions&) {
                ++compiles;
                auto shared = std::make_shared<graph::Graph>(std::move(g));
                return CompiledCallable(
                    [shared](const std::vector<Tensor>& in) { return graph::interpret(*shared, in); });
              }});
  manual_seed(11);
  Tensor x = randn({8, 8});
  auto f = compile(pointwise_chain, {.backend = "counting_interpreter"});
  EXPECT_LT(max_error(f({x, x, x})[0], pointwise_chain({x, x, x})[0]), 1e-5);
  EXPECT_EQ(compiles, 1);
  auto mutating = [](const std::vector<Tensor>& in) {
    Tensor a = in[0];
    a.add_(in[1]);
    return std::vector<Tensor>{mul(in[1], Scalar(3))};
  };
  auto g = compile(mutating, {.backend = "counting_interpreter"});
  Tensor y = x.clone(), y_eager = x.clone();
  auto got = g({y, y});
  EXPECT_EQ(compiles, 1);
  EXPECT_LT(max_error(got[0], mutating({y_eager, y_eager})[0]), 1e-6);
  EXPECT_LT(max_error(y, y_eager), 1e-6);
}

TEST(Compile, BackendsAreChosenByName) {
  manual_seed(4);
  std::vector<Tensor> in = {randn({4, 8}), randn({8}), randn({8})};
  auto eager = compile(pointwise_chain, {.backend = "eager"});
  EXPECT_LT(max_error(eager(in)[0], pointwise_chain(in)[0]), 1e-6);
  int calls = 0;
  register_backend("counting", Backend{trace::Level::Core,
                                       [&calls](graph::Graph, const std::vector<Tensor>&, const CompileOptions&) {
                                         ++calls;
                                         return CompiledCallable([](const std::vector<Tensor>& x) { return x; });
                                       }});
  auto mine = compile(pointwise_chain, {.backend = "counting"});
  mine(in);
  EXPECT_EQ(calls, 1);
  EXPECT_THROW(compile(pointwise_chain, {.backend = "nope"}), Error);
}

// A diagonal of an input becomes an as_strided of its storage: an input that starts elsewhere in
// its storage is another signature (it once read the first call's elements again).
TEST(Compile, InputsAtAnotherStorageOffsetRecompile) {
  Tensor big = arange(20, TensorOptions(DType::Float32)).view({4, 5});
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{mul(diagonal(in[0]), Scalar(1.0))}; };
  auto compiled = compile(fn);
  for (int64_t start : {2, 0, 1}) {
    Tensor x = slice(big, 0, start, start + 2);
    EXPECT_EQ(sub(compiled({x})[0], fn({x})[0]).abs().amax().item<double>(), 0.0) << "rows from " << start;
  }
  EXPECT_EQ(compiled.compiled_signatures(), 3u);
}

// The overloads without a compiled path (docs/conformance.md) are a kiln::Error naming the op at
// compile time, never a crash: an output size or a number read from the data, a storage resized.
TEST(Compile, DataDependentAndResizingOpsAreNamedErrors) {
  auto call = [](const char* op, Stack s) {
    call_op_boxed(Registry::global().get(op), s);
    return s;
  };
  std::vector<std::pair<std::string, trace::TracedFn>> cases{
      {"nonzero",
       [&](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{call("aten::nonzero", {Value(in[0])})[0].to_tensor()};
       }},
      {"_local_scalar_dense",
       [&](const std::vector<Tensor>& in) {
         Scalar v = call("aten::_local_scalar_dense", {Value(sum(in[0]))})[0].to_scalar();
         return std::vector<Tensor>{add(in[0], v)};
       }},
      // resize_ of a tensor traces (as aten::resize, complex_and_resize_test.cpp); of a view, which
      // would change its base, it is refused.
      {"resize_",
       [&](const std::vector<Tensor>& in) {
         Tensor t = exp(in[0]).view({-1});
         call("aten::resize_", {Value(t), Value(std::vector<int64_t>{3}), Value()});
         return std::vector<Tensor>{t};
       }},
  };
  for (const auto& [op, fn] : cases) {
    try {
      compile(fn)({full({2, 2}, 1.0)});
      ADD_FAILURE() << op << " compiled";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(op), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace kiln
