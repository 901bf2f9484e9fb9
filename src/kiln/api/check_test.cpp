// The check mode (api/check.h) and the reduction behind it (api/reduce.h): a wrong lowering rule
// injected into the compiler is caught on a model and reduced to the one call it miscompiles; right
// code passes; outputs compare by the differential tier's rules.
#include "kiln/api/check.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>

#include "kiln/compiler/lower/lowering.h"
#include "kiln/graph/interpreter.h"
#include "kiln/graph/printer.h"
#include "kiln/ops/api.h"
#include "kiln/ops/generated/handles.h"
#include "scoped_env.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

// A small model: layer norm, a linear layer, tanh, another linear layer, a residual, softmax.
std::vector<Tensor> model(const std::vector<Tensor>& in) {
  const Tensor &x = in[0], &w1 = in[1], &w2 = in[2];
  Tensor h = layer_norm(x, {16}, std::nullopt, std::nullopt, 1e-5);
  Tensor y = tanh(linear(h, w1, std::nullopt));
  Tensor z = add(linear(y, w2, std::nullopt), x);
  return {softmax(z, -1), relu(z)};
}

std::vector<Tensor> model_inputs() {
  manual_seed(3);
  return {randn({8, 16}), randn({32, 16}), randn({16, 32})};
}

// tanh lowered as sin: what a wrong rule in the compiler looks like. Restores the right rule.
class WrongTanhRule {
 public:
  WrongTanhRule() : rule_(const_cast<compiler::LoweringRule*>(compiler::lowering_rule_attr().get(op::prims::tanh()))) {
    saved_ = rule_->lower;
    rule_->lower = [](compiler::Lowerer& l, const graph::Node& n) {
      const graph::TensorMeta& out = n.meta().at(0);
      auto x = l.tensor_arg(n, 0).at(compiler::index_vars(out.sizes.size()));
      l.define(n, compiler::computed(loopir::ScalarExpr::op("sin", {x}, out.dtype), out.dtype, out.sizes));
    };
  }
  ~WrongTanhRule() { rule_->lower = saved_; }

 private:
  compiler::LoweringRule* rule_;
  compiler::LowerFn saved_;
};

std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(DType::Float64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

// Every element of `a` within atol + rtol * |b| of b's.
bool near(const Tensor& a, const Tensor& b, double rtol, double atol) {
  std::vector<double> x = values(a), y = values(b);
  if (x.size() != y.size()) return false;
  for (size_t k = 0; k < x.size(); ++k) {
    if (!(std::abs(x[k] - y[k]) <= atol + rtol * std::abs(y[k]))) return false;
  }
  return true;
}

std::string temp_dir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / fmt::format("kiln-check-test-{}-{}", name, ::getpid());
  fs::remove_all(dir);
  return dir.string();
}

TEST(CheckMode, CatchesAWrongLoweringRuleAndReducesItToOneCall) {
  std::string dir = temp_dir("wrong");
  testing::ScopedEnv where("KILN_CHECK_DIR", dir);
  std::vector<Tensor> in = model_inputs();
  std::string message;
  {
    WrongTanhRule wrong;
    auto f = compile(model, CompileOptions{.check = true});
    try {
      f(in);
    } catch (const Error& e) {
      message = e.what();
    }
    ASSERT_NE(message, "") << "the check mode let a miscompiled tanh through";
    EXPECT_NE(message.find("KILN_CHECK: compiled output 0 differs from eager"), std::string::npos) << message;
    EXPECT_NE(message.find("reduced to 1 call(s)"), std::string::npos) << message;
    EXPECT_NE(message.find("aten::tanh"), std::string::npos) << message;
    EXPECT_NE(message.find("kiln check " + dir + "/mismatch-0"), std::string::npos) << message;

    // The program written is that one call with its input, and it still differs while the rule is wrong.
    Repro p = read_program(dir + "/mismatch-0");
    ASSERT_EQ(p.calls(), 1u) << graph::print(p.graph);
    for (const auto& n : p.graph.nodes()) {
      if (n->kind() == graph::NodeKind::Call) {
        EXPECT_EQ(n->op(), op::aten::tanh());
      }
    }
    ASSERT_EQ(p.inputs.size(), 1u);
    EXPECT_EQ(p.inputs[0].sizes().vec(), (std::vector<int64_t>{8, 32}));
    EXPECT_TRUE(check_program(p, {}).has_value());
  }
  // With the rule restored, the same program no longer differs.
  EXPECT_FALSE(check_program(read_program(dir + "/mismatch-0"), {}).has_value());
  fs::remove_all(dir);
}

TEST(CheckMode, RightCodePassesAndKeepsItsResults) {
  std::string dir = temp_dir("right");
  testing::ScopedEnv where("KILN_CHECK_DIR", dir);
  testing::ScopedEnv on("KILN_CHECK", "1");  // the environment turns it on as the option does
  std::vector<Tensor> in = model_inputs();
  auto f = compile(model);
  std::vector<Tensor> checked = f(in), again = f(in), eager = model(in);
  ASSERT_EQ(checked.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    EXPECT_TRUE(near(checked[k], eager[k], 1e-5, 1e-6));
    EXPECT_EQ(values(checked[k]), values(again[k]));
  }
  EXPECT_FALSE(fs::exists(dir));
}

