#include "python/src/dlpack.h"

#include <memory>
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

DType from_dl(dl::DataType t) {
  KILN_CHECK_TYPE(t.lanes == 1, "from_dlpack: vector types (lanes={}) are not supported", t.lanes);
  switch (t.code) {
    case dl::kBool:
      if (t.bits == 8) return DType::Bool;
      break;
    case dl::kUInt:
      if (t.bits == 8) return DType::UInt8;
      break;
    case dl::kInt:
      if (t.bits == 8) return DType::Int8;
      if (t.bits == 16) return DType::Int16;
      if (t.bits == 32) return DType::Int32;
      if (t.bits == 64) return DType::Int64;
      break;
    case dl::kFloat:
      if (t.bits == 16) return DType::Float16;
      if (t.bits == 32) return DType::Float32;
      if (t.bits == 64) return DType::Float64;
      break;
    case dl::kBfloat:
      if (t.bits == 16) return DType::BFloat16;
      break;
    case dl::kComplex:
      if (t.bits == 64) return DType::ComplexFloat;
      if (t.bits == 128) return DType::ComplexDouble;
      break;
    default: break;
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
  if (versioned) {
    auto e = std::make_unique<Export<dl::ManagedTensorVersioned>>();
    e->tensor = t;
    fill(*e);
    e->managed.version = {1, 0};
    e->managed.flags = 0;
    PyObject* capsule = PyCapsule_New(&e->managed, kVersionedName, &capsule_destructor<dl::ManagedTensorVersioned>);
    if (capsule) e.release();
    return capsule;
  }
  auto e = std::make_unique<Export<dl::ManagedTensor>>();
  e->tensor = t;
  fill(*e);
  PyObject* capsule = PyCapsule_New(&e->managed, kLegacyName, &capsule_destructor<dl::ManagedTensor>);
  if (capsule) e.release();
  return capsule;
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
