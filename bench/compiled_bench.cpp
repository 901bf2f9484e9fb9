// The CPU suite of shared/reference/torch_baseline.py for kiln: each workload in kiln eager and
// kiln compiled (the inductor backend), the cold compile time (empty cache) and the warm start
// (a new kiln::compile object whose code is in the cache). One JSON line per workload on stdout;
// bench/run_compiled.py runs PyTorch on the same shapes and writes the table.
//   kiln_compiled_bench [--scale S] [--only name,name] [--reps N]
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "kiln/api/compile.h"
#include "kiln/ops/api.h"

namespace {

using kiln::Tensor;
using Inputs = std::vector<Tensor>;
using Clock = std::chrono::steady_clock;

struct Workload {
  std::string name;
  std::function<Inputs(const Inputs&)> fn;
  Inputs inputs;
  std::string note;
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

double median_seconds(const std::function<void()>& run, int reps) {
  for (int i = 0; i < 2; ++i) run();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    auto start = Clock::now();
    run();
    t.push_back(seconds_since(start));
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

Tensor R(std::initializer_list<int64_t> shape, kiln::DType dtype = kiln::DType::Float32, double scale = 1.0) {
  Tensor x = kiln::randn(shape);
  if (scale != 1.0) x = kiln::mul(x, kiln::Scalar(scale));
  return dtype == kiln::DType::Float32 ? x : x.to(dtype);
}

// One GPT-2 block (pre-norm attention and MLP) written with kiln's API; parameters are inputs.
Inputs gpt2_block(const Inputs& in) {
  using namespace kiln;
  const Tensor& x = in[0];
  int64_t B = x.sizes()[0], T = x.sizes()[1], C = x.sizes()[2], H = 16, D = C / H;
  Tensor h = layer_norm(x, {C}, in[1], in[2]);
  Tensor qkv = linear(h, in[3], in[4]);
  auto parts = split_with_sizes(qkv, {C, C, C}, 2);
  auto heads = [&](const Tensor& t) { return t.view({B, T, H, D}).transpose(1, 2); };
  Tensor q = heads(parts[0]);
  Tensor k = heads(parts[1]);
  Tensor v = heads(parts[2]);
  Tensor scores = mul(matmul(q, k.transpose(-2, -1)), Scalar(1.0 / std::sqrt(double(D))));
  Tensor mask = triu(full({T, T}, -INFINITY), 1);
  Tensor attn = matmul(softmax(add(scores, mask), -1), v);
  Tensor merged = attn.transpose(1, 2).reshape({B, T, C});
  Tensor x1 = add(x, linear(merged, in[5], in[6]));
  Tensor h2 = layer_norm(x1, {C}, in[7], in[8]);
  Tensor mlp = linear(gelu(linear(h2, in[9], in[10])), in[11], in[12]);
  return {add(x1, mlp)};
}

std::vector<Workload> workloads(int64_t s) {
  using namespace kiln;
  manual_seed(0);
  std::vector<Workload> w;
  w.push_back({"pointwise_chain",
               [](const Inputs& in) { return Inputs{mul(gelu(add(mul(in[0], in[1]), in[2])), sigmoid(in[0]))}; },
               {R({8192 / s, 8192}), R({8192}), R({8192})},
               "gelu(x*a+b)*sigmoid(x) f32"});
  w.push_back({"softmax",
               [](const Inputs& in) { return Inputs{softmax(in[0], -1)}; },
               {R({16384 / s, 4096})},
               "softmax(-1) f32"});
  w.push_back({"layernorm",
               [](const Inputs& in) { return Inputs{layer_norm(in[0], {4096}, in[1], in[2])}; },
               {R({16384 / s, 4096}), R({4096}), R({4096})},
               "layer_norm f32"});
  w.push_back({"rmsnorm_bf16",
               [](const Inputs& in) {
                 Tensor ms = mean(pow(in[0], Scalar(2)), IntArrayRef{-1}, true);
                 Tensor scaled = mul(in[0], rsqrt(add(ms, Scalar(1e-6))));
                 return Inputs{mul(scaled, in[1])};
               },
               {R({16384 / s, 4096}, DType::BFloat16), R({4096}, DType::BFloat16)},
               "rmsnorm bf16"});
  w.push_back({"reductions",
               [](const Inputs& in) {
                 auto [v, m] = var_mean(in[0], IntArrayRef{1}, std::nullopt, false);
                 return Inputs{sum(in[0], IntArrayRef{0}), v, m};
               },
               {R({8192 / s, 8192})},
               "sum(0), var_mean(1) f32"});
  int64_t M = 8192 / s / 4;  // a quarter of the baseline's CPU M: the GEMMs dominate on small hosts
  w.push_back({"gelu_mlp",
               [](const Inputs& in) { return Inputs{linear(gelu(linear(in[0], in[1], in[2])), in[3], in[4])}; },
               {R({M, 4096}), R({16384, 4096}, DType::Float32, 0.02), R({16384}),
                R({4096, 16384}, DType::Float32, 0.02), R({4096})},
               fmt::format("linear-gelu-linear f32 M={} D=4096 H=16384", M)});
  w.push_back({"attention_naive",
               [](const Inputs& in) {
                 Tensor scores = mul(matmul(in[0], in[1].transpose(-1, -2)), Scalar(0.125));
                 return Inputs{matmul(softmax(scores, -1), in[2])};
               },
               {R({1, 16, 1024, 64}), R({1, 16, 1024, 64}), R({1, 16, 1024, 64})},
               "softmax(QK^T)V f32 B=1 H=16 S=1024 D=64"});
  int64_t C = 1024;
  w.push_back({"gpt2_block_fwd",
               gpt2_block,
               {R({1, 1024, C}), R({C}), R({C}), R({3 * C, C}, DType::Float32, 0.02), R({3 * C}),
                R({C, C}, DType::Float32, 0.02), R({C}), R({C}), R({C}), R({4 * C, C}, DType::Float32, 0.02),
                R({4 * C}), R({C, 4 * C}, DType::Float32, 0.02), R({C})},
               "GPT-2 block fwd f32 B=1 T=1024 C=1024"});
  return w;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t scale = 8;
  int reps = 10;
  std::string only;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--scale") scale = std::atoll(argv[i + 1]);
    if (a == "--reps") reps = std::atoi(argv[i + 1]);
    if (a == "--only") only = argv[i + 1];
  }
  // Cold compiles need an empty cache: use a fresh one under /tmp.
  std::string cache = fmt::format("/tmp/kiln-bench-cache-{}", getpid());
  std::filesystem::remove_all(cache);
  setenv("KILN_CACHE_DIR", cache.c_str(), 1);
  for (auto& w : workloads(scale)) {
    if (!only.empty() && ("," + only + ",").find("," + w.name + ",") == std::string::npos) continue;
    double eager = median_seconds([&] { w.fn(w.inputs); }, reps);
    auto compiled = kiln::compile(w.fn);
    auto start = Clock::now();
    auto got = compiled(w.inputs);
    double first_call = seconds_since(start);
    double run = median_seconds([&] { compiled(w.inputs); }, reps);
    auto warm = kiln::compile(w.fn);
    start = Clock::now();
    warm(w.inputs);
    double warm_first = seconds_since(start);
    // The compiled result must be right before its time counts.
    auto want = w.fn(w.inputs);
    double err = 0, ref = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      err = std::max(
          err,
          kiln::sub(got[i].to(kiln::DType::Float64), want[i].to(kiln::DType::Float64)).abs().amax().item<double>());
      ref = std::max(ref, want[i].to(kiln::DType::Float64).abs().amax().item<double>());
    }
    std::printf(
        "{\"name\": \"%s\", \"note\": \"%s\", \"kiln_eager_s\": %.6g, \"kiln_compiled_s\": %.6g, "
        "\"cold_compile_s\": %.4g, \"warm_start_s\": %.4g, \"max_rel_err\": %.3g}\n",
        w.name.c_str(), w.note.c_str(), eager, run, std::max(first_call - run, 0.0), std::max(warm_first - run, 0.0),
        err / std::max(ref, 1e-30));
    std::fflush(stdout);
  }
  std::filesystem::remove_all(cache);
  return 0;
}
