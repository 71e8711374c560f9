//===- CpuCompiler.h - Host modules: build, lower, JIT-compile --*- C++ -*-===//
//
// What every host kernel of lib/JIT shares: entry functions that take
// tensors and write their results into the caller's memrefs, the fwp-to-cpu
// lowering and the ExecutionEngine, and memref descriptors over caller
// buffers. Internal to lib/JIT (FwpJIT), not installed.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_JIT_CPUCOMPILER_H
#define FWP_LIB_JIT_CPUCOMPILER_H

#include "mlir/ExecutionEngine/CRunnerUtils.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

namespace fwp::jit {

/// Adds, at the builder's insertion point,
///
///   func.func @name(%in0: I0, ..., %out0: memref<O0>, ...)
///     %r:n = body(%in0, ...)
///     bufferization.materialize_in_destination %r#i in restrict writable
///         %out_i
///
/// with the C interface (_mlir_ciface_<name>: one memref descriptor pointer
/// per argument). `inputs` are ranked tensor types, marked non-writable so
/// that bufferization copies rather than writes into the caller's inputs;
/// `outputs` are the tensor types of body's results, passed as memrefs of
/// the same shape. Results are written into the caller's buffers because
/// fwp-to-cpu turns results into out-parameters only for static shapes: a
/// dynamically shaped result would come back malloc'ed by the kernel.
void buildEntryFunction(mlir::OpBuilder &b, mlir::Location loc,
                        llvm::StringRef name, llvm::ArrayRef<mlir::Type> inputs,
                        llvm::ArrayRef<mlir::Type> outputs,
                        llvm::function_ref<llvm::SmallVector<mlir::Value>(
                            mlir::OpBuilder &, mlir::ValueRange)>
                            body);

/// A module compiled for the host: the engine owns the code; `entries` are
/// the C-interface entry points (_mlir_ciface_<name>), in the order asked.
struct CpuModule {
  std::unique_ptr<mlir::ExecutionEngine> engine;
  std::vector<void *> entries;
};

/// Builds a module with `build` (in a fresh context that has fwp and every
/// dialect of the pipeline loaded), verifies it, lowers it with fwp-to-cpu
/// (`chunkSize` steps per chunk of a scan), JIT-compiles it for the host and
/// looks up the C-interface entry point of each of `functions`, so that the
/// caller pays for code generation now rather than on the first call.
/// Throws std::runtime_error "compiling <what> failed in <stage>:\n<MLIR or
/// LLVM diagnostics>".
/// The GPU's kernels lowered for the host, to check them there:
/// fwp-to-cpu's gpu-tiling and gpu-stages.
struct GpuFormsOnHost {
  bool tiling = false;
  bool stages = false;
};

CpuModule compileCpuModule(const std::string &what, int64_t chunkSize,
                           llvm::function_ref<void(mlir::ModuleOp)> build,
                           llvm::ArrayRef<std::string> functions,
                           const std::string &dumpDirectory = "");

/// Builds a module with `build` as compileCpuModule does, lowers it with
/// fwp-to-cpu, optimises it at LLVM level `optLevel` (0-3) for the host CPU
/// and writes a shared object `<outputDir>/kernel.so` exporting the
/// C-interface entry points (_mlir_ciface_<name>) of the module's functions.
/// The object is linked by the system's C compiler driver (`cc`, or $CC).
/// Returns the seconds spent per stage (fwp::jit::StageTimes). `gpuForms`
/// are fwp-to-cpu's options of those names. Throws std::runtime_error as
/// compileCpuModule does.
std::vector<std::pair<std::string, double>>
compileCpuLibrary(const std::string &what, int64_t chunkSize,
                  llvm::function_ref<void(mlir::ModuleOp)> build,
                  const std::string &outputDir, int optLevel,
                  const std::string &dumpDirectory = "",
                  GpuFormsOnHost gpuForms = {});

/// A memref descriptor over a caller's row-major buffer of `sizes`. The
/// const_cast is safe for inputs: buildEntryFunction marks them
/// non-writable, so the kernel only reads them.
template <typename T, int N>
StridedMemRefType<T, N> view(const void *data,
                             const std::array<int64_t, N> &sizes) {
  StridedMemRefType<T, N> m;
  m.basePtr = m.data = const_cast<T *>(static_cast<const T *>(data));
  m.offset = 0;
  int64_t stride = 1;
  for (int d = N - 1; d >= 0; --d) {
    m.sizes[d] = sizes[d];
    m.strides[d] = stride;
    stride *= sizes[d];
  }
  return m;
}

} // namespace fwp::jit

#endif // FWP_LIB_JIT_CPUCOMPILER_H
