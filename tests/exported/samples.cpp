#include "samples.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include "kiln/import/npy.h"
#include "tensor_compare.h"

namespace kiln::exported {
namespace {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> cols;
  std::stringstream in(line);
  for (std::string col; std::getline(in, col, '\t');) cols.push_back(col);
  return cols;
}

std::string tensor_path(const Recording& r, const Sample& s, const std::string& file) {
  return r.dir + "/" + s.key + "/" + file;
}

// PyTorch's strides of each output, a line of numbers per output (empty for a 0-d one).
std::vector<std::vector<int64_t>> read_strides(const Recording& r, const Sample& s) {
  std::ifstream in(tensor_path(r, s, "strides.txt"));
  if (!in) throw Error(ErrorKind::Value, fmt::format("exported sample {}: no strides.txt", s.key));
  std::vector<std::vector<int64_t>> strides;
  for (std::string line; std::getline(in, line);) {
    std::stringstream words(line);
    strides.emplace_back();
    for (int64_t v; words >> v;) strides.back().push_back(v);
  }
  return strides;
}

}  // namespace

const char* ir_name(Ir ir) { return ir == Ir::Default ? "default IR" : "after run_decompositions()"; }

std::optional<Recording> read_recording(const std::string& dir) {
  std::ifstream in(dir + "/index.tsv");
  if (!in) return std::nullopt;
  Recording r{dir, {}};
  for (std::string line; std::getline(in, line);) {
    auto cols = split_tabs(line);
    if (cols.size() != 6)
      throw Error(ErrorKind::Value, fmt::format("{}/index.tsv: `{}` has {} columns, not 6", dir, line, cols.size()));
    Sample s;
    s.key = cols[0];
    s.name = cols[2].empty() ? cols[1] : cols[1] + "." + cols[2];
    s.inputs = std::stoul(cols[3]);
    s.outputs = std::stoul(cols[4]);
    s.values = cols[5] == "values";
    r.samples.push_back(std::move(s));
  }
  return r;
}

std::string archive_path(const Recording& r, const Sample& s, Ir ir) {
  return r.dir + "/" + s.key + (ir == Ir::Default ? ".pt2" : "_core.pt2");
}

std::vector<Tensor> read_inputs(const Recording& r, const Sample& s) {
  std::vector<Tensor> inputs;
  for (size_t i = 0; i < s.inputs; ++i) inputs.push_back(read_npy(tensor_path(r, s, fmt::format("input_{}.npy", i))));
  return inputs;
}

std::string compare_outputs(const Recording& r, const Sample& s, const std::vector<Tensor>& got) {
  if (got.size() != s.outputs) return fmt::format("{} outputs, PyTorch {}", got.size(), s.outputs);
  auto strides = read_strides(r, s);
  for (size_t i = 0; i < got.size(); ++i) {
    std::string where = fmt::format("output {}", i);
    Tensor want = read_npy(tensor_path(r, s, fmt::format("output_{}.npy", i)));
    std::string why = testing::compare_metadata(want, got[i], where);
    if (why.empty()) why = testing::compare_strides(strides.at(i), got[i], where, "PyTorch's layout");
    if (!why.empty()) return why;
    if (!s.values) continue;
    why = testing::compare_values(want, got[i], where);
    std::string ref = tensor_path(r, s, fmt::format("ref_{}.npy", i));
    // PyTorch's float32 kernel may be the one that is off: then kiln must match the float64 result.
    if (!why.empty() && is_floating(want.dtype()) && std::filesystem::exists(ref) &&
        testing::compare_values(read_npy(ref).to(want.dtype()), got[i], where).empty()) {
      why.clear();
    }
    if (!why.empty()) return why;
  }
  return "";
}

}  // namespace kiln::exported
