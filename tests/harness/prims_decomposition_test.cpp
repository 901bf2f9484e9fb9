// Core ATen -> Prims decompositions against the ops' own kernels on the harness samples: every
// pointwise op with a prims decomposition, on every dtype and sample (0-d, empty, broadcasting,
// strided, extremal values), must give the kernel's dtype, shape and values — or fail where the
// kernel fails. Views, reductions, factories, scatters and addmm are checked case by case.
#include <cmath>
#include <limits>

#include "harness.h"
#include "kiln/decomp/prims/table.h"
#include "kiln/ops/dispatcher.h"

namespace kiln::testing {
namespace {

Tolerance loose(DType t) {
  Tolerance tol = default_tolerance(t);
  tol.rtol *= 8;
  tol.atol *= 8;
  return tol;
}

std::vector<Tensor> results(const Stack& stack) {
  std::vector<Tensor> out;
  for (const Value& v : stack) {
    if (v.is_tensor()) {
      out.push_back(v.to_tensor());
    } else {
      for (const auto& t : v.to_tensor_list()) out.push_back(t);
    }
  }
  return out;
}

// Runs `op`'s kernel and its prims decomposition on `args`; both fail or both give equal results.
void expect_same(OpHandle op, Stack args, const std::string& what) {
  SCOPED_TRACE(op->name() + " " + what);
  normalize_arguments(op, args);
  Stack kernel = args, decomposed = args;
  bool kernel_failed = false;
  try {
    call_op_boxed(op, kernel);
  } catch (const Error&) {
    kernel_failed = true;
  }
  if (kernel_failed) {
    EXPECT_THROW(prims_decompositions().at(op)(decomposed), Error);
    return;
  }
  try {
    prims_decompositions().at(op)(decomposed);
  } catch (const Error& e) {
    FAIL() << "the kernel succeeded, the decomposition failed: " << e.what();
  }
  auto want = results(kernel), got = results(decomposed);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const Tensor& k = want[i];
    const Tensor& d = got[i];
    ASSERT_EQ(d.dtype(), k.dtype());
    ASSERT_EQ(d.sizes().vec(), k.sizes().vec());
    EXPECT_TRUE(close(d, to_doubles(k), loose(k.dtype())));
  }
}

bool is_pointwise_core(OpHandle op) { return op->has_tag(OpTag::Core) && op->has_tag(OpTag::Pointwise); }

int tensor_arguments(OpHandle op) {
  int n = 0;
  for (const auto& a : op->schema().arguments) n += a.type.base == BaseType::Tensor && !a.type.list ? 1 : 0;
  return n;
}

TEST(PrimsDecompositions, PointwiseOpsMatchTheirKernels) {
  std::vector<DType> dtypes(std::begin(kFloatTypes), std::end(kFloatTypes));
  dtypes.insert(dtypes.end(), {DType::Int64, DType::Int32, DType::UInt8, DType::Bool});
  int checked = 0;
  for (const auto& [op, decomposition] : prims_decompositions()) {
    if (!is_pointwise_core(op)) continue;
    const auto& args = op->schema().arguments;
    bool scalar_second = args.size() > 1 && args[1].type.base == BaseType::Scalar;
    bool scalar_first = args[0].type.base == BaseType::Scalar;
    std::vector<std::optional<std::string>> modes = {std::nullopt};
    if (op->schema().overload.ends_with("_mode")) modes = {std::string("trunc"), std::string("floor")};
    // Integer division of bools by false fails in the kernel only where an element is computed.
    bool divides = op->schema().name == "div" || op->schema().name == "fmod" || op->schema().name == "remainder";
    for (DType t : dtypes) {
      if (divides && t == DType::Bool) continue;
      Maker m(23);
      int tensors = tensor_arguments(op);
      if (tensors == 3) continue;  // where, clamp.Tensor: checked below
      bool binary = tensors == 2;
      auto samples = binary ? binary_samples(t, m, true) : unary_samples(t, m);
      for (const Sample& s : samples) {
        for (const auto& mode : modes) {
          Stack stack;
          if (scalar_first) {
            stack = {Value(Scalar(2)), Value(s.inputs[0])};
          } else if (scalar_second) {
            stack = {Value(s.inputs[0]), Value(Scalar(is_floating(t) ? 0.75 : 3.0))};
          } else {
            for (const auto& x : s.inputs) stack.emplace_back(x);
          }
          if (mode) stack.emplace_back(*mode);
          expect_same(op, stack, s.name + " " + std::string(dtype_name(t)));
          ++checked;
        }
      }
    }
  }
  EXPECT_GT(checked, 2000);
}

TEST(PrimsDecompositions, WhereClampAndAlpha) {
  auto& r = Registry::global();
  Maker m(29);
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::Int64}) {
    Tensor x = m.make({4, 5}, t), lo = m.make({5}, t, -9, -1), hi = m.make({4, 1}, t, 1, 9);
    Tensor cond = m.make({4, 1}, DType::Bool);
    expect_same(r.get("aten::where.self"), {Value(cond), Value(x), Value(lo)}, "broadcast");
    expect_same(r.get("aten::where.self"), {Value(cond), Value(x), Value(m.make({}, DType::Float64))}, "0-d other");
    expect_same(r.get("aten::clamp.Tensor"), {Value(x), Value(lo), Value(hi)}, "both");
    expect_same(r.get("aten::clamp.Tensor"), {Value(x), Value(), Value(hi)}, "max only");
    expect_same(r.get("aten::clamp"), {Value(x), Value(Scalar(-2)), Value(Scalar(2.5))}, "scalars");
    expect_same(r.get("aten::add.Tensor"), {Value(x), Value(lo), Value(Scalar(3))}, "alpha");
    expect_same(r.get("aten::sub.Tensor"), {Value(x), Value(hi), Value(Scalar(2))}, "alpha");
  }
  Tensor with_nan = m.extremal(DType::Float32);
  expect_same(r.get("aten::clamp"), {Value(with_nan), Value(Scalar(-1)), Value(Scalar(1))}, "NaN stays NaN");
  expect_same(r.get("aten::clamp"), {Value(with_nan), Value(Scalar(std::nan(""))), Value()}, "NaN bound");
}

