//===- CudaMemory.cpp - Allocations, copies and memsets -------------------===//
//
// Synchronous copies wait for every stream of the device first (the legacy
// default stream's rule); asynchronous ones run in their stream's order, in
// the deferred mode only when the stream is synchronised, so that a host
// buffer read before then shows the missing synchronisation.
//
//===----------------------------------------------------------------------===//

#include "DriverState.h"

using namespace fwp::emu;
using namespace fwp::emu::driver;

namespace {

/// Runs `copy` after everything queued on the device.
template <typename F> CUresult synchronous(Device *device, F copy) {
  if (CUresult status = State::get().drain(nullptr, device); status != kSuccess)
    return status;
  return copy() ? kSuccess : kInvalidValue;
}

template <typename F>
CUresult asynchronous(Device *device, Stream *stream, F copy) {
  return State::get().submit(
      stream, device, [copy] { return copy() ? kSuccess : kInvalidValue; });
}

} // namespace

extern "C" {

__attribute__((visibility("default"))) CUresult cuMemAlloc_v2(uint64_t *pointer,
                                                              size_t bytes) {
  FWP_CURRENT_DEVICE(device);
  if (!pointer || bytes == 0)
    return kInvalidValue;
  *pointer = device->memory.allocate(bytes);
  return *pointer ? kSuccess : kOutOfMemory;
}

__attribute__((visibility("default"))) CUresult cuMemFree_v2(uint64_t pointer) {
  FWP_CURRENT_DEVICE(device);
  if (pointer == 0)
    return kSuccess;
  State::get().drain(nullptr, device);
  return device->memory.release(pointer) ? kSuccess : kInvalidValue;
}

__attribute__((visibility("default"))) CUresult
cuMemcpyHtoD_v2(uint64_t dst, const void *src, size_t bytes) {
  FWP_CURRENT_DEVICE(device);
  return synchronous(device,
                     [&] { return device->memory.copyIn(dst, src, bytes); });
}

__attribute__((visibility("default"))) CUresult
cuMemcpyDtoH_v2(void *dst, uint64_t src, size_t bytes) {
  FWP_CURRENT_DEVICE(device);
  return synchronous(device,
                     [&] { return device->memory.copyOut(dst, src, bytes); });
}

__attribute__((visibility("default"))) CUresult
cuMemcpyHtoDAsync_v2(uint64_t dst, const void *src, size_t bytes,
                     Stream *stream) {
  FWP_CURRENT_DEVICE(device);
  DeviceMemory *memory = &device->memory;
  return asynchronous(device, stream,
                      [=] { return memory->copyIn(dst, src, bytes); });
}

__attribute__((visibility("default"))) CUresult
cuMemcpyDtoHAsync_v2(void *dst, uint64_t src, size_t bytes, Stream *stream) {
  FWP_CURRENT_DEVICE(device);
  DeviceMemory *memory = &device->memory;
  return asynchronous(device, stream,
                      [=] { return memory->copyOut(dst, src, bytes); });
}

__attribute__((visibility("default"))) CUresult
cuMemcpyDtoDAsync_v2(uint64_t dst, uint64_t src, size_t bytes, Stream *stream) {
  FWP_CURRENT_DEVICE(device);
  DeviceMemory *memory = &device->memory;
  return asynchronous(device, stream,
                      [=] { return memory->copyWithin(dst, src, bytes); });
}

__attribute__((visibility("default"))) CUresult
cuMemsetD8_v2(uint64_t dst, unsigned char value, size_t bytes) {
  FWP_CURRENT_DEVICE(device);
  return synchronous(device,
                     [&] { return device->memory.fill(dst, value, bytes); });
}

__attribute__((visibility("default"))) CUresult
cuMemsetD8Async(uint64_t dst, unsigned char value, size_t bytes,
                Stream *stream) {
  FWP_CURRENT_DEVICE(device);
  DeviceMemory *memory = &device->memory;
  return asynchronous(device, stream,
                      [=] { return memory->fill(dst, value, bytes); });
}

} // extern "C"
