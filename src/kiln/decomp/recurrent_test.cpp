// Recurrent cells and sequences (decomp/recurrent.cpp) against PyTorch 2.13 (tests/torch_cases.h):
// each cell with and without biases; RNN (tanh, relu), GRU and LSTM over two layers, both
// directions, batch first, and an LSTM that projects its hidden state.
#include <gtest/gtest.h>

#include "kiln_error.h"
#include "torch_cases.h"

namespace kiln {
namespace {

using testing::call_by_name;
using testing::case_input;

// kiln tensors and their Python spellings, made by the same formula (inp(shape, seed)).
struct Made {
  std::vector<Tensor> tensors;
  std::string python;  // "[inp([..],s), ...]"
};
Made made(const std::vector<std::vector<int64_t>>& shapes, int seed) {
  Made m;
  m.python = "[";
  for (const auto& s : shapes) {
    m.tensors.push_back(case_input(s, seed));
    m.python += (m.tensors.size() > 1 ? ", " : "") + fmt::format("inp([{}],{})", fmt::join(s, ","), seed);
    ++seed;
  }
  m.python += "]";
  return m;
}

// A layer's parameters for `directions` directions: w_ih [gates*H, in], w_hh [gates*H, H], biases,
// and w_hr [H_out, H] where it projects.
std::vector<std::vector<int64_t>> layer_shapes(int64_t gates, int64_t in, int64_t hidden, int64_t out, bool biases,
                                               int directions) {
  std::vector<std::vector<int64_t>> s;
  for (int d = 0; d < directions; ++d) {
    s.push_back({gates * hidden, in});
    s.push_back({gates * hidden, out});
    if (biases) s.push_back({gates * hidden}), s.push_back({gates * hidden});
    if (out != hidden) s.push_back({out, hidden});
  }
  return s;
}

TEST(Recurrent, CellsMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({3, 4}, 1), h = case_input({3, 5}, 2), c = case_input({3, 5}, 3);
  std::vector<testing::TorchCase> cases;
  for (auto [name, gates] : {std::pair{"rnn_tanh_cell", 1}, {"rnn_relu_cell", 1}, {"gru_cell", 3}}) {
    Made w = made({{gates * 5, 4}, {gates * 5, 5}, {gates * 5}, {gates * 5}}, 10);
    cases.push_back({fmt::format("torch.{}(inp([3,4],1), inp([3,5],2), *{})", name, w.python),
                     call_by_name((std::string("aten::") + name).c_str(),
                                  {x, h, w.tensors[0], w.tensors[1], w.tensors[2], w.tensors[3]})});
    cases.push_back({fmt::format("torch.{}(inp([3,4],1), inp([3,5],2), *{}[:2])", name, w.python),
                     call_by_name((std::string("aten::") + name).c_str(),
                                  {x, h, w.tensors[0], w.tensors[1], std::nullopt, std::nullopt})});
  }
  Made w = made({{20, 4}, {20, 5}, {20}, {20}}, 20);
  cases.push_back({"torch.lstm_cell(inp([3,4],1), [inp([3,5],2), inp([3,5],3)], *" + w.python + ")",
                   call_by_name("aten::lstm_cell", {x, std::vector<Tensor>{h, c}, w.tensors[0], w.tensors[1],
                                                    w.tensors[2], w.tensors[3]})});
  testing::expect_cases_match_torch(python, cases);
}

TEST(Recurrent, SequencesMatchPyTorch) {
  KILN_REQUIRE_PYTHON(python);
  Tensor x = case_input({6, 2, 4}, 1);  // [time, batch, features]
  std::vector<testing::TorchCase> cases;
  for (auto [name, gates] : {std::pair{"rnn_tanh", 1}, {"rnn_relu", 1}, {"gru", 3}}) {
    for (bool bidirectional : {false, true}) {
      int dirs = bidirectional ? 2 : 1;
      auto shapes = layer_shapes(gates, 4, 5, 5, true, dirs);
      auto second = layer_shapes(gates, 5 * dirs, 5, 5, true, dirs);
      shapes.insert(shapes.end(), second.begin(), second.end());
      Made p = made(shapes, 30);
      Tensor h0 = case_input({2 * dirs, 2, 5}, 3);
      for (bool batch_first : {false, true}) {
        Tensor in = batch_first ? transpose(x, 0, 1).contiguous() : x;
        std::string pin = batch_first ? "inp([6,2,4],1).transpose(0, 1).contiguous()" : "inp([6,2,4],1)";
        cases.push_back(
            {fmt::format("torch.{}({}, inp([{},2,5],3), {}, True, 2, 0.0, False, {}, {})", name, pin, 2 * dirs,
                         p.python, bidirectional ? "True" : "False", batch_first ? "True" : "False"),
             call_by_name((std::string("aten::") + name + ".input").c_str(),
                          {in, h0, p.tensors, true, int64_t{2}, 0.0, false, bidirectional, batch_first})});
      }
    }
  }
  // LSTM: two layers both ways, and one that projects its hidden state to 3.
  for (int64_t out : {5, 3}) {
    int dirs = out == 5 ? 2 : 1;
    auto shapes = layer_shapes(4, 4, 5, out, true, dirs);
    auto second = layer_shapes(4, out * dirs, 5, out, true, dirs);
    shapes.insert(shapes.end(), second.begin(), second.end());
    Made p = made(shapes, 60);
    Tensor h0 = case_input({2 * dirs, 2, out}, 4), c0 = case_input({2 * dirs, 2, 5}, 5);
    cases.push_back({fmt::format("torch.lstm(inp([6,2,4],1), [inp([{},2,{}],4), inp([{},2,5],5)], {}, True, 2, 0.0, "
                                 "False, {}, False)",
                                 2 * dirs, out, 2 * dirs, p.python, dirs == 2 ? "True" : "False"),
                     call_by_name("aten::lstm.input", {x, std::vector<Tensor>{h0, c0}, p.tensors, true, int64_t{2}, 0.0,
                                                       false, dirs == 2, false})});
  }
  testing::expect_cases_match_torch(python, cases, 1e-9, 1e-10);
}

TEST(Recurrent, BadParametersRaise) {
  Tensor x = case_input({6, 2, 4}, 1), h0 = case_input({1, 2, 5}, 3);
  EXPECT_KILN_ERROR(call_by_name("aten::gru.input", {x, h0, std::vector<Tensor>{case_input({15, 4}, 1)}, true,
                                                     int64_t{1}, 0.0, false, false, false}),
                    "gru", "expected 4 parameters");
  EXPECT_KILN_ERROR(call_by_name("aten::rnn_tanh.input", {case_input({6, 4}, 1), h0, std::vector<Tensor>{}, false,
                                                          int64_t{1}, 0.0, false, false, false}),
                    "rnn_tanh", "3-D");
}

}  // namespace
}  // namespace kiln
