//===- KernelTiles.h - The static tiles a kernel makes ----------*- C++ -*-===//
//
// What fwp-stack-tiles (the CPU) and fwp-gpu-tiles (the GPU) ask of the
// buffers bufferization gives a kernel's tiles before they move them out
// of the heap.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_KERNELTILES_H
#define FWP_LIB_CONVERSION_KERNELTILES_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

namespace fwp {

/// The bytes of a static memref.
int64_t bytesOf(mlir::MemRefType type);

/// Whether the buffer of `alloc` (or a view of it) leaves the block that
/// allocates it other than through operations that read or write it: yielded
/// by a loop or a branch, returned, or stored as a value.
bool escapes(mlir::memref::AllocOp alloc);

/// Whether every loop between `alloc` and `kernel` is an scf.for, whose
/// iterations run one after the other and can share the tile.
bool onlyForLoopsBetween(mlir::memref::AllocOp alloc,
                         mlir::scf::ForallOp kernel);

/// The static, identity-layout tiles `kernel` allocates that stay in their
/// block and that any iteration of the loops around them may reuse: those
/// a kernel may make once, at the start of its body.
llvm::SmallVector<mlir::memref::AllocOp>
reusableTiles(mlir::scf::ForallOp kernel);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_KERNELTILES_H
