#!/usr/bin/env python3
"""GPU benchmark: pbc's nvgpu kernels against cuBLAS / cuDNN / SDPA (through
torch), Triton and torch.compile (Inductor), on a lent H100/H200.

Two steps, because pbc (MLIR 22) lives here and the GPU lives there:

  here:   /usr/bin/python3 tools/bench/bench_gpu.py build [--chip sm_90] [--out build/gpu-bench]
          compiles every case with `pbc --target=nvgpu --emit=lib` and writes
          OUT/manifest.json, the libraries, the nvgpu runtime and pbc_lib.py.
  there:  device run, carry build/gpu-bench:
          python3 build/gpu-bench/bench_gpu.py run build/gpu-bench [--runs 20] [--only SUBSTR]

Timing: pbc's runtime brackets each kernel launch with CUDA events
(PBC_GPU_KERNEL_TIMING=1) so the host<->device copies that pbc's host code
makes at entry and exit are not counted; the peers are timed with CUDA
events around the call on inputs already on the GPU. Each figure is the
median of --runs runs after 3 warm-ups, on fresh random inputs per case.
Ratios are peer time / pbc time (above 1: pbc is faster). Every pbc result
is compared with torch's (relative max error printed).

Cases: f16 matmuls 1024..8192 and transformer shapes (f16 C, f32
accumulation), three with bias + relu in the kernel's copy-out, two on
bf16 operands and C, three as x Wᵀ (B given N x K), three i8 x i8 -> i32
(x Wᵀ, against torch._int_mm); ResNet-50 3x3 and 1x1 convolutions (NHWC, f16, batch 8,
input pre-padded); the attention configurations of the PolyBlocks paper's
Table 2 (softmax(Q K^T) V per head; f16 operands, f32 scores).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

MATMULS = [(n, n, n) for n in (1024, 2048, 4096, 8192)] + [
    (8192, 768, 3072), (8192, 3072, 768), (8192, 2304, 768)]
# relu(A B + bias): the epilogue absorbed into the kernel's copy-out.
MATMULS_BIAS_RELU = [(4096, 4096, 4096), (8192, 3072, 768), (8192, 768, 3072)]
# i8 x i8 -> i32, B given N x K (mma.sync m16n8k32; torch._int_mm's form).
MATMULS_I8 = [(4096, 4096, 4096), (8192, 3072, 768), (8192, 768, 3072)]
# bf16 operands and C (nvvm.mma.sync with .bf16 operands).
MATMULS_BF16 = [(4096, 4096, 4096), (8192, 3072, 768)]
# x Wᵀ, as torch's linear layers multiply (B given N x K, k contiguous).
MATMULS_NT = [(4096, 4096, 4096), (8192, 768, 3072), (8192, 3072, 768)]
# ResNet-50 (batch 8): (H, W, C, F, kernel, stride) of the output's input.
CONVS = [(56, 56, 64, 64, 3, 1), (56, 56, 64, 256, 1, 1), (56, 56, 256, 64, 1, 1),
         (28, 28, 128, 128, 3, 1), (14, 14, 256, 256, 3, 1), (7, 7, 512, 512, 3, 1),
         (56, 56, 128, 128, 3, 2)]
# PolyBlocks Table 2: (label, batch, heads, sequence, head dim).
ATTENTION = [("B1H16N512D64", 1, 16, 512, 64), ("B1H16N2048D64", 1, 16, 2048, 64),
             ("B1H16N8192D64", 1, 16, 8192, 64), ("B1H16N512D128", 1, 16, 512, 128),
             ("B1H16N2048D128", 1, 16, 2048, 128), ("B1H16N8192D128", 1, 16, 8192, 128),
             ("DPT-large", 1, 16, 577, 64), ("GPT2", 1, 12, 10, 64), ("YOLOs", 1, 6, 297, 64),
             ("RoBERTa", 1, 16, 14, 64), ("DistilBERT", 1, 12, 13, 64),
             ("QueryWellFormed", 1, 80, 14, 64), ("tabletransf-500", 1, 8, 500, 32),
             ("tabletransf-15", 1, 8, 15, 32), ("owl-vit-16", 1, 16, 16, 64),
             ("xlm-roberta", 1, 12, 15, 64), ("gte-attn", 1, 48, 10, 64),
             ("mpT7b", 1, 32, 1024, 128)]
BATCH = 8


def matmul_mlir(m, n, k, dt="f16"):
    return f"""func.func @f(%a: tensor<{m}x{k}x{dt}>, %b: tensor<{k}x{n}x{dt}>) -> tensor<{m}x{n}x{dt}> {{
  %z = arith.constant 0.0 : {dt}
  %e = tensor.empty() : tensor<{m}x{n}x{dt}>
  %c = linalg.fill ins(%z : {dt}) outs(%e : tensor<{m}x{n}x{dt}>) -> tensor<{m}x{n}x{dt}>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}x{dt}>, tensor<{k}x{n}x{dt}>) outs(%c : tensor<{m}x{n}x{dt}>) -> tensor<{m}x{n}x{dt}>
  return %r : tensor<{m}x{n}x{dt}>
}}
"""


def matmul_bias_relu_mlir(m, n, k):
    """relu(A B + bias) in f16 (f32 accumulation): the epilogue in the
    kernel's copy-out."""
    return f"""func.func @f(%a: tensor<{m}x{k}xf16>, %b: tensor<{k}x{n}xf16>, %bias: tensor<{n}xf16>) -> tensor<{m}x{n}xf16> {{
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<{m}x{n}xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %r = linalg.matmul ins(%a, %b : tensor<{m}x{k}xf16>, tensor<{k}x{n}xf16>) outs(%c : tensor<{m}x{n}xf32>) -> tensor<{m}x{n}xf32>
  %eh = tensor.empty() : tensor<{m}x{n}xf16>
  %h = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%r, %bias : tensor<{m}x{n}xf32>, tensor<{n}xf16>) outs(%eh : tensor<{m}x{n}xf16>) {{
    ^bb0(%x: f32, %y: f16, %o: f16):
      %yf = arith.extf %y : f16 to f32
      %s = arith.addf %x, %yf : f32
      %t = arith.maximumf %s, %z : f32
      %u = arith.truncf %t : f32 to f16
      linalg.yield %u : f16
  }} -> tensor<{m}x{n}xf16>
  return %h : tensor<{m}x{n}xf16>
}}
"""


