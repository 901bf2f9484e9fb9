#include <gtest/gtest.h>

#include "core_aten_table.h"
#include "kiln/ops/api.h"
#include "kiln/ops/custom_op.h"
#include "kiln/ops/dispatcher.h"

namespace kiln {
namespace {

TEST(Registry, HoldsEveryCoreAtenOpWithItsExactSchema) {
  auto table = testing::core_aten_table();
  ASSERT_EQ(table.size(), 193u);
  for (const auto& [name, text] : table) {
    OpHandle op = Registry::global().find(name);
    ASSERT_NE(op, nullptr) << name;
    EXPECT_EQ(op->schema().text, text);
    EXPECT_TRUE(op->has_tag(OpTag::Core)) << name;
    EXPECT_FALSE(op->has_tag(OpTag::Inplace) && name != "resize_") << name;
  }
}

TEST(Registry, DerivesTagsAndPatternKinds) {
  auto& r = Registry::global();
  EXPECT_TRUE(r.get("aten::view")->has_tag(OpTag::View));
  EXPECT_TRUE(r.get("aten::add_.Tensor")->has_tag(OpTag::Inplace));
  EXPECT_EQ(r.get("aten::exp")->pattern(), PatternKind::Elementwise);
  EXPECT_EQ(r.get("aten::add.Tensor")->pattern(), PatternKind::Broadcast);
  EXPECT_EQ(r.get("aten::sum.dim_IntList")->pattern(), PatternKind::Reduction);
  EXPECT_EQ(r.get("aten::permute")->pattern(), PatternKind::Injective);
  EXPECT_EQ(r.get("aten::mm")->pattern(), PatternKind::Opaque);
  EXPECT_EQ(r.get("aten::zeros")->kind(), OpKind::Compound);
  EXPECT_EQ(r.find("aten::nope"), nullptr);
  EXPECT_THROW(r.get("nope"), Error);
}

TEST(Dispatcher, BoxedCallsFillDefaultsAndCheckTypes) {
  OpHandle add = Registry::global().get("aten::add.Tensor");
  Stack s{Value(from_vector<float>({1, 2})), Value(from_vector<float>({10, 20}))};
  call_op_boxed(add, s);
  ASSERT_EQ(s.size(), 1u);
  EXPECT_FLOAT_EQ(s[0].to_tensor().data_ptr<float>()[1], 22.0f);

  Stack too_many{Value(zeros({2})), Value(zeros({2})), Value(1), Value(2)};
  try {
    call_op_boxed(add, too_many);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::Type);
    EXPECT_STREQ(e.what(), "aten::add.Tensor: expected at most 3 arguments but got 4");
  }
  Stack wrong_type{Value(zeros({2})), Value("x")};
  try {
    call_op_boxed(add, wrong_type);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "aten::add.Tensor: argument 'other' (position 1) must be Tensor, not str");
  }
  Stack missing{Value(zeros({2}))};
  try {
    call_op_boxed(add, missing);
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "aten::add.Tensor: missing value for argument 'other' (position 1)");
  }
  // An int where the schema says int[1] becomes a one-element list, as in PyTorch.
  Stack sum_args{Value(ones({2, 3})), Value(int64_t{1})};
  call_op_boxed(Registry::global().get("aten::sum.dim_IntList"), sum_args);
  EXPECT_EQ(sum_args[0].to_tensor().sizes().vec(), (std::vector<int64_t>{2}));
}

// A number where mul.Tensor's schema says Tensor is a wrapped number, as PyTorch's argument parser
// makes it (decompositions write mul.Tensor(x, 0.5)): an int tensor times 0.5 is float32, not
// float64, and 2 * an int tensor stays int64. Ops outside PyTorch's short list still refuse it.
TEST(Dispatcher, NumbersAsTensorsForArithmetic) {
  Stack half{Value(from_vector<int64_t>({2, 3})), Value(0.5)};
  call_op_boxed(Registry::global().get("aten::mul.Tensor"), half);
  Tensor r = half[0].to_tensor();
  EXPECT_EQ(r.dtype(), DType::Float32);
  EXPECT_FLOAT_EQ(r.data_ptr<float>()[1], 1.5f);
  Stack twice{Value(int64_t{2}), Value(from_vector<int64_t>({4}))};
  call_op_boxed(Registry::global().get("aten::mul.Tensor"), twice);
  EXPECT_EQ(twice[0].to_tensor().dtype(), DType::Int64);
  EXPECT_EQ(twice[0].to_tensor().data_ptr<int64_t>()[0], 8);
  Stack sum_of_number{Value(int64_t{3}), Value()};
  EXPECT_THROW(call_op_boxed(Registry::global().get("aten::sum.dim_IntList"), sum_of_number), Error);
  Stack exp_of_number{Value(2.0)};
  EXPECT_THROW(call_op_boxed(Registry::global().get("aten::exp"), exp_of_number), Error);
}

TEST(Dispatcher, BackendFollowsTheTensorsAndFactoriesFollowTheirDevice) {
  Tensor m = zeros({2, 3}, TensorOptions(kMeta));
  EXPECT_TRUE(m.device().is_meta());
  Tensor y = exp(m);
  EXPECT_TRUE(y.device().is_meta());
  EXPECT_EQ(y.sizes().vec(), (std::vector<int64_t>{2, 3}));
  // A 0-d CPU tensor may join tensors of another device, like a scalar.
  Tensor z = add(m, scalar_tensor(2.0));
  EXPECT_TRUE(z.device().is_meta());
  try {
    add(m, zeros({2, 3}));
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("same device"), std::string::npos);
  }
}

Tensor meta_only(const Tensor& a) { return empty_like(a); }

