// The CPU pipeline takes the whole module to the LLVM dialect; results
// become out-parameters and nothing else is left.
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir -fwp-to-cpu | FileCheck %s
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-to-cpu=chunk-size=16 | FileCheck %s
// Through the scan's stages too, and without calls into MLIR's runtime
// library (memrefCopy), which compiled modules do not link.
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir -fwp-to-cpu=chunk-stages=1 > %t.attention
// RUN: FileCheck %s < %t.attention && FileCheck %s --check-prefix=NO-COPY < %t.attention
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-to-cpu="chunk-size=16 chunk-stages=1" > %t.scan
// RUN: FileCheck %s < %t.scan && FileCheck %s --check-prefix=NO-COPY < %t.scan
// NO-COPY-NOT: memrefCopy

// CHECK: llvm.func @{{.*}}(
// CHECK-NOT: fwp.
// CHECK-NOT: scf.
// CHECK-NOT: memref.
// CHECK-NOT: builtin.unrealized_conversion_cast
// CHECK: llvm.return
