//===- Passes.td - Transforms of the fwp dialect -----------*- tablegen -*-===//

#ifndef FWP_TRANSFORMS_PASSES_TD
#define FWP_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def FwpConfigureKernels : Pass<"fwp-configure-kernels",
                               "::mlir::func::FuncOp"> {
  let summary = "Choose the kernels' configuration for a target";
  let description = [{
    Records on each function, as `fwp.kernel_config`, the configuration
    of its kernels for `target` (lib/Transforms/KernelConfig.cpp, where
    every tile and kernel choice of a target is written): the chunk size,
    the state kernels' value block and where they keep the state, the
    backward's scratch slots, the local and staging budgets, the tensor
    cores' precision and the threads per block. The lowerings read it from
    there; a function that has one keeps it. Without one, a lowering takes
    its target's default configuration. `config` records a configuration
    written out whole instead (what the lowerings' tests use to try
    others).

    ```mlir
    func.func @f(...) attributes {fwp.kernel_config =
        #fwp.kernel_config<target = cpu, chunk_size = 64>}
    ```
  }];
  let options = [
    Option<"target", "target", "::fwp::KernelTarget",
           /*default=*/"::fwp::KernelTarget::Cpu",
           "what the kernels are for", [{::fwp::kernelTargetValues()}]>,
    Option<"chunkSize", "chunk-size", "int64_t",
           /*default=*/"::fwp::kDefaultChunkSize", "steps per chunk">,
    Option<"blockSize", "block-size", "int64_t",
           /*default=*/"::fwp::kDefaultBlockSize",
           "threads per block of the GPU's scan kernels">,
    Option<"products", "products", "::fwp::ProductPrecision",
           /*default=*/"::fwp::kDefaultProductPrecision",
           "how the GPU's f32 products run",
           [{::fwp::productPrecisionValues()}]>,
    Option<"config", "config", "std::string", /*default=*/"",
           "a whole #fwp.kernel_config to record instead of the target's "
           "(the other options are then ignored)">
  ];
  let dependentDialects = ["::fwp::FwpDialect"];
}

