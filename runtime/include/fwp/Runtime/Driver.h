//===- Driver.h - The CUDA driver API, loaded at run time -------*- C++ -*-===//
//
// Why dlopen: the compiler, its tests and the CPU backends must build and run
// on machines without a GPU or a CUDA toolkit. So libcuda.so.1 is never
// linked at build time and cuda.h is never included; the few driver types and
// entry points used here are declared below, matching the driver ABI, and
// resolved with dlsym the first time anything asks for the driver. A machine
// without a driver then fails with a clear CudaError (or, through
// cudaUsable(), a reason to skip) instead of failing to load the program.
//
// The versioned entry points (cuMemAlloc_v2, ...) are resolved by name because
// the unversioned symbols keep their old 32-bit ABI for compatibility.
//
// The library is loaded once per process and never unloaded: unloading the
// driver while static destructors may still free device memory is unsafe.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_RUNTIME_DRIVER_H
#define FWP_RUNTIME_DRIVER_H

#include "fwp/Runtime/Error.h"

#include <cstddef>
#include <string>

// Opaque handle types, declared at global scope exactly as cuda.h declares
// them so that handles from the CUDA runtime (e.g. a PyTorch stream) convert.
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;

namespace fwp::rt {

using CUresult = int; // CUDA_SUCCESS is 0
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = ::CUctx_st *;
using CUmodule = ::CUmod_st *;
using CUfunction = ::CUfunc_st *;
using CUstream = ::CUstream_st *;
using CUjit_option = int;
using CUfunction_attribute = int;
using CUdevice_attribute = int;

// The few enumerators used, with their values from cuda.h.
constexpr CUresult kCudaSuccess = 0;
constexpr CUjit_option kJitInfoLogBuffer = 3;
constexpr CUjit_option kJitInfoLogBufferSizeBytes = 4;
constexpr CUjit_option kJitErrorLogBuffer = 5;
constexpr CUjit_option kJitErrorLogBufferSizeBytes = 6;
constexpr CUfunction_attribute kFuncAttrMaxDynamicSharedSizeBytes = 8;
constexpr CUdevice_attribute kDevAttrComputeCapabilityMajor = 75;
constexpr CUdevice_attribute kDevAttrComputeCapabilityMinor = 76;

/// Entry points of libcuda.so.1 used by the runtime.
struct Driver {
  CUresult (*cuInit)(unsigned flags);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *count);
  CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
  CUresult (*cuDeviceGetName)(char *name, int len, CUdevice device);
  CUresult (*cuDeviceGetAttribute)(int *value, CUdevice_attribute,
                                   CUdevice device);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
  CUresult (*cuCtxSetCurrent)(CUcontext ctx);
  CUresult (*cuCtxSynchronize)();
  CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
  CUresult (*cuStreamDestroy)(CUstream stream);
  CUresult (*cuStreamSynchronize)(CUstream stream);
  CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
  CUresult (*cuMemFree)(CUdeviceptr ptr);
  CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
  CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr dst, const void *src, size_t bytes,
                                CUstream stream);
  CUresult (*cuMemcpyDtoHAsync)(void *dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                CUstream stream);
  CUresult (*cuMemsetD8)(CUdeviceptr dst, unsigned char value, size_t bytes);
  CUresult (*cuMemsetD8Async)(CUdeviceptr dst, unsigned char value,
                              size_t bytes, CUstream stream);
  CUresult (*cuModuleLoadDataEx)(CUmodule *module, const void *image,
                                 unsigned numOptions, CUjit_option *options,
                                 void **optionValues);
  CUresult (*cuModuleUnload)(CUmodule module);
  CUresult (*cuModuleGetFunction)(CUfunction *function, CUmodule module,
                                  const char *name);
  CUresult (*cuFuncSetAttribute)(CUfunction function, CUfunction_attribute,
                                 int value);
  CUresult (*cuLaunchKernel)(CUfunction function, unsigned gridX,
                             unsigned gridY, unsigned gridZ, unsigned blockX,
                             unsigned blockY, unsigned blockZ,
                             unsigned sharedBytes, CUstream stream,
                             void **kernelParams, void **extra);
};

/// The driver, loaded and initialised (cuInit(0)) on first use; thread-safe.
/// Throws CudaError if libcuda.so.1 cannot be loaded, a symbol is missing,
/// cuInit fails or there is no CUDA device. A failure is remembered: later
/// calls throw the same error without retrying.
const Driver &driver();

/// True if the driver loads, a device exists and its primary context can be
/// retained. Never throws; on false, sets *whyNot (if given) to the reason.
bool cudaUsable(std::string *whyNot = nullptr);

/// "CUDA_ERROR_X (description)" for a result code.
std::string describeCudaResult(CUresult result);

/// Throws CudaError "<call> failed: CUDA_ERROR_X (description)" unless
/// `result` is success.
void checkCuda(CUresult result, const char *call);

} // namespace fwp::rt

#endif // FWP_RUNTIME_DRIVER_H
