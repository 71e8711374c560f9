//===- ChunkLowering.h - Chunk tiles on tensors -----------------*- C++ -*-===//
//
// What the lowerings of the chunk operations (LowerChunk*.cpp) share: a
// chunk's rows of a per-step tensor as a static tile padded with zero rows,
// and the tile products, all on tensors.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_LIB_TRANSFORMS_CHUNKLOWERING_H
#define FWP_LIB_TRANSFORMS_CHUNKLOWERING_H

#include "fwp/Dialect/FwpOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"

namespace fwp {

/// Which operands of a tile product are read transposed: NN is
/// out[i, j] += lhs[i, k] rhs[k, j], NT rhs[j, k], TN lhs[k, i].
enum class ProductForm { NN, NT, TN };

/// Which tile of a product is lower triangular: the result (its blocks on
/// and below the diagonal are computed; above them callers read nothing, or
/// mask it: they hold the accumulator's values where the product goes by row
/// blocks, the whole product's where it does not) or the left operand (its
/// blocks above the diagonal are zero, and skipped by row blocks).
enum class Triangular { Result, Lhs };

/// The row blocks of triangular products and of the substitution: whole
/// register tiles (fwp/RegisterTile.h: 4 or 8 rows), and at C = 64 the work
/// of 10 blocks in 16.
constexpr int64_t kTriangleBlock = 16;

/// Columns [offset, offset + width) of the value dimension: the block of
/// the values (and of the state's rows) that a kernel instance takes.
struct ValueBlock {
  mlir::OpFoldResult offset;
  int64_t width;
};

/// Tiles of one chunk operation, for per-step tensors [T, B, H, *] (or
/// [B, T, H, *] batch first) and chunks of `chunk` rows.
class ChunkTiles {
public:
  /// Tiles built at `b`'s insertion point, in a function whose kernel
  /// configuration says how triangular products go.
  ChunkTiles(mlir::ImplicitLocOpBuilder &b, mlir::Type element, int64_t chunk,
             bool batchFirst);
  /// Tiles like `outer`'s, built with `b` (in the body of a loop being
  /// built, whose region has no parent yet).
  ChunkTiles(mlir::ImplicitLocOpBuilder &b, const ChunkTiles &outer)
      : b(b), element(outer.element), chunk(outer.chunk),
        batchFirst(outer.batchFirst), rowBlocks(outer.rowBlocks) {}

  mlir::Value index(int64_t value);
  /// Size `dim` of a per-step tensor `perStep` in the scan's terms: dim 0 is
  /// the steps, 1 the batch, 2 the heads, whatever the layout.
  mlir::Value stepDim(mlir::Value perStep, int64_t dim);
  /// The first value column of the block of `width` columns (of `values`)
  /// that the instance at `point` (batch, head, value block) takes: 0 where
  /// one block takes them all (and `point` has no third index).
  mlir::OpFoldResult blockStart(mlir::ValueRange point, int64_t width,
                                int64_t values);
  /// Chunks of a sequence of `steps` steps: ceil(steps / chunk).
  mlir::Value numChunks(mlir::Value steps);
  /// The grid of a kernel with an instance per chunk: (batch, head, chunk)
  /// of the per-step tensor `perStep`, whose sequence has `steps` steps.
  llvm::SmallVector<mlir::Value> chunkGrid(mlir::Value perStep,
                                           mlir::Value steps);
  /// Chunk N - 1 - i of `chunks`: step i of a pass from the last chunk to
  /// the first.
  mlir::Value fromLast(mlir::Value i, mlir::Value chunks);
  /// The first step and the length of chunk `c` of `steps` steps.
  std::pair<mlir::Value, mlir::Value> span(mlir::Value c, mlir::Value steps);

  /// A zero tensor of `shape`.
  mlir::Value zeros(llvm::ArrayRef<int64_t> shape);
  /// lhs + rhs, two tiles of one static shape.
  mlir::Value add(mlir::Value lhs, mlir::Value rhs);
  /// tensor.empty shaped like the per-step (or state) tensor `like`, of
  /// `elementType` (that of the result it is made for).
  mlir::Value emptyLike(mlir::Value like, mlir::Type elementType);
  /// tensor.empty of the type of `result` (a state-like one), its dynamic
  /// leading sizes from `leading` (batch, heads and, for per-chunk states,
  /// chunks).
  mlir::Value emptyState(mlir::Value result,
                         llvm::ArrayRef<mlir::Value> leading);

