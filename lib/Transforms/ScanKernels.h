//===- ScanKernels.h - Chunked kernels of fwp.scan and its gradient -*- C++
//-*-===//
//
// The kernels fwp-tile-scan emits, in the chunked (WY) form of
// docs/delta-rule-math.md, sections 4 and 5. Inputs are [T, B, H, *] as in
// the dialect; the workspace is [B, H, T, *], so that the rows one kernel
// instance touches are contiguous.
//
// Forward (fwp.scan):
//   prepare     forall (b, h, chunk)  features, tril(Q K^T), K K^T, A, and
//                                      W~ = A b K, U~ = A b V (tiles)
//   state       forall (b, h, vblock)  sequential over chunks: U, Y, S' on
//                                      a block of value columns (tiles)
// Backward (fwp.scan_grad): prepare and state again (the state kernel keeps
// each chunk's start state and U), then
//   state_grad  forall (b, h, vblock)  backwards over chunks: dU, the
//                                      state gradient on a block of value
//                                      rows and dK's term U dS from it
//                                      (tiles)
//   chunk_grad  forall (b, h, chunk)   dQ, dK, dV, dbeta, all chunks in
//                                      parallel (tiles)
//   input_grad  forall (b, h, chunk)   dq, dk through DPFP's backward
// With scratch slots, chunk_grad and input_grad are forall (slot) instead,
// each slot taking chunks in turn (emitChunkKernel).
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_TRANSFORMS_SCANKERNELS_H
#define FWP_LIB_TRANSFORMS_SCANKERNELS_H

#include "LoopEmitter.h"
#include "TileBuilder.h"

#include "fwp/Dialect/FwpOps.h"

namespace fwp {

/// The side of the blocks the delta rule's A is inverted by: the tensor
/// cores' 16 rows.
constexpr int64_t kInverseBlock = 16;

// StateMemory (fwp/Dialect/FwpEnums.h): where the state kernels
// (scan_state, scan_state_grad) keep their block of the state, or of its
// gradient, across the chunks: rows of a [B, H, d_v, D] buffer in the
// workspace (global memory), or kernel-local tiles, in the GPU's workgroup
// (shared) memory or on the CPU instance's stack (the GPU's form checked on
// the host).

/// The widest features (D) whose chunk-parallel backward kernels take
/// scratch slots (ScanConfig::scratchSlots).
constexpr int64_t kMaxSlotFeatures = 128;

/// Elements a local state tile's rows are padded by in shared memory: rows
/// 4 words longer than D (a multiple of 32 words) put the 8 rows a
/// tensor-core fragment reads on different banks.
constexpr int64_t kWorkgroupRowPadding = 4;

/// Static sizes and options of one scan.
struct ScanConfig {
  Rule rule = Rule::Delta;
  bool fusedDpfp = false;
  int64_t nu = 1;
  double eps = 0.0;
  int64_t dInput = 0; // width of the q and k rows the scan reads
  int64_t dFeature = 0;
  int64_t dValue = 0;
  int64_t chunk = 0;
  /// Value columns per scan_state instance; divides dValue.
  int64_t valueBlock = 0;
  StateMemory stateMemory = StateMemory::Workspace;
  /// The per-step inputs and outputs are [B, T, H, *] (else [T, B, H, *]).
  bool batchFirst = false;
  /// Gradients: scan_chunk_grad and scan_input_grad run
  /// min(B H N, scratchSlots) instances, each going over its share of the
  /// (batch, head, chunk) work in turn, and their scratch (what only one
  /// chunk's work reads and writes: ScanBuffers::slotScratch) holds one
  /// chunk per instance; 0: an instance per chunk, scratch for every chunk.
  int64_t scratchSlots = 0;
  /// The most bytes of kernel-local tiles an instance keeps.
  int64_t localBytes = 0;
  /// Bytes per element (4 or 8).
  int64_t elementBytes = 4;

