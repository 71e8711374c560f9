// The CPU pipeline takes the whole module to the LLVM dialect; results
// become out-parameters and nothing else is left, not even calls into
// MLIR's runtime library (memrefCopy), which compiled modules do not link.
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir -fwp-to-cpu > %t.attention
// RUN: FileCheck %s < %t.attention && FileCheck %s --check-prefix=NO-COPY < %t.attention
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-to-cpu=chunk-size=16 > %t.scan
// RUN: FileCheck %s < %t.scan && FileCheck %s --check-prefix=NO-COPY < %t.scan
// The GPU's kernels on the host too.
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir -fwp-to-cpu=gpu-tiling=1 | FileCheck %s
// NO-COPY-NOT: memrefCopy
// CHECK: llvm.func @{{.*}}(
// No fwp operation is left (the functions keep their fwp.kernel_config).
// CHECK-NOT: {{(= |^ *)fwp\.}}
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK-NOT: builtin.unrealized_conversion_cast
// CHECK: llvm.return
