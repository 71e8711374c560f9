// The shipped examples parse and verify.
// RUN: fwp-opt %fwp_src_root/examples/attention.mlir | FileCheck %s --check-prefix=ATTENTION
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir | FileCheck %s --check-prefix=SCAN

// ATTENTION-LABEL: func @fast_weights_attention
// ATTENTION: fwp.attention {{.*}} heads = 4 nu = 2 :

// SCAN-LABEL: func @delta_scan
// SCAN-COUNT-2: fwp.dpfp
// SCAN: fwp.scan delta
