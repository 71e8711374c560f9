//===- FwpVocabulary.h - The vocabulary in the dialect's terms --*- C++ -*-===//
//
// What code that builds fwp IR (the JIT's module builders) needs to turn the
// vocabulary (fwp/Vocabulary.h: no MLIR) into attributes and types: the
// dialect's `delta` / `sum` enum, and element types.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_DIALECT_FWPVOCABULARY_H
#define FWP_DIALECT_FWPVOCABULARY_H

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Vocabulary.h"

#include "mlir/IR/Builders.h"

namespace fwp {

/// The dialect's rule (the attribute of fwp.scan, fwp.attention, ...).
inline Rule toDialectRule(UpdateRule rule) {
  return rule == UpdateRule::Delta ? Rule::Delta : Rule::Sum;
}

/// The MLIR element type of `dtype`'s buffers.
inline mlir::Type elementType(mlir::Builder &b, DType dtype) {
  switch (dtype) {
  case DType::F32:
    return b.getF32Type();
  case DType::F64:
    return b.getF64Type();
  case DType::BF16:
    return b.getBF16Type();
  case DType::F16:
    return b.getF16Type();
  }
  return {};
}

} // namespace fwp

#endif // FWP_DIALECT_FWPVOCABULARY_H
