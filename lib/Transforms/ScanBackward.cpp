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
    Value b = ids[0], h = ids[1];
    Value v0 = e.mulIndex(ids[2], e.index(config.valueBlock));
    // The block's rows of dS (and its scratch) stay on chip across the
    // chunks where they fit, and go to the initial state's gradient at the
    // end.
    bool local = config.localStateGrad();
    auto stateTile = [&](Value buffer) {
      return local ? localStateTile() : blockRows(buffer, b, h, v0);
    };
    Value ds = stateTile(buf.dState);
    Value scratch =
        config.stateGradScratch() ? stateTile(buf.dsScratch) : Value();
    emitBlockRowsInit(buf.dFinal, ds, b, h, v0);
    e.forLoop(e.index(0), chunks, [&](Value i) {
      Value c = e.subIndex(e.subIndex(chunks, e.index(1)), i);
      auto [t0, len] = chunkSpan(c, seqLen);
      emitStateGradChunk(b, h, v0, t0, len, ds, scratch);
    });
    if (local)
      tiles.copy(ds, blockRows(buf.dState, b, h, v0));
  });
  emitChunkKernel(
      "scan_chunk_grad", seqLen, chunks, batch, heads,
      [&](Value b, Value h, Value c, Value t0, Value len) {
        emitChunkGrad(b, h, c, t0, len);
      },
      /*slotted=*/true, /*localInput=*/false);
  // A kernel of its own: DPFP's backward is register-hungry, and alone it
  // leaves the chunk gradients' kernel small enough not to spill.
  emitChunkKernel(
      "scan_input_grad", seqLen, chunks, batch, heads,
      [&](Value b, Value h, Value, Value t0, Value len) {
        emitInputGrads(b, h, t0, len);
      },
      /*slotted=*/true, /*localInput=*/config.localDpfpInput());
}

/// On the value block [v0, v0 + Bv), given its rows dS of the gradient of
/// the chunk's end state: dU = P^T dY + K dS^T, dK's term U dS, then
/// dS_start = dS + dY^T Q - dU^T W~ (no W~ term for the sum rule), into
/// `ds`, with dU^T W~ in `scratch`. Value blocks are independent but for
/// U dS, a sum over them.
void ScanKernels::emitStateGradChunk(Value b, Value h, Value v0, Value t0,
                                     Value len, Value ds, Value scratch) {
  int64_t chunk = config.chunk, dFeature = config.dFeature,
          block = config.valueBlock;
  emitChunkLoad(buf.dy, buf.dyw, b, h, v0, t0, len, block);
  StateRhs dsT = stateAsRhs(ds, config.localStateGrad(), buf.dst, b, h, v0);
  Value dy = tiles.tile(buf.dyw, {b, h, t0, v0}, chunk, block);
  Value du = tiles.tile(buf.du, {b, h, t0, v0}, chunk, block);
  tiles.product(chunkRows(buf.pq, b, h, t0, chunk), dy, du, Transposed::Lhs);
  tiles.product(chunkRows(buf.kf, b, h, t0, dFeature), dsT.tile, du, dsT.form,
                /*accumulate=*/true);
  emitKeyGradStateTerm(b, h, v0, t0, ds, scratch);
  tiles.product(dy, chunkRows(buf.qf, b, h, t0, dFeature), ds, Transposed::Lhs,
                /*accumulate=*/true);
  if (!config.isDelta())
    return;
  tiles.product(du, chunkRows(buf.wt, b, h, t0, dFeature), scratch,
                Transposed::Lhs);
  tiles.subtract(ds, scratch, ds);
}

/// dK = U dS + ... takes its state term here, from the running state
/// gradient at the chunk's end, so that no kernel keeps that gradient for
/// every chunk (docs/kernels.md, "What is kept"): dK's chunk rows = U dS,
/// which scan_chunk_grad then adds to. With the value columns split over
/// instances, U dS is the sum of their U[:, vb] dS[vb, :]: each adds its
/// share atomically to rows that scan_prepare zeroed, `scratch` (Bv x D)
/// rows at a time. Two shares make the same sum in either order.
void ScanKernels::emitKeyGradStateTerm(Value b, Value h, Value v0, Value t0,
                                       Value ds, Value scratch) {
  int64_t chunk = config.chunk, dFeature = config.dFeature,
          block = config.valueBlock;
  Value zero = e.index(0);
  if (!config.splitsValues())
    return tiles.product(tiles.tile(buf.u, {b, h, t0, v0}, chunk, block), ds,
                         chunkRows(buf.dkf, b, h, t0, dFeature));
  auto addShare = [&](Value row, int64_t rows) {
    Value share = tiles.tile(scratch, {zero, zero}, rows, dFeature);
    tiles.product(tiles.tile(buf.u, {b, h, row, v0}, rows, block), ds, share);
    tiles.atomicAdd(share,
                    tiles.tile(buf.dkf, {b, h, row, zero}, rows, dFeature));
  };
  int64_t pieces = chunk / block, rest = chunk % block;
  e.forLoop(zero, e.index(pieces), [&](Value i) {
    addShare(e.addIndex(t0, e.mulIndex(i, e.index(block))), block);
  });
  if (rest)
    addShare(e.addIndex(t0, e.index(pieces * block)), rest);
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
      [&] { tiles.copy(tile, stepTile(out, t0, b, h, zero, chunk, cols)); },
      [&] {
        e.parallel({len, e.index(cols)}, [&](ValueRange ri) {
          Value x = memref::LoadOp::create(e.b, tile, ri);
          e.store(x, out, stepIndex(e.addIndex(t0, ri[0]), b, h, ri[1]));
        });
      });
}

