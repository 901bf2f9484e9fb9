// CPU flash attention against softmax(Q K^T * scale + mask) V computed in float64 with the
// unfused ops, on shapes that cross the 64-row and 64-key blocks or stay inside one, with causal
// and additive masks, non-contiguous inputs and every floating dtype; PyTorch's conventions for
// rows that see no key, for the outputs' layouts, and its argument checks.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <omp.h>

#include "kiln/ops/api.h"
#include "kiln/ops/custom_op.h"
#include "kiln_error.h"
#include "tolerance.h"

namespace kiln {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Reference {
  Tensor out, lse;
};

// The float64 result: rows whose scores are all -inf give 0 and a logsumexp of 0.
Reference reference(const Tensor& q, const Tensor& k, const Tensor& v, bool causal, const std::optional<Tensor>& mask,
                    double scale) {
  Tensor q64 = q.to(DType::Float64), k64 = k.to(DType::Float64), v64 = v.to(DType::Float64);
  Tensor scores = mul(matmul(q64, k64.transpose(-2, -1)), Scalar(scale));
  if (mask) scores = add(scores, mask->to(DType::Float64));
  if (causal) {
    Tensor allowed = tril(ones({q.size(2), k.size(2)}, TensorOptions(DType::Bool)));
    scores = where(allowed, scores, full_like(scores, Scalar(-kInf)));
  }
  Tensor max = amax(scores, {-1}, true);
  Tensor seen = ne(max, Scalar(-kInf));
  Tensor shift = where(seen, max, zeros_like(max));
  Tensor weights = exp(sub(scores, shift));
  Tensor total = sum(weights, IntArrayRef{-1}, true);
  Tensor out = where(seen, matmul(div(weights, total), v64), zeros_like(q64));
  Tensor lse = squeeze(where(seen, add(shift, log(total)), zeros_like(max)), -1);
  return {out, lse};
}

bool close_to(const Tensor& got, const Tensor& want, testing::Tolerance tol) {
  Tensor diff = sub(got.to(DType::Float64), want).abs();
  Tensor bound = add(mul(want.abs(), Scalar(tol.rtol)), Scalar(tol.atol));
  return gt(diff, bound).sum().item<int64_t>() == 0;
}

// [b, h, n, e] values laid out as [b, n, h, e] (how a projection's heads arrive), or contiguous.
Tensor make(IntArrayRef shape, DType dtype, bool heads_inner) {
  if (!heads_inner) return randn(shape).to(dtype);
  return randn({shape[0], shape[2], shape[1], shape[3]}).to(dtype).transpose(1, 2);
}

struct Case {
  int64_t b, h, l, s, e;
};

TEST(FlashAttention, MatchesFloat64MathAtEdgeShapes) {
  manual_seed(3);
  const Case cases[] = {{1, 1, 1, 1, 1},    {2, 3, 5, 7, 8},    {1, 2, 67, 130, 64}, {1, 1, 129, 65, 128},
                        {2, 1, 3, 200, 13}, {1, 1, 200, 3, 16}, {1, 2, 64, 64, 64},  {1, 1, 65, 129, 32}};
  for (const Case& c : cases) {
    for (DType dtype : {DType::Float32, DType::BFloat16, DType::Float64, DType::Float16}) {
      for (bool causal : {false, true}) {
        for (int mask_kind : {0, 1, 2}) {
          for (bool heads_inner : {false, true}) {
            SCOPED_TRACE(::testing::Message() << "b " << c.b << " h " << c.h << " l " << c.l << " s " << c.s << " e "
                                              << c.e << " " << dtype_name(dtype) << " causal " << causal << " mask "
                                              << mask_kind << " heads inner " << heads_inner);
            Tensor q = make({c.b, c.h, c.l, c.e}, dtype, heads_inner);
            Tensor k = make({c.b, c.h, c.s, c.e}, dtype, heads_inner);
            Tensor v = make({c.b, c.h, c.s, c.e}, dtype, false);
            std::optional<Tensor> mask;
            if (mask_kind == 1) {  // an additive [L, S] bias with some keys hidden
              mask = where(lt(rand({c.l, c.s}), Scalar(0.2)), full({c.l, c.s}, Scalar(-kInf)), randn({c.l, c.s}))
                         .to(dtype);
            } else if (mask_kind == 2) {  // padding: the last keys of each batch row hidden, [B, 1, 1, S]
              Tensor key_index = arange(c.s).view({1, 1, 1, c.s});
              mask = where(ge(key_index, Scalar(std::max<int64_t>(1, c.s - 2))), full({}, Scalar(-kInf)), zeros({}))
                         .expand({c.b, 1, 1, c.s})
                         .to(dtype);
            }
            double scale = c.e == 13 ? 0.3 : 1.0 / std::sqrt(double(c.e));
            auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(
                q, k, v, 0.0, causal, mask, c.e == 13 ? std::optional<double>(0.3) : std::nullopt);
            Reference want = reference(q, k, v, causal, mask, scale);
            EXPECT_EQ(out.dtype(), dtype);
            EXPECT_TRUE(close_to(out, want.out, testing::default_tolerance(dtype)));
            EXPECT_TRUE(
                close_to(lse, want.lse, testing::default_tolerance(dtype == DType::Float64 ? dtype : DType::Float32)));
          }
        }
      }
    }
  }
}

// Keys and values are read in place when their head size is their unit-stride dimension and
// converted otherwise: keys and values stored [.., e, s] (transposed views), with a causal mask.
TEST(FlashAttention, KeysAndValuesOfAnyLayout) {
  manual_seed(9);
  for (DType dtype : {DType::Float32, DType::BFloat16}) {
    Tensor q = randn({1, 2, 70, 64}).to(dtype);
    Tensor k = randn({1, 2, 64, 130}).to(dtype).transpose(2, 3), v = randn({1, 2, 64, 130}).to(dtype).transpose(2, 3);
    ASSERT_NE(k.stride(3), 1);
    for (bool causal : {false, true}) {
      auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, causal);
      Reference want = reference(q, k, v, causal, std::nullopt, 0.125);
      EXPECT_TRUE(close_to(out, want.out, testing::default_tolerance(dtype))) << dtype_name(dtype) << " " << causal;
      EXPECT_TRUE(close_to(lse, want.lse, testing::default_tolerance(DType::Float32))) << dtype_name(dtype);
    }
  }
}

