//===- ProductsToMma.cpp - The kernels' tile products on tensor cores -----===//
//
// The GPU's lowering of the tile level's products family (linalg.matmul
// inside a kernel). Each product's output is cut into warp tiles of 16 rows
// by up to 32 columns, dealt to the block's warps in turn; a warp keeps its
// tiles as 16 x 8 accumulators in registers across the k steps and does
// each step as 16 x 8 x 8 vector.contract ops on operands read at their own
// layout (the indexing maps say which operand is transposed); a product
// with more tiles than warps goes in column pieces. Where the
// tiles deal evenly, the operands go through shared memory first, 32 steps
// of k at a time (cp.async by every thread, then a barrier), so that each
// element is read from global memory once per block rather than once per
// warp that needs it. Upstream's vector-to-gpu conversion then gives each
// contract its per-lane fragments (ldmatrix from shared memory) and an
// nvgpu.mma.sync (m16n8k8); the f32 operands go to the tensor cores as
// tf32, split into a high and a low part (three MMAs: hi hi + hi lo +
// lo hi) unless the kernel configuration's `products` asks for one rounded
// MMA. A product that does not divide into such tiles (a single row,
// features that are not a multiple of 8) is left for fwp-lower-tiles, on the
// CUDA cores.
//
//===----------------------------------------------------------------------===//

#include "MmaProducts.h"

#include "fwp/Conversion/Passes.h"
#include "fwp/Transforms/Kernels.h"

#include "mlir/Conversion/VectorToGPU/VectorToGPU.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPPRODUCTSTOMMA
#include "fwp/Conversion/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

struct ProductsToMmaPass : impl::FwpProductsToMmaBase<ProductsToMmaPass> {
  using FwpProductsToMmaBase::FwpProductsToMmaBase;

  void runOnOperation() override {
    for (scf::ForallOp kernel : collectKernels(getOperation()))
      if (failed(convertKernel(kernel)))
        return signalPassFailure();
  }

  /// A workgroup buffer of `floats` floats for `kernel`'s staged operands
  /// (a module-level memref.global: gpu-kernel-outlining carries it into
  /// the kernel's GPU module), and its use at the kernel's start.
  Value createStage(scf::ForallOp kernel, int64_t floats) {
    auto type =
        MemRefType::get({floats}, Float32Type::get(kernel.getContext()),
                        MemRefLayoutAttrInterface(),
                        gpu::AddressSpaceAttr::get(
                            kernel.getContext(), gpu::AddressSpace::Workgroup));
    return createWorkgroupBuffer(kernel, "stage", type);
  }

  /// A product's contracts in the (m, k) x (n, k) form mma.sync takes, then
  /// per-lane fragments and nvgpu.mma.sync (upstream's vector-to-gpu). Each
  /// product on its own: the conversion's slices must not reach other code.
  LogicalResult toTensorCores(Operation *warpTiles) {
    RewritePatternSet prepare(&getContext());
    populatePrepareVectorToMMAPatterns(prepare, /*useNvGpu=*/true);
    if (failed(
            applyPatternsGreedily(warpTiles->getRegion(0), std::move(prepare))))
      return warpTiles->emitOpError("fwp-products-to-mma: preparing the "
                                    "contracts did not converge");
    IRRewriter rewriter(&getContext());
    if (failed(convertVectorToNVVMCompatibleMMASync(rewriter, warpTiles)))
      return warpTiles->emitOpError("fwp-products-to-mma: the contracts did "
                                    "not convert to nvgpu.mma.sync");
    // The conversion leaves the vector ops it replaced for a cleanup: dead
    // code, and the accumulators' old loop-carried values.
    RewritePatternSet cleanup(&getContext());
    scf::ForOp::getCanonicalizationPatterns(cleanup, &getContext());
    if (failed(
            applyPatternsGreedily(warpTiles->getRegion(0), std::move(cleanup))))
      return warpTiles->emitOpError("fwp-products-to-mma: cleaning up did not "
                                    "converge");
    WalkResult left = warpTiles->walk([](vector::ContractionOp op) {
      op.emitOpError("fwp-products-to-mma: left without a tensor-core form");
      return WalkResult::interrupt();
    });
    return failure(left.wasInterrupted());
  }

  LogicalResult convertKernel(scf::ForallOp kernel) {
    KernelConfigAttr config = gpuKernelConfigOf(kernel, "fwp-products-to-mma");
    if (!config)
      return failure();
    ProductPrecision precision = *config.getProducts();
    if (precision == ProductPrecision::CudaCores)
      return success();
    int64_t numWarps = config.getBlockSize() / kWarpSize;
    SmallVector<linalg::MatmulOp> fitting;
    kernel.walk([&](linalg::MatmulOp op) {
      if (fitsTensorCores(op))
        fitting.push_back(op);
    });
    SmallVector<ProductLowering> products;
    for (linalg::MatmulOp op : fitting) {
      bool fromZero = false;
      if (linalg::FillOp fill = zeroFillBefore(op)) {
        fill.erase();
        fromZero = true;
      }
      for (linalg::MatmulOp piece : splitWideProduct(op, numWarps))
        products.emplace_back(piece, numWarps, fromZero);
    }
    if (products.empty())
      return success();
    // One stage per kernel, as large as its largest staged product needs:
    // the products run one after another, a barrier apart. The kernel's
    // local tiles share the block's shared memory with it.
    int64_t budget =
        std::min(config.getStageFloats(),
                 (kWorkgroupBytes - localWorkgroupBytes(kernel)) / 4);
    SmallVector<int64_t> staged;
    for (const ProductLowering &product : products)
      staged.push_back(product.stagedFloats(budget));
    int64_t stageFloats = *llvm::max_element(staged);
    Value stage;
    if (stageFloats)
      stage = createStage(kernel, stageFloats);
    for (auto [lowering, floats] : llvm::zip(products, staged)) {
      Operation *scope =
          floats ? lowering.lowerStaged(stage) : lowering.lowerInPlace();
      if (failed(toTensorCores(scope)))
        return failure();
    }

    SmallVector<nvgpu::MmaSyncOp> mmas;
    kernel.walk([&](nvgpu::MmaSyncOp op) { mmas.push_back(op); });
    for (nvgpu::MmaSyncOp mma : mmas)
      splitIntoTf32(mma, precision == ProductPrecision::Tf32x3);
    return success();
  }
};

} // namespace
} // namespace fwp
