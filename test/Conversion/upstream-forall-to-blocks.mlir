// RUN: mlir-opt %s --transform-interpreter -verify-diagnostics

// Why fwp-kernels-to-gpu maps a kernel's instances onto blocks itself:
// upstream's block mapping needs a statically sized forall, and an fwp
// kernel's grid (batch x heads x chunks of the sequence) is known at run
// time only. If this test starts failing, upstream has lifted the limit and
// fwp-kernels-to-gpu can call transform.gpu.map_forall_to_blocks instead.
func.func @kernel(%buf: memref<?x?x?xf32>, %b: index, %h: index, %n: index) {
  scf.forall (%i, %j, %c) in (%b, %h, %n) {
    %zero = arith.constant 0.0 : f32
    memref.store %zero, %buf[%i, %j, %c] : memref<?x?x?xf32>
  } {mapping = [#gpu.block<x>, #gpu.block<y>, #gpu.block<z>]}
  return
}

module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(
      %root: !transform.any_op {transform.readonly}) {
    %func = transform.structured.match ops{["func.func"]} in %root
        : (!transform.any_op) -> !transform.any_op
    // expected-error @+1 {{requires statically sized, normalized forall op}}
    %launch = transform.gpu.map_forall_to_blocks %func generate_gpu_launch
        : (!transform.any_op) -> !transform.any_op
    transform.yield
  }
}
