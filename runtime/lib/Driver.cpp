//===- Driver.cpp - Loading libcuda.so.1 at run time ----------------------===//

#include "fwp/Runtime/Driver.h"
#include "fwp/Runtime/Cuda.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <initializer_list>
#include <memory>

namespace fwp::rt {
namespace {

const char *const kLibraryName = "libcuda.so.1";

/// Resolves the first of `names` the library exports into `fn`.
template <typename Fn>
void resolve(void *library, Fn &fn, std::initializer_list<const char *> names) {
  for (const char *name : names) {
    if (void *symbol = dlsym(library, name)) {
      fn = reinterpret_cast<Fn>(symbol);
      return;
    }
  }
  throw CudaError(fmt::format("CUDA driver too old: {} does not export {}",
                              kLibraryName, *names.begin()));
}

void *openLibrary() {
  void *library = dlopen(kLibraryName, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    throw CudaError(fmt::format("no CUDA driver: could not load {} ({})",
                                kLibraryName, why ? why : "unknown error"));
  }
  return library;
}

void resolveCore(void *lib, Driver &d) {
  resolve(lib, d.cuInit, {"cuInit"});
  resolve(lib, d.cuGetErrorName, {"cuGetErrorName"});
  resolve(lib, d.cuGetErrorString, {"cuGetErrorString"});
  resolve(lib, d.cuDeviceGetCount, {"cuDeviceGetCount"});
  resolve(lib, d.cuDeviceGet, {"cuDeviceGet"});
  resolve(lib, d.cuDeviceGetName, {"cuDeviceGetName"});
  resolve(lib, d.cuDeviceGetAttribute, {"cuDeviceGetAttribute"});
  resolve(lib, d.cuDevicePrimaryCtxRetain, {"cuDevicePrimaryCtxRetain"});
  resolve(lib, d.cuCtxSetCurrent, {"cuCtxSetCurrent"});
  resolve(lib, d.cuCtxSynchronize, {"cuCtxSynchronize"});
}

void resolveStreamsAndMemory(void *lib, Driver &d) {
  resolve(lib, d.cuStreamCreate, {"cuStreamCreate"});
  resolve(lib, d.cuStreamDestroy, {"cuStreamDestroy_v2", "cuStreamDestroy"});
  resolve(lib, d.cuStreamSynchronize, {"cuStreamSynchronize"});
  resolve(lib, d.cuMemAlloc, {"cuMemAlloc_v2"});
  resolve(lib, d.cuMemFree, {"cuMemFree_v2"});
  resolve(lib, d.cuMemcpyHtoD, {"cuMemcpyHtoD_v2"});
  resolve(lib, d.cuMemcpyDtoH, {"cuMemcpyDtoH_v2"});
  resolve(lib, d.cuMemcpyHtoDAsync, {"cuMemcpyHtoDAsync_v2"});
  resolve(lib, d.cuMemcpyDtoHAsync, {"cuMemcpyDtoHAsync_v2"});
  resolve(lib, d.cuMemcpyDtoDAsync, {"cuMemcpyDtoDAsync_v2"});
  resolve(lib, d.cuMemsetD8, {"cuMemsetD8_v2"});
  resolve(lib, d.cuMemsetD8Async, {"cuMemsetD8Async"});
}

void resolveModules(void *lib, Driver &d) {
  resolve(lib, d.cuModuleLoadDataEx, {"cuModuleLoadDataEx"});
  resolve(lib, d.cuModuleUnload, {"cuModuleUnload"});
  resolve(lib, d.cuModuleGetFunction, {"cuModuleGetFunction"});
  resolve(lib, d.cuFuncSetAttribute, {"cuFuncSetAttribute"});
  resolve(lib, d.cuLaunchKernel, {"cuLaunchKernel"});
}

std::unique_ptr<Driver> loadDriver() {
  void *library = openLibrary();
  auto d = std::make_unique<Driver>();
  resolveCore(library, *d);
  resolveStreamsAndMemory(library, *d);
  resolveModules(library, *d);
  return d;
}

/// The loaded driver, or the reason it could not be loaded.
struct DriverState {
  std::unique_ptr<Driver> driver;
  std::string error;
};

/// Kept apart from driver() so checkCuda can describe cuInit's failure.
std::atomic<const Driver *> loadedDriver{nullptr};

DriverState initialise() {
  DriverState state;
  try {
    state.driver = loadDriver();
    loadedDriver = state.driver.get();
    checkCuda(state.driver->cuInit(0), "cuInit");
    int count = 0;
    checkCuda(state.driver->cuDeviceGetCount(&count), "cuDeviceGetCount");
    if (count == 0)
      throw CudaError("no CUDA device: cuDeviceGetCount returned 0");
  } catch (const CudaError &e) {
    state.error = e.what();
  }
  return state;
}

} // namespace

const Driver &driver() {
  static const DriverState state = initialise(); // thread-safe (C++11)
  if (!state.error.empty())
    throw CudaError(state.error);
  return *state.driver;
}

bool cudaUsable(std::string *whyNot) {
  try {
    Context::primary();
    return true;
  } catch (const std::exception &e) {
    if (whyNot)
      *whyNot = e.what();
    return false;
  }
}

std::string describeCudaResult(CUresult result) {
  const char *name = nullptr, *text = nullptr;
  if (const Driver *d = loadedDriver.load()) {
    d->cuGetErrorName(result, &name);
    d->cuGetErrorString(result, &text);
  }
  std::string out = name ? name : fmt::format("CUresult {}", result);
  return text ? fmt::format("{} ({})", out, text) : out;
}

void checkCuda(CUresult result, const char *call) {
  if (result != kCudaSuccess)
    throw CudaError(
        fmt::format("{} failed: {}", call, describeCudaResult(result)));
}

} // namespace fwp::rt