// PyTorch's kernel: a row whose scores are all -inf (a fully hidden row) is 0, its logsumexp 0.
TEST(FlashAttention, RowsThatSeeNoKeyAreZero) {
  manual_seed(4);
  Tensor q = randn({1, 1, 3, 4}), k = randn({1, 1, 70, 4}), v = randn({1, 1, 70, 4});
  Tensor mask = zeros({3, 70});
  mask[1].fill_(Scalar(-kInf));
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, mask);
  EXPECT_EQ(out[0][0][1].abs().sum().item<double>(), 0.0);
  EXPECT_EQ(lse[0][0][1].item<double>(), 0.0);
  EXPECT_GT(out[0][0][0].abs().sum().item<double>(), 0.0);
  EXPECT_TRUE(std::isfinite(lse[0][0][2].item<double>()));
  // No keys at all: every row sees nothing.
  auto [empty_out, empty_lse] =
      _scaled_dot_product_flash_attention_for_cpu(q, slice(k, 2, 0, 0), slice(v, 2, 0, 0), 0.0, false);
  EXPECT_EQ(empty_out.abs().sum().item<double>(), 0.0);
  EXPECT_EQ(empty_lse.abs().sum().item<double>(), 0.0);
}

Tensor kiln_attention(const Tensor& q, const Tensor& k, const Tensor& v, const std::optional<Tensor>& mask,
                      double scale) {
  return call<Tensor>(Registry::global().get("kiln::attention"), q, k, v, mask, scale, false);
}

