// torch.save's conventions on top of the pickle VM (torch_save.h). Facts from PyTorch's
// torch/serialization.py (the persistent id) and torch/_tensor.py, torch/_utils.py (how tensors
// and parameters reduce), the same from 2.6 to 2.13.
#include "kiln/import/torch_save.h"

#include <algorithm>
#include <cstring>
#include <map>

namespace kiln::torch_save {

namespace {

using Kind = PickleValue::Kind;

// torch.<Type>Storage: the legacy typed storage classes a persistent id names (_dtype_to_storage_type_map).
struct StorageClass {
  const char* name;
  DType dtype;
};
constexpr StorageClass kStorageClasses[] = {
    {"DoubleStorage", DType::Float64},
    {"FloatStorage", DType::Float32},
    {"HalfStorage", DType::Float16},
    {"BFloat16Storage", DType::BFloat16},
    {"LongStorage", DType::Int64},
    {"IntStorage", DType::Int32},
    {"ShortStorage", DType::Int16},
    {"CharStorage", DType::Int8},
    {"ByteStorage", DType::UInt8},
    {"BoolStorage", DType::Bool},
    {"ComplexFloatStorage", DType::ComplexFloat},
    {"ComplexDoubleStorage", DType::ComplexDouble},
};

// PyTorch dtypes kiln has no kind for: recognized, so that the error says so instead of "unknown global".
constexpr const char* kForeignDTypes[] = {
    "uint16",      "uint32",          "uint64",          "complex32",      "float8_e4m3fn",
    "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu", "float4_e2m1fn_x2",
    "bits8",       "bits16",          "bits1x8",         "bits2x4",        "bits4x2",
    "qint8",       "quint8",          "qint32",          "quint4x2",       "quint2x4",
};

std::optional<DType> storage_class_dtype(std::string_view name) {
  for (const StorageClass& c : kStorageClasses) {
    if (name == c.name) return c.dtype;
  }
  return std::nullopt;
}

bool is_untyped_storage(std::string_view module, std::string_view name) {
  return name == "UntypedStorage" && (module == "torch" || module == "torch.storage");
}

bool is_dtype_name(std::string_view name) {
  if (parse_dtype(name)) return true;
  return std::any_of(std::begin(kForeignDTypes), std::end(kForeignDTypes), [&](const char* n) { return name == n; });
}

bool allowed(std::string_view module, std::string_view name) {
  if (module == "torch._utils") {
    return name == "_rebuild_tensor_v2" || name == "_rebuild_tensor_v3" || name == "_rebuild_parameter" ||
           name == "_rebuild_parameter_with_state";
  }
  if (is_untyped_storage(module, name)) return true;
  if (module != "torch") return false;
  return name == "device" || name == "Size" || storage_class_dtype(name) || is_dtype_name(name);
}

int64_t as_count(const PickleValue& v, std::string_view what) {
  KILN_CHECK_TYPE(v.is(Kind::Int), "{} is {} {}, not an int", what, pickle_kind_name(v.kind()), v.describe(4));
  return v.as_int();
}

std::vector<int64_t> int_list(const PickleValue& v, std::string_view what) {
  KILN_CHECK_TYPE(v.is(Kind::Tuple) || v.is(Kind::List), "{} is {} {}, not a tuple of ints", what,
                  pickle_kind_name(v.kind()), v.describe(4));
  std::vector<int64_t> out;
  for (const PickleValue& item : v.as_sequence()) out.push_back(as_count(item, what));
  return out;
}

// The bytes an element's parts swap in: complex numbers are two floats.
size_t swap_unit(DType t) { return is_complex(t) ? element_size(t) / 2 : element_size(t); }

// One storage record: what the pickle declares, the record's bytes, and the storage tensors view
// (the record itself, or a copy when it had to be aligned or byte-swapped).
struct Entry {
  std::optional<DType> dtype;
  int64_t numel = 0;
  std::string location;
  Ref<StorageImpl> record;
  std::optional<DType> used_as;  // the dtype tensors view it as
  Ref<StorageImpl> ready;
};

class Loader {
 public:
  explicit Loader(const Archive& archive) : archive_(archive) {
    if (archive.byteorder) {
      const std::string& b = *archive.byteorder;
      KILN_CHECK(b == "little" || b == "big", "{}: record 'byteorder' holds '{}', expected 'little' or 'big'",
                 archive.name, b.substr(0, 32));
      big_endian_ = b == "big";
    }
  }

  PickleValue run() {
    PickleHooks hooks;
    hooks.allow_global = allowed;
    hooks.persistent_load = [this](const PickleValue& pid) { return persistent_load(pid); };
    hooks.call = [this](const PickleValue& f, std::vector<PickleValue> args) { return call(f, std::move(args)); };
    return unpickle(archive_.pickle, hooks, archive_.name + ": data.pkl");
  }

