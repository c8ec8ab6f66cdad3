// RUN: not pbc-opt %s -p 'pbc-verify-stage{stage=s1}' 2>&1 | FileCheck %s

// A function declaration (no body, so no block arguments) returning a tensor
// is caught from its signature.

// CHECK: error: stage s1 contract violated: function result #0 of 'func.func' has tensor type 'tensor<4xf32>'
func.func private @ext(memref<4xf32>) -> tensor<4xf32>
