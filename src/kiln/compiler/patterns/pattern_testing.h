// What the pattern passes' tests share (included by *_test.cpp only): counting a graph's calls of
// an op, and comparing a result with eager's.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string_view>
#include <vector>

#include "kiln/graph/graph.h"
#include "kiln/ops/api.h"

namespace kiln::compiler::testing {

using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;

inline int count_calls(const graph::Graph& g, std::string_view op) {
  int n = 0;
  for (const auto& node : g.nodes()) n += node->kind() == graph::NodeKind::Call && node->op()->name() == op;
  return n;
}

// Within tol * (1 + |want|) of `want`, NaN exactly where it has NaN.
inline void expect_close(const Tensor& got, const Tensor& want, double tol) {
  ASSERT_EQ(got.sizes().vec(), want.sizes().vec());
  Tensor g = got.to(DType::Float64), w = want.to(DType::Float64);
  EXPECT_EQ(ne(isnan(g), isnan(w)).sum().item<int64_t>(), 0);
  Tensor finite = logical_not(isnan(w));
  Tensor diff = where(finite, sub(g, w).abs(), zeros_like(w));
  Tensor scale = add(where(finite, w.abs(), zeros_like(w)), Scalar(1.0));
  EXPECT_LT(div(diff, scale).amax().item<double>(), tol);
}

}  // namespace kiln::compiler::testing
