//===- ScanToChunks.cpp - fwp.scan as the stages of the chunked scan ------===//
//
// The delta rule:  Wt, Ut = chunk_wy(K, V, b)
//                  h, U, S_T = chunk_states(K, Ut, wt = Wt, initial)
//                  Y = chunk_output(Q, K, U, h)
// The sum rule writes its values as they are: chunk_states(K, V, initial).
//
//===----------------------------------------------------------------------===//

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPSCANTOCHUNKS
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;
using namespace fwp;

namespace {

/// The features of a scan that applies DPFP itself: fwp.dpfp of `input`.
Value features(PatternRewriter &rewriter, ScanOp scan, Value input) {
  auto type = cast<RankedTensorType>(input.getType());
  SmallVector<int64_t> shape(type.getShape());
  shape.back() *= 2 * *scan.getDpfpNu();
  return DpfpOp::create(rewriter, scan.getLoc(), type.clone(shape), input,
                        scan.getDpfpNuAttr(), scan.getDpfpEpsAttr());
}

struct ScanToChunks : OpRewritePattern<ScanOp> {
  ScanToChunks(MLIRContext *context, int64_t chunkSize)
      : OpRewritePattern(context), chunkSize(chunkSize) {}

  LogicalResult matchAndRewrite(ScanOp scan,
                                PatternRewriter &rewriter) const override {
    Location loc = scan.getLoc();
    Value q = scan.getQ(), k = scan.getK();
    if (scan.getDpfpNu()) {
      q = features(rewriter, scan, q);
      k = features(rewriter, scan, k);
    }
    auto kType = cast<RankedTensorType>(k.getType());
    auto vType = cast<RankedTensorType>(scan.getV().getType());
    bool batchFirst = scan.getBatchFirst();
    int64_t steps = kType.getDimSize(batchFirst ? 1 : 0);
    int64_t batch = kType.getDimSize(batchFirst ? 0 : 1);
    int64_t heads = kType.getDimSize(2);
    int64_t features = kType.getDimSize(3), values = vType.getDimSize(3);
    int64_t chunks = ShapedType::isDynamic(steps)
                         ? ShapedType::kDynamic
                         : llvm::divideCeil(steps, chunkSize);
    Type element = kType.getElementType();
    IntegerAttr chunkAttr = rewriter.getI64IntegerAttr(chunkSize);
    UnitAttr batchFirstAttr = scan.getBatchFirstAttr();
    auto startStates = RankedTensorType::get(
        {batch, heads, chunks, values, features}, element);
    auto finalState =
        scan.getFinalState()
            ? cast<RankedTensorType>(scan.getFinalState().getType())
            : RankedTensorType::get({batch, heads, values, features}, element);

    Value written = scan.getV(), wt;
    if (scan.getRule() == Rule::Delta) {
      auto wy = ChunkWyOp::create(rewriter, loc, kType, vType, k, scan.getV(),
                                  scan.getBeta(), chunkAttr, batchFirstAttr);
      wt = wy.getWt();
      written = wy.getUt();
    }
    auto states = ChunkStatesOp::create(rewriter, loc, startStates, vType,
                                        finalState, k, written, wt,
                                        scan.getInitial(), chunkAttr,
                                        batchFirstAttr);
    Value y = ChunkOutputOp::create(rewriter, loc, scan.getY().getType(), q,
                                    k, states.getU(), states.getH(), chunkAttr,
                                    batchFirstAttr);
    SmallVector<Value> results = {y};
    if (scan.getFinalState())
      results.push_back(states.getFinalState());
    rewriter.replaceOp(scan, results);
    return success();
  }

  int64_t chunkSize;
};

struct FwpScanToChunks : fwp::impl::FwpScanToChunksBase<FwpScanToChunks> {
  using FwpScanToChunksBase::FwpScanToChunksBase;

  void runOnOperation() override {
    if (static_cast<int64_t>(chunkSize) < 1) {
      emitError(getOperation()->getLoc())
          << "fwp-scan-to-chunks: chunk-size must be at least 1, got "
          << static_cast<int64_t>(chunkSize);
      return signalPassFailure();
    }
    RewritePatternSet patterns(&getContext());
    patterns.add<ScanToChunks>(&getContext(), chunkSize);
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
