//===- Pipelines.h - fwp's named pass pipelines -----------------*- C++ -*-===//
//
// fwp-to-cpu: fwp ops on tensors -> LLVM dialect for the host, ready for the
//             ExecutionEngine.
// fwp-to-ptx: fwp ops on tensors -> gpu.launch kernels -> NVVM -> PTX in a
//             gpu.binary (format isa).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_PIPELINES_PIPELINES_H
#define FWP_PIPELINES_PIPELINES_H

#include "fwp/Conversion/Passes.h"
#include "fwp/GpuStages.h"
#include "fwp/RegisterTile.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

#include <optional>
#include <string>

namespace fwp {

/// Options of the stages shared by both pipelines.
template <typename Derived>
struct CommonPipelineOptions : mlir::PassPipelineOptions<Derived> {
  using Base = mlir::PassPipelineOptions<Derived>;
  typename Base::template Option<int64_t> chunkSize{
      *this, "chunk-size", llvm::cl::desc("steps per chunk of the scan"),
      llvm::cl::init(kDefaultChunkSize)};
  typename Base::template Option<bool> gpuStages{
      *this, "gpu-stages",
      llvm::cl::desc("the GPU's scan as the chunk operations' kernels "
                     "(fwp-scan-to-chunks, fwp-lower-chunks with only "
                     "fuse-output, fwp-gpu-tiles) instead of fwp-tile-scan's "
                     "kernels; for fwp-to-cpu, with gpu-tiling"),
      llvm::cl::init(kDefaultGpuStages)};
};

struct CpuPipelineOptions : CommonPipelineOptions<CpuPipelineOptions> {
  Option<bool> gpuTiling{
      *this, "gpu-tiling",
      llvm::cl::desc("lower the GPU's kernels for the host: the dense layers "
                     "through fwp-dense-to-tiles rather than "
                     "fwp-dense-to-vectors's own tiling, the scan unfused "
                     "(scan_prepare, scan_state, ...) with the GPU's value "
                     "blocks and its state tiles on the stack where the GPU "
                     "keeps them in shared memory: checks the GPU's tiling "
                     "on the host"),
      llvm::cl::init(false)};
  Option<int64_t> registerRows{
      *this, "register-rows",
      llvm::cl::desc("rows of the products' register tiles (the JIT: "
                     "from the host's vector registers, fwp/RegisterTile.h)"),
      llvm::cl::init(kDefaultRegisterTile.rows)};
  Option<int64_t> registerCols{
      *this, "register-cols",
      llvm::cl::desc("columns of the products' register tiles"),
      llvm::cl::init(kDefaultRegisterTile.cols)};
};

struct PtxPipelineOptions : CommonPipelineOptions<PtxPipelineOptions> {
  Option<std::string> chip{*this, "chip",
                           llvm::cl::desc("target GPU architecture"),
                           llvm::cl::init("sm_90")};
  Option<std::string> features{
      *this, "features",
      llvm::cl::desc("PTX features, e.g. +ptx80; empty picks the oldest PTX "
                     "version the chip allows, which every ptxas that knows "
                     "the chip accepts"),
      llvm::cl::init("")};
  Option<int64_t> blockSize{*this, "block-size",
                            llvm::cl::desc("threads per block of the scan"),
                            llvm::cl::init(kDefaultBlockSize)};
  Option<ProductPrecision> f32Products{
      *this, "f32-products",
      llvm::cl::desc("how the kernels' f32 tile products run"),
      productPrecisionValues(), llvm::cl::init(kDefaultProductPrecision)};
  Option<unsigned> indexBitwidth{
      *this, "index-bitwidth",
      llvm::cl::desc("bits of device index arithmetic and of memref "
                     "descriptors in kernel arguments; 32 halves the "
                     "registers of address arithmetic (64-bit division is a "
                     "subroutine on the GPU); launchers must then refuse "
                     "buffers of 2^31 elements or more"),
      llvm::cl::init(32)};
  Option<unsigned> optLevel{*this, "opt-level",
                            llvm::cl::desc("LLVM optimisation level"),
                            llvm::cl::init(3)};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("CUDA toolkit (for libdevice: exp in the gate)"),
      llvm::cl::init("/usr/local/cuda")};
};

/// fwp on tensors -> loops on buffers, results as out-parameters (both
/// pipelines start like this), the kernels configured by `kernels`. For
/// the CPU, fwp.scan becomes its chunk operations, the forward and the
/// backward each fused into one kernel per (batch, head); for the GPU's
/// targets, fwp-tile-scan's kernels, or with `gpuStages` the chunk
/// operations' kernels unfused.
void buildFwpToLoopsPipeline(mlir::OpPassManager &pm,
                             const FwpConfigureKernelsOptions &kernels,
                             bool gpuStages = false);
void buildFwpToCpuPipeline(mlir::OpPassManager &pm,
                           const CpuPipelineOptions &options);
void buildFwpToPtxPipeline(mlir::OpPassManager &pm,
                           const PtxPipelineOptions &options);

/// Registers fwp-to-cpu and fwp-to-ptx with the pass registry.
void registerFwpPipelines();

/// Adds what the pipelines produce and need: the dialects they create, the
/// to-LLVM interfaces convert-gpu-to-nvvm collects, the NVVM target and the
/// LLVM IR translations that serialise kernels to PTX or feed the JIT.
void registerPipelineDependencies(mlir::DialectRegistry &registry);

} // namespace fwp

#endif // FWP_PIPELINES_PIPELINES_H
