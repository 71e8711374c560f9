//===- WorkgroupMemory.h - A GPU kernel's shared memory ---------*- C++ -*-===//
//
// What the GPU's lowerings of a kernel share about its workgroup (shared)
// memory: the kernel-local tiles fwp-tile-scan and fwp-gpu-tiles leave as
// memref.alloca in workgroup memory (the state of scan_state), and the
// module-level buffers that hold them and fwp-products-to-mma's staged
// operands. Static shared memory is 48 KiB a block; the two together stay
// within it.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_WORKGROUPMEMORY_H
#define FWP_LIB_CONVERSION_WORKGROUPMEMORY_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace fwp {

/// The static shared memory of a GPU block.
constexpr int64_t kWorkgroupBytes = 48 * 1024;

/// Whether `type` (a memref) is in the GPU's workgroup memory.
bool isWorkgroupMemory(mlir::Type type);

/// The kernel-local tiles of `kernel` in workgroup memory (memref.alloca).
llvm::SmallVector<mlir::memref::AllocaOp>
localWorkgroupTiles(mlir::scf::ForallOp kernel);

/// The bytes of workgroup memory `kernel`'s local tiles take.
int64_t localWorkgroupBytes(mlir::scf::ForallOp kernel);

/// A module-level workgroup memref.global of `type` (identity layout),
/// named fwp_<kind>_<kernel name>, 16-byte aligned (cp.async and ldmatrix
/// move 16-byte rows), and its memref.get_global at the start of
/// `kernel`'s body.
mlir::Value createWorkgroupBuffer(mlir::scf::ForallOp kernel,
                                  llvm::StringRef kind, mlir::MemRefType type);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_WORKGROUPMEMORY_H