// A function that writes to its input: eager, compiled and the reference each see the input as
// given, and the caller's tensor is written once, by the compiled code.
TEST(CheckMode, AFunctionThatMutatesItsInputIsCheckedOnCopies) {
  auto f = compile(
      [](const std::vector<Tensor>& in) {
        Tensor x = in[0];
        x.mul_(full({}, 2.0, DType::Float32));
        return std::vector<Tensor>{exp(x)};
      },
      CompileOptions{.check = true});
  Tensor x = full({4}, 1.5, DType::Float32);
  Tensor y = f({x})[0];
  EXPECT_EQ(values(x), std::vector<double>(4, 3.0));
  EXPECT_TRUE(near(y, full({4}, std::exp(3.0), DType::Float32), 1e-6, 0));
}

// Random ops draw the same numbers in the eager run as in the compiled one (the generator restarts
// from where it was), so they are compared, not flagged; the caller's generator moves on once.
TEST(CheckMode, RandomOpsDrawTheSameNumbersEagerAndCompiled) {
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{add(in[0], rand({64}))}; };
  Tensor x = full({64}, 1.0, DType::Float32);
  manual_seed(11);
  Tensor checked = compile(fn, CompileOptions{.check = true})({x})[0];
  Tensor next = rand({4});
  manual_seed(11);
  Tensor plain = compile(fn)({x})[0];
  EXPECT_EQ(values(checked), values(plain));
  EXPECT_EQ(values(next), values(rand({4})));
}

// The mismatch directories under `dir`.
size_t mismatches(const std::string& dir) {
  size_t n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) n += entry.path().filename().string().starts_with("mismatch-");
  return n;
}

