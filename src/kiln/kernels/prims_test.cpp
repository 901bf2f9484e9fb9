// The prims' kernels: every declared prim runs on Meta and CPU; elementwise prims refuse operands
// that would need promotion or broadcasting; the view prims build the geometry PyTorch's prims
// define (checked element by element against the ATen ops they stand for).
#include <gtest/gtest.h>

#include "kiln/ops/api.h"
#include "kiln/ops/prims_api.h"
#include "kiln/ops/registry.h"

namespace kiln {
namespace {

std::vector<int64_t> vec(IntArrayRef a) { return a.vec(); }
double max_diff(const Tensor& a, const Tensor& b) { return sub(a, b).abs().amax().item<double>(); }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(Prims, EveryPrimHasMetaAndCpuKernels) {
  int prims_seen = 0;
  for (OpHandle op : Registry::global().ops()) {
    if (!op->has_tag(OpTag::Prim)) continue;
    ++prims_seen;
    EXPECT_EQ(op->schema().ns, "prims") << op->name();
    EXPECT_NE(op->kernel(DispatchKey::Meta), nullptr) << op->name();
    EXPECT_NE(op->kernel(DispatchKey::CPU), nullptr) << op->name();
    EXPECT_FALSE(op->has_tag(OpTag::Core)) << op->name();
  }
  EXPECT_GE(prims_seen, 70);
}

TEST(Prims, ElementwisePrimsNeitherPromoteNorBroadcast) {
  Tensor f = ones({2, 3}), i = ones({2, 3}, DType::Int64), row = ones({3});
  EXPECT_EQ(error_of([&] { prims::add(f, i); }),
            "prims::add: operands must have the same dtype (prims do not promote; use convert_element_type), got "
            "float32 and int64");
  EXPECT_EQ(error_of([&] { prims::mul(f, row); }),
            "prims::mul: operands must have the same shape (prims do not broadcast; use broadcast_in_dim), got [2, 3] "
            "and [3]");
  EXPECT_EQ(error_of([&] { prims::exp(i); }), "prims::exp: not defined for int64 operands");
  EXPECT_EQ(error_of([&] { prims::where(f, f, f); }), "prims::where: pred must be bool, got float32");
  EXPECT_EQ(prims::lt(f, f).dtype(), DType::Bool);
  // Integer division truncates toward zero, as C does.
  Tensor q = prims::div(from_vector<int64_t>({-7, 7}), from_vector<int64_t>({2, -2}));
  EXPECT_EQ(q.to_string(), "tensor([-3, -3])");
  Tensor meta = prims::exp(to_meta(f));
  EXPECT_TRUE(meta.device().is_meta());
  EXPECT_EQ(vec(meta.sizes()), (std::vector<int64_t>{2, 3}));
}

TEST(Prims, BroadcastInDimMapsDimsAndZeroesStrides) {
  Tensor x = arange(3, DType::Float32);
  Tensor b = prims::broadcast_in_dim(x, {2, 3, 4}, {1});
  EXPECT_EQ(vec(b.strides()), (std::vector<int64_t>{0, 1, 0}));
  EXPECT_EQ(max_diff(b, x.view({1, 3, 1}).expand({2, 3, 4})), 0.0);
  Tensor one = ones({1, 4});
  EXPECT_EQ(vec(prims::broadcast_in_dim(one, {5, 4}, {0, 1}).strides()), (std::vector<int64_t>{0, 1}));
  EXPECT_NE(error_of([&] { prims::broadcast_in_dim(x, {3, 2}, {1}); }).find("cannot become size 2"), std::string::npos);
  EXPECT_NE(error_of([&] {
              prims::broadcast_in_dim(one, {1, 4}, {1, 0});
            }).find("strictly ascending"),
            std::string::npos);
}

TEST(Prims, CollapseSplitSqueezeSliceAndTranspose) {
  Tensor x = arange(24, DType::Float32).view({2, 3, 4});
  Tensor c = prims::collapse_view(x, 1, 2);
  EXPECT_EQ(vec(c.sizes()), (std::vector<int64_t>{2, 12}));
  EXPECT_EQ(c.storage().get(), x.storage().get());
  EXPECT_EQ(max_diff(c, x.view({2, 12})), 0.0);
  Tensor t = x.permute({0, 2, 1});
  EXPECT_NE(error_of([&] { prims::collapse_view(t, 1, 2); }).find("not one contiguous span"), std::string::npos);
  EXPECT_EQ(max_diff(prims::collapse(t, 1, 2), t.reshape({2, 12})), 0.0);
  Tensor s = prims::split_dim(x, 2, 2);
  EXPECT_EQ(vec(s.sizes()), (std::vector<int64_t>{2, 3, 2, 2}));
  EXPECT_EQ(max_diff(s, x.view({2, 3, 2, 2})), 0.0);
  EXPECT_NE(error_of([&] { prims::split_dim(x, 1, 2); }).find("cannot be split"), std::string::npos);
  Tensor one = x.view({2, 1, 12});
  EXPECT_EQ(vec(prims::squeeze(one, {1}).sizes()), (std::vector<int64_t>{2, 12}));
  EXPECT_NE(error_of([&] { prims::squeeze(one, {0}); }).find("only size-1 dims"), std::string::npos);
  Tensor sl = prims::slice(x, {0, 1, 1}, {2, 3, 4}, IntArrayRef{1, 1, 2});
  EXPECT_EQ(max_diff(sl, x.slice(1, 1, 3).slice(2, 1, 4, 2)), 0.0);
  EXPECT_NE(error_of([&] { prims::slice(x, {0, 0, 0}, {2, 4, 4}); }).find("cannot be sliced"), std::string::npos);
  EXPECT_EQ(max_diff(prims::transpose(x, {2, 0, 1}), x.permute({2, 0, 1})), 0.0);
  EXPECT_EQ(prims::view_of(x).storage().get(), x.storage().get());
}

TEST(Prims, ReductionsCopiesAndFactories) {
  Tensor x = arange(24, DType::Float64).view({2, 3, 4});
  EXPECT_EQ(max_diff(prims::sum(x, IntArrayRef{0, 2}), sum(x, IntArrayRef{0, 2})), 0.0);
  EXPECT_EQ(max_diff(prims::sum(x, IntArrayRef{}), x), 0.0);  // no dims: nothing reduced
  EXPECT_EQ(prims::sum(x, std::nullopt).item<double>(), 276.0);
  EXPECT_EQ(prims::prod(from_vector<int64_t>({2, 3, 4}), std::nullopt).item<int64_t>(), 24);
  EXPECT_EQ(max_diff(prims::amax(x, IntArrayRef{1}), amax(x, {1})), 0.0);
  EXPECT_EQ(prims::sum(ones({3}, DType::Int32), std::nullopt).dtype(), DType::Int32);
  EXPECT_LT(max_diff(prims::var(x, IntArrayRef{2}, 0.0), var(x, IntArrayRef{2}, Scalar(0))), 1e-12);
  Tensor t = x.permute({2, 1, 0});
  Tensor r = prims::reshape(t, {4, 6});
  EXPECT_EQ(max_diff(r, t.reshape({4, 6})), 0.0);
  EXPECT_NE(error_of([&] { prims::reshape(t, {5, 5}); }).find("has 25 elements"), std::string::npos);
  EXPECT_EQ(max_diff(prims::cat({x, x}, 1), cat(std::vector<Tensor>{x, x}, 1)), 0.0);
  EXPECT_NE(error_of([&] { prims::cat({x, ones({2, 3, 4})}, 0); }).find("one dtype"), std::string::npos);
  EXPECT_EQ(prims::iota(4, 10, -3, DType::Int64, kCPU).to_string(), "tensor([10, 7, 4, 1])");
  EXPECT_NE(error_of([&] { prims::iota(4, 0, 1, DType::Float32, kCPU); }).find("integer dtype"), std::string::npos);
  EXPECT_EQ(prims::full({2}, 2.5, DType::Float64, kCPU).to_string(), "tensor([2.5000, 2.5000], dtype=torch.float64)");
  EXPECT_EQ(prims::convert_element_type(from_vector<double>({1.75, -1.75}), DType::Int32).to_string(),
            "tensor([1, -1], dtype=torch.int32)");
  manual_seed(5);
  Tensor u = prims::uniform({1000}, -2.0, 3.0, DType::Float32, kCPU);
  EXPECT_GE(u.amin().item<double>(), -2.0);
  EXPECT_LT(u.amax().item<double>(), 3.0);
  manual_seed(5);
  Tensor again = prims::uniform({1000}, -2.0, 3.0, DType::Float32, kCPU);
  EXPECT_EQ(max_diff(u, again), 0.0);
}

}  // namespace
}  // namespace kiln
