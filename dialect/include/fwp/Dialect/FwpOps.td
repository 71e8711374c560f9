//===- FwpOps.td - Operations of the fwp dialect -----------*- tablegen -*-===//

#ifndef FWP_DIALECT_FWPOPS_TD
#define FWP_DIALECT_FWPOPS_TD

include "fwp/Dialect/FwpDialect.td"
include "fwp/Dialect/FwpEnums.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Fwp_FloatTensor : RankedTensorOf<[AnyFloat]>;

//===----------------------------------------------------------------------===//
// fwp.dpfp
//===----------------------------------------------------------------------===//

def Fwp_DpfpOp : Fwp_Op<"dpfp", [Pure]> {
  let summary = "normalized DPFP feature map phi'";
  let description = [{
    Applies the Deterministic Parameter-Free Projection along the last
    dimension. For a vector `k` of size `d`:

    ```
    x = relu(concat(k, -k))                          // size 2d
    phi(k)[(i-1)*2d + j] = x[j] * x[(j - i) mod 2d]  // i = 1..nu, j = 0..2d-1
    phi'(k) = phi(k) / (sum(phi(k)) + eps)           // size 2*d*nu
    ```

    `(j - i) mod 2d` is `torch.roll(x, shifts=i)`, the order of the seeds'
    reference code. The input is `[..., d]`, the result `[..., 2*d*nu]` with
    the same leading dimensions, of the input's element type or, for 16-bit
    inputs, f32 (the map then computed in f32). `nu` (default 1) must lie
    in `[1, 2d-1]`; `eps` (default 1e-6) must be positive. An all-zero
    vector maps to all zeros.

    Example:

    ```mlir
    %f = fwp.dpfp %k nu = 2 : tensor<16x2x4x8xf32> -> tensor<16x2x4x32xf32>
    ```
  }];
  let arguments = (ins Fwp_FloatTensor:$input,
                       DefaultValuedAttr<I64Attr, "1">:$nu,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Fwp_FloatTensor:$result);
  let assemblyFormat = [{
    $input (`nu` `=` $nu^)? (`eps` `=` $eps^)? attr-dict
    `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fwp.gate
//===----------------------------------------------------------------------===//

def Fwp_GateOp : Fwp_Op<"gate", [Pure]> {
  let summary = "the delta rule's write strength beta = sigmoid(x W_beta^T)";
  let description = [{
    Computes one write strength per step, batch element and head:

    ```
    beta[t, b, h] = sigmoid(sum_m x[t, b, m] * w_beta[h, m])
    ```

    `x` is `[seq_len, batch, d_model]`, `w_beta` is `[heads, d_model]` (an
    `nn.Linear` weight without bias) and the result is
    `[seq_len, batch, heads]`.

    Example:

    ```mlir
    %beta = fwp.gate %x, %w : tensor<16x2x32xf32>, tensor<4x32xf32>
                          -> tensor<16x2x4xf32>
    ```
  }];
  let arguments = (ins Fwp_FloatTensor:$x, Fwp_FloatTensor:$w_beta);
  let results = (outs Fwp_FloatTensor:$beta);
  let assemblyFormat = [{
    $x `,` $w_beta attr-dict `:` type($x) `,` type($w_beta) `->` type($beta)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fwp.scan
//===----------------------------------------------------------------------===//

def Fwp_ScanOp : Fwp_Op<"scan", [Pure, AttrSizedOperandSegments]> {
  let summary = "fast-weight scan with the delta or the sum rule";
  let description = [{
    Runs the fast-weight recurrence over the sequence for every batch element
    and head, on feature-mapped queries `q` and keys `k` (`[T, B, H, D]`),
    values `v` (`[T, B, H, d_v]`) and, for the delta rule, write strengths
    `beta` (`[T, B, H]`). The fast weights `W` (`d_v x D` per batch and
    head) start at `initial` (`[B, H, d_v, D]`) or at zero:

    ```
    delta:  vbar_t = W_{t-1} k_t
            W_t    = W_{t-1} + beta_t (v_t - vbar_t) k_t^T
    sum:    W_t    = W_{t-1} + v_t k_t^T
    both:   y_t    = W_t q_t          (after this step's write)
    ```

    The results are `y` (`[T, B, H, d_v]`) and, when a second result type
    is given, the final state `W_T` (`[B, H, d_v, D]`). `beta` is required
    by the delta rule and rejected by the sum rule. All operands and
    results share one element type.

    With `dpfp(nu = N, eps = E)` the scan applies the DPFP map itself: `q`
    and `k` are then the raw `[T, B, H, d_k]` projections and
    `D = 2 * d_k * N`. Kernels made from this form never store the wide
    features (the `fwp-fuse-dpfp` pass produces it).

    With `batch_first` the per-step tensors (`q`, `k`, `v`, `beta`, `y`)
    are batch first instead, `[B, T, H, *]` (fla's layout), read and
    written in place; the states keep their layout.

    Example:

    ```mlir
    %y, %s = fwp.scan delta %q, %k, %v beta(%b : tensor<16x2x4xf32>)
        : tensor<16x2x4x32xf32>, tensor<16x2x4x32xf32>, tensor<16x2x4x8xf32>
        -> tensor<16x2x4x8xf32>, tensor<2x4x8x32xf32>
    ```
  }];
  let arguments = (ins Fwp_RuleAttr:$rule,
                       Fwp_FloatTensor:$q,
                       Fwp_FloatTensor:$k,
                       Fwp_FloatTensor:$v,
                       Optional<Fwp_FloatTensor>:$beta,
                       Optional<Fwp_FloatTensor>:$initial,
                       OptionalAttr<I64Attr>:$dpfp_nu,
                       OptionalAttr<F64Attr>:$dpfp_eps,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_FloatTensor:$y,
                      Optional<Fwp_FloatTensor>:$final_state);
  let assemblyFormat = [{
    $rule $q `,` $k `,` $v
    (`beta` `(` $beta^ `:` type($beta) `)`)?
    (`initial` `(` $initial^ `:` type($initial) `)`)?
    (`dpfp` `(` `nu` `=` $dpfp_nu^ `,` `eps` `=` $dpfp_eps `)`)?
    (`batch_first` $batch_first^)?
    attr-dict `:` type($q) `,` type($k) `,` type($v)
    `->` type($y) (`,` type($final_state)^)?
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// fwp.attention
//===----------------------------------------------------------------------===//

def Fwp_AttentionOp : Fwp_Op<"attention", [Pure]> {
  let summary = "the whole FastWeightsAttention module";
  let description = [{
    The FastWeightsAttention module of the seeds, for `x` of shape
    `[seq_len, batch, d_model]` and `heads` heads of size
    `d_k = d_model / heads`:

    ```
    q, k, v = x W_q^T, x W_k^T, x W_v^T      // split by head: [T, B, H, d_k]
    beta    = sigmoid(x W_beta^T)             // [T, B, H]
    o       = scan(rule, dpfp(q), dpfp(k), v, beta)   // zero initial state
    y       = concat_heads(o) W_o^T + b_o     // [T, B, d_model]
    ```

    `W_q`, `W_k`, `W_v`, `W_o` are `[d_model, d_model]`, `W_beta` is
    `[heads, d_model]`, `b_o` is `[d_model]`. `heads` must divide
    `d_model`; `nu` (default 1) must lie in `[1, 2*d_k - 1]`; `eps`
    (default 1e-6) must be positive; `rule` defaults to `delta`. There is
    no `1/sqrt(d)` scale, and no dropout inside the module.

    Example:

    ```mlir
    %y = fwp.attention %x, %wq, %wk, %wv, %wb, %wo, %bo heads = 4 nu = 2
        : (tensor<?x2x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>,
           tensor<32x32xf32>, tensor<4x32xf32>, tensor<32x32xf32>,
           tensor<32xf32>) -> tensor<?x2x32xf32>
    ```
  }];
  let arguments = (ins Fwp_FloatTensor:$x,
                       Fwp_FloatTensor:$w_q,
                       Fwp_FloatTensor:$w_k,
                       Fwp_FloatTensor:$w_v,
                       Fwp_FloatTensor:$w_beta,
                       Fwp_FloatTensor:$w_o,
                       Fwp_FloatTensor:$b_o,
                       I64Attr:$heads,
                       DefaultValuedAttr<I64Attr, "1">:$nu,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps,
                       DefaultValuedAttr<Fwp_RuleAttr, "::fwp::Rule::Delta">:$rule);
  let results = (outs Fwp_FloatTensor:$y);
  let assemblyFormat = [{
    $x `,` $w_q `,` $w_k `,` $w_v `,` $w_beta `,` $w_o `,` $b_o
    `heads` `=` $heads (`nu` `=` $nu^)? (`eps` `=` $eps^)?
    (`rule` `=` $rule^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// Gradients
//
// The backward is explicit: one gradient op per forward op that needs one,
// rather than a pass that differentiates the lowered loops. The chunked
// backward (docs/delta-rule-math.md, section 5) is not the step-by-step
// adjoint of the chunked forward: it reuses the WY factors per chunk and
// walks only the state gradient backwards, keeping one state per chunk. An
// op that states "the gradient of this scan" lets the lowering emit that
// form directly, and keeps both directions readable and separately
// testable against the reference.
//===----------------------------------------------------------------------===//

def Fwp_ScanGradOp : Fwp_Op<"scan_grad",
    [Pure, AttrSizedOperandSegments, AttrSizedResultSegments]> {
  let summary = "gradients of fwp.scan";
  let description = [{
    Given the operands of an `fwp.scan` (same layouts, rule and optional
    `dpfp(nu = .., eps = ..)`), the gradient `dy` of a loss with respect to
    the scan's output `y` (`[T, B, H, d_v]`) and optionally the gradient
    `d_final_state` with respect to its final state (`[B, H, d_v, D]`,
    zero when absent), returns the gradients with respect to `q`, `k`, `v`
    (same types as those operands: with DPFP fused, with respect to the raw
    vectors), `beta` (delta rule only; present exactly when `beta` is) and,
    when a `d_initial` result type is given, the initial state (also when
    the scan started from zero). When a `y` result type is given it also
    returns the scan's output `y`, which the gradient computes again
    anyway: a caller that needs both (the module's backward, for the
    output layer's weight gradient) runs the scan's forward once.

    Example:

    ```mlir
    %dq, %dk, %dv, %db = fwp.scan_grad delta %q, %k, %v
        beta(%b : tensor<?x2x4xf32>) dy(%dy : tensor<?x2x4x8xf32>)
        dpfp(nu = 1, eps = 1.0e-6)
        : tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
        -> tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>, tensor<?x2x4x8xf32>
           dbeta(tensor<?x2x4xf32>)
    ```
  }];
  let arguments = (ins Fwp_RuleAttr:$rule,
                       Fwp_FloatTensor:$q,
                       Fwp_FloatTensor:$k,
                       Fwp_FloatTensor:$v,
                       Optional<Fwp_FloatTensor>:$beta,
                       Optional<Fwp_FloatTensor>:$initial,
                       Fwp_FloatTensor:$dy,
                       Optional<Fwp_FloatTensor>:$d_final_state,
                       OptionalAttr<I64Attr>:$dpfp_nu,
                       OptionalAttr<F64Attr>:$dpfp_eps,
                       UnitAttr:$batch_first);
  let results = (outs Fwp_FloatTensor:$dq,
                      Fwp_FloatTensor:$dk,
                      Fwp_FloatTensor:$dv,
                      Optional<Fwp_FloatTensor>:$dbeta,
                      Optional<Fwp_FloatTensor>:$d_initial,
                      Optional<Fwp_FloatTensor>:$y);
  let assemblyFormat = [{
    $rule $q `,` $k `,` $v
    (`beta` `(` $beta^ `:` type($beta) `)`)?
    (`initial` `(` $initial^ `:` type($initial) `)`)?
    `dy` `(` $dy `:` type($dy) `)`
    (`d_final_state` `(` $d_final_state^ `:` type($d_final_state) `)`)?
    (`dpfp` `(` `nu` `=` $dpfp_nu^ `,` `eps` `=` $dpfp_eps `)`)?
    (`batch_first` $batch_first^)?
    attr-dict `:` type($q) `,` type($k) `,` type($v)
    `->` type($dq) `,` type($dk) `,` type($dv)
    (`dbeta` `(` type($dbeta)^ `)`)? (`d_initial` `(` type($d_initial)^ `)`)?
    (`y` `(` type($y)^ `)`)?
  }];
  let hasVerifier = 1;
}

def Fwp_DpfpGradOp : Fwp_Op<"dpfp_grad", [Pure]> {
  let summary = "gradient of fwp.dpfp with respect to its input";
  let description = [{
    Given the input `k` (`[..., d]`) of an `fwp.dpfp` with the same `nu`
    and `eps`, and the gradient `d_features` (`[..., 2*d*nu]`) of a loss
    with respect to its result, returns the gradient with respect to `k`
    (the type of `k`; `d_features` f32 for 16-bit `k`, as fwp.dpfp's
    result may be).
    With `s = sum(phi) + eps`, `phi' = phi / s`:

    ```
    dphi   = (d_features - (d_features . phi')) / s
    dx[j]  = sum_i dphi_i[j] x[j - i] + dphi_i[j + i] x[j + i]   (mod 2d)
    dk[n]  = dx[n] where k[n] > 0, -dx[n + d] where k[n] < 0, else 0
    ```

    Example:

    ```mlir
    %dk = fwp.dpfp_grad %k, %dphi nu = 2
        : tensor<16x2x4x8xf32>, tensor<16x2x4x32xf32> -> tensor<16x2x4x8xf32>
    ```
  }];
  let arguments = (ins Fwp_FloatTensor:$input,
                       Fwp_FloatTensor:$d_features,
                       DefaultValuedAttr<I64Attr, "1">:$nu,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps);
  let results = (outs Fwp_FloatTensor:$d_input);
  let assemblyFormat = [{
    $input `,` $d_features (`nu` `=` $nu^)? (`eps` `=` $eps^)? attr-dict
    `:` type($input) `,` type($d_features) `->` type($d_input)
  }];
  let hasVerifier = 1;
}

def Fwp_AttentionGradOp : Fwp_Op<"attention_grad", [Pure]> {
  let summary = "gradients of fwp.attention";
  let description = [{
    Given the operands and attributes of an `fwp.attention` and the
    gradient `dy` (`[seq_len, batch, d_model]`) of a loss with respect to
    its output, returns the gradients with respect to `x` and to every
    weight: `dx`, `dw_q`, `dw_k`, `dw_v`, `dw_beta`, `dw_o`, `db_o`, each
    with the type of its operand. For the sum rule `dw_beta` is zero.

    Example:

    ```mlir
    %dx, %dwq, %dwk, %dwv, %dwb, %dwo, %dbo = fwp.attention_grad
        %x, %wq, %wk, %wv, %wb, %wo, %bo dy(%dy : tensor<?x2x32xf32>)
        heads = 4 : (...) -> (...)
    ```
  }];
  let arguments = (ins Fwp_FloatTensor:$x,
                       Fwp_FloatTensor:$w_q,
                       Fwp_FloatTensor:$w_k,
                       Fwp_FloatTensor:$w_v,
                       Fwp_FloatTensor:$w_beta,
                       Fwp_FloatTensor:$w_o,
                       Fwp_FloatTensor:$b_o,
                       Fwp_FloatTensor:$dy,
                       I64Attr:$heads,
                       DefaultValuedAttr<I64Attr, "1">:$nu,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$eps,
                       DefaultValuedAttr<Fwp_RuleAttr, "::fwp::Rule::Delta">:$rule);
  let results = (outs Fwp_FloatTensor:$dx,
                      Fwp_FloatTensor:$dw_q,
                      Fwp_FloatTensor:$dw_k,
                      Fwp_FloatTensor:$dw_v,
                      Fwp_FloatTensor:$dw_beta,
                      Fwp_FloatTensor:$dw_o,
                      Fwp_FloatTensor:$db_o);
  let assemblyFormat = [{
    $x `,` $w_q `,` $w_k `,` $w_v `,` $w_beta `,` $w_o `,` $b_o
    `dy` `(` $dy `)`
    `heads` `=` $heads (`nu` `=` $nu^)? (`eps` `=` $eps^)?
    (`rule` `=` $rule^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

include "fwp/Dialect/FwpChunkOps.td"

#endif // FWP_DIALECT_FWPOPS_TD
