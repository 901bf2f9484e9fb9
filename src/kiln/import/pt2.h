// The `.pt2` archive torch.export.save writes (PyTorch 2.8 to 2.13: the PT2 archive; 2.6 and 2.7:
// a plain zip of the serialized artifact), read into an ExportedProgram and the tensors its
// signature names. Layout facts: shared/reference/pytorch_ir.md §6 and docs/import.md.
//
// Weights stored as raw bytes (the PT2 archive's default) become tensors over the memory-mapped
// archive: no copy where a record is aligned for its dtype (torch aligns records to 64 bytes), a
// copy otherwise. Tensors that shared a storage in PyTorch share one here. Weights stored as
// torch.save pickles (2.6/2.7 archives, `use_pickle` payloads) are read by the pickle reader.
//
// Every malformed archive is a kiln::Error naming the file and the record, tensor or node: a
// missing record, an unknown archive format or schema version, a weight whose bytes do not cover
// its metadata, an op kiln does not know.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "kiln/import/exported_program.h"
#include "kiln/import/zip.h"

namespace kiln::import {

struct Pt2Archive {
  ExportedProgram program;
  // Parameters, buffers and constants by their state-dict / constants name ("fc1.weight").
  std::map<std::string, Tensor> state;
  std::string format;  // "pt2" (PyTorch 2.8+) or "legacy" (2.6/2.7)
};

// A record's bytes as a CPU storage: a view of the archive's memory (the storage keeps it alive) when
// the bytes are aligned to `alignment`, else an aligned copy. Used for weights and packages.
Ref<StorageImpl> record_storage(const ZipData& data, size_t alignment);

// Loads the model called `model` ("model" is what torch.export.save writes).
Pt2Archive load_pt2(const std::string& path, const std::string& model = "model");
// The same for an archive held in memory; `name` stands for the path in errors (the fuzz target).
Pt2Archive load_pt2_bytes(std::vector<std::byte> bytes, const std::string& name, const std::string& model = "model");

}  // namespace kiln::import
