#include "kiln/import/exported_program.h"

#include <gtest/gtest.h>

#include <string>

#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/ops/api.h"

namespace kiln::import {
namespace {

std::string meta(int dtype, const std::string& sizes, const std::string& strides) {
  return fmt::format(
      R"({{"dtype": {}, "sizes": {}, "requires_grad": false, "device": {{"type": "cpu", "index": null}},
          "strides": {}, "storage_offset": {{"as_int": 0}}, "layout": 7}})",
      dtype, sizes, strides);
}

// An exported program as torch.export 2.13 serializes it (trimmed to the fields read):
// y = x @ w.T; (y, argmax of y's rows), with w a parameter. `edit` rewrites parts to break it.
std::string program(const std::string& node_target = "torch.ops.aten.permute.default",
                    const std::string& schema_major = "8",
                    const std::string& x_sizes = R"([{"as_int": 2}, {"as_int": 4}])") {
  return fmt::format(
      R"({{
  "schema_version": {{"major": {}, "minor": 20}}, "torch_version": "2.13.0+cpu", "verifiers": ["ATEN"],
  "opset_version": {{"aten": 10}}, "range_constraints": {{}}, "guards_code": [],
  "graph_module": {{
    "graph": {{
      "inputs": [{{"as_tensor": {{"name": "p_w"}}}}, {{"as_tensor": {{"name": "x"}}}}],
      "outputs": [{{"as_tensor": {{"name": "mm"}}}}, {{"as_tensor": {{"name": "getitem"}}}}],
      "nodes": [
        {{"target": "{}", "name": "permute", "metadata": {{}},
          "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "p_w"}}}}, "kind": 1}},
                     {{"name": "dims", "arg": {{"as_ints": [1, 0]}}, "kind": 1}}],
          "outputs": [{{"as_tensor": {{"name": "permute"}}}}]}},
        {{"target": "torch.ops.aten.mm.default", "name": "mm", "metadata": {{}},
          "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "x"}}}}, "kind": 1}},
                     {{"name": "mat2", "arg": {{"as_tensor": {{"name": "permute"}}}}, "kind": 1}}],
          "outputs": [{{"as_tensor": {{"name": "mm"}}}}]}},
        {{"target": "torch.ops.aten.max.dim", "name": "max_1", "metadata": {{}},
          "inputs": [{{"name": "self", "arg": {{"as_tensor": {{"name": "mm"}}}}, "kind": 1}},
                     {{"name": "dim", "arg": {{"as_int": 1}}, "kind": 1}}],
          "outputs": [{{"as_tensor": {{"name": "max_1_unused_0"}}}}, {{"as_tensor": {{"name": "getitem"}}}}]}}
      ],
      "tensor_values": {{
        "p_w": {}, "x": {}, "permute": {}, "mm": {}, "max_1_unused_0": {}, "getitem": {}
      }},
      "sym_int_values": {{}}, "sym_bool_values": {{}}, "is_single_tensor_return": false
    }},
    "signature": {{
      "input_specs": [{{"parameter": {{"arg": {{"name": "p_w"}}, "parameter_name": "fc.weight"}}}},
                      {{"user_input": {{"arg": {{"as_tensor": {{"name": "x"}}}}}}}}],
      "output_specs": [{{"user_output": {{"arg": {{"as_tensor": {{"name": "mm"}}}}}}}},
                       {{"user_output": {{"arg": {{"as_tensor": {{"name": "getitem"}}}}}}}}]
    }},
    "module_call_graph": [], "metadata": {{}}
  }}
}})",
      schema_major, node_target, meta(7, R"([{"as_int": 3}, {"as_int": 4}])", R"([{"as_int": 4}, {"as_int": 1}])"),
      meta(7, x_sizes, R"([{"as_int": 4}, {"as_int": 1}])"),
      meta(7, R"([{"as_int": 4}, {"as_int": 3}])", R"([{"as_int": 1}, {"as_int": 4}])"),
      meta(7, R"([{"as_int": 2}, {"as_int": 3}])", R"([{"as_int": 3}, {"as_int": 1}])"),
      meta(7, R"([{"as_int": 2}])", R"([{"as_int": 1}])"), meta(5, R"([{"as_int": 2}])", R"([{"as_int": 1}])"));
}

ExportedProgram read(const std::string& text) { return read_exported_program(json::parse(text, "m.pt2"), "m.pt2"); }

