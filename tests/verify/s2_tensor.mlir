// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s2}' 2>&1 | FileCheck %s

// s2 includes s1's contract: tensor values are still violations.

// CHECK: error: stage s2 contract violated: result #0 of 'bufferization.to_tensor' has tensor type 'tensor<4xf32>'
func.func @f(%m: memref<4xf32>) {
  %t = bufferization.to_tensor %m : memref<4xf32> to tensor<4xf32>
  return
}