// A NaN score makes its row NaN, wherever it is (a lone NaN key, a first block of NaN keys before
// finite ones, or a NaN in the query, which makes every score of its row NaN: PyTorch 2.13's op
// gives NaN there, and a NaN log-sum-exp).
TEST(FlashAttention, NaNScoresPoisonTheirRow) {
  manual_seed(7);
  Tensor q = randn({1, 1, 2, 16}), k = randn({1, 1, 128, 16}), v = randn({1, 1, 128, 16});
  Tensor one_nan = k.clone(), block_nan = k.clone();
  one_nan.select(2, 0).fill_(Scalar(NAN));
  slice(block_nan, 2, 0, 64).fill_(Scalar(NAN));
  for (const Tensor& keys : {one_nan, block_nan}) {
    EXPECT_EQ(isnan(std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, keys, v))).sum().item<int64_t>(), 32);
    EXPECT_EQ(isnan(kiln_attention(q, keys, v, std::nullopt, 0.25)).sum().item<int64_t>(), 32);
  }
  Tensor nan_q = q.clone();
  nan_q.select(2, 1).fill_(Scalar(NAN));  // row 1: every score NaN
  auto [flash, lse] = _scaled_dot_product_flash_attention_for_cpu(nan_q, k, v);
  EXPECT_EQ(isnan(flash.select(2, 1)).sum().item<int64_t>(), 16);
  EXPECT_EQ(isnan(flash.select(2, 0)).sum().item<int64_t>(), 0);
  EXPECT_TRUE(std::isnan(lse.select(2, 1).item<double>()));
  EXPECT_FALSE(std::isnan(lse.select(2, 0).item<double>()));
  Tensor ops = kiln_attention(nan_q, k, v, std::nullopt, 0.25);
  EXPECT_EQ(isnan(ops.select(2, 1)).sum().item<int64_t>(), 16);
  EXPECT_EQ(isnan(ops.select(2, 0)).sum().item<int64_t>(), 0);
}

// A key block the mask hides from every row is skipped only where that is exact: with an inf
// among its values (0 * inf is NaN) or a key large enough that a score overflows (inf + -inf is
// NaN), the ops' NaNs appear as eager's do; with finite ones the result is eager's. The queries
// are all at least 2, so that the huge key's every product overflows, in any order of summation.
TEST(FlashAttention, HiddenBlocksAreSkippedOnlyWhereExact) {
  manual_seed(10);
  Tensor q = add(rand({1, 2, 70, 8}), Scalar(2)), k = randn({1, 2, 200, 8}), v = randn({1, 2, 200, 8});
  Tensor mask = zeros({70, 200});
  slice(mask, 1, 64, 128).fill_(Scalar(-kInf));  // key block 1 hidden from every row
  Tensor inf_value = v.clone(), huge_key = k.clone();
  inf_value[0][1][100][3].fill_(Scalar(kInf));
  huge_key[0][0][90].fill_(Scalar(3e38));
  struct Inputs {
    Tensor k, v;
  };
  for (const Inputs& in : {Inputs{k, v}, Inputs{k, inf_value}, Inputs{huge_key, v}}) {
    Tensor fused = kiln_attention(q, in.k, in.v, mask, 0.25);
    Tensor eager = matmul(softmax(add(mul(matmul(q, in.k.transpose(-2, -1)), Scalar(0.25)), mask), -1), in.v);
    EXPECT_EQ(ne(isnan(fused), isnan(eager)).sum().item<int64_t>(), 0);
    Tensor finite = logical_not(isnan(eager));
    EXPECT_LT(where(finite, sub(fused, eager).abs(), zeros_like(eager)).amax().item<double>(), 1e-5);
  }
  EXPECT_GT(isnan(kiln_attention(q, k, inf_value, mask, 0.25)).sum().item<int64_t>(), 0);
  EXPECT_GT(isnan(kiln_attention(q, huge_key, v, mask, 0.25)).sum().item<int64_t>(), 0);
}

// A row the mask hides from every key is 0, but NaN in a column where a key's value is inf: it
// weighed the key 0, and 0 * inf is NaN (PyTorch 2.13's kernel gives the same).
TEST(FlashAttention, UnseenRowsKeepZeroTimesInf) {
  manual_seed(13);
  Tensor q = randn({1, 1, 3, 8}), k = randn({1, 1, 5, 8}), v = randn({1, 1, 5, 8});
  v[0][0][2][4].fill_(Scalar(kInf));
  Tensor mask = zeros({3, 5});
  mask[1].fill_(Scalar(-kInf));  // row 1 sees no key
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, mask);
  Tensor row = out[0][0][1];
  EXPECT_TRUE(std::isnan(row[4].item<float>()));
  for (int64_t d : {0, 1, 2, 3, 5, 6, 7}) EXPECT_EQ(row[d].item<float>(), 0.0f) << d;
  EXPECT_EQ(lse[0][0][1].item<float>(), 0.0f);
  EXPECT_EQ(out[0][0][0][4].item<float>(), kInf);  // a row that sees the key weighs it above 0
}