def FwpWidenStorage : Pass<"fwp-widen-storage", "::mlir::func::FuncOp"> {
  let summary = "Run fwp ops on bf16 or f16 tensors in float32";
  let description = [{
    bf16 and f16 are storage types only. Each fwp op with 16-bit float
    tensors among its operands or results is replaced by the same op on
    float32 tensors: 16-bit operands are extended (`arith.extf`, exact) and
    float32 results rounded back to the storage type (`arith.truncf`, to
    nearest even), each in a `linalg.generic`. Every product, state and
    running sum of what the op lowers to is then float32.

    With `widen-scans=false`, fwp.scan and fwp.scan_grad keep their 16-bit
    tensors: fwp-scan-to-chunks' stages compute in f32 and read and write
    the storage type themselves (the 16-bit tensors pass through no cast).
    fwp-tile-scan takes widened scans, and the casts into its kernels.
  }];
  let options = [
    Option<"widenScans", "widen-scans", "bool", /*default=*/"true",
           "Also run fwp.scan and fwp.scan_grad in f32">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FwpDecomposeAttention : Pass<"fwp-decompose-attention", "::mlir::func::FuncOp"> {
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

def FwpFuseDpfp : Pass<"fwp-fuse-dpfp", "::mlir::func::FuncOp"> {
  let summary = "Fuse fwp.dpfp producers into fwp.scan";
  let description = [{
    When both `q` and `k` of an `fwp.scan` come from `fwp.dpfp` ops with the
    same `nu` and `eps`, the scan takes the raw `d_k`-wide vectors and
    applies DPFP itself (`dpfp(nu = .., eps = ..)`), so kernels never store
    the `2*d_k*nu`-wide features. Dead `fwp.dpfp` ops are erased.
  }];
}

def FwpLowerDpfp : Pass<"fwp-lower-dpfp", "::mlir::func::FuncOp"> {
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

def FwpLowerGate : Pass<"fwp-lower-gate", "::mlir::func::FuncOp"> {
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

def FwpScanToChunks : Pass<"fwp-scan-to-chunks", "::mlir::func::FuncOp"> {
  let summary = "Write fwp.scan as the stages of the chunked algorithm";
  let description = [{
    Rewrites each `fwp.scan` into the chunk operations of
    docs/delta-rule-math.md, section 4, as fla's `chunk_delta_rule` calls
    them: `fwp.chunk_wy` (the delta rule's `Wt`, `Ut`), `fwp.chunk_states`
    (the state at every chunk's start, the values written, the final
    state) and `fwp.chunk_output`, each with `chunk_size`; each
    `fwp.scan_grad` into the same forward, then `fwp.chunk_states_grad`,
    `fwp.chunk_qk_grad` and, for the delta rule, `fwp.chunk_wy_grad`
    (section 5). A scan that applies DPFP itself gets `fwp.dpfp` on `q` and
    `k` first, and its gradient `fwp.dpfp_grad` last. The chunk size is
    the function's kernel configuration's (`fwp-configure-kernels`).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FwpLowerChunks : Pass<"fwp-lower-chunks", "::mlir::func::FuncOp"> {
  let summary = "Lower the chunk operations to linalg on tensors, a chunk "
                "at a time";
  let description = [{
    Each chunk operation becomes an `scf.forall` on tensors over what is
    independent, its results `shared_outs`: (batch, head, chunk) for
    `fwp.chunk_wy` and `fwp.chunk_output`, (batch, head) for
    `fwp.chunk_states`, whose body runs over the chunks in order
    (`scf.for`, the state an `iter_arg`). A chunk's rows are copied
    (`linalg.copy`) into a zero tile of `chunk_size` rows (zero rows write
    nothing and read nothing), so every product is a static
    `linalg.generic` contraction; `Wt` and `Ut` come from the forward
    substitution of section 4, a row at a time (on a GPU configuration,
    whose tensor cores its dependent rows would leave idle, as two products
    of A, formed by 16 x 16 blocks: section 8). Results go back with
    `tensor.parallel_insert_slice`, the padding dropped. Every copy is a
    `linalg.copy` into the region it fills, so that bufferization leaves no
    `memref.copy` (a call into MLIR's runtime library, which compiled
    modules do not link). Each `scf.forall` is a kernel (`fwp.kernel`,
    named after its operation).

    With `fuse-forward`, the forward's three operations (`fwp.chunk_wy`,
    `fwp.chunk_states`, `fwp.chunk_output`, where nothing else reads `Ut`)
    become one kernel, `chunk_forward`: a forall over (batch, head) that
    takes each chunk through all three steps in turn, its tiles kept in the
    kernel (the CPU's choice). What other operations read as well (`Wt`,
    the writes `U`, the start states: a training step's gradients) it also
    stores.

    With `fuse-output` (and not `fuse-forward`), a `fwp.chunk_output` of a
    `fwp.chunk_states`' start states and writes is made in the states' own
    loop over the chunks, `chunk_states_output`, a forall over (batch,
    head, value block): the chunk's keys, its writes and the state are at
    hand there, so neither the start states nor the writes are stored
    unless other operations read them (the GPU's choice: `chunk_wy` stays
    a kernel over the chunks, in parallel).

    With `fuse-backward`, the delta rule's `fwp.chunk_qk_grad` and
    `fwp.chunk_wy_grad` (where nothing else reads dWt, and the two key
    gradients are only summed) become one kernel over (batch, head, chunk),
    `chunk_qk_wy_grad`: dWt never leaves the kernel, the chunk's keys and
    dU are read once, and dK is written once. Where their dU and dS come
    from a `fwp.chunk_states_grad` that nothing else reads, the three
    become one kernel over (batch, head) instead, `chunk_backward`, the
    chunks last to first with dS carried: neither dU nor the per-chunk dS
    is stored. The sum rule's `fwp.chunk_states_grad` and
    `fwp.chunk_qk_grad` become that kernel too, storing dU, its value
    gradient. Feature gradients that only a `fwp.dpfp_grad` reads go back
    through the map there too, so that the kernel stores dQ and dK of the
    map's inputs, 2 nu times narrower than the features'. With
    `fuse-gradients` (and not `fuse-backward`) only the first:
    `chunk_qk_wy_grad` over (batch, head, chunk), the states' gradient a
    kernel of its own (the GPU's choice: a kernel per (batch, head) would
    leave most of a GPU idle).

    A `fwp.dpfp` whose features chunk operations alone read is applied in
    their kernels, to a chunk's rows of its input: the features are never
    stored. Not on a GPU configuration, where the chunk operations read the
    features a `dpfp` kernel made once. With `map-kernels`, the maps and map
    gradients left outside kernels (`fwp.dpfp_grad`, features read
    elsewhere too) become kernels over (batch, head, 64 rows), `dpfp` and
    `dpfp_grad`, so that they run on every core, vectorized, rather than as
    loops over whole tensors; on a GPU configuration over as many rows as
    their tiles fit in the configuration's `local_bytes`.

    Where the function's kernel configuration is a GPU target's
    (`fwp-configure-kernels`), each kernel's forall is mapped onto the
    grid (`#gpu.block<x>`, `<y>`, `<z>`), one instance a thread block.
  }];
  let options = [
    Option<"fuseForward", "fuse-forward", "bool", /*default=*/"false",
           "The forward's stages as one kernel per (batch, head)">,
    Option<"fuseBackward", "fuse-backward", "bool", /*default=*/"false",
           "The backward's per-chunk gradients as one kernel">,
    Option<"fuseGradients", "fuse-gradients", "bool", /*default=*/"false",
           "The delta rule's per-chunk gradients as one kernel over (batch, "
           "head, chunk) (without fuse-backward, which may take more)">,
    Option<"fuseOutput", "fuse-output", "bool", /*default=*/"false",
           "fwp.chunk_output in its fwp.chunk_states' kernel (without "
           "fuse-forward, which takes both)">,
    Option<"mapKernels", "map-kernels", "bool", /*default=*/"false",
           "Feature maps and their gradients outside kernels as kernels">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::tensor::TensorDialect"];
}

def FwpTileScan : Pass<"fwp-tile-scan", "::mlir::func::FuncOp"> {
  let summary = "Tile fwp.scan over (batch, head, value block) and chunks";
  let description = [{
    Lowers each `fwp.scan` to buffers and to the chunked (WY) form of the
    delta rule (docs/delta-rule-math.md, section 4), as two kernels written
    at the **tile level** (TileBuilder.h): static-shape views of a
    workspace padded to whole chunks, and linalg products, masks and maps
    on them.

    - `scan_prepare`, an `scf.forall` over (batch, head, chunk): the chunk's
      DPFP features, values and gates loaded with masking at the sequence
      end; the tiles `P = tril(Q K^T)`, `G = stril(K K^T)`, the inverse
      `A = (I + diag(b) G)^-1` row by row (each row one 1 x C by C x C
      product), `W~ = A diag(b) K` and `U~ = A diag(b) V`; all chunks in
      parallel.
    - `scan_state`, an `scf.forall` over (batch, head, value block) with a
      sequential `scf.for` over chunks: `U = U~ - W~ S^T`,
      `Y = Q S^T + P U`, `S' = S + U^T K` on the block's rows of the state.
      Value blocks are independent, so the grid grows with d_v.

    These are the GPU's kernels (and `fwp-to-cpu{gpu-tiling}`'s, which
    checks them on the host); the CPU lowers the scan through its chunk
    operations instead (`fwp-scan-to-chunks`, `fwp-lower-chunks`).

    Inside a kernel, each tile operation (and each `scf.parallel` loop) is
    work the thread block shares; sequential `scf.for` loops are run by
    every thread. Feature and value sizes must be static; the sequence,
    batch and heads may be dynamic. Accumulation is in the element type
    (float32 or float64). The backward (`fwp.scan_grad`) reuses the
    forward's kernels and adds its own (ScanKernels.h).

    The function's kernel configuration (`fwp-configure-kernels`, target
    `gpu` or `gpu-on-host`; without one, the GPU's default) gives the chunk
    size; the value block (d_v where it does not divide d_v); where the
    state kernels keep their block of the state, and of its gradient,
    across the chunks (`workspace`: rows of a global buffer; `workgroup`:
    local tiles in shared memory, which the products read transposed in
    place; `stack`: the same tiles on the host instance's stack), taken
    local only within `local_bytes`, as is DPFP's `x = relu([k, -k])` in
    `scan_prepare` and `scan_input_grad`; and the scratch slots of
    `scan_chunk_grad` and `scan_input_grad` (instances that each take
    their share of the chunks in turn, so that scratch holds one chunk per
    instance; none for features wider than 128, where the loop made the
    GPU's kernel spill).
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::bufferization::BufferizationDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

def FwpLowerTiles : Pass<"fwp-lower-tiles", "::mlir::func::FuncOp"> {
  let summary = "Lower the tile operations inside fwp kernels to loops";
  let description = [{
    The tile level's products (`linalg.matmul` on static views inside an
    `scf.forall` tagged `fwp.kernel`) become an `scf.parallel` loop over
    the output tile whose points each sum their dot product in a register
    (an `scf.for` with an accumulator) before one read-modify-write of the
    output; the other tile operations (fills, masks, maps, copies) become
    `scf.parallel` loops. Both backends share this lowering: the GPU maps
    each loop onto the threads of a block (fwp-kernels-to-gpu), the CPU
    runs it. linalg operations outside kernels are left alone.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // FWP_TRANSFORMS_PASSES_TD
