//===- ScanForward.cpp - Chunked forward kernels of fwp.scan --------------===//
//
// The forward kernels are written at the tile level (TileBuilder.h): after
// the chunk's rows are loaded into the workspace with masking at the
// sequence end (the only code that sees the sequence length), every step is
// an operation on static tiles. Inside a kernel, tile operations and
// e.parallel loops are work shared by the threads of a block; plain code
// and e.forLoop loops run on every thread. Each shared step reads only what
// earlier ones wrote, so a barrier after each is all a GPU lowering needs.
//
//===----------------------------------------------------------------------===//

#include "ScanKernels.h"

using namespace mlir;

namespace fwp {

ScanKernels::ScanKernels(ImplicitLocOpBuilder &b, const ScanConfig &config,
                         const ScanBuffers &buffers)
    // The workspace's element type: the inputs and outputs may be 16-bit
    // storage, which the loads extend and the stores round.
    : e(b, cast<MemRefType>(buffers.u.getType()).getElementType()),
      tiles(b, e.elementType), config(config), buf(buffers) {}

SmallVector<Value, 4> ScanKernels::stepIndex(Value t, Value b, Value h,
                                             Value col) {
  SmallVector<Value, 4> index = {t, b, h};
  if (config.batchFirst)
    std::swap(index[0], index[1]);
  if (col)
    index.push_back(col);
  return index;
}

Value ScanKernels::stepTile(Value buffer, Value t0, Value b, Value h, Value c0,
                            int64_t rows, int64_t cols) {
  return tiles.stepTile(buffer, {t0, b, h, c0}, rows, cols, config.batchFirst);
}

Value ScanKernels::numChunks(Value seqLen) {
  return arith::CeilDivSIOp::create(e.b, seqLen, e.index(config.chunk));
}

std::pair<Value, Value> ScanKernels::chunkSpan(Value c, Value seqLen) {
  Value chunk = e.index(config.chunk);
  Value t0 = e.mulIndex(c, chunk);
  return {t0, e.minIndex(chunk, e.subIndex(seqLen, t0))};
}

void ScanKernels::emitForward(Value seqLen, Value batch, Value heads) {
  Value chunks = numChunks(seqLen);
  // An instance per chunk: with scratch slots (docs/kernels.md) the
  // kernel took 255 registers, not 168.
  emitChunkKernel(
      "scan_prepare", seqLen, chunks, batch, heads,
      [&](Value b, Value h, Value c, Value t0, Value len) {
        emitPrepare(b, h, c, t0, len);
        // A gradient's scan_state_grad instances add their shares of dK's
        // state term into these rows.
        if (buf.dkf && config.splitsValues())
          tiles.fill(chunkRows(buf.dkf, b, h, t0, config.dFeature), 0.0);
      },
      /*slotted=*/false, /*localInput=*/config.localDpfpInput());
  Value blocks = e.index(config.dValue / config.valueBlock);
  e.kernel("scan_state", {batch, heads, blocks}, [&](ValueRange ids) {
    Value b = ids[0], h = ids[1];
    Value v0 = e.mulIndex(ids[2], e.index(config.valueBlock));
    // The block's rows of the state stay on chip across the chunks where
    // they fit, and go to the final state at the end.
    bool local = config.localForwardState();
    Value s = local ? localStateTile() : blockRows(buf.state, b, h, v0);
    emitBlockRowsInit(buf.initial, s, b, h, v0);
    e.forLoop(e.index(0), chunks, [&](Value c) {
      auto [t0, len] = chunkSpan(c, seqLen);
      emitStateChunk(b, h, v0, c, t0, len, s);
    });
    if (local)
      tiles.copy(s, blockRows(buf.state, b, h, v0));
  });
}

/// x[j] = relu(concat(k, -k))[j] for the raw vector src[t, b, h, :].
Value ScanKernels::dpfpInput(Value src, ValueRange row, Value j) {
  Value d = e.index(config.dInput);
  Value value =
      e.load(src, stepIndex(row[0], row[1], row[2], e.remIndex(j, d)));
  return e.relu(e.select(e.less(j, d), value, e.neg(value)));
}

/// The features of the chunk's rows of q and k, [b, h, t, :], zero past the
/// sequence end. Without DPFP, a copy. With it, the loads build
/// x = relu([q, -q]) (the only reads of q and k), and DPFP itself is tile
/// operations (emitDpfpTiles), q's before k's loads (their x may be one
/// local tile).
void ScanKernels::emitFeatures(Value b, Value h, Value t0, Value len) {
  if (!config.fusedDpfp) {
    emitInputRows(buf.q, buf.qf, b, h, t0, len);
    emitInputRows(buf.k, buf.kf, b, h, t0, len);
    return;
  }
  emitInputRows(buf.q, buf.qx, b, h, t0, len);
  emitDpfpTiles(buf.qx, buf.qf, buf.qNorms, b, h, t0);
  emitInputRows(buf.k, buf.kx, b, h, t0, len);
  emitDpfpTiles(buf.kx, buf.kf, buf.kNorms, b, h, t0);
}

void ScanKernels::emitInputRows(Value src, Value dst, Value b, Value h,
                                Value t0, Value len) {
  int64_t chunk = config.chunk, d = config.dInput;
  int64_t width = config.fusedDpfp ? 2 * d : d;
  Value zero = e.index(0);
  ifWholeChunk(
      len,
      [&] {
        Value in = stepTile(src, t0, b, h, zero, chunk, d);
        if (!config.fusedDpfp)
          return tiles.copy(
              in, tiles.tile(dst, rowAt(dst, b, h, t0, zero), chunk, d));
        tiles.relu(in, tiles.tile(dst, rowAt(dst, b, h, t0, zero), chunk, d),
                   /*negated=*/false);
        tiles.relu(in,
                   tiles.tile(dst, rowAt(dst, b, h, t0, e.index(d)), chunk, d),
                   /*negated=*/true);
      },
      [&] {
        e.parallel({e.index(chunk), e.index(width)}, [&](ValueRange rf) {
          Value t = e.addIndex(t0, rf[0]);
          Value f = rf[1];
          Value value = e.ifElse(
              e.less(rf[0], len),
              [&] {
                return config.fusedDpfp ? dpfpInput(src, {t, b, h}, f)
                                        : e.load(src, stepIndex(t, b, h, f));
              },
              e.real(0.0));
          e.store(value, dst, rowAt(dst, b, h, t, f));
        });
      });
}

void ScanKernels::bindLocalDpfpInput() {
  localX = localTile(config.chunk, 2 * config.dInput);
  workspaceQx = std::exchange(buf.qx, localX);
  workspaceKx = std::exchange(buf.kx, localX);
}

void ScanKernels::unbindLocalDpfpInput() {
  buf.qx = workspaceQx;
  buf.kx = workspaceKx;
  localX = workspaceQx = workspaceKx = nullptr;
}

/// The C x width tile of the workspace `buffer` ([B, H, T', *]) of the
/// chunk that starts at step t0.
Value ScanKernels::chunkRows(Value buffer, Value b, Value h, Value t0,
                             int64_t width) {
  return tiles.tile(buffer, rowAt(buffer, b, h, t0, e.index(0)), config.chunk,
                    width);
}

SmallVector<Value, 4> ScanKernels::rowAt(Value buffer, Value b, Value h,
                                         Value row, Value col) {
  SmallVector<Value, 4> offsets = {b, h, row};
  if (localX && buffer == localX) {
    offsets = {row == localXRow ? e.index(0) : e.subIndex(row, localXRow)};
  } else if (buf.slotScratch.contains(buffer)) {
    assert(slot && "slot scratch outside a slot's instance");
    Value zero = e.index(0);
    offsets = {slot, zero, row == slotRow ? zero : e.subIndex(row, slotRow)};
  }
  if (col)
    offsets.push_back(col);
  return offsets;
}

void ScanKernels::emitChunkKernel(
    StringRef name, Value seqLen, Value chunks, Value batch, Value heads,
    function_ref<void(Value, Value, Value, Value, Value)> body, bool slotted,
    bool localInput) {
  // Chunk c of head (b, h), its scratch rows (a slot's, the local x's)
  // starting at t0.
  auto run = [&](Value b, Value h, Value c) {
    auto [t0, len] = chunkSpan(c, seqLen);
    localXRow = localX ? t0 : nullptr;
    slotRow = slot ? t0 : nullptr;
    body(b, h, c, t0, len);
    localXRow = slotRow = nullptr;
  };
  if (!slotted || !config.scratchSlots) {
    e.kernel(name, {batch, heads, chunks}, [&](ValueRange ids) {
      if (localInput)
        bindLocalDpfpInput();
      run(ids[0], ids[1], ids[2]);
      if (localInput)
        unbindLocalDpfpInput();
    });
    return;
  }
  // Item (b H + h) N + c is chunk c of head (b, h); instance s takes items
  // s, s + slots, ... (the allocator made as many slots).
  Value items = e.mulIndex(e.mulIndex(batch, heads), chunks);
  Value slots = e.minIndex(items, e.index(config.scratchSlots));
  Value one = e.index(1);
  e.kernel(name, {slots, one, one}, [&](ValueRange ids) {
    if (localInput)
      bindLocalDpfpInput();
    e.forLoop(ids[0], items, slots, [&](Value item) {
      Value c = arith::RemSIOp::create(e.b, item, chunks);
      Value head = arith::DivSIOp::create(e.b, item, chunks);
      Value h = arith::RemSIOp::create(e.b, head, heads);
      Value b = arith::DivSIOp::create(e.b, head, heads);
      // The same slot as ids[0], but formed from the item: addresses in a
      // slot's scratch then vary with the loop, and are not hoisted out
      // of it to stay in registers across the instance's whole work (at
      // 255 registers scan_chunk_grad spilled).
      slot = arith::RemSIOp::create(e.b, item, slots);
      run(b, h, c);
      slot = nullptr;
    });
    if (localInput)
      unbindLocalDpfpInput();
  });
}

/// Chunk c's rows x cols matrix of the per-chunk workspace `buffer`
/// ([B, H, chunks, rows, cols]).
Value ScanKernels::chunkMatrix(Value buffer, Value b, Value h, Value c,
                               int64_t rows, int64_t cols) {
  Value zero = e.index(0);
  if (buf.slotScratch.contains(buffer)) {
    assert(slot && "slot scratch outside a slot's instance");
    return tiles.tile(buffer, {slot, zero, zero, zero, zero}, rows, cols);
  }
  return tiles.tile(buffer, {b, h, c, zero, zero}, rows, cols);
}

Value ScanKernels::chunkStartState(Value b, Value h, Value c) {
  Value zero = e.index(0);
  return tiles.tile(buf.chunkStates, {b, h, c, zero, zero}, config.dValue,
                    config.dFeature);
}

/// Whole chunks (all but perhaps the last) move between the inputs or
/// outputs and the workspace as tiles; a partial chunk, element by element
/// with masking at the sequence end.
void ScanKernels::ifWholeChunk(Value len, function_ref<void()> whole,
                               function_ref<void()> partial) {
  Value isWhole = arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, len,
                                        e.index(config.chunk));
  e.ifThenElse(isWhole, whole, partial);
}