def matmul_nt_mlir(m, n, k, elem="f16", acc="f16", zero="0.0"):
    """C = A · Bᵀ (B stored n x k), elem operands into acc."""
    return f"""func.func @f(%a: tensor<{m}x{k}x{elem}>, %b: tensor<{n}x{k}x{elem}>) -> tensor<{m}x{n}x{acc}> {{
  %z = arith.constant {zero} : {acc}
  %e = tensor.empty() : tensor<{m}x{n}x{acc}>
  %c = linalg.fill ins(%z : {acc}) outs(%e : tensor<{m}x{n}x{acc}>) -> tensor<{m}x{n}x{acc}>
  %r = linalg.matmul indexing_maps = [affine_map<(i, j, l) -> (i, l)>, affine_map<(i, j, l) -> (j, l)>, affine_map<(i, j, l) -> (i, j)>]
      ins(%a, %b : tensor<{m}x{k}x{elem}>, tensor<{n}x{k}x{elem}>) outs(%c : tensor<{m}x{n}x{acc}>) -> tensor<{m}x{n}x{acc}>
  return %r : tensor<{m}x{n}x{acc}>
}}
"""


def conv_shapes(h, w, c, f, kernel, stride):
    oh, ow = h // stride, w // stride
    ih, iw = (oh - 1) * stride + kernel, (ow - 1) * stride + kernel
    return (BATCH, ih, iw, c), (kernel, kernel, c, f), (BATCH, oh, ow, f)


