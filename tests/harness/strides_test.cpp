// Output strides of the normalization ops, pointwise ops and cat, in every mode: the eager kernel's strides are
// PyTorch's (softmax, log_softmax and layer_norm results are contiguous whatever the input's
// layout; batch_norm's follow the input's suggested memory format), the meta strides a trace
// records at every level are the eager ones, and kiln::compile returns the eager strides too — so
// a view that works eagerly on the result works compiled.
#include "harness.h"
#include "kiln/api/compile.h"
#include "kiln/trace/trace.h"

namespace kiln::testing {
namespace {

// The op under test on inputs[0]; batch_norm's per-channel tensors are inputs too (a trace takes
// every tensor it uses from its inputs).
struct StrideCase {
  std::string name;
  std::vector<Tensor> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> fn;
  Shape expected;  // PyTorch's strides for the result
};

// (n, c, h, w) values laid out channels-last.
Tensor channels_last(Maker& m, int64_t n, int64_t c, int64_t h, int64_t w) {
  return permute(m.make({n, h, w, c}, DType::Float32), {0, 3, 1, 2});
}

std::vector<StrideCase> cases() {
  Maker m(11);
  // mean, var, weight, bias of 3 channels
  std::vector<Tensor> stats{m.make({3}, DType::Float32), add(abs(m.make({3}, DType::Float32)), Scalar(1)),
                            m.make({3}, DType::Float32), m.make({3}, DType::Float32)};
  auto with_stats = [&](const Tensor& x) {
    std::vector<Tensor> in{x};
    in.insert(in.end(), stats.begin(), stats.end());
    return in;
  };
  auto eval_norm = [](const std::vector<Tensor>& in) { return batch_norm(in[0], in[3], in[4], in[1], in[2], false); };
  auto train_norm = [](const std::vector<Tensor>& in) {
    return batch_norm(in[0], in[3], in[4], std::nullopt, std::nullopt, true);
  };
  auto softmax_1 = [](const std::vector<Tensor>& in) { return _softmax(in[0], 1); };
  auto add2 = [](const std::vector<Tensor>& in) { return add(in[0], in[1]); };
  auto square = [](const std::vector<Tensor>& in) { return mul(in[0], in[0]); };
  auto cat1 = [](const std::vector<Tensor>& in) { return cat(in, 1); };
  return {
      {"softmax_transposed", {m.transposed(5, 7, DType::Float32)}, softmax_1, {7, 1}},
      {"softmax_channels_last", {channels_last(m, 2, 3, 4, 5)}, softmax_1, {60, 20, 5, 1}},
      {"log_softmax_transposed",
       {m.transposed(5, 7, DType::Float32)},
       [](const std::vector<Tensor>& in) { return _log_softmax(in[0], 0); },
       {7, 1}},
      {"layer_norm_transposed",
       {m.transposed(6, 4, DType::Float32)},
       [](const std::vector<Tensor>& in) { return layer_norm(in[0], {4}); },
       {4, 1}},
      {"layer_norm_permuted",
       {permute(m.make({4, 2, 3}, DType::Float32), {1, 2, 0})},
       [](const std::vector<Tensor>& in) {
         return layer_norm(in[0], {3, 4});
       },
       {12, 4, 1}},
      {"batch_norm_eval_transposed", with_stats(m.transposed(5, 3, DType::Float32)), eval_norm, {3, 1}},
      {"batch_norm_train_permuted",
       with_stats(permute(m.make({4, 6, 3}, DType::Float32), {0, 2, 1})),
       train_norm,
       {18, 6, 1}},
      {"batch_norm_eval_hw_swapped",
       with_stats(transpose(m.make({2, 3, 4, 5}, DType::Float32), 2, 3)),
       eval_norm,
       {60, 20, 4, 1}},
      {"batch_norm_eval_channels_last", with_stats(channels_last(m, 2, 3, 4, 5)), eval_norm, {60, 1, 15, 3}},
      {"batch_norm_train_channels_last", with_stats(channels_last(m, 2, 3, 4, 5)), train_norm, {60, 1, 15, 3}},
      {"batch_norm_eval_channels_last_3d",
       with_stats(permute(m.make({2, 2, 3, 4, 3}, DType::Float32), {0, 4, 1, 2, 3})),
       eval_norm,
       {72, 1, 36, 12, 3}},
      // Sliced along W: not dense, but its strides are ordered like channels-last, which PyTorch keeps.
      {"batch_norm_eval_sliced_channels_last",
       with_stats(slice(channels_last(m, 2, 3, 4, 6), 3, 0, 6, 2)),
       eval_norm,
       {36, 1, 9, 3}},
      // TensorIterator's layout: a size-1 dim that stays size 1 keeps its stride in the ordering
      // (the fuzz case of meta-torch-strides-broadcast-layout.txt).
      {"add_broadcast_size1_dim_orders",
       {unsqueeze(slice(m.make({2, 7}, DType::Float32), 1, 0, 6, 2), 1),
        unsqueeze(permute(m.make({3, 1, 2}, DType::Float32), {2, 1, 0}), 1)},
       add2,
       {1, 6, 12, 2}},
      // Same shape, dense, equal strides: the fast set-up copies the strides, size-1 dims included.
      {"mul_dense_same_strides", {unsqueeze(m.transposed(3, 4, DType::Float32), 1)}, square, {1, 12, 3}},
      // Broadcast against an empty dim: the dims after it get stride 0 (compatible_stride).
      {"add_broadcast_empty",
       {transpose(m.make({2, 0, 3}, DType::Float32), 0, 2), m.make({1, 1}, DType::Float32)},
       add2,
       {1, 3, 0}},
      // CPU TensorIterator first casts an input of another dtype with `to`: a broadcast (not dense)
      // int32 input becomes dense row-major, and its layout wins over the int64 transposed one.
      {"add_casts_an_expanded_input",
       {expand(m.make({6, 1}, DType::Int32), {6, 33}), m.transposed(6, 33, DType::Int64)},
       add2,
       {33, 1}},
      // The cast keeps the input's order where it has one (dims 0 and 2 here), not row-major.
      {"add_cast_keeps_the_input_order",
       {permute(expand(m.make({2, 1, 4}, DType::Int32), {2, 3, 4}), {2, 1, 0}), m.make({4, 3, 2}, DType::Int64)},
       add2,
       {1, 4, 12}},
      // Without a cast (one dtype) the expanded input leaves the order to the transposed one.
      {"add_same_dtype_follows_the_dense_input",
       {expand(m.make({6, 1}, DType::Int64), {6, 33}), m.transposed(6, 33, DType::Int64)},
       add2,
       {1, 6}},
      // where casts self and other to the result type, never the condition.
      {"where_casts_self_not_the_condition",
       {expand(m.make({6, 1}, DType::Bool), {6, 33}), expand(m.make({6, 1}, DType::Int32), {6, 33}),
        m.transposed(6, 33, DType::Float32)},
       [](const std::vector<Tensor>& in) { return where(in[0], in[1], in[2]); },
       {33, 1}},
      // expand adding a size-1 dim gives it the stride of the expanded dim after it (0 here); one
      // broadcast_in_dim would give it the input dim's, and the product's dims would reorder.
      {"mul_of_an_expand_adding_a_size1_dim",
       {as_strided(m.make({5}, DType::Float32), {1, 5}, {1, 1}), m.make({5}, DType::Float32)},
       [](const std::vector<Tensor>& in) {
         return mul(expand(in[0], {1, 3, 5}), in[1]);
       },
       {15, 5, 1}},
      {"mul_of_an_expand_adding_size1_dims_over_a_broadcast",
       {m.make({3, 1, 5}, DType::Float32), m.make({5}, DType::Float32)},
       [](const std::vector<Tensor>& in) {
         return mul(expand(in[0], {1, 1, 3, 4, 5}), in[1]);
       },
       {60, 60, 20, 5, 1}},
      {"cat_channels_last", {channels_last(m, 2, 3, 4, 5), channels_last(m, 2, 3, 4, 5)}, cat1, {120, 1, 30, 6}},
      {"cat_channels_last_and_contiguous",
       {channels_last(m, 2, 3, 4, 5), m.make({2, 3, 4, 5}, DType::Float32)},
       cat1,
       {120, 20, 5, 1}},
  };
}

Shape output_strides(const graph::Graph& g) {
  const auto& results = std::get<std::vector<graph::ValueRef>>(g.output_node()->args().at(0));
  graph::ValueRef r = results.at(0);
  return r.node->meta().at(static_cast<size_t>(r.index)).strides;
}

TEST(Strides, EagerMatchesPyTorch) {
  for (const auto& c : cases()) {
    EXPECT_EQ(c.fn(c.inputs).strides().shape(), c.expected) << c.name;
  }
}

TEST(Strides, TracedMetaMatchesEager) {
  for (const auto& c : cases()) {
    Tensor result = c.fn(c.inputs);
    if (result.numel() == 0) continue;  // an empty tensor's strides address nothing: only eager's are PyTorch's
    Shape eager = result.strides().shape();
    trace::TracedFn fn = [f = c.fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; };
    for (trace::Level level : {trace::Level::ATen, trace::Level::Core, trace::Level::Prims}) {
      graph::Graph g = trace::trace(fn, c.inputs, level);
      EXPECT_EQ(output_strides(g), eager) << c.name << " traced at the " << trace::level_name(level) << " level";
    }
  }
}

TEST(Strides, CompiledMatchesEager) {
  for (const auto& c : cases()) {
    Tensor eager = c.fn(c.inputs);
    if (eager.numel() == 0) continue;  // as above
    auto compiled = compile([f = c.fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{f(in)}; });
    Tensor out = compiled(c.inputs)[0];
    // A computed output is stored in its traced (eager) layout, channels-last included.
    EXPECT_EQ(out.strides().shape(), eager.strides().shape()) << c.name;
    EXPECT_TRUE(close(out, to_doubles(eager), default_tolerance(DType::Float32))) << c.name;
  }
}

// The failure that showed the difference: a view of layer_norm's result (contiguous eagerly) of a
// transposed input.
TEST(Strides, ViewOfLayerNormOfTransposedInputCompiles) {
  Maker m(5);
  Tensor x = m.transposed(6, 4, DType::Float32);
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{layer_norm(in[0], {4}).view({24})}; };
  Tensor eager = fn({x})[0];
  Tensor out = compile(fn)({x})[0];
  EXPECT_EQ(out.sizes().shape(), Shape{24});
  EXPECT_TRUE(close(out, to_doubles(eager), default_tolerance(DType::Float32)));
}

}  // namespace
}  // namespace kiln::testing
