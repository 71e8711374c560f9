//===- HostObjects.h - LLVM IR to a host shared object ----------*- C++ -*-===//
//
// The LLVM half of a CPU compile: optimise a module for the host, generate
// its object code on every core, link a shared object. Internal to lib/JIT.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_HOSTOBJECTS_H
#define FWP_LIB_JIT_HOSTOBJECTS_H

#include "CompileSupport.h"

#include "llvm/IR/Module.h"
#include "llvm/Support/CodeGen.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fwp::jit {

/// The host's target machine; position-independent code when it is for a
/// shared object.
std::unique_ptr<llvm::TargetMachine>
hostTargetMachine(const Failure &fail, bool positionIndependent = false,
                  llvm::CodeGenOptLevel level = llvm::CodeGenOptLevel::Default);

/// Optimises `module` at LLVM level `optLevel` (0-3) for the host and links
/// its object code into `outputDir`/kernel.so, the module split by functions
/// into one part per core (up to 8), each optimised and compiled on a
/// thread of its own. Appends the seconds spent to `stages` ("split",
/// "llvm", "link").
void buildSharedObject(std::unique_ptr<llvm::Module> module, int optLevel,
                       const std::string &outputDir, const Failure &fail,
                       std::vector<std::pair<std::string, double>> &stages);

} // namespace fwp::jit

#endif // FWP_LIB_JIT_HOSTOBJECTS_H