/// phi' of the chunk's rows of x = relu([k, -k]) as tiles: phi
/// (emitDpfpProducts), then each row divided by its sum + eps. Zero rows
/// stay zero.
void ScanKernels::emitDpfpTiles(Value x, Value features, Value norms, Value b,
                                Value h, Value t0) {
  emitDpfpProducts(x, features, b, h, t0);
  Value phi = chunkRows(features, b, h, t0, config.dFeature);
  Value sums = tiles.tile(norms, rowAt(norms, b, h, t0), config.chunk);
  tiles.rowSums(phi, sums, config.eps);
  tiles.divideRows(phi, sums);
}

/// phi, unnormalised, of the chunk's rows of x into `features`:
/// phi[:, (i-1) 2d + j] = x[:, j] x[:, (j - i) mod 2d] (torch.roll order),
/// two products of column ranges per i (j >= i, and j < i wrapping around).
void ScanKernels::emitDpfpProducts(Value x, Value features, Value b, Value h,
                                   Value t0) {
  int64_t chunk = config.chunk, twoD = 2 * config.dInput;
  Value zero = e.index(0);
  for (int64_t i = 1; i <= config.nu; ++i) {
    int64_t base = (i - 1) * twoD;
    tiles.multiply(
        tiles.tile(x, rowAt(x, b, h, t0, e.index(i)), chunk, twoD - i),
        tiles.tile(x, rowAt(x, b, h, t0, zero), chunk, twoD - i),
        tiles.tile(features, rowAt(features, b, h, t0, e.index(base + i)),
                   chunk, twoD - i));
    tiles.multiply(
        tiles.tile(x, rowAt(x, b, h, t0, zero), chunk, i),
        tiles.tile(x, rowAt(x, b, h, t0, e.index(twoD - i)), chunk, i),
        tiles.tile(features, rowAt(features, b, h, t0, e.index(base)), chunk,
                   i));
  }
}

