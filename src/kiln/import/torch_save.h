// Reading what torch.save writes (PyTorch's zip format): `<root>/data.pkl`, a pickle whose tensors
// are calls of torch._utils._rebuild_tensor_v2 / _v3 over persistent ids
// ('storage', torch.<Type>Storage or torch.UntypedStorage, key, location, numel), and one raw record
// `<root>/data/<key>` per storage. This file knows PyTorch's conventions and nothing of zips: the caller
// hands over the pickle's bytes and a StorageSource that returns a record's bytes (wrapping the
// archive's memory, so weights are not copied). Used for .pt2 archives of PyTorch 2.6/2.7
// (serialized_state_dict.pt, ...), `use_pickle` payloads and sample inputs of newer ones.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kiln/import/pickle.h"

namespace kiln::torch_save {

// One storage the pickle refers to, asked of the StorageSource: the record `<root>/data/<key>`.
struct StorageRequest {
  std::string_view key;
  std::optional<DType> dtype;  // a typed storage's dtype; nullopt for torch.UntypedStorage (bytes)
  int64_t numel = 0;           // elements of dtype (bytes when untyped), as the pickle declares them
  std::string_view location;   // where it was saved from: "cpu", "cuda:0"; kiln loads it on the CPU
};

// The bytes of record `data/<key>` as a CPU storage, or null when the archive has no such record.
// Wrap the archive's memory (StorageImpl::wrap with a keep-alive deleter) to avoid copies; a storage
// whose address is not aligned to its dtype is copied.
using StorageSource = std::function<Ref<StorageImpl>(const StorageRequest&)>;

// One torch.save archive, as its records.
struct Archive {
  std::span<const std::byte> pickle;        // <root>/data.pkl
  StorageSource storages;                   // <root>/data/<key>
  std::optional<std::string> byteorder;     // <root>/byteorder: "little" or "big"; absent means little
  std::string name = "torch.save archive";  // names the archive in errors ("model.pt2:serialized_state_dict.pt")
};

// torch.device('cpu') / torch.device('cuda', 0), as it appears in sample inputs.
struct DeviceObject final : PickleObject {
  std::string type;
  int64_t index = -1;  // -1: none given
  std::string describe() const override;
};

// A storage that is not part of a tensor (torch.save of a bare storage): its record, not loaded.
struct StorageObject final : PickleObject {
  std::string key;
  std::optional<DType> dtype;
  int64_t numel = 0;
  std::string location;
  std::string describe() const override;
};

// The whole pickled value: tensors are kiln tensors over the archive's storages (tensors that shared a
// storage share it here, with their sizes, strides and offsets); parameters become their tensors;
// torch.Size becomes a tuple; dtypes are globals (torch.float32); devices are DeviceObjects.
// Throws kiln::Error naming the archive, the record and the numbers for anything malformed.
PickleValue load(const Archive& archive);

// A state dict: the pickle must be a dict (or OrderedDict) of str keys to tensors; in its order.
std::vector<std::pair<std::string, Tensor>> load_state_dict(const Archive& archive);

// The kiln dtype of a pickled torch dtype global (torch.float32, torch.bfloat16, ...); throws for a
// PyTorch dtype kiln lacks (uint16, float8_*, ...) or a global that is not a dtype.
DType dtype_of_global(const PickleValue& global);

}  // namespace kiln::torch_save
