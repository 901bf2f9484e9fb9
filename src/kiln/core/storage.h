// Storage: one allocation of device memory, shared by every tensor that views it. Tensors add
// sizes, strides and an offset on top; a Storage knows only bytes, its device and its allocator.
#pragma once

#include <cstddef>
#include <functional>

#include "kiln/core/allocator.h"
#include "kiln/support/ref_counted.h"

namespace kiln {

class StorageImpl final : public RefCounted {
 public:
  // Allocates `nbytes` on `device` with that device's allocator.
  static Ref<StorageImpl> allocate(size_t nbytes, Device device);
  // Wraps memory kiln does not own; `deleter` (may be empty) runs when the last tensor lets go.
  static Ref<StorageImpl> wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter);

  // Makes the storage at least `nbytes` long, keeping its bytes (resize_): every tensor viewing it
  // sees the new memory. Throws kiln::Error for memory kiln does not own.
  void grow(size_t nbytes);

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  StorageImpl(void* data, size_t nbytes, Device device, Allocator* alloc, std::function<void(void*)> deleter)
      : data_(data), nbytes_(nbytes), device_(device), allocator_(alloc), deleter_(std::move(deleter)) {}
  ~StorageImpl() override;

  void* data_;
  size_t nbytes_;
  Device device_;
  Allocator* allocator_;  // null for wrapped memory
  std::function<void(void*)> deleter_;
};

}  // namespace kiln