  /// Rows [t0, t0 + len) of batch element bi, head h of `perStep` as a
  /// `chunk x width` tile (`chunk` for beta), the rows past len zero.
  /// Features that fwp.dpfp makes for chunk operations alone
  /// (fusedFeatureMap) are made here from the rows of the map's input; their
  /// sizes (stepDim, emptyLike) are read from that input too, so that once
  /// every chunk operation is lowered the features are never stored.
  /// With `block`, only the block's columns: a `chunk x block.width` tile.
  mlir::Value loadRows(mlir::Value perStep, mlir::Value bi, mlir::Value h,
                       mlir::Value t0, mlir::Value len,
                       std::optional<ValueBlock> block = std::nullopt);
  /// Where rows [t0, t0 + len) of (bi, h) lie in a per-step tensor of width
  /// `width` (columns from `col0`, 0 by default): offsets, sizes and strides
  /// of a rank-reducing slice.
  struct Slice {
    llvm::SmallVector<mlir::OpFoldResult> offsets, sizes, strides;
  };
  /// The region [offsets, offsets + sizes) with unit strides.
  Slice region(llvm::ArrayRef<mlir::OpFoldResult> offsets,
               llvm::ArrayRef<mlir::OpFoldResult> sizes);
  Slice rowsSlice(mlir::Value bi, mlir::Value h, mlir::Value t0,
                  mlir::Value len, int64_t width,
                  mlir::OpFoldResult col0 = nullptr);
  /// The (bi, h) entry of a per-head tensor [B, H, sizes...], from `offsets`
  /// in the trailing dimensions (0 where not given).
  Slice perHead(mlir::Value bi, mlir::Value h,
                llvm::ArrayRef<mlir::OpFoldResult> sizes,
                llvm::ArrayRef<mlir::OpFoldResult> offsets = {});
  /// The region `slice` of `source` as a tensor of `shape`, the unit
  /// dimensions dropped.
  mlir::Value extract(mlir::Value source, llvm::ArrayRef<int64_t> shape,
                      const Slice &slice);
  /// A region of a tensor and the tile extracted from it.
  struct View {
    Slice slice;
    mlir::Value tile;
  };
  /// All the rows of (bi, h) in the per-step tensor `perStep` of `steps`
  /// steps, as a `steps x width` tile (`steps` for width 0: the gates), its
  /// columns from `col0`.
  View headRows(mlir::Value perStep, mlir::Value bi, mlir::Value h,
                mlir::Value steps, int64_t width,
                mlir::OpFoldResult col0 = nullptr);
  /// All the per-chunk states of (bi, h) in `states` [B, H, N, rows, cols],
  /// as an `N x rows x cols` tile, its rows from `row0`.
  View headStates(mlir::Value states, mlir::Value bi, mlir::Value h,
                  mlir::Value chunks, int64_t rows, int64_t cols,
                  mlir::OpFoldResult row0 = nullptr);
  /// The state of chunk `c` of (bi, h) in `states` [B, H, N, rows, cols], as
  /// a `rows x cols` tile.
  mlir::Value chunkState(mlir::Value states, mlir::Value bi, mlir::Value h,
                         mlir::Value c, int64_t rows, int64_t cols);
  /// The state a pass over the chunks starts from: the (bi, h) state
  /// `slice` of `given` (copied), or zero without one.
  mlir::Value startState(mlir::Value given, const Slice &slice, int64_t rows,
                         int64_t cols);
  /// The first `len` rows of a `chunk x width` (or `chunk`) tile.
  mlir::Value firstRows(mlir::Value tile, mlir::Value len);

