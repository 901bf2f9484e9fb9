#include "python/src/dlpack.h"

#include <memory>
#include <type_traits>
#include <vector>

#include "kiln/support/error.h"

namespace kiln::python {
namespace {

constexpr const char* kLegacyName = "dltensor";
constexpr const char* kVersionedName = "dltensor_versioned";
constexpr const char* kUsedLegacyName = "used_dltensor";
constexpr const char* kUsedVersionedName = "used_dltensor_versioned";

dl::DataType to_dl(DType t) {
  auto bits = static_cast<uint8_t>(element_size(t) * 8);
  switch (t) {
    case DType::Bool: return {dl::kBool, 8, 1};
    case DType::UInt8: return {dl::kUInt, 8, 1};
    case DType::Int8:
    case DType::Int16:
    case DType::Int32:
    case DType::Int64: return {dl::kInt, bits, 1};
    case DType::Float16:
    case DType::Float32:
    case DType::Float64: return {dl::kFloat, bits, 1};
    case DType::BFloat16: return {dl::kBfloat, 16, 1};
    case DType::ComplexFloat:
    case DType::ComplexDouble: return {dl::kComplex, bits, 1};
  }
  KILN_FAIL(ErrorKind::Type, "to_dlpack: dtype {} has no DLPack type", t);
}

// The inverse of to_dl, derived from it so that the two cannot disagree.
DType from_dl(dl::DataType t) {
  KILN_CHECK_TYPE(t.lanes == 1, "from_dlpack: vector types (lanes={}) are not supported", t.lanes);
  for (DType d : kAllDTypes) {
    dl::DataType e = to_dl(d);
    if (e.code == t.code && e.bits == t.bits) return d;
  }
  KILN_FAIL(ErrorKind::Type, "from_dlpack: DLPack type code {} with {} bits has no kiln dtype", int{t.code},
            int{t.bits});
}

Device from_dl(dl::Device d) {
  switch (d.device_type) {
    case dl::kCPU:
    case dl::kCUDAHost: return kCPU;
    case dl::kCUDA: return Device(DeviceType::CUDA, static_cast<int8_t>(d.device_id));
    default:
      KILN_FAIL(ErrorKind::NotImplemented, "from_dlpack: DLPack device type {} is not one kiln has (CPU, CUDA)",
                d.device_type);
  }
}

// What an exported capsule owns: the tensor (so its storage stays alive) and the arrays DLPack
// points into.
template <class Managed>
struct Export {
  Tensor tensor;
  std::vector<int64_t> shape, strides;
  Managed managed{};
};

template <class Managed>
void delete_export(Managed* m) {
  delete static_cast<Export<Managed>*>(m->manager_ctx);
}

template <class Managed>
dl::Tensor& fill(Export<Managed>& e) {
  const Tensor& t = e.tensor;
  e.shape.assign(t.sizes().begin(), t.sizes().end());
  e.strides.assign(t.strides().begin(), t.strides().end());
  dl::Tensor& d = e.managed.dl_tensor;
  d.data = t.data_ptr();
  auto [type, id] = dlpack_device(t.device());
  d.device = {type, id};
  d.ndim = static_cast<int32_t>(t.dim());
  d.dtype = to_dl(t.dtype());
  d.shape = e.shape.data();
  d.strides = e.strides.data();
  d.byte_offset = 0;
  e.managed.manager_ctx = &e;
  e.managed.deleter = &delete_export<Managed>;
  return d;
}

// A capsule's destructor: frees the tensor unless a consumer took it (and renamed the capsule).
template <class Managed>
void capsule_destructor(PyObject* capsule) {
  const char* name = std::is_same_v<Managed, dl::ManagedTensor> ? kLegacyName : kVersionedName;
  if (!PyCapsule_IsValid(capsule, name)) return;  // consumed: the consumer owns it now
  auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, name));
  if (m && m->deleter) m->deleter(m);
}