/// Per chunk, from dY, U, dU, the chunk's start state and dK's state term:
/// dP = tril(dY U^T), dQ = dY S + dP K, dK += dP^T Q (+ the WY terms of the
/// delta rule), dV, and for the delta rule dbeta.
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
  Value state = chunkStartState(b, h, c);
  Value valuesT = perChunk(buf.valuesT, dValue, chunk);
  // dP = tril(dY U^T).
  tiles.transpose(u, valuesT);
  tiles.product(dy, valuesT, dp);
  tiles.maskLower(dp, /*strict=*/false);
  // dQ = dY S + dP K.
  Value dq = rows(buf.dqf, dFeature);
  tiles.product(dy, state, dq);
  tiles.product(dp, k, dq, Transposed::None, /*accumulate=*/true);
  // dK = U dS + dP^T Q, U dS from scan_state_grad.
  tiles.product(dp, q, rows(buf.dkf, dFeature), Transposed::Lhs,
                /*accumulate=*/true);
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
  tiles.product(du, chunkStartState(b, h, c), dwt);
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
  Value dbeta = tiles.tile(buf.dbw, rowAt(buf.dbw, b, h, t0), chunk);
  tiles.fill(dbeta, 0.0);
  tiles.addRowDots(atdu, v, dbeta);
  tiles.addRowDots(atdwt, k, dbeta);
  tiles.addRowDots(dm, rows(buf.gram, chunk), dbeta);
  e.parallel({len}, [&](ValueRange r) {
    Value x = memref::LoadOp::create(e.b, dbeta, r);
    e.store(x, buf.dbeta, stepIndex(e.addIndex(t0, r[0]), b, h));
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
// the m-th terms cancel (to the sums' own rounding), and a single nonzero
// product gives g[m] eps / s^2 to full precision. That needs phi[m] and
// g[m] phi[m] to be the same numbers in the sums and in the subtractions:
// phi is one tile that both read, the products of g . phi are rounded on
// their own (no FMA contraction; the sums may be reassociated), and the
// subtractions are plain ops.

/// dL/dq and dL/dk of one chunk through DPFP's backward, as tiles: phi
/// again (the products of the forward, unnormalised), s - eps and g . phi
/// by rows, dL/dphi in place of g, then dL/dx from the two places each x[j]
/// takes in phi (emitDpfpInputGradient), then the relus.
void ScanKernels::emitDpfpBackward(Value x, Value featureGrad, Value out,
                                   Value b, Value h, Value t0, Value len) {
  int64_t chunk = config.chunk, d = config.dInput;
  Value phi = chunkRows(buf.phi, b, h, t0, config.dFeature);
  Value g = chunkRows(featureGrad, b, h, t0, config.dFeature);
  Value sums = tiles.tile(buf.phiSums, rowAt(buf.phiSums, b, h, t0), chunk);
  Value dots = tiles.tile(buf.phiDots, rowAt(buf.phiDots, b, h, t0), chunk);
  emitDpfpProducts(x, buf.phi, b, h, t0);
  tiles.rowSums(phi, sums, 0.0);
  tiles.rowDotsOfRoundedProducts(g, phi, dots);
  double eps = config.eps;
  tiles.mapRows(
      {g, phi}, {sums, dots}, g,
      [&](OpBuilder &nb, Location loc, ValueRange gPhi, ValueRange sumDot) {
        Value gm = gPhi[0], phiM = gPhi[1], total = sumDot[0],
              gDotPhi = sumDot[1];
        Value epsilon = arith::ConstantOp::create(
            nb, loc, nb.getFloatAttr(e.elementType, eps));
        Value s = arith::AddFOp::create(nb, loc, total, epsilon);
        Value othersSum = arith::AddFOp::create(
            nb, loc, epsilon, arith::SubFOp::create(nb, loc, total, phiM));
        Value othersDot = arith::SubFOp::create(
            nb, loc, gDotPhi, arith::MulFOp::create(nb, loc, gm, phiM));
        Value scaled = arith::MulFOp::create(nb, loc, gm, othersSum);
        return arith::DivFOp::create(
                   nb, loc, arith::SubFOp::create(nb, loc, scaled, othersDot),
                   arith::MulFOp::create(nb, loc, s, s))
            .getResult();
      });
  emitDpfpInputGradient(x, featureGrad, b, h, t0);
  // dL/dk[n] = dL/dx[n] where k[n] > 0, -dL/dx[n + d] where k[n] < 0 (x
  // holds relu(k) and relu(-k)); zero at k[n] = 0. Into dx's first half.
  Value zero = e.index(0), half = e.index(d);
  Value positive = tiles.tile(x, rowAt(x, b, h, t0, zero), chunk, d);
  Value negative = tiles.tile(x, rowAt(x, b, h, t0, half), chunk, d);
  Value dxPositive =
      tiles.tile(buf.dx, rowAt(buf.dx, b, h, t0, zero), chunk, d);
  Value dxNegative =
      tiles.tile(buf.dx, rowAt(buf.dx, b, h, t0, half), chunk, d);
  tiles.mapRows(
      {positive, dxPositive, negative, dxNegative}, {}, dxPositive,
      [&](OpBuilder &nb, Location loc, ValueRange v, ValueRange) {
        Value zeroF = arith::ConstantOp::create(
            nb, loc, nb.getFloatAttr(e.elementType, 0.0));
        auto where = [&](Value xv, Value grad) {
          Value on = arith::CmpFOp::create(nb, loc, arith::CmpFPredicate::OGT,
                                           xv, zeroF);
          return arith::SelectOp::create(nb, loc, on, grad, zeroF).getResult();
        };
        return arith::SubFOp::create(nb, loc, where(v[0], v[1]),
                                     where(v[2], v[3]))
            .getResult();
      });
  emitStepStore(dxPositive, out, b, h, t0, len);
}

/// dL/dx of the chunk's rows of x = relu([k, -k]) (2d columns) into
/// buf.dx, given dL/dphi in `dphi` (D = 2d nu columns). x[j] is a factor of
/// phi_i[j] = x[j] x[j - i] and of phi_i[j + i] = x[j + i] x[j] (indices
/// mod 2d), so dL/dx[j] = sum_i dphi_i[j] x[j - i] + dphi_i[j + i] x[j + i]:
/// per i, four products of column ranges (each roll in two pieces).
void ScanKernels::emitDpfpInputGradient(Value x, Value dphi, Value b, Value h,
                                        Value t0) {
  int64_t chunk = config.chunk, twoD = 2 * config.dInput;
  auto cols = [&](Value buffer, int64_t col, int64_t width) {
    return tiles.tile(buffer, rowAt(buffer, b, h, t0, e.index(col)), chunk,
                      width);
  };
  tiles.fill(cols(buf.dx, 0, twoD), 0.0);
  for (int64_t i = 1; i <= config.nu; ++i) {
    int64_t base = (i - 1) * twoD;
    // dphi_i[j] x[j - i]: j >= i, then j < i wrapping around.
    tiles.multiplyAdd(cols(dphi, base + i, twoD - i), cols(x, 0, twoD - i),
                      cols(buf.dx, i, twoD - i));
    tiles.multiplyAdd(cols(dphi, base, i), cols(x, twoD - i, i),
                      cols(buf.dx, 0, i));
    // dphi_i[j + i] x[j + i]: j < 2d - i, then j >= 2d - i wrapping around.
    tiles.multiplyAdd(cols(dphi, base + i, twoD - i), cols(x, i, twoD - i),
                      cols(buf.dx, 0, twoD - i));
    tiles.multiplyAdd(cols(dphi, base, i), cols(x, 0, i),
                      cols(buf.dx, twoD - i, i));
  }
}

/// dq, dk from the feature gradients: through DPFP's backward when fused,
/// else as they are.
void ScanKernels::emitInputGrads(Value b, Value h, Value t0, Value len) {
  if (!config.fusedDpfp) {
    emitStepStore(chunkRows(buf.dqf, b, h, t0, config.dInput), buf.dq, b, h, t0,
                  len);
    emitStepStore(chunkRows(buf.dkf, b, h, t0, config.dInput), buf.dk, b, h, t0,
                  len);
    return;
  }
  // q, then k, through the same scratch rows. A local x (the forward's
  // was local too) is built again from the inputs.
  bool rebuild = bool(localX);
  if (rebuild)
    emitInputRows(buf.q, buf.qx, b, h, t0, len);
  emitDpfpBackward(buf.qx, buf.dqf, buf.dq, b, h, t0, len);
  if (rebuild)
    emitInputRows(buf.k, buf.kx, b, h, t0, len);
  emitDpfpBackward(buf.kx, buf.dkf, buf.dk, b, h, t0, len);
}

} // namespace fwp
