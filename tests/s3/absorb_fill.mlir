// pbc-absorb-fill: a nest that stores 0.0 into all of %y, followed by a nest
// whose only accesses to %y are accumulator inits (loads feeding iter_args)
// and the stores of the results, under parallel loops that visit every
// element once: the inits become the constant and the fill goes. A
// reduction split by an outer sequential loop (KC blocks: each iteration
// re-reads every accumulator) has that loop's first iteration peeled, and
// the peeled inits take the constant. Kept: a reduction split by two
// sequential loops, a fill of part of the buffer, a consumer that also reads
// %y elsewhere, one that reads through another view (other elements than the
// fill's), and one that stores to an element before its init reads it.
// RUN: pbc-opt %s -p 'pbc-absorb-fill' | FileCheck %s
// CHECK-LABEL: func.func @absorbed
// CHECK-NOT: affine.store %{{.*}}, %arg1
// CHECK: affine.for %[[I:.*]] = 0 to 64 {
// CHECK-NEXT: affine.for %[[J:.*]] = 0 to 64 step 16 {
// CHECK-NEXT: %[[K:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT: %[[V:.*]] = vector.broadcast %[[K]] : f32 to vector<16xf32>
// CHECK-NEXT: affine.for %{{.*}} = 0 to 5 iter_args(%{{.*}} = %[[V]])
// CHECK: affine.vector_store %{{.*}}, %arg1[%[[I]], %[[J]]]
func.func @absorbed(%x: memref<64x68xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 16 {
      %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<64x68xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}

// One KC block (a tile loop of one iteration) visits nothing twice.
// CHECK-LABEL: func.func @one_block
// CHECK-NOT: affine.store %{{.*}}, %arg1
// CHECK: vector.broadcast
// CHECK: affine.for %{{.*}} = 0 to 128 iter_args
func.func @one_block(%x: memref<64x128xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %kc = 0 to 128 step 128 {
    affine.for %i = 0 to 64 {
      affine.for %j = 0 to 64 step 16 {
        %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
        %r = affine.for %k = 0 to 128 iter_args(%acc = %init) -> (vector<16xf32>) {
          %v = affine.vector_load %x[%i, %k] : memref<64x128xf32>, vector<16xf32>
          %s = arith.addf %acc, %v : vector<16xf32>
          affine.yield %s : vector<16xf32>
        }
        affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      }
    }
  }
  return
}

// Two reshapes of one buffer to the same type (pbc-interleave makes one per
// nest) are the same view: absorbed.
// CHECK-LABEL: func.func @two_reshapes
// CHECK-NOT: affine.store
// CHECK: vector.broadcast
func.func @two_reshapes(%x: memref<64x68xf32>, %y: memref<64x16x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %a = memref.collapse_shape %y [[0], [1, 2]] : memref<64x16x4xf32> into memref<64x64xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %a[%i, %j] : memref<64x64xf32>
    }
  }
  %b = memref.collapse_shape %y [[0], [1, 2]] : memref<64x16x4xf32> into memref<64x64xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 16 {
      %init = affine.vector_load %b[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<64x68xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %b[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @split_reduction
// CHECK-NOT: affine.store %{{.*}}, %arg1
// CHECK: affine.for %[[KC:.*]] = 0 to 128 step 128 {
// CHECK-NOT: affine.vector_load %arg1
// CHECK: vector.broadcast
// CHECK-NEXT: affine.for %{{.*}} = 0 to 128 iter_args
// CHECK-NEXT: affine.vector_load %arg0[%{{.*}}, %[[KC]] + %{{.*}}]
// CHECK: affine.vector_store %{{.*}}, %arg1
// CHECK: affine.for %[[KC2:.*]] = 128 to 256 step 128 {
// CHECK: %[[INIT:.*]] = affine.vector_load %arg1
// CHECK-NEXT: affine.for %{{.*}} = 0 to 128 iter_args(%{{.*}} = %[[INIT]])
// CHECK-NEXT: affine.vector_load %arg0[%{{.*}}, %[[KC2]] + %{{.*}}]
// CHECK: affine.vector_store %{{.*}}, %arg1
// CHECK-NOT: affine.for
// CHECK: return
func.func @split_reduction(%x: memref<64x256xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %kc = 0 to 256 step 128 {
    affine.for %i = 0 to 64 {
      affine.for %j = 0 to 64 step 16 {
        %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
        %r = affine.for %k = 0 to 128 iter_args(%acc = %init) -> (vector<16xf32>) {
          %v = affine.vector_load %x[%i, %kc + %k] : memref<64x256xf32>, vector<16xf32>
          %s = arith.addf %acc, %v : vector<16xf32>
          affine.yield %s : vector<16xf32>
        }
        affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      }
    }
  }
  return
}

// Two sequential loops around the inits (an element re-read under both):
// peeling one would not make the other's first visit the only one.
// CHECK-LABEL: func.func @split_twice
// CHECK: affine.store %{{.*}}, %arg1
// CHECK: affine.vector_load %arg1
// CHECK-NOT: vector.broadcast
// CHECK: return
func.func @split_twice(%x: memref<64x256xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %kc = 0 to 256 step 128 {
    affine.for %kk = 0 to 128 step 64 {
      affine.for %i = 0 to 64 {
        affine.for %j = 0 to 64 step 16 {
          %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
          %r = affine.for %k = 0 to 64 iter_args(%acc = %init) -> (vector<16xf32>) {
            %v = affine.vector_load %x[%i, %kc + %kk + %k] : memref<64x256xf32>, vector<16xf32>
            %s = arith.addf %acc, %v : vector<16xf32>
            affine.yield %s : vector<16xf32>
          }
          affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
        }
      }
    }
  }
  return
}

// CHECK-LABEL: func.func @partial_fill
// CHECK: affine.store %{{.*}}, %arg1
// CHECK: affine.vector_load %arg1
func.func @partial_fill(%x: memref<64x68xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 16 {
      %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<64x68xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @read_elsewhere
// CHECK: affine.store %{{.*}}, %arg1
// CHECK: affine.vector_load %arg1
func.func @read_elsewhere(%x: memref<64x68xf32>, %y: memref<64x64xf32>, %z: memref<64xf32>) {
  %zero = arith.constant 0.0 : f32
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %i = 0 to 64 {
    %w = affine.load %y[%i, 0] : memref<64x64xf32>
    affine.store %w, %z[%i] : memref<64xf32>
    affine.for %j = 0 to 64 step 16 {
      %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<64x68xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}

// CHECK-LABEL: func.func @other_view
// CHECK: affine.store %{{.*}}, %subview
// CHECK: affine.vector_load %arg1
// CHECK-LABEL: func.func @store_before_init
// CHECK: affine.store %{{.*}}, %arg1
// CHECK: affine.vector_load %arg1
func.func @other_view(%x: memref<64x68xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %sv = memref.subview %y[0, 0] [32, 64] [1, 1] : memref<64x64xf32> to memref<32x64xf32, strided<[64, 1]>>
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %sv[%i, %j] : memref<32x64xf32, strided<[64, 1]>>
    }
  }
  affine.for %i = 0 to 32 {
    affine.for %j = 0 to 64 step 16 {
      %init = affine.vector_load %y[%i + 32, %j] : memref<64x64xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<64x68xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %y[%i + 32, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}
func.func @store_before_init(%x: memref<64x68xf32>, %y: memref<64x64xf32>) {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant dense<1.0> : vector<16xf32>
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 {
      affine.store %zero, %y[%i, %j] : memref<64x64xf32>
    }
  }
  affine.for %i = 0 to 64 {
    affine.for %j = 0 to 64 step 16 {
      affine.vector_store %one, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %init = affine.vector_load %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
      %r = affine.for %k = 0 to 5 iter_args(%acc = %init) -> (vector<16xf32>) {
        %v = affine.vector_load %x[%i, %j + %k] : memref<64x68xf32>, vector<16xf32>
        %s = arith.addf %acc, %v : vector<16xf32>
        affine.yield %s : vector<16xf32>
      }
      affine.vector_store %r, %y[%i, %j] : memref<64x64xf32>, vector<16xf32>
    }
  }
  return
}
