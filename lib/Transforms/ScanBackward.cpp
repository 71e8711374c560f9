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
  e.kernel("scan_state_grad", {batch, heads}, [&](ValueRange ids) {
    emitStateGradInit(ids[0], ids[1]);
    e.forLoop(e.index(0), chunks, [&](Value i) {
      Value c = e.subIndex(e.subIndex(chunks, e.index(1)), i);
      auto [t0, len] = chunkSpan(c, seqLen);
      emitStateGradChunk(ids[0], ids[1], c, t0, len);
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

void ScanKernels::emitStateGradInit(Value b, Value h) {
  e.parallel(
      {e.index(config.dValue), e.index(config.dFeature)}, [&](ValueRange iv) {
        Value init =
            buf.dFinal ? e.load(buf.dFinal, {b, h, iv[0], iv[1]}) : e.real(0.0);
        e.store(init, buf.dState, {b, h, iv[0], iv[1]});
      });
}

/// Given dS, the gradient of the chunk's end state: dU = P^T dY + K dS^T,
/// then dS_start = dS + dY^T Q - dU^T W~ (no W~ term for the sum rule).
void ScanKernels::emitStateGradChunk(Value b, Value h, Value c, Value t0,
                                     Value len) {
  Value dValue = e.index(config.dValue), dFeature = e.index(config.dFeature);
  e.parallel({len, dValue}, [&](ValueRange ri) {
    Value t = e.addIndex(t0, ri[0]);
    Value fromOutputs = e.sum(ri[0], len, [&](Value s) {
      Value ts = e.addIndex(t0, s);
      return e.mul(e.load(buf.pq, {b, h, ts, ri[0]}),
                   e.load(buf.dy, {ts, b, h, ri[1]}));
    });
    Value fromState = e.sum(e.index(0), dFeature, [&](Value f) {
      return e.mul(e.load(buf.kf, {b, h, t, f}),
                   e.load(buf.dState, {b, h, ri[1], f}));
    });
    e.store(e.add(fromOutputs, fromState), buf.du, {b, h, t, ri[1]});
  });
  e.parallel({dValue, dFeature}, [&](ValueRange iv) {
    Value old = e.load(buf.dState, {b, h, iv[0], iv[1]});
    e.store(old, buf.dChunkEnds, {b, h, c, iv[0], iv[1]});
    Value delta = e.sum(e.index(0), len, [&](Value r) {
      Value t = e.addIndex(t0, r);
      Value read = e.mul(e.load(buf.dy, {t, b, h, iv[0]}),
                         e.load(buf.qf, {b, h, t, iv[1]}));
      if (!config.isDelta())
        return read;
      Value written = e.mul(e.load(buf.du, {b, h, t, iv[0]}),
                            e.load(buf.wt, {b, h, t, iv[1]}));
      return e.sub(read, written);
    });
    e.store(e.add(old, delta), buf.dState, {b, h, iv[0], iv[1]});
  });
}

void ScanKernels::emitChunkGrad(Value b, Value h, Value c, Value t0,
                                Value len) {
  Value chunk = e.index(config.chunk), dFeature = e.index(config.dFeature),
        dValue = e.index(config.dValue);
  auto state = [&](Value i, Value f) {
    return e.load(buf.chunkStates, {b, h, c, i, f});
  };
  auto stateGrad = [&](Value i, Value f) {
    return e.load(buf.dChunkEnds, {b, h, c, i, f});
  };
  // dP = tril(dY U^T).
  e.parallel({len, chunk}, [&](ValueRange rs) {
    Value t = e.addIndex(t0, rs[0]), ts = e.addIndex(t0, rs[1]);
    Value dp = e.ifElse(
        e.lessEqual(rs[1], rs[0]),
        [&] {
          return e.sum(e.index(0), dValue, [&](Value i) {
            return e.mul(e.load(buf.dy, {t, b, h, i}),
                         e.load(buf.u, {b, h, ts, i}));
          });
        },
        e.real(0.0));
    e.store(dp, buf.dp, {b, h, t, rs[1]});
  });
  // dQ = dY S + dP K.
  e.parallel({len, dFeature}, [&](ValueRange rf) {
    Value t = e.addIndex(t0, rf[0]);
    Value fromState = e.sum(e.index(0), dValue, [&](Value i) {
      return e.mul(e.load(buf.dy, {t, b, h, i}), state(i, rf[1]));
    });
    Value fromChunk =
        e.sum(e.index(0), e.addIndex(rf[0], e.index(1)), [&](Value s) {
          return e.mul(e.load(buf.dp, {b, h, t, s}),
                       e.load(buf.kf, {b, h, e.addIndex(t0, s), rf[1]}));
        });
    e.store(e.add(fromState, fromChunk), buf.dqf, {b, h, t, rf[1]});
  });
  if (config.isDelta())
    emitDeltaChunkGrad(b, h, c, t0, len);
  // dK = dP^T Q + U dS (+ the WY terms of the delta rule); dV.
  e.parallel({len, dFeature}, [&](ValueRange rf) {
    Value r = rf[0], f = rf[1], t = e.addIndex(t0, r);
    Value fromOutputs = e.sum(r, len, [&](Value s) {
      Value ts = e.addIndex(t0, s);
      return e.mul(e.load(buf.dp, {b, h, ts, r}),
                   e.load(buf.qf, {b, h, ts, f}));
    });
    Value fromState = e.sum(e.index(0), dValue, [&](Value i) {
      return e.mul(e.load(buf.u, {b, h, t, i}), stateGrad(i, f));
    });
    Value grad = e.add(fromOutputs, fromState);
    if (config.isDelta()) {
      // + diag(b) A^T dW~ + G K + G^T K with G = diag(b) dM.
      Value betaR = e.load(buf.beta, {t, b, h});
      Value throughW = e.mul(betaR, e.load(buf.atdwt, {b, h, t, f}));
      Value throughM = e.sum(e.index(0), len, [&](Value s) {
        Value ts = e.addIndex(t0, s);
        Value g = e.add(
            e.mul(betaR, e.load(buf.dm, {b, h, t, s})),
            e.mul(e.load(buf.beta, {ts, b, h}), e.load(buf.dm, {b, h, ts, r})));
        return e.mul(g, e.load(buf.kf, {b, h, ts, f}));
      });
      grad = e.add(grad, e.add(throughW, throughM));
    }
    e.store(grad, buf.dkf, {b, h, t, f});
  });
  e.parallel({len, dValue}, [&](ValueRange ri) {
    Value t = e.addIndex(t0, ri[0]);
    Value grad = config.isDelta() ? e.mul(e.load(buf.beta, {t, b, h}),
                                          e.load(buf.atdu, {b, h, t, ri[1]}))
                                  : e.load(buf.du, {b, h, t, ri[1]});
    e.store(grad, buf.dv, {t, b, h, ri[1]});
  });
}

/// The delta rule's path through U = U~ - W~ S^T and the WY factors:
/// dW~ = -dU S, A^T dU, A^T dW~, dA, dM = -stril(A^T dA A^T) and dbeta.
void ScanKernels::emitDeltaChunkGrad(Value b, Value h, Value c, Value t0,
                                     Value len) {
  Value chunk = e.index(config.chunk), dFeature = e.index(config.dFeature),
        dValue = e.index(config.dValue), zero = e.real(0.0);
  auto rowOf = [&](Value r) { return e.addIndex(t0, r); };
  e.parallel({len, dFeature}, [&](ValueRange rf) {
    Value t = rowOf(rf[0]);
    Value grad = e.sum(e.index(0), dValue, [&](Value i) {
      return e.mul(e.load(buf.du, {b, h, t, i}),
                   e.load(buf.chunkStates, {b, h, c, i, rf[1]}));
    });
    e.store(e.neg(grad), buf.dwt, {b, h, t, rf[1]});
  });
  // dA[r, s] = beta_s (dU_r . V_s + dW~_r . K_s), for s in the chunk.
  e.parallel({len, chunk}, [&](ValueRange rs) {
    Value t = rowOf(rs[0]), ts = rowOf(rs[1]);
    Value da = e.ifElse(
        e.less(rs[1], len),
        [&] {
          Value viaV = e.sum(e.index(0), dValue, [&](Value i) {
            return e.mul(e.load(buf.du, {b, h, t, i}),
                         e.load(buf.v, {ts, b, h, i}));
          });
          Value viaK = e.sum(e.index(0), dFeature, [&](Value f) {
            return e.mul(e.load(buf.dwt, {b, h, t, f}),
                         e.load(buf.kf, {b, h, ts, f}));
          });
          return e.mul(e.load(buf.beta, {ts, b, h}), e.add(viaV, viaK));
        },
        zero);
    e.store(da, buf.da, {b, h, t, rs[1]});
  });
  // (A^T X)[r] = sum_{s >= r} A[s, r] X[s]: A is unit lower triangular.
  auto transposedSolve = [&](Value width, Value x, Value out) {
    e.parallel({len, width}, [&](ValueRange rj) {
      Value sum = e.sum(rj[0], len, [&](Value s) {
        Value ts = rowOf(s);
        return e.mul(e.load(buf.a, {b, h, ts, rj[0]}),
                     e.load(x, {b, h, ts, rj[1]}));
      });
      e.store(sum, out, {b, h, rowOf(rj[0]), rj[1]});
    });
  };
  transposedSolve(dValue, buf.du, buf.atdu);
  transposedSolve(dFeature, buf.dwt, buf.atdwt);
  transposedSolve(chunk, buf.da, buf.atda);
  // dM[r, s] = -sum_{q <= s} (A^T dA)[r, q] A[s, q], for s < r.
  e.parallel({len, chunk}, [&](ValueRange rs) {
    Value t = rowOf(rs[0]);
    Value dm = e.ifElse(
        e.less(rs[1], rs[0]),
        [&] {
          return e.neg(
              e.sum(e.index(0), e.addIndex(rs[1], e.index(1)), [&](Value q) {
                return e.mul(e.load(buf.atda, {b, h, t, q}),
                             e.load(buf.a, {b, h, rowOf(rs[1]), q}));
              }));
        },
        zero);
    e.store(dm, buf.dm, {b, h, t, rs[1]});
  });
  // dbeta = rowsum(A^T dU * V) + rowsum(A^T dW~ * K) + rowsum(dM * K K^T).
  e.parallel({len}, [&](ValueRange r) {
    Value t = rowOf(r[0]);
    Value viaV = e.sum(e.index(0), dValue, [&](Value i) {
      return e.mul(e.load(buf.atdu, {b, h, t, i}), e.load(buf.v, {t, b, h, i}));
    });
    Value viaK = e.sum(e.index(0), dFeature, [&](Value f) {
      return e.mul(e.load(buf.atdwt, {b, h, t, f}),
                   e.load(buf.kf, {b, h, t, f}));
    });
    Value viaM = e.sum(e.index(0), r[0], [&](Value s) {
      return e.mul(e.load(buf.dm, {b, h, t, s}),
                   e.load(buf.gram, {b, h, t, s}));
    });
    e.store(e.add(viaV, e.add(viaK, viaM)), buf.dbeta, {t, b, h});
  });
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