/// Columns [c0, c0 + cols) of the chunk's rows of the [T, B, H, W] input
/// `src` into the workspace `dst` ([B, H, T', W]), zero past the sequence
/// end.
void ScanKernels::emitChunkLoad(Value src, Value dst, Value b, Value h,
                                Value c0, Value t0, Value len, int64_t cols) {
  int64_t chunk = config.chunk;
  ifWholeChunk(
      len,
      [&] {
        tiles.copy(stepTile(src, t0, b, h, c0, chunk, cols),
                   tiles.tile(dst, rowAt(dst, b, h, t0, c0), chunk, cols));
      },
      [&] {
        e.parallel({e.index(chunk), e.index(cols)}, [&](ValueRange ri) {
          Value t = e.addIndex(t0, ri[0]), col = e.addIndex(c0, ri[1]);
          Value x = e.ifElse(
              e.less(ri[0], len),
              [&] { return e.load(src, stepIndex(t, b, h, col)); },
              e.real(0.0));
          e.store(x, dst, rowAt(dst, b, h, e.addIndex(t0, ri[0]), col));
        });
      });
}

/// The chunk's values (and gates) in the workspace, zero past the sequence
/// end: with the features, the only loads that see the sequence length.
void ScanKernels::emitChunkLoads(Value b, Value h, Value t0, Value len) {
  int64_t chunk = config.chunk;
  emitChunkLoad(buf.v, buf.vt, b, h, e.index(0), t0, len, config.dValue);
  // One gate a step: element by element either way.
  if (config.isDelta())
    e.parallel({e.index(chunk)}, [&](ValueRange r) {
      Value t = e.addIndex(t0, r[0]);
      Value beta = e.ifElse(
          e.less(r[0], len),
          [&] { return e.load(buf.beta, stepIndex(t, b, h)); }, e.real(0.0));
      e.store(beta, buf.bt, rowAt(buf.bt, b, h, e.addIndex(t0, r[0])));
    });
}

