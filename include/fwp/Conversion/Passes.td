//===- Passes.td - Conversions out of fwp's tiled form -----*- tablegen -*-===//

#ifndef FWP_CONVERSION_PASSES_TD
#define FWP_CONVERSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FwpKernelsToGPU : Pass<"fwp-kernels-to-gpu", "::mlir::ModuleOp"> {
  let summary = "Map the kernels of fwp-tile-scan onto GPU blocks and threads";
  let description = [{
    Each `scf.forall` tagged `fwp.kernel` (made by `fwp-tile-scan`, mapped
    to `#gpu.block<x>`, `<y>`, `<z>`) becomes a `gpu.launch` with one
    thread block per point of the forall, the grid from its bounds as its
    mapping says. Inside, each `scf.parallel` becomes a loop that the
    block's threads share (thread `t` takes the points `t, t + n, ...` in
    row-major order, `affine.delinearize_index`), placed on the threads by
    upstream's thread mapping (`#gpu.thread<x>`), which adds a `gpu.barrier`
    after it (`fwp-eliminate-barriers` removes those that order nothing);
    all other code runs on every thread of the block. Upstream's
    block mapping is not used: it needs static grid sizes. The threads per
    block are the function's kernel configuration's `block_size`
    (`fwp-configure-kernels`; without one, the GPU's default).
  }];
  let dependentDialects = ["::fwp::FwpDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def FwpEliminateBarriers : Pass<"fwp-eliminate-barriers", "::mlir::func::FuncOp"> {
  let summary = "Remove the gpu.barrier ops that order no accesses between "
                "threads";
  let description = [{
    In each `gpu.launch` with a one-dimensional block of constant size, a
    `gpu.barrier` is removed unless some memory access that can run between
    it and the barrier before it (on some path, a loop's back edge included)
    and some access that can run between it and the next barrier touch one
    element from two different threads, and one of them writes. Which
    thread touches which element is found by running the index arithmetic
    of each access for every thread and every iteration of the loops around
    it: each thread of a shared loop (`fwp-kernels-to-gpu`) owns the points
    `t, t + n, ...`, and a tensor-core fragment's lanes their rows. Elements
    are compared in the buffer the views belong to (through `subview`,
    `expand_shape`, and `reinterpret_cast` of a flat buffer). An access that
    cannot be followed keeps the barrier. Barriers are taken one at a time,
    in order, each decided with the barriers still there.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

def FwpProductsToMma : Pass<"fwp-products-to-mma", "::mlir::ModuleOp"> {
  let summary = "Put the kernels' tile products on the GPU's tensor cores";
  let description = [{
    Each `linalg.matmul` inside an `scf.forall` tagged `fwp.kernel` whose
    f32 tiles divide into 16 x 8 x 8 steps becomes warp-level code: the
    output is cut into warp tiles (16 rows by up to 32 columns) dealt to the
    block's warps in turn (`gpu.thread_id x / 32`); each warp keeps its
    tiles' 16 x 8 accumulators in registers across the k steps and computes
    each step with `nvgpu.mma.sync` (m16n8k8, tf32) on fragments read by
    upstream's vector-to-gpu conversion. Where every warp has the same
    number of tiles and the windows fit (32 KiB), the operands are staged
    in shared memory 32 steps of k at a time: every thread copies its share
    with `nvgpu.device_async_copy` (cp.async) into a workgroup buffer (one
    `memref.global` per kernel, rows padded so fragment loads hit distinct
    banks), 16 bytes a copy where every row of the operand provably starts
    a multiple of 4 floats into an allocation (`KnownAlignment.h`; a
    function argument may be anywhere: 4 bytes a copy), then waits and
    meets the block at a barrier; A fragments come
    from it by `ldmatrix`. Otherwise the operands are read where they are.
    A `gpu.barrier` follows each product. The function's kernel
    configuration (`fwp-configure-kernels`; without one, the GPU's default)
    gives the threads per block, the floats the stage may take
    (`stage_floats`) and how products run (`products`): `tf32x3` splits
    each f32 operand into a rounded tf32 high part and its remainder and
    issues three MMAs (about f32's accuracy); `tf32` issues one MMA of the
    rounded operands; `cuda-cores` leaves every product to
    `fwp-lower-tiles`. Products that do not divide (a single row, a width
    not a multiple of 8) are left as well.
    Runs before `fwp-kernels-to-gpu`, which reads the same block size.
  }];
  let dependentDialects = ["::fwp::FwpDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::NVVM::NVVMDialect",
                           "::mlir::nvgpu::NVGPUDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::ub::UBDialect",
                           "::mlir::vector::VectorDialect"];
}

def FwpNVGPUToNVVM : Pass<"fwp-nvgpu-to-nvvm", "::mlir::gpu::GPUModuleOp"> {
  let summary = "Lower nvgpu ops to NVVM with a given index width";
  let description = [{
    Upstream's `convert-nvgpu-to-nvvm` patterns (cp.async, ldmatrix,
    mma.sync) with `index-bitwidth` bits for index arithmetic and memref
    descriptors, so that the casts they leave meet those of
    `convert-gpu-to-nvvm` run with the same width. (Upstream's pass always
    uses 64 bits.)
  }];
  let options = [
    Option<"indexBitwidth", "index-bitwidth", "unsigned", /*default=*/"64",
           "bits of index arithmetic and memref descriptors">
  ];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::NVVM::NVVMDialect"];
}

def FwpParallelLoopsToGPU : Pass<"fwp-parallel-loops-to-gpu", "::mlir::func::FuncOp"> {
  let summary = "Map dense scf.parallel loops onto one GPU thread per point";
  let description = [{
    Each outermost `scf.parallel` outside a `gpu.launch` (the projections,
    the output layer and the dense gradients, after
    `convert-linalg-to-parallel-loops`) becomes a `gpu.launch` of
    `ceil(points / block-size)` blocks with one thread per point, points
    numbered row-major so that consecutive threads take consecutive points
    of the innermost dimension.
  }];
  let options = [
    Option<"blockSize", "block-size", "int64_t", /*default=*/"256",
           "threads per block">
  ];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::scf::SCFDialect"];
}

def FwpKernelLaunchBounds : Pass<"fwp-kernel-launch-bounds",
                                 "::mlir::gpu::GPUModuleOp"> {
  let summary = "Give each outlined fwp kernel its launch bounds";
  let description = [{
    Sets `nvvm.minctasm` (PTX `.minnctapersm`) on every kernel of the GPU
    module, the minimum number of thread blocks per multiprocessor its
    registers must allow: 1 by default, so that ptxas neither caps a
    kernel's registers for occupancy nor spills to reach that cap. (The
    block size, `.maxntid`, comes from `gpu.known_block_size`.) Runs after
    `gpu-kernel-outlining`, which does not carry a launch's attributes over.
  }];
  let options = [
    Option<"minBlocksPerMultiprocessor", "min-blocks", "int64_t",
           /*default=*/"1", "thread blocks per multiprocessor to allow for">
  ];
  let dependentDialects = ["::mlir::NVVM::NVVMDialect"];
}

def FwpOutlineTiles : Pass<"fwp-outline-tiles", "::mlir::ModuleOp"> {
  let summary = "Outline the CPU kernels' static tiles into functions";
  let description = [{
    Each linalg operation of static shape inside an `scf.forall` tagged
    `fwp.kernel` becomes a call to a private function that holds it alone,
    tagged with the kernel's name (`fwp.kernel` on a `func.func`), so that
    `fwp-tiles-to-vectors` still lowers it as a tile. Tiles that are the
    same operation on the same types, with the same attributes and body,
    share one function. The functions are `noinline` and internal.

    Why: LLVM's loop passes (scalar evolution above all) cost more than
    linearly in the size of a function, and a fused scan kernel holds every
    tile of a chunk, a hundred loop nests in one function; as functions of
    their own, and shared, they compile several times faster. A call costs
    a few nanoseconds against a tile's microseconds.

    Values a tile's body uses from above become arguments, except
    constants, which are cloned into the function. Tiles of dynamic shape
    (a chunk's rows cut at the sequence's end) stay where they are.

    Example:

    ```mlir
    scf.forall (%b, %h) in (%nb, 4) {
      linalg.fill ins(%zero : f32) outs(%tile : memref<16x16xf32, ...>)
    } {fwp.kernel = "scan"}
    ```

    becomes

    ```mlir
    scf.forall (%b, %h) in (%nb, 4) {
      func.call @scan_tile0(%zero, %tile) : (f32, memref<16x16xf32, ...>) -> ()
    } {fwp.kernel = "scan"}
    func.func private @scan_tile0(%arg0: f32, %arg1: memref<16x16xf32, ...>)
        attributes {fwp.kernel = "scan", ...} {
      linalg.fill ins(%arg0 : f32) outs(%arg1 : memref<16x16xf32, ...>)
      return
    }
    ```
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect"];
}

def FwpStackTiles : Pass<"fwp-stack-tiles", "::mlir::func::FuncOp"> {
  let summary = "Put the CPU kernels' static tiles on the stack";
  let description = [{
    After bufferization, before the deallocations are placed: each
    `memref.alloc` of static shape and identity layout inside an
    `scf.forall` tagged `fwp.kernel` whose buffer stays in its block (no view
    of it is yielded, returned, passed to a call or stored) becomes a
    `memref.alloca`, up to `max-tile-bytes` a tile and `max-kernel-bytes` a
    kernel, smallest first (an OpenMP worker's stack is 4 MiB), placed at the
    start of the kernel's body, whose scope `convert-scf-to-openmp` makes.
    A tile made in an `scf.for` of the kernel is made there once for all
    the loop's iterations (tiles under other loops stay on the heap): an
    alloca left in the loop would grow the stack every iteration, and the
    canonicalizer inlines the alloca scopes that would pop it.

    Why: a kernel's tiles are made on every pass through its body, and on
    the heap that was a malloc and a free per tile per chunk.

    Example:

    ```mlir
    scf.forall (%b, %h) in (%nb, 4) {
      scf.for %c = %c0 to %n step %c1 {
        %tile = memref.alloc() {alignment = 64 : i64} : memref<64x64xf32>
        linalg.fill ins(%zero : f32) outs(%tile : memref<64x64xf32>)
      }
    } {fwp.kernel = "k"}
    ```

    becomes

    ```mlir
    scf.forall (%b, %h) in (%nb, 4) {
      %tile = memref.alloca() {alignment = 64 : i64} : memref<64x64xf32>
      scf.for %c = %c0 to %n step %c1 {
        linalg.fill ins(%zero : f32) outs(%tile : memref<64x64xf32>)
      }
    } {fwp.kernel = "k"}
    ```
  }];
  let options = [
    Option<"maxTileBytes", "max-tile-bytes", "int64_t", "64 * 1024",
           "largest tile put on the stack">,
    Option<"maxKernelBytes", "max-kernel-bytes", "int64_t", "1024 * 1024",
           "most bytes of tiles on the stack per kernel instance">,
  ];
}

def FwpGpuTiles : Pass<"fwp-gpu-tiles", "::mlir::func::FuncOp"> {
  let summary = "Put the GPU kernels' tiles in shared memory and global "
                "scratch";
  let description = [{
    After bufferization, on a function whose kernel configuration is the
    GPU's: each `memref.alloc` of static shape and identity layout inside an
    `scf.forall` tagged `fwp.kernel` that stays in its block (as
    fwp-stack-tiles asks) and is only read, written and viewed through
    `memref.subview` is made once per kernel instance (thread block):
    smallest first while the configuration's `local_bytes` last, as a
    workgroup `memref.alloca` at the start of the kernel's body (rows of a
    multiple of 16 elements padded by 4, counted against `local_bytes`, so
    that a fragment's 8 rows start in distinct banks); the others
    as the instance's slice of a scratch buffer allocated before the kernel
    with one slice per instance. Before that, the kernel's `scf.for` loops
    drop the tiles they only carry (scf.for's canonicalization), and copies
    of a region onto itself, which bufferization leaves where a tile is
    written in place, are erased. A kernel with scratch runs at most the
    configuration's `scratch_slots` instances on a 1-d grid, each taking the
    original grid's points in turn (a grid-stride `scf.for` from its slot,
    stepping by the grid's size, and `affine.delinearize_index`), its
    scratch a slice per slot, found again each turn as the item modulo the
    slots (addresses LLVM takes as loop-invariant would be computed before
    the loop and held in registers through it). A tile that cannot be
    placed (dynamic,
    carried by a loop, leaving its block) is an error: a GPU kernel cannot
    allocate.

    Why: a thread block's threads share each tile's work, and a kernel
    cannot allocate memory.

    Example (configuration with `local_bytes = 1024`, `scratch_slots =
    512`):

    ```mlir
    scf.forall (%b, %c) in (%nb, %nc) {
      %rows = memref.alloc() : memref<64xf32>
      %gram = memref.alloc() : memref<64x64xf32>
      ...
    } {fwp.kernel = "k", mapping = [#gpu.block<x>, #gpu.block<y>]}
    ```

    becomes

    ```mlir
    %points = arith.muli %nb, %nc : index
    %slots = arith.minsi %points, %c512 : index
    %scratch = memref.alloc(%slots) : memref<?x64x64xf32>
    scf.forall (%s) in (%slots) {
      %rows = memref.alloca() : memref<64xf32, #gpu.address_space<workgroup>>
      scf.for %item = %s to %points step %slots {
        %slot = arith.remui %item, %slots : index
        %b, %c = affine.delinearize_index %item into (%nb, %nc) : index, index
        %gram = memref.subview %scratch[%slot, 0, 0] [1, 64, 64] [1, 1, 1]
            : memref<?x64x64xf32> to memref<64x64xf32, strided<[64, 1], offset: ?>>
        ...
      }
    } {fwp.kernel = "k", mapping = [#gpu.block<x>]}
    ```
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect"];
}

def FwpTilesToVectors : Pass<"fwp-tiles-to-vectors", "::mlir::func::FuncOp"> {
  let summary = "Lower the tile operations inside fwp kernels to CPU vectors";
  let description = [{
    The CPU's lowering of the tile level: each linalg operation inside an
    `scf.forall` tagged `fwp.kernel` is tiled into register tiles (a
    product into blocks of up to `register-rows` x `register-cols`
    accumulators, fwp/RegisterTile.h, and single k steps;
    other operations into rows) and vectorized; accumulators are hoisted
    out of the k loops, contractions become outer products, and every
    vector operation is lowered to 1-D loads, stores, broadcasts and FMAs
    that LLVM maps onto the host's vector units (AVX-512 where it has it).
    Tiles must have static shapes; linalg outside kernels is left alone.

    A product that reads its right operand transposed (C += A B^T, as the
    chunks' Gram matrices K K^T) with more rows than a register block first
    copies B^T into a stack tile (up to 64 KiB) in 8 x 8 blocks, transposed
    in registers: otherwise every k step of every block of rows would load
    a column of B one scalar at a time (2.4x the time of A B per flop).
  }];
  let options = [
    Option<"registerRows", "register-rows", "int64_t",
           /*default=*/"::fwp::kDefaultRegisterTile.rows",
           "Rows of a product's block of accumulators (register tile)">,
    Option<"registerCols", "register-cols", "int64_t",
           /*default=*/"::fwp::kDefaultRegisterTile.cols",
           "Columns of a product's block of accumulators (register tile)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def FwpDenseToVectors : Pass<"fwp-dense-to-vectors", "::mlir::ModuleOp"> {
  let summary = "Lower the dense layers' products to CPU vectors";
  let description = [{
    Each contraction `y[rows..., o] += x[rows..., i] W[o, i]` outside the
    kernels (the projections and the output layer, nn.Linear's layout) is
    rewritten as products of 8 rows at a time (then single rows) by `W^T`,
    transposed once into a scratch buffer, and each product is lowered like
    the kernels' tiles (fwp-tiles-to-vectors): register tiles of up to
    `register-rows` x `register-cols` accumulators, outer-product FMAs. Weight gradients
    `dW[o, i] += sum_rows g[rows..., o] x[rows..., i]` go by blocks of up to
    64 rows of `dW`, and a column sum `s[o] += sum_rows g[rows..., o]` (the
    bias gradient) is interchanged to sweep `g` by rows. Needs identity
    layouts and a static `W`; other operations are left alone.

    Each block is a call to a private, noinline function that holds it
    (`dense_tile<N>`, as fwp-outline-tiles makes them), vectorized there;
    blocks of the same shapes share one, so that the projections of q, k
    and v are compiled once. A module pass: it adds the functions.
  }];
  let options = [
    Option<"registerRows", "register-rows", "int64_t",
           /*default=*/"::fwp::kDefaultRegisterTile.rows",
           "Rows of a product's block of accumulators (register tile)">,
    Option<"registerCols", "register-cols", "int64_t",
           /*default=*/"::fwp::kDefaultRegisterTile.cols",
           "Columns of a product's block of accumulators (register tile)">,
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::LLVM::LLVMDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect",
                           "::mlir::vector::VectorDialect"];
}

def FwpDenseToTiles : Pass<"fwp-dense-to-tiles", "::mlir::func::FuncOp"> {
  let summary = "The dense layers' products as kernels of tile products";
  let description = [{
    Each contraction outside the kernels that is a dense layer, its input
    gradient (`y[rows..., o] += x[rows..., i] W[o, i]`, or `W[i, o]`) or its
    weight gradient (`dW[o, i] += sum_rows g[rows..., o] x[rows..., i]`),
    becomes kernels (`scf.forall` mapped to `#gpu.block`, tagged
    `fwp.kernel`) of static tile products, which fwp-products-to-mma puts
    on the tensor cores: `dense_rows` (one `row-block x col-block` tile of
    y a block, one product over the whole input), `dense_rows_tail` (the
    rows past the last whole block, one at a time) and
    `dense_weight_grad` (one tile of dW a block, summing `row-block` rows
    at a time, then single rows). A tile that does not divide its dimension
    is halved until it does. What the output starts from (a `linalg.fill`,
    or an elementwise generic such as the bias broadcast, right before the
    product with nothing between that touches the output) and an
    elementwise map right after it (the gate's sigmoid) move into each
    tile. A bias gradient (`db[o] += sum_rows g[rows..., o]`) becomes
    `dense_column_partials` (each `row-block` rows of g summed down
    `4 col-block` columns, into a row of partial sums) and
    `dense_column_sums` (those rows and the last rows added up). Needs
    identity layouts and a static `W`; other operations are left alone.
  }];
  let options = [
    Option<"rowBlock", "row-block", "int64_t", /*default=*/"64",
           "rows of a tile of y (and of dW), and rows summed by one product "
           "of a weight gradient">,
    Option<"colBlock", "col-block", "int64_t", /*default=*/"32",
           "columns of a tile of y and of dW">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::gpu::GPUDialect",
                           "::mlir::linalg::LinalgDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::scf::SCFDialect"];
}

#endif // FWP_CONVERSION_PASSES_TD
