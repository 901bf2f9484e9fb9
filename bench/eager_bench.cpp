// kiln eager on the workloads: [4096, 4096] float32 pointwise, reductions, softmax and
// layer_norm, and a 2048^3 float32 matmul; softmax on the compiled suite's shapes (float32 and
// bfloat16) and the suite's other eager rows (bench/torch_eager_rows.py times PyTorch on those);
// plus the machine's copy bandwidth (a plain parallel copy loop), the ceiling memory-bound rows are
// judged against. Each benchmark reports the bytes it must move (each input read once, each output
// written once) or the FLOPs it must do, so Google Benchmark prints GB/s or FLOP/s;
// bench/run_eager.py reads the JSON and compares with PyTorch.
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln/ops/registry.h"
#include "suite_workloads.h"

namespace {

using namespace kiln;
constexpr int64_t kN = 4096;
constexpr int64_t kBytes = kN * kN * 4;  // one [4096, 4096] float32 tensor

Tensor input(uint64_t seed, IntArrayRef shape = {kN, kN}) {
  manual_seed(seed);
  return randn(shape);
}

template <class F>
void run(benchmark::State& state, int64_t bytes, const F& f) {
  for (auto _ : state) {
    Tensor out = f();
    benchmark::DoNotOptimize(out.data_ptr());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void copy_bandwidth(benchmark::State& state) {
  std::vector<float> a(kN * kN, 1.0f), b(kN * kN, 0.0f);
  for (auto _ : state) {
    const float* src = a.data();
    float* dst = b.data();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < kN * kN; ++i) dst[i] = src[i];
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * 2 * kBytes);
}

void add_op(benchmark::State& s) {
  Tensor a = input(1), b = input(2);
  run(s, 3 * kBytes, [&] { return add(a, b); });
}
void mul_op(benchmark::State& s) {
  Tensor a = input(1), b = input(2);
  run(s, 3 * kBytes, [&] { return mul(a, b); });
}
void exp_op(benchmark::State& s) {
  Tensor a = input(1);
  run(s, 2 * kBytes, [&] { return exp(a); });
}
void gelu_op(benchmark::State& s) {
  Tensor a = input(1);
  run(s, 2 * kBytes, [&] { return gelu(a); });
}
void sum_dim1(benchmark::State& s) {
  Tensor a = input(1);
  run(s, kBytes, [&] { return sum(a, IntArrayRef{1}); });
}
void amax_dim1(benchmark::State& s) {
  Tensor a = input(1);
  run(s, kBytes, [&] { return amax(a, {1}); });
}
void softmax_op(benchmark::State& s) {
  Tensor a = input(1);
  run(s, 2 * kBytes, [&] { return _softmax(a, 1); });
}
// softmax(x, -1) on [rows, 4096] (the compiled suite's shape at scales 8 and 1), float32 or
// bfloat16 (range(1) == 1); bytes as the input and output in that dtype.
void softmax_rows(benchmark::State& s) {
  Tensor a = input(1, {s.range(0), kN});
  if (s.range(1) == 1) a = to(a, DType::BFloat16);
  int64_t bytes = 2 * s.range(0) * kN * static_cast<int64_t>(element_size(a.dtype()));
  run(s, bytes, [&] { return softmax(a, -1); });
}
// The eager rows of the compiled suite (bench/suite_workloads.h) at a scale (range(0)): their first
// dimension is the suite's divided by it. Bytes: the big input read and the big output written once
// (reductions: read once), as bench/compiled_report.py counts them.
// `vectors` further inputs of [cols] (weights, biases, the chain's a and b).
void suite_row(benchmark::State& s, const char* name, int64_t rows, int64_t cols, DType dtype, int64_t passes,
               int vectors) {
  std::vector<Tensor> inputs{to(input(1, {rows / s.range(0), cols}), dtype)};
  for (int v = 0; v < vectors; ++v) inputs.push_back(to(input(2 + v, {cols}), dtype));
  const bench::Workload& fn = bench::workloads().at(name);
  run(s, passes * inputs[0].numel() * static_cast<int64_t>(element_size(dtype)), [&] { return fn(inputs)[0]; });
}
void suite_pointwise_chain(benchmark::State& s) { suite_row(s, "pointwise_chain", 8192, 8192, DType::Float32, 2, 2); }
void suite_layernorm(benchmark::State& s) { suite_row(s, "layernorm", 16384, kN, DType::Float32, 2, 2); }
void suite_rmsnorm_bf16(benchmark::State& s) { suite_row(s, "rmsnorm_bf16", 16384, kN, DType::BFloat16, 2, 1); }
void suite_reductions(benchmark::State& s) { suite_row(s, "reductions", 8192, 8192, DType::Float32, 1, 0); }
void layer_norm_op(benchmark::State& s) {
  Tensor a = input(1), w = input(2, {kN}), b = input(3, {kN});
  run(s, 2 * kBytes, [&] { return std::get<0>(native_layer_norm(a, {kN}, w, b, 1e-5)); });
}
void mm_2048(benchmark::State& s) {
  constexpr int64_t n = 2048;
  Tensor a = input(1, {n, n}), b = input(2, {n, n});
  for (auto _ : s) {
    Tensor c = mm(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  s.counters["FLOP/s"] =
      benchmark::Counter(static_cast<double>(s.iterations()) * 2.0 * n * n * n, benchmark::Counter::kIsRate);
}
// The suite's GEMMs as one kiln::gemm_epilogue call each, a linear layer's (x @ w^T + bias, then
// the activation): gelu_mlp's two at full and 1/8 shapes (M 2048 and 256, D 4096, H 16384) and gpt2_block_fwd's
// four (M 1024, D 1024). KILN_GEMM=kiln runs them on kiln's sgemm instead of oneDNN.
void gemm_linear(benchmark::State& s) {
  int64_t m = s.range(0), n = s.range(1), k = s.range(2);
  bool gelu = s.range(3) != 0;
  Tensor x = input(1, {m, k}), w = input(2, {n, k}), bias = input(3, {n});
  OpHandle op = Registry::global().get("kiln::gemm_epilogue");
  for (auto _ : s) {
    Stack st{Value(x), Value(w.t()), Value(bias), Value(std::string(gelu ? "gelu" : "none")), Value()};
    call_op_boxed(op, st);
    benchmark::DoNotOptimize(st.at(0).to_tensor().data_ptr());
  }
  s.counters["FLOP/s"] =
      benchmark::Counter(static_cast<double>(s.iterations()) * 2.0 * m * n * k, benchmark::Counter::kIsRate);
}

}  // namespace

BENCHMARK(copy_bandwidth)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(add_op)->Name("add")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(mul_op)->Name("mul")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(exp_op)->Name("exp")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(gelu_op)->Name("gelu")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(sum_dim1)->Name("sum_dim1")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(amax_dim1)->Name("amax_dim1")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(softmax_op)->Name("softmax")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(softmax_rows)
    ->Name("softmax_rows")
    ->ArgNames({"rows", "bf16"})
    ->Args({2048, 0})
    ->Args({16384, 0})
    ->Args({2048, 1})
    ->Args({16384, 1})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(suite_pointwise_chain)
    ->Name("suite/pointwise_chain")
    ->ArgName("scale")
    ->Arg(8)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(suite_layernorm)
    ->Name("suite/layernorm")
    ->ArgName("scale")
    ->Arg(8)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(suite_rmsnorm_bf16)
    ->Name("suite/rmsnorm_bf16")
    ->ArgName("scale")
    ->Arg(8)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(suite_reductions)
    ->Name("suite/reductions")
    ->ArgName("scale")
    ->Arg(8)
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK(layer_norm_op)->Name("layer_norm")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(mm_2048)->Name("mm_2048")->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(gemm_linear)
    ->Name("gemm_linear")
    ->ArgNames({"m", "n", "k", "gelu"})
    ->Args({2048, 16384, 4096, 1})
    ->Args({2048, 4096, 16384, 0})
    ->Args({256, 16384, 4096, 1})
    ->Args({256, 4096, 16384, 0})
    ->Args({1024, 3072, 1024, 0})
    ->Args({1024, 1024, 1024, 0})
    ->Args({1024, 4096, 1024, 1})
    ->Args({1024, 1024, 4096, 0})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_MAIN();
