// The op table's generated part (ops/aten_library/): every aten:: overload of the pinned PyTorch is
// known to kiln, and one kiln does not implement is an error naming the op and the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/ops/api.h"
#include "kiln/ops/dispatcher.h"
#include "kiln_error.h"

namespace kiln {
namespace {

TEST(AtenLibrary, DeclaresPyTorchsWholeOperatorLibrary) {
  auto& r = Registry::global();
  size_t aten = 0, declared = 0;
  for (OpHandle op : r.ops()) {
    if (op->schema().ns != "aten") continue;
    ++aten;
    if (op->kind() != OpKind::Declared) continue;
    ++declared;
    EXPECT_FALSE(op->reason().empty()) << op->name();
  }
  // PyTorch 2.13 registers 3,110 aten:: overloads; 14 use types kiln's schemas lack (Storage, Stream,
  // Dict, QScheme, TorchScript classes) or hold escaped quotes, and are left out (all.def lists them).
  EXPECT_EQ(aten, 3110u - 14u);
  // The rest have kernels or decompositions (native_ops.def): a floor that rises as ops are added.
  EXPECT_GE(aten - declared, 620u);
  for (const char* name : {"aten::einsum", "aten::split.Tensor", "aten::dropout", "aten::to.device", "aten::linalg_eig",
                           "aten::_foreach_add.List", "aten::stft", "aten::to_sparse"}) {
    EXPECT_NE(r.find(name), nullptr) << name;
  }
  EXPECT_EQ(r.get("aten::linalg_eig")->reason(),
            "linear algebra kiln has no kernel for yet (non-symmetric eig, lstsq, LDL, ...)");
  EXPECT_EQ(r.get("aten::to_sparse")->reason(), "sparse tensors (kiln's tensors are dense and strided)");
  EXPECT_EQ(r.get("aten::add.Tensor")->reason(), "");
  // Schemas as PyTorch writes them, enums by name: parsed, with their defaults.
  OpHandle arange = r.get("aten::arange.start_out");
  EXPECT_EQ(arange->schema().arguments.size(), 4u);
}

TEST(AtenLibrary, CallingADeclaredOpNamesItAndTheReason) {
  Tensor x = from_vector<float>({1, 2, 3, 4}).reshape({2, 2});
  Stack s{Value(x)};
  EXPECT_KILN_ERROR(call_op_boxed(Registry::global().get("aten::linalg_eig"), s), "aten::linalg_eig",
                    "declared in kiln but not implemented", "linear algebra");
  Stack f{Value(std::vector<Tensor>{x}), Value(std::vector<Tensor>{x})};
  EXPECT_KILN_ERROR(call_op_boxed(Registry::global().get("aten::_foreach_add.List"), f), "aten::_foreach_add.List",
                    "multi-tensor (_foreach) ops");
}

// An in-place or out= overload whose functional op kiln implements runs through it (kernels/inplace.cpp).
TEST(AtenLibrary, InPlaceAndOutVariantsOfImplementedOpsRun) {
  auto& r = Registry::global();
  OpHandle sin_out = r.get("aten::sin.out");
  ASSERT_EQ(sin_out->kind(), OpKind::Declared);
  EXPECT_TRUE(sin_out->implemented());
  EXPECT_EQ(sin_out->reason(), "runs as aten::sin and a copy (kernels/inplace.cpp)");
  Tensor x = from_vector<float>({0.5f, 1.0f}), out = empty({2});
  Stack s{Value(x), Value(out)};
  call_op_boxed(sin_out, s);
  EXPECT_FLOAT_EQ(out.select(0, 0).item<float>(), std::sin(0.5f));
  EXPECT_FLOAT_EQ(out.select(0, 1).item<float>(), std::sin(1.0f));
  // resize_'s functional form runs (a trace records it), but resize_ keeps its own kernel, which
  // changes the tensor's sizes in place rather than writing a value into them.
  EXPECT_EQ(r.functional_variant(r.get("aten::resize_")), r.get("aten::resize"));
  Tensor grown = zeros({2});
  Stack rs{Value(grown), Value(std::vector<int64_t>{2, 3}), Value()};
  call_op_boxed(r.get("aten::resize_"), rs);
  EXPECT_EQ(grown.sizes().vec(), (std::vector<int64_t>{2, 3}));
}

TEST(AtenLibrary, OverloadsAreIndexedByName) {
  auto overloads = Registry::global().overloads("aten::max");
  std::vector<std::string> names;
  for (OpHandle op : overloads) names.push_back(op->name());
  EXPECT_NE(std::find(names.begin(), names.end(), "aten::max.dim"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "aten::max.other"), names.end());
  for (OpHandle op : overloads) EXPECT_EQ(op->schema().name, "max");
  EXPECT_TRUE(Registry::global().overloads("aten::no_such_op").empty());
}

}  // namespace
}  // namespace kiln
