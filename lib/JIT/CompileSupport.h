//===- CompileSupport.h - What every JIT compilation needs ------*- C++ -*-===//
//
// A fresh MLIR context per compilation (independent compilations never
// share one) with fwp and everything its pipelines need, diagnostics
// collected instead of printed, and one way to report a failed stage.
// Internal to lib/JIT (FwpJIT), not installed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_COMPILESUPPORT_H
#define FWP_LIB_JIT_COMPILESUPPORT_H

#include "fwp/Runtime/ElementType.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"

#include <chrono>
#include <memory>
#include <string>

namespace fwp::jit {

/// Collects every diagnostic emitted on a context while alive, so that a
/// failure can be reported with the MLIR messages instead of printing them
/// to stderr.
class DiagnosticCollector {
public:
  explicit DiagnosticCollector(mlir::MLIRContext &ctx)
      : handler(&ctx, [this](mlir::Diagnostic &diag) {
          append(diag);
          return mlir::success();
        }) {}

  const std::string &text() const { return messages; }

private:
  void append(mlir::Diagnostic &diag) {
    llvm::raw_string_ostream os(messages);
    if (!messages.empty())
      os << "\n";
    os << diag.getLocation() << ": " << severity(diag.getSeverity()) << ": "
       << diag;
    for (mlir::Diagnostic &note : diag.getNotes())
      os << "\n" << note.getLocation() << ": note: " << note;
  }

  static const char *severity(mlir::DiagnosticSeverity s) {
    switch (s) {
    case mlir::DiagnosticSeverity::Error:
      return "error";
    case mlir::DiagnosticSeverity::Warning:
      return "warning";
    case mlir::DiagnosticSeverity::Note:
      return "note";
    case mlir::DiagnosticSeverity::Remark:
      return "remark";
    }
    return "diagnostic";
  }

  std::string messages;
  mlir::ScopedDiagnosticHandler handler;
};

/// Reports a failed stage of one compilation.
class Failure {
public:
  explicit Failure(const std::string &what) : what(what) {}

  [[noreturn]] void operator()(const std::string &stage,
                               const std::string &details) const {
    throw std::runtime_error("compiling " + what + " failed in " + stage +
                             ":\n" + details);
  }

private:
  std::string what;
};

/// A compilation stage's clock (fwp::jit::StageTimes).
using Clock = std::chrono::steady_clock;

inline double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Runs `pm` (the pipeline `name`) on `module`, a module verified when it
/// was built; throws through `fail`, with `diagnostics`, if a pass fails
/// or the result is not valid IR. The verifier runs once, on the result,
/// not after every pass as MLIR's default does: that took a fifth of a cold
/// compile's passes (bench/results/compile-2026-11-27-noon.md). fwp-opt's
/// tests still verify after each pass, and so does a compilation that
/// dumps every stage to `dumpDirectory` (IRDump.h), and every compilation
/// of a build with assertions or FWP_VERIFY_EACH_PASS (`make sanitize`).
void runPipeline(mlir::PassManager &pm, mlir::ModuleOp module,
                 const std::string &name, const std::string &dumpDirectory,
                 const DiagnosticCollector &diagnostics, const Failure &fail);

/// The context of one compilation, with its diagnostics.
class CompileContext {
public:
  CompileContext();
  mlir::MLIRContext &context() { return *ctx; }
  const DiagnosticCollector &diagnostics() const { return *collector; }
  /// An empty module in this context.
  mlir::OwningOpRef<mlir::ModuleOp> createModule();

private:
  std::unique_ptr<mlir::MLIRContext> ctx;
  std::unique_ptr<DiagnosticCollector> collector;
};

} // namespace fwp::jit

#endif // FWP_LIB_JIT_COMPILESUPPORT_H
