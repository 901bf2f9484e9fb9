// The composite ops torch.export's default IR keeps compile as they run eagerly: each is traced
// through its decomposition into Core ATen and prims, fused, and matches eager (whose values the
// decomp tests check against PyTorch).
#include <gtest/gtest.h>

#include "kiln/api/compile.h"
#include "kiln/ops/api.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::case_input;

void expect_compiled_matches_eager(const std::function<std::vector<Tensor>(const std::vector<Tensor>&)>& fn,
                                   const std::vector<Tensor>& inputs) {
  auto compiled = compile(fn);
  std::vector<Tensor> want = fn(inputs), got = compiled(inputs);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE("output " + std::to_string(i));
    ASSERT_EQ(got[i].sizes().vec(), want[i].sizes().vec());
    ASSERT_EQ(got[i].dtype(), want[i].dtype());
    Tensor a = to(got[i], DType::Float64), b = to(want[i], DType::Float64);
    Tensor diff = abs(sub(a, b));
    Tensor bound = add(mul(abs(b), Scalar(1e-5)), Scalar(1e-5));
    EXPECT_EQ(gt(diff, bound).sum().item<int64_t>(), 0)
        << "compiled " << got[i].to_string() << "\neager " << want[i].to_string();
  }
}

TEST(CompositeCompile, ShapeOpsCompile) {
  Tensor x = case_input({4, 6, 5}, 1, DType::Float32);
  expect_compiled_matches_eager(
      [](const std::vector<Tensor>& in) {
        const Tensor& t = in[0];
        std::vector<Tensor> out = t.split(2, 1);
        for (const Tensor& c : t.chunk(3, 2)) out.push_back(mul(c, Scalar(2.0)));
        for (const Tensor& u : t.unbind(0)) out.push_back(u);
        out.push_back(t.narrow(2, 1, 3));
        out.push_back(exp(t.unflatten(1, {2, 3})));
        out.push_back(roll(t, {2, -1}, {1, 2}));
        out.push_back(pad(t, {1, 2}, "reflect"));
        out.push_back(pad(t, {2, 1, 1, 0}, "replicate"));
        out.push_back(pad(t, {1, 1}, "circular"));
        out.push_back(pad(t, {1, 0, 0, 2}, "constant", 0.5));
        out.push_back(t.expand_as(ones({2, 4, 6, 5})));
        out.push_back(t.movedim(0, -1));
        out.push_back(stack(std::vector<Tensor>{t, neg(t)}, 1));
        out.push_back(hstack(std::vector<Tensor>{t, t}));
        out.push_back(tile(t, {2, 1}));
        out.push_back(ravel(transpose(t, 0, 2)));
        out.push_back(relu6(mul(t, Scalar(8.0))));
        out.push_back(selu(t));
        return out;
      },
      {x});
}

TEST(CompositeCompile, ReductionsAndContractionsCompile) {
  Tensor a = case_input({2, 3, 4}, 1, DType::Float32), b = case_input({2, 4, 5}, 2, DType::Float32);
  expect_compiled_matches_eager(
      [](const std::vector<Tensor>& in) {
        const Tensor &p = in[0], &q = in[1];
        return std::vector<Tensor>{einsum("bij,bjk->bik", std::vector<Tensor>{p, q}),
                                   einsum("bii->b", std::vector<Tensor>{p.narrow(2, 0, 3)}),
                                   logsumexp(p, {2}),
                                   linalg_vector_norm(q, 2, std::vector<int64_t>{1}),
                                   linalg_vector_norm(q, 3.0),
                                   diff(p, 2, 1),
                                   adaptive_avg_pool2d(unsqueeze(p, 0), {1, 1}),
                                   hardswish(p),
                                   hardsigmoid(q),
                                   q.type_as(ones({1}, DType::Float64)),
                                   add(p.new_zeros({2, 3, 4}), dropout(p, 0.3, false))};
      },
      {a, b});
}

TEST(CompositeCompile, ArithmeticAndActivationsCompile) {
  Tensor a = mul(case_input({3, 8}, 1, DType::Float32), Scalar(3)), b = case_input({3, 8}, 2, DType::Float32);
  Tensor w = case_input({8}, 3, DType::Float32);
  expect_compiled_matches_eager(
      [](const std::vector<Tensor>& in) {
        const Tensor &x = in[0], &y = in[1], &v = in[2];
        Tensor mask = gt(v, Scalar(0));
        return std::vector<Tensor>{addcmul(x, y, v, 0.5),
                                   addcdiv(x, y, add(v, Scalar(2)), -1),
                                   lerp(x, y, 0.7),
                                   lerp(x, y, v),
                                   hypot(x, y),
                                   copysign(x, v),
                                   heaviside(x, y),
                                   logaddexp2(x, y),
                                   sinc(x),
                                   nan_to_num(div(x, y)),
                                   masked_fill(x, mask, 2),
                                   softplus(x, 2, 1),
                                   mish(x),
                                   hardshrink(y, 0.3),
                                   softshrink(y, 0.3),
                                   threshold(x, 0.1, -1),
                                   float_power(x, v),
                                   addmv(v, transpose(y, 0, 1), y.select(1, 0), 0.5, 2),
                                   addr(x, y.select(1, 0), v),
                                   baddbmm(unsqueeze(x, 0), unsqueeze(x, 0), unsqueeze(outer(v, v), 0), 1, 0.5),
                                   glu(x, 1),
                                   nansum(div(x, round(y)), std::vector<int64_t>{1}),
                                   fmin(x, y),
                                   fmax(x, v),
                                   floor_divide(x, 0.3),
                                   round(x, 2),
                                   mse_loss(x, y),
                                   l1_loss(x, y, 0),
                                   smooth_l1_loss(x, y, 2, 0.5),
                                   huber_loss(x, y, 1, 0.7)};
      },
      {a, b, w});
}

}  // namespace
}  // namespace kiln
