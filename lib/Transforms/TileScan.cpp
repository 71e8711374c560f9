//===- TileScan.cpp - Chunked (WY) form of fwp.scan and fwp.scan_grad -----===//
//
// Lowers each fwp.scan and fwp.scan_grad to buffers and to the kernels of
// ScanKernels.h. Tensors enter through bufferization.to_buffer and leave
// through bufferization.to_tensor, so one-shot bufferization takes over
// from here; buffers are freed by the buffer-deallocation pipeline, which
// runs after bufferization and does not accept deallocations made before
// it.
//
//===----------------------------------------------------------------------===//

#include "ScanKernels.h"

#include "fwp/Transforms/Passes.h"

#include "llvm/ADT/StringSwitch.h"

namespace fwp {
#define GEN_PASS_DEF_FWPTILESCAN
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// memref.alloc of `shape`, whose dynamic sizes are taken from `sizes` (one
/// value per dimension; those of static dimensions are ignored).
Value allocate(ImplicitLocOpBuilder &b, ArrayRef<int64_t> shape,
               ArrayRef<Value> sizes, Type elementType) {
  SmallVector<Value> dynamicSizes;
  for (auto [extent, size] : llvm::zip_equal(shape, sizes))
    if (ShapedType::isDynamic(extent))
      dynamicSizes.push_back(size);
  return memref::AllocOp::create(b, MemRefType::get(shape, elementType),
                                 dynamicSizes);
}

/// The pass's options, checked.
struct TileOptions {
  int64_t chunk, valueBlock, causalBlock;
  bool fuse;
  StateMemory stateMemory;
};

/// Reads what every scan-like op shares: element type, static sizes, rule
/// and DPFP.
template <typename ScanLikeOp>
FailureOr<ScanConfig> readConfig(ScanLikeOp op, const TileOptions &options) {
  auto qType = op.getQ().getType();
  auto vType = op.getV().getType();
  Type elementType = vType.getElementType();
  if (!isa<Float32Type, Float64Type>(elementType))
    return op.emitOpError("fwp-tile-scan supports f32 and f64 (16-bit "
                          "storage: run fwp-widen-storage first), got ")
           << elementType;
  if (qType.isDynamicDim(3) || vType.isDynamicDim(3))
    return op.emitOpError("fwp-tile-scan needs static feature and value "
                          "sizes, got ")
           << qType << " and " << vType;
  ScanConfig config;
  config.rule = op.getRule();
  config.fusedDpfp = op.getDpfpNu().has_value();
  config.dInput = qType.getDimSize(3);
  config.dFeature = config.dInput;
  if (config.fusedDpfp) {
    config.nu = *op.getDpfpNu();
    config.eps = op.getDpfpEps()->convertToDouble();
    config.dFeature = 2 * config.dInput * config.nu;
  }
  config.dValue = vType.getDimSize(3);
  config.chunk = options.chunk;
  config.valueBlock = config.dValue % options.valueBlock == 0
                          ? options.valueBlock
                          : config.dValue;
  config.causalBlock = options.causalBlock;
  // A fused kernel takes all value columns: one instance per (batch, head).
  config.fused = options.fuse;
  if (options.fuse)
    config.valueBlock = config.dValue;
  config.stateMemory = options.stateMemory;
  config.elementBytes = elementType.getIntOrFloatBitWidth() / 8;
  return config;
}

/// Allocates buffers in the layouts of ScanKernels.h.
class ScanAllocator {
public:
  ScanAllocator(ImplicitLocOpBuilder &b, const ScanConfig &config,
                Type elementType, Value seqLen, Value batch, Value heads)
      : b(b), e(b, elementType), config(config), elementType(elementType),
        seqLen(seqLen), batch(batch), heads(heads) {}

