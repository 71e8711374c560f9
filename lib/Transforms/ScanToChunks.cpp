//===- ScanToChunks.cpp - fwp.scan as the stages of the chunked scan ------===//
//
// The delta rule's forward:
//   Wt, Ut       = chunk_wy(K, V, b)
//   h, U, S_T    = chunk_states(K, Ut, wt = Wt, initial)
//   Y            = chunk_output(Q, K, U, h)
// and its gradient, after the same forward:
//   dU, dh, dS_0 = chunk_states_grad(Q, K, dY, wt = Wt, d_final)
//   dQ, dK, dWt  = chunk_qk_grad(Q, K, U, h, dh, dY, dU)
//   dK', dV, db  = chunk_wy_grad(K, V, b, dU, dWt);  dK += dK'
// The sum rule writes its values as they are: no WY form, dV = dU. With
// DPFP applied by the scan, fwp.dpfp makes the features and fwp.dpfp_grad
// takes dQ and dK back to the raw vectors.
//
// A scan on 16-bit tensors stays one: the stages read and write its tensors
// in their storage type, and what they hand each other (Wt, Ut, U, h, dU,
// dh, dWt, the features and their gradients) is f32, the arithmetic type.
//
//===----------------------------------------------------------------------===//

#include "ChunkLowering.h"

#include "fwp/Transforms/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/WalkPatternRewriteDriver.h"

