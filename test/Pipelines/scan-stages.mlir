// examples/scan.mlir followed stage by stage, one flag per pass: the
// scan's stages, then linalg on tensors, then no fwp op is left.
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-configure-kernels=chunk-size=16 -fwp-scan-to-chunks | FileCheck %s --check-prefix=STAGES
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-configure-kernels=chunk-size=16 -fwp-scan-to-chunks -fwp-lower-chunks | FileCheck %s --check-prefix=LINALG
// RUN: fwp-opt %fwp_src_root/examples/scan.mlir -fwp-configure-kernels=chunk-size=16 -fwp-scan-to-chunks -fwp-lower-chunks -fwp-lower-dpfp | FileCheck %s --check-prefix=DONE

// STAGES-LABEL: func @delta_scan
// STAGES: %[[FQ:.*]] = fwp.dpfp
// STAGES: %[[FK:.*]] = fwp.dpfp
// STAGES: %[[WT:.*]], %[[UT:.*]] = fwp.chunk_wy %[[FK]]
// STAGES: %[[H:.*]], %[[U:.*]], %[[S:.*]] = fwp.chunk_states %[[FK]], %[[UT]] wt(%[[WT]]
// STAGES: %[[Y:.*]] = fwp.chunk_output %[[FQ]], %[[FK]], %[[U]], %[[H]]
// STAGES: return %[[Y]], %[[S]]

// LINALG-LABEL: func @delta_scan
// LINALG-NOT: fwp.chunk
// LINALG-COUNT-3: scf.forall
// LINALG-NOT: fwp.chunk

// DONE-NOT: = fwp.