  /// `dest` with the region `slice` overwritten by `source` (linalg.copy
  /// into that region of dest, so that bufferization writes in place rather
  /// than calling memref.copy, which the runtime's modules cannot link).
  mlir::Value place(mlir::Value source, mlir::Value dest, const Slice &slice);
  /// `dest` with the region `slice` overwritten by the transpose of the 2-d
  /// `source` (linalg.transpose into that region).
  mlir::Value placeTransposed(mlir::Value source, mlir::Value dest,
                              const Slice &slice);
  /// `source` copied into a new tensor (linalg.copy).
  mlir::Value copy(mlir::Value source);
  /// The transpose of a 2-d tile (linalg.transpose).
  mlir::Value transpose(mlir::Value tile);
  /// The region `slice` of `dest` overwritten by `source`, as a tensor of
  /// the region's type: what a parallel_insert_slice then puts in place.
  mlir::Value copyTo(mlir::Value source, mlir::Value dest, const Slice &slice);

  /// acc +/- lhs * rhs in `form`, a linalg.matmul (the transposes in its
  /// indexing maps).
  mlir::Value product(ProductForm form, mlir::Value lhs, mlir::Value rhs,
                      mlir::Value acc, bool subtract = false);
  /// acc + lhs * rhs in `form` (NN, or NT for a triangular result) where
  /// `which` is lower triangular, by row blocks of kTriangleBlock rows
  /// (ChunkTriangles.cpp).
  mlir::Value lowerProduct(ProductForm form, Triangular which, mlir::Value lhs,
                           mlir::Value rhs, mlir::Value acc);
  /// The block of a tile at static `offsets` of static `sizes`.
  mlir::Value block(mlir::Value tile, llvm::ArrayRef<int64_t> offsets,
                    llvm::ArrayRef<int64_t> sizes);
  /// diag(gates) tile: each row r of `tile` times gates[r].
  mlir::Value scaleRows(mlir::Value gates, mlir::Value tile);
  /// acc[r] +/- sum_c lhs[r, c] rhs[r, c].
  mlir::Value rowDots(mlir::Value lhs, mlir::Value rhs, mlir::Value acc,
                      bool subtract = false);
  /// `square` with the entries above its diagonal (and, if `strict`, on it)
  /// zero.
  mlir::Value lowerTriangle(mlir::Value square, bool strict = false);
  /// The size x size identity.
  mlir::Value identity(int64_t size);
  /// X with X_r = base_r - m[r, :] X, row by row down base's rows: the
  /// solution of (I + L) X = base for L, m's part below the diagonal
  /// (docs/delta-rule-math.md, section 4's forward substitution).
  mlir::Value substitute(mlir::Value m, mlir::Value base);
  /// A = (I + L)^-1 for L, the chunk x chunk m's part below the diagonal:
  /// by 16 x 16 blocks where the chunk holds two or more (section 8), each
  /// diagonal block by substitution, the rest by products (on the CPU only
  /// those below the diagonal; on the GPU a whole block row at a time, in
  /// one loop).
  mlir::Value inverse(mlir::Value m);

