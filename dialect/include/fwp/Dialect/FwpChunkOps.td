//===- FwpChunkOps.td - Stages of the chunked scan ---------*- tablegen -*-===//
//
// The chunked (WY) algorithm of docs/delta-rule-math.md, section 4, as three
// operations on tensors, in the order fla's chunk_delta_rule calls them:
//
//   %wt, %ut        = fwp.chunk_wy %k, %v, %beta          (prepare_wy_repr)
//   %h, %u, %final  = fwp.chunk_states %k, %ut wt(%wt)    (chunk_fwd_h)
//   %y              = fwp.chunk_output %q, %k, %u, %h     (chunk_fwd_o)
//
// `fwp-scan-to-chunks` writes an fwp.scan this way. Per-step tensors keep the
// scan's layout, [T, B, H, *] (or [B, T, H, *] with `batch_first`); chunk
// `c` is rows [c C, min((c + 1) C, T)) of each (batch, head), the last one
// possibly shorter. `chunk_size` is C, the choice of the kernel
// configuration, recorded on each stage.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_DIALECT_FWPCHUNKOPS_TD
#define FWP_DIALECT_FWPCHUNKOPS_TD

include "fwp/Dialect/FwpDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Fwp_ChunkTensor : RankedTensorOf<[AnyFloat]>;

def Fwp_ChunkWyOp : Fwp_Op<"chunk_wy", [Pure]> {
  let summary = "the WY form of each chunk's delta-rule writes";
  let description = [{
    For every chunk of every batch element and head, with `K` (`len x D`),
    `V` (`len x d_v`) and the gates `b` of its rows:

    ```
    M  = diag(b) stril(K K^T)       strictly lower triangular
    A  = (I + M)^-1                 unit lower triangular
    Wt = A diag(b) K                ("W~", len x D)
    Ut = A diag(b) V                ("U~", len x d_v)
    ```

    Neither depends on the state, so every chunk is independent. The
    results `wt` and `ut` have the types of `k` and `v`: row `r` of a chunk
    is step `c C + r`.

    Example:

    ```mlir
    %wt, %ut = fwp.chunk_wy %k, %v, %beta chunk_size = 16
        : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
        -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
    ```
  }];
  let arguments = (ins Fwp_ChunkTensor:$k,
                       Fwp_ChunkTensor:$v,
                       Fwp_ChunkTensor:$beta,
                       I64Attr:$chunk_size,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_ChunkTensor:$wt, Fwp_ChunkTensor:$ut);
  let assemblyFormat = [{
    $k `,` $v `,` $beta `chunk_size` `=` $chunk_size
    (`batch_first` $batch_first^)?
    attr-dict `:` type($k) `,` type($v) `,` type($beta)
    `->` type($wt) `,` type($ut)
  }];
  let hasVerifier = 1;
}

def Fwp_ChunkStatesOp : Fwp_Op<"chunk_states", [Pure, AttrSizedOperandSegments]> {
  let summary = "the pass over the chunks that carries the state";
  let description = [{
    Sequentially over the chunks of every batch element and head, from `S`
    = `initial` (`[B, H, d_v, D]`) or zero:

    ```
    h[c] = S                       the state at the chunk's start
    U    = values - Wt S^T         (values itself without `wt`)
    S    = S + U^T K
    ```

    With `wt` (the delta rule) `values` is the chunk's `Ut` and `U` the
    values the chunk actually writes; without it (the sum rule) `values` is
    `V`. Results: the start states `h` (`[B, H, N, d_v, D]`, `N =
    ceil(T / C)`), `U` (the type of `values`) and the final state (`[B, H,
    d_v, D]`). Only this stage is sequential in time.

    Example:

    ```mlir
    %h, %u, %final = fwp.chunk_states %k, %ut wt(%wt : tensor<40x2x4x32xf32>)
        chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
        -> tensor<2x4x3x8x32xf32>, tensor<40x2x4x8xf32>, tensor<2x4x8x32xf32>
    ```
  }];
  let arguments = (ins Fwp_ChunkTensor:$k,
                       Fwp_ChunkTensor:$values,
                       Optional<Fwp_ChunkTensor>:$wt,
                       Optional<Fwp_ChunkTensor>:$initial,
                       I64Attr:$chunk_size,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_ChunkTensor:$h,
                      Fwp_ChunkTensor:$u,
                      Fwp_ChunkTensor:$final_state);
  let assemblyFormat = [{
    $k `,` $values (`wt` `(` $wt^ `:` type($wt) `)`)?
    (`initial` `(` $initial^ `:` type($initial) `)`)?
    `chunk_size` `=` $chunk_size (`batch_first` $batch_first^)?
    attr-dict `:` type($k) `,` type($values)
    `->` type($h) `,` type($u) `,` type($final_state)
  }];
  let hasVerifier = 1;
}

def Fwp_ChunkOutputOp : Fwp_Op<"chunk_output", [Pure]> {
  let summary = "each chunk's outputs from its start state and its writes";
  let description = [{
    For every chunk, all chunks independent:

    ```
    Y = Q h[c]^T + tril(Q K^T) U
    ```

    the state at the chunk's start read by the queries, plus the chunk's
    own writes up to and including each row. `q` and `k` are `[T, B, H,
    D]`, `u` and the result `[T, B, H, d_v]`, `h` the start states of
    `fwp.chunk_states`.

    Example:

    ```mlir
    %y = fwp.chunk_output %q, %k, %u, %h chunk_size = 16
        : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
          tensor<2x4x3x8x32xf32> -> tensor<40x2x4x8xf32>
    ```
  }];
  let arguments = (ins Fwp_ChunkTensor:$q,
                       Fwp_ChunkTensor:$k,
                       Fwp_ChunkTensor:$u,
                       Fwp_ChunkTensor:$h,
                       I64Attr:$chunk_size,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_ChunkTensor:$y);
  let assemblyFormat = [{
    $q `,` $k `,` $u `,` $h `chunk_size` `=` $chunk_size
    (`batch_first` $batch_first^)?
    attr-dict `:` type($q) `,` type($k) `,` type($u) `,` type($h)
    `->` type($y)
  }];
  let hasVerifier = 1;
}

#endif // FWP_DIALECT_FWPCHUNKOPS_TD
