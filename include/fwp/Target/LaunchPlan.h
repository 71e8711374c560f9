//===- LaunchPlan.h - Export compiled GPU modules as launch plans -*- C++
//-*-===//
//
// After fwp-to-ptx a module holds one gpu.binary per kernel and a host
// function that allocates, computes sizes and launches. exportLaunchPlan
// writes that host function as a launch plan (docs/launch-plan.md) and
// collects the PTX of every binary, so that the runtime can run the module
// without MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TARGET_LAUNCHPLAN_H
#define FWP_TARGET_LAUNCHPLAN_H

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace fwp {

struct ExportedPlan {
  std::string plan;                       // docs/launch-plan.md, version 1
  std::map<std::string, std::string> ptx; // gpu.binary name -> PTX text
};

/// Exports host function `function` of `module` (the output of fwp-to-ptx,
/// with affine maps lowered). Host operations outside the plan's vocabulary
/// get a diagnostic naming them.
mlir::FailureOr<ExportedPlan> exportLaunchPlan(mlir::ModuleOp module,
                                               llvm::StringRef function,
                                               unsigned indexBits);

} // namespace fwp

#endif // FWP_TARGET_LAUNCHPLAN_H
