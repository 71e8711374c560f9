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
// Element types: what the stages hand each other (the WY factors, the
// written values, the chunk states and their gradients) is of the stage's
// arithmetic type, f32 or f64. The scan's own tensors (q, k, v, beta, dy,
// the states it is given and returns, its gradients) keep their storage
// type, that type or a narrower float (bf16 or f16 storage of an f32
// computation): the lowerings extend them as they load a chunk's rows and
// round what they store, once.
//
//===----------------------------------------------------------------------===//

#ifndef FWP_DIALECT_FWPCHUNKOPS_TD
#define FWP_DIALECT_FWPCHUNKOPS_TD

include "fwp/Dialect/FwpDialect.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Fwp_ChunkTensor : RankedTensorOf<[AnyFloat]>;

/// A stage whose arithmetic type is the element type of `handed`, one of
/// the tensors it hands to or takes from another stage.
class Fwp_ChunkOp<string mnemonic, string handed, list<Trait> traits = []>
    : Fwp_Op<mnemonic, traits> {
  let extraClassDeclaration = [{
    /// The element type of the stage's tiles and of everything it hands
    /// to other stages: f32 or f64.
    ::mlir::Type getArithmeticType() {
      return ::mlir::getElementTypeOrSelf(get}] # handed # [{().getType());
    }
  }];
}

