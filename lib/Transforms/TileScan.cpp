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
#include "StorageCasts.h"

#include "fwp/Transforms/Passes.h"

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

/// Reads what every scan-like op shares: element type, static sizes, rule
/// and DPFP.
template <typename ScanLikeOp>
FailureOr<ScanConfig> readConfig(ScanLikeOp op, KernelConfigAttr options) {
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
  config.chunk = options.getChunkSize();
  config.valueBlock = config.dValue % options.getValueBlock() == 0
                          ? options.getValueBlock()
                          : config.dValue;
  config.stateMemory = *options.getStateMemory();
  config.localBytes = options.getLocalBytes();
  // The slots' loop over the chunks keeps more values in registers across
  // scan_chunk_grad's work: at D = 256 (d_k = 64, nu = 2) it spilled.
  config.scratchSlots =
      config.dFeature > kMaxSlotFeatures ? 0 : options.getScratchSlots();
  config.batchFirst = op.getBatchFirst();
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

  /// [T, B, H, width] with the static sizes of `type` where it has them,
  /// of `element` (default: the scan's element type).
  Value perStep(TensorType type, int64_t width, Type element = nullptr) {
    SmallVector<Value> sizes = stepSizes();
    sizes.push_back(e.index(width));
    return allocate(b, type.getShape(), sizes, element ? element : elementType);
  }
  /// [T, B, H] (or [B, T, H]) of `element`.
  Value perStepColumn(TensorType type, Type element) {
    return allocate(b, type.getShape(), stepSizes(), element);
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
  /// Workspace [B, H, T', width], T' = T rounded up to whole chunks.
  Value workspace(int64_t width) {
    return allocate(b, {dyn, dyn, dyn, width},
                    {batch, heads, paddedSteps(), e.index(width)}, elementType);
  }
  /// One value per step, [B, H, T'].
  Value workspaceColumn() {
    return allocate(b, {dyn, dyn, dyn}, {batch, heads, paddedSteps()},
                    elementType);
  }
  /// One state per chunk, [B, H, chunks, d_v, D].
  Value perChunkStates() {
    return allocate(b, {dyn, dyn, dyn, config.dValue, config.dFeature},
                    {batch, heads, chunks(), e.index(config.dValue),
                     e.index(config.dFeature)},
                    elementType);
  }
  /// Scratch of the chunk-parallel backward kernels with
  /// ScanConfig::scratchSlots: one chunk per slot, [slots, 1, C, width]
  /// (rows of a workspace whose batch is the slots and that has one head
  /// and one chunk), else workspace(width).
  Value chunkScratch(int64_t width) {
    return config.scratchSlots ? perSlot({config.chunk, width})
                               : workspace(width);
  }
  /// [slots, 1, C], else workspaceColumn().
  Value chunkScratchColumn() {
    return config.scratchSlots ? perSlot({config.chunk}) : workspaceColumn();
  }
  /// [slots, 1, 1, rows, cols], else perChunk(rows, cols).
  Value chunkScratchMatrix(int64_t rows, int64_t cols) {
    return config.scratchSlots ? perSlot({1, rows, cols})
                               : perChunk(rows, cols);
  }
  /// One rows x cols matrix per chunk, [B, H, chunks, rows, cols].
  Value perChunk(int64_t rows, int64_t cols) {
    return allocate(b, {dyn, dyn, dyn, rows, cols},
                    {batch, heads, chunks(), e.index(rows), e.index(cols)},
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

  /// [slots, 1, tail...].
  Value perSlot(ArrayRef<int64_t> tail) {
    SmallVector<int64_t> shape = {dyn, 1};
    SmallVector<Value> sizes = {slots(), e.index(1)};
    for (int64_t size : tail) {
      shape.push_back(size);
      sizes.push_back(e.index(size));
    }
    return allocate(b, shape, sizes, elementType);
  }
  /// min(B H N, scratchSlots), the chunk-parallel backward kernels'
  /// instances (ScanKernels::emitChunkKernel makes the same number).
  Value slots() {
    if (!slotCount)
      slotCount = e.minIndex(e.mulIndex(e.mulIndex(batch, heads), chunks()),
                             e.index(config.scratchSlots));
    return slotCount;
  }

  /// The sizes of a per-step tensor's first three dimensions, in its
  /// layout.
  SmallVector<Value> stepSizes() {
    if (config.batchFirst)
      return {batch, seqLen, heads};
    return {seqLen, batch, heads};
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
  Value chunkCount, padded, slotCount;
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
  // A local x (ScanConfig::localDpfpInput) has no workspace.
  if (config.fusedDpfp && !config.localDpfpInput()) {
    buf.qx = alloc.workspace(2 * config.dInput);
    buf.kx = alloc.workspace(2 * config.dInput);
  }
  if (config.fusedDpfp) {
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

/// The sequence length, batch and heads of per-step tensor `v`.
std::tuple<Value, Value, Value> stepSizes(ImplicitLocOpBuilder &b,
                                          const ScanConfig &config, Value v) {
  Value first = memref::DimOp::create(b, v, 0),
        second = memref::DimOp::create(b, v, 1),
        heads = memref::DimOp::create(b, v, 2);
  if (config.batchFirst)
    return {second, first, heads};
  return {first, second, heads};
}

LogicalResult lowerScan(ScanOp op, KernelConfigAttr options) {
  FailureOr<ScanConfig> config = readConfig(op, options);
  if (failed(config))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  StorageCasts casts(b);
  ScanBuffers buf;
  readInputs(casts, op, buf);
  Type elementType = op.getV().getType().getElementType();
  auto [seqLen, batch, heads] = stepSizes(b, *config, buf.v);
  ScanAllocator alloc(b, *config, elementType, seqLen, batch, heads);
  buf.y = alloc.perStep(op.getY().getType(), config->dValue,
                        casts.resultElement(op.getY()));
  buf.state = alloc.state(op.getFinalState() ? op.getFinalState().getType()
                                             : TensorType());
  allocateForwardWorkspace(alloc, *config, buf, /*forBackward=*/false);

  ScanKernels(b, *config, buf).emitForward(seqLen, batch, heads);

  casts.output(op.getY(), buf.y);
  casts.output(op.getFinalState(), buf.state);
  op->erase();
  casts.eraseUnusedWidenings();
  return success();
}

LogicalResult lowerScanGrad(ScanGradOp op, KernelConfigAttr options) {
  FailureOr<ScanConfig> config = readConfig(op, options);
  if (failed(config))
    return failure();
  ImplicitLocOpBuilder b(op.getLoc(), op);
  StorageCasts casts(b);
  ScanBuffers buf;
  readInputs(casts, op, buf);
  buf.dy = casts.input(op.getDy());
  buf.dFinal = casts.input(op.getDFinalState());
  Type elementType = op.getV().getType().getElementType();
  auto [seqLen, batch, heads] = stepSizes(b, *config, buf.v);
  ScanAllocator alloc(b, *config, elementType, seqLen, batch, heads);
  buf.state = alloc.state();
  allocateForwardWorkspace(alloc, *config, buf, /*forBackward=*/true);
  // The forward's outputs, where asked for: the forward runs anyway.
  if (op.getY()) {
    buf.y = alloc.perStep(op.getY().getType(), config->dValue,
                          casts.resultElement(op.getY()));
    buf.yw = alloc.workspace(config->dValue);
  }

  buf.dq = alloc.perStep(op.getDq().getType(), config->dInput,
                         casts.resultElement(op.getDq()));
  buf.dk = alloc.perStep(op.getDk().getType(), config->dInput,
                         casts.resultElement(op.getDk()));
  buf.dv = alloc.perStep(op.getDv().getType(), config->dValue,
                         casts.resultElement(op.getDv()));
  buf.dState =
      alloc.state(op.getDInitial() ? op.getDInitial().getType() : TensorType());
  buf.dyw = alloc.workspace(config->dValue);
  buf.du = alloc.workspace(config->dValue);
  if (!config->localStateGrad())
    buf.dst = alloc.transposedState();
  // What only one chunk's scan_chunk_grad or scan_input_grad reads and
  // writes: with scratch slots, one chunk per slot.
  auto scratch = [&](Value buffer) {
    if (config->scratchSlots)
      buf.slotScratch.insert(buffer);
    return buffer;
  };
  buf.valuesT =
      scratch(alloc.chunkScratchMatrix(config->dValue, config->chunk));
  buf.dqf = alloc.workspace(config->dFeature);
  buf.dkf = alloc.workspace(config->dFeature);
  buf.dp = scratch(alloc.chunkScratch(config->chunk));
  if (config->stateGradScratch() && !config->localStateGrad())
    buf.dsScratch = alloc.state();
  if (config->fusedDpfp) {
    buf.phi = scratch(alloc.chunkScratch(config->dFeature));
    buf.phiSums = scratch(alloc.chunkScratchColumn());
    buf.phiDots = scratch(alloc.chunkScratchColumn());
    buf.dx = scratch(alloc.chunkScratch(2 * config->dInput));
  }
  if (config->isDelta()) {
    auto betaType = op.getDbeta().getType();
    buf.dbeta =
        alloc.perStepColumn(betaType, casts.resultElement(op.getDbeta()));
    buf.dbw = scratch(alloc.chunkScratchColumn());
    buf.squareT = scratch(alloc.chunkScratch(config->chunk));
    buf.da = scratch(alloc.chunkScratch(config->chunk));
    buf.atda = scratch(alloc.chunkScratch(config->chunk));
    buf.dm = scratch(alloc.chunkScratch(config->chunk));
    buf.dwt = scratch(alloc.chunkScratch(config->dFeature));
    buf.atdwt = scratch(alloc.chunkScratch(config->dFeature));
    buf.atdu = scratch(alloc.chunkScratch(config->dValue));
  }

  ScanKernels kernels(b, *config, buf);
  kernels.emitForward(seqLen, batch, heads);
  kernels.emitBackward(seqLen, batch, heads);

  casts.output(op.getDq(), buf.dq);
  casts.output(op.getDk(), buf.dk);
  casts.output(op.getDv(), buf.dv);
  casts.output(op.getDbeta(), buf.dbeta);
  casts.output(op.getDInitial(), buf.dState);
  casts.output(op.getY(), buf.y);
  op->erase();
  casts.eraseUnusedWidenings();
  return success();
}

struct TileScanPass : impl::FwpTileScanBase<TileScanPass> {
  using FwpTileScanBase::FwpTileScanBase;

  void runOnOperation() override {
    KernelConfigAttr options =
        kernelConfigOf(getOperation(), KernelTarget::Gpu);
    if (!options.isGpuTiling()) {
      getOperation()->emitError("fwp-tile-scan lowers the GPU's kernels, but "
                                "the function's kernels are configured for "
                                "the CPU: ")
          << options;
      return signalPassFailure();
    }
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