def conv_mlir(h, w, c, f, kernel, stride):
    x, k, o = (("x".join(map(str, s))) for s in conv_shapes(h, w, c, f, kernel, stride))
    return f"""func.func @f(%x: tensor<{x}xf16>, %w: tensor<{k}xf16>) -> tensor<{o}xf16> {{
  %z = arith.constant 0.0 : f16
  %e = tensor.empty() : tensor<{o}xf16>
  %c = linalg.fill ins(%z : f16) outs(%e : tensor<{o}xf16>) -> tensor<{o}xf16>
  %r = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<{stride}> : tensor<2xi64>}}
      ins(%x, %w : tensor<{x}xf16>, tensor<{k}xf16>) outs(%c : tensor<{o}xf16>) -> tensor<{o}xf16>
  return %r : tensor<{o}xf16>
}}
"""


def attention_mlir(b, h, n, d):
    g = b * h
    qk = ("[affine_map<(g, i, j, k) -> (g, i, k)>, affine_map<(g, i, j, k) -> (g, j, k)>, "
          "affine_map<(g, i, j, k) -> (g, i, j)>]")
    ident = "affine_map<(g, i, j) -> (g, i, j)>"
    scale = 1.0 / d ** 0.5
    return f"""func.func @f(%q: tensor<{g}x{n}x{d}xf16>, %k: tensor<{g}x{n}x{d}xf16>, %v: tensor<{g}x{n}x{d}xf16>) -> tensor<{g}x{n}x{d}xf16> {{
  %z = arith.constant 0.0 : f32
  %zh = arith.constant 0.0 : f16
  %scale = arith.constant {scale:.9e} : f32
  %es = tensor.empty() : tensor<{g}x{n}x{n}xf32>
  %fs = linalg.fill ins(%z : f32) outs(%es : tensor<{g}x{n}x{n}xf32>) -> tensor<{g}x{n}x{n}xf32>
  %s = linalg.generic {{indexing_maps = {qk}, iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%q, %k : tensor<{g}x{n}x{d}xf16>, tensor<{g}x{n}x{d}xf16>) outs(%fs : tensor<{g}x{n}x{n}xf32>) {{
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %m = arith.mulf %xf, %yf : f32
    %a = arith.addf %acc, %m : f32
    linalg.yield %a : f32
  }} -> tensor<{g}x{n}x{n}xf32>
  %ess = tensor.empty() : tensor<{g}x{n}x{n}xf32>
  %ss = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%s : tensor<{g}x{n}x{n}xf32>) outs(%ess : tensor<{g}x{n}x{n}xf32>) {{
  ^bb0(%x: f32, %o: f32):
    %t = arith.mulf %x, %scale : f32
    linalg.yield %t : f32
  }} -> tensor<{g}x{n}x{n}xf32>
  %ep = tensor.empty() : tensor<{g}x{n}x{n}xf32>
  %p = linalg.softmax dimension(2) ins(%ss : tensor<{g}x{n}x{n}xf32>) outs(%ep : tensor<{g}x{n}x{n}xf32>) -> tensor<{g}x{n}x{n}xf32>
  %eh = tensor.empty() : tensor<{g}x{n}x{n}xf16>
  %ph = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%p : tensor<{g}x{n}x{n}xf32>) outs(%eh : tensor<{g}x{n}x{n}xf16>) {{
  ^bb0(%x: f32, %o: f16):
    %t = arith.truncf %x : f32 to f16
    linalg.yield %t : f16
  }} -> tensor<{g}x{n}x{n}xf16>
  %eo = tensor.empty() : tensor<{g}x{n}x{d}xf16>
  %fo = linalg.fill ins(%zh : f16) outs(%eo : tensor<{g}x{n}x{d}xf16>) -> tensor<{g}x{n}x{d}xf16>
  %o = linalg.batch_matmul ins(%ph, %v : tensor<{g}x{n}x{n}xf16>, tensor<{g}x{n}x{d}xf16>) outs(%fo : tensor<{g}x{n}x{d}xf16>) -> tensor<{g}x{n}x{d}xf16>
  return %o : tensor<{g}x{n}x{d}xf16>
}}
"""


