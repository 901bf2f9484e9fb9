// A program outside kiln's tree, built against an installed kiln: two tensors from data, a small
// function compiled by kiln::compile, whose generated C++ includes kiln's installed headers (found
// from where libkiln.so was loaded from), and its result checked against the same formula computed
// here. Prints where those headers were found, then OK; exits with 1 on a mismatch or an error.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include "kiln/api/compile.h"
#include "kiln/compiler/codegen/build.h"
#include "kiln/ops/api.h"

namespace {

constexpr int64_t kRows = 4, kCols = 37;

// relu(a * b + 1) summed over each row, b broadcast along the rows: one fused kernel.
std::vector<kiln::Tensor> row_sums(const std::vector<kiln::Tensor>& in) {
  return {kiln::sum(kiln::relu(kiln::add(kiln::mul(in[0], in[1]), 1.0)), {-1})};
}

}  // namespace

int main() {
  try {
    std::vector<float> a(kRows * kCols), b(kCols);
    for (size_t i = 0; i < a.size(); ++i) a[i] = std::sin(0.1f * static_cast<float>(i)) * 3.0f;
    for (size_t j = 0; j < b.size(); ++j) b[j] = 0.5f - 0.03f * static_cast<float>(j);
    kiln::Tensor x = kiln::from_vector(a, {kRows, kCols});
    kiln::Tensor w = kiln::from_vector(b);

    kiln::CompiledFunction f = kiln::compile(row_sums);
    std::vector<kiln::Tensor> out = f({x, w});
    if (out.size() != 1 || out[0].dim() != 1 || out[0].sizes()[0] != kRows) {
      std::fprintf(stderr, "error: expected one output of %lld values\n", static_cast<long long>(kRows));
      return 1;
    }
    int bad = 0;
    for (int64_t r = 0; r < kRows; ++r) {
      double want = 0;
      for (int64_t c = 0; c < kCols; ++c) {
        float v = a[r * kCols + c] * b[c] + 1.0f;
        want += v > 0 ? v : 0;
      }
      double got = out[0][r].item<double>();
      if (!(std::fabs(got - want) <= 1e-4 * (1 + std::fabs(want)))) {
        std::fprintf(stderr, "error: row %lld: compiled %.7g, expected %.7g\n", static_cast<long long>(r), got, want);
        ++bad;
      }
    }
    if (bad) return 1;
    std::printf("kiln headers for generated code: %s\n", kiln::compiler::include_dir().c_str());
    std::printf("OK\n");
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
