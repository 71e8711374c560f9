//===- TileScan.cpp - Chunked (WY) form of fwp.scan -----------------------===//
//
// Lowers fwp.scan to buffers and two kernels in the chunked form of
// docs/delta-rule-math.md, section 4:
//
//   scan_prepare  scf.forall (batch, head, chunk): everything that does not
//                 depend on the state, for all chunks at once;
//   scan_state    scf.forall (batch, head), scf.for over chunks: the state
//                 hand-over, the only sequential part.
//
// Inside a kernel, scf.parallel loops are work shared by the threads of a
// block; plain code and scf.for loops run on every thread. Each scf.parallel
// reads only what earlier ones wrote, so a barrier after each is all a GPU
// lowering needs.
//
// Workspace, per (batch, head), in [B, H, T, *] so that a kernel's rows are
// contiguous: features Q, K (T x D); for the delta rule W~ (T x D), U~
// (T x d_v) and K K^T (T x C); tril(Q K^T) (T x C); and new values U of the
// current chunk (C x d_v). The state lives in the final-state buffer.
//
//===----------------------------------------------------------------------===//

#include "fwp/Dialect/FwpOps.h"
#include "fwp/Transforms/Passes.h"

#include "mlir/IR/ImplicitLocOpBuilder.h"

namespace fwp {
#define GEN_PASS_DEF_FWPTILESCAN
#include "fwp/Transforms/Passes.h.inc"
} // namespace fwp

using namespace mlir;

namespace fwp {
namespace {

/// Emits loops and arithmetic with one builder; the loop helpers move the
/// insertion point into the body while the body is emitted.
class Emitter {
public:
  Emitter(ImplicitLocOpBuilder &b, Type elementType)
      : b(b), elementType(elementType) {}