  bool isDelta() const { return rule == Rule::Delta; }
  /// Elements a kernel-local tile's rows are padded by.
  int64_t localRowPadding() const {
    return stateMemory == StateMemory::Workgroup ? kWorkgroupRowPadding : 0;
  }
  /// Whether a kernel keeps `count` local rows x cols tiles: local
  /// memory asked for, and the tiles within localBytes.
  bool fitsLocally(int64_t count, int64_t rows, int64_t cols) const {
    return stateMemory != StateMemory::Workspace &&
           count * rows * (cols + localRowPadding()) * elementBytes <=
               localBytes;
  }
  /// Whether a state kernel that needs `count` Bv x D tiles keeps
  /// them local.
  bool localState(int64_t count) const {
    return fitsLocally(count, valueBlock, dFeature);
  }
  /// Whether the state kernels' instances split the value columns, so that
  /// a sum over them (dK's term U dS) crosses instances.
  bool splitsValues() const { return valueBlock < dValue; }
  /// Whether scan_state_grad needs a Bv x D scratch tile besides dS: for
  /// dU^T W~ (delta rule) and for an instance's share of U dS.
  bool stateGradScratch() const { return isDelta() || splitsValues(); }
  /// Kernel-local tiles of scan_state (S) and of scan_state_grad (dS and
  /// its scratch).
  bool localForwardState() const { return localState(1); }
  /// Whether the kernels that read DPFP's x = relu([k, -k])
  /// (scan_prepare, scan_input_grad) build each chunk's rows of it in a
  /// kernel-local C x 2d tile, q's then k's, rather than in the workspace:
  /// local state memory asked for, and the tile within localBytes.
  bool localDpfpInput() const {
    return fusedDpfp && fitsLocally(1, chunk, 2 * dInput);
  }
  bool localStateGrad() const { return localState(stateGradScratch() ? 2 : 1); }
};

/// Buffers of the kernels; null where a configuration does not use one.
struct ScanBuffers {
  // Inputs, [T, B, H, *] (beta [T, B, H]); initial [B, H, d_v, D].
  Value q, k, v, beta, initial;
  // Forward outputs: y [T, B, H, d_v]; the running state [B, H, d_v, D],
  // which ends as the final state.
  Value y, state;
  // Forward workspace [B, H, T', *], T' = T rounded up to whole chunks, the
  // rows past T zero: features (D), tril(Q K^T) (C), values V (d_v), new
  // values U (d_v), outputs Y (d_v); for the delta rule the gates b
  // ([B, H, T']), W~ (D), U~ (d_v), stril(K K^T) (C), A (C) and A diag(b)
  // (C); the state at every chunk start [B, H, chunks, d_v, D] (backward
  // only).
  Value qf, kf, pq, vt, u, yw, bt, wt, ut, gram, a, ab, chunkStates;
  // Transposed operands, laid out once for the products: each chunk's K^T
  // [B, H, chunks, D, C]; the state's S^T [B, H, D, d_v] at the current
  // chunk (none with a local state, which the products read transposed).
  Value kt, st;
  // DPFP, if fused: x = relu([q, -q]) and relu([k, -k]) ([B, H, T', 2d]),
  // and the normalisers sum(phi) + eps of q and of k ([B, H, T']).
  Value qx, kx, qNorms, kNorms;
  // Backward inputs: dy [T, B, H, d_v], dFinal [B, H, d_v, D].
  Value dy, dFinal;
  // Backward outputs: dq, dk, dv [T, B, H, *], dbeta [T, B, H]; the running
  // state gradient [B, H, d_v, D], which ends as the initial state's.
  Value dq, dk, dv, dbeta, dState;
  // Backward workspace [B, H, T', *], the rows past T zero: output
  // gradients dY and dU (d_v), feature gradients (D), the state gradient's
  // transpose at the current chunk [B, H, D, d_v] and its scratch (dU^T W~,
  // an instance's share of U dS) [B, H, d_v, D]; per chunk U^T
  // then V^T [B, H, chunks, d_v, C], and dP, dA, A^T dA, dM, A^T then dM^T
  // (C), dW~ and A^T dW~ (D), A^T dU (d_v), dbeta ([B, H, T']).
  Value dyw, du, dqf, dkf, dst, dsScratch, valuesT, dp, da, atda, dm, squareT,
      dwt, atdwt, atdu, dbw;
  // DPFP's backward, for q and then k: phi unnormalised (D), sum(phi) and
  // g . phi ([B, H, T']), dL/dx (2d).
  Value phi, phiSums, phiDots, dx;
  // The buffers above that are one chunk per slot ([slots, 1, C, *],
  // [slots, 1, C] or [slots, 1, 1, rows, cols]; ScanConfig::scratchSlots)
  // rather than [B, H, T', *] or [B, H, chunks, rows, cols].
  llvm::DenseSet<Value> slotScratch;
};

/// Emits the kernels of one scan into the current insertion point.
class ScanKernels {
public:
  ScanKernels(ImplicitLocOpBuilder &b, const ScanConfig &config,
              const ScanBuffers &buffers);

