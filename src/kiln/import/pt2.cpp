#include "kiln/import/pt2.h"

#include <cstring>

#include "kiln/import/torch_save.h"
#include "kiln/import/zip.h"

namespace kiln::import {
namespace {

// A torch.save archive (its own zip) as the pickle reader's records.
torch_save::Archive torch_save_archive(const ZipArchive& zip, const std::string& name) {
  const std::string root = zip.root().empty() ? "" : zip.root() + "/";
  torch_save::Archive a;
  a.name = name;
  a.pickle = zip.read(root + "data.pkl").bytes;  // stored in torch.save's zips: a view that lives with `zip`
  if (const ZipEntry* e = zip.find(root + "byteorder")) a.byteorder = std::string(zip.read(*e).text());
  a.storages = [&zip, root](const torch_save::StorageRequest& r) -> Ref<StorageImpl> {
    const ZipEntry* e = zip.find(root + "data/" + std::string(r.key));
    if (!e) return Ref<StorageImpl>();
    return record_storage(zip.read(*e), r.dtype ? element_size(*r.dtype) : 1);
  };
  return a;
}

// A record of the outer archive that is itself a torch.save file.
ZipArchive nested_zip(const ZipArchive& outer, const std::string& record) {
  std::span<const std::byte> bytes = outer.read(record).bytes;
  return ZipArchive::from_bytes(std::vector<std::byte>(bytes.begin(), bytes.end()), outer.path() + ":" + record);
}

class Loader {
 public:
  Loader(ZipArchive zip, const std::string& model) : path_(zip.path()), model_(model), zip_(std::move(zip)) {}

  Pt2Archive load() {
    root_ = zip_.root().empty() ? "" : zip_.root() + "/";
    if (zip_.find(root_ + "archive_format")) return load_pt2();
    if (zip_.find(root_ + "serialized_exported_program.json")) return load_legacy(root_);
    if (zip_.find("serialized_exported_program.json")) return load_legacy("");
    KILN_FAIL(ErrorKind::Value,
              "{}: not a torch.export archive (no {}archive_format and no serialized_exported_program.json record)",
              path_, root_);
  }

 private:
  std::string text(const std::string& record) const { return std::string(zip_.read(record).text()); }

  ExportedProgram program(const std::string& record) const {
    std::string json_text = text(record);
    return read_exported_program(json::parse(json_text, path_ + ":" + record), path_);
  }

  Pt2Archive load_pt2() {
    Pt2Archive out;
    out.format = "pt2";
    std::string format = text(root_ + "archive_format");
    KILN_CHECK(format == "pt2", "{}: archive_format is '{}', expected 'pt2'", path_, format);
    if (const ZipEntry* e = zip_.find(root_ + "byteorder")) {
      std::string order(zip_.read(*e).text());
      KILN_CHECK_KIND(order == "little", ErrorKind::NotImplemented,
                      "{}: the archive's byte order is '{}'; kiln reads little-endian archives", path_, order);
    }
    std::string model_record = root_ + "models/" + model_ + ".json";
    if (!zip_.find(model_record)) {
      std::vector<std::string> models;
      for (const auto& e : zip_.entries()) {
        if (e.name.starts_with(root_ + "models/") && e.name.ends_with(".json")) models.push_back(e.name);
      }
      KILN_FAIL(ErrorKind::Value, "{}: no model '{}' ({} is missing; the archive's models: {})", path_, model_,
                model_record, models.empty() ? "none" : fmt::format("{}", fmt::join(models, ", ")));
    }
    out.program = program(model_record);
    read_payload(root_ + "data/weights/", root_ + "data/weights/" + model_ + "_weights_config.json", out.state);
    read_payload(root_ + "data/constants/", root_ + "data/constants/" + model_ + "_constants_config.json", out.state);
    return out;
  }

  // A PayloadConfig: {"config": {"<fqn>": {"path_name", "is_param", "use_pickle", "tensor_meta"}}}.
  void read_payload(const std::string& dir, const std::string& config_record, std::map<std::string, Tensor>& state) {
    if (!zip_.find(config_record)) return;  // a program without weights or constants
    std::string config_text = text(config_record);
    json::Value config = json::parse(config_text, path_ + ":" + config_record);
    std::map<std::string, Ref<StorageImpl>> storages;  // one per record: tensors that shared storage share it
    for (const auto& [fqn, entry] : config.at("config").as_object()) {
      std::string record = dir + entry.at("path_name").as_string();
      std::string what = fmt::format("{}: tensor '{}' (record {})", path_, fqn, record);
      KILN_CHECK(!state.count(fqn), "{}: '{}' is stored twice", path_, fqn);
      if (const json::Value* pickled = entry.find("use_pickle"); pickled && pickled->as_bool()) {
        ZipArchive inner = nested_zip(zip_, record);
        PickleValue v = torch_save::load(torch_save_archive(inner, what));
        KILN_CHECK_KIND(v.is(PickleValue::Kind::Tensor), ErrorKind::NotImplemented,
                        "{} is a pickled {}, not a plain tensor", what, pickle_kind_name(v.kind()));
        state[fqn] = v.as_tensor();  // its storage keeps the inner archive alive
        continue;
      }
      const json::Value& meta_json = entry.at("tensor_meta");
      KILN_CHECK(!meta_json.is_null(), "{} has no tensor_meta", what);
      graph::TensorMeta meta = read_tensor_meta(meta_json, what);
      int64_t offset = read_storage_offset(meta_json, what);
      KILN_CHECK_KIND(meta.device.type == DeviceType::CPU, ErrorKind::NotImplemented,
                      "{} was saved on {}; kiln loads CPU programs", what, meta.device);
      state[fqn] = tensor_over(record, meta, offset, what, storages);
    }
  }

