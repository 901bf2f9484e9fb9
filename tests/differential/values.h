// A program's values as plain numbers, for the differential checker and its rules: the elements
// of a tensor, and the value of one name of a program run alone.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "program.h"

namespace kiln::difftest {

// Elements in row-major logical order: exact int64 for integers and bools, double for floats.
struct Values {
  bool integral = false;
  std::vector<double> f;
  std::vector<int64_t> i;
  size_t size() const { return integral ? i.size() : f.size(); }
  std::string at(size_t k) const { return integral ? std::to_string(i[k]) : fmt::format("{:.9g}", f[k]); }
};

Values read_values(const Tensor& t);

// The value `name` of program `p` (run on `inputs` in `precision`), or nothing when that raises.
std::optional<Tensor> probe_value(const Program& p, const std::string& name, const std::vector<Tensor>& inputs,
                                  Precision precision);

}  // namespace kiln::difftest
