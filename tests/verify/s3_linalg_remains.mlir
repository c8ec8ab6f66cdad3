// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s3}' 2>&1 | FileCheck %s

// No linalg op may remain after S3.

// CHECK: error: stage s3 contract violated: 'linalg.fill' remains after S3
func.func @f(%m: memref<4xf32>) {
  %z = arith.constant 0.0 : f32
  linalg.fill ins(%z : f32) outs(%m : memref<4xf32>)
  return
}