 private:
  // ('storage', storage_type, key, location, numel), as torch.save's persistent_id writes it.
  PickleValue persistent_load(const PickleValue& pid) {
    bool shape = pid.is(Kind::Tuple) && pid.as_tuple().size() == 5 && pid.as_tuple()[0].is(Kind::String) &&
                 pid.as_tuple()[0].as_string() == "storage";
    KILN_CHECK(shape, "persistent id {} is not ('storage', type, key, location, numel)", pid.describe());
    const auto& t = pid.as_tuple();
    KILN_CHECK_TYPE(t[1].is(Kind::Global), "storage type {} is not a global", t[1].describe());
    std::optional<DType> dtype;
    if (!is_untyped_storage(t[1].global_module(), t[1].global_name())) {
      dtype = t[1].global_module() == "torch" ? storage_class_dtype(t[1].global_name()) : std::nullopt;
      KILN_CHECK_TYPE(dtype.has_value(), "storage type {} is not a storage class", t[1].global_qualname());
    }
    KILN_CHECK_TYPE(t[2].is(Kind::String) && t[3].is(Kind::String), "storage key {} and location {} are not str",
                    t[2].describe(), t[3].describe());
    int64_t numel = as_count(t[4], "the storage's size");
    KILN_CHECK(numel >= 0, "storage 'data/{}' declares a negative size {}", t[2].as_string(), numel);
    load_entry(t[2].as_string(), dtype, numel, t[3].as_string());

    auto obj = std::make_shared<StorageObject>();
    obj->key = t[2].as_string();
    obj->dtype = dtype;
    obj->numel = numel;
    obj->location = t[3].as_string();
    return PickleValue::object(std::move(obj));
  }

  Entry& load_entry(const std::string& key, std::optional<DType> dtype, int64_t numel, const std::string& location) {
    auto found = entries_.find(key);
    if (found != entries_.end()) {
      Entry& e = found->second;
      KILN_CHECK(e.dtype == dtype && e.numel == numel, "storage 'data/{}' is declared twice, as {} and as {}", key,
                 declared(e.dtype, e.numel), declared(dtype, numel));
      return e;
    }
    size_t esize = dtype ? element_size(*dtype) : 1;
    int64_t nbytes = 0;
    KILN_CHECK(!__builtin_mul_overflow(numel, static_cast<int64_t>(esize), &nbytes),
               "storage 'data/{}' declares {}, more bytes than fit in int64", key, declared(dtype, numel));
    KILN_CHECK(static_cast<bool>(archive_.storages), "{}: no source of storage records given", archive_.name);
    Ref<StorageImpl> record = archive_.storages(StorageRequest{key, dtype, numel, location});
    KILN_CHECK(record, "storage record 'data/{}' is missing from {} (the pickle declares {})", key, archive_.name,
               declared(dtype, numel));
    KILN_CHECK(record->device().is_cpu(), "storage record 'data/{}' was given on {}, expected the CPU", key,
               record->device());
    KILN_CHECK(record->nbytes() == static_cast<uint64_t>(nbytes),
               "storage record 'data/{}' holds {} bytes; the pickle declares {} ({} bytes)", key, record->nbytes(),
               declared(dtype, numel), nbytes);
    Entry e;
    e.dtype = dtype;
    e.numel = numel;
    e.location = location;
    e.record = std::move(record);
    return entries_.emplace(key, std::move(e)).first->second;
  }

  static std::string declared(std::optional<DType> dtype, int64_t numel) {
    return dtype ? fmt::format("{} {}", numel, dtype_name(*dtype)) : fmt::format("{} untyped bytes", numel);
  }

  // The storage tensors of `dtype` view: the record itself when it is aligned and in this machine's
  // byte order; otherwise a copy, aligned, with each element's bytes reversed for a big-endian archive.
  const Ref<StorageImpl>& storage_for(const std::string& key, Entry& e, DType dtype) {
    if (e.used_as) {
      KILN_CHECK(*e.used_as == dtype, "storage 'data/{}' is viewed both as {} and as {}", key, *e.used_as, dtype);
      return e.ready;
    }
    size_t unit = swap_unit(dtype);
    auto* data = static_cast<const unsigned char*>(e.record->data());
    size_t nbytes = e.record->nbytes();
    bool aligned = reinterpret_cast<uintptr_t>(data) % unit == 0;
    if (aligned && (!big_endian_ || unit == 1)) {
      e.ready = e.record;
    } else {
      e.ready = StorageImpl::allocate(nbytes, kCPU);
      auto* out = static_cast<unsigned char*>(e.ready->data());
      if (nbytes) std::memcpy(out, data, nbytes);
      if (big_endian_) {
        for (size_t i = 0; i + unit <= nbytes; i += unit) std::reverse(out + i, out + i + unit);
      }
    }
    if (dtype == DType::Bool) {
      auto* bytes = static_cast<const unsigned char*>(e.ready->data());
      const unsigned char* bad = std::find_if(bytes, bytes + nbytes, [](unsigned char b) { return b > 1; });
      KILN_CHECK(bad == bytes + nbytes, "storage 'data/{}' of bool holds the byte {} at element {} (not 0 or 1)", key,
                 static_cast<int>(*bad), bad - bytes);
    }
    e.used_as = dtype;
    return e.ready;
  }

