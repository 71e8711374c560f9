//===- ScanForward.cpp - Chunked forward kernels of fwp.scan --------------===//
//
// Inside a kernel, e.parallel loops are work shared by the threads of a
// block; plain code and e.forLoop loops run on every thread. Each shared
// loop reads only what earlier ones wrote, so a barrier after each is all a
// GPU lowering needs.
//
//===----------------------------------------------------------------------===//

#include "ScanKernels.h"

using namespace mlir;

namespace fwp {

ScanKernels::ScanKernels(ImplicitLocOpBuilder &b, const ScanConfig &config,
                         const ScanBuffers &buffers)
    : e(b, cast<MemRefType>(buffers.v.getType()).getElementType()),
      config(config), buf(buffers) {}

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
  e.kernel("scan_prepare", {batch, heads, chunks}, [&](ValueRange ids) {
    auto [t0, len] = chunkSpan(ids[2], seqLen);
    emitPrepare(ids[0], ids[1], t0, len);
  });
  e.kernel("scan_state", {batch, heads}, [&](ValueRange ids) {
    emitStateInit(ids[0], ids[1]);
    e.forLoop(e.index(0), chunks, [&](Value c) {
      auto [t0, len] = chunkSpan(c, seqLen);
      emitStateChunk(ids[0], ids[1], c, t0, len);
    });
  });
}

/// x[j] = relu(concat(k, -k))[j] for the raw vector src[t, b, h, :].
Value ScanKernels::dpfpInput(Value src, ValueRange row, Value j) {
  Value d = e.index(config.dInput);
  Value value = e.load(src, {row[0], row[1], row[2], e.remIndex(j, d)});
  return e.relu(e.select(e.less(j, d), value, e.neg(value)));
}

/// phi[(i-1)*2d + j] = x[j] * x[(j - i) mod 2d], i = 1..nu (torch.roll).
Value ScanKernels::dpfpProduct(Value src, ValueRange row, Value i, Value j) {
  Value twoD = e.index(2 * config.dInput);
  Value rolled = e.remIndex(e.subIndex(e.addIndex(j, twoD), i), twoD);
  return e.mul(dpfpInput(src, row, j), dpfpInput(src, row, rolled));
}

/// sum(phi) + eps.
Value ScanKernels::dpfpNormalizer(Value src, ValueRange row) {
  Value total = e.sum(e.index(1), e.index(config.nu + 1), [&](Value i) {
    return e.sum(e.index(0), e.index(2 * config.dInput),
                 [&](Value j) { return dpfpProduct(src, row, i, j); });
  });
  return e.add(total, e.real(config.eps));
}

/// The features of the chunk's rows of q and k, [b, h, t, :]: DPFP phi'
/// when fused (first the normaliser of each row, then every feature in
/// parallel), a copy otherwise.
void ScanKernels::emitFeatures(Value b, Value h, Value t0, Value len) {
  std::pair<Value, Value> rows[] = {{buf.q, buf.qf}, {buf.k, buf.kf}};
  if (config.fusedDpfp)
    e.parallel({len}, [&](ValueRange r) {
      Value t = e.addIndex(t0, r[0]);
      for (auto [slot, pair] : llvm::enumerate(rows))
        e.store(dpfpNormalizer(pair.first, {t, b, h}), buf.featureNorms,
                {b, h, t, e.index(slot)});
    });
  e.parallel({len, e.index(config.dFeature)}, [&](ValueRange rf) {
    Value t = e.addIndex(t0, rf[0]), f = rf[1];
    for (auto [slot, pair] : llvm::enumerate(rows)) {
      auto [src, dst] = pair;
      if (!config.fusedDpfp) {
        e.store(e.load(src, {t, b, h, f}), dst, {b, h, t, f});
        continue;
      }
      // f = (i - 1) * 2d + j.
      Value twoD = e.index(2 * config.dInput);
      Value i = e.addIndex(arith::DivUIOp::create(e.b, f, twoD), e.index(1));
      Value j = e.remIndex(f, twoD);
      Value norm = e.load(buf.featureNorms, {b, h, t, e.index(slot)});
      e.store(e.div(dpfpProduct(src, {t, b, h}, i, j), norm), dst,
              {b, h, t, f});
    }
  });
}

/// dot(x[b, h, tx, :], y[b, h, ty, :]) over the feature dimension.
Value ScanKernels::featureDot(Value x, Value tx, Value y, Value ty, Value b,
                              Value h) {
  return e.sum(e.index(0), e.index(config.dFeature), [&](Value f) {
    return e.mul(e.load(x, {b, h, tx, f}), e.load(y, {b, h, ty, f}));
  });
}

/// Rows of X = A diag(beta) Base with A = (I + diag(beta) stril(K K^T))^-1,
/// by forward substitution down the chunk; one thread per column.
void ScanKernels::emitForwardSubstitution(
    Value width, Value out, Value b, Value h, Value t0, Value len,
    function_ref<Value(Value, Value)> base) {
  e.parallel({width}, [&](ValueRange col) {
    e.forLoop(e.index(0), len, [&](Value r) {
      Value t = e.addIndex(t0, r);
      Value earlier = e.sum(e.index(0), r, [&](Value s) {
        return e.mul(e.load(buf.gram, {b, h, t, s}),
                     e.load(out, {b, h, e.addIndex(t0, s), col[0]}));
      });
      Value beta = e.load(buf.beta, {t, b, h});
      e.store(e.mul(beta, e.sub(base(t, col[0]), earlier)), out,
              {b, h, t, col[0]});
    });
  });
}