def cases():
    for m, n, k in MATMULS:
        yield {"name": "matmul_%dx%dx%d" % (m, n, k), "kind": "matmul", "shape": [m, n, k],
               "inputs": [[m, k], [k, n]], "output": [m, n], "flops": 2 * m * n * k,
               "mlir": matmul_mlir(m, n, k)}
    for m, n, k in MATMULS_BIAS_RELU:
        yield {"name": "matmul_bias_relu_%dx%dx%d" % (m, n, k), "kind": "matmul_bias_relu",
               "shape": [m, n, k], "inputs": [[m, k], [k, n], [n]], "output": [m, n],
               "flops": 2 * m * n * k, "mlir": matmul_bias_relu_mlir(m, n, k)}
    for m, n, k in MATMULS_I8:
        yield {"name": "matmul_i8_%dx%dx%d" % (m, n, k), "kind": "matmul_i8", "shape": [m, n, k],
               "inputs": [[m, k], [n, k]], "output": [m, n], "flops": 2 * m * n * k,
               "mlir": matmul_nt_mlir(m, n, k, "i8", "i32", "0")}
    for m, n, k in MATMULS_BF16:
        yield {"name": "matmul_bf16_%dx%dx%d" % (m, n, k), "kind": "matmul", "dtype": "bf16",
               "shape": [m, n, k], "inputs": [[m, k], [k, n]], "output": [m, n],
               "flops": 2 * m * n * k, "mlir": matmul_mlir(m, n, k, "bf16")}
    for m, n, k in MATMULS_NT:
        yield {"name": "matmul_nt_%dx%dx%d" % (m, n, k), "kind": "matmul_nt", "shape": [m, n, k],
               "inputs": [[m, k], [n, k]], "output": [m, n], "flops": 2 * m * n * k,
               "mlir": matmul_nt_mlir(m, n, k)}
    for h, w, c, f, kernel, stride in CONVS:
        x, wt, o = conv_shapes(h, w, c, f, kernel, stride)
        yield {"name": "conv_%dx%d_%d_%d_k%d_s%d" % (h, w, c, f, kernel, stride), "kind": "conv",
               "shape": [h, w, c, f, kernel, stride], "stride": stride,
               "inputs": [list(x), list(wt)], "output": list(o),
               "flops": 2 * o[0] * o[1] * o[2] * o[3] * kernel * kernel * c,
               "mlir": conv_mlir(h, w, c, f, kernel, stride)}
    for label, b, h, n, d in ATTENTION:
        g = b * h
        yield {"name": "attention_" + label, "kind": "attention", "shape": [b, h, n, d],
               "inputs": [[g, n, d]] * 3, "output": [g, n, d], "flops": 4 * g * n * n * d,
               "mlir": attention_mlir(b, h, n, d)}


def build(args):
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    pbc = args.pbc or os.path.join(ROOT, "build", "bin", "pbc")
    runtime = os.path.join(os.path.dirname(pbc), "libpbc_nvgpu_runtime.so")
    manifest = {"chip": args.chip, "runtime_linked_as": runtime, "cases": []}
    for case in cases():
        if args.only and args.only not in case["name"]:
            continue
        src = os.path.join(out, case["name"] + ".mlir")
        with open(src, "w") as f:
            f.write(case.pop("mlir"))
        lib = os.path.join(out, case["name"] + ".so")
        r = subprocess.run([pbc, "--target=nvgpu", "--chip=" + args.chip, "--emit=lib", "-o", lib, src],
                           capture_output=True, text=True)
        if r.returncode:
            print("pbc failed on %s:\n%s" % (case["name"], r.stderr), file=sys.stderr)
            return 1
        case["lib"] = os.path.basename(lib)
        manifest["cases"].append(case)
        print("built", case["name"], flush=True)
    shutil.copy(runtime, out)
    shutil.copy(os.path.abspath(__file__), out)
    shutil.copy(os.path.join(ROOT, "tests", "e2e", "pbc_lib.py"), out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print("wrote %s (%d cases)" % (out, len(manifest["cases"])))
    return 0


# --- On the GPU machine -----------------------------------------------------

def cuda_time(fn, runs):
    import torch
    for _ in range(3):
        fn()
    times = []
    for _ in range(runs):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def triton_matmul():
    """The Triton tutorial's f16 matmul (f32 accumulation), autotuned."""
    import triton
    import triton.language as tl

    configs = [triton.Config({"BM": bm, "BN": bn, "BK": bk}, num_stages=s, num_warps=w)
               for bm, bn, bk, s, w in [(128, 256, 64, 3, 8), (256, 128, 64, 3, 8),
                                        (128, 128, 64, 4, 4), (128, 128, 32, 4, 4),
                                        (64, 128, 32, 4, 4), (128, 64, 32, 4, 4)]]

    @triton.autotune(configs=configs, key=["M", "N", "K"])
    @triton.jit
    def kernel(a, b, c, M, N, K, sam, sak, sbk, sbn, scm, scn,
               BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
        pm, pn = tl.program_id(0), tl.program_id(1)
        rm = pm * BM + tl.arange(0, BM)
        rn = pn * BN + tl.arange(0, BN)
        rk = tl.arange(0, BK)
        pa = a + rm[:, None] * sam + rk[None, :] * sak
        pb = b + rk[:, None] * sbk + rn[None, :] * sbn
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, tl.cdiv(K, BK)):
            am = (rm[:, None] < M) & (rk[None, :] < K - k * BK)
            bm = (rk[:, None] < K - k * BK) & (rn[None, :] < N)
            acc += tl.dot(tl.load(pa, mask=am, other=0.0), tl.load(pb, mask=bm, other=0.0))
            pa += BK * sak
            pb += BK * sbk
        pc = c + rm[:, None] * scm + rn[None, :] * scn
        tl.store(pc, acc.to(tl.float16), mask=(rm[:, None] < M) & (rn[None, :] < N))

    def matmul(x, y, out):
        M, K = x.shape
        N = y.shape[1]
        grid = lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))
        kernel[grid](x, y, out, M, N, K, x.stride(0), x.stride(1), y.stride(0), y.stride(1),
                     out.stride(0), out.stride(1))
    return matmul


