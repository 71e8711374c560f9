// The PTX of every example assembles for sm_90 with no spills.
// REQUIRES: ptxas, libdevice
// RUN: rm -rf %t && mkdir -p %t
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir -fwp-to-ptx > %t/attention.mlir
// RUN: %python %fwp_src_root/scripts/extract-ptx.py %t/attention.mlir %t/attention \
// RUN:   --ptxas %ptxas --arch sm_90 | FileCheck %s
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-to-ptx > %t/scan.mlir
// RUN: %python %fwp_src_root/scripts/extract-ptx.py %t/scan.mlir %t/scan \
// RUN:   --ptxas %ptxas --arch sm_90 | FileCheck %s

// CHECK: Compiling entry function
// CHECK-NOT: {{[1-9][0-9]*}} bytes spill
// CHECK: 0 bytes spill stores, 0 bytes spill loads
// CHECK-NOT: {{[1-9][0-9]*}} bytes spill

// The gradient's kernels too.
// RUN: fwp-opt %S/Inputs/attention-grad.mlir -fwp-to-ptx > %t/grad.mlir
// RUN: %python %fwp_src_root/scripts/extract-ptx.py %t/grad.mlir %t/grad \
// RUN:   --ptxas %ptxas --arch sm_90 | FileCheck %s