  /// prepare and state: y, the final state, and (if their buffers are set)
  /// A, U and the chunk start states for a backward.
  void emitForward(Value seqLen, Value batch, Value heads);
  /// state_grad and chunk_grad; emitForward must have run first with A, U
  /// and the chunk start states kept.
  void emitBackward(Value seqLen, Value batch, Value heads);

private:
  Value numChunks(Value seqLen);
  /// The indices of step t, batch element b, head h (and column `col`, if
  /// given) in a per-step input or output, in its layout.
  llvm::SmallVector<Value, 4> stepIndex(Value t, Value b, Value h,
                                        Value col = nullptr);
  /// The [rows, cols] tile of a per-step input or output at step t0, batch
  /// element b, head h and column c0.
  Value stepTile(Value buffer, Value t0, Value b, Value h, Value c0,
                 int64_t rows, int64_t cols);
  /// First step and length of chunk `c`.
  std::pair<Value, Value> chunkSpan(Value c, Value seqLen);
  void ifWholeChunk(Value len, function_ref<void()> whole,
                    function_ref<void()> partial);
  Value chunkRows(Value buffer, Value b, Value h, Value t0, int64_t width);
  /// The offsets of workspace row `row` (and column `col`, if given) of
  /// head (b, h) in `buffer`: (b, h, row, col); in a slot's scratch
  /// (slot, 0, row - the chunk's first row, col); in the local x tile
  /// (row - the chunk's first row, col).
  llvm::SmallVector<Value, 4> rowAt(Value buffer, Value b, Value h, Value row,
                                    Value col = nullptr);
  /// A chunk-parallel kernel: body(b, h, c, t0, len) for every chunk of
  /// every head, an instance each, or, if `slotted` and the config has
  /// scratch slots, min(B H N, slots) instances that take the chunks in
  /// turn, each with its scratch slot. With `localInput`, DPFP's x is a
  /// local tile of the kernel (bindLocalDpfpInput).
  void emitChunkKernel(
      llvm::StringRef name, Value seqLen, Value chunks, Value batch,
      Value heads,
      function_ref<void(Value b, Value h, Value c, Value t0, Value len)> body,
      bool slotted, bool localInput);
  Value chunkMatrix(Value buffer, Value b, Value h, Value c, int64_t rows,
                    int64_t cols);
  /// The state at chunk c's start (kept for a backward).
  Value chunkStartState(Value b, Value h, Value c);

  // DPFP, on the raw row src[t, b, h, :].
  Value dpfpInput(Value src, ValueRange row, Value j);
  /// The chunk's rows of the input `src` into `dst`: x = relu([src, -src])
  /// with DPFP, else a copy; zero past the sequence end.
  void emitInputRows(Value src, Value dst, Value b, Value h, Value t0,
                     Value len);
  /// With ScanConfig::localDpfpInput, a kernel-local C x 2d tile for x,
  /// made at the kernel's start, that buf.qx and buf.kx stand for until
  /// the kernel ends (rowAt maps rows from t0 of the chunk at hand onto it).
  void bindLocalDpfpInput();
  void unbindLocalDpfpInput();
  void emitFeatures(Value b, Value h, Value t0, Value len);
  void emitDpfpTiles(Value x, Value features, Value norms, Value b, Value h,
                     Value t0);
  void emitDpfpProducts(Value x, Value features, Value b, Value h, Value t0);
  void emitDpfpBackward(Value x, Value featureGrad, Value out, Value b, Value h,
                        Value t0, Value len);
  void emitDpfpInputGradient(Value x, Value dphi, Value b, Value h, Value t0);

  // Forward pieces.
  void emitChunkLoad(Value src, Value dst, Value b, Value h, Value c0, Value t0,
                     Value len, int64_t cols);
  void emitChunkLoads(Value b, Value h, Value t0, Value len);
  void emitInverse(Value b, Value h, Value t0);
  void emitBlockInverse(Value b, Value h, Value t0);
  void emitPrepare(Value b, Value h, Value c, Value t0, Value len);
  /// Rows [v0, v0 + Bv) of a state-shaped [B, H, d_v, D] buffer.
  Value blockRows(Value buffer, Value b, Value h, Value v0);
  /// A kernel-local Bv x D tile in the config's state memory.
  Value localStateTile();
  /// A kernel-local rows x cols tile in the config's state memory, its rows
  /// padded by ScanConfig::localRowPadding.
  Value localTile(int64_t rows, int64_t cols);
  /// S^T as a product's right operand, for the block `s` of a state: `s`
  /// itself read transposed if it is a local tile, else laid out into
  /// `transposed` ([B, H, D, d_v]) and read as it is.
  struct StateRhs {
    Value tile;
    Transposed form;
  };
  StateRhs stateAsRhs(Value s, bool local, Value transposed, Value b, Value h,
                      Value v0);
  void emitBlockRowsInit(Value source, Value target, Value b, Value h,
                         Value v0);
  void emitStateChunk(Value b, Value h, Value v0, Value c, Value t0, Value len,
                      Value s);
  void emitNewValues(Value b, Value h, Value v0, StateRhs st, Value t0);

  // Backward pieces.
  void emitStateGradChunk(Value b, Value h, Value v0, Value t0, Value len,
                          Value ds, Value scratch);
  void emitKeyGradStateTerm(Value b, Value h, Value v0, Value t0, Value ds,
                            Value scratch);
  void emitStepStore(Value tile, Value out, Value b, Value h, Value t0,
                     Value len);
  void emitChunkGrad(Value b, Value h, Value c, Value t0, Value len);
  void emitDeltaChunkGrad(Value b, Value h, Value c, Value t0, Value len);
  void emitInputGrads(Value b, Value h, Value t0, Value len);

  Emitter e;
  TileBuilder tiles;
  ScanConfig config;
  ScanBuffers buf;
  // The running instance's scratch slot and first workspace row, inside
  // emitChunkKernel with scratch slots.
  Value slot, slotRow;
  // The kernel-local x tile (bindLocalDpfpInput), the workspace buffers it
  // stands for, and the first workspace row of the chunk at hand.
  Value localX, workspaceQx, workspaceKx, localXRow;
};

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_SCANKERNELS_H
