// Work an op's kernel does once per kind of call on a device, done ahead of the first call: a kernel
// built just in time (kiln::attention's flash kernel on CUDA, compiled by NVRTC for the variant its
// arguments pick). The compiler calls an op's prebuild for each call of it that a graph compiled
// for that device leaves outside generated code, with the call's arguments (tensors as meta
// tensors of their sizes, strides and dtypes), while it builds the graph's own kernels: the first
// run of the compiled graph then finds the kernel built and loaded.
#pragma once

#include <functional>

#include "kiln/core/device.h"
#include "kiln/ops/dispatch_key.h"
#include "kiln/ops/op_attr.h"
#include "kiln/ops/value.h"

namespace kiln {

// `args`: the call's arguments, tensors on the meta device; `device`: where the call will run. A
// prebuild may throw (no such device, a shape the kernel refuses): the call itself reports it.
using Prebuild = std::function<void(const Stack& args, Device device)>;

// The prebuilds of the backend `key`'s kernels (DispatchKey::CUDA).
OpAttr<Prebuild>& prebuild_attr(DispatchKey key);

}  // namespace kiln