  PickleValue call(const PickleValue& f, std::vector<PickleValue> args) {
    const std::string& module = f.global_module();
    const std::string& name = f.global_name();
    if (module == "torch._utils" && (name == "_rebuild_tensor_v2" || name == "_rebuild_tensor_v3")) {
      return PickleValue::tensor(rebuild_tensor(args, name == "_rebuild_tensor_v3"));
    }
    if (module == "torch._utils" && (name == "_rebuild_parameter" || name == "_rebuild_parameter_with_state")) {
      // (data, requires_grad, backward_hooks[, state]): kiln has no Parameter type; the tensor stands for it,
      // and a subclass's Python attributes (state) are dropped.
      size_t want = name == "_rebuild_parameter" ? 3 : 4;
      KILN_CHECK(args.size() == want, "{} takes {} arguments, got {}", name, want, args.size());
      KILN_CHECK_TYPE(args[0].is(Kind::Tensor), "{}: data is {}, not a tensor", name, args[0].describe(4));
      return std::move(args[0]);
    }
    if (module == "torch" && name == "Size") {
      KILN_CHECK(args.size() == 1, "torch.Size takes 1 argument, got {}", args.size());
      std::vector<PickleValue> dims;
      for (int64_t d : int_list(args[0], "a torch.Size element")) dims.push_back(PickleValue::integer(d));
      return PickleValue::tuple(std::move(dims));
    }
    if (module == "torch" && name == "device") {
      bool ok = (args.size() == 1 || args.size() == 2) && args[0].is(Kind::String) &&
                (args.size() == 1 || args[1].is(Kind::Int) || args[1].is_none());
      KILN_CHECK(ok, "torch.device expects (type[, index]), got {}", PickleValue::tuple(std::move(args)).describe());
      auto dev = std::make_shared<DeviceObject>();
      dev->type = args[0].as_string();
      if (args.size() == 2 && args[1].is(Kind::Int)) dev->index = args[1].as_int();
      return PickleValue::object(std::move(dev));
    }
    KILN_FAIL(ErrorKind::NotImplemented, "{}.{} is not callable in kiln's unpickler", module, name);
  }

  // _rebuild_tensor_v2(storage, storage_offset, size, stride, requires_grad, backward_hooks[, metadata])
  // _rebuild_tensor_v3(storage, storage_offset, size, stride, requires_grad, backward_hooks, dtype[, metadata])
  Tensor rebuild_tensor(const std::vector<PickleValue>& args, bool v3) {
    const char* fn = v3 ? "_rebuild_tensor_v3" : "_rebuild_tensor_v2";
    size_t base = v3 ? 7 : 6;
    KILN_CHECK(args.size() == base || args.size() == base + 1, "{} takes {} or {} arguments, got {}", fn, base,
               base + 1, args.size());
    const auto* storage = args[0].is(Kind::Object) ? dynamic_cast<const StorageObject*>(&args[0].as_object()) : nullptr;
    KILN_CHECK_TYPE(storage != nullptr, "{}: the storage argument is {}, not a storage", fn, args[0].describe(4));
    Entry& e = entries_.at(storage->key);
    DType dtype;
    if (v3) {
      dtype = dtype_of_global(args[6]);
      KILN_CHECK(!e.dtype || *e.dtype == dtype, "{}: dtype {} over storage 'data/{}' of {}", fn, dtype, storage->key,
                 *e.dtype);
    } else {
      KILN_CHECK(e.dtype.has_value(), "{}: storage 'data/{}' is untyped, so its dtype is unknown", fn, storage->key);
      dtype = *e.dtype;
    }
    int64_t offset = as_count(args[1], "the storage offset");
    std::vector<int64_t> sizes = int_list(args[2], "a size");
    std::vector<int64_t> strides = int_list(args[3], "a stride");
    KILN_CHECK_TYPE(args[4].is(Kind::Bool), "{}: requires_grad is {}, not a bool", fn, args[4].describe(4));
    if (args.size() == base + 1 && !args[base].is_none()) check_metadata(args[base], fn);

    std::string tensor = fmt::format("{} tensor of size {} and stride {} at offset {} over storage 'data/{}'",
                                     dtype_name(dtype), fmt::join(sizes, ", "), fmt::join(strides, ", "), offset,
                                     storage->key);
    KILN_CHECK(sizes.size() == strides.size(), "{}: {}: the size and the stride differ in length", fn, tensor);
    KILN_CHECK(offset >= 0, "{}: {}: negative storage offset", fn, tensor);
    int64_t numel = 1, last = 0;  // `last`: the largest element index the tensor reaches, from its offset
    bool ok = true;
    for (size_t i = 0; i < sizes.size(); ++i) {
      KILN_CHECK(sizes[i] >= 0 && strides[i] >= 0, "{}: {}: negative size or stride", fn, tensor);
      int64_t reach = 0;
      ok = ok && !__builtin_mul_overflow(numel, sizes[i], &numel);
      if (sizes[i] > 0) ok = ok && !__builtin_mul_overflow(sizes[i] - 1, strides[i], &reach);
      ok = ok && !__builtin_add_overflow(last, reach, &last);
    }
    KILN_CHECK(ok, "{}: {}: the number of elements or the extent overflows int64", fn, tensor);
    int64_t needed = 0;  // elements of storage the tensor needs
    if (numel > 0) {
      KILN_CHECK(!__builtin_add_overflow(offset, last + 1, &needed), "{}: {}: the extent overflows int64", fn, tensor);
    }
    int64_t have = static_cast<int64_t>(e.record->nbytes() / element_size(dtype));
    KILN_CHECK(needed <= have,
               "{}: {}: needs {} elements of storage (offset {} + extent {}), the record holds {} ({} bytes)", fn,
               tensor, needed, offset, needed - offset, have, e.record->nbytes());
    const Ref<StorageImpl>& s = storage_for(storage->key, e, dtype);
    return Tensor(make_tensor(s, sizes, strides, offset, dtype));
  }