  Value index(int64_t value) {
    return arith::ConstantIndexOp::create(b, value);
  }
  Value real(double value) {
    return arith::ConstantOp::create(b, b.getFloatAttr(elementType, value));
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, x); }
  Value addIndex(Value x, Value y) { return arith::AddIOp::create(b, x, y); }
  Value mulIndex(Value x, Value y) { return arith::MulIOp::create(b, x, y); }
  Value subIndex(Value x, Value y) { return arith::SubIOp::create(b, x, y); }
  Value remIndex(Value x, Value y) { return arith::RemUIOp::create(b, x, y); }
  Value minIndex(Value x, Value y) { return arith::MinSIOp::create(b, x, y); }
  Value less(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::slt, x, y);
  }
  Value lessEqual(Value x, Value y) {
    return arith::CmpIOp::create(b, arith::CmpIPredicate::sle, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, cond, x, y);
  }
  Value relu(Value x) {
    Value positive =
        arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, real(0.0));
    return select(positive, x, real(0.0));
  }
  Value load(Value memref, ValueRange indices) {
    return memref::LoadOp::create(b, memref, indices);
  }
  void store(Value value, Value memref, ValueRange indices) {
    memref::StoreOp::create(b, value, memref, indices);
  }
  Value dim(Value memref, int64_t i) {
    return memref::DimOp::create(b, memref, i);
  }

  /// for iv in [lb, ub): body(iv).
  void forLoop(Value lb, Value ub, function_ref<void(Value)> body) {
    auto loop = scf::ForOp::create(b, lb, ub, index(1));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVar());
  }

  /// sum over iv in [lb, ub) of term(iv), accumulated in the element type.
  Value sum(Value lb, Value ub, function_ref<Value(Value)> term) {
    auto loop = scf::ForOp::create(b, lb, ub, index(1), ValueRange{real(0.0)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    Value next = add(loop.getRegionIterArgs()[0], term(loop.getInductionVar()));
    scf::YieldOp::create(b, next);
    return loop.getResult(0);
  }

  /// `cond ? then() : otherwise`, evaluating then() only when needed.
  Value ifElse(Value cond, function_ref<Value()> then, Value otherwise) {
    auto ifOp = scf::IfOp::create(b, TypeRange{elementType}, cond,
                                  /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&ifOp.getThenRegion().front());
    scf::YieldOp::create(b, then());
    b.setInsertionPointToStart(&ifOp.getElseRegion().front());
    scf::YieldOp::create(b, otherwise);
    return ifOp.getResult(0);
  }

  /// Work shared by the threads of a block: body(ivs) for every point of
  /// [0, ubs).
  void parallel(ArrayRef<Value> ubs, function_ref<void(ValueRange)> body) {
    SmallVector<Value> lbs(ubs.size(), index(0)), steps(ubs.size(), index(1));
    auto loop = scf::ParallelOp::create(b, lbs, ubs, steps);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    body(loop.getInductionVars());
  }

  /// A kernel: body(ids) for every point of [0, ubs), tagged with its name.
  void kernel(StringRef name, ArrayRef<Value> ubs,
              function_ref<void(ValueRange)> body) {
    SmallVector<OpFoldResult> bounds(ubs.begin(), ubs.end());
    auto forall = scf::ForallOp::create(b, bounds, ValueRange{}, std::nullopt);
    forall->setAttr("fwp.kernel", b.getStringAttr(name));
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(forall.getBody()->getTerminator());
    body(forall.getInductionVars());
  }

  ImplicitLocOpBuilder &b;
  Type elementType;
};

/// Static sizes and options of one scan.
struct ScanConfig {
  Rule rule;
  bool fusedDpfp;
  int64_t nu = 1;
  double eps = 0.0;
  int64_t dInput; // width of the q and k rows the scan reads
  int64_t dFeature;
  int64_t dValue;
  int64_t chunk;
};

/// The buffers of one scan. Inputs are [T, B, H, *], workspace [B, H, T, *].
struct ScanBuffers {
  Value q, k, v, beta, initial;   // inputs (beta, initial may be null)
  Value y, state;                 // outputs
  Value qf, kf, wt, ut, gram, pq; // workspace (wt, ut, gram: delta only)
  Value u;                        // new values of the current chunk
};

class ScanLowering {
public:
  ScanLowering(ImplicitLocOpBuilder &b, const ScanConfig &config,
               const ScanBuffers &buffers)
      : e(b, cast<MemRefType>(buffers.v.getType()).getElementType()),
        config(config), buf(buffers) {}

  void emit(Value seqLen, Value batch, Value heads) {
    Value chunk = e.index(config.chunk);
    Value numChunks = arith::CeilDivSIOp::create(e.b, seqLen, chunk);
    e.kernel("scan_prepare", {batch, heads, numChunks}, [&](ValueRange ids) {
      Value t0 = e.mulIndex(ids[2], chunk);
      Value len = e.minIndex(chunk, e.subIndex(seqLen, t0));
      emitPrepare(ids[0], ids[1], t0, len);
    });
    e.kernel("scan_state", {batch, heads}, [&](ValueRange ids) {
      emitStateInit(ids[0], ids[1]);
      e.forLoop(e.index(0), numChunks, [&](Value c) {
        Value t0 = e.mulIndex(c, chunk);
        Value len = e.minIndex(chunk, e.subIndex(seqLen, t0));
        emitStateChunk(ids[0], ids[1], t0, len);
      });
    });
  }

private:
  bool isDelta() const { return config.rule == Rule::Delta; }

  /// x[j] = relu(concat(k, -k))[j] for the raw vector src[t, b, h, :].
  Value dpfpInput(Value src, ValueRange row, Value j) {
    Value d = e.index(config.dInput);
    Value value = e.load(src, {row[0], row[1], row[2], e.remIndex(j, d)});
    return e.relu(e.select(e.less(j, d), value, e.neg(value)));
  }

  /// phi[(i-1)*2d + j] = x[j] * x[(j - i) mod 2d], i = 1..nu (torch.roll).
  Value dpfpProduct(Value src, ValueRange row, Value i, Value j) {
    Value twoD = e.index(2 * config.dInput);
    Value rolled = e.remIndex(e.subIndex(e.addIndex(j, twoD), i), twoD);
    return e.mul(dpfpInput(src, row, j), dpfpInput(src, row, rolled));
  }

  /// Writes the feature row of src[t, b, h, :] to dst[b, h, t, :]: DPFP
  /// phi' when fused, a copy otherwise.
  void emitFeatureRow(Value src, Value dst, Value t, Value b, Value h) {
    SmallVector<Value> row = {t, b, h};
    if (!config.fusedDpfp) {
      e.forLoop(e.index(0), e.index(config.dFeature), [&](Value f) {
        e.store(e.load(src, {t, b, h, f}), dst, {b, h, t, f});
      });
      return;
    }
    Value one = e.index(1), twoD = e.index(2 * config.dInput);
    Value nuEnd = e.index(config.nu + 1);
    Value total = e.sum(one, nuEnd, [&](Value i) {
      return e.sum(e.index(0), twoD,
                   [&](Value j) { return dpfpProduct(src, row, i, j); });
    });
    Value norm = e.add(total, e.real(config.eps));
    e.forLoop(one, nuEnd, [&](Value i) {
      e.forLoop(e.index(0), twoD, [&](Value j) {
        Value f = e.addIndex(e.mulIndex(e.subIndex(i, one), twoD), j);
        e.store(e.div(dpfpProduct(src, row, i, j), norm), dst, {b, h, t, f});
      });
    });
  }

  /// dot(x[b, h, tx, :], y[b, h, ty, :]) over the feature dimension.
  Value featureDot(Value x, Value tx, Value y, Value ty, Value b, Value h) {
    return e.sum(e.index(0), e.index(config.dFeature), [&](Value f) {
      return e.mul(e.load(x, {b, h, tx, f}), e.load(y, {b, h, ty, f}));
    });
  }

  /// Rows of X = A diag(beta) Base with A = (I + diag(beta) stril(K K^T))^-1,
  /// by forward substitution down the chunk; one thread per column.
  void emitForwardSubstitution(Value width, Value out, Value b, Value h,
                               Value t0, Value len,
                               function_ref<Value(Value t, Value col)> base) {
    e.parallel({width}, [&](ValueRange col) {
      e.forLoop(e.index(0), len, [&](Value r) {
        Value t = e.addIndex(t0, r);
        Value earlier = e.sum(e.index(0), r, [&](Value s) {
          Value ts = e.addIndex(t0, s);
          return e.mul(e.load(buf.gram, {b, h, t, s}),
                       e.load(out, {b, h, ts, col[0]}));
        });
        Value beta = e.load(buf.beta, {t, b, h});
        e.store(e.mul(beta, e.sub(base(t, col[0]), earlier)), out,
                {b, h, t, col[0]});
      });
    });
  }

  void emitPrepare(Value b, Value h, Value t0, Value len) {
    Value chunk = e.index(config.chunk);
    e.parallel({len}, [&](ValueRange r) {
      Value t = e.addIndex(t0, r[0]);
      emitFeatureRow(buf.q, buf.qf, t, b, h);
      emitFeatureRow(buf.k, buf.kf, t, b, h);
    });
    e.parallel({len, chunk}, [&](ValueRange rs) {
      Value t = e.addIndex(t0, rs[0]), ts = e.addIndex(t0, rs[1]);
      Value zero = e.real(0.0);
      Value causal = e.lessEqual(rs[1], rs[0]);
      e.store(e.ifElse(
                  causal,
                  [&] { return featureDot(buf.qf, t, buf.kf, ts, b, h); },
                  zero),
              buf.pq, {b, h, t, rs[1]});
      if (isDelta())
        e.store(e.ifElse(
                    e.less(rs[1], rs[0]),
                    [&] { return featureDot(buf.kf, t, buf.kf, ts, b, h); },
                    zero),
                buf.gram, {b, h, t, rs[1]});
    });
    if (!isDelta())
      return;
    emitForwardSubstitution(e.index(config.dFeature), buf.wt, b, h, t0, len,
                            [&](Value t, Value col) {
                              return e.load(buf.kf, {b, h, t, col});
                            });
    emitForwardSubstitution(e.index(config.dValue), buf.ut, b, h, t0, len,
                            [&](Value t, Value col) {
                              return e.load(buf.v, {t, b, h, col});
                            });
  }

  void emitStateInit(Value b, Value h) {
    e.parallel(
        {e.index(config.dValue), e.index(config.dFeature)}, [&](ValueRange iv) {
          Value init = buf.initial ? e.load(buf.initial, {b, h, iv[0], iv[1]})
                                   : e.real(0.0);
          e.store(init, buf.state, {b, h, iv[0], iv[1]});
        });
  }

  /// U, Y and the next state of one chunk, given the state at its start.
  void emitStateChunk(Value b, Value h, Value t0, Value len) {
    Value dValue = e.index(config.dValue), dFeature = e.index(config.dFeature);
    // U = U~ - W~ S^T (delta); U = V (sum).
    e.parallel({len, dValue}, [&](ValueRange ri) {
      Value t = e.addIndex(t0, ri[0]);
      Value u;
      if (isDelta()) {
        Value retrieved = e.sum(e.index(0), dFeature, [&](Value f) {
          return e.mul(e.load(buf.wt, {b, h, t, f}),
                       e.load(buf.state, {b, h, ri[1], f}));
        });
        u = e.sub(e.load(buf.ut, {b, h, t, ri[1]}), retrieved);
      } else {
        u = e.load(buf.v, {t, b, h, ri[1]});
      }
      e.store(u, buf.u, {b, h, ri[0], ri[1]});
    });
    // Y = Q S^T + tril(Q K^T) U.
    e.parallel({len, dValue}, [&](ValueRange ri) {
      Value t = e.addIndex(t0, ri[0]);
      Value fromState = e.sum(e.index(0), dFeature, [&](Value f) {
        return e.mul(e.load(buf.qf, {b, h, t, f}),
                     e.load(buf.state, {b, h, ri[1], f}));
      });
      Value fromChunk =
          e.sum(e.index(0), e.addIndex(ri[0], e.index(1)), [&](Value s) {
            return e.mul(e.load(buf.pq, {b, h, t, s}),
                         e.load(buf.u, {b, h, s, ri[1]}));
          });
      e.store(e.add(fromState, fromChunk), buf.y, {t, b, h, ri[1]});
    });
    // S' = S + U^T K.
    e.parallel({dValue, dFeature}, [&](ValueRange iv) {
      Value update = e.sum(e.index(0), len, [&](Value r) {
        return e.mul(e.load(buf.u, {b, h, r, iv[0]}),
                     e.load(buf.kf, {b, h, e.addIndex(t0, r), iv[1]}));
      });
      Value old = e.load(buf.state, {b, h, iv[0], iv[1]});
      e.store(e.add(old, update), buf.state, {b, h, iv[0], iv[1]});
    });
  }

  Emitter e;
  ScanConfig config;
  ScanBuffers buf;
};

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

Value toBuffer(ImplicitLocOpBuilder &b, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  return bufferization::ToBufferOp::create(
      b, MemRefType::get(type.getShape(), type.getElementType()), tensor,
      /*read_only=*/true);
}

Value toTensor(ImplicitLocOpBuilder &b, Type type, Value memref) {
  return bufferization::ToTensorOp::create(b, type, memref, /*restrict=*/true,
                                           /*writable=*/true);
}

LogicalResult lowerScan(ScanOp op, int64_t chunk) {
  auto qType = op.getQ().getType();
  auto vType = op.getV().getType();
  Type elementType = vType.getElementType();
  if (!isa<Float32Type, Float64Type>(elementType))
    return op.emitOpError("fwp-tile-scan supports f32 and f64, got ")
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
  config.chunk = chunk;

  ImplicitLocOpBuilder b(op.getLoc(), op);
  ScanBuffers buf;
  buf.q = toBuffer(b, op.getQ());
  buf.k = toBuffer(b, op.getK());
  buf.v = toBuffer(b, op.getV());
  if (op.getBeta())
    buf.beta = toBuffer(b, op.getBeta());
  if (op.getInitial())
    buf.initial = toBuffer(b, op.getInitial());

  Emitter e(b, elementType);
  Value seqLen = e.dim(buf.v, 0), batch = e.dim(buf.v, 1),
        heads = e.dim(buf.v, 2);
  const int64_t dyn = ShapedType::kDynamic;
  // Outputs take the static sizes of the result types; the workspace is
  // internal and keeps the batch, heads and sequence dynamic.
  auto alloc = [&](ArrayRef<int64_t> shape, ArrayRef<Value> sizes) {
    return allocate(b, shape, sizes, elementType);
  };
  Value dValue = e.index(config.dValue), dFeature = e.index(config.dFeature),
        chunkSize = e.index(chunk);
  SmallVector<Value> stateSizes = {batch, heads, dValue, dFeature};
  SmallVector<int64_t> stateShape = {dyn, dyn, config.dValue, config.dFeature};
  if (op.getFinalState())
    stateShape = llvm::to_vector(op.getFinalState().getType().getShape());
  buf.y = alloc(op.getY().getType().getShape(), {seqLen, batch, heads, dValue});
  buf.state = alloc(stateShape, stateSizes);
  auto allocWorkspace = [&](int64_t width) {
    return alloc({dyn, dyn, dyn, width},
                 {batch, heads, seqLen, e.index(width)});
  };
  buf.qf = allocWorkspace(config.dFeature);
  buf.kf = allocWorkspace(config.dFeature);
  buf.pq = allocWorkspace(chunk);
  buf.u = alloc({dyn, dyn, chunk, config.dValue},
                {batch, heads, chunkSize, dValue});
  if (config.rule == Rule::Delta) {
    buf.wt = allocWorkspace(config.dFeature);
    buf.ut = allocWorkspace(config.dValue);
    buf.gram = allocWorkspace(chunk);
  }

  // Buffers are freed by the buffer-deallocation pipeline, which runs after
  // bufferization and does not accept deallocations made before it.
  ScanLowering(b, config, buf).emit(seqLen, batch, heads);

  SmallVector<Value> results = {toTensor(b, op.getY().getType(), buf.y)};
  if (op.getFinalState())
    results.push_back(toTensor(b, op.getFinalState().getType(), buf.state));
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
          << chunkSize;
      return signalPassFailure();
    }
    SmallVector<ScanOp> scans;
    getOperation()->walk([&](ScanOp op) { scans.push_back(op); });
    for (ScanOp op : scans)
      if (failed(lowerScan(op, chunkSize)))
        return signalPassFailure();
  }
};

} // namespace
} // namespace fwp
