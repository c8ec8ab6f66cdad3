// Packed weights past 2 GiB link: two 1.6 GB weights (marked pbc.invariant,
// packed once into the library's zero-initialized data) make 3.4 GB of
// packed tiles, past what the small code model's 32-bit PC-relative
// addressing reaches ("relocation R_X86_64_PC32 out of range ... references
// section '.bss'" from ld.lld, which sent every model of over ~2 GiB of
// weights eager). x86-64 code is generated for the medium code model: the
// big objects go to .lbss, addressed with 64-bit offsets.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pbc --emit=lib %s -o %t/libbig.so
// RUN: readelf -SW %t/libbig.so | FileCheck %s
// CHECK: .lbss NOBITS
func.func @f(%x: tensor<128x20480xf32>, %w1: tensor<20480x20480xf32> {pbc.invariant},
             %w2: tensor<20480x20480xf32> {pbc.invariant}) -> tensor<128x20480xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<128x20480xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<128x20480xf32>) -> tensor<128x20480xf32>
  %a = linalg.matmul ins(%x, %w1 : tensor<128x20480xf32>, tensor<20480x20480xf32>) outs(%f : tensor<128x20480xf32>) -> tensor<128x20480xf32>
  %b = linalg.matmul ins(%a, %w2 : tensor<128x20480xf32>, tensor<20480x20480xf32>) outs(%f : tensor<128x20480xf32>) -> tensor<128x20480xf32>
  return %b : tensor<128x20480xf32>
}