  Tensor tensor_over(const std::string& record, const graph::TensorMeta& meta, int64_t offset, const std::string& what,
                     std::map<std::string, Ref<StorageImpl>>& storages) {
    size_t element = element_size(meta.dtype);
    const ZipEntry& e = zip_.entry(record);
    KILN_CHECK(e.uncompressed_size % element == 0, "{}: {} bytes are not a whole number of {} elements", what,
               e.uncompressed_size, meta.dtype);
    auto numel = static_cast<int64_t>(e.uncompressed_size / element);
    checked_numel(meta.sizes, what);
    for (size_t d = 0; d < meta.strides.size(); ++d) {
      KILN_CHECK(meta.strides[d] >= 0, "{}: negative stride {} in dimension {}", what, meta.strides[d], d);
    }
    KILN_CHECK(offset >= 0, "{}: negative storage offset {}", what, offset);
    int64_t span = storage_span(meta.sizes, meta.strides);
    if (numel == 0 && span > 0) {
      // torch writes an empty record for a tensor it could not serialize (a fake tensor).
      KILN_FAIL(ErrorKind::Value, "{}: the record is empty but the tensor is {}[{}]", what, meta.dtype,
                fmt::join(meta.sizes, ", "));
    }
    KILN_CHECK(span == 0 || offset + span <= numel,
               "{}: the record holds {} elements of {}, but sizes [{}], strides [{}] and offset {} reach element {}",
               what, numel, meta.dtype, fmt::join(meta.sizes, ", "), fmt::join(meta.strides, ", "), offset,
               offset + span);
    auto [it, fresh] = storages.try_emplace(record);
    if (fresh) it->second = record_storage(zip_.read(e), element);
    return Tensor(make_tensor(it->second, meta.sizes, meta.strides, offset, meta.dtype));
  }

  // PyTorch 2.6/2.7: serialized_exported_program.json, and torch.save'd state dict and constants.
  Pt2Archive load_legacy(const std::string& prefix) {
    Pt2Archive out;
    out.format = "legacy";
    out.program = program(prefix + "serialized_exported_program.json");
    for (const char* record : {"serialized_state_dict.pt", "serialized_constants.pt"}) {
      std::string name = prefix + record;
      if (!zip_.find(name)) continue;
      if (zip_.read(name).bytes.empty()) continue;
      ZipArchive inner = nested_zip(zip_, name);
      for (auto& [fqn, t] : torch_save::load_state_dict(torch_save_archive(inner, path_ + ":" + name))) {
        KILN_CHECK(!out.state.count(fqn), "{}: '{}' is stored twice", path_, fqn);
        out.state[fqn] = t;
      }
    }
    return out;
  }

  std::string path_, model_, root_;
  ZipArchive zip_;
};

}  // namespace

Ref<StorageImpl> record_storage(const ZipData& data, size_t alignment) {
  if (data.bytes.empty()) return StorageImpl::allocate(0, kCPU);
  if (reinterpret_cast<uintptr_t>(data.bytes.data()) % alignment == 0) {
    std::shared_ptr<const void> owner = data.owner;
    return StorageImpl::wrap(const_cast<std::byte*>(data.bytes.data()), data.bytes.size(), kCPU,
                             [owner](void*) mutable { owner.reset(); });
  }
  Ref<StorageImpl> copy = StorageImpl::allocate(data.bytes.size(), kCPU);
  std::memcpy(copy->data(), data.bytes.data(), data.bytes.size());
  return copy;
}

Pt2Archive load_pt2(const std::string& path, const std::string& model) {
  return Loader(ZipArchive::open(path), model).load();
}

Pt2Archive load_pt2_bytes(std::vector<std::byte> bytes, const std::string& name, const std::string& model) {
  return Loader(ZipArchive::from_bytes(std::move(bytes), name), model).load();
}

}  // namespace kiln::import
