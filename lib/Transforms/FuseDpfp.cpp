//===- FuseDpfp.cpp - Fuse fwp.dpfp producers into fwp.scan ---------------===//
//
// The DPFP features are 2 nu times wider than the vectors they come from.
// When the scan applies the map itself (its `dpfp(nu = .., eps = ..)` form),
// kernels recompute the features from the d_k-wide q and k instead of
// reading them from memory.
//
//===----------------------------------------------------------------------===//

#include "AttentionBuilders.h"

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPFUSEDPFP
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;
using namespace fwp;

namespace {

/// scan(dpfp(q), dpfp(k), ...) -> scan(q, k, ...) dpfp(nu, eps), when both
/// maps have the same parameters (the scan has one nu and one eps).
struct FuseDpfpIntoScan : OpRewritePattern<ScanOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(ScanOp scan,
                                PatternRewriter &rewriter) const override {
    if (scan.getDpfpNu())
      return rewriter.notifyMatchFailure(scan, "already applies DPFP");
    auto qMap = scan.getQ().getDefiningOp<DpfpOp>();
    auto kMap = scan.getK().getDefiningOp<DpfpOp>();
    if (!qMap || !kMap)
      return rewriter.notifyMatchFailure(scan, "q or k is not from fwp.dpfp");
    if (qMap.getNu() != kMap.getNu() ||
        qMap.getEps().compare(kMap.getEps()) != llvm::APFloat::cmpEqual)
      return rewriter.notifyMatchFailure(scan, "q and k maps differ");

    auto fused = ScanOp::create(
        rewriter, scan.getLoc(), scan.getResultTypes(), scan.getRule(),
        qMap.getInput(), kMap.getInput(), scan.getV(), scan.getBeta(),
        scan.getInitial(), rewriter.getI64IntegerAttr(qMap.getNu()),
        rewriter.getF64FloatAttr(qMap.getEps().convertToDouble()),
        scan.getBatchFirst());
    // Keep discardable attributes; the properties above are the op's own.
    fused->setDiscardableAttrs(scan->getDiscardableAttrDictionary());
    rewriter.replaceOp(scan, fused->getResults());
    // The maps, now dead, are erased by the greedy driver (they are Pure).
    return success();
  }
};

struct FwpFuseDpfp : fwp::impl::FwpFuseDpfpBase<FwpFuseDpfp> {
  using FwpFuseDpfpBase::FwpFuseDpfpBase;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseDpfpIntoScan>(&getContext());
    if (failed(applyPatternsOnly(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
