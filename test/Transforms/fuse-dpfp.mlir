// RUN: fwp-opt %s -fwp-fuse-dpfp -split-input-file | FileCheck %s

// Both maps agree: the scan takes the raw vectors, applies DPFP itself and
// keeps its result types; the dead maps are erased.

// CHECK-LABEL: func @fuse_delta
// CHECK-SAME: (%[[Q:.*]]: tensor<?x1x2x4xf32>, %[[K:.*]]: tensor<?x1x2x4xf32>, %[[V:.*]]: tensor<?x1x2x4xf32>, %[[B:.*]]: tensor<?x1x2xf32>, %[[S:.*]]: tensor<1x2x4x16xf32>)
// CHECK-NOT: fwp.dpfp
// CHECK: %[[Y:.*]], %[[F:.*]] = fwp.scan delta %[[Q]], %[[K]], %[[V]] beta(%[[B]] : tensor<?x1x2xf32>) initial(%[[S]] : tensor<1x2x4x16xf32>) dpfp(nu = 2, eps = 1.000000e-03)
// CHECK-SAME: : tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32>, tensor<?x1x2x4xf32> -> tensor<?x1x2x4xf32>, tensor<1x2x4x16xf32>
// CHECK-NOT: fwp.dpfp
// CHECK: return %[[Y]], %[[F]]
func.func @fuse_delta(%q: tensor<?x1x2x4xf32>, %k: tensor<?x1x2x4xf32>,
                      %v: tensor<?x1x2x4xf32>, %b: tensor<?x1x2xf32>,
                      %s: tensor<1x2x4x16xf32>)
    -> (tensor<?x1x2x4xf32>, tensor<1x2x4x16xf32>) {
  %fq = fwp.dpfp %q nu = 2 eps = 1.0e-3 : tensor<?x1x2x4xf32> -> tensor<?x1x2x16xf32>
  %fk = fwp.dpfp %k nu = 2 eps = 1.0e-3 : tensor<?x1x2x4xf32> -> tensor<?x1x2x16xf32>
  %y, %f = fwp.scan delta %fq, %fk, %v beta(%b : tensor<?x1x2xf32>)
      initial(%s : tensor<1x2x4x16xf32>)
      : tensor<?x1x2x16xf32>, tensor<?x1x2x16xf32>, tensor<?x1x2x4xf32>
      -> tensor<?x1x2x4xf32>, tensor<1x2x4x16xf32>
  return %y, %f : tensor<?x1x2x4xf32>, tensor<1x2x4x16xf32>
}

// -----

// Sum rule, default parameters, q and k from one map; a map with another
// user stays.

// CHECK-LABEL: func @fuse_sum_shared
// CHECK-SAME: (%[[X:.*]]: tensor<8x1x1x3xf64>, %[[V:.*]]: tensor<8x1x1x2xf64>)
// CHECK: %[[F:.*]] = fwp.dpfp %[[X]] : tensor<8x1x1x3xf64> -> tensor<8x1x1x6xf64>
// CHECK: %[[Y:.*]] = fwp.scan sum %[[X]], %[[X]], %[[V]] dpfp(nu = 1, eps = {{.*}}) : tensor<8x1x1x3xf64>, tensor<8x1x1x3xf64>, tensor<8x1x1x2xf64> -> tensor<8x1x1x2xf64>
// CHECK: return %[[Y]], %[[F]]
func.func @fuse_sum_shared(%x: tensor<8x1x1x3xf64>, %v: tensor<8x1x1x2xf64>)
    -> (tensor<8x1x1x2xf64>, tensor<8x1x1x6xf64>) {
  %f = fwp.dpfp %x : tensor<8x1x1x3xf64> -> tensor<8x1x1x6xf64>
  %y = fwp.scan sum %f, %f, %v
      : tensor<8x1x1x6xf64>, tensor<8x1x1x6xf64>, tensor<8x1x1x2xf64>
      -> tensor<8x1x1x2xf64>
  return %y, %f : tensor<8x1x1x2xf64>, tensor<8x1x1x6xf64>
}

// -----

// Different nu (3, and the default 1): the scan has one nu, so nothing
// changes.

