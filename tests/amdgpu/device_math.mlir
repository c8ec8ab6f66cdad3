// Device math on AMD: gfx90a calls the ROCm device libraries (Debian's
// rocm-device-libs 5.2) except for tanh, which they lack and which becomes a
// polynomial; gfx942 and gfx1100 have no device libraries in 5.2, so every
// math op becomes a polynomial. Host code is never touched.
// RUN: pbc-opt --target=amdgpu --chip=gfx90a --through=s4 %s | pbc-opt --target=amdgpu --chip=gfx90a -p 'pbc-approximate-math{ops=${device-math-approximation} scope=device}' - | FileCheck %s --check-prefix=LIBS
// RUN: pbc-opt --target=amdgpu --chip=gfx942 --through=s4 %s | pbc-opt --target=amdgpu --chip=gfx942 -p 'pbc-approximate-math{ops=${device-math-approximation} scope=device}' - | FileCheck %s --check-prefix=POLY
// RUN: pbc-opt --target=amdgpu --chip=gfx1100 --through=s4 %s | pbc-opt --target=amdgpu --chip=gfx1100 -p 'pbc-approximate-math{ops=${device-math-approximation} scope=device}' - | FileCheck %s --check-prefix=POLY
// The library call that remains on gfx90a links: the HSACO builds.
// RUN: pbc --target=amdgpu --chip=gfx90a --emit=lib -o %t.so %s
// RUN: pbc --target=amdgpu --chip=gfx942 --emit=lib -o %t.so %s

// LIBS: gpu.module
// LIBS-NOT: math.tanh
// LIBS: math.exp
// LIBS-NOT: math.tanh

// POLY: gpu.module
// POLY-NOT: math.tanh
// POLY-NOT: math.exp
// POLY: gpu.return

func.func @f(%a: tensor<256xf32>) -> tensor<256xf32> {
  %e = tensor.empty() : tensor<256xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<256xf32>) outs(%e : tensor<256xf32>) {
  ^bb0(%x: f32, %o: f32):
    %t = math.tanh %x : f32
    %x2 = math.exp %t : f32
    linalg.yield %x2 : f32
  } -> tensor<256xf32>
  return %r : tensor<256xf32>
}