// A causal row weighs the later keys of its block 0 (their scores -inf), and 0 * inf is NaN: rows 0
// to 4 are NaN in the column where key 5's value is inf, as PyTorch 2.13's kernel gives; rows from
// 5 on see the key and are inf there. The NaN sends those rows through the double recomputation,
// which visits the same keys.
TEST(FlashAttention, CausalRowsKeepZeroTimesInfOfLaterKeysInTheirBlock) {
  manual_seed(14);
  Tensor q = randn({1, 1, 8, 4}), k = randn({1, 1, 8, 4}), v = randn({1, 1, 8, 4});
  v[0][0][5][1].fill_(Scalar(kInf));
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true, std::nullopt);
  for (int64_t i = 0; i < 8; ++i) {
    float x = out[0][0][i][1].item<float>();
    if (i < 5) EXPECT_TRUE(std::isnan(x)) << "row " << i << ": " << x;
    else EXPECT_EQ(x, kInf) << "row " << i;
    for (int64_t d : {0, 2, 3}) EXPECT_TRUE(std::isfinite(out[0][0][i][d].item<float>())) << i << ", " << d;
  }
}

// PyTorch's causal walk reads keys in blocks of 512 and weighs the later keys of a row's own block
// 0: an inf value makes the rows before its key NaN in its column back to the start of that block
// of 512 rows, and no row of an earlier block (PyTorch 2.13 gives these patterns). Rows that see the
// key are inf there. With fewer query rows than keys (5 of 600), the first block of keys is weighed.
TEST(FlashAttention, CausalRowsWeighTheLaterKeysOfTheirBlockOf512) {
  manual_seed(15);
  Tensor q = randn({1, 1, 600, 4}), k = randn({1, 1, 600, 4}), v = randn({1, 1, 600, 4});
  const int64_t key_of[3] = {3, 100, 550};  // key_of[d]: the key whose value is inf in column d
  for (int64_t d = 0; d < 3; ++d) v[0][0][key_of[d]][d].fill_(Scalar(kInf));
  auto kind = [](float x) { return std::isnan(x) ? 'n' : std::isinf(x) ? 'i' : 'f'; };
  for (int64_t rows : {600, 5}) {
    Tensor out = std::get<0>(
        _scaled_dot_product_flash_attention_for_cpu(q.slice(2, 0, rows).contiguous(), k, v, 0.0, true, std::nullopt));
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t d = 0; d < 4; ++d) {
        const int64_t key = d < 3 ? key_of[d] : rows + 1000;  // column 3 is finite
        const char want = i >= key ? 'i' : i / 512 == key / 512 ? 'n' : 'f';
        EXPECT_EQ(kind(out[0][0][i][d].item<float>()), want) << rows << " rows: row " << i << ", column " << d;
      }
    }
  }
}

// Values near the float limit: the walk's unnormalized weighted sum passes the range (70 keys of
// 3e38 with equal weights sum to 2e40), where softmax followed by a product gives 3e38. Such a row is
// computed again with its weights in double: finite and eager's.
TEST(FlashAttention, WeightedSumPastTheFloatRangeIsNormalizedFirst) {
  manual_seed(12);
  Tensor q = zeros({1, 2, 5, 8}), k = randn({1, 2, 70, 8}), v = full({1, 2, 70, 8}, Scalar(3e38));
  v[0][1][3][2].fill_(Scalar(-3e38));
  Tensor eager = matmul(softmax(mul(matmul(q, k.transpose(-2, -1)), Scalar(0.25)), -1), v);
  auto [flash, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, std::nullopt, 0.25);
  for (const Tensor& out : {flash, kiln_attention(q, k, v, std::nullopt, 0.25)}) {
    EXPECT_FALSE(any(logical_or(isinf(out), isnan(out))).item<bool>());
    EXPECT_LT(div(sub(out, eager).abs(), eager.abs()).amax().item<double>(), 1e-6);
  }
  EXPECT_NEAR(lse[0][0][0].item<float>(), std::log(70.0f), 1e-5);
}

// A float64 mask of float64's lowest finite value hides nothing: it is not -inf (in float it
// would be), so the block is computed and every key weighs the same.
TEST(FlashAttention, LargeFiniteFloat64MaskIsNotHiding) {
  manual_seed(8);
  Tensor q = randn({1, 1, 4, 8}, DType::Float64), k = randn({1, 1, 70, 8}, DType::Float64);
  Tensor v = randn({1, 1, 70, 8}, DType::Float64);
  Tensor mask = full({4, 70}, Scalar(-std::numeric_limits<double>::max()), DType::Float64);
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, mask);
  Tensor mean_v = mean(v, IntArrayRef{2}, true).expand({1, 1, 4, 8});
  EXPECT_LT(sub(out, mean_v).abs().amax().item<double>(), 1e-12);
}

