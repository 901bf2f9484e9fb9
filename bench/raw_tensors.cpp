#include "raw_tensors.h"

#include <bit>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "kiln/ops/api.h"

namespace bench {

static_assert(std::endian::native == std::endian::little, "the raw files are little-endian");

namespace {

[[noreturn]] void fail(const std::string& what) { throw std::runtime_error(what); }

kiln::DType parse_dtype_word(const std::string& word, const std::string& line) {
  auto dtype = kiln::parse_dtype(word);
  if (!dtype) fail(fmt::format("manifest: unknown dtype '{}' in line '{}'", word, line));
  return *dtype;
}

std::vector<int64_t> parse_sizes(std::istringstream& fields, const std::string& line) {
  int64_t ndim = -1;
  fields >> ndim;
  if (!fields || ndim < 0) fail(fmt::format("manifest: no dimension count in line '{}'", line));
  std::vector<int64_t> sizes(static_cast<size_t>(ndim));
  for (auto& s : sizes) fields >> s;
  if (!fields) fail(fmt::format("manifest: fewer than {} sizes in line '{}'", ndim, line));
  return sizes;
}

// "[3, 17]": the multi-index of flat element `flat` of a row-major tensor of `sizes`.
std::string unravel(int64_t flat, kiln::IntArrayRef sizes) {
  std::vector<int64_t> index(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    index[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return fmt::format("[{}]", fmt::join(index, ", "));
}

}  // namespace

Manifest read_manifest(const std::string& dir) {
  Manifest m;
  m.dir = dir;
  std::ifstream file(dir + "/manifest.txt");
  if (!file) fail(fmt::format("cannot read {}/manifest.txt", dir));
  for (std::string line; std::getline(file, line);) {
    std::istringstream fields(line);
    std::string kind;
    if (!(fields >> kind)) continue;
    if (kind == "workload") {
      fields >> m.workload;
    } else if (kind == "scale") {
      fields >> m.scale;
    } else if (kind == "input") {
      RawTensorSpec t;
      std::string dtype;
      fields >> t.file >> dtype;
      t.dtype = parse_dtype_word(dtype, line);
      t.sizes = parse_sizes(fields, line);
      m.inputs.push_back(std::move(t));
    } else if (kind == "output") {
      ExpectedOutput o;
      std::string dtype;
      fields >> o.tensor.file >> dtype >> o.atol >> o.rtol >> o.max_rmse >> o.basis;
      if (!fields) fail(fmt::format("manifest: malformed line '{}'", line));
      o.tensor.dtype = parse_dtype_word(dtype, line);
      o.tensor.sizes = parse_sizes(fields, line);
      m.outputs.push_back(std::move(o));
    } else {
      fail(fmt::format("manifest: unknown line '{}'", line));
    }
    if (!fields && kind != "input" && kind != "output") fail(fmt::format("manifest: malformed line '{}'", line));
  }
  if (m.workload.empty()) fail(fmt::format("{}/manifest.txt names no workload", dir));
  return m;
}

kiln::Tensor read_raw_tensor(const std::string& dir, const RawTensorSpec& spec) {
  kiln::Tensor t = kiln::empty(spec.sizes, spec.dtype);
  std::string path = dir + "/" + spec.file;
  std::error_code ec;
  auto bytes = std::filesystem::file_size(path, ec);
  if (ec || bytes != t.nbytes()) {
    fail(fmt::format("{}: {} bytes, expected {} for {}", path, ec ? 0 : bytes, t.nbytes(), t.describe()));
  }
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(fmt::format("cannot open {}", path));
  size_t got = std::fread(t.data_ptr(), 1, t.nbytes(), f);
  std::fclose(f);
  if (got != t.nbytes()) fail(fmt::format("{}: short read ({} of {} bytes)", path, got, t.nbytes()));
  return t;
}

void write_raw_tensor(const std::string& path, const kiln::Tensor& t) {
  kiln::Tensor dense = t.contiguous();
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(fmt::format("cannot create {}", path));
  size_t wrote = std::fwrite(dense.data_ptr(), 1, dense.nbytes(), f);
  if (std::fclose(f) != 0 || wrote != dense.nbytes()) fail(fmt::format("cannot write {}", path));
}

Comparison compare(const kiln::Tensor& got, const ExpectedOutput& expected_output, const kiln::Tensor& expected) {
  const double atol = expected_output.atol, rtol = expected_output.rtol;
  Comparison c;
  if (!got.sizes().equals(expected.sizes())) {
    c.ok = false;
    c.problem = fmt::format("sizes {} where {} was expected", got.describe(), expected.describe());
    return c;
  }
  kiln::Tensor a = got.to(kiln::DType::Float64).contiguous();
  kiln::Tensor e = expected.to(kiln::DType::Float64).contiguous();
  const double* pa = a.data_ptr<double>();
  const double* pe = e.data_ptr<double>();
  int64_t worst = -1;
  double squares = 0;
  double worst_excess = -1;  // how far past its tolerance the worst failing element is, relative to it
  for (int64_t i = 0; i < a.numel(); ++i) {
    double x = pa[i], y = pe[i];
    bool close;
    double diff;
    if (std::isinf(x) || std::isinf(y)) {
      close = x == y;
      diff = close ? 0 : INFINITY;
    } else {
      diff = std::fabs(x - y);  // NaN when either is NaN: then `close` is false
      close = diff <= atol + rtol * std::fabs(y);
    }
    if (std::isnan(diff)) diff = INFINITY;
    squares += diff * diff;
    c.max_abs = std::max(c.max_abs, diff);
    if (y != 0) c.max_rel = std::max(c.max_rel, diff / std::fabs(y));
    if (!close) {
      ++c.failures;
      double excess = diff / (atol + rtol * std::fabs(y));
      if (excess > worst_excess || std::isnan(excess)) worst_excess = excess, worst = i;
    }
  }
  c.rmse = a.numel() ? std::sqrt(squares / static_cast<double>(a.numel())) : 0.0;
  if (c.failures > 0) {
    c.ok = false;
    c.problem = fmt::format("{} of {} elements outside the tolerance; worst at {}: got {:.9g}, expected {:.9g}",
                            c.failures, a.numel(), unravel(worst, a.sizes()), pa[worst], pe[worst]);
  } else if (expected_output.max_rmse >= 0 && !(c.rmse <= expected_output.max_rmse)) {
    c.ok = false;
    c.problem = fmt::format("RMSE {:.3g} above its bound {:.3g}", c.rmse, expected_output.max_rmse);
  }
  return c;
}

}  // namespace bench
