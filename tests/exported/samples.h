// PyTorch's OpInfo and module_db samples as exported programs (tests/tools/record_exported_samples.py;
// committed, compressed, in tests/data/exported_samples/ and unpacked into the build tree by the
// kiln_exported_samples_unpack fixture): reading a recording, and comparing kiln's outputs with
// PyTorch's: dtypes, sizes, the strides of every output, and values within
// torch.testing.assert_close's tolerances of PyTorch's result or of the float64 reference.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kiln/ops/tensor.h"

namespace kiln::exported {

// The two archives of each sample: as `torch.export.export` saves it (composite ops kept), and after
// `run_decompositions()` (Core ATen).
enum class Ir { Default, Core };
const char* ir_name(Ir ir);

struct Sample {
  std::string key;   // the sample's number: its archives are <key>.pt2, <key>_core.pt2, its tensors in <key>/
  std::string name;  // the OpInfo with its variant ("max.binary"), or the module ("nn.Conv2d")
  size_t inputs = 0, outputs = 0;
  bool values = true;  // false where PyTorch leaves the values undefined (empty, random): metadata only
};

struct Recording {
  std::string dir;
  std::vector<Sample> samples;
};

// The recording in `dir` (its index.tsv); nullopt when there is none.
std::optional<Recording> read_recording(const std::string& dir);

std::string archive_path(const Recording& r, const Sample& s, Ir ir);
// The sample's user inputs, as PyTorch's eager run had them (contiguous: kiln copies an input into
// the layout the program was exported with).
std::vector<Tensor> read_inputs(const Recording& r, const Sample& s);

// Empty when `got` are the sample's outputs, else the first difference.
std::string compare_outputs(const Recording& r, const Sample& s, const std::vector<Tensor>& got);

}  // namespace kiln::exported