  /// [T, B, H, width] with the static sizes of `type` where it has them.
  Value perStep(TensorType type, int64_t width) {
    return allocate(b, type.getShape(), {seqLen, batch, heads, e.index(width)},
                    elementType);
  }
  /// [B, H, d_v, D], static sizes from `type` if given.
  Value state(TensorType type = nullptr) {
    SmallVector<int64_t> shape = {dyn, dyn, config.dValue, config.dFeature};
    if (type)
      shape = llvm::to_vector(type.getShape());
    return allocate(b, shape, stateSizes(), elementType);
  }
  /// [B, H, D, d_v]: a state transposed.
  Value transposedState() {
    return allocate(
        b, {dyn, dyn, config.dFeature, config.dValue},
        {batch, heads, e.index(config.dFeature), e.index(config.dValue)},
        elementType);
  }
  /// Workspace [B, H, T', width], T' = T rounded up to whole chunks, or
  /// [B, H, C, width] for a fused forward.
  Value workspace(int64_t width) {
    return allocate(b, {dyn, dyn, dyn, width},
                    {batch, heads, workspaceSteps(), e.index(width)},
                    elementType);
  }
  /// One value per step, [B, H, T'] (or [B, H, C]).
  Value workspaceColumn() {
    return allocate(b, {dyn, dyn, dyn}, {batch, heads, workspaceSteps()},
                    elementType);
  }
  /// One state per chunk, [B, H, chunks, d_v, D], fused or not.
  Value perChunkStates() {
    return allocate(b, {dyn, dyn, dyn, config.dValue, config.dFeature},
                    {batch, heads, chunks(), e.index(config.dValue),
                     e.index(config.dFeature)},
                    elementType);
  }
  /// One rows x cols matrix per chunk, [B, H, chunks, rows, cols] (one
  /// chunk for a fused workspace).
  Value perChunk(int64_t rows, int64_t cols) {
    Value count = config.fused ? e.index(1) : chunks();
    return allocate(b, {dyn, dyn, dyn, rows, cols},
                    {batch, heads, count, e.index(rows), e.index(cols)},
                    elementType);
  }

private:
  /// The number of chunks and T', made once, where the first buffer needs
  /// them.
  Value chunks() {
    if (!chunkCount)
      chunkCount = arith::CeilDivSIOp::create(b, seqLen, e.index(config.chunk));
    return chunkCount;
  }
  Value paddedSteps() {
    if (!padded)
      padded = e.mulIndex(chunks(), e.index(config.chunk));
    return padded;
  }

  Value workspaceSteps() {
    return config.fused ? e.index(config.chunk) : paddedSteps();
  }

  SmallVector<Value> stateSizes() {
    return {batch, heads, e.index(config.dValue), e.index(config.dFeature)};
  }

