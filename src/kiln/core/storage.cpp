#include "kiln/core/storage.h"

#include "kiln/core/device_hooks.h"
#include "kiln/support/error.h"

namespace kiln {

Ref<StorageImpl> StorageImpl::allocate(size_t nbytes, Device device) {
  // A storage's device has an explicit index ("cuda" is the current one), so devices compare equal.
  Device d = resolve_device(device, "allocate");
  Allocator* alloc = allocator_for(d);
  void* data = alloc->allocate(nbytes);
  return Ref<StorageImpl>(new StorageImpl(data, nbytes, d, alloc, {}));
}

Ref<StorageImpl> StorageImpl::wrap(void* data, size_t nbytes, Device device, std::function<void(void*)> deleter) {
  // Memory from elsewhere (DLPack) names its device; only "cuda" without an index needs the hooks.
  Device d = device.index < 0 ? resolve_device(device, "wrap") : device;
  return Ref<StorageImpl>(new StorageImpl(data, nbytes, d, nullptr, std::move(deleter)));
}

void StorageImpl::grow(size_t nbytes) {
  if (nbytes <= nbytes_) return;
  KILN_CHECK(allocator_ != nullptr,
             "resize_: trying to resize storage that is not resizable (memory of {} bytes that "
             "kiln does not own) to {} bytes",
             nbytes_, nbytes);
  void* data = allocator_->allocate(nbytes);
  if (!device_.is_meta()) copy_bytes(data, device_, data_, device_, nbytes_, "resize_");
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
