#include "kiln/core/storage.h"

namespace kiln {

Ref<StorageImpl> StorageImpl::allocate(size_t nbytes, Device device) {
  Allocator* alloc = allocator_for(device);
  void* data = alloc->allocate(nbytes);
  return Ref<StorageImpl>(new StorageImpl(data, nbytes, device, alloc, {}));
}

Ref<StorageImpl> StorageImpl::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter) {
  return Ref<StorageImpl>(new StorageImpl(data, nbytes, device, nullptr, std::move(deleter)));
}

StorageImpl::~StorageImpl() {
  if (allocator_) {
    allocator_->deallocate(data_, nbytes_);
  } else if (deleter_) {
    deleter_(data_);
  }
}

}  // namespace kiln