/// A = (I + diag(b) G)^-1 with G = stril(K K^T). By 16 x 16 blocks where
/// the chunk holds two or more (emitBlockInverse), else row by row:
/// A[r, :] = I[r, :] - b_r G[r, :] A, each row one 1 x C by C x C product.
/// Rows of A below r are still those of I then, and G[r, s] = 0 for s >= r,
/// so the product sees only finished rows. A diag(b)'s rows hold each
/// product until A is done.
void ScanKernels::emitInverse(Value b, Value h, Value t0) {
  int64_t chunk = config.chunk;
  if (chunk % kInverseBlock == 0 && chunk >= 2 * kInverseBlock)
    return emitBlockInverse(b, h, t0);
  Value zero = e.index(0);
  Value a = tiles.tile(buf.a, rowAt(buf.a, b, h, t0, zero), chunk, chunk);
  tiles.identity(a);
  e.forLoop(e.index(1), e.index(chunk), [&](Value r) {
    Value t = e.addIndex(t0, r);
    Value gRow = tiles.tile(buf.gram, rowAt(buf.gram, b, h, t, zero), 1, chunk);
    Value scratch = tiles.tile(buf.ab, rowAt(buf.ab, b, h, t, zero), 1, chunk);
    tiles.product(gRow, a, scratch);
    tiles.subtractScaled(
        tiles.tile(buf.a, rowAt(buf.a, b, h, t, zero), 1, chunk),
        e.load(buf.bt, rowAt(buf.bt, b, h, t)), scratch);
  });
}