TEST(PrimsDecompositions, ViewsKeepValuesAndShareStorage) {
  auto& r = Registry::global();
  Maker m(31);
  Tensor x = m.make({2, 3, 4}, DType::Float32);
  Tensor t = m.transposed(6, 4, DType::Float32);
  Tensor ones = m.make({1, 6, 1, 4}, DType::Float32);
  struct Case {
    const char* op;
    Stack args;
  };
  std::vector<Case> cases = {
      {"aten::view", {Value(x), Value(std::vector<int64_t>{6, 4})}},
      {"aten::view", {Value(x), Value(std::vector<int64_t>{2, 1, 12, 1})}},
      {"aten::view", {Value(x), Value(std::vector<int64_t>{4, -1})}},
      {"aten::view", {Value(ones), Value(std::vector<int64_t>{3, 2, 2, 2})}},
      {"aten::view", {Value(m.make({0, 3}, DType::Float32)), Value(std::vector<int64_t>{3, 0})}},
      {"aten::view", {Value(t), Value(std::vector<int64_t>{3, 2, 4})}},
      {"aten::permute", {Value(x), Value(std::vector<int64_t>{2, 0, -2})}},
      {"aten::expand", {Value(ones), Value(std::vector<int64_t>{3, 1, 6, 5, -1})}},
      {"aten::unsqueeze", {Value(t), Value(-1)}},
      {"aten::squeeze", {Value(ones)}},
      {"aten::squeeze.dim", {Value(ones), Value(2)}},
      {"aten::squeeze.dims", {Value(ones), Value(std::vector<int64_t>{0, 1, -2})}},
      {"aten::slice.Tensor", {Value(x), Value(2), Value(int64_t{-3}), Value(), Value(2)}},
      {"aten::slice.Tensor", {Value(t), Value(0), Value(int64_t{1}), Value(int64_t{100}), Value(1)}},
      {"aten::select.int", {Value(x), Value(1), Value(int64_t{-1})}},
      {"aten::alias", {Value(t)}},
      {"aten::diagonal", {Value(x), Value(1), Value(2), Value(1)}},
      {"aten::diagonal", {Value(x), Value(-1), Value(1), Value(2)}},
      {"aten::as_strided",
       {Value(x), Value(std::vector<int64_t>{2, 2}), Value(std::vector<int64_t>{3, 1}), Value(int64_t{1})}},
  };
  for (auto& c : cases) {
    expect_same(r.get(c.op), c.args, "view");
    Stack decomposed = c.args;
    normalize_arguments(r.get(c.op), decomposed);
    prims_decompositions().at(r.get(c.op))(decomposed);
    const Tensor& out = decomposed[0].to_tensor();
    EXPECT_EQ(out.storage().get(), c.args[0].to_tensor().storage().get()) << c.op << " must stay a view";
  }
  Stack split{Value(x), Value(std::vector<int64_t>{1, 3}), Value(-1)};
  expect_same(r.get("aten::split_with_sizes"), split, "split");
  Stack bad{Value(t), Value(std::vector<int64_t>{24})};
  EXPECT_THROW(prims_decompositions().at(r.get("aten::view"))(bad), Error);
}

