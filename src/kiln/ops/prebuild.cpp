#include "kiln/ops/prebuild.h"

#include "kiln/support/error.h"

namespace kiln {

OpAttr<Prebuild>& prebuild_attr(DispatchKey key) {
  KILN_CHECK_KIND(is_backend_key(key), ErrorKind::Internal, "prebuild_attr: {} is not a backend",
                  dispatch_key_name(key));
  static OpAttr<Prebuild> meta("prebuild.meta"), cpu("prebuild.cpu"), cuda("prebuild.cuda");
  return key == DispatchKey::Meta ? meta : key == DispatchKey::CPU ? cpu : cuda;
}

}  // namespace kiln