// CHECK-LABEL: func @mismatched_nu
// CHECK: %[[FQ:.*]] = fwp.dpfp %{{.*}} nu = 3 :
// CHECK: %[[FK:.*]] = fwp.dpfp %{{[^ ]*}} : tensor<4x1x1x6xf32>
// CHECK: fwp.scan sum %[[FQ]], %[[FK]], %{{[^ ]*}} :
// CHECK-NOT: dpfp(
func.func @mismatched_nu(%q: tensor<4x1x1x2xf32>, %k: tensor<4x1x1x6xf32>,
                         %v: tensor<4x1x1x2xf32>) -> tensor<4x1x1x2xf32> {
  %fq = fwp.dpfp %q nu = 3 : tensor<4x1x1x2xf32> -> tensor<4x1x1x12xf32>
  %fk = fwp.dpfp %k nu = 1 : tensor<4x1x1x6xf32> -> tensor<4x1x1x12xf32>
  %y = fwp.scan sum %fq, %fk, %v
      : tensor<4x1x1x12xf32>, tensor<4x1x1x12xf32>, tensor<4x1x1x2xf32>
      -> tensor<4x1x1x2xf32>
  return %y : tensor<4x1x1x2xf32>
}

// -----

// Different eps: nothing changes either.

// CHECK-LABEL: func @mismatched_eps
// CHECK: fwp.scan sum %{{[^ ]*}}, %{{[^ ]*}}, %{{[^ ]*}} :
// CHECK-NOT: dpfp(
func.func @mismatched_eps(%q: tensor<4x1x1x2xf32>, %k: tensor<4x1x1x2xf32>,
                          %v: tensor<4x1x1x2xf32>) -> tensor<4x1x1x2xf32> {
  %fq = fwp.dpfp %q : tensor<4x1x1x2xf32> -> tensor<4x1x1x4xf32>
  %fk = fwp.dpfp %k eps = 1.0e-3 : tensor<4x1x1x2xf32> -> tensor<4x1x1x4xf32>
  %y = fwp.scan sum %fq, %fk, %v
      : tensor<4x1x1x4xf32>, tensor<4x1x1x4xf32>, tensor<4x1x1x2xf32>
      -> tensor<4x1x1x2xf32>
  return %y : tensor<4x1x1x2xf32>
}

// -----

// k does not come from fwp.dpfp: the map on q stays.

// CHECK-LABEL: func @key_not_mapped
// CHECK-SAME: (%[[Q:.*]]: tensor<4x1x1x2xf32>, %[[K:.*]]: tensor<4x1x1x4xf32>
// CHECK: %[[FQ:.*]] = fwp.dpfp %[[Q]]
// CHECK: fwp.scan delta %[[FQ]], %[[K]], %{{[^ ]*}} beta
// CHECK-NOT: dpfp(
func.func @key_not_mapped(%q: tensor<4x1x1x2xf32>, %k: tensor<4x1x1x4xf32>,
                          %v: tensor<4x1x1x2xf32>, %b: tensor<4x1x1xf32>)
    -> tensor<4x1x1x2xf32> {
  %fq = fwp.dpfp %q : tensor<4x1x1x2xf32> -> tensor<4x1x1x4xf32>
  %y = fwp.scan delta %fq, %k, %v beta(%b : tensor<4x1x1xf32>)
      : tensor<4x1x1x4xf32>, tensor<4x1x1x4xf32>, tensor<4x1x1x2xf32>
      -> tensor<4x1x1x2xf32>
  return %y : tensor<4x1x1x2xf32>
}

// -----

// A batch-first scan stays batch first.
// CHECK-LABEL: func @fuse_batch_first
// CHECK: fwp.scan sum %{{.*}}, %{{.*}}, %{{.*}} dpfp(nu = 1, eps = {{.*}}) batch_first : tensor<3x?x2x4xf32>
func.func @fuse_batch_first(%x: tensor<3x?x2x4xf32>, %v: tensor<3x?x2x5xf32>)
    -> tensor<3x?x2x5xf32> {
  %f = fwp.dpfp %x nu = 1 : tensor<3x?x2x4xf32> -> tensor<3x?x2x8xf32>
  %y = fwp.scan sum %f, %f, %v batch_first
      : tensor<3x?x2x8xf32>, tensor<3x?x2x8xf32>, tensor<3x?x2x5xf32>
      -> tensor<3x?x2x5xf32>
  return %y : tensor<3x?x2x5xf32>
}
