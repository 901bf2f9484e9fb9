// Reductions against float64 references over dim lists, keepdim, empty and 0-d inputs,
// non-contiguous inputs and both engine strategies (inner rows and outer columns).
#include <cmath>
#include <numeric>

#include "harness.h"

namespace kiln::testing {
namespace {

// Groups input values (row-major) by output element; each group is in row-major order.
std::vector<std::vector<double>> groups(const Tensor& in, uint64_t mask) {
  std::vector<double> v = to_doubles(in);
  int64_t nd = in.dim();
  int64_t outputs = 1;
  for (int64_t d = 0; d < nd; ++d) outputs *= (mask >> d & 1) ? 1 : in.sizes()[d];
  std::vector<std::vector<double>> g(static_cast<size_t>(outputs));
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  for (size_t i = 0; i < v.size(); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < nd; ++d) {
      if (!(mask >> d & 1)) o = o * in.sizes()[d] + idx[d];
    }
    g[static_cast<size_t>(o)].push_back(v[i]);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++idx[d] < in.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return g;
}

uint64_t mask_for(const std::vector<int64_t>& dims, int64_t nd) {
  if (dims.empty()) return nd == 0 ? 0 : (uint64_t{1} << nd) - 1;
  uint64_t m = 0;
  for (int64_t d : dims) m |= uint64_t{1} << (d < 0 ? d + nd : d);
  return m;
}

struct Case {
  std::string name;
  Tensor input;
  std::vector<int64_t> dims;
};

std::vector<Case> cases(DType dtype) {
  Maker m(99);
  std::vector<Case> c = {
      {"3d-dim1", m.make({3, 4, 5}, dtype), {1}},
      {"3d-dims02", m.make({3, 4, 5}, dtype), {0, 2}},
      {"3d-all", m.make({3, 4, 5}, dtype), {}},
      {"3d-last", m.make({3, 4, 5}, dtype), {-1}},
      {"transposed-rows", m.transposed(33, 17, dtype), {1}},
      {"transposed-cols", m.transposed(33, 17, dtype), {0}},
      {"0-d", m.make({}, dtype), {}},
      {"size-1-dim", m.make({2, 1, 3}, dtype), {1}},
      {"strided-offset", m.strided_with_offset(dtype), {0, 2}},
      {"empty-kept", m.make({0, 4}, dtype), {1}},
  };
  if (dtype == DType::Float32) {
    c.push_back({"1029x917-rows", m.make({1029, 917}, dtype), {1}});
    c.push_back({"1029x917-cols", m.make({1029, 917}, dtype), {0}});
    c.push_back({"long-row", m.make({2, 300000}, dtype), {1}});
  }
  return c;
}

using GroupFn = double (*)(const std::vector<double>&);

double sum_of(const std::vector<double>& g) { return std::accumulate(g.begin(), g.end(), 0.0); }
double prod_of(const std::vector<double>& g) { return std::accumulate(g.begin(), g.end(), 1.0, std::multiplies<>()); }
double mean_of(const std::vector<double>& g) { return sum_of(g) / static_cast<double>(g.size()); }
double max_of(const std::vector<double>& g) {
  double m = -INFINITY;
  for (double x : g) m = (std::isnan(x) || std::isnan(m)) ? NAN : std::max(m, x);
  return m;
}
double min_of(const std::vector<double>& g) {
  double m = INFINITY;
  for (double x : g) m = (std::isnan(x) || std::isnan(m)) ? NAN : std::min(m, x);
  return m;
}
double var_of(const std::vector<double>& g) {
  double mu = mean_of(g), s = 0;
  for (double x : g) s += (x - mu) * (x - mu);
  return s / (static_cast<double>(g.size()) - 1);
}
double any_of(const std::vector<double>& g) {
  return std::any_of(g.begin(), g.end(), [](double x) { return x != 0; }) ? 1 : 0;
}

// Sums carry rounding that grows with the number of terms: widen atol by n * eps * max|x|.
Tolerance sum_tolerance(DType t, const Tensor& in) {
  Tolerance tol = default_tolerance(t);
  if (!is_floating(t)) return tol;
  double eps = t == DType::Float64 ? 0x1p-52 : t == DType::Float32 ? 0x1p-23 : t == DType::Float16 ? 0x1p-10 : 0x1p-7;
  tol.atol += 9.0 * eps * std::sqrt(static_cast<double>(std::max<int64_t>(in.numel(), 1)));
  return tol;
}

void check(const std::string& what, const Tensor& out, const Tensor& in, uint64_t mask, GroupFn f, Tolerance tol) {
  SCOPED_TRACE(what);
  auto g = groups(in, mask);
  std::vector<double> expected;
  for (const auto& group : g) expected.push_back(round_to(f(group), out.dtype()));
  EXPECT_TRUE(close(out, expected, tol));
}

TEST(Reductions, SumMeanProdAmaxAminVarAny) {
  for (DType t : {DType::Float32, DType::Float64, DType::Float16, DType::BFloat16, DType::Int32, DType::Bool}) {
    for (auto& c : cases(t)) {
      uint64_t mask = mask_for(c.dims, c.input.dim());
      std::string tag = std::string(dtype_name(t)) + " " + c.name;
      std::optional<IntArrayRef> dims;
      if (!c.dims.empty()) dims = IntArrayRef(c.dims);
      for (bool keepdim : {false, true}) {
        Tensor s = sum(c.input, dims, keepdim);
        EXPECT_EQ(s.dtype(), is_floating(t) ? t : DType::Int64) << tag;
        check("sum " + tag, s, c.input, mask, sum_of, sum_tolerance(s.dtype(), c.input));
        expect_same_metadata(sum(to_meta({c.input})[0], dims, keepdim), s, "sum meta " + tag);
        Tensor a = any(c.input, dims, keepdim);
        check("any " + tag, a, c.input, mask, any_of, {0, 0});
      }
      bool empty_reduction = c.input.numel() == 0 && c.name != "empty-kept";
      if (!empty_reduction) {
        check("amax " + tag, amax(c.input, c.dims), c.input, mask, max_of, {0, 0});
        check("amin " + tag, amin(c.input, c.dims, true), c.input, mask, min_of, {0, 0});
      }
      if (is_floating(t)) {
        check("mean " + tag, mean(c.input, dims), c.input, mask, mean_of, sum_tolerance(t, c.input));
        Tolerance var_tol = default_tolerance(t);
        var_tol.atol *= 10;
        check("var " + tag, var(c.input, dims), c.input, mask, var_of, var_tol);
        if (c.input.numel() < 100) {
          Tolerance prod_tol = default_tolerance(t);
          prod_tol.rtol *= 8;
          check("prod " + tag, c.input.dim() > 0 && c.dims.size() == 1 ? prod(c.input, c.dims[0]) : prod(c.input),
                c.input, c.input.dim() > 0 && c.dims.size() == 1 ? mask : mask_for({}, c.input.dim()), prod_of,
                prod_tol);
        }
      } else {
        EXPECT_THROW(mean(c.input), Error);
        EXPECT_THROW(var(c.input, std::nullopt), Error);
      }
    }
  }
}

TEST(Reductions, NaNPropagatesThroughAmaxAndArgmaxPicksTheFirstNaN) {
  Tensor x = from_vector<float>({1, NAN, 3, NAN, -INFINITY});
  EXPECT_TRUE(std::isnan(amax(x).item<float>()));
  EXPECT_TRUE(std::isnan(amin(x).item<float>()));
  EXPECT_EQ(argmax(x).item<int64_t>(), 1);
  EXPECT_EQ(argmin(x).item<int64_t>(), 1);
  Tensor ties = from_vector<float>({2, 5, 5, -1, -1});
  EXPECT_EQ(argmax(ties).item<int64_t>(), 1);
  EXPECT_EQ(argmin(ties).item<int64_t>(), 3);
  Tensor all_neg_inf = full({3}, -INFINITY);
  EXPECT_EQ(argmax(all_neg_inf).item<int64_t>(), 0);
}

TEST(Reductions, ArgAndMaxDimMatchReference) {
  Maker m(4);
  for (DType t : {DType::Float32, DType::Int16, DType::BFloat16}) {
    Tensor x = m.make({6, 7, 5}, t, -3, 3);  // small range: many ties, first one wins
    for (int64_t d = 0; d < 3; ++d) {
      auto g = groups(x, uint64_t{1} << d);
      std::vector<double> want_idx, want_max, want_min_idx;
      for (const auto& group : g) {
        auto it = std::max_element(group.begin(), group.end());
        auto lo = std::min_element(group.begin(), group.end());
        want_idx.push_back(static_cast<double>(it - group.begin()));
        want_max.push_back(*it);
        want_min_idx.push_back(static_cast<double>(lo - group.begin()));
      }
      EXPECT_TRUE(close(argmax(x, d), want_idx, {0, 0}));
      EXPECT_TRUE(close(argmin(x, d), want_min_idx, {0, 0}));
      auto [values, indices] = max(x, d);
      EXPECT_TRUE(close(values, want_max, {0, 0}));
      EXPECT_TRUE(close(indices, want_idx, {0, 0}));
      auto [kv, ki] = max(x, d, true);
      EXPECT_EQ(kv.dim(), 3);
    }
    // Over all dims: the index into the flattened, row-major tensor, also for a transposed input.
    Tensor xt = x.transpose(0, 2);
    auto flat = to_doubles(xt);
    auto it = std::max_element(flat.begin(), flat.end());
    EXPECT_EQ(argmax(xt).item<int64_t>(), it - flat.begin());
    EXPECT_EQ(argmax(xt, std::nullopt, true).sizes().vec(), (std::vector<int64_t>{1, 1, 1}));
  }
}

TEST(Reductions, VarMeanAndCorrection) {
  Maker m(8);
  Tensor x = m.make({4, 50}, DType::Float64);
  auto g = groups(x, 2);
  auto [v, mu] = var_mean(x, IntArrayRef{1}, Scalar(0));
  std::vector<double> want_v, want_mu;
  for (const auto& group : g) {
    double mean = mean_of(group), s = 0;
    for (double e : group) s += (e - mean) * (e - mean);
    want_v.push_back(s / static_cast<double>(group.size()));
    want_mu.push_back(mean);
  }
  EXPECT_TRUE(close(v, want_v, default_tolerance(DType::Float64)));
  EXPECT_TRUE(close(mu, want_mu, default_tolerance(DType::Float64)));
  EXPECT_TRUE(std::isinf(var(from_vector<float>({1, 2}), std::nullopt, Scalar(2)).item<float>()));
  EXPECT_TRUE(std::isnan(var(zeros({0}), std::nullopt).item<float>()));
  EXPECT_TRUE(std::isnan(mean(zeros({0})).item<float>()));
}

TEST(Reductions, DtypesAndErrors) {
  EXPECT_EQ(sum(from_vector<bool>({true, true})).item<int64_t>(), 2);
  EXPECT_EQ(sum(from_vector<int8_t>({100, 100})).dtype(), DType::Int64);
  EXPECT_EQ(sum(from_vector<int8_t>({100, 100})).item<int64_t>(), 200);
  EXPECT_EQ(sum(from_vector<float>({1.5f}), DType::Float64).dtype(), DType::Float64);
  EXPECT_EQ(any(from_vector<uint8_t>({0, 3})).dtype(), DType::UInt8);
  EXPECT_EQ(prod(zeros({0})).item<float>(), 1.0f);
  EXPECT_THROW(amax(zeros({0})), Error);
  EXPECT_THROW(argmax(zeros({2, 0}), 1), Error);
  EXPECT_THROW(sum(zeros({2, 3}), IntArrayRef{2}), Error);
  EXPECT_THROW(sum(zeros({2, 3}), IntArrayRef{1, -1}), Error);
}

}  // namespace
}  // namespace kiln::testing
