//===- CudaDriver.cpp - libcuda.so.1 on the PTX emulator ------------------===//
//
// The driver entry points fwp's runtime resolves, with the CUDA driver's
// signatures and result codes, implemented on the emulator. A program picks
// this library with LD_LIBRARY_PATH=<build>/lib/emulated-cuda; nothing in the
// program changes. Entry points other CUDA users ask for first
// (cuDriverGetVersion, cuGetProcAddress) answer cleanly that there is no GPU.
//
//===----------------------------------------------------------------------===//

#include "DriverState.h"

#include <algorithm>
#include <cstring>
#include <string>

using namespace fwp::emu;
using namespace fwp::emu::driver;

extern "C" {

__attribute__((visibility("default"))) CUresult cuInit(unsigned flags) {
  if (flags != 0)
    return kInvalidValue;
  State &state = State::get();
  Lock lock(state.mutex);
  if (!state.initialised) {
    for (int i = 0; i < settings().devices; ++i) {
      auto device = std::make_unique<Device>();
      device->ordinal = i;
      device->chip = Chip::forSm(settings().sm);
      state.devices.push_back(std::move(device));
    }
    state.initialised = true;
  }
  return state.devices.empty() ? kNoDevice : kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuDriverGetVersion(int *version) {
  if (!version)
    return kInvalidValue;
  *version = 12080;
  return kSuccess;
}

/// A CUDA runtime (PyTorch's) looks its entry points up here: it gets none,
/// and reports that no usable driver is present instead of calling into an
/// emulator that does not implement it.
__attribute__((visibility("default"))) CUresult
cuGetProcAddress(const char *, void **function, int, uint64_t) {
  if (function)
    *function = nullptr;
  return kNotFound;
}
__attribute__((visibility("default"))) CUresult
cuGetProcAddress_v2(const char *, void **function, int, uint64_t, int *found) {
  if (function)
    *function = nullptr;
  if (found)
    *found = 0;
  return kNotFound;
}

__attribute__((visibility("default"))) CUresult
cuGetErrorName(CUresult error, const char **name) {
  return errorName(error, name);
}

__attribute__((visibility("default"))) CUresult
cuGetErrorString(CUresult error, const char **text) {
  return errorString(error, text);
}

__attribute__((visibility("default"))) CUresult cuDeviceGetCount(int *count) {
  State &state = State::get();
  Lock lock(state.mutex);
  if (!state.initialised)
    return kNotInitialized;
  if (!count)
    return kInvalidValue;
  *count = int(state.devices.size());
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuDeviceGet(int *device,
                                                            int ordinal) {
  State &state = State::get();
  Lock lock(state.mutex);
  if (!state.initialised)
    return kNotInitialized;
  if (!device)
    return kInvalidValue;
  if (ordinal < 0 || size_t(ordinal) >= state.devices.size())
    return kInvalidDevice;
  *device = ordinal;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuDeviceGetName(char *name, int length, int device) {
  State &state = State::get();
  Lock lock(state.mutex);
  if (!name || length <= 0)
    return kInvalidValue;
  if (device < 0 || size_t(device) >= state.devices.size())
    return kInvalidDevice;
  std::string text =
      "fwp PTX emulator (sm_" + std::to_string(settings().sm) + ")";
  std::strncpy(name, text.c_str(), size_t(length));
  name[length - 1] = '\0';
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuDeviceGetAttribute(int *value, int attribute, int device) {
  State &state = State::get();
  Lock lock(state.mutex);
  if (!value)
    return kInvalidValue;
  if (device < 0 || size_t(device) >= state.devices.size())
    return kInvalidDevice;
  return deviceAttribute(state.devices[size_t(device)]->chip, attribute,
                         *value);
}

__attribute__((visibility("default"))) CUresult
cuDevicePrimaryCtxRetain(Context **context, int device) {
  State &state = State::get();
  Lock lock(state.mutex);
  if (!state.initialised)
    return kNotInitialized;
  if (!context)
    return kInvalidValue;
  if (device < 0 || size_t(device) >= state.devices.size())
    return kInvalidDevice;
  *context = &state.devices[size_t(device)]->primary;
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuCtxSetCurrent(Context *context) {
  setCurrentContext(context);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult cuCtxSynchronize() {
  FWP_CURRENT_DEVICE(device);
  return State::get().drain(nullptr, device);
}

__attribute__((visibility("default"))) CUresult cuStreamCreate(Stream **stream,
                                                               unsigned) {
  FWP_CURRENT_DEVICE(device);
  if (!stream)
    return kInvalidValue;
  State &state = State::get();
  state.streams.push_back(std::make_unique<Stream>(Stream{device, {}}));
  *stream = state.streams.back().get();
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuStreamDestroy_v2(Stream *stream) {
  State &state = State::get();
  Lock lock(state.mutex);
  auto it = std::find_if(state.streams.begin(), state.streams.end(),
                         [&](auto &s) { return s.get() == stream; });
  if (it == state.streams.end())
    return kInvalidHandle;
  state.drain(stream, stream->device); // pending work still runs
  state.streams.erase(it);
  return kSuccess;
}

__attribute__((visibility("default"))) CUresult
cuStreamSynchronize(Stream *stream) {
  FWP_CURRENT_DEVICE(device);
  return State::get().drain(stream, device);
}

} // extern "C"
