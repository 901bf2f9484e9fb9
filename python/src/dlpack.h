// DLPack, the C ABI through which array libraries share memory without copies: the struct layouts
// of its specification (dmlc/dlpack, version 0.8 "dltensor" capsules and 1.x "dltensor_versioned"
// ones), and the conversions between a kiln Tensor and a capsule. kiln's Python module reaches
// PyTorch only through them: `torch.from_dlpack(kiln_tensor)` and `kiln.from_dlpack(torch_tensor)`
// share the memory, keep strides and offsets, and keep the producer's memory alive until the
// consumer lets go.
#pragma once

#include <Python.h>

#include <cstdint>

#include "kiln/ops/tensor.h"

namespace kiln::python {

namespace dl {
// The specification's enums (only the values kiln reads or writes).
enum DeviceType : int32_t { kCPU = 1, kCUDA = 2, kCUDAHost = 3 };
enum TypeCode : uint8_t { kInt = 0, kUInt = 1, kFloat = 2, kBfloat = 4, kComplex = 5, kBool = 6 };

struct Device {
  int32_t device_type;
  int32_t device_id;
};
struct DataType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct Tensor {
  void* data;
  Device device;
  int32_t ndim;
  DataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; null means compact row-major
  uint64_t byte_offset;
};
struct ManagedTensor {  // "dltensor" capsules
  Tensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(ManagedTensor* self);
};
struct Version {
  uint32_t major;
  uint32_t minor;
};
struct ManagedTensorVersioned {  // "dltensor_versioned" capsules (DLPack 1.0)
  Version version;
  void* manager_ctx;
  void (*deleter)(ManagedTensorVersioned* self);
  uint64_t flags;  // bit 0: read only; bit 1: is a copy
  Tensor dl_tensor;
};
inline constexpr uint64_t kFlagReadOnly = 1;
}  // namespace dl

// A capsule sharing `t`'s memory: "dltensor_versioned" (DLPack 1.0) when `versioned`, else the
// legacy "dltensor". The capsule keeps `t`'s storage alive until its consumer calls the deleter
// (or, unconsumed, until the capsule is collected).
PyObject* to_capsule(const Tensor& t, bool versioned);

// A kiln Tensor over the memory of a DLPack capsule (either kind), which is marked consumed; the
// producer's deleter runs when the last kiln tensor over that memory lets go. Throws kiln::Error for
// a device, dtype or layout kiln cannot hold (naming it), or an object that is no unused capsule.
Tensor from_capsule(PyObject* capsule);

// The DLPack device pair (type, id) of a kiln device.
std::pair<int32_t, int32_t> dlpack_device(Device device);

}  // namespace kiln::python
