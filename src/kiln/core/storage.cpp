#include "kiln/core/storage.h"

#include <cstring>

#include "kiln/support/error.h"

namespace kiln {

Ref<StorageImpl> StorageImpl::allocate(size_t nbytes, Device device) {
  Allocator* alloc = allocator_for(device);
  void* data = alloc->allocate(nbytes);
  return Ref<StorageImpl>(new StorageImpl(data, nbytes, device, alloc, {}));
}

Ref<StorageImpl> StorageImpl::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter) {
  return Ref<StorageImpl>(new StorageImpl(data, nbytes, device, nullptr, std::move(deleter)));
}

void StorageImpl::grow(size_t nbytes) {
  if (nbytes <= nbytes_) return;
  KILN_CHECK(allocator_ != nullptr,
             "resize_: trying to resize storage that is not resizable (memory of {} bytes that "
             "kiln does not own) to {} bytes",
             nbytes_, nbytes);
  KILN_CHECK(device_.type != DeviceType::CUDA, "resize_: growing a {} storage is not supported", device_);
  void* data = allocator_->allocate(nbytes);
  if (nbytes_ > 0 && device_.type == DeviceType::CPU) std::memcpy(data, data_, nbytes_);
  allocator_->deallocate(data_, nbytes_);
  data_ = data;
  nbytes_ = nbytes;
}

StorageImpl::~StorageImpl() {
  if (allocator_) {
    allocator_->deallocate(data_, nbytes_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace kiln
