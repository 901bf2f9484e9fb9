// Cases PyTorch computes in one Python run, compared with kiln's results: dtype, sizes, strides and
// values (float64 inputs, so the tolerance is float64's). Each case's inputs are built on both sides
// by the same formula, `inp(shape, seed)` in Python and `case_input(shape, seed)` here:
// sin(arange(n) * 0.37 + seed) in float64, reshaped. Skips (saying why) without the reference Python.
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "python_ref.h"

namespace kiln::testing {

inline Tensor case_input(IntArrayRef shape, int seed, DType dtype = DType::Float64) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  Tensor x = sin(add(mul(arange(Scalar(n), DType::Float64), Scalar(0.37)), Scalar(seed)));
  return to(reshape(x, shape), dtype);
}

// Ten float64 values at the edges of pointwise functions (+-inf, NaN, +-0, +-2.5, 1e300, 0.3, 1):
// the Python expression, and the same tensor in kiln.
inline const std::string kSpecialValues =
    "torch.tensor([float(\"inf\"), -float(\"inf\"), float(\"nan\"), 0.0, -0.0, 2.5, -2.5, 1e300, 0.3, 1.0], "
    "dtype=torch.float64)";
inline Tensor special_values() {
  double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  return from_vector<double>({inf, -inf, nan, 0.0, -0.0, 2.5, -2.5, 1e300, 0.3, 1.0});
}

// Calls an op by its qualified name as a .pt2 node would (positional arguments, defaults filled);
// its results, a tensor list's elements in order.
inline std::vector<Tensor> call_by_name(const char* op, Stack args) {
  call_op_boxed(Registry::global().get(op), args);
  std::vector<Tensor> out;
  for (const Value& v : args) {
    if (v.is_tensor()) out.push_back(v.to_tensor());
    if (v.tag() == Value::Tag::TensorList) {
      for (const Tensor& t : v.to_tensor_list()) out.push_back(t);
    }
  }
  return out;
}

// The first result of op `op` called by name (call_by_name).
inline Tensor one(const char* op, Stack args) { return call_by_name(op, std::move(args)).at(0); }

struct TorchCase {
  std::string expr;          // a Python expression over torch and inp(); no single quotes
  std::vector<Tensor> kiln;  // kiln's result (several for a tuple or list)
  bool compare_strides = true;
};

inline std::vector<std::string> split_fields(const std::string& line, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  std::string field;
  while (std::getline(ss, field, sep)) out.push_back(field);
  return out;
}

inline std::string join_ints(IntArrayRef v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(v[i]);
  }
  return s;
}

inline void expect_cases_match_torch(const std::string& python, const std::vector<TorchCase>& cases,
                                     double rtol = 1e-10, double atol = 1e-12) {
  std::string code =
      "import torch\n"
      "def inp(shape, seed, dtype=torch.float64):\n"
      "    n = 1\n"
      "    for s in shape: n *= s\n"
      "    return (torch.arange(n, dtype=torch.float64) * 0.37 + seed).sin().reshape(shape).to(dtype)\n"
      "def show(k, r):\n"
      "    rs = list(r) if isinstance(r, (tuple, list)) else [r]\n"
      "    for t in rs:\n"
      "        vals = \",\".join(repr(float(v)) for v in t.detach().reshape(-1).tolist())\n"
      "        dims = \",\".join(str(s) for s in t.shape)\n"
      "        strides = \",\".join(str(s) for s in t.stride())\n"
      "        print(str(k) + \"|\" + str(t.dtype).split(\".\")[1] + \"|\" + dims + \"|\" + strides + \"|\" + vals)\n";
  for (size_t k = 0; k < cases.size(); ++k) {
    code += "show(" + std::to_string(k) + ", " + cases[k].expr + ")\n";
  }
  PythonRun run = run_python(python, code);
  ASSERT_EQ(run.status, 0) << run.out;
  std::vector<std::vector<std::vector<std::string>>> torch_out(cases.size());
  std::stringstream lines(run.out);
  std::string line;
  while (std::getline(lines, line)) {
    auto f = split_fields(line, '|');
    if (f.size() < 4) continue;
    size_t k = std::stoul(f[0]);
    if (f.size() == 4) f.emplace_back();
    torch_out.at(k).push_back(f);
  }
  for (size_t k = 0; k < cases.size(); ++k) {
    const auto& c = cases[k];
    SCOPED_TRACE(c.expr);
    ASSERT_EQ(torch_out[k].size(), c.kiln.size());
    for (size_t i = 0; i < c.kiln.size(); ++i) {
      const auto& f = torch_out[k][i];
      const Tensor& t = c.kiln[i];
      EXPECT_EQ(std::string(dtype_name(t.dtype())), f[1]);
      EXPECT_EQ(join_ints(t.sizes()), f[2]);
      if (c.compare_strides && t.numel() > 1) {
        EXPECT_EQ(join_ints(t.strides()), f[3]);
      }
      auto want = split_fields(f[4], ',');
      Tensor flat = reshape(to(contiguous(t), DType::Float64), {-1});
      ASSERT_EQ(static_cast<size_t>(flat.numel()), want.size());
      for (size_t j = 0; j < want.size(); ++j) {
        double w = std::strtod(want[j].c_str(), nullptr);
        double g = select(flat, 0, static_cast<int64_t>(j)).item<double>();
        if (std::isnan(w)) {
          EXPECT_TRUE(std::isnan(g)) << "element " << j;
        } else if (std::isinf(w)) {
          EXPECT_EQ(g, w) << "element " << j;
        } else {
          EXPECT_NEAR(g, w, atol + rtol * std::abs(w)) << "element " << j;
        }
      }
    }
  }
}

}  // namespace kiln::testing