/// A = (I + M)^-1, M = diag(b) G, by n = C / 16 blocks a side
/// (docs/delta-rule-math.md, section 8): each diagonal block A_ii =
/// (I + M_ii)^-1 by forward substitution over its 16 rows (1 x 16 by
/// 16 x 16 products, the n blocks a row at a time), then block row by block
/// row A_ij = -A_ii (sum_{k = j .. i-1} M_ik A_kj), two 16-row products.
/// M lives in A diag(b)'s buffer, whose blocks above the diagonal (never
/// read as M) hold the scratch; G is kept, the backward reads it.
void ScanKernels::emitBlockInverse(Value b, Value h, Value t0) {
  const int64_t s = kInverseBlock, n = config.chunk / s, chunk = config.chunk;
  Value zero = e.index(0);
  tiles.identity(tiles.tile(buf.a, rowAt(buf.a, b, h, t0, zero), chunk, chunk));
  tiles.scaleRows(
      tiles.tile(buf.gram, rowAt(buf.gram, b, h, t0, zero), chunk, chunk),
      tiles.tile(buf.bt, rowAt(buf.bt, b, h, t0), chunk),
      tiles.tile(buf.ab, rowAt(buf.ab, b, h, t0, zero), chunk, chunk));
  // Block (row block i, column block j) of a chunk x chunk buffer, with
  // `rows` rows from `row` within the block.
  auto block = [&](Value buffer, int64_t i, int64_t j, int64_t rows,
                   int64_t cols, Value row = Value()) {
    Value r = e.addIndex(t0, e.index(i * s));
    if (row)
      r = e.addIndex(r, row);
    return tiles.tile(buffer, rowAt(buffer, b, h, r, e.index(j * s)), rows,
                      cols);
  };
  // Row r of every diagonal block; the scratch row is block (0, n-1)'s.
  Value scratch = block(buf.ab, 0, n - 1, 1, s);
  e.forLoop(e.index(1), e.index(s), [&](Value r) {
    for (int64_t i = 0; i < n; ++i) {
      tiles.product(block(buf.ab, i, i, 1, s, r), block(buf.a, i, i, s, s),
                    scratch);
      Value aRow = block(buf.a, i, i, 1, s, r);
      tiles.subtract(aRow, scratch, aRow);
    }
  });
  for (int64_t i = 1; i < n; ++i)
    for (int64_t j = 0; j < i; ++j) {
      // T = sum_k M_ik A_kj (block (j, i) of the scratch), then
      // A_ij = A_ii (-T).
      Value t = block(buf.ab, j, i, s, s);
      tiles.product(block(buf.ab, i, j, s, (i - j) * s),
                    block(buf.a, j, j, (i - j) * s, s), t);
      tiles.negate(t);
      tiles.product(block(buf.a, i, i, s, s), t, block(buf.a, i, j, s, s));
    }
}

void ScanKernels::emitPrepare(Value b, Value h, Value c, Value t0, Value len) {
  emitFeatures(b, h, t0, len);
  emitChunkLoads(b, h, t0, len);
  int64_t chunk = config.chunk, dFeature = config.dFeature;
  Value zero = e.index(0);
  auto rows = [&](Value buffer, int64_t width) {
    return tiles.tile(buffer, rowAt(buffer, b, h, t0, zero), chunk, width);
  };
  Value q = rows(buf.qf, dFeature);
  Value k = rows(buf.kf, dFeature);
  Value kt = tiles.tile(buf.kt, {b, h, c, zero, zero}, dFeature, chunk);
  tiles.transpose(k, kt);
  // P = tril(Q K^T).
  Value p = rows(buf.pq, chunk);
  tiles.product(q, kt, p);
  tiles.maskLower(p, /*strict=*/false);
  if (!config.isDelta())
    return;
  // G = stril(K K^T), then A, then W~ = A diag(b) K and U~ = A diag(b) V.
  Value g = rows(buf.gram, chunk);
  tiles.product(k, kt, g);
  tiles.maskLower(g, /*strict=*/true);
  emitInverse(b, h, t0);
  Value ab = rows(buf.ab, chunk);
  tiles.scaleColumns(rows(buf.a, chunk),
                     tiles.tile(buf.bt, rowAt(buf.bt, b, h, t0), chunk), ab);
  tiles.product(ab, k, rows(buf.wt, dFeature));
  tiles.product(ab, rows(buf.vt, config.dValue), rows(buf.ut, config.dValue));
}

} // namespace fwp
