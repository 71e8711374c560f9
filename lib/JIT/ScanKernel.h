//===- ScanKernel.h - Compiling the bare scan -------------------*- C++ -*-===//
//
// The MLIR side of Scan.cpp (ScanModule.cpp): what it compiles into a disk
// cache entry. Internal to lib/JIT, not installed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_SCANKERNEL_H
#define FWP_LIB_JIT_SCANKERNEL_H

#include "fwp/JIT/Scan.h"

#include <string>

namespace fwp::jit {

constexpr const char *kScanForwardName = "fwp_scan";
constexpr const char *kScanBackwardName = "fwp_scan_grad";

/// Bytes of the states of B x H sequences ([B, H, d_v, D]); the sizes are
/// checked before.
inline size_t scanStateBytes(const ScanDesc &desc, int64_t batch,
                             int64_t heads) {
  return static_cast<size_t>(batch * heads * desc.dValue * desc.dFeature()) *
         rt::dtypeBytes(desc.dtype);
}

/// Backend::Cpu: both functions into `<dir>/kernel.so`, with the manifest
/// (key `key`). Throws std::runtime_error with the diagnostics on failure.
void compileCpuScan(const ScanDesc &desc, const std::string &key,
                    const std::string &dir);

/// Backend::Cuda: the function of `entry` as a launch plan and its PTX in
/// `dir`, with the manifest. Needs no GPU.
void compileCudaScan(const ScanDesc &desc, EntryPoint entry,
                     const std::string &key, const std::string &dir);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_SCANKERNEL_H
