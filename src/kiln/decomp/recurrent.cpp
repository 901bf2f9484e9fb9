// Recurrent layers as PyTorch's composite ops compute them (what torch.export's default IR keeps of
// nn.RNN, nn.GRU, nn.LSTM and their cells): the cells (rnn_tanh_cell, rnn_relu_cell, gru_cell,
// lstm_cell) of linear maps and gates, and the sequence ops (rnn_tanh, rnn_relu, gru, lstm `.input`)
// as the cells unrolled over time, layer by layer, each direction walking its own way. PyTorch's
// parameter layout: per layer and direction w_ih, w_hh, then b_ih, b_hh where has_biases, then an
// LSTM's w_hr where it projects (its hidden state narrower than its cell state). Dropout between
// layers applies in training only, as PyTorch's.
#include <span>
#include <vector>

#include "kiln/kernels/register.h"
#include "kiln/ops/api.h"

namespace kiln::decomp {
namespace {

Tensor affine(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b) { return linear(x, w, b); }

// Gate pre-activations x W_ih^T + b_ih + h W_hh^T + b_hh.
Tensor gates(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
             const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  return add(affine(input, w_ih, b_ih), affine(hx, w_hh, b_hh));
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  return tanh(gates(input, hx, w_ih, w_hh, b_ih, b_hh));
}
Tensor rnn_relu_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                     const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  return relu(gates(input, hx, w_ih, w_hh, b_ih, b_hh));
}

// r = sigmoid(i_r + h_r), z = sigmoid(i_z + h_z), n = tanh(i_n + r h_n), h' = n + z (h - n).
Tensor gru_cell(const Tensor& input, const Tensor& hx, const Tensor& w_ih, const Tensor& w_hh,
                const std::optional<Tensor>& b_ih, const std::optional<Tensor>& b_hh) {
  std::vector<Tensor> gi = affine(input, w_ih, b_ih).chunk(3, -1), gh = affine(hx, w_hh, b_hh).chunk(3, -1);
  KILN_CHECK(gi.size() == 3 && gh.size() == 3, "gru_cell: w_ih {} and w_hh {} must hold three gates", w_ih.describe(),
             w_hh.describe());
  Tensor r = sigmoid(add(gi[0], gh[0]));
  Tensor z = sigmoid(add(gi[1], gh[1]));
  Tensor n = tanh(add(gi[2], mul(r, gh[2])));
  return add(n, mul(z, sub(hx, n)));
}

// (h', c'): i, f, g, o gates; c' = f c + i g, h' = o tanh(c') (times w_hr^T where it projects).
std::tuple<Tensor, Tensor> lstm_step(const Tensor& input, const Tensor& h, const Tensor& c, const Tensor& w_ih,
                                     const Tensor& w_hh, const std::optional<Tensor>& b_ih,
                                     const std::optional<Tensor>& b_hh, const std::optional<Tensor>& w_hr) {
  std::vector<Tensor> g = gates(input, h, w_ih, w_hh, b_ih, b_hh).chunk(4, -1);
  KILN_CHECK(g.size() == 4, "lstm_cell: w_ih {} must hold four gates", w_ih.describe());
  Tensor c2 = add(mul(sigmoid(g[1]), c), mul(sigmoid(g[0]), tanh(g[2])));
  Tensor h2 = mul(sigmoid(g[3]), tanh(c2));
  if (w_hr) h2 = matmul(h2, transpose(*w_hr, 0, 1));
  return {h2, c2};
}

std::tuple<Tensor, Tensor> lstm_cell(const Tensor& input, std::span<const Tensor> hx, const Tensor& w_ih,
                                     const Tensor& w_hh, const std::optional<Tensor>& b_ih,
                                     const std::optional<Tensor>& b_hh) {
  KILN_CHECK(hx.size() == 2, "lstm_cell: expected two hidden states (h, c), got {}", hx.size());
  return lstm_step(input, hx[0], hx[1], w_ih, w_hh, b_ih, b_hh, std::nullopt);
}

enum class Cell { Tanh, Relu, Gru, Lstm };

struct Weights {
  Tensor w_ih, w_hh;
  std::optional<Tensor> b_ih, b_hh, w_hr;
};

// The whole sequence op: `h0` (and `c0` for an LSTM) [layers * directions, batch, hidden].
std::vector<Tensor> unroll(Cell cell, const Tensor& input_in, const Tensor& h0, const std::optional<Tensor>& c0,
                           std::span<const Tensor> params, bool has_biases, int64_t num_layers, double dropout,
                           bool train, bool bidirectional, bool batch_first, std::string_view op) {
  KILN_CHECK(input_in.dim() == 3, "{}: input must be 3-D (sequence, batch, features), got {}", op, input_in.describe());
  int64_t directions = bidirectional ? 2 : 1;
  bool projects = cell == Cell::Lstm && c0 && h0.size(-1) != c0->size(-1);
  size_t stride = (has_biases ? 4 : 2) + (projects ? 1 : 0);
  KILN_CHECK(params.size() == stride * static_cast<size_t>(num_layers * directions),
             "{}: expected {} parameters for {} layers of {} directions, got {}", op,
             stride * static_cast<size_t>(num_layers * directions), num_layers, directions, params.size());
  KILN_CHECK(h0.dim() == 3 && h0.size(0) == num_layers * directions, "{}: hx {} must be [{}, batch, hidden]", op,
             h0.describe(), num_layers * directions);
  Tensor layer_input = batch_first ? transpose(input_in, 0, 1) : input_in;
  int64_t steps = layer_input.size(0);
  std::vector<Tensor> h_last, c_last;
  for (int64_t layer = 0; layer < num_layers; ++layer) {
    std::vector<Tensor> direction_outputs;
    for (int64_t d = 0; d < directions; ++d) {
      size_t at = static_cast<size_t>(layer * directions + d) * stride;
      Weights w{params[at], params[at + 1], std::nullopt, std::nullopt, std::nullopt};
      if (has_biases) w.b_ih = params[at + 2], w.b_hh = params[at + 3];
      if (projects) w.w_hr = params[at + stride - 1];
      Tensor h = select(h0, 0, layer * directions + d);
      Tensor c = c0 ? select(*c0, 0, layer * directions + d) : Tensor();
      std::vector<Tensor> outputs(static_cast<size_t>(steps));
      for (int64_t s = 0; s < steps; ++s) {
        int64_t t = d == 0 ? s : steps - 1 - s;
        Tensor x = select(layer_input, 0, t);
        switch (cell) {
          case Cell::Tanh: h = rnn_tanh_cell(x, h, w.w_ih, w.w_hh, w.b_ih, w.b_hh); break;
          case Cell::Relu: h = rnn_relu_cell(x, h, w.w_ih, w.w_hh, w.b_ih, w.b_hh); break;
          case Cell::Gru: h = gru_cell(x, h, w.w_ih, w.w_hh, w.b_ih, w.b_hh); break;
          case Cell::Lstm: std::tie(h, c) = lstm_step(x, h, c, w.w_ih, w.w_hh, w.b_ih, w.b_hh, w.w_hr); break;
        }
        outputs[static_cast<size_t>(t)] = h;
      }
      direction_outputs.push_back(steps > 0
                                      ? stack(outputs, 0)
                                      : zeros({0, h.size(0), h.size(1)}, TensorOptions(h.dtype()).device(h.device())));
      h_last.push_back(h);
      if (c0) c_last.push_back(c);
    }
    layer_input = directions == 1 ? direction_outputs[0] : cat(direction_outputs, -1);
    if (train && dropout > 0 && layer + 1 < num_layers) layer_input = kiln::dropout(layer_input, dropout, true);
  }
  Tensor output = batch_first ? transpose(layer_input, 0, 1) : layer_input;
  std::vector<Tensor> result{output, stack(h_last, 0)};
  if (c0) result.push_back(stack(c_last, 0));
  return result;
}

template <Cell C>
std::tuple<Tensor, Tensor> rnn_sequence(const Tensor& input, const Tensor& hx, std::span<const Tensor> params,
                                        bool has_biases, int64_t num_layers, double dropout, bool train,
                                        bool bidirectional, bool batch_first) {
  constexpr std::string_view op = C == Cell::Tanh ? "rnn_tanh" : C == Cell::Relu ? "rnn_relu" : "gru";
  auto r = unroll(C, input, hx, std::nullopt, params, has_biases, num_layers, dropout, train, bidirectional,
                  batch_first, op);
  return {r[0], r[1]};
}

std::tuple<Tensor, Tensor, Tensor> lstm_sequence(const Tensor& input, std::span<const Tensor> hx,
                                                 std::span<const Tensor> params, bool has_biases, int64_t num_layers,
                                                 double dropout, bool train, bool bidirectional, bool batch_first) {
  KILN_CHECK(hx.size() == 2, "lstm: expected two hidden states (h, c), got {}", hx.size());
  auto r = unroll(Cell::Lstm, input, hx[0], hx[1], params, has_biases, num_layers, dropout, train, bidirectional,
                  batch_first, "lstm");
  return {r[0], r[1], r[2]};
}

const KernelRegistrar kRegister([](Registry& r) {
  r.set_compound_kernel("aten::rnn_tanh_cell", kiln::detail::boxed<&rnn_tanh_cell>());
  r.set_compound_kernel("aten::rnn_relu_cell", kiln::detail::boxed<&rnn_relu_cell>());
  r.set_compound_kernel("aten::gru_cell", kiln::detail::boxed<&gru_cell>());
  r.set_compound_kernel("aten::lstm_cell", kiln::detail::boxed<&lstm_cell>());
  r.set_compound_kernel("aten::rnn_tanh.input", kiln::detail::boxed<&rnn_sequence<Cell::Tanh>>());
  r.set_compound_kernel("aten::rnn_relu.input", kiln::detail::boxed<&rnn_sequence<Cell::Relu>>());
  r.set_compound_kernel("aten::gru.input", kiln::detail::boxed<&rnn_sequence<Cell::Gru>>());
  r.set_compound_kernel("aten::lstm.input", kiln::detail::boxed<&lstm_sequence>());
});

}  // namespace
}  // namespace kiln::decomp