  mlir::ImplicitLocOpBuilder &b;
  mlir::Type element;
  int64_t chunk;
  bool batchFirst;
  /// Whether triangular products go by row blocks (ChunkTriangles.cpp).
  bool rowBlocks;
};

/// A slice of a forall's shared out that one point writes.
struct ParallelStore {
  mlir::Value source, dest;
  ChunkTiles::Slice slice;
};

/// The first `len` rows of a chunk's `tile` written to rows [t0, t0 + len)
/// of (bi, h) in the per-step shared out `out`, `width` columns from `col0`.
ParallelStore storeRows(ChunkTiles &tiles, mlir::Value tile, mlir::Value out,
                        mlir::Value bi, mlir::Value h, mlir::Value t0,
                        mlir::Value len, int64_t width,
                        mlir::OpFoldResult col0 = nullptr);

/// The width of the value blocks that `op`'s kernel splits `values` columns
/// into, for a state of `features` columns: its kernel configuration's value
/// block, halved while a block's state would be over kMaxBlockStateFloats,
/// where that divides them; else all of them (one block).
int64_t valueBlockWidth(mlir::Operation *op, int64_t values, int64_t features);

/// The most floats of a value block's state (16 KiB in f32, a 32 x 128
/// block): wider, the state passes' products (the block's rows of dY^T Q
/// and dU^T W~ accumulate in registers) spill on the GPU.
constexpr int64_t kMaxBlockStateFloats = 32 * 128;

/// Kernel `kernel`: an scf.forall over [0, bounds) tagged `fwp.kernel`, with
/// `outputs` as shared_outs: `body` builds one point's work (given its
/// indices and the shared outs' block arguments) and says what it writes,
/// which becomes the terminator's parallel_insert_slice ops. Where the
/// function's kernel configuration is a GPU target's, the forall is mapped
/// onto the grid, one instance a thread block.
mlir::scf::ForallOp
buildForall(mlir::ImplicitLocOpBuilder &b, llvm::StringRef kernel,
            llvm::ArrayRef<mlir::Value> bounds, mlir::ValueRange outputs,
            llvm::function_ref<llvm::SmallVector<ParallelStore>(
                mlir::ValueRange indices, mlir::ValueRange outs)>
                body);

/// One chunk's steps of the forward (docs/delta-rule-math.md, section 4), on
/// `chunk`-row tiles whose rows past the sequence's end are zero. The
/// lowerings of fwp.chunk_wy, fwp.chunk_states and fwp.chunk_output run each
/// in a kernel of its own; the fused forward runs all three in one, and
/// holds its tiles as the CPU's vector units read them best: K also
/// transposed, S transposed. (A product's operands are read along rows where
/// the product is A B; A B^T reads B down its columns.)

/// A chunk's keys K [C, D] and, where a kernel makes it, K^T [D, C]: with
/// it K K^T, Q K^T and S^T + K^T U are products A B.
struct KeyTile {
  KeyTile(mlir::Value rows, mlir::Value transposed = {})
      : rows(rows), transposed(transposed) {}
  mlir::Value rows;
  mlir::Value transposed;
};
/// A state S [d_v, D] as a kernel holds it: as is, or as S^T [D, d_v], with
/// which Wt S^T and Q S^T are products A B.
struct StateTile {
  StateTile(mlir::Value tile, bool transposed = false)
      : tile(tile), transposed(transposed) {}
  mlir::Value tile;
  bool transposed;
};

/// lhs K^T on and below the diagonal (zero above it), by row blocks.
mlir::Value lowerScores(ChunkTiles &tiles, mlir::Value lhs, KeyTile keys);

struct WyTiles {
  mlir::Value wt, ut;
};
/// Wt = A diag(b) K, Ut = A diag(b) V with A = (I + stril(diag(b) K K^T))^-1:
/// by forward substitution where triangular products go by row blocks (the
/// CPU), else as products with A formed by blocks (the GPU's tensor cores).
WyTiles chunkWy(ChunkTiles &tiles, KeyTile keys, mlir::Value values,
                mlir::Value gates);
/// The values the chunk writes, U = Ut - Wt S^T (delta: `wt` set) or V
/// (sum), given the state S at the chunk's start.
mlir::Value chunkWrites(ChunkTiles &tiles, mlir::Value values, mlir::Value wt,
                        StateTile state);
/// The state after the chunk, S + U^T K, held as `state` is.
mlir::Value chunkNextState(ChunkTiles &tiles, mlir::Value writes, KeyTile keys,
                           StateTile state);
/// The chunk's outputs: Y = Q S^T + tril(Q K^T) U.
mlir::Value chunkOutput(ChunkTiles &tiles, mlir::Value queries, KeyTile keys,
                        mlir::Value writes, StateTile state);

// One chunk's steps of the backward (docs/delta-rule-math.md, section 5),
// given the state S at its start and the gradient dS of its end state.

/// The gradient of the chunk's writes, dU = tril(Q K^T)^T dY + K dS^T.
mlir::Value chunkWritesGrad(ChunkTiles &tiles, mlir::Value queries,
                            mlir::Value keys, mlir::Value dy,
                            mlir::Value endGrad);
/// The gradient of the chunk's start state, dS + dY^T Q - dU^T Wt (no Wt
/// term for the sum rule: `wt` null), accumulated into `endGrad`'s tile:
/// nothing may read dS after it.
mlir::Value chunkStartGrad(ChunkTiles &tiles, mlir::Value queries,
                           mlir::Value dy, mlir::Value du, mlir::Value wt,
                           mlir::Value endGrad);
struct QkGradTiles {
  mlir::Value dq, dk, dwt;
};
/// dP = tril(dY U^T);  dQ = dY S + dP K;  dK = dP^T Q + U dS; with the
/// writes' gradient `du` (delta rule) also dWt = -dU S.
QkGradTiles chunkQkGrad(ChunkTiles &tiles, mlir::Value queries,
                        mlir::Value keys, mlir::Value written, mlir::Value dy,
                        mlir::Value du, mlir::Value start, mlir::Value endGrad);
struct WyGradTiles {
  mlir::Value dk, dv, dbeta;
};
/// The gradients through the WY form of `keys`, `values` and `gates`, given
/// dUt = `du` and dWt = `dwt`: dV, dbeta and the keys' share of dK.
WyGradTiles chunkWyGrad(ChunkTiles &tiles, mlir::Value keys, mlir::Value values,
                        mlir::Value gates, mlir::Value du, mlir::Value dwt);

/// The patterns of fwp-lower-chunks, one per operation.
void populateLowerChunkWyPattern(mlir::RewritePatternSet &patterns);
void populateLowerChunkStatesPattern(mlir::RewritePatternSet &patterns);
void populateLowerChunkOutputPattern(mlir::RewritePatternSet &patterns);
void populateLowerChunkStatesGradPattern(mlir::RewritePatternSet &patterns);
void populateLowerChunkQkGradPattern(mlir::RewritePatternSet &patterns);
void populateLowerChunkWyGradPattern(mlir::RewritePatternSet &patterns);
/// The forward's three operations as one kernel per (batch, head).
void populateFuseChunkForwardPattern(mlir::RewritePatternSet &patterns);
/// fwp.chunk_output in its fwp.chunk_states' kernel (LowerChunkStates.cpp).
void populateFuseChunkStatesOutputPattern(mlir::RewritePatternSet &patterns);
/// fwp.dpfp and fwp.dpfp_grad outside kernels as kernels over (batch, head,
/// block of rows) (FeatureMapKernels.cpp).
void populateFeatureMapKernelPatterns(mlir::RewritePatternSet &patterns);
/// The delta rule's fwp.chunk_qk_grad and fwp.chunk_wy_grad (and the sum of
/// their key gradients) as one kernel over (batch, head, chunk).
void populateFuseChunkGradientsPattern(mlir::RewritePatternSet &patterns);
/// The backward's per-chunk operations (delta rule: fwp.chunk_qk_grad and
/// fwp.chunk_wy_grad, and the sum of their key gradients) as one kernel.
void populateFuseChunkBackwardPattern(mlir::RewritePatternSet &patterns);

/// dK = dK1 + dK2 of the delta rule's two key gradients into `init`: a
/// linalg.add, or where `init` is of a narrower storage type the sum in the
/// arithmetic type rounded once (a linalg.generic). isKeyGradientSum
/// recognises both.
mlir::Value sumKeyGradients(mlir::OpBuilder &b, mlir::Location loc,
                            mlir::Value lhs, mlir::Value rhs, mlir::Value init);
bool isKeyGradientSum(mlir::Operation *op);

/// Whether every use of `value` is by `user` (the fusions' condition).
bool onlyUsedBy(mlir::Value value, mlir::Operation *user);

/// The fwp.dpfp that makes `perStep` when chunk operations are all that read
/// it: their kernels then apply the map to a chunk's rows of its input, 2 nu
/// times narrower than the features, which are never stored. None on a GPU
/// configuration, whose chunk operations read the features.
DpfpOp fusedFeatureMap(mlir::Value perStep);

/// Fails with a message on `op` unless `type`'s last dimension is static.
mlir::LogicalResult requireStaticWidth(mlir::PatternRewriter &rewriter,
                                       mlir::Operation *op, mlir::Value value,
                                       llvm::StringRef name);

} // namespace fwp

#endif // FWP_LIB_TRANSFORMS_CHUNKLOWERING_H
