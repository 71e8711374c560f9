//===- ChunkSize.h - The scan's chunk size: default and limit ---*- C++ -*-===//
//
// Written once, for the dialect's passes and pipelines, the JIT, the module,
// the C ABI (chunk_size 0) and the tools. No MLIR, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_CHUNKSIZE_H
#define FWP_CHUNKSIZE_H

#include <cstdint>

namespace fwp {

/// Steps per chunk of the scan where none is chosen. The workspace grows
/// with C (docs/delta-rule-math.md, section 6) and the triangular work with
/// C^2 per chunk, while smaller chunks lengthen the sequential pass over
/// them; 64 is where fla's kernels settle too.
constexpr int64_t kDefaultChunkSize = 64;

/// The largest chunk size accepted. The scan's workspaces hold
/// batch*heads*seqLen*chunkSize elements (fwp-tile-scan), so a chunk size in
/// the millions would exhaust memory instead of failing cleanly.
constexpr int64_t kMaxChunkSize = 4096;

} // namespace fwp

#endif // FWP_CHUNKSIZE_H