std::string error_of(const std::string& text) {
  try {
    read(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ExportedProgram, ReadsTheGraphAndItsSignature) {
  ExportedProgram p = read(program());
  EXPECT_EQ(p.schema_major, 8);
  EXPECT_EQ(p.schema_minor, 20);
  EXPECT_EQ(p.dialect, "ATEN");
  EXPECT_EQ(p.torch_version, "2.13.0+cpu");
  ASSERT_EQ(p.inputs.size(), 2u);
  EXPECT_EQ(p.inputs[0].kind, InputKind::Parameter);
  EXPECT_EQ(p.inputs[0].name, "p_w");
  EXPECT_EQ(p.inputs[0].target, "fc.weight");
  EXPECT_EQ(p.inputs[1].kind, InputKind::UserInput);
  EXPECT_EQ(p.inputs[1].target, "x");
  ASSERT_EQ(p.outputs.size(), 2u);
  EXPECT_EQ(p.outputs[1].name, "getitem");

  // The graph computes what the program says.
  Tensor w = arange(12, TensorOptions(DType::Float32)).reshape({3, 4});
  Tensor x = arange(8, TensorOptions(DType::Float32)).reshape({2, 4}).neg();
  std::vector<Tensor> out = graph::interpret(p.graph, std::vector<Tensor>{w, x});
  ASSERT_EQ(out.size(), 2u);
  Tensor expected = mm(x, w.t());
  EXPECT_EQ(sub(out[0], expected).abs().sum().item<float>(), 0.0f) << graph::print(p.graph);
  EXPECT_EQ(sub(out[1], std::get<1>(max(expected, 1))).abs().sum().item<int64_t>(), 0);
  EXPECT_EQ(out[1].dtype(), DType::Int64);
}

TEST(ExportedProgram, UnknownSchemaMajorVersionIsRefused) {
  EXPECT_NE(
      error_of(program("torch.ops.aten.permute.default", "9")).find("schema version 9.20; kiln reads major version 8"),
      std::string::npos);
}

TEST(ExportedProgram, UnknownOperatorsAndHigherOrderOpsNameTheNode) {
  EXPECT_EQ(error_of(program("torch.ops.aten.permutex.default")),
            "m.pt2: node 'permute': unknown operator aten::permutex (kiln has no op of that name and overload)");
  // One of PyTorch's ops kiln declares but does not run: the node, the op and why, when it loads.
  EXPECT_EQ(error_of(program("torch.ops.aten.linalg_eig.default")),
            "m.pt2: node 'permute': operator aten::linalg_eig is not implemented by kiln: linear algebra kiln has no "
            "kernel for yet (non-symmetric eig, lstsq, LDL, ...)");
  EXPECT_NE(error_of(program("torch.ops.higher_order.cond")).find("higher-order operator 'cond'"), std::string::npos);
  EXPECT_NE(error_of(program("_operator.add")).find("is not an ATen operator"), std::string::npos);
}

TEST(ExportedProgram, MetadataThatDisagreesWithKilnsMetaKernelsIsAnError) {
  // x declared [2, 5]: mm of [2, 5] and [4, 3] fails in kiln's meta kernel, naming the node.
  std::string e = error_of(program("torch.ops.aten.permute.default", "8", R"([{"as_int": 2}, {"as_int": 5}])"));
  EXPECT_NE(e.find("m.pt2: node 'mm' (aten::mm)"), std::string::npos) << e;
}

TEST(ExportedProgram, SymbolicSizesAreRefusedClearly) {
  std::string e =
      error_of(program("torch.ops.aten.permute.default", "8", R"([{"as_expr": {"expr_str": "s0"}}, {"as_int": 4}])"));
  EXPECT_NE(e.find("static shapes only"), std::string::npos) << e;
}

TEST(ExportedProgram, MalformedDocumentsNameWhatIsMissing) {
  std::string text = program();
  std::string broken = text;
  broken.replace(broken.find("\"tensor_values\""), 15, "\"tensor_valuez\"");
  EXPECT_EQ(error_of(broken), "m.pt2: $.graph_module.graph has no member \"tensor_values\"");
  broken = text;
  broken.replace(broken.find("\"name\": \"permute\"}}]"), 17, "\"name\": \"nothing\"");
  EXPECT_NE(error_of(broken).find("'nothing' has no entry in tensor_values"), std::string::npos) << error_of(broken);
}

}  // namespace
}  // namespace kiln::import

