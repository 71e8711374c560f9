//===- Passes.td - Transforms of the fwp dialect -----------*- tablegen -*-===//

#ifndef FWP_TRANSFORMS_PASSES_TD
#define FWP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FwpDecomposeAttention : Pass<"fwp-decompose-attention"> {
  let summary = "Split fwp.attention into projections, DPFP, gate, scan and "
                "output layer";
  let description = [{
    Rewrites each `fwp.attention` into `linalg` projections (`x W^T`, heads
    split with `tensor.expand_shape`), two `fwp.dpfp`, one `fwp.gate`, one
    `fwp.scan` and the output layer (`o W_o^T + b_o`).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def FwpFuseDpfp : Pass<"fwp-fuse-dpfp"> {
  let summary = "Fuse fwp.dpfp producers into fwp.scan";
  let description = [{
    When both `q` and `k` of an `fwp.scan` come from `fwp.dpfp` ops with the
    same `nu` and `eps`, the scan takes the raw `d_k`-wide vectors and
    applies DPFP itself (`dpfp(nu = .., eps = ..)`), so kernels never store
    the `2*d_k*nu`-wide features. Dead `fwp.dpfp` ops are erased.
  }];
}

def FwpLowerDpfp : Pass<"fwp-lower-dpfp"> {
  let summary = "Lower fwp.dpfp maps that were not fused into a scan";
  let description = [{
    Each remaining `fwp.dpfp` becomes three `linalg.generic` ops over
    `[..., 2*d*nu]`: the products (gathering their inputs with
    `tensor.extract`), their sum per vector, and the normalised features.
    The vector size `d` must be static.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect"];
}

def FwpLowerGate : Pass<"fwp-lower-gate"> {
  let summary = "Lower fwp.gate to linalg";
  let description = [{
    `beta = sigmoid(x W_beta^T)` as a `linalg.generic` contraction followed
    by an elementwise sigmoid (`math.exp` in float32 or wider).
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect"];
}

def FwpTileScan : Pass<"fwp-tile-scan"> {
  let summary = "Tile fwp.scan over (batch, head) and chunks of the sequence";
  let description = [{
    Lowers each `fwp.scan` to buffers and to the chunked (WY) form of the
    delta rule (docs/delta-rule-math.md, section 4), as two kernels:

    - `scan_prepare`, an `scf.forall` over (batch, head, chunk): the per-chunk
      parts that do not depend on the state (DPFP features, `K K^T`,
      `tril(Q K^T)`, and `W~ = A diag(b) K`, `U~ = A diag(b) V` by forward
      substitution), all chunks in parallel;
    - `scan_state`, an `scf.forall` over (batch, head) with a sequential
      `scf.for` over chunks: the state hand-over `U = U~ - W~ S^T`,
      `Y = Q S^T + tril(Q K^T) U`, `S' = S + U^T K`.

    Inside a kernel, `scf.parallel` loops are the parts a thread block
    shares; sequential `scf.for` loops are run by every thread. Feature and
    value sizes must be static; the sequence, batch and heads may be
    dynamic. Accumulation is in the element type (float32 or float64).
  }];
  let options = [
    Option<"chunkSize", "chunk-size", "int64_t", /*default=*/"64",
           "steps per chunk (C)">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // FWP_TRANSFORMS_PASSES_TD