namespace fwp {
#define GEN_PASS_DEF_FWPSCANTOCHUNKS
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;
using namespace fwp;

Value fwp::sumKeyGradients(OpBuilder &b, Location loc, Value lhs, Value rhs,
                           Value init) {
  Type element = getElementTypeOrSelf(init);
  if (getElementTypeOrSelf(lhs) == element &&
      getElementTypeOrSelf(rhs) == element)
    return linalg::AddOp::create(b, loc, ValueRange{lhs, rhs}, init)
        .getResult(0);
  auto rank = cast<RankedTensorType>(init.getType()).getRank();
  SmallVector<AffineMap> maps(3, b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, init.getType(), ValueRange{lhs, rhs}, init, maps, parallel,
             [&](OpBuilder &nested, Location loc, ValueRange args) {
               Value sum = arith::AddFOp::create(nested, loc, args[0], args[1]);
               linalg::YieldOp::create(
                   nested, loc,
                   arith::TruncFOp::create(nested, loc, element, sum)
                       .getResult());
             })
      .getResult(0);
}

bool fwp::isKeyGradientSum(Operation *op) {
  if (isa<linalg::AddOp>(op))
    return true;
  auto generic = dyn_cast<linalg::GenericOp>(op);
  if (!generic || generic.getNumDpsInputs() != 2 ||
      generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return false;
  Block &body = generic.getRegion().front();
  if (body.getOperations().size() != 3)
    return false;
  auto sum = dyn_cast<arith::AddFOp>(body.front());
  auto rounding = dyn_cast<arith::TruncFOp>(*std::next(body.begin()));
  return sum && rounding && rounding.getIn() == sum.getResult() &&
         sum.getLhs() == body.getArgument(0) &&
         sum.getRhs() == body.getArgument(1) &&
         body.getTerminator()->getOperand(0) == rounding.getResult();
}

namespace {

/// The type the stages compute in for tensors stored as `storage`: f32
/// for 16-bit floats, else the storage type itself.
Type arithmeticType(Type storage) {
  if (storage.getIntOrFloatBitWidth() < 32)
    return Float32Type::get(storage.getContext());
  return storage;
}

/// `type` in the arithmetic type of its elements.
RankedTensorType inArithmetic(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return tensor.clone(arithmeticType(tensor.getElementType()));
}

/// The chunked forward of a scan or a scan gradient: its features and the
/// stages up to the states.
struct ChunkedForward {
  Value q, k, wt, u, h, finalState;
  RankedTensorType stateType;
  IntegerAttr chunk;
  UnitAttr batchFirst;

  template <typename ScanLikeOp>
  ChunkedForward(PatternRewriter &rewriter, ScanLikeOp scan, int64_t chunkSize,
                 Type finalStateType)
      : chunk(rewriter.getI64IntegerAttr(chunkSize)),
        batchFirst(scan.getBatchFirstAttr()) {
    Location loc = scan.getLoc();
    q = scan.getQ();
    k = scan.getK();
    if (scan.getDpfpNu()) {
      q = features(rewriter, scan, q);
      k = features(rewriter, scan, k);
    }
    auto kType = cast<RankedTensorType>(k.getType());
    auto vType = cast<RankedTensorType>(scan.getV().getType());
    bool first = scan.getBatchFirst();
    int64_t steps = kType.getDimSize(first ? 1 : 0);
    int64_t batch = kType.getDimSize(first ? 0 : 1);
    int64_t heads = kType.getDimSize(2);
    int64_t width = kType.getDimSize(3), values = vType.getDimSize(3);
    int64_t chunks = ShapedType::isDynamic(steps)
                         ? ShapedType::kDynamic
                         : llvm::divideCeil(steps, chunkSize);
    Type element = arithmeticType(kType.getElementType());
    auto startStates =
        RankedTensorType::get({batch, heads, chunks, values, width}, element);
    stateType =
        finalStateType
            ? cast<RankedTensorType>(finalStateType)
            : RankedTensorType::get({batch, heads, values, width}, element);

    Value written = scan.getV();
    if (scan.getRule() == Rule::Delta) {
      auto wy = ChunkWyOp::create(rewriter, loc, inArithmetic(kType),
                                  inArithmetic(vType), k, scan.getV(),
                                  scan.getBeta(), chunk, batchFirst);
      wt = wy.getWt();
      written = wy.getUt();
    }
    auto states = ChunkStatesOp::create(
        rewriter, loc, startStates, inArithmetic(vType), stateType, k, written,
        wt, scan.getInitial(), chunk, batchFirst);
    u = states.getU();
    h = states.getH();
    finalState = states.getFinalState();
  }

  /// Y.
  Value output(PatternRewriter &rewriter, Location loc, Type type) {
    return ChunkOutputOp::create(rewriter, loc, type, q, k, u, h, chunk,
                                 batchFirst);
  }

  /// The features of a scan that applies DPFP itself: fwp.dpfp of `input`,
  /// in the arithmetic type.
  template <typename ScanLikeOp>
  static Value features(PatternRewriter &rewriter, ScanLikeOp scan,
                        Value input) {
    auto type = cast<RankedTensorType>(input.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape.back() *= 2 * *scan.getDpfpNu();
    return DpfpOp::create(
        rewriter, scan.getLoc(),
        type.clone(shape, arithmeticType(type.getElementType())), input,
        scan.getDpfpNuAttr(), scan.getDpfpEpsAttr());
  }
};

struct ScanToChunks : OpRewritePattern<ScanOp> {
  ScanToChunks(MLIRContext *context, int64_t chunkSize)
      : OpRewritePattern(context), chunkSize(chunkSize) {}

  LogicalResult matchAndRewrite(ScanOp scan,
                                PatternRewriter &rewriter) const override {
    Value finalState = scan.getFinalState();
    ChunkedForward forward(rewriter, scan, chunkSize,
                           finalState ? finalState.getType() : Type());
    SmallVector<Value> results = {
        forward.output(rewriter, scan.getLoc(), scan.getY().getType())};
    if (finalState)
      results.push_back(forward.finalState);
    rewriter.replaceOp(scan, results);
    return success();
  }

  int64_t chunkSize;
};

struct ScanGradToChunks : OpRewritePattern<ScanGradOp> {
  ScanGradToChunks(MLIRContext *context, int64_t chunkSize)
      : OpRewritePattern(context), chunkSize(chunkSize) {}

  LogicalResult matchAndRewrite(ScanGradOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value dInitial = op.getDInitial();
    ChunkedForward forward(rewriter, op, chunkSize,
                           dInitial ? dInitial.getType() : Type());
    IntegerAttr chunk = forward.chunk;
    UnitAttr batchFirst = forward.batchFirst;
    // The features' gradients in the features' type: the storage type
    // without DPFP, else the arithmetic type (fwp.dpfp_grad takes them back
    // to the storage type). Summed key gradients are summed in the
    // arithmetic type and rounded once.
    Type featureType = forward.k.getType();
    bool delta = op.getRule() == Rule::Delta;
    Type keyPartType = delta ? inArithmetic(featureType) : featureType;
    // The sum rule's dU is its value gradient, and no other stage reads it.
    Type duType =
        delta ? inArithmetic(op.getDy().getType()) : op.getDv().getType();
    auto gradients = ChunkStatesGradOp::create(
        rewriter, loc, duType, forward.h.getType(), forward.stateType,
        forward.q, forward.k, op.getDy(), forward.wt, op.getDFinalState(),
        chunk, batchFirst);
    Value du = gradients.getDu();
    auto qk = ChunkQkGradOp::create(rewriter, loc, featureType, keyPartType,
                                    delta ? inArithmetic(featureType) : Type(),
                                    forward.q, forward.k, forward.u, forward.h,
                                    gradients.getDh(), op.getDy(), du, chunk,
                                    batchFirst);
    Value dq = qk.getDq(), dk = qk.getDk(), dv = du, dbeta;
    if (delta) {
      auto wy = ChunkWyGradOp::create(
          rewriter, loc, keyPartType, op.getV().getType(),
          op.getBeta().getType(), forward.k, op.getV(), op.getBeta(), du,
          qk.getDwt(), chunk, batchFirst);
      // Sized by the values' steps, batch and heads and the features'
      // width, so that the key gradients are read by the sum alone
      // (fwp-lower-chunks{fuse-backward} relies on it) and the features by
      // chunk operations alone (their kernels then apply the feature map).
      auto features = cast<RankedTensorType>(featureType);
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(rewriter, loc, op.getV());
      sizes.back() = features.isDynamicDim(3)
                         ? tensor::getMixedSize(rewriter, loc, forward.k, 3)
                         : rewriter.getIndexAttr(features.getDimSize(3));
      Value sum = tensor::EmptyOp::create(rewriter, loc, sizes,
                                          features.getElementType());
      dk = sumKeyGradients(rewriter, loc, dk, wy.getDk(), sum);
      dv = wy.getDv();
      dbeta = wy.getDbeta();
    }
    if (op.getDpfpNu()) {
      dq = DpfpGradOp::create(rewriter, loc, op.getQ().getType(), op.getQ(), dq,
                              op.getDpfpNuAttr(), op.getDpfpEpsAttr());
      dk = DpfpGradOp::create(rewriter, loc, op.getK().getType(), op.getK(), dk,
                              op.getDpfpNuAttr(), op.getDpfpEpsAttr());
    }
    SmallVector<Value> results = {dq, dk, dv};
    if (dbeta)
      results.push_back(dbeta);
    if (dInitial)
      results.push_back(gradients.getDInitial());
    if (op.getY())
      results.push_back(forward.output(rewriter, loc, op.getY().getType()));
    rewriter.replaceOp(op, results);
    return success();
  }

  int64_t chunkSize;
};

struct FwpScanToChunks : fwp::impl::FwpScanToChunksBase<FwpScanToChunks> {
  using FwpScanToChunksBase::FwpScanToChunksBase;

  void runOnOperation() override {
    KernelConfigAttr config = kernelConfigOf(getOperation(), KernelTarget::Cpu);
    RewritePatternSet patterns(&getContext());
    patterns.add<ScanToChunks, ScanGradToChunks>(&getContext(),
                                                 config.getChunkSize());
    walkAndApplyPatterns(getOperation(), std::move(patterns));
  }
};

} // namespace
