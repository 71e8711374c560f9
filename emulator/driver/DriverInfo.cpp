//===- DriverInfo.cpp - Error names and device attributes -----------------===//

#include "DriverState.h"

#include <map>

namespace fwp::emu::driver {
namespace {

struct ErrorText {
  const char *name, *text;
};

/// The codes the stand-in returns, with cuda.h's names and the driver's
/// descriptions.
const std::map<CUresult, ErrorText> &errors() {
  static const std::map<CUresult, ErrorText> table = {
      {0, {"CUDA_SUCCESS", "no error"}},
      {1, {"CUDA_ERROR_INVALID_VALUE", "invalid argument"}},
      {2, {"CUDA_ERROR_OUT_OF_MEMORY", "out of memory"}},
      {3, {"CUDA_ERROR_NOT_INITIALIZED", "initialization error"}},
      {100, {"CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"}},
      {101, {"CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"}},
      {201, {"CUDA_ERROR_INVALID_CONTEXT", "invalid device context"}},
      {218, {"CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"}},
      {400, {"CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"}},
      {500, {"CUDA_ERROR_NOT_FOUND", "named symbol not found"}},
      {700,
       {"CUDA_ERROR_ILLEGAL_ADDRESS",
        "an illegal memory access was encountered"}},
      {701,
       {"CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
        "too many resources requested for launch"}},
      {715,
       {"CUDA_ERROR_ILLEGAL_INSTRUCTION",
        "an illegal instruction was encountered"}},
      {716, {"CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"}},
      {719, {"CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"}},
      {801, {"CUDA_ERROR_NOT_SUPPORTED", "operation not supported"}},
  };
  return table;
}

} // namespace

CUresult errorName(CUresult error, const char **name) {
  auto it = errors().find(error);
  if (!name || it == errors().end())
    return kInvalidValue;
  *name = it->second.name;
  return kSuccess;
}

CUresult errorString(CUresult error, const char **text) {
  auto it = errors().find(error);
  if (!text || it == errors().end())
    return kInvalidValue;
  *text = it->second.text;
  return kSuccess;
}

/// The attributes (cuda.h's CU_DEVICE_ATTRIBUTE_*) of an sm_80 or sm_90
/// with one multiprocessor: what the emulator enforces.
CUresult deviceAttribute(const Chip &chip, int attribute, int &value) {
  switch (attribute) {
  case 1: // MAX_THREADS_PER_BLOCK
    value = int(chip.maxThreadsPerBlock);
    return kSuccess;
  case 2: // MAX_BLOCK_DIM_X
  case 3: // MAX_BLOCK_DIM_Y
    value = 1024;
    return kSuccess;
  case 4: // MAX_BLOCK_DIM_Z
    value = 64;
    return kSuccess;
  case 5: // MAX_GRID_DIM_X
    value = 2147483647;
    return kSuccess;
  case 6: // MAX_GRID_DIM_Y
  case 7: // MAX_GRID_DIM_Z
    value = 65535;
    return kSuccess;
  case 8: // MAX_SHARED_MEMORY_PER_BLOCK
    value = int(chip.defaultSharedPerBlock);
    return kSuccess;
  case 10: // WARP_SIZE
    value = 32;
    return kSuccess;
  case 16: // MULTIPROCESSOR_COUNT
    value = 1;
    return kSuccess;
  case 75: // COMPUTE_CAPABILITY_MAJOR
    value = int(chip.sm / 10);
    return kSuccess;
  case 76: // COMPUTE_CAPABILITY_MINOR
    value = int(chip.sm % 10);
    return kSuccess;
  case 97: // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    value = int(chip.maxSharedPerBlock);
    return kSuccess;
  default:
    return kInvalidValue;
  }
}

} // namespace fwp::emu::driver