namespace kiln::import {
namespace {

// What run_decompositions() makes of linalg.inv as PyTorch 2.13 serializes it: the factorization's
// check under with_effects, ordered by a token the program takes and returns. The token is no
// value in kiln: the user input is the matrix alone, the output its inverse.
TEST(ExportedProgram, EffectTokensAndTheLinalgCheckAreDropped) {
  std::string m33 = meta(7, R"([{"as_int": 3}, {"as_int": 3}])", R"([{"as_int": 3}, {"as_int": 1}])");
  std::string info = meta(4, R"([])", R"([])");  // int32
  std::string text = fmt::format(R"({{
  "schema_version": {{"major": 8, "minor": 20}}, "torch_version": "2.13.0+cpu", "verifiers": ["ATEN"],
  "graph_module": {{
    "graph": {{
      "inputs": [{{"as_tensor": {{"name": "token"}}}}, {{"as_tensor": {{"name": "a"}}}}],
      "outputs": [{{"as_tensor": {{"name": "token_out"}}}}, {{"as_tensor": {{"name": "inverse"}}}}],
      "nodes": [
        {{"target": "torch.ops.aten.linalg_inv_ex.default", "name": "linalg_inv_ex", "metadata": {{}},
          "inputs": [{{"name": "A", "arg": {{"as_tensor": {{"name": "a"}}}}, "kind": 1}}],
          "outputs": [{{"as_tensor": {{"name": "inverse"}}}}, {{"as_tensor": {{"name": "info"}}}}]}},
        {{"target": "torch.ops.higher_order.with_effects", "name": "with_effects", "metadata": {{}},
          "inputs": [{{"name": "", "arg": {{"as_tensor": {{"name": "token"}}}}, "kind": 1}},
                     {{"name": "", "arg": {{"as_operator": "torch.ops.aten._linalg_check_errors.default"}}, "kind": 1}},
                     {{"name": "", "arg": {{"as_tensor": {{"name": "info"}}}}, "kind": 1}},
                     {{"name": "", "arg": {{"as_string": "linalg.inv"}}, "kind": 1}},
                     {{"name": "is_matrix", "arg": {{"as_bool": true}}, "kind": 2}}],
          "outputs": [{{"as_tensor": {{"name": "token_out"}}}}, {{"as_none": true}}]}}
      ],
      "tensor_values": {{"a": {}, "inverse": {}, "info": {}}},
      "sym_int_values": {{}}, "sym_bool_values": {{}}, "is_single_tensor_return": false
    }},
    "signature": {{
      "input_specs": [{{"token": {{"arg": {{"name": "token"}}}}}}, {{"user_input": {{"arg": {{"as_tensor": {{"name": "a"}}}}}}}}],
      "output_specs": [{{"token": {{"arg": {{"name": "token_out"}}}}}},
                       {{"user_output": {{"arg": {{"as_tensor": {{"name": "inverse"}}}}}}}}]
    }},
    "module_call_graph": [], "metadata": {{}}
  }}
}})",
                                 m33, m33, info);
  ExportedProgram p = read(text);
  ASSERT_EQ(p.inputs.size(), 1u);
  EXPECT_EQ(p.inputs[0].name, "a");
  ASSERT_EQ(p.outputs.size(), 1u);
  Tensor a = from_vector<float>({4, 1, 0, 1, 3, 1, 0, 1, 2}).reshape({3, 3});
  std::vector<Tensor> out = graph::interpret(p.graph, std::vector<Tensor>{a});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_LT(
      sub(matmul(a, out[0]), to(eq(unsqueeze(arange(3), -1), arange(3)), DType::Float32)).abs().amax().item<float>(),
      1e-5f);
  // A token no call produced is an error naming it.
  std::string bad = text;
  const std::string spec = R"({"token": {"arg": {"name": "token_out"}}})";
  ASSERT_NE(bad.find(spec), std::string::npos);
  bad.replace(bad.find(spec), spec.size(), R"({"token": {"arg": {"name": "token_x"}}})");
  EXPECT_NE(error_of(bad).find("token no effectful call produced"), std::string::npos) << error_of(bad);
}

}  // namespace
}  // namespace kiln::import