  // PyTorch's tensor metadata: {'conj': True} / {'neg': True} mark lazily conjugated or negated views,
  // which kiln does not have.
  static void check_metadata(const PickleValue& meta, const char* fn) {
    KILN_CHECK_TYPE(meta.is(Kind::Dict), "{}: metadata is {}, not a dict", fn, meta.describe(4));
    for (const PickleItem& item : meta.as_dict()) {
      bool set = !(item.value.is(Kind::Bool) && !item.value.as_bool()) && !item.value.is_none();
      KILN_CHECK_KIND(!set, ErrorKind::NotImplemented,
                      "{}: the tensor carries metadata {}: kiln has no lazily conjugated or negated tensors", fn,
                      meta.describe());
    }
  }

  const Archive& archive_;
  bool big_endian_ = false;
  std::map<std::string, Entry> entries_;
};

}  // namespace

std::string DeviceObject::describe() const {
  return index >= 0 ? fmt::format("device(type='{}', index={})", type, index) : fmt::format("device(type='{}')", type);
}

std::string StorageObject::describe() const {
  return fmt::format("storage 'data/{}' ({} {} on {})", key, numel, dtype ? dtype_name(*dtype) : "bytes", location);
}

DType dtype_of_global(const PickleValue& global) {
  KILN_CHECK_TYPE(global.is(Kind::Global) && global.global_module() == "torch", "expected a torch dtype, got {} {}",
                  pickle_kind_name(global.kind()), global.describe(4));
  auto dtype = parse_dtype(global.global_name());
  KILN_CHECK_KIND(dtype.has_value(), ErrorKind::NotImplemented, "dtype torch.{} is not supported by kiln",
                  global.global_name());
  return *dtype;
}

PickleValue load(const Archive& archive) { return Loader(archive).run(); }

std::vector<std::pair<std::string, Tensor>> load_state_dict(const Archive& archive) {
  PickleValue v = load(archive);
  KILN_CHECK_TYPE(v.is(Kind::Dict), "{}: a state dict must be a dict, the pickle holds a {}", archive.name,
                  pickle_kind_name(v.kind()));
  std::vector<std::pair<std::string, Tensor>> out;
  out.reserve(v.as_dict().size());
  for (const PickleItem& item : v.as_dict()) {
    KILN_CHECK_TYPE(item.key.is(Kind::String), "{}: state dict key {} is a {}, not a str", archive.name,
                    item.key.describe(), pickle_kind_name(item.key.kind()));
    KILN_CHECK_TYPE(item.value.is(Kind::Tensor), "{}: state dict entry '{}' is not a tensor but {} {}", archive.name,
                    item.key.as_string(), pickle_kind_name(item.value.kind()), item.value.describe(4));
    out.emplace_back(item.key.as_string(), item.value.as_tensor());
  }
  return out;
}

}  // namespace kiln::torch_save