TEST(PrimsDecompositions, ReductionsMatchTheirKernels) {
  auto& r = Registry::global();
  Maker m(37);
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32, DType::Bool}) {
    std::vector<Tensor> inputs = {m.make({3, 4, 5}, t), m.make({}, t), m.make({0, 4}, t)};
    if (t != DType::Bool) inputs.push_back(m.transposed(7, 9, t));
    for (const Tensor& x : inputs) {
      std::string what = x.describe();
      std::vector<std::optional<std::vector<int64_t>>> dim_lists = {std::nullopt, std::vector<int64_t>{}};
      if (x.dim() >= 2) dim_lists.insert(dim_lists.end(), {std::vector<int64_t>{-1}, std::vector<int64_t>{0, 1}});
      for (const auto& dims : dim_lists) {
        Value dv = dims ? Value(*dims) : Value();
        for (bool keepdim : {false, true}) {
          expect_same(r.get("aten::sum.dim_IntList"), {Value(x), dv, Value(keepdim)}, what);
          expect_same(r.get("aten::mean.dim"), {Value(x), dv, Value(keepdim)}, what);
          expect_same(r.get("aten::var.correction"), {Value(x), dv, Value(Scalar(1)), Value(keepdim)}, what);
          expect_same(r.get("aten::var_mean.correction"), {Value(x), dv, Value(), Value(keepdim)}, what);
          if (dims) {
            expect_same(r.get("aten::amax"), {Value(x), dv, Value(keepdim)}, what);
            expect_same(r.get("aten::amin"), {Value(x), dv, Value(keepdim)}, what);
          }
        }
      }
      if (x.dim() >= 1) expect_same(r.get("aten::prod.dim_int"), {Value(x), Value(0), Value(true)}, what);
      expect_same(r.get("aten::prod"), {Value(x)}, what);
      expect_same(r.get("aten::mean"), {Value(x)}, what);
    }
  }
}

TEST(PrimsDecompositions, FactoriesCopiesAndScatters) {
  auto& r = Registry::global();
  Maker m(41);
  Tensor t = m.transposed(5, 6, DType::Float32);
  Tensor x = m.make({5, 7}, DType::Float32);
  expect_same(r.get("aten::full"), {Value(std::vector<int64_t>{2, 3}), Value(Scalar(1.5))}, "full");
  expect_same(r.get("aten::full"), {Value(std::vector<int64_t>{2}), Value(Scalar(int64_t{7}))}, "int full");
  expect_same(r.get("aten::full_like"), {Value(t), Value(Scalar(2))}, "full_like");
  expect_same(r.get("aten::scalar_tensor"), {Value(Scalar(3.5))}, "scalar_tensor");
  for (auto [start, end, step] : {std::tuple{0.0, 10.0, 1.0}, {-3.0, 4.0, 0.7}, {10.0, 1.0, -2.5}}) {
    expect_same(r.get("aten::arange.start_step"), {Value(start), Value(end), Value(step)}, "float arange");
  }
  expect_same(r.get("aten::arange.start_step"), {Value(int64_t{-4}), Value(int64_t{9}), Value(int64_t{3})}, "int");
  expect_same(r.get("aten::cat"), {Value(std::vector<Tensor>{x, m.make({2, 7}, DType::Int32)}), Value(0)}, "cat");
  expect_same(r.get("aten::cat"), {Value(std::vector<Tensor>{t, t}), Value(-1)}, "cat");
  expect_same(r.get("aten::_to_copy"), {Value(t), Value(DType::Float16)}, "_to_copy");
  expect_same(r.get("aten::clone"), {Value(t), Value(MemoryFormat::Contiguous)}, "clone");
  expect_same(r.get("aten::copy"), {Value(x), Value(m.make({7}, DType::Float64))}, "copy");
  expect_same(r.get("aten::fill.Scalar"), {Value(t), Value(Scalar(4))}, "fill");
  Tensor strip = m.make({5, 2}, DType::Float32);
  for (auto [start, end, step] : {std::tuple{1, 3, 1}, {0, 7, 4}, {1, 6, 3}, {5, 7, 1}}) {
    int64_t count = (end - start + step - 1) / step;
    Tensor src = m.make({5, count}, DType::Float32);
    expect_same(r.get("aten::slice_scatter"),
                {Value(x), Value(src), Value(1), Value(int64_t{start}), Value(int64_t{end}), Value(int64_t{step})},
                "slice_scatter");
  }
  expect_same(r.get("aten::select_scatter"),
              {Value(x), Value(m.make({5}, DType::Float32)), Value(1), Value(int64_t{-2})}, "select_scatter");
  Tensor a = m.make({4, 3}, DType::Float32), b = m.make({3, 5}, DType::Float32), bias = m.make({5}, DType::Float32);
  expect_same(r.get("aten::addmm"), {Value(bias), Value(a), Value(b), Value(Scalar(0.5)), Value(Scalar(2))}, "addmm");
  Tensor nan_bias = full({5}, std::numeric_limits<double>::quiet_NaN());
  expect_same(r.get("aten::addmm"), {Value(nan_bias), Value(a), Value(b), Value(Scalar(0)), Value(Scalar(1))},
              "beta 0 ignores NaN");
}

}  // namespace
}  // namespace kiln::testing
