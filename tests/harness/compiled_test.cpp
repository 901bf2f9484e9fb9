// The op harness in compiled mode: every op with a lowering, compiled with kiln::compile (the
// inductor backend), must equal its eager result within assert_close tolerances — each op alone
// (many results of one compiled function, so one compile per dtype) and inside fused chains,
// on random values, extremal values (inf, NaN, -0, subnormals) and non-contiguous inputs. With
// KILN_HARNESS_DEVICE=cuda (make test-gpu) the compiled functions run on the GPU: their inputs
// copied there with their layouts, their results compared on the CPU with eager's.
#include <algorithm>
#include <cstdlib>
#include <functional>

#include "../device_tensors.h"
#include "../unary_ops.h"
#include "harness.h"
#include "kiln/api/compile.h"
#include "kiln/core/device_hooks.h"

namespace kiln::testing {
namespace {

// Where compiled functions run: the CPU, or the GPU with KILN_HARNESS_DEVICE=cuda.
Device compiled_device() {
  const char* v = std::getenv("KILN_HARNESS_DEVICE");
  return v && std::string(v) == "cuda" ? Device(DeviceType::CUDA, 0) : Device(DeviceType::CPU);
}

using UnaryOp = Tensor (*)(const Tensor&);
using BinaryOp = Tensor (*)(const Tensor&, const Tensor&);

struct Named {
  const char* name;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
};

std::vector<Named> float_unary() {
  const auto& ops = testing::unary_ops();
  std::vector<Named> out;
  for (const auto& entry : ops) {
    UnaryOp op = entry.second;
    out.push_back({entry.first, [op](const std::vector<Tensor>& in) { return op(in[0]); }});
  }
  out.push_back({"gelu", [](const std::vector<Tensor>& in) { return gelu(in[0]); }});
  out.push_back({"gelu_tanh", [](const std::vector<Tensor>& in) { return gelu(in[0], "tanh"); }});
  return out;
}

std::vector<Named> binary() {
  std::vector<std::pair<const char*, BinaryOp>> ops = {
      {"mul", &kiln::mul}, {"maximum", &kiln::maximum}, {"minimum", &kiln::minimum}, {"atan2", &kiln::atan2},
      {"eq", &kiln::eq},   {"ne", &kiln::ne},           {"lt", &kiln::lt},           {"le", &kiln::le},
      {"gt", &kiln::gt},   {"ge", &kiln::ge},           {"fmod", &kiln::fmod},       {"remainder", &kiln::remainder},
      {"pow", &kiln::pow}};
  std::vector<Named> out;
  for (const auto& entry : ops) {
    BinaryOp op = entry.second;
    out.push_back({entry.first, [op](const std::vector<Tensor>& in) { return op(in[0], in[1]); }});
  }
  out.push_back({"add", [](const std::vector<Tensor>& in) { return add(in[0], in[1], Scalar(2)); }});
  out.push_back({"sub", [](const std::vector<Tensor>& in) { return sub(in[0], in[1]); }});
  out.push_back({"div", [](const std::vector<Tensor>& in) { return div(in[0], in[1]); }});
  out.push_back({"div_floor", [](const std::vector<Tensor>& in) { return div(in[0], in[1], "floor"); }});
  out.push_back({"where", [](const std::vector<Tensor>& in) { return where(gt(in[0], in[1]), in[0], in[1]); }});
  out.push_back({"clamp", [](const std::vector<Tensor>& in) { return clamp(in[0], Scalar(-1), Scalar(0.5)); }});
  return out;
}

std::vector<Named> reductions_and_chains() {
  return {
      {"sum1", [](const std::vector<Tensor>& in) { return sum(in[0], IntArrayRef{1}); }},
      {"sum0_keep", [](const std::vector<Tensor>& in) { return sum(in[0], IntArrayRef{0}, true); }},
      {"amax1", [](const std::vector<Tensor>& in) { return amax(in[0], {1}); }},
      {"amin0", [](const std::vector<Tensor>& in) { return amin(in[0], {0}); }},
      {"mean_all", [](const std::vector<Tensor>& in) { return mean(in[0]); }},
      {"var1", [](const std::vector<Tensor>& in) { return var(in[0], IntArrayRef{1}, Scalar(1), false); }},
      {"softmax", [](const std::vector<Tensor>& in) { return softmax(in[0], -1); }},
      {"log_softmax0", [](const std::vector<Tensor>& in) { return log_softmax(in[0], 0); }},
      {"layer_norm", [](const std::vector<Tensor>& in) { return layer_norm(in[0], {in[0].sizes()[1]}, in[1], in[1]); }},
      {"chain", [](const std::vector<Tensor>& in) { return mul(gelu(add(mul(in[0], in[1]), in[1])), sigmoid(in[0])); }},
      {"transpose_add", [](const std::vector<Tensor>& in) { return add(in[0].t(), Scalar(1)); }},
      {"slice_exp", [](const std::vector<Tensor>& in) { return exp(in[0].slice(1, 1, std::nullopt, 3)); }},
      {"cat",
       [](const std::vector<Tensor>& in) {
         return cat(std::vector<Tensor>{in[0], neg(in[0])}, 1);
       }},
      {"reshape", [](const std::vector<Tensor>& in) { return reshape(in[0].t(), {-1}); }},
  };
}

// Compiles all `ops` as one function of `inputs` and compares every result with `want`.
void expect_compiled_equals(const std::vector<Named>& ops, const std::vector<Tensor>& inputs,
                            const std::vector<Tensor>& want, const CompileOptions& options, const std::string& what) {
  auto fn = [&ops](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (const auto& op : ops) out.push_back(op.fn(in));
    return out;
  };
  std::vector<Tensor> on_device;
  for (const auto& t : inputs)
    on_device.push_back(compiled_device().is_cpu() ? t : with_layout_on(t, compiled_device()));
  auto got = compile(fn, options)(on_device);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE(std::string(ops[i].name) + " " + what);
    ASSERT_EQ(got[i].device(), compiled_device());
    ASSERT_EQ(got[i].sizes().vec(), want[i].sizes().vec());
    std::vector<double> expected = to_doubles(want[i]);
    EXPECT_TRUE(close(got[i].cpu(), expected, default_tolerance(got[i].dtype())));
  }
}

// Every result compiled equals eager's. float16/bfloat16 twice: with eager's roundings emulated
// (each op's result rounded, as eager), within the dtype's tolerance of eager; by default (a chain
// in one kernel computes in float32 and rounds once, as torch.compile does: loopir/precision.h),
// within the dtype's tolerance of the same ops computed in float64 on the same inputs.
void expect_compiled_equals_eager(const std::vector<Named>& ops, const std::vector<Tensor>& inputs,
                                  const std::string& what) {
  auto run = [&ops](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (const auto& op : ops) out.push_back(op.fn(in));
    return out;
  };
  auto want = run(inputs);
  bool reduced = std::any_of(inputs.begin(), inputs.end(), [](const Tensor& t) { return is_reduced_float(t.dtype()); });
  CompileOptions emulated;
  emulated.emulate_precision_casts = reduced;
  expect_compiled_equals(ops, inputs, want, emulated, what);
  if (!reduced) return;
  std::vector<Tensor> wide;
  for (const auto& t : inputs) wide.push_back(is_reduced_float(t.dtype()) ? t.to(DType::Float64) : t);
  auto exact = run(wide);
  for (size_t i = 0; i < exact.size(); ++i) {
    if (exact[i].dtype() == DType::Float64) exact[i] = exact[i].to(want[i].dtype());
  }
  expect_compiled_equals(ops, inputs, exact, CompileOptions{}, what + " (float32 chains)");
}

TEST(CompiledHarness, UnaryOpsMatchEager) {
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16}) {
    Maker m(61);
    Tensor random = m.make({7, 33}, t, -3, 3);
    Tensor extremal = m.extremal(t);
    expect_compiled_equals_eager(float_unary(), {random}, std::string(dtype_name(t)));
    expect_compiled_equals_eager(float_unary(), {extremal}, std::string("extremal ") + std::string(dtype_name(t)));
  }
}