TEST(Dispatcher, MissingBackendKernelIsAnError) {
  OpHandle op = register_custom_op({.schema = "dispatcher_test::meta_only(Tensor a) -> Tensor",
                                    .tags = "",
                                    .meta = boxed_kernel<&meta_only>(),
                                    .cpu = {}});
  Stack s{Value(zeros({2}))};
  try {
    call_op_boxed(op, s);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::NotImplemented);
    EXPECT_STREQ(e.what(), "dispatcher_test::meta_only: no kernel for the CPU backend (kernels exist for: Meta)");
  }
}

// A custom op through the public API, with a wrapper kernel at the Autograd key that counts calls
// and redispatches: the keys above the backends wrap calls, the backends run them.
Tensor scaled_add_meta(const Tensor& a, const Tensor& b, double) { return empty_like(add(a, b)); }
Tensor scaled_add_cpu(const Tensor& a, const Tensor& b, double s) { return add(a, b, Scalar(s)); }

TEST(CustomOp, RegistersRunsOnCpuAndMetaAndWraps) {
  static OpHandle op = register_custom_op({.schema = "testlib::scaled_add(Tensor a, Tensor b, float s=1.0) -> Tensor",
                                           .tags = "pointwise",
                                           .meta = boxed_kernel<&scaled_add_meta>(),
                                           .cpu = boxed_kernel<&scaled_add_cpu>()});
  EXPECT_EQ(op->provenance(), Provenance::Custom);
  EXPECT_EQ(op->name(), "testlib::scaled_add");
  EXPECT_EQ(Registry::global().find("testlib::scaled_add"), op);

  Tensor y = call<Tensor>(op, from_vector<float>({1, 2}), from_vector<float>({3, 4}), 2.0);
  EXPECT_FLOAT_EQ(y.data_ptr<float>()[1], 10.0f);
  Tensor defaulted = call<Tensor>(op, from_vector<float>({1}), from_vector<float>({3}));
  EXPECT_FLOAT_EQ(defaulted.data_ptr<float>()[0], 4.0f);
  Tensor on_meta = call<Tensor>(op, zeros({4, 1}, TensorOptions(kMeta)), zeros({3}, TensorOptions(kMeta)), 1.0);
  EXPECT_EQ(on_meta.sizes().vec(), (std::vector<int64_t>{4, 3}));

  static int wrapped = 0;
  Registry::global().set_kernel("testlib::scaled_add", DispatchKey::Autograd, [](Stack& s) {
    ++wrapped;
    redispatch(op, s, DispatchKeySet(DispatchKey::CPU));
  });
  {
    IncludeDispatchKeys include{DispatchKeySet(DispatchKey::Autograd)};
    call<Tensor>(op, zeros({1}), zeros({1}), 1.0);
    // Ops with no kernel at the Autograd key fall through to the backend.
    EXPECT_FLOAT_EQ(add(ones({1}), ones({1})).item<float>(), 2.0f);
  }
  EXPECT_EQ(wrapped, 1);
  {
    IncludeDispatchKeys include{DispatchKeySet(DispatchKey::Autograd)};
    ExcludeDispatchKeys exclude{DispatchKeySet(DispatchKey::Autograd)};
    call<Tensor>(op, zeros({1}), zeros({1}), 1.0);
  }
  EXPECT_EQ(wrapped, 1);

  EXPECT_THROW(register_custom_op({.schema = "aten::mine(Tensor a) -> Tensor",
                                   .tags = "",
                                   .meta = boxed_kernel<&scaled_add_meta>(),
                                   .cpu = {}}),
               Error);
  EXPECT_THROW(register_custom_op({.schema = "nonamespace(Tensor a) -> Tensor",
                                   .tags = "",
                                   .meta = boxed_kernel<&scaled_add_meta>(),
                                   .cpu = {}}),
               Error);
  EXPECT_THROW(register_custom_op({.schema = "testlib::scaled_add(Tensor a) -> Tensor",
                                   .tags = "",
                                   .meta = boxed_kernel<&scaled_add_meta>(),
                                   .cpu = {}}),
               Error);
  EXPECT_THROW(
      register_custom_op({.schema = "testlib::no_meta(Tensor a) -> Tensor", .tags = "", .meta = {}, .cpu = {}}), Error);
}

TEST(Dispatcher, FallbackRunsForOpsWithoutTheirOwnKernel) {
  static std::vector<std::string> seen;
  Registry::global().set_fallback(DispatchKey::Functionalize, [](OpHandle op, Stack& s, DispatchKeySet rest) {
    seen.push_back(op->name());
    redispatch(op, s, rest);
  });
  {
    IncludeDispatchKeys include{DispatchKeySet(DispatchKey::Functionalize)};
    Tensor y = exp(zeros({2}));
    EXPECT_FLOAT_EQ(y.data_ptr<float>()[0], 1.0f);
  }
  Registry::global().set_fallback(DispatchKey::Functionalize, nullptr);
  ASSERT_GE(seen.size(), 2u);
  EXPECT_EQ(seen.back(), "aten::exp");
  EXPECT_THROW(Registry::global().set_fallback(DispatchKey::CPU, nullptr), Error);
}

TEST(DispatchKeySet, OrderAndBelow) {
  DispatchKeySet s = DispatchKeySet(DispatchKey::CPU).with(DispatchKey::Trace).with(DispatchKey::Autograd);
  EXPECT_EQ(s.highest(), DispatchKey::Trace);
  EXPECT_EQ(s.below(DispatchKey::Trace).highest(), DispatchKey::Autograd);
  EXPECT_EQ(s.below(DispatchKey::Autograd).highest(), DispatchKey::CPU);
  EXPECT_TRUE(s.below(DispatchKey::CPU).empty());
}

}  // namespace
}  // namespace kiln