  static constexpr int64_t dyn = ShapedType::kDynamic;
  ImplicitLocOpBuilder &b;
  Emitter e;
  ScanConfig config;
  Type elementType;
  Value seqLen, batch, heads;
  Value chunkCount, padded;
};

/// The forward workspace; with `forBackward`, also what the backward reads.
void allocateForwardWorkspace(ScanAllocator &alloc, const ScanConfig &config,
                              ScanBuffers &buf, bool forBackward) {
  buf.qf = alloc.workspace(config.dFeature);
  buf.kf = alloc.workspace(config.dFeature);
  buf.pq = alloc.workspace(config.chunk);
  buf.vt = alloc.workspace(config.dValue);
  buf.u = alloc.workspace(config.dValue);
  buf.kt = alloc.perChunk(config.dFeature, config.chunk);
  if (!config.localForwardState())
    buf.st = alloc.transposedState();
  if (!forBackward)
    buf.yw = alloc.workspace(config.dValue);
  if (config.fusedDpfp) {
    buf.qx = alloc.workspace(2 * config.dInput);
    buf.kx = alloc.workspace(2 * config.dInput);
    buf.qNorms = alloc.workspaceColumn();
    buf.kNorms = alloc.workspaceColumn();
  }
  if (config.isDelta()) {
    buf.bt = alloc.workspaceColumn();
    buf.wt = alloc.workspace(config.dFeature);
    buf.ut = alloc.workspace(config.dValue);
    buf.gram = alloc.workspace(config.chunk);
    buf.a = alloc.workspace(config.chunk);
    buf.ab = alloc.workspace(config.chunk);
  }
  if (forBackward)
    buf.chunkStates = alloc.perChunkStates();
}

Value toBuffer(ImplicitLocOpBuilder &b, Value tensor) {
  if (!tensor)
    return nullptr;
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

Value toTensor(ImplicitLocOpBuilder &b, Type type, Value memref) {
  return bufferization::ToTensorOp::create(b, type, memref, /*restrict=*/true,
                                           /*writable=*/true);
}

/// Inputs shared by fwp.scan and fwp.scan_grad.
template <typename ScanLikeOp>
void readInputs(ImplicitLocOpBuilder &b, ScanLikeOp op, ScanBuffers &buf) {
  buf.q = toBuffer(b, op.getQ());
  buf.k = toBuffer(b, op.getK());
  buf.v = toBuffer(b, op.getV());
  buf.beta = toBuffer(b, op.getBeta());
  buf.initial = toBuffer(b, op.getInitial());
}

LogicalResult lowerScan(ScanOp op, const TileOptions &options) {
  FailureOr<ScanConfig> config = readConfig(op, options);
  if (failed(config))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  ScanBuffers buf;
  readInputs(b, op, buf);
  Type elementType = op.getV().getType().getElementType();
  Value seqLen = memref::DimOp::create(b, buf.v, 0),
        batch = memref::DimOp::create(b, buf.v, 1),
        heads = memref::DimOp::create(b, buf.v, 2);
  ScanAllocator alloc(b, *config, elementType, seqLen, batch, heads);
  buf.y = alloc.perStep(op.getY().getType(), config->dValue);
  buf.state = alloc.state(op.getFinalState() ? op.getFinalState().getType()
                                             : TensorType());
  allocateForwardWorkspace(alloc, *config, buf, /*forBackward=*/false);

  ScanKernels(b, *config, buf).emitForward(seqLen, batch, heads);

  SmallVector<Value> results = {toTensor(b, op.getY().getType(), buf.y)};
  if (op.getFinalState())
    results.push_back(toTensor(b, op.getFinalState().getType(), buf.state));
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

LogicalResult lowerScanGrad(ScanGradOp op, const TileOptions &options) {
  FailureOr<ScanConfig> config = readConfig(op, options);
  if (failed(config))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  ScanBuffers buf;
  readInputs(b, op, buf);
  buf.dy = toBuffer(b, op.getDy());
  buf.dFinal = toBuffer(b, op.getDFinalState());
  Type elementType = op.getV().getType().getElementType();
  Value seqLen = memref::DimOp::create(b, buf.v, 0),
        batch = memref::DimOp::create(b, buf.v, 1),
        heads = memref::DimOp::create(b, buf.v, 2);
  ScanAllocator alloc(b, *config, elementType, seqLen, batch, heads);
  buf.state = alloc.state();
  allocateForwardWorkspace(alloc, *config, buf, /*forBackward=*/true);
  // The forward's outputs, where asked for: the forward runs anyway.
  if (op.getY()) {
    buf.y = alloc.perStep(op.getY().getType(), config->dValue);
    buf.yw = alloc.workspace(config->dValue);
  }

  buf.dq = alloc.perStep(op.getDq().getType(), config->dInput);
  buf.dk = alloc.perStep(op.getDk().getType(), config->dInput);
  buf.dv = alloc.perStep(op.getDv().getType(), config->dValue);
  buf.dState =
      alloc.state(op.getDInitial() ? op.getDInitial().getType() : TensorType());
  buf.dyw = alloc.workspace(config->dValue);
  buf.du = alloc.workspace(config->dValue);
  if (!config->localStateGrad())
    buf.dst = alloc.transposedState();
  buf.valuesT = alloc.perChunk(config->dValue, config->chunk);
  buf.dqf = alloc.workspace(config->dFeature);
  buf.dkf = alloc.workspace(config->dFeature);
  buf.dp = alloc.workspace(config->chunk);
  buf.dChunkEnds = alloc.perChunk(config->dValue, config->dFeature);
  if (config->fusedDpfp) {
    buf.phi = alloc.workspace(config->dFeature);
    buf.phiSums = alloc.workspaceColumn();
    buf.phiDots = alloc.workspaceColumn();
    buf.dx = alloc.workspace(2 * config->dInput);
  }
  if (config->isDelta()) {
    auto betaType = op.getDbeta().getType();
    buf.dbeta =
        allocate(b, betaType.getShape(), {seqLen, batch, heads}, elementType);
    if (!config->localStateGrad())
      buf.dsWritten = alloc.state();
    buf.dbw = alloc.workspaceColumn();
    buf.squareT = alloc.workspace(config->chunk);
    buf.da = alloc.workspace(config->chunk);
    buf.atda = alloc.workspace(config->chunk);
    buf.dm = alloc.workspace(config->chunk);
    buf.dwt = alloc.workspace(config->dFeature);
    buf.atdwt = alloc.workspace(config->dFeature);
    buf.atdu = alloc.workspace(config->dValue);
  }

  ScanKernels kernels(b, *config, buf);
  kernels.emitForward(seqLen, batch, heads);
  kernels.emitBackward(seqLen, batch, heads);

  SmallVector<Value> results = {toTensor(b, op.getDq().getType(), buf.dq),
                                toTensor(b, op.getDk().getType(), buf.dk),
                                toTensor(b, op.getDv().getType(), buf.dv)};
  if (op.getDbeta())
    results.push_back(toTensor(b, op.getDbeta().getType(), buf.dbeta));
  if (op.getDInitial())
    results.push_back(toTensor(b, op.getDInitial().getType(), buf.dState));
  if (op.getY())
    results.push_back(toTensor(b, op.getY().getType(), buf.y));
  op->replaceAllUsesWith(results);
  op->erase();
  return success();
}

struct TileScanPass : impl::FwpTileScanBase<TileScanPass> {
  using FwpTileScanBase::FwpTileScanBase;

  void runOnOperation() override {
    if (chunkSize < 1) {
      getOperation()->emitError("fwp-tile-scan: chunk-size must be at least "
                                "1, got ")
          << static_cast<int64_t>(chunkSize);
      return signalPassFailure();
    }
    if (valueBlock < 1) {
      getOperation()->emitError("fwp-tile-scan: value-block must be at least "
                                "1, got ")
          << static_cast<int64_t>(valueBlock);
      return signalPassFailure();
    }
    if (causalBlock < 0) {
      getOperation()->emitError("fwp-tile-scan: causal-block must be at "
                                "least 0, got ")
          << static_cast<int64_t>(causalBlock);
      return signalPassFailure();
    }
    std::optional<StateMemory> memory =
        llvm::StringSwitch<std::optional<StateMemory>>(stateMemory)
            .Case("workspace", StateMemory::Workspace)
            .Case("workgroup", StateMemory::Workgroup)
            .Case("stack", StateMemory::Stack)
            .Default(std::nullopt);
    if (!memory) {
      getOperation()->emitError("fwp-tile-scan: state-memory must be "
                                "workspace, workgroup or stack, got '")
          << stateMemory << "'";
      return signalPassFailure();
    }
    TileOptions options{chunkSize, valueBlock, causalBlock, fuse, *memory};
    SmallVector<Operation *> scans;
    getOperation()->walk([&](Operation *op) {
      if (isa<ScanOp, ScanGradOp>(op))
        scans.push_back(op);
    });
    for (Operation *op : scans) {
      LogicalResult lowered =
          isa<ScanOp>(op) ? lowerScan(cast<ScanOp>(op), options)
                          : lowerScanGrad(cast<ScanGradOp>(op), options);
      if (failed(lowered))
        return signalPassFailure();
    }
  }
};

} // namespace
} // namespace fwp
