// A recording of PyTorch's OpInfo samples as Core ATen calls (tests/tools/record_opinfo.py writes it;
// docs/opinfo_replay.md is the format): reading it, and turning its tokens into kiln values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kiln/ops/api.h"

namespace kiln::opinfo {

struct TensorEntry {
  DType dtype;
  Shape sizes, strides;
  int64_t storage_offset = 0;     // in elements
  int64_t offset = 0, bytes = 0;  // the storage's bytes in data.bin
};

// One recorded call of an overload.
struct Call {
  std::string op;      // "aten::add.Tensor"
  std::string source;  // the OpInfo, dtype and sample it came from: "add/float32/2"
  std::vector<TensorEntry> tensors;
  std::vector<std::string> args;                            // positional tokens
  std::vector<std::pair<std::string, std::string>> kwargs;  // name, token
  std::optional<std::string> out;                           // "[T2]" or "[[T2,T3]]"; absent when PyTorch raised
  std::optional<std::string> ref;  // PyTorch's outputs computed in float64 and rounded, where a 16- or 32-bit
                                   // float was an argument
  std::string raised;              // PyTorch's error, when it raised
};

struct Recording {
  std::vector<Call> calls;
  std::vector<char> data;
  // The tensor T<k> of `call`: a fresh copy of its storage, viewed with its sizes, strides and offset.
  Tensor tensor(const Call& call, size_t k) const;
};

// Reads DIR/calls.txt and DIR/data.bin; throws kiln::Error naming the file and line on bad input.
Recording read_recording(const std::string& dir);

// A token as a parsed tree.
struct Token {
  enum class Kind { None, Bool, Int, Float, Str, DType, Device, Layout, MemoryFormat, TensorRef, List } kind;
  std::string text;  // Str, DType, Device, Layout, MemoryFormat
  int64_t i = 0;     // Bool, Int, TensorRef
  double f = 0;
  std::vector<Token> items;
};
Token parse_token(const std::string& text);

}  // namespace kiln::opinfo