def run(args):
    import numpy as np
    import torch
    import torch.nn.functional as F

    folder = os.path.abspath(args.folder)
    with open(os.path.join(folder, "manifest.json")) as f:
        manifest = json.load(f)
    os.environ["PBC_GPU_KERNEL_TIMING"] = "1"
    sys.path.insert(0, folder)
    import ctypes
    import pbc_lib
    linked = manifest["runtime_linked_as"]
    pbc_lib.install_runtime(linked, os.path.join(folder, "libpbc_nvgpu_runtime.so"))
    rt = ctypes.CDLL(linked)
    rt.pbcGpuKernelMilliseconds.restype = ctypes.c_double
    peers = set(args.peers.split(","))
    tri = None
    try:
        if "triton" in peers:
            tri = triton_matmul()
    except Exception as e:  # noqa: BLE001 - report and go on without Triton
        print("Triton unavailable:", e)
    # torch's defaults (cuBLAS may reduce in f16; pbc accumulates in f32).
    print("device:", torch.cuda.get_device_name(), "| torch", torch.__version__,
          "| allow_fp16_reduced_precision_reduction =",
          torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction,
          "| median of %d runs after 3 warm-ups; ratio = peer time / pbc time" % args.runs)
    header = "%-36s %9s %9s %9s %9s %9s %7s %7s %7s %9s" % (
        "case", "pbc ms", "TFLOP/s", "vendor", "inductor", "triton", "x vend", "x ind", "x tri", "rel err")
    print(header)
    rng = np.random.default_rng()
    for case in manifest["cases"]:
        if args.only and args.only not in case["name"]:
            continue
        bf16 = case.get("dtype") == "bf16"
        i8 = case["kind"] == "matmul_i8"
        if i8:
            ins = [rng.integers(-128, 128, s).astype(np.int8) for s in case["inputs"]]
        elif bf16:  # bit patterns for pbc, the same values for torch
            vals = [torch.from_numpy((rng.standard_normal(s) * 0.5).astype(np.float32)).bfloat16()
                    for s in case["inputs"]]
            ins = [v.view(torch.int16).numpy().view(np.uint16) for v in vals]
        else:
            ins = [(rng.standard_normal(s) * 0.5).astype(np.float16) for s in case["inputs"]]
        lib = pbc_lib.Library(os.path.join(folder, case["lib"]))
        out = None
        times = []
        try:
            for i in range(3 + args.runs):
                rt.pbcGpuKernelTimingReset()
                (out,) = lib.call("f", ins, [(tuple(case["output"]),
                                              np.int32 if i8 else pbc_lib.BF16 if bf16
                                              else np.float16)],
                                  check_inputs=False)
                if i >= 3:
                    times.append(rt.pbcGpuKernelMilliseconds())
        except pbc_lib.CallError as e:  # report the case, go on with the others
            print("%-36s pbc failed: %s" % (case["name"], e), flush=True)
            continue
        pbc_ms = statistics.median(times)
        t = [v.cuda() for v in vals] if bf16 else [torch.from_numpy(a).cuda() for a in ins]
        if bf16:
            out = (out.astype(np.uint32) << 16).view(np.float32)
        kind = case["kind"]
        if kind == "matmul_i8":
            vendor = lambda: torch._int_mm(t[0], t[1].t())
            ref = torch.matmul(t[0].double(), t[1].double().t())
            out = out.astype(np.float64)
        elif kind == "matmul_nt":
            vendor = lambda: torch.matmul(t[0], t[1].t())
            ref = torch.matmul(t[0].float(), t[1].float().t())
        elif kind == "matmul_bias_relu":
            vendor = lambda: torch.relu(torch.addmm(t[2], t[0], t[1]))
            ref = torch.relu(torch.matmul(t[0].float(), t[1].float()) + t[2].float())
        elif kind == "matmul":
            vendor = lambda: torch.matmul(t[0], t[1])
            ref = torch.matmul(t[0].float(), t[1].float())
        elif kind == "conv":
            x = t[0].permute(0, 3, 1, 2).contiguous(memory_format=torch.channels_last)
            w = t[1].permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last)
            s = case["stride"]
            vendor = lambda: F.conv2d(x, w, stride=s)
            ref = F.conv2d(x.float(), w.float(), stride=s).permute(0, 2, 3, 1)
        else:
            q, k, v = (a.unsqueeze(0) for a in t)
            vendor = lambda: F.scaled_dot_product_attention(q, k, v)
            ref = F.scaled_dot_product_attention(q.float(), k.float(), v.float())[0]
        vendor_ms = cuda_time(vendor, args.runs) if "vendor" in peers else float("nan")
        inductor_ms = float("nan")
        try:
            if "inductor" in peers:
                compiled = torch.compile(vendor, mode="max-autotune-no-cudagraphs")
                inductor_ms = cuda_time(compiled, args.runs)
        except Exception as e:  # noqa: BLE001
            print("  inductor failed:", str(e).splitlines()[0])
        triton_ms = float("nan")
        if kind == "matmul" and tri:
            c = torch.empty(case["output"], dtype=torch.float16, device="cuda")
            triton_ms = cuda_time(lambda: tri(t[0], t[1], c), args.runs)
        got = torch.from_numpy(out.astype(np.float32)).cuda()
        err = (got - ref).abs().max().item() / max(ref.abs().max().item(), 1e-30)
        print("%-36s %9.4f %9.1f %9.4f %9.4f %9.4f %7.2f %7.2f %7.2f %9.2e" % (
            case["name"], pbc_ms, case["flops"] / pbc_ms / 1e9, vendor_ms, inductor_ms, triton_ms,
            vendor_ms / pbc_ms, inductor_ms / pbc_ms, triton_ms / pbc_ms, err), flush=True)
        lib.close()
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="step", required=True)
    b = sub.add_parser("build", help="compile the cases with pbc (here)")
    b.add_argument("--chip", default="sm_90")
    b.add_argument("--out", default=os.path.join(ROOT, "build", "gpu-bench"))
    b.add_argument("--pbc")
    b.add_argument("--only", help="only the cases whose name contains this")
    r = sub.add_parser("run", help="time pbc and the peers (on the GPU machine)")
    r.add_argument("folder")
    r.add_argument("--runs", type=int, default=20)
    r.add_argument("--only")
    r.add_argument("--peers", default="vendor,inductor,triton",
                   help="comma list of vendor,inductor,triton (Inductor's max-autotune "
                        "compiles for minutes per case; leave it out on a short lease)")
    args = p.parse_args()
    return build(args) if args.step == "build" else run(args)


if __name__ == "__main__":
    sys.exit(main())
