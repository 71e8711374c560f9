//===- VectorTiles.cpp - Static tiles onto the CPU's vector units ---------===//
//
// The phases follow what the upstream transform ops do
// (docs/research/cpu-vectors/NOTES.md): tile and vectorize; fold the tile
// views into the transfers, canonicalize, CSE, hoist loop invariants and
// the accumulator's read and write out of the k loop; lower contractions to
// outer products; lower transfers, transposes, outer products and
// broadcasts to plain vector loads, stores and FMAs.
//
//===----------------------------------------------------------------------===//

#include "VectorTiles.h"

#include "mlir/Conversion/VectorToSCF/VectorToSCF.h"
#include "mlir/Dialect/Linalg/Transforms/Hoisting.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/MemRef/Transforms/Transforms.h"
#include "mlir/Dialect/SCF/Transforms/TileUsingInterface.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/LoweringPatterns.h"
#include "mlir/IR/Dominance.h"
#include "mlir/Interfaces/LoopLikeInterface.h"
#include "mlir/Transforms/CSE.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

using namespace mlir;

namespace fwp {
namespace {

/// The largest of `choices` (descending) that divides `extent`: register
/// tiles stay whole, so every vector has a static shape.
int64_t dividing(int64_t extent, ArrayRef<int64_t> choices) {
  for (int64_t choice : choices)
    if (extent % choice == 0)
      return choice;
  return 1;
}

/// Register tile sizes of `op`: for a product (m, n, k) an M x N block of
/// accumulators and one k step; for everything else, one row at a time
/// (the innermost dimension whole).
SmallVector<int64_t> registerTile(linalg::LinalgOp op, RegisterTile tile) {
  SmallVector<int64_t> ranges = op.getStaticLoopRanges();
  // The largest powers of two up to the tile's sides that divide the
  // product's.
  auto halvings = [](int64_t side) {
    SmallVector<int64_t> choices;
    for (int64_t choice = llvm::PowerOf2Ceil(side + 1) / 2; choice >= 1;
         choice /= 2)
      choices.push_back(choice);
    return choices;
  };
  if (isa<linalg::MatmulOp>(op.getOperation()))
    return {dividing(ranges[0], halvings(tile.rows)),
            dividing(ranges[1], halvings(tile.cols)), 1};
  // A transpose in square blocks: rows of the block loaded as vectors,
  // transposed in registers, stored as rows.
  if (isa<linalg::TransposeOp>(op.getOperation()) && ranges.size() == 2)
    return {dividing(ranges[0], {8, 4, 2, 1}),
            dividing(ranges[1], {8, 4, 2, 1})};
  SmallVector<int64_t> sizes(ranges.size(), 1);
  if (!sizes.empty())
    sizes.back() = 0; // not tiled
  return sizes;
}

} // namespace

LogicalResult tileAndVectorize(RewriterBase &rewriter, linalg::LinalgOp op,
                               RegisterTile tile) {
  if (ShapedType::isDynamicShape(op.getStaticLoopRanges())) {
    // A chunk's rows cut at the sequence's end: copies of a few rows, left
    // to fwp-lower-tiles' loops. (Vectorized, their transfers from the
    // heads' expand_shape views send upstream's alias folding into a loop.)
    if (!isa<linalg::MatmulOp>(op.getOperation()))
      return success();
    return op.emitOpError("fwp-tiles-to-vectors expects static products");
  }
  SmallVector<OpFoldResult> sizes;
  for (int64_t size : registerTile(op, tile))
    sizes.push_back(rewriter.getIndexAttr(size));
  scf::SCFTilingOptions options;
  options.setTileSizes(sizes);
  rewriter.setInsertionPoint(op);
  FailureOr<scf::SCFTilingResult> tiled = scf::tileUsingSCF(
      rewriter, cast<TilingInterface>(op.getOperation()), options);
  if (failed(tiled))
    return op.emitOpError("fwp-tiles-to-vectors cannot tile this operation");
  for (Operation *tile : tiled->tiledOps) {
    rewriter.setInsertionPoint(tile);
    if (failed(linalg::vectorize(rewriter, tile, /*inputVectorSizes=*/{},
                                 /*inputScalableVecDims=*/{},
                                 /*vectorizeNDExtract=*/false,
                                 /*flatten1DDepthwiseConv=*/false,
                                 /*assumeDynamicDimsMatchVecSizes=*/false,
                                 /*createNamedContraction=*/true)))
      return tile->emitOpError("fwp-tiles-to-vectors cannot vectorize this "
                               "tile");
    rewriter.eraseOp(tile);
  }
  rewriter.eraseOp(op);
  return success();
}

/// Every dialect's and operation's canonicalization patterns (what the
/// canonicalizer applies).
static void addCanonicalization(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  for (Dialect *dialect : ctx->getLoadedDialects())
    dialect->getCanonicalizationPatterns(patterns);
  for (RegisteredOperationName op : ctx->getRegisteredOperations())
    op.getCanonicalizationPatterns(patterns, ctx);
}

/// Transfers index the buffers themselves.
static RewritePatternSet foldingPatterns(MLIRContext *ctx) {
  RewritePatternSet patterns(ctx);
  memref::populateFoldMemRefAliasOpPatterns(patterns);
  addCanonicalization(patterns);
  return patterns;
}

/// Contractions become outer products. A row's reduction (the tiles are
/// rows) stays one vector.reduction, not a transpose into a column of
/// scalars and a chain of adds; a row broadcast from a column element folds
/// into one broadcast, not a transpose of it.
static RewritePatternSet contractionPatterns(MLIRContext *ctx) {
  RewritePatternSet patterns(ctx);
  vector::populateVectorContractLoweringPatterns(
      patterns, vector::VectorContractLowering::OuterProduct);
  vector::populateVectorTransferPermutationMapLoweringPatterns(patterns);
  vector::populateVectorMultiReductionLoweringPatterns(
      patterns, vector::VectorMultiReductionLowering::InnerReduction);
  vector::TransposeOp::getCanonicalizationPatterns(patterns, ctx);
  vector::BroadcastOp::getCanonicalizationPatterns(patterns, ctx);
  vector::ShapeCastOp::getCanonicalizationPatterns(patterns, ctx);
  return patterns;
}

/// Down to 1-D loads, stores and FMAs. (No canonicalization here: it would
/// fold the insert chains into element lists of hundreds of scalars.)
static RewritePatternSet oneDimensionalPatterns(MLIRContext *ctx) {
  RewritePatternSet patterns(ctx);
  populateVectorToSCFConversionPatterns(
      patterns,
      VectorTransferToSCFOptions().setTargetRank(1).enableFullUnroll());
  vector::populateVectorTransferLoweringPatterns(patterns,
                                                 /*maxTransferRank=*/1);
  vector::populateVectorShapeCastLoweringPatterns(patterns);
  vector::populateVectorTransposeLoweringPatterns(
      patterns, vector::VectorTransposeLowering::Shuffle16x16);
  vector::populateVectorOuterProductLoweringPatterns(patterns);
  vector::populateVectorBroadcastLoweringPatterns(patterns);
  return patterns;
}

VectorLowering::VectorLowering(MLIRContext *ctx)
    : folding(foldingPatterns(ctx)), contractions(contractionPatterns(ctx)),
      oneDimensional(oneDimensionalPatterns(ctx)) {}

LogicalResult lowerVectors(Operation *root, const VectorLowering &patterns) {
  // Loop invariants leave the loops, and each product's accumulator stays
  // in registers across its k loop.
  if (failed(applyPatternsGreedily(root, patterns.folding)))
    return root->emitError("vector lowering: folding the transfers into "
                           "their buffers did not converge");
  IRRewriter rewriter(root->getContext());
  DominanceInfo dominance(root);
  eliminateCommonSubExpressions(rewriter, dominance, root);
  root->walk([](LoopLikeOpInterface loop) { moveLoopInvariantCode(loop); });
  linalg::hoistRedundantVectorTransfers(root);
  if (failed(applyPatternsGreedily(root, patterns.contractions)))
    return root->emitError("vector lowering: contractions to outer "
                           "products did not converge");
  if (failed(applyPatternsGreedily(root, patterns.oneDimensional)))
    return root->emitError("vector lowering: lowering to 1-D vectors did "
                           "not converge");
  return success();
}

} // namespace fwp
