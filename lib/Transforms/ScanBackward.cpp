//===- ScanBackward.cpp - Chunked backward kernels of fwp.scan ------------===//
//
// docs/delta-rule-math.md, section 5. The state gradient is the only part
// that runs backwards across chunks (state_grad, which also forms dU);
// everything else is per chunk, all chunks in parallel (chunk_grad).
//
//===----------------------------------------------------------------------===//

#include "ScanKernels.h"

using namespace mlir;

namespace fwp {

void ScanKernels::emitBackward(Value seqLen, Value batch, Value heads) {
  Value chunks = numChunks(seqLen);
  Value blocks = e.index(config.dValue / config.valueBlock);
  e.kernel("scan_state_grad", {batch, heads, blocks}, [&](ValueRange ids) {
    Value v0 = e.mulIndex(ids[2], e.index(config.valueBlock));
    emitBlockRowsInit(buf.dFinal, buf.dState, ids[0], ids[1], v0);
    e.forLoop(e.index(0), chunks, [&](Value i) {
      Value c = e.subIndex(e.subIndex(chunks, e.index(1)), i);
      auto [t0, len] = chunkSpan(c, seqLen);
      emitStateGradChunk(ids[0], ids[1], v0, c, t0, len);
    });
  });
  e.kernel("scan_chunk_grad", {batch, heads, chunks}, [&](ValueRange ids) {
    auto [t0, len] = chunkSpan(ids[2], seqLen);
    emitChunkGrad(ids[0], ids[1], ids[2], t0, len);
  });
  // A kernel of its own: DPFP's backward is register-hungry, and alone it
  // leaves the chunk gradients' kernel small enough not to spill.
  e.kernel("scan_input_grad", {batch, heads, chunks}, [&](ValueRange ids) {
    auto [t0, len] = chunkSpan(ids[2], seqLen);
    emitInputGrads(ids[0], ids[1], t0, len);
  });
}

/// On the value block [v0, v0 + Bv), given its rows dS of the gradient of
/// the chunk's end state: dU = P^T dY + K dS^T, then
/// dS_start = dS + dY^T Q - dU^T W~ (no W~ term for the sum rule). Value
/// blocks are independent: each needs only its own columns of dY and dU.
void ScanKernels::emitStateGradChunk(Value b, Value h, Value v0, Value c,
                                     Value t0, Value len) {
  int64_t chunk = config.chunk, dFeature = config.dFeature,
          block = config.valueBlock;
  Value zero = e.index(0);
  emitChunkLoad(buf.dy, buf.dyw, b, h, v0, t0, len, block);
  Value ds = tiles.tile(buf.dState, {b, h, v0, zero}, block, dFeature);
  Value dsT = tiles.tile(buf.dst, {b, h, zero, v0}, dFeature, block);
  tiles.transpose(ds, dsT);
  Value dy = tiles.tile(buf.dyw, {b, h, t0, v0}, chunk, block);
  Value du = tiles.tile(buf.du, {b, h, t0, v0}, chunk, block);
  tiles.product(chunkRows(buf.pq, b, h, t0, chunk), dy, du, Transposed::Lhs);
  tiles.product(chunkRows(buf.kf, b, h, t0, dFeature), dsT, du,
                Transposed::None, /*accumulate=*/true);
  tiles.copy(ds,
             tiles.tile(buf.dChunkEnds, {b, h, c, v0, zero}, block, dFeature));
  tiles.product(dy, chunkRows(buf.qf, b, h, t0, dFeature), ds, Transposed::Lhs,
                /*accumulate=*/true);
  if (!config.isDelta())
    return;
  Value written = tiles.tile(buf.dsWritten, {b, h, v0, zero}, block, dFeature);
  tiles.product(du, chunkRows(buf.wt, b, h, t0, dFeature), written,
                Transposed::Lhs);
  tiles.subtract(ds, written, ds);
}

/// Stores a chunk x cols tile of the workspace to the rows of a
/// [T, B, H, cols] output before the sequence end.
void ScanKernels::emitStepStore(Value tile, Value out, Value b, Value h,
                                Value t0, Value len) {
  int64_t chunk = config.chunk,
          cols = cast<MemRefType>(tile.getType()).getDimSize(1);
  Value zero = e.index(0);
  ifWholeChunk(
      len,
      [&] {
        tiles.copy(tile, tiles.stepTile(out, {t0, b, h, zero}, chunk, cols));
      },
      [&] {
        e.parallel({len, e.index(cols)}, [&](ValueRange ri) {
          Value x = memref::LoadOp::create(e.b, tile, ri);
          e.store(x, out, {e.addIndex(t0, ri[0]), b, h, ri[1]});
        });
      });
}

/// Per chunk, from dY, U, dU and the chunk's start and end (gradient)
/// states: dP = tril(dY U^T), dQ = dY S + dP K, dK = dP^T Q + U dS (+ the
/// WY terms of the delta rule), dV, and for the delta rule dbeta.
void ScanKernels::emitChunkGrad(Value b, Value h, Value c, Value t0,
                                Value len) {
  int64_t chunk = config.chunk, dFeature = config.dFeature,
          dValue = config.dValue;
  auto rows = [&](Value buffer, int64_t width) {
    return chunkRows(buffer, b, h, t0, width);
  };
  auto perChunk = [&](Value buffer, int64_t r, int64_t cols) {
    return chunkMatrix(buffer, b, h, c, r, cols);
  };
  Value dy = rows(buf.dyw, dValue), u = rows(buf.u, dValue),
        q = rows(buf.qf, dFeature), k = rows(buf.kf, dFeature),
        dp = rows(buf.dp, chunk);
  Value state = perChunk(buf.chunkStates, dValue, dFeature);
  Value stateGrad = perChunk(buf.dChunkEnds, dValue, dFeature);
  Value valuesT = perChunk(buf.valuesT, dValue, chunk);
  // dP = tril(dY U^T).
  tiles.transpose(u, valuesT);
  tiles.lowerProduct(dy, valuesT, dp, config.causalBlock, Triangular::Result);
  tiles.maskLower(dp, /*strict=*/false);
  // dQ = dY S + dP K.
  Value dq = rows(buf.dqf, dFeature);
  tiles.product(dy, state, dq);
  tiles.lowerProduct(dp, k, dq, config.causalBlock, Triangular::Lhs,
                     /*accumulate=*/true);
  // dK = dP^T Q + U dS.
  Value dk = rows(buf.dkf, dFeature);
  tiles.product(dp, q, dk, Transposed::Lhs);
  tiles.product(u, stateGrad, dk, Transposed::None, /*accumulate=*/true);
  if (!config.isDelta())
    return emitStepStore(rows(buf.du, dValue), buf.dv, b, h, t0, len);
  emitDeltaChunkGrad(b, h, c, t0, len);
}

/// The delta rule's path through U = U~ - W~ S^T and the WY factors:
/// dW~ = -dU S, dA = (dU V^T + dW~ K^T) diag(b), A^T dU, A^T dW~, A^T dA,
/// dM = -stril(A^T dA A^T); then dbeta, dV = diag(b) A^T dU, and dK's
/// terms diag(b) A^T dW~ + (diag(b) dM + dM^T diag(b)) K.
void ScanKernels::emitDeltaChunkGrad(Value b, Value h, Value c, Value t0,
                                     Value len) {
  int64_t chunk = config.chunk, dFeature = config.dFeature,
          dValue = config.dValue;
  auto rows = [&](Value buffer, int64_t width) {
    return chunkRows(buffer, b, h, t0, width);
  };
  Value du = rows(buf.du, dValue), dwt = rows(buf.dwt, dFeature),
        da = rows(buf.da, chunk), a = rows(buf.a, chunk),
        k = rows(buf.kf, dFeature), v = rows(buf.vt, dValue),
        beta = tiles.tile(buf.bt, {b, h, t0}, chunk);
  tiles.product(du, chunkMatrix(buf.chunkStates, b, h, c, dValue, dFeature),
                dwt);
  tiles.negate(dwt);
  Value valuesT = chunkMatrix(buf.valuesT, b, h, c, dValue, chunk);
  tiles.transpose(v, valuesT);
  tiles.product(du, valuesT, da);
  tiles.product(dwt, chunkMatrix(buf.kt, b, h, c, dFeature, chunk), da,
                Transposed::None, /*accumulate=*/true);
  tiles.scaleColumns(da, beta, da);
  // A^T X: A is unit lower triangular and zero above its diagonal.
  Value atdu = rows(buf.atdu, dValue), atdwt = rows(buf.atdwt, dFeature),
        atda = rows(buf.atda, chunk);
  tiles.product(a, du, atdu, Transposed::Lhs);
  tiles.product(a, dwt, atdwt, Transposed::Lhs);
  tiles.product(a, da, atda, Transposed::Lhs);
  Value squareT = rows(buf.squareT, chunk), dm = rows(buf.dm, chunk);
  tiles.transpose(a, squareT);
  tiles.product(atda, squareT, dm);
  tiles.negate(dm);
  tiles.maskLower(dm, /*strict=*/true);
  // dbeta = rowsum(A^T dU * V) + rowsum(A^T dW~ * K) + rowsum(dM * G).
  Value dbeta = tiles.tile(buf.dbw, {b, h, t0}, chunk);
  tiles.fill(dbeta, 0.0);
  tiles.addRowDots(atdu, v, dbeta);
  tiles.addRowDots(atdwt, k, dbeta);
  tiles.addRowDots(dm, rows(buf.gram, chunk), dbeta);
  e.parallel({len}, [&](ValueRange r) {
    Value x = memref::LoadOp::create(e.b, dbeta, r);
    e.store(x, buf.dbeta, {e.addIndex(t0, r[0]), b, h});
  });
  // dV = diag(b) A^T dU.
  tiles.scaleRows(atdu, beta, atdu);
  emitStepStore(atdu, buf.dv, b, h, t0, len);
  // dK += (diag(b) dM + dM^T diag(b)) K + diag(b) A^T dW~; the sum of dM's
  // two terms takes dA's place.
  tiles.transpose(dm, squareT);
  tiles.scaleColumns(squareT, beta, squareT);
  tiles.scaleRows(dm, beta, da);
  tiles.add(da, squareT, da);
  Value dk = rows(buf.dkf, dFeature);
  tiles.product(da, k, dk, Transposed::None, /*accumulate=*/true);
  tiles.scaleRows(atdwt, beta, atdwt);
  tiles.add(dk, atdwt, dk);
}

// DPFP's backward, with s = sum(phi) + eps and g = dL/dphi':
//   dL/dphi[m] = g[m] / s - (g . phi) / s^2
// formed as
//   (g[m] (eps + sum_{n != m} phi[n]) - sum_{n != m} g[n] phi[n]) / s^2
// with each sum over n != m taken as the full sum minus its m-th term. The
// two terms of the first form are nearly equal when phi[m] dominates phi.
// With a single nonzero product (common for small d: the relus zero most
// products) they differ by a fraction eps / s of either, and float32 kept
// about 7 - log10(s / eps) digits of the difference: two for s = 0.1. Here
// the m-th terms cancel exactly, and a single nonzero product gives
// g[m] eps / s^2 to full precision. That needs phi[m] and g[m] phi[m] to be
// rounded the same way in the sums and in the subtractions: they are plain
// products (no FMA contraction, no reassociation), and the subtractions
// plain ops.

Value ScanKernels::plainProduct(Value src, ValueRange row, Value i, Value j) {
  Value twoD = e.index(2 * config.dInput);
  Value rolled = e.remIndex(e.subIndex(e.addIndex(j, twoD), i), twoD);
  return arith::MulFOp::create(e.b, dpfpInput(src, row, j),
                               dpfpInput(src, row, rolled));
}

Value ScanKernels::featureIndex(Value i, Value j) {
  Value one = e.index(1), twoD = e.index(2 * config.dInput);
  return e.addIndex(e.mulIndex(e.subIndex(i, one), twoD), j);
}

/// The row sums DPFP's backward needs: sum(phi) and g . phi of the raw row
/// src[t, b, h, :], into stats[b, h, t, slot] and [slot + 1]. Once per row,
/// rather than once per element of dq and dk.
void ScanKernels::emitDpfpRowSums(Value src, Value grad, ValueRange row,
                                  Value b, Value h, Value t, int64_t slot) {
  Value one = e.index(1), twoD = e.index(2 * config.dInput),
        nuEnd = e.index(config.nu + 1);
  Value total = e.sum(one, nuEnd, [&](Value i) {
    return e.sum(e.index(0), twoD,
                 [&](Value j) { return plainProduct(src, row, i, j); });
  });
  Value gDotPhi = e.sum(one, nuEnd, [&](Value i) {
    return e.sum(e.index(0), twoD, [&](Value j) {
      Value g = e.load(grad, {b, h, t, featureIndex(i, j)});
      return arith::MulFOp::create(e.b, g, plainProduct(src, row, i, j))
          .getResult();
    });
  });
  e.store(total, buf.dpfpSums, {b, h, t, e.index(slot)});
  e.store(gDotPhi, buf.dpfpSums, {b, h, t, e.index(slot + 1)});
}

/// dL/dk[n] of the raw row src[t, b, h, :] given grad = dL/dphi'(k) in
/// grad[b, h, t, :] and the row sums of emitDpfpRowSums at `slot`.
Value ScanKernels::dpfpInputGradient(Value src, Value grad, ValueRange row,
                                     Value b, Value h, Value t, Value n,
                                     int64_t slot) {
  int64_t d = config.dInput;
  Value one = e.index(1), twoD = e.index(2 * d), nuEnd = e.index(config.nu + 1);
  Value total = e.load(buf.dpfpSums, {b, h, t, e.index(slot)});
  Value gDotPhi = e.load(buf.dpfpSums, {b, h, t, e.index(slot + 1)});
  Value eps = e.real(config.eps);
  Value s = e.add(total, eps);
  Value sSquared = e.mul(s, s);
  auto plainSub = [&](Value x, Value y) {
    return arith::SubFOp::create(e.b, x, y).getResult();
  };
  auto dphi = [&](Value i, Value j) {
    Value g = e.load(grad, {b, h, t, featureIndex(i, j)});
    Value phi = plainProduct(src, row, i, j);
    Value othersSum = arith::AddFOp::create(e.b, eps, plainSub(total, phi));
    Value othersDot =
        plainSub(gDotPhi, arith::MulFOp::create(e.b, g, phi).getResult());
    Value scaled = arith::MulFOp::create(e.b, g, othersSum);
    return e.div(plainSub(scaled, othersDot), sSquared);
  };
  // dL/dx[jj]: x[jj] appears in phi[i, jj] and in phi[i, (jj + i) mod 2d].
  auto dx = [&](Value jj) {
    return e.sum(one, nuEnd, [&](Value i) {
      Value before = e.remIndex(e.subIndex(e.addIndex(jj, twoD), i), twoD);
      Value after = e.remIndex(e.addIndex(jj, i), twoD);
      return e.add(e.mul(dphi(i, jj), dpfpInput(src, row, before)),
                   e.mul(dphi(i, after), dpfpInput(src, row, after)));
    });
  };
  Value k = e.load(src, {row[0], row[1], row[2], n});
  Value zero = e.real(0.0);
  Value positive =
      arith::CmpFOp::create(e.b, arith::CmpFPredicate::OGT, k, zero);
  Value negative =
      arith::CmpFOp::create(e.b, arith::CmpFPredicate::OLT, k, zero);
  Value viaPositive = e.ifElse(
      positive, [&] { return dx(n); }, zero);
  Value viaNegative = e.ifElse(
      negative, [&] { return e.neg(dx(e.addIndex(n, e.index(d)))); }, zero);
  return e.add(viaPositive, viaNegative);
}

/// dq, dk from the feature gradients: through DPFP when fused, else as is.
void ScanKernels::emitInputGrads(Value b, Value h, Value t0, Value len) {
  auto inputs = {std::tuple{buf.q, buf.dqf, buf.dq, int64_t(0)},
                 std::tuple{buf.k, buf.dkf, buf.dk, int64_t(2)}};
  if (config.fusedDpfp)
    e.parallel({len}, [&](ValueRange r) {
      Value t = e.addIndex(t0, r[0]);
      SmallVector<Value> row = {t, b, h};
      for (auto [src, featureGrad, out, slot] : inputs)
        emitDpfpRowSums(src, featureGrad, row, b, h, t, slot);
    });
  e.parallel({len, e.index(config.dInput)}, [&](ValueRange rn) {
    Value t = e.addIndex(t0, rn[0]);
    SmallVector<Value> row = {t, b, h};
    for (auto [src, featureGrad, out, slot] : inputs) {
      Value grad = config.fusedDpfp ? dpfpInputGradient(src, featureGrad, row,
                                                        b, h, t, rn[1], slot)
                                    : e.load(featureGrad, {b, h, t, rn[1]});
      e.store(grad, out, {t, b, h, rn[1]});
    }
  });
}

} // namespace fwp
