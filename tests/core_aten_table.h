// The 193 Core ATen ops of shared/reference/core_aten_ops.tsv (a copy lives in tests/data), as
// (name with overload, exact schema) pairs, for tests that check kiln's op table against it.
#pragma once

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace kiln::testing {

inline std::vector<std::pair<std::string, std::string>> core_aten_table() {
  std::vector<std::pair<std::string, std::string>> rows;
  std::ifstream in(KILN_TEST_DATA "/core_aten_ops.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    size_t tab = line.find('\t');
    rows.emplace_back(line.substr(0, tab), line.substr(tab + 1));
  }
  return rows;
}

}  // namespace kiln::testing