def Fwp_ChunkWyOp : Fwp_ChunkOp<"chunk_wy", "Wt", [Pure]> {
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
    results `wt` and `ut` have the shapes of `k` and `v` (row `r` of a
    chunk is step `c C + r`), in the stage's arithmetic type.

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

def Fwp_ChunkStatesOp : Fwp_ChunkOp<"chunk_states", "H",
    [Pure, AttrSizedOperandSegments]> {
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
    ceil(T / C)`), `U` (the shape of `values`) and the final state (`[B, H,
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

def Fwp_ChunkOutputOp : Fwp_ChunkOp<"chunk_output", "H", [Pure]> {
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

//===----------------------------------------------------------------------===//
// The backward (docs/delta-rule-math.md, section 5), as fla's
// chunk_delta_rule_bwd calls it:
//
//   %du, %dh, %d_initial = fwp.chunk_states_grad %q, %k, %dy wt(%wt)
//                                                   (chunk_gated_..._bwd_dhu)
//   %dq, %dk, %dwt       = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
//                                                   (chunk_bwd_dqkwg)
//   %dk2, %dv, %dbeta    = fwp.chunk_wy_grad %k, %v, %beta, %du, %dwt
//                                                   (prepare_wy_repr_bwd)
//===----------------------------------------------------------------------===//

def Fwp_ChunkStatesGradOp : Fwp_ChunkOp<"chunk_states_grad", "Dh",
    [Pure, AttrSizedOperandSegments]> {
  let summary = "the pass over the chunks, last to first, that carries the "
                "state's gradient";
  let description = [{
    Backwards over the chunks of every batch element and head, from `dS` =
    `d_final` (`[B, H, d_v, D]`) or zero, with `P = tril(Q K^T)`:

    ```
    dh[c] = dS                      the gradient of the chunk's end state
    dU    = P^T dY + K dS^T
    dS    = dS + dY^T Q - dU^T Wt   (no dU^T Wt term without `wt`)
    ```

    Results: `dU` (the gradient of the values the chunks write, the shape
    of `dy`), `dh` (`[B, H, N, d_v, D]`) and the initial state's gradient
    (`[B, H, d_v, D]`). With `wt` (the delta rule) the state's gradient
    flows through `U = Ut - Wt S^T` as well.

    Example:

    ```mlir
    %du, %dh, %d0 = fwp.chunk_states_grad %q, %k, %dy
        wt(%wt : tensor<40x2x4x32xf32>) chunk_size = 16
        : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>
        -> tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x8x32xf32>
    ```
  }];
  let arguments = (ins Fwp_ChunkTensor:$q,
                       Fwp_ChunkTensor:$k,
                       Fwp_ChunkTensor:$dy,
                       Optional<Fwp_ChunkTensor>:$wt,
                       Optional<Fwp_ChunkTensor>:$d_final,
                       I64Attr:$chunk_size,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_ChunkTensor:$du,
                      Fwp_ChunkTensor:$dh,
                      Fwp_ChunkTensor:$d_initial);
  let assemblyFormat = [{
    $q `,` $k `,` $dy (`wt` `(` $wt^ `:` type($wt) `)`)?
    (`d_final` `(` $d_final^ `:` type($d_final) `)`)?
    `chunk_size` `=` $chunk_size (`batch_first` $batch_first^)?
    attr-dict `:` type($q) `,` type($k) `,` type($dy)
    `->` type($du) `,` type($dh) `,` type($d_initial)
  }];
  let hasVerifier = 1;
}

def Fwp_ChunkQkGradOp : Fwp_ChunkOp<"chunk_qk_grad", "H", [Pure]> {
  let summary = "each chunk's gradients of its queries, keys and W~";
  let description = [{
    For every chunk, all chunks independent, with `S = h[c]` its start
    state, `dS = dh[c]` its end state's gradient, `U` its written values
    and `dU` their gradient:

    ```
    dP  = tril(dY U^T)
    dQ  = dY S + dP K
    dK  = dP^T Q + U dS
    dWt = -dU S                     (only with a `dwt` result)
    ```

    `dK` is complete for the sum rule; for the delta rule
    `fwp.chunk_wy_grad` adds the keys' part in the WY form.

    Example:

    ```mlir
    %dq, %dk, %dwt = fwp.chunk_qk_grad %q, %k, %u, %h, %dh, %dy, %du
        chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>,
        tensor<40x2x4x8xf32>, tensor<2x4x3x8x32xf32>, tensor<2x4x3x8x32xf32>,
        tensor<40x2x4x8xf32>, tensor<40x2x4x8xf32>
        -> tensor<40x2x4x32xf32>, tensor<40x2x4x32xf32>
        dwt(tensor<40x2x4x32xf32>)
    ```
  }];
  let arguments = (ins Fwp_ChunkTensor:$q,
                       Fwp_ChunkTensor:$k,
                       Fwp_ChunkTensor:$u,
                       Fwp_ChunkTensor:$h,
                       Fwp_ChunkTensor:$dh,
                       Fwp_ChunkTensor:$dy,
                       Fwp_ChunkTensor:$du,
                       I64Attr:$chunk_size,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_ChunkTensor:$dq,
                      Fwp_ChunkTensor:$dk,
                      Optional<Fwp_ChunkTensor>:$dwt);
  let assemblyFormat = [{
    $q `,` $k `,` $u `,` $h `,` $dh `,` $dy `,` $du
    `chunk_size` `=` $chunk_size (`batch_first` $batch_first^)?
    attr-dict `:` type($q) `,` type($k) `,` type($u) `,` type($h) `,`
    type($dh) `,` type($dy) `,` type($du)
    `->` type($dq) `,` type($dk) (`dwt` `(` type($dwt)^ `)`)?
  }];
  let hasVerifier = 1;
}

def Fwp_ChunkWyGradOp : Fwp_ChunkOp<"chunk_wy_grad", "Du", [Pure]> {
  let summary = "gradients through each chunk's WY form";
  let description = [{
    For every chunk, all chunks independent, given the gradients `dU` of
    `Ut = A diag(b) V` and `dWt` of `Wt = A diag(b) K`, with `A = (I + M)^-1`
    and `M = diag(b) stril(K K^T)` made again from `k` and `beta`:

    ```
    dV  = diag(b) A^T dU
    dK  = diag(b) A^T dWt + G K + G^T K,   G = diag(b) dM
    dA  = dU (diag(b) V)^T + dWt (diag(b) K)^T
    dM  = -stril(A^T dA A^T)
    db  = rowsum((A^T dU) * V) + rowsum((A^T dWt) * K)
          + rowsum(dM * (K K^T))
    ```

    The results are the keys' part of `dk` through the WY form (to be
    added to `fwp.chunk_qk_grad`'s), `dv` and `dbeta`, with the shapes of
    `k`, `v` and `beta`.

    Example:

    ```mlir
    %dk, %dv, %db = fwp.chunk_wy_grad %k, %v, %beta, %du, %dwt
        chunk_size = 16 : tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>,
        tensor<40x2x4xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4x32xf32>
        -> tensor<40x2x4x32xf32>, tensor<40x2x4x8xf32>, tensor<40x2x4xf32>
    ```
  }];
  let arguments = (ins Fwp_ChunkTensor:$k,
                       Fwp_ChunkTensor:$v,
                       Fwp_ChunkTensor:$beta,
                       Fwp_ChunkTensor:$du,
                       Fwp_ChunkTensor:$dwt,
                       I64Attr:$chunk_size,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_ChunkTensor:$dk,
                      Fwp_ChunkTensor:$dv,
                      Fwp_ChunkTensor:$dbeta);
  let assemblyFormat = [{
    $k `,` $v `,` $beta `,` $du `,` $dwt
    `chunk_size` `=` $chunk_size (`batch_first` $batch_first^)?
    attr-dict `:` type($k) `,` type($v) `,` type($beta) `,` type($du) `,`
    type($dwt) `->` type($dk) `,` type($dv) `,` type($dbeta)
  }];
  let hasVerifier = 1;
}

#endif // FWP_DIALECT_FWPCHUNKOPS_TD
