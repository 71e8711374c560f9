// Transform schedule (library module) used for mm.mlir and chunk.mlir.
// Apply with:  mlir-opt IN --transform-preload-library=transform-library-paths=sched.mlir --transform-interpreter
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    // 1. Matmuls -> register tiles 8x32 (16 zmm accumulators), k step 1, vector.contract.
    %mm = transform.structured.match ops{["linalg.matmul"]} in %root : (!transform.any_op) -> !transform.any_op
    %t, %l:3 = transform.structured.tile_using_for %mm tile_sizes [8, 32, 1]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %t {create_named_contraction} : !transform.any_op
    // 2. Transposes -> 16x16 blocks (vector.transpose, lowered with shuffle_16x16 below).
    %tr = transform.structured.match ops{["linalg.transpose"]} in %root : (!transform.any_op) -> !transform.any_op
    %ttr, %ltr:2 = transform.structured.tile_using_for %tr tile_sizes [16, 16]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    transform.structured.vectorize %ttr : !transform.any_op
    // 3. Elementwise / mask generics -> one row (64 lanes) at a time.
    %gen = transform.structured.match ops{["linalg.generic"]} in %root : (!transform.any_op) -> !transform.any_op
    %tg, %lg = transform.structured.tile_using_for %gen tile_sizes [1, 0]
      : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    transform.structured.vectorize %tg : !transform.any_op
    // 4. Fills (untiled; whole tile written as vectors).
    %fill = transform.structured.match ops{["linalg.fill"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.structured.vectorize %fill : !transform.any_op
    // 5. Fold subviews into transfer indices, then hoist the accumulator
    //    read/write out of the k loop (needs the transfers on the base memref).
    %f = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %f {
      transform.apply_patterns.memref.fold_memref_alias_ops
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %f : !transform.any_op
    transform.apply_licm to %l#2 : !transform.any_op
    %f2 = transform.structured.hoist_redundant_vector_transfers %f : (!transform.any_op) -> !transform.any_op
    // 6. Lower vector.contract -> outerproduct -> fma; transfers -> loads/stores.
    transform.apply_patterns to %f2 {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
    } : !transform.any_op
    transform.apply_patterns to %f2 {
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_16x16"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_broadcast
    } : !transform.any_op
    transform.yield
  }
}
