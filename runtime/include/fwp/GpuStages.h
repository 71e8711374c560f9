//===- GpuStages.h - Which kernels the GPU's scan takes ---------*- C++ -*-===//
//
// The GPU's scan is lowered two ways: fwp-tile-scan's kernels (scan_prepare,
// scan_state, ...) or the chunk operations' kernels (chunk_wy,
// chunk_states_output, ...: the CPU's lowering, less fused). Where
// nothing else is asked for (fwp-to-ptx's gpu-stages, the JIT's
// CompileOptions::gpuStages, ScanDesc::gpuStages), the build decides:
// tile-scan's, unless configured with -DFWP_GPU_STAGES_BY_DEFAULT=ON, so that
// a GPU bundle of either kind comes from one tree. Written once, for the
// pipelines, the JIT and the runtime's cache keys. No MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_GPUSTAGES_H
#define FWP_GPUSTAGES_H

namespace fwp {

#ifdef FWP_GPU_STAGES_BY_DEFAULT
constexpr bool kDefaultGpuStages = true;
#else
constexpr bool kDefaultGpuStages = false;
#endif

} // namespace fwp

#endif // FWP_GPUSTAGES_H
