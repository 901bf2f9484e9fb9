// Tensors shared with the PyTorch side of the compiled CPU suite (bench/torch_suite.py writes them):
// a directory holding one raw little-endian file per tensor (dense, row-major, no header) and a
// manifest.txt describing them, one tensor a line:
//   workload NAME
//   scale S
//   input FILE DTYPE NDIM SIZE...
//   output FILE DTYPE ATOL RTOL MAX_RMSE BASIS NDIM SIZE...
// `input` lines are the workload's arguments in order; `output` lines are the expected results in
// order (PyTorch eager's, or a float64 reference) with the tolerance a result must meet: elementwise,
// as torch.testing.assert_close states it, |got - expected| <= ATOL + RTOL * |expected|; and, unless
// MAX_RMSE is negative, a root-mean-square error sqrt(mean((got - expected)^2)) of at most MAX_RMSE.
// BASIS says where the expected values and the tolerance came from (one word, for messages).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ops/tensor.h"

namespace bench {

struct RawTensorSpec {
  std::string file;  // relative to the directory
  kiln::DType dtype;
  std::vector<int64_t> sizes;
};

struct ExpectedOutput {
  RawTensorSpec tensor;
  double atol = 0, rtol = 0;
  double max_rmse = -1;  // negative: no bound
  std::string basis;
};

struct Manifest {
  std::string dir;
  std::string workload;
  int64_t scale = 1;
  std::vector<RawTensorSpec> inputs;
  std::vector<ExpectedOutput> outputs;
};

// Reads DIR/manifest.txt; throws std::runtime_error naming the line on a malformed one.
Manifest read_manifest(const std::string& dir);

// A new contiguous CPU tensor holding the bytes of DIR/spec.file; throws when the file's size is not
// numel * element size.
kiln::Tensor read_raw_tensor(const std::string& dir, const RawTensorSpec& spec);

// Writes `t`'s elements, row-major, to `path` (a raw file as above); throws on an I/O error.
void write_raw_tensor(const std::string& path, const kiln::Tensor& t);

// How far `got` is from `expected` (any floating dtypes, compared in float64).
struct Comparison {
  bool ok = true;        // every element within atol + rtol * |expected| (NaN is never close), rmse within bound
  std::string problem;   // why not, when !ok: a size mismatch, the worst element, or the RMSE
  double max_abs = 0;    // max |got - expected|
  double max_rel = 0;    // max |got - expected| / |expected| over elements with expected != 0
  double rmse = 0;       // sqrt(mean((got - expected)^2))
  int64_t failures = 0;  // elements outside the tolerance
};
Comparison compare(const kiln::Tensor& got, const ExpectedOutput& expected_output, const kiln::Tensor& expected);

}  // namespace bench
