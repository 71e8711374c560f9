//===- KnownAlignment.h - Powers of two that divide index values -*- C++
//-*-===//
//
// For fwp-products-to-mma's wide copies: whether each row of a memref view
// starts a whole number of vectors into a buffer the runtime allocates
// (cuMemAlloc, or the caller's allocator: 256-byte aligned, CApi.h). Index
// values are followed through constants, arith and affine arithmetic and
// loop induction variables to the largest power of two known to divide
// them; views through subview and expand_shape to their allocation.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_CONVERSION_KNOWNALIGNMENT_H
#define FWP_LIB_CONVERSION_KNOWNALIGNMENT_H

#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/Value.h"

namespace fwp {

/// The largest power of two (at most 2^20) that divides every value `value`
/// may take; 1 where nothing is known.
int64_t knownPowerOfTwoDivisor(mlir::OpFoldResult value);

/// Whether `view` (2-d, unit inner stride) is a view of a memref.alloc
/// whose every row starts at a multiple of `elements` elements from the
/// allocation's start.
bool rowsStartAligned(mlir::Value view, int64_t elements);

} // namespace fwp

#endif // FWP_LIB_CONVERSION_KNOWNALIGNMENT_H
