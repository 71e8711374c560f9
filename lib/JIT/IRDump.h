//===- IRDump.h - Write the IR after every stage ----------------*- C++ -*-===//
//
// For `fwp-run --dump-ir DIR` (CompileOptions::dumpDirectory): the module
// before the pipeline and after each of its passes, one numbered file each
// ("00-input.mlir", "01-fwp-decompose-attention.mlir", ...), and any other
// product of a compilation (PTX, launch plans). Internal to lib/JIT.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_IRDUMP_H
#define FWP_LIB_JIT_IRDUMP_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace fwp::jit {

/// Writes `module` to DIR/00-input.mlir and, while `pm` runs, the module
/// after each pass to DIR/NN-<pass>.mlir. Does nothing for an empty `dir`.
/// Throws std::runtime_error naming a file that cannot be written.
void dumpEveryStage(mlir::PassManager &pm, mlir::ModuleOp module,
                    const std::string &dir);

/// Writes `text` to DIR/NAME (creating DIR); throws naming the file.
void writeDumpFile(const std::string &dir, const std::string &name,
                   const std::string &text);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_IRDUMP_H
