#include "harness.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace kiln::testing {

std::vector<double> to_doubles(const Tensor& t) {
  std::vector<double> out;
  out.reserve(static_cast<size_t>(t.numel()));
  if (t.numel() == 0) return out;
  std::vector<int64_t> idx(static_cast<size_t>(t.dim()), 0);
  const char* base = static_cast<const char*>(t.data_ptr());
  size_t esize = t.element_size();
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t off = 0;
    for (int64_t d = 0; d < t.dim(); ++d) off += idx[d] * t.strides()[d];
    const char* p = base + off * static_cast<int64_t>(esize);
    out.push_back(visit_dtype(t.dtype(), [&]<class T>() {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return static_cast<double>(static_cast<opmath_t<T>>(v));
    }));
    for (int64_t d = t.dim() - 1; d >= 0; --d) {
      if (++idx[d] < t.sizes()[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

double round_to(double v, DType t) {
  if (std::isnan(v)) return is_floating(t) ? v : 0;
  switch (t) {
    case DType::Float64: return v;
    case DType::Float32: return static_cast<float>(v);
    case DType::Float16: return static_cast<float>(Half(static_cast<float>(v)));
    case DType::BFloat16: return static_cast<float>(BFloat16(static_cast<float>(v)));
    case DType::Bool: return v != 0 ? 1 : 0;
    default: break;
  }
  auto as_int = static_cast<int64_t>(v);
  switch (t) {
    case DType::UInt8: return static_cast<uint8_t>(as_int);
    case DType::Int8: return static_cast<int8_t>(as_int);
    case DType::Int16: return static_cast<int16_t>(as_int);
    case DType::Int32: return static_cast<int32_t>(as_int);
    default: return static_cast<double>(as_int);
  }
}

::testing::AssertionResult close(const Tensor& actual, const std::vector<double>& expected, Tolerance tol) {
  std::vector<double> got = to_doubles(actual);
  if (got.size() != expected.size()) {
    return ::testing::AssertionFailure() << "got " << got.size() << " elements, expected " << expected.size();
  }
  size_t bad = 0, worst = 0;
  double worst_diff = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    double a = got[i], e = expected[i];
    bool ok;
    if (std::isnan(e) || std::isnan(a)) {
      ok = std::isnan(e) && std::isnan(a);
    } else if (std::isinf(e) || std::isinf(a)) {
      ok = a == e;
    } else {
      ok = std::abs(a - e) <= tol.atol + tol.rtol * std::abs(e);
    }
    if (!ok) {
      ++bad;
      double diff = std::isfinite(a - e) ? std::abs(a - e) : std::numeric_limits<double>::infinity();
      if (diff > worst_diff) {
        worst_diff = diff;
        worst = i;
      }
    }
  }
  if (bad == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "Mismatched elements: " << bad << " / " << got.size() << " ("
                                       << 100.0 * static_cast<double>(bad) / static_cast<double>(got.size())
                                       << "%); greatest difference at index " << worst << ": got " << got[worst]
                                       << ", expected " << expected[worst] << " (rtol " << tol.rtol << ", atol "
                                       << tol.atol << ")";
}

Tensor Maker::make(IntArrayRef shape, DType dtype, double lo, double hi) {
  Tensor t = empty(shape, dtype);
  visit_dtype(dtype, [&]<class T>() {
    T* p = t.data_ptr<T>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      if constexpr (std::is_same_v<T, bool>) {
        p[i] = (rng_() & 1) != 0;
      } else if constexpr (std::is_integral_v<T>) {
        int64_t l = std::is_signed_v<T> ? static_cast<int64_t>(lo) : std::max<int64_t>(static_cast<int64_t>(lo), 0);
        int64_t h = static_cast<int64_t>(hi);
        p[i] = static_cast<T>(l + static_cast<int64_t>(rng_() % static_cast<uint64_t>(h - l + 1)));
      } else {
        double u = static_cast<double>(rng_() >> 11) * 0x1p-53;
        p[i] = T(static_cast<opmath_t<T>>(lo + (hi - lo) * u));
      }
    }
  });
  return t;
}

Tensor Maker::transposed(int64_t rows, int64_t cols, DType dtype) { return make({cols, rows}, dtype).t(); }

Tensor Maker::strided_with_offset(DType dtype) {
  Tensor buffer = make({40}, dtype);
  return buffer.as_strided({5, 6, 2}, {1, 1, 7}, 2);
}

Tensor Maker::extremal(DType dtype) {
  std::vector<double> v{INFINITY, -INFINITY, NAN, 0.0, -0.0, 1.0, -1.0, 1.17549435e-38, 3.0e38, 1e-40};
  Tensor t = from_vector(v);
  return t.to(dtype);
}

std::vector<Sample> unary_samples(DType dtype, Maker& m) {
  std::vector<Sample> s;
  s.push_back({"0-d", {m.make({}, dtype)}});
  s.push_back({"empty", {m.make({0}, dtype)}});
  s.push_back({"empty-3d", {m.make({1, 0, 3}, dtype)}});
  s.push_back({"size-20", {m.make({20}, dtype)}});
  s.push_back({"size-812", {m.make({812}, dtype)}});
  if (dtype == DType::Float32 || dtype == DType::Int64) s.push_back({"1029x917", {m.make({1029, 917}, dtype)}});
  s.push_back({"transposed", {m.transposed(17, 33, dtype)}});
  s.push_back({"strided-offset", {m.strided_with_offset(dtype)}});
  s.push_back({"expanded", {m.make({1, 5}, dtype).expand({4, 5})}});
  if (is_floating(dtype)) s.push_back({"extremal", {m.extremal(dtype)}});
  return s;
}

std::vector<Sample> binary_samples(DType dtype, Maker& m, bool nonzero_rhs) {
  auto rhs = [&](IntArrayRef shape) {
    if (!nonzero_rhs || is_floating(dtype)) return m.make(shape, dtype);
    Tensor t = m.make(shape, dtype, 1, 9);
    if (is_signed(dtype)) {
      Tensor sign = m.make(shape, DType::Bool);
      t = where(sign, t, neg(t));
    }
    return t;
  };
  std::vector<Sample> s;
  s.push_back({"0-d", {m.make({}, dtype), rhs({})}});
  s.push_back({"empty", {m.make({0}, dtype), rhs({0})}});
  s.push_back({"size-20", {m.make({20}, dtype), rhs({20})}});
  if (dtype == DType::Float32) s.push_back({"1029x917", {m.make({1029, 917}, dtype), rhs({1029, 917})}});
  s.push_back({"broadcast-both", {m.make({5, 1}, dtype), rhs({1, 4})}});
  s.push_back({"broadcast-rhs", {m.make({3, 4}, dtype), rhs({4})}});
  s.push_back({"broadcast-lhs-0d", {m.make({}, dtype), rhs({3})}});
  s.push_back({"broadcast-empty", {m.make({0, 1}, dtype), rhs({1, 5})}});
  s.push_back({"transposed", {m.transposed(17, 33, dtype), rhs({17, 33})}});
  s.push_back({"strided-offset", {m.strided_with_offset(dtype), rhs({5, 6, 2})}});
  s.push_back({"expanded", {m.make({1, 5}, dtype).expand({4, 5}), rhs({4, 5})}});
  if (is_floating(dtype)) {
    Tensor e = m.extremal(dtype);
    s.push_back({"extremal-cross", {e.view({10, 1}), e.view({1, 10})}});
  }
  return s;
}

std::vector<Tensor> to_meta(const std::vector<Tensor>& inputs) {
  std::vector<Tensor> out;
  for (const auto& t : inputs) out.push_back(kiln::to_meta(t));
  return out;
}

void expect_same_metadata(const Tensor& meta, const Tensor& cpu, const std::string& what) {
  EXPECT_TRUE(meta.device().is_meta()) << what;
  EXPECT_EQ(meta.dtype(), cpu.dtype()) << what;
  EXPECT_EQ(meta.sizes().vec(), cpu.sizes().vec()) << what;
  EXPECT_EQ(meta.strides().vec(), cpu.strides().vec()) << what;
}

}  // namespace kiln::testing