// KILN_CHECK=1 checks the user's function, not the compilations its own reduction makes: one
// mismatch is written, for the one call.
TEST(CheckMode, TheEnvironmentDoesNotCheckTheChecksOwnCompilations) {
  std::string dir = temp_dir("nested");
  testing::ScopedEnv where("KILN_CHECK_DIR", dir);
  testing::ScopedEnv on("KILN_CHECK", "1");
  WrongTanhRule wrong;
  std::string message;
  try {
    compile(model)(model_inputs());
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_NE(message.find("reduced to 1 call(s)"), std::string::npos) << message;
  EXPECT_EQ(mismatches(dir), 1u);
  fs::remove_all(dir);
}

// A function that writes to its input after reading it: the reduced program is fed the input as the
// caller gave it (not as the graph's write-back left it), and the options it was compiled with are
// written beside it.
TEST(CheckMode, AMutatedInputIsReducedAsGiven) {
  std::string dir = temp_dir("mutated");
  testing::ScopedEnv where("KILN_CHECK_DIR", dir);
  WrongTanhRule wrong;
  Tensor x = arange(0, 8, 1, DType::Float32).div(full({}, 4.0, DType::Float32));
  std::vector<double> given = values(x);
  auto f = compile(
      [](const std::vector<Tensor>& in) {
        Tensor x = in[0], y = tanh(x);
        x.add_(full({}, 1.0, DType::Float32));
        return std::vector<Tensor>{y};
      },
      CompileOptions{.emulate_precision_casts = true, .check = true});
  EXPECT_THROW(f({x}), Error);
  std::vector<double> once = given;
  for (double& v : once) v += 1;
  EXPECT_EQ(values(x), once) << "the caller's input is written once, by the compiled code";
  Repro p = read_program(dir + "/mismatch-0");
  ASSERT_EQ(p.inputs.size(), 1u) << graph::print(p.graph);
  EXPECT_EQ(values(p.inputs[0]), given);
  CompileOptions options = read_check_options(dir + "/mismatch-0");
  EXPECT_TRUE(options.emulate_precision_casts);
  EXPECT_EQ(options.backend, "inductor");
  EXPECT_FALSE(read_check_options(dir).emulate_precision_casts) << "no options.txt: the defaults";
  fs::remove_all(dir);
}

// The values fed to a reduced program come from the random numbers the checked call drew.
TEST(CheckMode, AReducedProgramIsFedTheCallsRandomNumbers) {
  std::string dir = temp_dir("random");
  testing::ScopedEnv where("KILN_CHECK_DIR", dir);
  WrongTanhRule wrong;
  auto fn = [](const std::vector<Tensor>& in) { return std::vector<Tensor>{tanh(add(in[0], rand({16})))}; };
  Tensor x = full({16}, 0.5, DType::Float32);
  manual_seed(21);
  EXPECT_THROW(compile(fn, CompileOptions{.check = true})({x}), Error);
  manual_seed(21);
  std::vector<double> drawn = values(add(x, rand({16})));
  Repro p = read_program(dir + "/mismatch-0");
  ASSERT_EQ(p.calls(), 1u) << graph::print(p.graph);
  ASSERT_EQ(p.inputs.size(), 1u);
  EXPECT_EQ(values(p.inputs[0]), drawn);
  fs::remove_all(dir);
}

TEST(CompareOutputs, FollowsTheDifferentialTiersRules) {
  Tensor a = from_vector<float>({1.0f, 2.0f, NAN}), nan_moved = from_vector<float>({1.0f, NAN, 2.0f});
  EXPECT_FALSE(compare_outputs({a}, {a.clone()}, {}, {DType::Float32}).has_value());
  auto m = compare_outputs({nan_moved}, {a}, {}, {DType::Float32});
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(m->output, 0u);
  EXPECT_NE(m->detail.find("2 of 3 elements differ"), std::string::npos) << m->detail;
  // A float32 output computed from bfloat16 values takes bfloat16's tolerance.
  Tensor b = from_vector<float>({1.0f}), b_off = from_vector<float>({1.01f});
  EXPECT_TRUE(compare_outputs({b_off}, {b}, {}, {DType::Float32}).has_value());
  EXPECT_FALSE(compare_outputs({b_off}, {b}, {}, {DType::BFloat16}).has_value());
  // An ill-conditioned element: eager is far from float64 too; compiled within twice its distance passes.
  Tensor ref = from_vector<double>({1.0});
  auto f32 = [](float v) { return from_vector<float>({v}); };
  EXPECT_FALSE(compare_outputs({f32(1.3f)}, {f32(1.2f)}, {ref}, {DType::Float32}).has_value());
  EXPECT_TRUE(compare_outputs({f32(1.5f)}, {f32(1.2f)}, {ref}, {DType::Float32}).has_value());
  // Integers are exact; dtypes and sizes must agree.
  EXPECT_TRUE(
      compare_outputs({from_vector<int64_t>({1, 2})}, {from_vector<int64_t>({1, 3})}, {}, {std::nullopt}).has_value());
  auto dtype = compare_outputs({f32(1.0f)}, {from_vector<double>({1.0})}, {}, {DType::Float32});
  ASSERT_TRUE(dtype.has_value());
  EXPECT_NE(dtype->detail.find("compiled"), std::string::npos);
}

// The reduction with a stand-in test (a program "differs" while it computes sin): every other call
// is cut, its eager value fed as an input, and the output moves up to the sin itself.
TEST(Reduce, CutsEveryCallTheDifferenceDoesNotNeed) {
  manual_seed(5);
  std::vector<Tensor> in = {randn({4, 4}), randn({4, 4})};
  graph::Graph g = trace::trace(
      [](const std::vector<Tensor>& x) {
        Tensor a = exp(x[0]), b = mul(x[1], a), c = sin(add(b, a)), d = neg(c);
        return std::vector<Tensor>{sum(d, {1}, false), b};
      },
      in, trace::Level::Core);
  auto computes_sin = [](const Repro& p) {
    for (const auto& n : p.graph.nodes()) {
      if (n->kind() == graph::NodeKind::Call && n->op() == op::aten::sin()) return true;
    }
    return false;
  };
  ReducedRepro r = reduce_program(g, in, 0, computes_sin);
  EXPECT_TRUE(r.reproduced && r.complete);
  EXPECT_EQ(r.program.calls(), 1u) << graph::print(r.program.graph);
  ASSERT_EQ(r.program.inputs.size(), 1u);
  // The input fed to sin is add(b, a) as eager computed it: the program computes sin's value exactly.
  Tensor a = exp(in[0]);
  EXPECT_EQ(values(graph::interpret(r.program.graph, r.program.inputs)[0]), values(sin(add(mul(in[1], a), a))));
  // A test that never reproduces: the whole program, marked.
  ReducedRepro none = reduce_program(g, in, 0, [](const Repro&) { return false; });
  EXPECT_FALSE(none.reproduced);
  EXPECT_EQ(none.tests, 1u);
  EXPECT_THROW(reduce_program(g, in, 2, computes_sin), Error);
}

TEST(Reduce, ProgramsRoundTripThroughFiles) {
  std::string dir = temp_dir("files");
  std::vector<Tensor> in = {arange(0, 6, 1, DType::Float32).view({2, 3})};
  graph::Graph g = trace::trace([](const std::vector<Tensor>& x) { return std::vector<Tensor>{tanh(x[0])}; }, in,
                                trace::Level::Core);
  ReducedRepro r = reduce_program(g, in, 0, [](const Repro&) { return true; });
  write_program(r.program, dir);
  Repro back = read_program(dir);
  EXPECT_EQ(graph::print(back.graph), graph::print(r.program.graph));
  ASSERT_EQ(back.inputs.size(), 1u);
  EXPECT_EQ(values(back.inputs[0]), values(in[0]));
  EXPECT_THROW(read_program(dir + "/missing"), Error);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln
