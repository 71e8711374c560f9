//===- Pipelines.cpp - fwp's named pass pipelines -------------------------===//

#include "fwp/Pipelines/Pipelines.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/ConvertToLLVM/ToLLVMPass.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/NVVMToLLVM/NVVMToLLVM.h"
#include "mlir/Conversion/OpenMPToLLVM/ConvertOpenMPToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVM.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Linalg/Transforms/TilingInterfaceImpl.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/Support/CommandLine.h"

#include <mutex>

using namespace mlir;

namespace fwp {

void buildFwpToLoopsPipeline(OpPassManager &pm,
                             const FwpConfigureKernelsOptions &kernels,
                             bool gpuStages) {
  bool cpu = kernels.target == KernelTarget::Cpu;
  bool tileScan = !cpu && !gpuStages;
  pm.addNestedPass<func::FuncOp>(createFwpConfigureKernels(kernels));
  // The chunk operations read and write a scan's 16-bit tensors themselves.
  pm.addNestedPass<func::FuncOp>(
      createFwpWidenStorage({/*widenScans=*/tileScan}));
  pm.addNestedPass<func::FuncOp>(createFwpDecomposeAttention());
  if (tileScan) {
    pm.addNestedPass<func::FuncOp>(createFwpFuseDpfp());
  } else {
    // The GPU's stages stay kernels of their own but the outputs, made in
    // the states' kernel over (batch, head, value block), and the per-chunk
    // gradients, one kernel over (batch, head, chunk): a kernel per (batch,
    // head) would leave most of a GPU idle.
    pm.addNestedPass<func::FuncOp>(createFwpScanToChunks());
    pm.addNestedPass<func::FuncOp>(createFwpLowerChunks(
        {/*fuseForward=*/cpu, /*fuseBackward=*/cpu, /*fuseGradients=*/true,
         /*fuseOutput=*/true, /*mapKernels=*/true}));
  }
  pm.addNestedPass<func::FuncOp>(createFwpLowerDpfp());
  pm.addNestedPass<func::FuncOp>(createFwpLowerGate());
  if (tileScan)
    pm.addNestedPass<func::FuncOp>(createFwpTileScan());

  // A result the caller gives a buffer for (the CPU's entry points write
  // into their outputs) is computed in that buffer: no workspace for y or
  // dx, and no copy of it at the end.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  // Tensors at function boundaries become plain (identity-layout) memrefs,
  // results become out-parameters: the caller owns every buffer.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(bufferization::createBufferResultsToOutParamsPass());
}

void buildFwpToCpuPipeline(OpPassManager &pm,
                           const CpuPipelineOptions &options) {
  // The scan's chunk operations, the forward and the backward each fused
  // into one kernel per (batch, head) that keeps the chunk's work in cache.
  // With gpu-tiling the scan takes the GPU's kernels instead, its local
  // state tiles on each instance's stack.
  FwpConfigureKernelsOptions kernels;
  kernels.target =
      options.gpuTiling ? KernelTarget::GpuOnHost : KernelTarget::Cpu;
  kernels.chunkSize = options.chunkSize;
  buildFwpToLoopsPipeline(pm, kernels, options.gpuStages);
  // The kernels' tiles on the stack, made once per kernel instance, rather
  // than a malloc and free each per chunk.
  pm.addNestedPass<func::FuncOp>(createFwpStackTiles());
  // The host frees its workspace. (The PTX pipeline leaves the host side to
  // the runtime, and canonicalising the kernels before they are mapped to
  // threads made ptxas spill, so it skips both.)
  bufferization::buildBufferDeallocationPipeline(pm);
  // The kernels' tiles and the dense layers onto the vector units. With
  // gpu-tiling the dense layers take the GPU's tiling first, and their
  // kernels' products go to the vector units like the scan's.
  if (options.gpuTiling)
    pm.addNestedPass<func::FuncOp>(createFwpDenseToTiles());
  pm.addPass(createFwpOutlineTiles());
  pm.addNestedPass<func::FuncOp>(
      createFwpTilesToVectors({options.registerRows, options.registerCols}));
  pm.addPass(
      createFwpDenseToVectors({options.registerRows, options.registerCols}));
  pm.addNestedPass<func::FuncOp>(createFwpLowerTiles());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createConvertLinalgToLoopsPass());
  // Every core (OpenMP): a kernel's instances run in parallel, the work
  // inside an instance in order.
  pm.addPass(createParallelForToNestedForsPass());
  pm.addPass(createForallToParallelLoopPass());
  pm.addPass(createLoopInvariantCodeMotionPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  // Before scf-to-cf: it lowers the alloca scopes around OpenMP loop
  // bodies, which must still be single blocks.
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createSCFToControlFlowPass());
  // Vectors first (the pass lowers what the conversion cannot take, such
  // as n-D from_elements), then the rest in one conversion, each dialect's
  // patterns through its ConvertToLLVMPatternInterface: one walk over the
  // module, not seven. The kernels' vector reductions are row sums of
  // tiles whose linalg bodies allowed reassociation: a tree, not a chain.
  ConvertVectorToLLVMPassOptions vectors;
  vectors.reassociateFPReductions = true;
  pm.addPass(createConvertVectorToLLVMPass(vectors));
  pm.addPass(createConvertToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

/// 32-bit addresses for shared memory (LLVM's NVPTX option, as Triton
/// sets it): a kernel keeps half the registers for its tiles' addresses,
/// which LLVM computes once before the loop over a kernel's chunks.
static void useShortSharedPointers() {
  static std::once_flag once;
  std::call_once(once, [] {
    auto &registered = llvm::cl::getRegisteredOptions();
    auto found = registered.find("nvptx-short-ptr");
    if (found != registered.end())
      static_cast<llvm::cl::opt<bool> *>(found->second)->setValue(true);
  });
}

void buildFwpToPtxPipeline(OpPassManager &pm,
                           const PtxPipelineOptions &options) {
  useShortSharedPointers();
  FwpConfigureKernelsOptions kernels;
  kernels.target = KernelTarget::Gpu;
  kernels.chunkSize = options.chunkSize;
  kernels.blockSize = options.blockSize;
  kernels.products = options.f32Products;
  buildFwpToLoopsPipeline(pm, kernels, options.gpuStages);
  // The stages' tiles in shared memory where they fit, else in global
  // scratch (tile-scan's kernels place their own).
  if (options.gpuStages)
    pm.addNestedPass<func::FuncOp>(createFwpGpuTiles());
  // The dense layers as kernels of tile products too; then every kernel's
  // products onto the tensor cores, the rest of their tiles onto the
  // block's threads; what is left are elementwise loops (the gate's
  // sigmoid gradient).
  pm.addNestedPass<func::FuncOp>(createFwpDenseToTiles());
  pm.addPass(createFwpProductsToMma());
  pm.addNestedPass<func::FuncOp>(createFwpLowerTiles());
  pm.addPass(createFwpKernelsToGPU());
  pm.addPass(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createFwpParallelLoopsToGPU());
  // The barriers that the thread mapping and the tensor-core staging put
  // in, less those that order nothing.
  pm.addNestedPass<func::FuncOp>(createFwpEliminateBarriers());
  // Constants into the kernels (the tensor cores' vector constants cannot be
  // kernel arguments), then each launch into its own GPU module.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createFwpKernelLaunchBounds());

  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  // Tiles are subviews: their offsets and strides become plain index
  // arithmetic (affine, lowered next) on the base pointer.
  device.addPass(memref::createExpandStridedMetadataPass());
  device.addPass(createLowerAffinePass());
  device.addPass(createSCFToControlFlowPass());
  // Tensor-core fragments (nvgpu.mma.sync); their vectors are lowered with
  // the rest by convert-gpu-to-nvvm, at its index width.
  device.addPass(createFwpNVGPUToNVVM({options.indexBitwidth}));
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.indexBitwidth = options.indexBitwidth;
  device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  device.addPass(createReconcileUnrealizedCastsPass());

  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  binary.toolkitPath = options.toolkit;
  pm.addPass(createGpuModuleToBinaryPass(binary));
  // Launch plans take the host side as it is: index arithmetic in arith and
  // affine maps (lower-affine would turn ceildiv into compare-and-select).
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void registerFwpPipelines() {
  PassPipelineRegistration<CpuPipelineOptions>(
      "fwp-to-cpu", "Lower fwp to the LLVM dialect for the host CPU",
      buildFwpToCpuPipeline);
  PassPipelineRegistration<PtxPipelineOptions>(
      "fwp-to-ptx", "Lower fwp to GPU kernels and PTX (a gpu.binary)",
      buildFwpToPtxPipeline);
}

void registerPipelineDependencies(DialectRegistry &registry) {
  registry
      .insert<affine::AffineDialect, arith::ArithDialect,
              bufferization::BufferizationDialect, cf::ControlFlowDialect,
              func::FuncDialect, gpu::GPUDialect, LLVM::LLVMDialect,
              linalg::LinalgDialect, math::MathDialect, memref::MemRefDialect,
              NVVM::NVVMDialect, nvgpu::NVGPUDialect, scf::SCFDialect,
              tensor::TensorDialect, ub::UBDialect, vector::VectorDialect>();
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(
      registry);
  linalg::registerBufferizableOpInterfaceExternalModels(registry);
  // fwp-tiles-to-vectors tiles linalg operations into register tiles.
  linalg::registerTilingInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  // The buffer deallocation's rules for these ops: without scf's, the
  // pass frees nothing allocated directly in an scf.forall body (a
  // kernel's tiles outside its chunk loop), and every call leaks them.
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);

  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  registerConvertNVVMToLLVMInterface(registry);
  registerConvertOpenMPToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  vector::registerConvertVectorToLLVMInterface(registry);

  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
  registerOpenMPDialectTranslation(registry);
}

} // namespace fwp
