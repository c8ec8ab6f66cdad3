#!/usr/bin/python3
"""ResNet-18's convolution shapes (NHWC, batch 1), each compiled and timed by
`pbc --run=20` (JIT, median): where ResNet-18's time goes inside pbc.

usage: tools/bench/resnet_convs.py [PBC]   (default build/bin/pbc)
"""
import os
import re
import subprocess
import sys
import tempfile

PBC = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "build", "bin", "pbc")
path = os.path.join(tempfile.mkdtemp(), "conv.mlir")
cfgs = [  # (H_in, C, F, k, stride, pad) resnet18, count
 (224,3,64,7,2,3,1),(56,64,64,3,1,1,4),(56,64,128,3,2,1,1),(28,128,128,3,1,1,3),(56,64,128,1,2,0,1),
 (28,128,256,3,2,1,1),(14,256,256,3,1,1,3),(28,128,256,1,2,0,1),(14,256,512,3,2,1,1),(7,512,512,3,1,1,3),(14,256,512,1,2,0,1)]
tot=0
for h,c,f,k,s,p,cnt in cfgs:
    hp=h+2*p; oh=(hp-k)//s+1
    t=f"""func.func @c(%x: tensor<1x{hp}x{hp}x{c}xf32>, %w: tensor<{k}x{k}x{c}x{f}xf32>) -> tensor<1x{oh}x{oh}x{f}xf32> {{
  %z = tensor.empty() : tensor<1x{oh}x{oh}x{f}xf32>
  %c0 = arith.constant 0.0 : f32
  %fl = linalg.fill ins(%c0 : f32) outs(%z : tensor<1x{oh}x{oh}x{f}xf32>) -> tensor<1x{oh}x{oh}x{f}xf32>
  %r = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{s}> : tensor<2xi64>}} ins(%x, %w : tensor<1x{hp}x{hp}x{c}xf32>, tensor<{k}x{k}x{c}x{f}xf32>) outs(%fl : tensor<1x{oh}x{oh}x{f}xf32>) -> tensor<1x{oh}x{oh}x{f}xf32>
  return %r : tensor<1x{oh}x{oh}x{f}xf32>
}}"""
    open(path, 'w').write(t)
    out=subprocess.run([PBC, '--run=20', path],capture_output=True,text=True).stdout
    ms=float(re.search(r'median ([0-9.]+)',out).group(1))
    gf=2*oh*oh*f*c*k*k/ms/1e6
    tot+=ms*cnt
    print(f"{h}x{h} {c}->{f} k{k} s{s}: {ms:.3f} ms x{cnt}  {gf:.0f} GFLOP/s")
print('total conv ms', tot)
