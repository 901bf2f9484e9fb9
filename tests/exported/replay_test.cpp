// PyTorch's own samples as a user exports them (tests/exported/samples.h): every recorded program,
// in both IRs, loaded by kiln and run eagerly and compiled against PyTorch's outputs, the strides of
// every output included. A program kiln refuses or gets wrong fails the test, unless it is in
// kKnownFailures with its reason; one of those that starts to pass fails it too (take it off).
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <memory>

#include <fmt/format.h>

#include "kiln/api/compile.h"
#include "kiln/api/model.h"
#include "samples.h"

namespace kiln::exported {
namespace {

// What kiln cannot run yet, by OpInfo, in both IRs, eagerly and compiled (docs/opinfo_replay.md).
const std::map<std::string, std::string> kKnownFailures = {
    {"argwhere", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"bincount", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"combinations", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"masked_select", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"nonzero", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"tensor_split", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"unique", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"unique_consecutive", "an output size that depends on the data: dynamic shapes (issue 39)"},
    {"hash_tensor", "a uint64 result: kiln has no uint64"},
    {"nn.functional.linear_cross_entropy.chunked", "torch_nn::_linear_cross_entropy_batch_chunked, outside aten::"},
    {"nn.functional.linear_cross_entropy.chunked_none",
     "torch_nn::_linear_cross_entropy_batch_chunked, outside aten::"},
};

std::string recording_dir(const char* set) {
  const char* env = std::getenv("KILN_EXPORTED_SAMPLES_DIR");
  return fmt::format("{}/{}", env && *env ? env : KILN_EXPORTED_SAMPLES_DIR, set);
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

struct Outcome {
  const Sample* sample;
  std::string why;  // empty: passed
};

// Prints each failure and the totals; returns the failures not known and the known ones that passed.
int report(const std::vector<Outcome>& outcomes, const std::string& what) {
  int passed = 0, surprises = 0;
  for (const Outcome& o : outcomes) {
    bool known = kKnownFailures.contains(o.sample->name);
    passed += o.why.empty();
    if (o.why.empty() && known) {
      std::printf("%s: %s (%s) passes now: take it off kKnownFailures\n", what.c_str(), o.sample->name.c_str(),
                  o.sample->key.c_str());
      ++surprises;
    } else if (!o.why.empty() && !known) {
      std::printf("%s: %s (%s): %s\n", what.c_str(), o.sample->name.c_str(), o.sample->key.c_str(), o.why.c_str());
      ++surprises;
    }
  }
  std::printf("exported samples, %s: %d of %zu pass\n", what.c_str(), passed, outcomes.size());
  return surprises;
}

// Loads the sample's program into `model` and runs it eagerly; empty when it matches PyTorch.
std::string run_eager(const Recording& r, const Sample& s, Ir ir, std::shared_ptr<Model>& model) {
  try {
    model = std::make_shared<Model>(load(archive_path(r, s, ir)));
    return compare_outputs(r, s, model->run(read_inputs(r, s)));
  } catch (const Error& e) {
    return "kiln raised: " + first_line(e.what());
  }
}

// Runs `models` as one compiled function (one trace, one build) and compares each; throws what the
// batch throws.
std::vector<std::string> run_batch(const Recording& r, const std::vector<const Sample*>& samples,
                                   const std::vector<std::shared_ptr<Model>>& models) {
  std::vector<std::vector<Tensor>> user(models.size());
  std::vector<Tensor> all;
  std::vector<size_t> first_input, first_output(models.size() + 1);
  for (size_t k = 0; k < models.size(); ++k) {
    user[k] = read_inputs(r, *samples[k]);
    first_input.push_back(all.size());
    auto in = models[k]->signature().graph_inputs(user[k]);
    all.insert(all.end(), in.begin(), in.end());
  }
  first_input.push_back(all.size());
  auto fn = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (size_t k = 0; k < models.size(); ++k) {
      std::vector<Tensor> mine(in.begin() + static_cast<std::ptrdiff_t>(first_input[k]),
                               in.begin() + static_cast<std::ptrdiff_t>(first_input[k + 1]));
      first_output[k] = out.size();
      auto got = models[k]->forward()(mine);
      out.insert(out.end(), got.begin(), got.end());
    }
    first_output[models.size()] = out.size();
    return out;
  };
  std::vector<Tensor> results = compile(fn)(all);
  std::vector<std::string> verdicts;
  for (size_t k = 0; k < models.size(); ++k) {
    std::vector<Tensor> mine(results.begin() + static_cast<std::ptrdiff_t>(first_output[k]),
                             results.begin() + static_cast<std::ptrdiff_t>(first_output[k + 1]));
    verdicts.push_back(compare_outputs(r, *samples[k], models[k]->signature().user_outputs(user[k], mine)));
  }
  return verdicts;
}

// A batch that raises is split until the programs that raise are alone.
std::vector<std::string> run_compiled(const Recording& r, const std::vector<const Sample*>& samples,
                                      const std::vector<std::shared_ptr<Model>>& models) {
  if (samples.empty()) return {};
  try {
    return run_batch(r, samples, models);
  } catch (const Error& e) {
    if (samples.size() == 1) return {"compiled, kiln raised: " + first_line(e.what())};
  }
  auto half = static_cast<std::ptrdiff_t>(samples.size() / 2);
  auto a = run_compiled(r, {samples.begin(), samples.begin() + half}, {models.begin(), models.begin() + half});
  auto b = run_compiled(r, {samples.begin() + half, samples.end()}, {models.begin() + half, models.end()});
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Programs per compiled function.
constexpr size_t kBatch = 64;

void replay(const char* set, bool compiled) {
  auto r = read_recording(recording_dir(set));
  if (!r) GTEST_SKIP() << "no recording in " << recording_dir(set) << " (the kiln_exported_samples_unpack fixture)";
  int surprises = 0;
  for (Ir ir : {Ir::Default, Ir::Core}) {
    std::vector<Outcome> outcomes;
    std::vector<const Sample*> batch;
    std::vector<std::shared_ptr<Model>> models;
    auto flush = [&] {
      auto verdicts = run_compiled(*r, batch, models);
      for (size_t k = 0; k < batch.size(); ++k) outcomes.push_back({batch[k], verdicts[k]});
      batch.clear();
      models.clear();
    };
    for (const Sample& s : r->samples) {
      std::shared_ptr<Model> model;
      std::string eager = run_eager(*r, s, ir, model);
      if (!compiled || !eager.empty()) {  // a program that fails eagerly is not compiled
        outcomes.push_back({&s, eager});
        continue;
      }
      batch.push_back(&s);
      models.push_back(std::move(model));
      if (batch.size() == kBatch) flush();
    }
    flush();
    surprises += report(outcomes, fmt::format("{}, {}, {}", set, ir_name(ir), compiled ? "compiled" : "eager"));
  }
  EXPECT_EQ(surprises, 0);
}

TEST(ExportedSamples, OpsEager) { replay("ops", false); }
TEST(ExportedSamples, OpsCompiled) { replay("ops", true); }
TEST(ExportedSamples, ModulesEager) { replay("modules", false); }
TEST(ExportedSamples, ModulesCompiled) { replay("modules", true); }

}  // namespace
}  // namespace kiln::exported
