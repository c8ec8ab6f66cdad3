// pbc crash reproducer
// signal 13 (Broken pipe) during: stage opt, pass 'pbc-promote-accumulators' (<-p>:1)
// command: pbc-opt
// replay: pbc-opt THIS_FILE -p 'pbc-promote-accumulators'
#map = affine_map<(d0, d1) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d1)>
#map2 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0) -> (d0 + 128)>
#map4 = affine_map<(d0) -> (d0 + 256)>
#map5 = affine_map<(d0) -> (d0 + 1)>
#map6 = affine_map<(d0) -> (d0 + 2)>
#map7 = affine_map<(d0) -> (d0 + 3)>
#map8 = affine_map<(d0) -> (d0 + 16)>
#map9 = affine_map<(d0) -> (d0 + 32)>
#map10 = affine_map<(d0) -> (d0 + 48)>
module {
  func.func @matmul(%arg0: memref<256x256xf32>, %arg1: memref<256x256xf32>, %arg2: memref<256x256xf32>) {
    %c32768 = arith.constant 32768 : index
    %c0 = arith.constant 0 : index
    %c16384 = arith.constant 16384 : index
    %c0_0 = arith.constant 0 : index
    %cst = arith.constant 0.000000e+00 : f32
    affine.for %arg3 = 0 to 256 {
      affine.for %arg4 = 0 to 256 step 16 {
        %0 = vector.broadcast %cst : f32 to vector<16xf32>
        affine.vector_store %0, %arg2[%arg3, %arg4] : memref<256x256xf32>, vector<16xf32>
      }
    } {pbc.kind = "pointwise"}
    affine.for %arg3 = 0 to 256 step 256 {
      affine.for %arg4 = 0 to 256 step 128 {
        %0 = affine.apply #map(%arg4, %arg3)
        %1 = affine.apply #map1(%arg4, %arg3)
        %alloc = memref.alloc() : memref<128x256xf32>
        affine.for %arg5 = #map2(%arg4) to #map3(%arg4) {
          affine.for %arg6 = #map2(%arg3) to #map4(%arg3) step 16 {
            %2 = affine.vector_load %arg1[%arg5, %arg6] : memref<256x256xf32>, vector<16xf32>
            affine.vector_store %2, %alloc[%arg5 - %arg4, %arg6 - %arg3] : memref<128x256xf32>, vector<16xf32>
          }
        } {pbc.copy}
        affine.for %arg5 = 0 to 256 step 128 {
          %2 = affine.apply #map(%arg5, %arg4)
          %3 = affine.apply #map1(%arg5, %arg4)
          %alloc_1 = memref.alloc() : memref<128x128xf32>
          affine.for %arg6 = #map2(%arg5) to #map3(%arg5) {
            affine.for %arg7 = #map2(%arg4) to #map3(%arg4) step 16 {
              %4 = affine.vector_load %arg0[%arg6, %arg7] : memref<256x256xf32>, vector<16xf32>
              affine.vector_store %4, %alloc_1[%arg6 - %arg5, %arg7 - %arg4] : memref<128x128xf32>, vector<16xf32>
            }
          } {pbc.copy}
          affine.for %arg6 = #map2(%arg3) to #map4(%arg3) step 64 {
            affine.for %arg7 = #map2(%arg5) to #map3(%arg5) step 4 {
              affine.for %arg8 = #map2(%arg4) to #map3(%arg4) {
                %4 = affine.load %alloc_1[-%arg5 + %arg7, -%arg4 + %arg8] : memref<128x128xf32>
                %5 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %arg6] : memref<128x256xf32>, vector<16xf32>
                %6 = affine.vector_load %arg2[%arg7, %arg6] : memref<256x256xf32>, vector<16xf32>
                %7 = vector.broadcast %4 : f32 to vector<16xf32>
                %8 = arith.mulf %7, %5 : vector<16xf32>
                %9 = arith.addf %6, %8 : vector<16xf32>
                affine.vector_store %9, %arg2[%arg7, %arg6] : memref<256x256xf32>, vector<16xf32>
                %10 = affine.apply #map5(%arg7)
                %11 = affine.load %alloc_1[-%arg5 + %10, -%arg4 + %arg8] : memref<128x128xf32>
                %12 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %arg6] : memref<128x256xf32>, vector<16xf32>
                %13 = affine.vector_load %arg2[%10, %arg6] : memref<256x256xf32>, vector<16xf32>
                %14 = vector.broadcast %11 : f32 to vector<16xf32>
                %15 = arith.mulf %14, %12 : vector<16xf32>
                %16 = arith.addf %13, %15 : vector<16xf32>
                affine.vector_store %16, %arg2[%10, %arg6] : memref<256x256xf32>, vector<16xf32>
                %17 = affine.apply #map6(%arg7)
                %18 = affine.load %alloc_1[-%arg5 + %17, -%arg4 + %arg8] : memref<128x128xf32>
                %19 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %arg6] : memref<128x256xf32>, vector<16xf32>
                %20 = affine.vector_load %arg2[%17, %arg6] : memref<256x256xf32>, vector<16xf32>
                %21 = vector.broadcast %18 : f32 to vector<16xf32>
                %22 = arith.mulf %21, %19 : vector<16xf32>
                %23 = arith.addf %20, %22 : vector<16xf32>
                affine.vector_store %23, %arg2[%17, %arg6] : memref<256x256xf32>, vector<16xf32>
                %24 = affine.apply #map7(%arg7)
                %25 = affine.load %alloc_1[-%arg5 + %24, -%arg4 + %arg8] : memref<128x128xf32>
                %26 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %arg6] : memref<128x256xf32>, vector<16xf32>
                %27 = affine.vector_load %arg2[%24, %arg6] : memref<256x256xf32>, vector<16xf32>
                %28 = vector.broadcast %25 : f32 to vector<16xf32>
                %29 = arith.mulf %28, %26 : vector<16xf32>
                %30 = arith.addf %27, %29 : vector<16xf32>
                affine.vector_store %30, %arg2[%24, %arg6] : memref<256x256xf32>, vector<16xf32>
                %31 = affine.apply #map8(%arg6)
                %32 = affine.load %alloc_1[-%arg5 + %arg7, -%arg4 + %arg8] : memref<128x128xf32>
                %33 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %31] : memref<128x256xf32>, vector<16xf32>
                %34 = affine.vector_load %arg2[%arg7, %31] : memref<256x256xf32>, vector<16xf32>
                %35 = vector.broadcast %32 : f32 to vector<16xf32>
                %36 = arith.mulf %35, %33 : vector<16xf32>
                %37 = arith.addf %34, %36 : vector<16xf32>
                affine.vector_store %37, %arg2[%arg7, %31] : memref<256x256xf32>, vector<16xf32>
                %38 = affine.apply #map5(%arg7)
                %39 = affine.load %alloc_1[-%arg5 + %38, -%arg4 + %arg8] : memref<128x128xf32>
                %40 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %31] : memref<128x256xf32>, vector<16xf32>
                %41 = affine.vector_load %arg2[%38, %31] : memref<256x256xf32>, vector<16xf32>
                %42 = vector.broadcast %39 : f32 to vector<16xf32>
                %43 = arith.mulf %42, %40 : vector<16xf32>
                %44 = arith.addf %41, %43 : vector<16xf32>
                affine.vector_store %44, %arg2[%38, %31] : memref<256x256xf32>, vector<16xf32>
                %45 = affine.apply #map6(%arg7)
                %46 = affine.load %alloc_1[-%arg5 + %45, -%arg4 + %arg8] : memref<128x128xf32>
                %47 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %31] : memref<128x256xf32>, vector<16xf32>
                %48 = affine.vector_load %arg2[%45, %31] : memref<256x256xf32>, vector<16xf32>
                %49 = vector.broadcast %46 : f32 to vector<16xf32>
                %50 = arith.mulf %49, %47 : vector<16xf32>
                %51 = arith.addf %48, %50 : vector<16xf32>
                affine.vector_store %51, %arg2[%45, %31] : memref<256x256xf32>, vector<16xf32>
                %52 = affine.apply #map7(%arg7)
                %53 = affine.load %alloc_1[-%arg5 + %52, -%arg4 + %arg8] : memref<128x128xf32>
                %54 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %31] : memref<128x256xf32>, vector<16xf32>
                %55 = affine.vector_load %arg2[%52, %31] : memref<256x256xf32>, vector<16xf32>
                %56 = vector.broadcast %53 : f32 to vector<16xf32>
                %57 = arith.mulf %56, %54 : vector<16xf32>
                %58 = arith.addf %55, %57 : vector<16xf32>
                affine.vector_store %58, %arg2[%52, %31] : memref<256x256xf32>, vector<16xf32>
                %59 = affine.apply #map9(%arg6)
                %60 = affine.load %alloc_1[-%arg5 + %arg7, -%arg4 + %arg8] : memref<128x128xf32>
                %61 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %59] : memref<128x256xf32>, vector<16xf32>
                %62 = affine.vector_load %arg2[%arg7, %59] : memref<256x256xf32>, vector<16xf32>
                %63 = vector.broadcast %60 : f32 to vector<16xf32>
                %64 = arith.mulf %63, %61 : vector<16xf32>
                %65 = arith.addf %62, %64 : vector<16xf32>
                affine.vector_store %65, %arg2[%arg7, %59] : memref<256x256xf32>, vector<16xf32>
                %66 = affine.apply #map5(%arg7)
                %67 = affine.load %alloc_1[-%arg5 + %66, -%arg4 + %arg8] : memref<128x128xf32>
                %68 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %59] : memref<128x256xf32>, vector<16xf32>
                %69 = affine.vector_load %arg2[%66, %59] : memref<256x256xf32>, vector<16xf32>
                %70 = vector.broadcast %67 : f32 to vector<16xf32>
                %71 = arith.mulf %70, %68 : vector<16xf32>
                %72 = arith.addf %69, %71 : vector<16xf32>
                affine.vector_store %72, %arg2[%66, %59] : memref<256x256xf32>, vector<16xf32>
                %73 = affine.apply #map6(%arg7)
                %74 = affine.load %alloc_1[-%arg5 + %73, -%arg4 + %arg8] : memref<128x128xf32>
                %75 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %59] : memref<128x256xf32>, vector<16xf32>
                %76 = affine.vector_load %arg2[%73, %59] : memref<256x256xf32>, vector<16xf32>
                %77 = vector.broadcast %74 : f32 to vector<16xf32>
                %78 = arith.mulf %77, %75 : vector<16xf32>
                %79 = arith.addf %76, %78 : vector<16xf32>
                affine.vector_store %79, %arg2[%73, %59] : memref<256x256xf32>, vector<16xf32>
                %80 = affine.apply #map7(%arg7)
                %81 = affine.load %alloc_1[-%arg5 + %80, -%arg4 + %arg8] : memref<128x128xf32>
                %82 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %59] : memref<128x256xf32>, vector<16xf32>
                %83 = affine.vector_load %arg2[%80, %59] : memref<256x256xf32>, vector<16xf32>
                %84 = vector.broadcast %81 : f32 to vector<16xf32>
                %85 = arith.mulf %84, %82 : vector<16xf32>
                %86 = arith.addf %83, %85 : vector<16xf32>
                affine.vector_store %86, %arg2[%80, %59] : memref<256x256xf32>, vector<16xf32>
                %87 = affine.apply #map10(%arg6)
                %88 = affine.load %alloc_1[-%arg5 + %arg7, -%arg4 + %arg8] : memref<128x128xf32>
                %89 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %87] : memref<128x256xf32>, vector<16xf32>
                %90 = affine.vector_load %arg2[%arg7, %87] : memref<256x256xf32>, vector<16xf32>
                %91 = vector.broadcast %88 : f32 to vector<16xf32>
                %92 = arith.mulf %91, %89 : vector<16xf32>
                %93 = arith.addf %90, %92 : vector<16xf32>
                affine.vector_store %93, %arg2[%arg7, %87] : memref<256x256xf32>, vector<16xf32>
                %94 = affine.apply #map5(%arg7)
                %95 = affine.load %alloc_1[-%arg5 + %94, -%arg4 + %arg8] : memref<128x128xf32>
                %96 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %87] : memref<128x256xf32>, vector<16xf32>
                %97 = affine.vector_load %arg2[%94, %87] : memref<256x256xf32>, vector<16xf32>
                %98 = vector.broadcast %95 : f32 to vector<16xf32>
                %99 = arith.mulf %98, %96 : vector<16xf32>
                %100 = arith.addf %97, %99 : vector<16xf32>
                affine.vector_store %100, %arg2[%94, %87] : memref<256x256xf32>, vector<16xf32>
                %101 = affine.apply #map6(%arg7)
                %102 = affine.load %alloc_1[-%arg5 + %101, -%arg4 + %arg8] : memref<128x128xf32>
                %103 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %87] : memref<128x256xf32>, vector<16xf32>
                %104 = affine.vector_load %arg2[%101, %87] : memref<256x256xf32>, vector<16xf32>
                %105 = vector.broadcast %102 : f32 to vector<16xf32>
                %106 = arith.mulf %105, %103 : vector<16xf32>
                %107 = arith.addf %104, %106 : vector<16xf32>
                affine.vector_store %107, %arg2[%101, %87] : memref<256x256xf32>, vector<16xf32>
                %108 = affine.apply #map7(%arg7)
                %109 = affine.load %alloc_1[-%arg5 + %108, -%arg4 + %arg8] : memref<128x128xf32>
                %110 = affine.vector_load %alloc[-%arg4 + %arg8, -%arg3 + %87] : memref<128x256xf32>, vector<16xf32>
                %111 = affine.vector_load %arg2[%108, %87] : memref<256x256xf32>, vector<16xf32>
                %112 = vector.broadcast %109 : f32 to vector<16xf32>
                %113 = arith.mulf %112, %110 : vector<16xf32>
                %114 = arith.addf %111, %113 : vector<16xf32>
                affine.vector_store %114, %arg2[%108, %87] : memref<256x256xf32>, vector<16xf32>
              }
            } {pbc.parallel}
          } {pbc.parallel}
          memref.dealloc %alloc_1 : memref<128x128xf32>
        } {pbc.parallel}
        memref.dealloc %alloc : memref<128x256xf32>
      }
    } {pbc.kind = "matmul", pbc.parallel}
    return
  }
}