// A head size of 0: no output elements, but each row's log-sum-exp is log(keys).
TEST(FlashAttention, EmptyHeadSizeStillHasTheLogSumExp) {
  Tensor q = zeros({1, 1, 3, 0}), k = zeros({1, 1, 4, 0}), v = zeros({1, 1, 4, 0});
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, std::nullopt, 1.0);
  EXPECT_EQ(out.numel(), 0);
  EXPECT_LT(sub(lse, Scalar(std::log(4.0))).abs().amax().item<double>(), 1e-6);
}

// The output is laid out like the query (empty_like); logsumexp [B, H, L] is stored [B, L, H], in
// float for 16-bit inputs and double for double ones.
TEST(FlashAttention, OutputLayoutsArePyTorchs) {
  manual_seed(5);
  Tensor q = randn({2, 5, 3, 8}).transpose(1, 2), k = randn({2, 3, 7, 8}), v = randn({2, 3, 7, 8});
  auto [out, lse] = _scaled_dot_product_flash_attention_for_cpu(q, k, v);
  EXPECT_EQ(out.strides().vec(), q.strides().vec());
  EXPECT_EQ(lse.sizes().vec(), (std::vector<int64_t>{2, 3, 5}));
  EXPECT_EQ(lse.strides().vec(), (std::vector<int64_t>{15, 1, 3}));
  EXPECT_EQ(lse.dtype(), DType::Float32);
  auto bf16 =
      _scaled_dot_product_flash_attention_for_cpu(q.to(DType::BFloat16), k.to(DType::BFloat16), v.to(DType::BFloat16));
  EXPECT_EQ(std::get<0>(bf16).dtype(), DType::BFloat16);
  EXPECT_EQ(std::get<1>(bf16).dtype(), DType::Float32);
  auto f64 =
      _scaled_dot_product_flash_attention_for_cpu(q.to(DType::Float64), k.to(DType::Float64), v.to(DType::Float64));
  EXPECT_EQ(std::get<1>(f64).dtype(), DType::Float64);
}

// Each query block is one task with its own arithmetic: the result is the same on any thread count
// (fewer threads than the 8 (batch, head) pairs, as many, and one that does not divide them).
TEST(FlashAttention, SameBitsOnAnyThreadCount) {
  manual_seed(6);
  Tensor q = randn({2, 4, 300, 64}), k = randn({2, 4, 257, 64}), v = randn({2, 4, 257, 64});
  int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  Tensor one = std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true));
  for (int n : {3, 4, 8}) {
    omp_set_num_threads(n);
    Tensor many = std::get<0>(_scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, true));
    EXPECT_EQ(ne(one, many).sum().item<int64_t>(), 0) << n << " threads";
  }
  omp_set_num_threads(threads);
}

void expect_error(const std::function<void()>& call, const std::string& says) {
  testing::expect_kiln_error(call, {"_scaled_dot_product_flash_attention_for_cpu", says});
}

TEST(FlashAttention, BadArgumentsRaiseNamingThem) {
  Tensor q = randn({1, 2, 3, 8}), k = randn({1, 2, 5, 8}), v = randn({1, 2, 5, 8});
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q.squeeze(0), k, v); }, "must be 4-D");
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, randn({1, 2, 5, 6})); }, "same head size");
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, randn({1, 2, 4, 8})); }, "same sequence length");
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, randn({1, 1, 5, 8}), v); }, "number of heads");
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k.to(DType::Float64), v); }, "one floating dtype");
  expect_error([&] { _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.1); }, "dropout");
  expect_error(
      [&] {
        _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, zeros({3, 5}, DType::Bool));
      },
      "query's dtype");
  expect_error(
      [&] {
        _scaled_dot_product_flash_attention_for_cpu(q, k, v, 0.0, false, zeros({3, 4}));
      },
      "does not broadcast");
  expect_error(
      [&] {
        Tensor i = ones({1, 2, 3, 8}, DType::Int64);
        _scaled_dot_product_flash_attention_for_cpu(i, i, i);
      },
      "one floating dtype");
}

}  // namespace
}  // namespace kiln