TEST(CompiledHarness, BinaryOpsMatchEager) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16}) {
    Maker m(67);
    Tensor a = m.make({9, 17}, t, -4, 4), b = m.make({17}, t, 0.5, 3);
    expect_compiled_equals_eager(binary(), {a, b}, std::string(dtype_name(t)) + " broadcast");
    Tensor e = m.extremal(t);
    Tensor r = kiln::neg(e);
    expect_compiled_equals_eager(binary(), {e, r}, std::string(dtype_name(t)) + " extremal");
  }
  Maker m(71);
  Tensor ia = m.make({5, 12}, DType::Int64, -20, 20), ib = m.make({12}, DType::Int64, 1, 7);
  std::vector<Named> int_ops = {binary()[0],  binary()[1],  binary()[2],  binary()[4],  binary()[10],
                                binary()[11], binary()[13], binary()[14], binary()[16], binary()[17]};
  expect_compiled_equals_eager(int_ops, {ia, ib}, "int64");
}

TEST(CompiledHarness, IntegerAndBoolOpsMatchEager) {
  std::vector<Named> int_ops = {
      {"abs", [](const std::vector<Tensor>& in) { return abs(in[0]); }},
      {"neg", [](const std::vector<Tensor>& in) { return neg(in[0]); }},
      {"sign", [](const std::vector<Tensor>& in) { return sign(in[0]); }},
      {"bitwise_not", [](const std::vector<Tensor>& in) { return bitwise_not(in[0]); }},
      {"bitwise_and", [](const std::vector<Tensor>& in) { return bitwise_and(in[0], in[1]); }},
      {"bitwise_or", [](const std::vector<Tensor>& in) { return bitwise_or(in[0], in[1]); }},
      {"bitwise_xor", [](const std::vector<Tensor>& in) { return bitwise_xor(in[0], in[1]); }},
      {"div_trunc", [](const std::vector<Tensor>& in) { return div(in[0], in[1], "trunc"); }},
      {"div_floor", [](const std::vector<Tensor>& in) { return div(in[0], in[1], "floor"); }},
      {"true_div", [](const std::vector<Tensor>& in) { return div(in[0], in[1]); }},
      {"mul_wide", [](const std::vector<Tensor>& in) { return mul(in[0], Scalar(2.5)); }},
      {"sum", [](const std::vector<Tensor>& in) { return sum(in[0], IntArrayRef{1}); }},
      {"amax", [](const std::vector<Tensor>& in) { return amax(in[0], {0}); }},
      {"eq_where", [](const std::vector<Tensor>& in) { return where(eq(in[0], in[1]), in[0], neg(in[1])); }},
      {"clamp", [](const std::vector<Tensor>& in) { return clamp(in[0], Scalar(-3), Scalar(4)); }},
  };
  for (DType t : {DType::Int32, DType::Int64, DType::Int16}) {
    Maker m(79);
    Tensor a = m.make({6, 11}, t, -30, 30), b = m.make({11}, t, 1, 9);
    expect_compiled_equals_eager(int_ops, {a, b}, std::string(dtype_name(t)));
  }
  std::vector<Named> bool_ops = {
      {"and", [](const std::vector<Tensor>& in) { return logical_and(in[0], in[1]); }},
      {"or", [](const std::vector<Tensor>& in) { return logical_or(in[0], in[1]); }},
      {"xor", [](const std::vector<Tensor>& in) { return logical_xor(in[0], in[1]); }},
      {"not", [](const std::vector<Tensor>& in) { return logical_not(in[0]); }},
      {"sum", [](const std::vector<Tensor>& in) { return sum(in[0], IntArrayRef{1}); }},
      {"where", [](const std::vector<Tensor>& in) { return where(in[0], in[1], logical_not(in[1])); }},
  };
  Maker m(83);
  expect_compiled_equals_eager(bool_ops, {m.make({5, 9}, DType::Bool), m.make({9}, DType::Bool)}, "bool");
}

TEST(CompiledHarness, ReductionsViewsAndChainsMatchEager) {
  for (DType t : {DType::Float32, DType::Float64, DType::BFloat16}) {
    Maker m(73);
    Tensor x = m.make({12, 40}, t, -2, 2), w = m.make({40}, t, 0.5, 1.5);
    expect_compiled_equals_eager(reductions_and_chains(), {x, w}, std::string(dtype_name(t)));
    Tensor transposed = m.transposed(12, 40, t);  // [12, 40], not contiguous
    expect_compiled_equals_eager(reductions_and_chains(), {transposed, w},
                                 "non-contiguous " + std::string(dtype_name(t)));
  }
}

}  // namespace
}  // namespace kiln::testing
