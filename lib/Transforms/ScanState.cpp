//===- ScanState.cpp - The forward's pass over the chunks ----------------===//
//
// scan_state's per-chunk steps (ScanKernels.h): a value block of the state
// as the right-hand side of the chunk's products (from global memory, or
// kept on chip in a local tile), the values the chunk writes (Ut - Wt S^T),
// the chunk's output and the state's update. Tile level, as ScanForward.cpp.
//
//===----------------------------------------------------------------------===//

#include "ScanKernels.h"

using namespace mlir;

namespace fwp {

Value ScanKernels::blockRows(Value buffer, Value b, Value h, Value v0) {
  return tiles.tile(buffer, {b, h, v0, e.index(0)}, config.valueBlock,
                    config.dFeature);
}

Value ScanKernels::localStateTile() {
  return localTile(config.valueBlock, config.dFeature);
}

Value ScanKernels::localTile(int64_t rows, int64_t cols) {
  Attribute space = config.stateMemory == StateMemory::Workgroup
                        ? gpu::AddressSpaceAttr::get(
                              e.b.getContext(), gpu::AddressSpace::Workgroup)
                        : Attribute();
  return tiles.localTile(rows, cols, space, config.localRowPadding());
}

ScanKernels::StateRhs ScanKernels::stateAsRhs(Value s, bool local,
                                              Value transposed, Value b,
                                              Value h, Value v0) {
  if (local)
    return {s, Transposed::Rhs};
  Value st = tiles.tile(transposed, {b, h, e.index(0), v0}, config.dFeature,
                        config.valueBlock);
  tiles.transpose(s, st);
  return {st, Transposed::None};
}

/// `target`, the rows [v0, v0 + Bv) of a state: those of `source`, or zero
/// without one. The state starts from the initial state, its gradient from
/// the final state's.
void ScanKernels::emitBlockRowsInit(Value source, Value target, Value b,
                                    Value h, Value v0) {
  if (source)
    tiles.copy(blockRows(source, b, h, v0), target);
  else
    tiles.fill(target, 0.0);
}

/// U, Y and the next state of one chunk on the value block [v0, v0 + Bv),
/// given the block's rows S of the state at the chunk's start, which it
/// updates.
void ScanKernels::emitStateChunk(Value b, Value h, Value v0, Value c, Value t0,
                                 Value len, Value s) {
  int64_t chunk = config.chunk, dFeature = config.dFeature,
          block = config.valueBlock;
  Value zero = e.index(0);
  StateRhs st = stateAsRhs(s, config.localForwardState(), buf.st, b, h, v0);
  Value q = tiles.tile(buf.qf, {b, h, t0, zero}, chunk, dFeature);
  Value k = tiles.tile(buf.kf, {b, h, t0, zero}, chunk, dFeature);
  emitNewValues(b, h, v0, st, t0);
  Value u = tiles.tile(buf.u, {b, h, t0, v0}, chunk, block);
  // A backward keeps S.
  if (buf.chunkStates)
    tiles.copy(
        s, tiles.tile(buf.chunkStates, {b, h, c, v0, zero}, block, dFeature));
  // Y = Q S^T + P U, stored for the chunk's rows before the sequence end.
  if (buf.y) {
    Value y = tiles.tile(buf.yw, {b, h, t0, v0}, chunk, block);
    tiles.product(q, st.tile, y, st.form);
    tiles.product(tiles.tile(buf.pq, {b, h, t0, zero}, chunk, chunk), u, y,
                  Transposed::None, /*accumulate=*/true);
    ifWholeChunk(
        len,
        [&] { tiles.copy(y, stepTile(buf.y, t0, b, h, v0, chunk, block)); },
        [&] {
          e.parallel({len, e.index(block)}, [&](ValueRange ri) {
            Value t = e.addIndex(t0, ri[0]), col = e.addIndex(v0, ri[1]);
            e.store(e.load(buf.yw, {b, h, t, col}), buf.y,
                    stepIndex(t, b, h, col));
          });
        });
  }
  // S' = S + U^T K.
  tiles.product(u, k, s, Transposed::Lhs, /*accumulate=*/true);
}

/// U = U~ - W~ S^T (delta), U = V (sum), on the value block [v0, v0 + Bv),
/// given S^T at the chunk's start as a product's right operand.
void ScanKernels::emitNewValues(Value b, Value h, Value v0, StateRhs st,
                                Value t0) {
  int64_t chunk = config.chunk, block = config.valueBlock;
  Value u = tiles.tile(buf.u, {b, h, t0, v0}, chunk, block);
  if (!config.isDelta())
    return tiles.copy(tiles.tile(buf.vt, {b, h, t0, v0}, chunk, block), u);
  tiles.product(chunkRows(buf.wt, b, h, t0, config.dFeature), st.tile, u,
                st.form);
  tiles.subtract(tiles.tile(buf.ut, {b, h, t0, v0}, chunk, block), u, u);
}

} // namespace fwp
