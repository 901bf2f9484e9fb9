// `kiln demo`: what `make run` shows — a short tour of the tensor API through the dispatcher.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/api/compile.h"
#include "kiln/ops/api.h"
#include "kiln/ops/registry.h"
#include "kiln/tools/commands.h"

namespace kiln::tools {
namespace {

void section(const char* title) { std::printf("\n== %s\n", title); }
void show(const char* code, const Tensor& t) { std::printf("%s\n%s\n", code, t.to_string().c_str()); }

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

template <class F>
double best_of(int runs, const F& f) {
  double best = 1e30;
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    f();
    best = std::min(best, seconds_since(start));
  }
  return best;
}

}  // namespace

int demo_command(const std::vector<std::string>&) {
  std::printf("kiln demo: every line below is one call through kiln's dispatcher to a CPU kernel.\n");

  section("Tensors and broadcasting");
  Tensor x = arange(6, DType::Float32).view({2, 3});
  Tensor bias = from_vector<float>({10, 20, 30});
  show("x = arange(6).view({2, 3})", x);
  show("x + bias            // bias [3] broadcasts over rows", x + bias);

  section("Type promotion follows PyTorch");
  Tensor ints = arange(3);
  show("ints = arange(3)    // int64", ints);
  show("ints / 2            // true division gives float32", ints / 2);
  show("ints * 2.5          // a float scalar promotes the int tensor", ints * 2.5);

  section("Views share storage");
  Tensor row = x.select(0, 1);
  row.fill_(7);
  show("x.select(0, 1).fill_(7); x", x);
  show("x.t()               // a transposed view, no copy", x.t());

  section("A tiny MLP: softmax(gelu(x @ W + b))");
  manual_seed(0);
  Tensor input = randn({4, 8});
  Tensor w = randn({8, 3}) * 0.5;
  Tensor b = zeros({3});
  Tensor hidden = gelu(addmm(b, input, w));
  Tensor probs = _softmax(hidden, 1);
  show("probs", probs);
  show("probs.sum({1})      // each row sums to 1", probs.sum({1}));

  section("Meta tensors: shapes without data");
  Tensor big = empty({1000000, 4096}, TensorOptions(kMeta));
  Tensor r = mm(big, empty({4096, 1024}, TensorOptions(kMeta)));
  std::printf("mm(meta[1000000, 4096], meta[4096, 1024]) -> %s (no memory touched)\n", r.describe().c_str());

  section("Errors name the op, the argument and the sizes");
  try {
    mm(x, x);
  } catch (const Error& e) {
    std::printf("mm(x, x) -> kiln::Error: %s\n", e.what());
  }

  section("kiln::compile: one fused kernel instead of an op at a time");
  {
    auto norm = [](const std::vector<Tensor>& in) {
      Tensor h = layer_norm(in[0], {in[0].sizes()[1]}, in[1], in[2]);
      return std::vector<Tensor>{softmax(gelu(h), -1)};
    };
    manual_seed(1);
    std::vector<Tensor> args = {randn({2048, 1024}), randn({1024}), randn({1024})};
    auto compiled = compile(norm);
    auto start = std::chrono::steady_clock::now();
    Tensor fused = compiled(args)[0];
    double first = seconds_since(start);
    double eager_s = best_of(5, [&] { norm(args); });
    double compiled_s = best_of(5, [&] { compiled(args); });
    double diff = sub(fused, norm(args)[0]).abs().amax().item<double>();
    std::printf(
        "softmax(gelu(layer_norm(x))) on [2048, 1024]: first call %.2f s (trace, fuse, generate C++, "
        "build or load from the cache),\nthen %.2f ms compiled vs %.2f ms eager; largest difference %.1e. "
        "`kiln explain mlp` shows kernels and code.\n",
        first, compiled_s * 1e3, eager_s * 1e3, diff);
  }

  section("The op registry");
  size_t total = 0, core = 0, with_cpu = 0;
  for (OpHandle op : Registry::global().ops()) {
    ++total;
    core += op->has_tag(OpTag::Core) ? 1 : 0;
    with_cpu += op->runs_on(DispatchKey::CPU) ? 1 : 0;
  }
  std::printf("%zu ops declared (%zu in Core ATen), %zu runnable on the CPU. See `kiln ops`.\n", total, core, with_cpu);
  return 0;
}

}  // namespace kiln::tools
