//===- LaunchPlan.h - Compiled GPU modules as launch plans ------*- C++ -*-===//
//
// After fwp-to-ptx a module holds one gpu.binary per kernel and a host
// function that allocates, computes sizes and launches. exportLaunchPlan
// turns that host function into the runtime's launch plan (rt::Plan,
// docs/launch-plan.md) and collects the PTX of every binary, so that the
// runtime can run the module without MLIR. The plan is built as a structure;
// its text, where one is needed, is rt::Plan::str().
//
//===----------------------------------------------------------------------===//

#ifndef FWP_TARGET_LAUNCHPLAN_H
#define FWP_TARGET_LAUNCHPLAN_H

#include "fwp/Runtime/Plan.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>

namespace fwp {

struct ExportedPlan {
  /// Named after the function (errors of running it start "<function>:");
  /// lines numbered as Plan::str() prints them.
  rt::Plan plan;
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
