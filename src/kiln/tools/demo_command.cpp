// `kiln demo`: what `make run` shows — a short tour of the tensor API through the dispatcher.
#include <cstdio>
#include <string>
#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/registry.h"
#include "kiln/tools/commands.h"

namespace kiln::tools {
namespace {

void section(const char* title) { std::printf("\n== %s\n", title); }
void show(const char* code, const Tensor& t) { std::printf("%s\n%s\n", code, t.to_string().c_str()); }

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
