// A library from `pbc --emit=lib` needs only pbc's cpu runtime, OpenMP, libm
// and libc: never libMLIR or libLLVM (hundreds of MB). Every symbol it imports
// resolves against those alone (bf16 conversions are library calls on chips
// without AVX512-BF16, and f64 -> bf16 everywhere), on each chip.
// RUN: rm -rf %t && mkdir -p %t
// RUN: pbc --emit=lib --chip=x86-64-v3 %s -o %t/v3.so
// RUN: pbc --emit=lib --chip=x86-64-v4 %s -o %t/v4.so
// RUN: pbc --emit=lib %s -o %t/native.so
// RUN: readelf -d %t/v3.so | grep NEEDED | sed 's/.*\[//; s/\]//' | sort | FileCheck %s
// CHECK: libc.so.6
// CHECK-NEXT: libm.so.6
// CHECK-NEXT: libomp.so.5
// CHECK-NEXT: libpbc_cpu_runtime.so
// CHECK-EMPTY:
// RUN: for l in v3 v4 native; do /usr/bin/python3 -c "import ctypes, os, sys; ctypes.CDLL(sys.argv[1], os.RTLD_NOW); m = open('/proc/self/maps').read(); sys.exit('libMLIR' in m or 'libLLVM' in m)" %t/$l.so || exit 1; done
func.func @convert(%x: tensor<64xf32>, %d: tensor<64xf64>) -> (tensor<64xbf16>, tensor<64xbf16>) {
  %z = tensor.empty() : tensor<64xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%x : tensor<64xf32>) outs(%z : tensor<64xbf16>) {
  ^bb0(%a: f32, %o: bf16):
    %t = arith.truncf %a : f32 to bf16
    linalg.yield %t : bf16
  } -> tensor<64xbf16>
  %s = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]}
      ins(%d : tensor<64xf64>) outs(%z : tensor<64xbf16>) {
  ^bb0(%a: f64, %o: bf16):
    %t = arith.truncf %a : f64 to bf16
    linalg.yield %t : bf16
  } -> tensor<64xbf16>
  return %r, %s : tensor<64xbf16>, tensor<64xbf16>
}
