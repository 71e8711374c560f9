// linalg.matmul (f16 x f16 -> f32, 64x64x64) on workgroup-memory operands, ONE warp.
// transform: vectorize -> fold arith.extf into vector.contract -> unroll contract to 16x8x16
// then pass: convert-vector-to-gpu{use-nvgpu=true}  => nvgpu.ldmatrix + nvgpu.mma.sync (f32 accumulate)
!sA = memref<64x64xf16, #gpu.address_space<workgroup>>
gpu.module @kernels {
  gpu.func @mm(%C: memref<64x64xf32>) workgroup(%As: !sA, %Bs: !sA) kernel
      attributes {known_block_size = array<i32: 32, 1, 1>} {
    linalg.matmul ins(%As, %Bs : !sA, !sA) outs(%C : memref<64x64xf32>)
    gpu.return
  }
}
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %mm : !transform.any_op
    %f = transform.structured.match ops{["gpu.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.fold_arith_extension
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [16, 8, 16]
    } : !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