/// A = (I + M)^-1 itself, column by column: A[r, j] = [r == j] -
/// beta_r sum_{s<r} (K K^T)[r, s] A[s, j]. Only the backward needs it.
void ScanKernels::emitInverse(Value b, Value h, Value t0, Value len) {
  e.parallel({e.index(config.chunk)}, [&](ValueRange col) {
    e.forLoop(e.index(0), len, [&](Value r) {
      Value t = e.addIndex(t0, r);
      Value earlier = e.sum(e.index(0), r, [&](Value s) {
        return e.mul(e.load(buf.gram, {b, h, t, s}),
                     e.load(buf.a, {b, h, e.addIndex(t0, s), col[0]}));
      });
      Value identity = e.select(
          arith::CmpIOp::create(e.b, arith::CmpIPredicate::eq, r, col[0]),
          e.real(1.0), e.real(0.0));
      Value beta = e.load(buf.beta, {t, b, h});
      e.store(e.sub(identity, e.mul(beta, earlier)), buf.a, {b, h, t, col[0]});
    });
  });
}

void ScanKernels::emitPrepare(Value b, Value h, Value t0, Value len) {
  emitFeatures(b, h, t0, len);
  e.parallel({len, e.index(config.chunk)}, [&](ValueRange rs) {
    Value t = e.addIndex(t0, rs[0]), ts = e.addIndex(t0, rs[1]);
    Value zero = e.real(0.0);
    e.store(e.ifElse(
                e.lessEqual(rs[1], rs[0]),
                [&] { return featureDot(buf.qf, t, buf.kf, ts, b, h); }, zero),
            buf.pq, {b, h, t, rs[1]});
    if (config.isDelta())
      e.store(e.ifElse(
                  e.less(rs[1], rs[0]),
                  [&] { return featureDot(buf.kf, t, buf.kf, ts, b, h); },
                  zero),
              buf.gram, {b, h, t, rs[1]});
  });
  if (!config.isDelta())
    return;
  emitForwardSubstitution(e.index(config.dFeature), buf.wt, b, h, t0, len,
                          [&](Value t, Value col) {
                            return e.load(buf.kf, {b, h, t, col});
                          });
  emitForwardSubstitution(e.index(config.dValue), buf.ut, b, h, t0, len,
                          [&](Value t, Value col) {
                            return e.load(buf.v, {t, b, h, col});
                          });
  if (buf.a)
    emitInverse(b, h, t0, len);
}

void ScanKernels::emitStateInit(Value b, Value h) {
  e.parallel(
      {e.index(config.dValue), e.index(config.dFeature)}, [&](ValueRange iv) {
        Value init = buf.initial ? e.load(buf.initial, {b, h, iv[0], iv[1]})
                                 : e.real(0.0);
        e.store(init, buf.state, {b, h, iv[0], iv[1]});
      });
}

/// U, Y and the next state of one chunk, given the state at its start.
void ScanKernels::emitStateChunk(Value b, Value h, Value c, Value t0,
                                 Value len) {
  Value dValue = e.index(config.dValue), dFeature = e.index(config.dFeature);
  // U = U~ - W~ S^T (delta); U = V (sum). A backward also keeps S.
  e.parallel({len, dValue}, [&](ValueRange ri) {
    Value t = e.addIndex(t0, ri[0]);
    Value u;
    if (config.isDelta()) {
      Value retrieved = e.sum(e.index(0), dFeature, [&](Value f) {
        return e.mul(e.load(buf.wt, {b, h, t, f}),
                     e.load(buf.state, {b, h, ri[1], f}));
      });
      u = e.sub(e.load(buf.ut, {b, h, t, ri[1]}), retrieved);
    } else {
      u = e.load(buf.v, {t, b, h, ri[1]});
    }
    e.store(u, buf.u, {b, h, t, ri[1]});
  });
  if (buf.chunkStates)
    e.parallel({dValue, dFeature}, [&](ValueRange iv) {
      e.store(e.load(buf.state, {b, h, iv[0], iv[1]}), buf.chunkStates,
              {b, h, c, iv[0], iv[1]});
    });
  // Y = Q S^T + tril(Q K^T) U.
  if (buf.y)
    e.parallel({len, dValue}, [&](ValueRange ri) {
      Value t = e.addIndex(t0, ri[0]);
      Value fromState = e.sum(e.index(0), dFeature, [&](Value f) {
        return e.mul(e.load(buf.qf, {b, h, t, f}),
                     e.load(buf.state, {b, h, ri[1], f}));
      });
      Value fromChunk =
          e.sum(e.index(0), e.addIndex(ri[0], e.index(1)), [&](Value s) {
            return e.mul(e.load(buf.pq, {b, h, t, s}),
                         e.load(buf.u, {b, h, e.addIndex(t0, s), ri[1]}));
          });
      e.store(e.add(fromState, fromChunk), buf.y, {t, b, h, ri[1]});
    });
  // S' = S + U^T K.
  e.parallel({dValue, dFeature}, [&](ValueRange iv) {
    Value update = e.sum(e.index(0), len, [&](Value r) {
      Value t = e.addIndex(t0, r);
      return e.mul(e.load(buf.u, {b, h, t, iv[0]}),
                   e.load(buf.kf, {b, h, t, iv[1]}));
    });
    Value old = e.load(buf.state, {b, h, iv[0], iv[1]});
    e.store(e.add(old, update), buf.state, {b, h, iv[0], iv[1]});
  });
}

} // namespace fwp