// A capsule named `name` owning an export of `t` (freed by the consumer, or by the capsule when
// nobody consumed it).
template <class Managed>
PyObject* make_capsule(const Tensor& t, const char* name) {
  auto e = std::make_unique<Export<Managed>>();
  e->tensor = t;
  fill(*e);
  if constexpr (std::is_same_v<Managed, dl::ManagedTensorVersioned>) {
    e->managed.version = {1, 0};
    e->managed.flags = 0;
  }
  PyObject* capsule = PyCapsule_New(&e->managed, name, &capsule_destructor<Managed>);
  if (capsule) e.release();
  return capsule;
}

// A kiln tensor over `d`'s memory; `release` runs when the last tensor over it lets go.
Tensor wrap(const dl::Tensor& d, std::function<void(void*)> release) {
  DType dtype = from_dl(d.dtype);
  Device device = from_dl(d.device);
  KILN_CHECK(d.ndim >= 0, "from_dlpack: ndim is {}", d.ndim);
  Shape sizes(d.shape, d.shape + d.ndim);
  Shape strides = d.strides ? Shape(d.strides, d.strides + d.ndim) : contiguous_strides(sizes);
  for (int i = 0; i < d.ndim; ++i) {
    KILN_CHECK(sizes[i] >= 0, "from_dlpack: size {} of dim {} is negative", sizes[i], i);
    KILN_CHECK_KIND(strides[i] >= 0 || sizes[i] <= 1, ErrorKind::NotImplemented,
                    "from_dlpack: stride {} of dim {} (sizes {}) is negative; kiln tensors have non-negative strides",
                    strides[i], i, sizes);
    if (sizes[i] <= 1 && strides[i] < 0) strides[i] = 0;
  }
  size_t nbytes = static_cast<size_t>(storage_span(sizes, strides)) * element_size(dtype);
  void* data = d.data ? static_cast<char*>(d.data) + d.byte_offset : nullptr;
  auto storage = StorageImpl::wrap(data, nbytes, device, std::move(release));
  return Tensor(make_tensor(std::move(storage), sizes, strides, 0, dtype));
}

}  // namespace

std::pair<int32_t, int32_t> dlpack_device(Device device) {
  if (device.is_cuda()) return {dl::kCUDA, device.index < 0 ? 0 : device.index};
  KILN_CHECK_KIND(device.is_cpu(), ErrorKind::NotImplemented, "to_dlpack: a {} tensor has no DLPack device", device);
  return {dl::kCPU, 0};
}

PyObject* to_capsule(const Tensor& t, bool versioned) {
  KILN_CHECK(t.defined(), "to_dlpack: the tensor is undefined");
  return versioned ? make_capsule<dl::ManagedTensorVersioned>(t, kVersionedName)
                   : make_capsule<dl::ManagedTensor>(t, kLegacyName);
}

Tensor from_capsule(PyObject* capsule) {
  if (PyCapsule_IsValid(capsule, kVersionedName)) {
    auto* m = static_cast<dl::ManagedTensorVersioned*>(PyCapsule_GetPointer(capsule, kVersionedName));
    KILN_CHECK_KIND(m->version.major == 1, ErrorKind::NotImplemented,
                    "from_dlpack: DLPack version {}.{} is not supported (kiln reads 1.x)", m->version.major,
                    m->version.minor);
    // kiln tensors are writable: a read-only export (a NumPy array that is not writeable) is refused
    // rather than written through.
    KILN_CHECK_KIND(!(m->flags & dl::kFlagReadOnly), ErrorKind::NotImplemented,
                    "from_dlpack: the producer exported read-only memory; kiln tensors are writable (copy it first)");
    Tensor t = wrap(m->dl_tensor, [m](void*) {
      if (m->deleter) m->deleter(m);
    });
    PyCapsule_SetName(capsule, kUsedVersionedName);
    return t;
  }
  KILN_CHECK(PyCapsule_IsValid(capsule, kLegacyName),
             "from_dlpack: expected an unused DLPack capsule ('dltensor' or 'dltensor_versioned')");
  auto* m = static_cast<dl::ManagedTensor*>(PyCapsule_GetPointer(capsule, kLegacyName));
  Tensor t = wrap(m->dl_tensor, [m](void*) {
    if (m->deleter) m->deleter(m);
  });
  PyCapsule_SetName(capsule, kUsedLegacyName);
  return t;
}

}  // namespace kiln::python
