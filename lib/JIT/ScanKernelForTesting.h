//===- ScanKernelForTesting.h - Scans and DPFP compiled alone ---*- C++ -*-===//
//
// Test-only: the bare scan of fwp/JIT/Scan.h under the names the scan tests
// use (uncached: each call compiles), and fwp.dpfp compiled alone, through
// the same fwp-to-cpu pipeline and engine as the whole module
// (CpuCompiler.h), so that the kernels can be checked against fwp::ref
// without the projections around them. Internal to lib/JIT: tests reach it
// with lib/JIT on their include path; no product code uses it.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_SCANKERNELFORTESTING_H
#define FWP_LIB_JIT_SCANKERNELFORTESTING_H

#include "fwp/JIT/Scan.h"

#include <cstdint>
#include <memory>

namespace fwp::jit::testing {

using ScanKernelDesc = fwp::jit::ScanDesc;
using fwp::jit::CompiledScan;

inline std::unique_ptr<CompiledScan> compileScan(const ScanKernelDesc &desc) {
  return compileScanUncached(desc);
}

/// fwp.dpfp alone, lowered by fwp-lower-dpfp (the maps that are not fused
/// into a scan), on `rows` vectors: k [rows, dInput] -> [rows, 2 dInput nu].
class CompiledDpfp {
public:
  virtual ~CompiledDpfp() = default;
  virtual void run(int64_t rows, const void *k, void *features) const = 0;
};

std::unique_ptr<CompiledDpfp> compileDpfp(int64_t dInput, int64_t nu,
                                          double eps, DType dtype);

} // namespace fwp::jit::testing

#endif // FWP_LIB_JIT_SCANKERNELFORTESTING_H
