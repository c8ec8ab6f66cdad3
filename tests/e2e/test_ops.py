#!/usr/bin/python3
"""End-to-end op-family tests for pbc on random shapes, checked against numpy.

    /usr/bin/python3 tests/e2e/test_ops.py --pbc PATH [--seed S] [--only SUBSTR] [-v]

Each test generates MLIR text from a template with randomly chosen small
sizes (strides, dilations, paddings, reduction dims... too), compiles it with
pbc (`--emit=lib`), runs it on fresh random never-zero inputs and compares
with a reference written directly in numpy. Prints `PASS name` /
`FAIL name: reason` per test, then `N passed, N failed`; exits 1 on failure.
The run seed is printed; `--seed S --only NAME` reproduces one test exactly.
"""

import ctypes
import math
import os
import re
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import assert_close, test  # noqa: E402
import pbc_lib  # noqa: E402
from pbc_lib import BF16  # noqa: E402

F32, F16 = np.float32, np.float16
ELT = {F32: "f32", F16: "f16", BF16: "bf16"}


# ---------------------------------------------------------------- helpers

def elt(dtype):
    return ELT[dtype] if not isinstance(dtype, str) else dtype


def T(shape, e="f32"):
    """MLIR tensor type."""
    if not shape:
        return "tensor<%s>" % e
    return "tensor<%sx%s>" % ("x".join(str(int(d)) for d in shape), e)


def amap(nd, results):
    """affine_map over d0..d{nd-1} with the given result expressions."""
    dims = ", ".join("d%d" % i for i in range(nd))
    return "affine_map<(%s) -> (%s)>" % (dims, ", ".join(results))


def ident(nd):
    return amap(nd, ["d%d" % i for i in range(nd)])


def iters(kinds):
    return "[" + ", ".join('"%s"' % k for k in kinds) + "]"


def rshape(rng, rank, lo=1, hi=9):
    return tuple(int(v) for v in rng.integers(lo, hi + 1, size=rank))


def pick(rng, seq):
    return seq[int(rng.integers(0, len(seq)))]


def fill(name, shape, e="f32", value="0.0"):
    """tensor.empty + linalg.fill lines defining %name."""
    t = T(shape, e)
    return ("  %%%s_c = arith.constant %s : %s\n"
            "  %%%s_e = tensor.empty() : %s\n"
            "  %%%s = linalg.fill ins(%%%s_c : %s) outs(%%%s_e : %s) -> %s\n"
            % (name, value, e, name, t, name, name, e, name, t, t))


def func(name, args, results, body):
    """args: [(name, type)], results: [(ssa_name, type)]."""
    a = ", ".join("%%%s: %s" % (n, t) for n, t in args)
    rt = ", ".join(t for _, t in results)
    if len(results) > 1:
        rt = "(" + rt + ")"
    return ("func.func @%s(%s) -> %s {\n%s  return %s : %s\n}\n"
            % (name, a, rt, body, ", ".join("%" + n for n, _ in results),
               ", ".join(t for _, t in results)))


NINF = "0xFF800000"   # -inf as an f32 attribute


def add_generic(res, lhs, rhs, out, nd, rhs_map, lhs_t, rhs_t, out_t):
    """%res = lhs + rhs (rhs read through rhs_map, e.g. a broadcast bias)."""
    return ("  %%%s = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = %s} "
            "ins(%%%s, %%%s : %s, %s) outs(%%%s : %s) {\n"
            "  ^bb0(%%g_l: f32, %%g_r: f32, %%g_o: f32):\n"
            "    %%g_s = arith.addf %%g_l, %%g_r : f32\n"
            "    linalg.yield %%g_s : f32\n"
            "  } -> %s\n" % (res, ident(nd), rhs_map, ident(nd), iters(["parallel"] * nd),
                             lhs, rhs, lhs_t, rhs_t, out, out_t, out_t))


def pad_text(src, shape, low, high, value_ssa, e="f32"):
    """tensor.pad of %src by low/high with %value_ssa -> (text, padded shape)."""
    out = tuple(s + l + h for s, l, h in zip(shape, low, high))
    idx = ", ".join("%%i%d: index" % i for i in range(len(shape)))
    txt = ("  %%%s_p = tensor.pad %%%s low[%s] high[%s] {\n"
           "  ^bb0(%s):\n    tensor.yield %%%s : %s\n  } : %s to %s\n"
           % (src, src, ", ".join(map(str, low)), ", ".join(map(str, high)), idx,
              value_ssa, e, T(shape, e), T(out, e)))
    return txt, out


def out_size(n, k, stride, dil):
    return (n - dil * (k - 1) - 1) // stride + 1


def window(xp, axis_h, axis_w, kh, kw, s, d, ho, wo):
    """Strided/dilated slice of xp for kernel tap (kh, kw)."""
    sl = [slice(None)] * xp.ndim
    sl[axis_h] = slice(kh * d[0], kh * d[0] + (ho - 1) * s[0] + 1, s[0])
    sl[axis_w] = slice(kw * d[1], kw * d[1] + (wo - 1) * s[1] + 1, s[1])
    return xp[tuple(sl)]


def conv_nhwc_ref(xp, w_hwcf, s, d, ho, wo):
    """NHWC convolution of the (already padded) xp by a KH x KW x C x F
    filter, in float64."""
    xp, w_hwcf = xp.astype(np.float64), w_hwcf.astype(np.float64)
    ref = np.zeros((xp.shape[0], ho, wo, w_hwcf.shape[3]))
    for kh in range(w_hwcf.shape[0]):
        for kw in range(w_hwcf.shape[1]):
            win = window(xp, 1, 2, kh, kw, s, d, ho, wo)         # n,ho,wo,c
            ref += np.einsum("nhwc,cf->nhwf", win, w_hwcf[kh, kw])
    return ref


def conv_params(rng, kmax=3):
    k = rshape(rng, 2, 1, kmax)
    s = rshape(rng, 2, 1, 2)
    d = rshape(rng, 2, 1, 2)
    pl = rshape(rng, 2, 0, 2)
    ph = rshape(rng, 2, 0, 2)
    # spatial input large enough for at least 2 outputs per dim
    hw = tuple(int(rng.integers(max(1, d[i] * (k[i] - 1) + 1 + s[i] - pl[i] - ph[i]), 12))
               for i in range(2))
    return k, s, d, pl, ph, hw


def dense_i64(v):
    return "dense<[%s]> : tensor<2xi64>" % ", ".join(map(str, v))


# ---------------------------------------------------------------- contractions

def matmul_case(ctx, dtype=F32, acc=None, extra_args=(), accumulate=False, kmax=48,
                fragments=False):
    """fragments: M, N, K multiples of 16 (the shapes GPU matrix units take)."""
    rng = ctx.rng
    acc = acc or dtype
    if fragments:
        M, N, K = (16 * int(v) for v in rng.integers(1, 5, size=3))
    else:
        M, N = rshape(rng, 2, 1, 40)
        K = int(rng.integers(1, kmax + 1))
    ea, ec = elt(dtype), elt(acc)
    args = [("a", T((M, K), ea)), ("b", T((K, N), ea))]
    if accumulate:
        args.append(("c", T((M, N), ec)))
        init = "c"
        body = ""
    else:
        init = "f"
        body = fill("f", (M, N), ec)
    body += ("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%%s : %s) -> %s\n"
             % (T((M, K), ea), T((K, N), ea), init, T((M, N), ec), T((M, N), ec)))
    text = func("matmul", args, [("r", T((M, N), ec))], body)
    a, a32 = ctx.rand((M, K), dtype)
    b, b32 = ctx.rand((K, N), dtype)
    ins = [a, b]
    ref = a32.astype(np.float64) @ b32.astype(np.float64)
    if accumulate:
        c, c32 = ctx.rand((M, N), acc)
        ins.append(c)
        ref = ref + c32
    (r,) = ctx.run(text, ins, extra_args=extra_args)
    assert_close(r, ref, acc, k=K)


@test("matmul")
def _(ctx):
    matmul_case(ctx)


def matmul_fixed_case(ctx, M, N, K):
    """A matmul of a given shape, f32, from a zero fill."""
    body = fill("f", (M, N))
    body += ("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%f : %s) -> %s\n"
             % (T((M, K)), T((K, N)), T((M, N)), T((M, N))))
    text = func("matmul", [("a", T((M, K))), ("b", T((K, N)))], [("r", T((M, N)))], body)
    a, a32 = ctx.rand((M, K), F32)
    b, b32 = ctx.rand((K, N), F32)
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a32.astype(np.float64) @ b32.astype(np.float64), F32, k=K)


@test("matmul_bias_epilogue")
def _(ctx):
    # A bias added to a matmul's result: on the cpu target pbc-fuse-epilogue
    # runs the add per register tile inside the matmul (tests/s3/
    # fuse_epilogue.mlir); random shapes give padded GEMMs (pbc-pad-gemm),
    # whose copy-back pbc-fuse joins with the add (tests/s3/fuse.mlir).
    rng = ctx.rng
    M, N = (int(v) for v in rng.integers(1, 80, size=2))
    K = int(rng.integers(1, 49))
    body = fill("f", (M, N))
    body += ("  %%c = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%f : %s) -> %s\n"
             % (T((M, K)), T((K, N)), T((M, N)), T((M, N))))
    body += add_generic("r", "c", "bias", "f", 2, amap(2, ["d1"]), T((M, N)), T((N,)), T((M, N)))
    text = func("matmul_bias", [("a", T((M, K))), ("b", T((K, N))), ("bias", T((N,)))],
                [("r", T((M, N)))], body)
    a, a32 = ctx.rand((M, K), F32)
    b, b32 = ctx.rand((K, N), F32)
    bias, bias32 = ctx.rand((N,), F32)
    (r,) = ctx.run(text, [a, b, bias])
    assert_close(r, a32.astype(np.float64) @ b32.astype(np.float64) + bias32, F32, k=K)


@test("matmul_packed_panels")
def _(ctx):
    # 4 KiB rows of B: on the cpu target B's block is packed and stored as
    # 64-wide panels (pbc-panel-layout; tests/s3/panel_layout.mlir), the
    # last panel (of 1040 padded columns) partly unused.
    matmul_fixed_case(ctx, 48, 1024, 72)


@test("matmul_split_reduction")
def _(ctx):
    # K = 2304 is split into KC blocks on the cpu target: pbc-absorb-fill
    # peels the first block, whose accumulators start from the fill's zero,
    # and the later blocks add to what it stored (tests/s3/absorb_fill.mlir).
    matmul_fixed_case(ctx, 32, 64, 2304)


@test("matmul_padded")
def _(ctx):
    # N = 131 is no multiple of the vector lanes and M = 97 has no divisor in
    # 4..16: on the cpu target pbc-pad-gemm runs the GEMM on zero-padded
    # copies (104 x 144) and copies C back (tests/s3/pad_gemm.mlir).
    matmul_fixed_case(ctx, 97, 131, 65)


def matmul_skinny_shapes(rng):
    """Skinny GEMMs (pbc/skinny_gemm.h; here M <= 8): one of each column kind --
    whole vectors (N a multiple of 16), a last partial vector run in place
    (N % 16 in 4, 8, 12: narrower vectors) and one on padded copies (odd N);
    J split between full and partial register tiles."""
    M = int(rng.integers(1, 9))
    K = int(rng.integers(1, 300))
    return [(M, 16 * int(rng.integers(3, 12)), K),
            (M, 16 * int(rng.integers(3, 12)) + 4 * int(rng.integers(1, 4)), K),
            (M, 2 * int(rng.integers(20, 90)) + 1, K)]


@test("matmul_skinny")
def _(ctx):
    # On the cpu target one register tile spans all M rows and B is read in
    # place (tests/s3/tile_skinny.mlir, tests/s3/pad_gemm.mlir).
    for M, N, K in matmul_skinny_shapes(ctx.rng):
        matmul_fixed_case(ctx, M, N, K)


@test("matmul_skinny_rows")
def _(ctx):
    # 9 to 32 rows (a divisor from 2 to 8): register tiles of up to 8 rows
    # inside J's tiles, B in place (pbcSkinnyKnRowTile). Then rows over B
    # rows 4 KiB apart (N = 1024) and K > 256: K blocked between J's tiles
    # and the row tiles (tests/s3/tile_skinny.mlir @rows24_k_blocked).
    M = int(ctx.rng.choice([9, 12, 14, 16, 20, 24, 30, 32]))
    for _, N, K in matmul_skinny_shapes(ctx.rng):
        matmul_fixed_case(ctx, M, N, K)
    matmul_fixed_case(ctx, M, 1024, 64 * int(ctx.rng.integers(5, 13)))


@test("matmul_skinny_b_past_l2")
def _(ctx):
    # B larger than L2 (1-2 MiB on the cpu chips): a one-row-tile skinny GEMM
    # sweeps each core's columns by blocks of rows of B (blockGemvK; tests/
    # s3/tile_skinny.mlir @rows), C accumulated across the blocks: a CNN's
    # classifier (1 x 1280 . 1280 x 1000, J's last partial tile apart), K
    # with a block below 16 (1000: blocks of 10), a few rows, and C += A.B.
    M = int(ctx.rng.integers(2, 9))
    for m, n, k in [(1, 1000, 1280), (1, 1024, 1000), (M, 768, 16 * int(ctx.rng.integers(40, 80)))]:
        matmul_fixed_case(ctx, m, n, k)
    k = 1024 + 16 * int(ctx.rng.integers(0, 16))
    a, a32 = ctx.rand((M, k), F32)
    b, b32 = ctx.rand((k, 1024), F32)
    c, c32 = ctx.rand((M, 1024), F32)
    body = ("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%c : %s) -> %s\n"
            % (T((M, k)), T((k, 1024)), T((M, 1024)), T((M, 1024))))
    text = func("matmul", [("a", T((M, k))), ("b", T((k, 1024))), ("c", T((M, 1024)))],
                [("r", T((M, 1024)))], body)
    (r,) = ctx.run(text, [a, b, c])
    assert_close(r, a32.astype(np.float64) @ b32.astype(np.float64) + c32, F32, k=k)


@test("matmul_gemv_split_k")
def _(ctx):
    # One row of A and a B of 4-9 MiB: on the cpu target with several cores
    # they split B's rows, each summing its block into a partial row of C,
    # then C gets the partial rows added (tests/s3/split_gemv.mlir). N with
    # a last partial vector (1000: 8 columns), an odd N, whole vectors; K a
    # multiple of 64 (of cores x 4 rows up to 16 cores); and C += A.B.
    k = 64 * int(ctx.rng.integers(16, 33))
    for n in (1000, 2 * int(ctx.rng.integers(500, 600)) + 1, 16 * int(ctx.rng.integers(64, 72))):
        matmul_fixed_case(ctx, 1, n, k)
    a, a32 = ctx.rand((1, k), F32)
    b, b32 = ctx.rand((k, 1000), F32)
    c, c32 = ctx.rand((1, 1000), F32)
    body = ("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%c : %s) -> %s\n"
            % (T((1, k)), T((k, 1000)), T((1, 1000)), T((1, 1000))))
    text = func("matmul", [("a", T((1, k))), ("b", T((k, 1000))), ("c", T((1, 1000)))],
                [("r", T((1, 1000)))], body)
    (r,) = ctx.run(text, [a, b, c])
    assert_close(r, a32.astype(np.float64) @ b32.astype(np.float64) + c32, F32, k=k)


@test("matmul_skinny_accumulate")
def _(ctx):
    # C += A.B: the partial columns' copies start from C's own values.
    for M, N, K in matmul_skinny_shapes(ctx.rng):
        a, a32 = ctx.rand((M, K), F32)
        b, b32 = ctx.rand((K, N), F32)
        c, c32 = ctx.rand((M, N), F32)
        body = ("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%c : %s) -> %s\n"
                % (T((M, K)), T((K, N)), T((M, N)), T((M, N))))
        text = func("matmul", [("a", T((M, K))), ("b", T((K, N))), ("c", T((M, N)))],
                    [("r", T((M, N)))], body)
        (r,) = ctx.run(text, [a, b, c])
        assert_close(r, a32.astype(np.float64) @ b32.astype(np.float64) + c32, F32, k=K)


@test("matmul_accumulate_into_input")
def _(ctx):
    matmul_case(ctx, accumulate=True)


@test("matmul_O0")
def _(ctx):
    matmul_case(ctx, extra_args=["-O0"])


@test("matmul_template_target")
def _(ctx):
    matmul_case(ctx, extra_args=["--target=template"])


@test("matmul_f16")
def _(ctx):
    matmul_case(ctx, F16, kmax=32)


@test("matmul_bf16")
def _(ctx):
    matmul_case(ctx, BF16, kmax=32)


@test("matmul_bf16_acc_f32")
def _(ctx):
    matmul_case(ctx, BF16, acc=F32, kmax=64)


def int8_matmul_text(M, N, K, bt, dequant, a_unsigned=False):
    """i8 x i8 -> i32 (extsi, muli, addi) with B given K x N or N x K (bt);
    a_unsigned: A's bytes are u8 (extui); dequant: then f32 = sitofp(acc) *
    sa * sb[n] (symmetric per-tensor activation and per-channel weight
    scales, as PT2E's quantized linear)."""
    bshape = (N, K) if bt else (K, N)
    bmap = "(j, k)" if bt else "(k, j)"
    args = [("a", T((M, K), "i8")), ("b", T(bshape, "i8"))]
    body = fill("f", (M, N), "i32", "0")
    body += ("  %%p = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, k)>, "
             "affine_map<(i, j, k) -> %s>, affine_map<(i, j, k) -> (i, j)>], iterator_types = "
             "[\"parallel\", \"parallel\", \"reduction\"]} ins(%%a, %%b : %s, %s) outs(%%f : %s) {\n"
             "  ^bb0(%%x: i8, %%y: i8, %%acc: i32):\n"
             "    %%xe = arith.%s %%x : i8 to i32\n    %%ye = arith.extsi %%y : i8 to i32\n"
             "    %%m = arith.muli %%xe, %%ye : i32\n    %%s = arith.addi %%acc, %%m : i32\n"
             "    linalg.yield %%s : i32\n  } -> %s\n"
             % (bmap, T((M, K), "i8"), T(bshape, "i8"), T((M, N), "i32"),
                "extui" if a_unsigned else "extsi", T((M, N), "i32")))
    result = ("p", T((M, N), "i32"))
    if dequant:
        args.append(("sb", T((N,))))
        body += "  %%sa = arith.constant 0.0078125 : f32\n  %%e = tensor.empty() : %s\n" % T((M, N))
        body += ("  %%q = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, "
                 "affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>], iterator_types = "
                 "[\"parallel\", \"parallel\"]} ins(%%p, %%sb : %s, %s) outs(%%e : %s) {\n"
                 "  ^bb0(%%x: i32, %%w: f32, %%o: f32):\n"
                 "    %%xf = arith.sitofp %%x : i32 to f32\n    %%t = arith.mulf %%xf, %%sa : f32\n"
                 "    %%u = arith.mulf %%t, %%w : f32\n    linalg.yield %%u : f32\n  } -> %s\n"
                 % (T((M, N), "i32"), T((N,)), T((M, N)), T((M, N))))
        result = ("q", T((M, N)))
    return func("matmul", args, [result], body)


@test("matmul_i8_i32")
def _(ctx):
    # i8 x i8 -> i32, exact (GPU: mma.sync m16n8k32; B either way round).
    rng = ctx.rng
    for bt in (False, True):
        M, N = rshape(rng, 2, 1, 48)
        K = int(rng.integers(1, 100))
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (N, K) if bt else (K, N)).astype(np.int8)
        (r,) = ctx.run(int8_matmul_text(M, N, K, bt, False), [a, b])
        ref = a.astype(np.int64) @ (b.T if bt else b).astype(np.int64)
        assert np.array_equal(r.astype(np.int64), ref), "i8 matmul differs (bt=%s)" % bt


@test("matmul_i8_dot_product_tiles")
def _(ctx):
    # Shapes whose register tiles the cpu target runs on vpdpbusd where the
    # chip has AVX-512 VNNI (pbc-dot-i8: K a multiple of 4, columns of 8 or
    # 16 lanes): B packed or read where it is, either way round, extreme
    # values (the u8 offset of A and its correction), exact.
    rng = ctx.rng
    for M, N, K, bt in ((64, 128, 256, False), (33, 200, 300, True), (128, 48, 64, False),
                        (7, 1000, 516, False), (100, 24, 124, True)):
        a = rng.integers(-128, 128, (M, K)).astype(np.int8)
        b = rng.integers(-128, 128, (N, K) if bt else (K, N)).astype(np.int8)
        a[0, :] = -128  # the extremes: -128 * -128 summed K times
        b[..., 0] = -128
        (r,) = ctx.run(int8_matmul_text(M, N, K, bt, False), [a, b])
        ref = a.astype(np.int64) @ (b.T if bt else b).astype(np.int64)
        assert np.array_equal(r.astype(np.int64), ref), "i8 matmul %dx%dx%d differs" % (M, N, K)


@test("matmul_u8_s8_dot_product_tiles")
def _(ctx):
    # u8 x s8 -> i32 (A's bytes widened unsigned: asymmetric activations):
    # on VNNI the bytes go into vpdpbusd as they are, no offset to undo.
    rng = ctx.rng
    for M, N, K, bt in ((64, 128, 256, False), (33, 200, 300, True), (7, 48, 64, False)):
        a = rng.integers(0, 256, (M, K)).astype(np.uint8)
        b = rng.integers(-128, 128, (N, K) if bt else (K, N)).astype(np.int8)
        a[0, :] = 255
        b[..., 0] = -128
        (r,) = ctx.run(int8_matmul_text(M, N, K, bt, False, a_unsigned=True), [a.view(np.int8), b])
        ref = a.astype(np.int64) @ (b.T if bt else b).astype(np.int64)
        assert np.array_equal(r.astype(np.int64), ref), "u8 x s8 matmul %dx%dx%d differs" % (M, N, K)


@test("matmul_of_dequantized_i8")
def _(ctx):
    # The quantized linear as importers leave it (ONNX QDQ with per-channel
    # weight scales through torch-mlir): a float matmul of dequantized i8
    # tensors, A's scale per tensor, B's per output channel with zero zero
    # points. pbc-quantized-matmul makes it an i8 matmul with the scales
    # after; the reference is the float product of the dequantized values.
    rng = ctx.rng
    ident = "affine_map<(d0, d1) -> (d0, d1)>"
    col = "affine_map<(d0, d1) -> (d1)>"
    par = '["parallel", "parallel"]'
    for M, N, K in ((16, 64, 128), (5, 40, 36), (64, 48, 200)):
        aq = rng.integers(-128, 128, (M, K)).astype(np.int8)
        wq = rng.integers(-128, 128, (K, N)).astype(np.int8)
        sw = (rng.random(N) * 0.02 + 0.001).astype(np.float32)
        body = ("  %%sa = arith.constant 0.0625 : f32\n  %%zp = arith.constant dense<0> : %s\n"
                "  %%ea = tensor.empty() : %s\n" % (T((N,), "i8"), T((M, K))))
        body += ("  %%a = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s} "
                 "ins(%%aq : %s) outs(%%ea : %s) {\n  ^bb0(%%x: i8, %%o: f32):\n"
                 "    %%f = arith.sitofp %%x : i8 to f32\n    %%r = arith.mulf %%f, %%sa : f32\n"
                 "    linalg.yield %%r : f32\n  } -> %s\n"
                 % (ident, ident, par, T((M, K), "i8"), T((M, K)), T((M, K))))
        body += "  %%ew = tensor.empty() : %s\n" % T((K, N))
        body += ("  %%w = linalg.generic {indexing_maps = [%s, %s, %s, %s], iterator_types = %s} "
                 "ins(%%wq, %%sw, %%zp : %s, %s, %s) outs(%%ew : %s) {\n"
                 "  ^bb0(%%x: i8, %%s: f32, %%z: i8, %%o: f32):\n"
                 "    %%ze = arith.extsi %%z : i8 to i16\n    %%xe = arith.extsi %%x : i8 to i16\n"
                 "    %%d = arith.subi %%xe, %%ze : i16\n    %%f = arith.sitofp %%d : i16 to f32\n"
                 "    %%r = arith.mulf %%f, %%s : f32\n    linalg.yield %%r : f32\n  } -> %s\n"
                 % (ident, col, col, ident, par, T((K, N), "i8"), T((N,)), T((N,), "i8"), T((K, N)),
                    T((K, N))))
        body += fill("c", (M, N))
        body += ("  %%y = linalg.matmul ins(%%a, %%w : %s, %s) outs(%%c : %s) -> %s\n"
                 % (T((M, K)), T((K, N)), T((M, N)), T((M, N))))
        text = func("qlinear", [("aq", T((M, K), "i8")), ("wq", T((K, N), "i8")), ("sw", T((N,)))],
                    [("y", T((M, N)))], body)
        (r,) = ctx.run(text, [aq, wq, sw])
        ref = (aq.astype(np.float64) * 0.0625) @ (wq.astype(np.float64) * sw.astype(np.float64))
        assert_close(r, ref, F32, k=K)


@test("matmul_i8_dequantize")
def _(ctx):
    # The quantized linear's form: i8 products, then scales per tensor (A)
    # and per output channel (B) in the epilogue.
    rng = ctx.rng
    M, N = rshape(rng, 2, 1, 40)
    K = int(rng.integers(1, 80))
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (N, K)).astype(np.int8)
    sb = (rng.random(N) * 0.01 + 0.001).astype(np.float32)
    (r,) = ctx.run(int8_matmul_text(M, N, K, True, True), [a, b, sb])
    ref = (a.astype(np.int64) @ b.T.astype(np.int64)) * 0.0078125 * sb.astype(np.float64)
    assert_close(r, ref, F32, k=1)


@test("matmul_f16_fragments")
def _(ctx):
    matmul_case(ctx, F16, fragments=True)


@test("matmul_f16_acc_f32_fragments")
def _(ctx):
    matmul_case(ctx, F16, acc=F32, fragments=True)


def batch_matmul_case(ctx, dtype=F32, acc=F32, fragments=False):
    rng = ctx.rng
    if fragments:
        B = int(rng.integers(1, 4))
        M, N, K = (16 * int(v) for v in rng.integers(1, 4, size=3))
    else:
        B, M, N, K = rshape(rng, 4, 1, 24)
    ea, ec = elt(dtype), elt(acc)
    body = fill("f", (B, M, N), ec)
    body += ("  %%r = linalg.batch_matmul ins(%%a, %%b : %s, %s) outs(%%f : %s) -> %s\n"
             % (T((B, M, K), ea), T((B, K, N), ea), T((B, M, N), ec), T((B, M, N), ec)))
    text = func("bmm", [("a", T((B, M, K), ea)), ("b", T((B, K, N), ea))],
                [("r", T((B, M, N), ec))], body)
    a, a32 = ctx.rand((B, M, K), dtype)
    b, b32 = ctx.rand((B, K, N), dtype)
    (r,) = ctx.run(text, [a, b])
    assert_close(r, np.einsum("bmk,bkn->bmn", a32.astype(np.float64), b32), acc, k=K)


@test("batch_matmul")
def _(ctx):
    batch_matmul_case(ctx)


@test("batch_matmul_f16_acc_f32_fragments")
def _(ctx):
    batch_matmul_case(ctx, F16, F32, fragments=True)


@test("batch_matmul_transposed_b")
def _(ctx):
    # Q·Kᵀ as attention writes it: K is read across the output column, so
    # pbc-tile copies it transposed first (shapes it tiles: 16-multiples).
    rng = ctx.rng
    B = int(rng.integers(1, 4))
    M, N = (16 * int(v) for v in rng.integers(1, 9, size=2))
    K = int(rng.integers(1, 80))
    body = fill("f", (B, M, N))
    body += ("  %%r = linalg.generic {indexing_maps = [affine_map<(b, i, j, k) -> (b, i, k)>, "
             "affine_map<(b, i, j, k) -> (b, j, k)>, affine_map<(b, i, j, k) -> (b, i, j)>], "
             "iterator_types = [\"parallel\", \"parallel\", \"parallel\", \"reduction\"]} "
             "ins(%%a, %%b : %s, %s) outs(%%f : %s) {\n"
             "  ^bb0(%%x: f32, %%y: f32, %%z: f32):\n"
             "    %%m = arith.mulf %%x, %%y : f32\n"
             "    %%s = arith.addf %%z, %%m : f32\n"
             "    linalg.yield %%s : f32\n"
             "  } -> %s\n" % (T((B, M, K)), T((B, N, K)), T((B, M, N)), T((B, M, N))))
    text = func("qkt", [("a", T((B, M, K))), ("b", T((B, N, K)))], [("r", T((B, M, N)))], body)
    a, a32 = ctx.rand((B, M, K), F32)
    b, b32 = ctx.rand((B, N, K), F32)
    (r,) = ctx.run(text, [a, b])
    assert_close(r, np.einsum("bmk,bnk->bmn", a32.astype(np.float64), b32), F32, k=K)


@test("matvec")
def _(ctx):
    M, N = rshape(ctx.rng, 2, 1, 64)
    body = fill("f", (M,))
    body += ("  %%r = linalg.matvec ins(%%a, %%x : %s, %s) outs(%%f : %s) -> %s\n"
             % (T((M, N)), T((N,)), T((M,)), T((M,))))
    text = func("matvec", [("a", T((M, N))), ("x", T((N,)))], [("r", T((M,)))], body)
    a, _ = ctx.rand((M, N))
    x, _ = ctx.rand((N,))
    (r,) = ctx.run(text, [a, x])
    assert_close(r, a.astype(np.float64) @ x, k=N)


def matmul_transpose_b_case(ctx, dtype=F32, fragments=False, shape=None, gram=False,
                            extra_args=()):
    """C[i,j] += A[i,k] * B[j,k] (attention's Q.K^T), accumulated in f32;
    with gram, B is A (X.X^T: one input read two ways)."""
    if shape:
        M, N, K = shape
    elif fragments:
        M, N, K = (16 * int(v) for v in ctx.rng.integers(1, 5, size=3))
    else:
        M, N, K = rshape(ctx.rng, 3, 1, 32)
    e = elt(dtype)
    ext = "" if dtype == F32 else (
        "    %%xf = arith.extf %%x : %s to f32\n    %%yf = arith.extf %%y : %s to f32\n" % (e, e))
    x, y = ("%x", "%y") if dtype == F32 else ("%xf", "%yf")
    body = fill("f", (M, N))
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = %s}\n"
             "      ins(%%a, %%b : %s, %s) outs(%%f : %s) {\n"
             "  ^bb0(%%x: %s, %%y: %s, %%acc: f32):\n%s"
             "    %%m = arith.mulf %s, %s : f32\n"
             "    %%s = arith.addf %%acc, %%m : f32\n"
             "    linalg.yield %%s : f32\n"
             "  } -> %s\n"
             % (amap(3, ["d0", "d2"]), amap(3, ["d1", "d2"]), amap(3, ["d0", "d1"]),
                iters(["parallel", "parallel", "reduction"]),
                T((M, K), e), T((N, K), e), T((M, N)), e, e, ext, x, y, T((M, N))))
    a, a32 = ctx.rand((M, K), dtype)
    if gram:
        assert M == N
        body = body.replace("ins(%a, %b :", "ins(%a, %a :")
        text = func("mm_tb", [("a", T((M, K), e))], [("r", T((M, N)))], body)
        b, b32, args = a, a32, [a]
    else:
        text = func("mm_tb", [("a", T((M, K), e)), ("b", T((N, K), e))], [("r", T((M, N)))],
                    body)
        b, b32 = ctx.rand((N, K), dtype)
        args = [a, b]
    (r,) = ctx.run(text, args, extra_args=extra_args)
    assert_close(r, a32.astype(np.float64) @ b32.T.astype(np.float64), k=K)


@test("matmul_transpose_b_generic")
def _(ctx):
    matmul_transpose_b_case(ctx)


@test("matmul_transpose_b_skinny")
def _(ctx):
    # A linear layer's N x K weight at batch 1-32: on the cpu target dot
    # products along K, register tiles of rows of B (and of all rows of A up
    # to 8, else of 2 to 8 of them), no transposed copy (tests/s3/tile_skinny.mlir); K a multiple of 16
    # or of a narrower vector.
    rng = ctx.rng
    M = int(rng.choice([int(rng.integers(1, 9)), 9, 12, 15, 16, 20, 21, 24, 25, 28, 32]))
    for N in (int(rng.integers(1, 40)), int(rng.integers(40, 200))):
        K = int(rng.choice([4, 8, 16])) * int(rng.integers(1, 24))
        matmul_transpose_b_case(ctx, shape=(M, N, K))


@test("matmul_transpose_b_skinny_large_b")
def _(ctx):
    # 33-64 rows with a weight larger than a quarter of L3 (8 MiB on this
    # machine's 32 MiB): dot products too, in tiles of 2 to 8 rows.
    rng = ctx.rng
    M = int(rng.choice([40, 48, 56, 64]))
    matmul_transpose_b_case(ctx, shape=(M, 2112 + int(rng.integers(0, 16)), 1024))


@test("matmul_transpose_b_copy")
def _(ctx):
    # Rows past the skinny cut: on the cpu target B's blocks are packed
    # transposed (tests/s3/pack_transposed.mlir), whole 16 x 16 blocks
    # through registers (vector.shuffle rounds), the strips of partial
    # blocks element by element (tests/s3/transpose_copies.mlir); one shape
    # of whole blocks, one with both strips.
    rng = ctx.rng
    M = int(rng.integers(40, 100))
    whole = tuple(16 * int(v) for v in rng.integers(1, 6, size=2))
    ragged = tuple(int(v) for v in rng.integers(17, 100, size=2))
    for N, K in (whole, ragged):
        matmul_transpose_b_case(ctx, shape=(M, N, K))


@test("matmul_transpose_b_ablations")
def _(ctx):
    # B marked to be packed transposed, then no packing (B read along K by
    # dot products) or no vectorization (the transposing pack copy stays
    # scalar): still C = A.B^T.
    M = int(ctx.rng.integers(40, 100))
    N, K = (int(v) for v in ctx.rng.integers(17, 100, size=2))
    for flag in ("--disable=fast-buffers", "--disable=vectorization"):
        matmul_transpose_b_case(ctx, shape=(M, N, K), extra_args=[flag])


@test("matmul_gram")
def _(ctx):
    # X.X^T: X is read as A and as B, so the cpu target copies it whole,
    # transposed, before the nest (tests/s3/tile_transposed.mlir @gram).
    M = int(ctx.rng.integers(40, 100))
    matmul_transpose_b_case(ctx, shape=(M, M, int(ctx.rng.integers(17, 100))), gram=True)


@test("matmul_transpose_b_f16_fragments")
def _(ctx):
    matmul_transpose_b_case(ctx, F16, fragments=True)


# ---------------------------------------------------------------- convolutions

def padded_conv(ctx, name, op, xs, ws, os_, low, high, s, d):
    """A function NAME(x, w) -> op(pad(x, low, high), w) from a zero fill,
    with random inputs: (x, w, padded x in float64, MLIR text)."""
    body = "  %zero = arith.constant 0.0 : f32\n"
    ptxt, xps = pad_text("x", xs, low, high, "zero")
    body += ptxt + fill("f", os_)
    body += ("  %%r = %s {dilations = %s, strides = %s}\n"
             "      ins(%%x_p, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % (op, dense_i64(d), dense_i64(s), T(xps), T(ws), T(os_), T(os_)))
    text = func(name, [("x", T(xs)), ("w", T(ws))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    return x, w, np.pad(x.astype(np.float64), list(zip(low, high))), text


def conv_case(ctx, layout):
    rng = ctx.rng
    (KH, KW), s, d, pl, ph, (H, W) = conv_params(rng)
    N = int(rng.integers(1, 3))
    C, F = rshape(rng, 2, 1, 8)
    Hp, Wp = H + pl[0] + ph[0], W + pl[1] + ph[1]
    Ho, Wo = out_size(Hp, KH, s[0], d[0]), out_size(Wp, KW, s[1], d[1])
    if layout == "nhwc":
        xs, ws, os_ = (N, H, W, C), (KH, KW, C, F), (N, Ho, Wo, F)
        low, high = [0, pl[0], pl[1], 0], [0, ph[0], ph[1], 0]
        op = "linalg.conv_2d_nhwc_hwcf"
    else:
        xs, ws, os_ = (N, C, H, W), (F, C, KH, KW), (N, F, Ho, Wo)
        low, high = [0, 0, pl[0], pl[1]], [0, 0, ph[0], ph[1]]
        op = "linalg.conv_2d_nchw_fchw"
    x, w, xp, text = padded_conv(ctx, "conv", op, xs, ws, os_, low, high, s, d)
    if layout == "nhwc":
        ref = conv_nhwc_ref(xp, w, s, d, Ho, Wo)
    else:
        ref = np.zeros(os_)
        for kh in range(KH):
            for kw in range(KW):
                win = window(xp, 2, 3, kh, kw, s, d, Ho, Wo)         # n,c,ho,wo
                ref += np.einsum("nchw,fc->nfhw", win, w[:, :, kh, kw].astype(np.float64))
    (r,) = ctx.run(text, [x, w])
    assert_close(r, ref, k=C * KH * KW)


@test("conv_2d_nhwc_hwcf_pad_stride_dilation")
def _(ctx):
    conv_case(ctx, "nhwc")


@test("conv_2d_nchw_fchw_pad_stride_dilation")
def _(ctx):
    conv_case(ctx, "nchw")


@test("conv_2d_nhwc_hwcf_odd_width")
def _(ctx):
    """An output width with no divisor from 4 to 16 (pbc-tile splits the
    nest into full register tiles and a remainder nest)."""
    rng = ctx.rng
    KH, KW = rshape(rng, 2, 1, 4)
    Ho, Wo = int(rng.integers(1, 4)), int(rng.choice([17, 19, 23, 29, 31, 37]))
    C, F = int(rng.integers(1, 9)), 16 * int(rng.integers(1, 3))
    H, W = Ho + KH - 1, Wo + KW - 1
    xs, ws, os_ = (1, H, W, C), (KH, KW, C, F), (1, Ho, Wo, F)
    body = "  %zero = arith.constant 0.0 : f32\n" + fill("f", os_)
    body += ("  %%r = linalg.conv_2d_nhwc_hwcf {dilations = %s, strides = %s}\n"
             "      ins(%%x, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % (dense_i64((1, 1)), dense_i64((1, 1)), T(xs), T(ws), T(os_), T(os_)))
    text = func("conv", [("x", T(xs)), ("w", T(ws))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    ref = conv_nhwc_ref(x, w, (1, 1), (1, 1), Ho, Wo)
    (r,) = ctx.run(text, [x, w])
    assert_close(r, ref, k=C * KH * KW)


@test("conv_2d_nhwc_hwcf_f16_acc_f32_fragments")
def _(ctx):
    """f16 convolution with N*Ho*Wo, F and KH*KW*C multiples of 16: the
    implicit GEMM GPU matrix units take (strided, dilated windows)."""
    rng = ctx.rng
    KH, KW = (int(v) for v in rng.integers(1, 4, size=2))
    s = tuple(int(v) for v in rng.integers(1, 3, size=2))
    d = tuple(int(v) for v in rng.integers(1, 3, size=2))
    N, Ho, Wo = int(rng.integers(1, 3)), 4, 4 * int(rng.integers(1, 3))
    C, F = (16 * int(v) for v in rng.integers(1, 3, size=2))
    H, W = (Ho - 1) * s[0] + d[0] * (KH - 1) + 1, (Wo - 1) * s[1] + d[1] * (KW - 1) + 1
    xs, ws, os_ = (N, H, W, C), (KH, KW, C, F), (N, Ho, Wo, F)
    body = fill("f", os_)
    body += ("  %%r = linalg.conv_2d_nhwc_hwcf {dilations = %s, strides = %s}\n"
             "      ins(%%x, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % (dense_i64(d), dense_i64(s), T(xs, "f16"), T(ws, "f16"), T(os_), T(os_)))
    text = func("conv", [("x", T(xs, "f16")), ("w", T(ws, "f16"))], [("r", T(os_))], body)
    x, x32 = ctx.rand(xs, F16)
    w, w32 = ctx.rand(ws, F16)
    ref = conv_nhwc_ref(x32, w32, s, d, Ho, Wo)
    (r,) = ctx.run(text, [x, w])
    assert_close(r, ref, F32, k=C * KH * KW)


def grouped_conv_case(ctx, layout):
    """Grouped convolutions as frontends write them (ResNeXt): pbc-tile moves
    the group loop outward so each group is an implicit GEMM."""
    rng = ctx.rng
    (KH, KW), s, d, pl, ph, (H, W) = conv_params(rng)
    N, G = int(rng.integers(1, 3)), int(rng.integers(2, 6))
    # The vector loop: F in NHWGC (a lane count or not), Wo in NGCHW (where
    # a stride along W would leave it scalar).
    C, F = int(rng.integers(1, 10)), pick(rng, [3, 4, 8, 16])
    if layout == "ngchw":
        s = (s[0], 1)
        W = max(W, 16)
    Hp, Wp = H + pl[0] + ph[0], W + pl[1] + ph[1]
    Ho, Wo = out_size(Hp, KH, s[0], d[0]), out_size(Wp, KW, s[1], d[1])
    if layout == "nhwgc":
        xs, ws, os_ = (N, H, W, G, C), (G, F, KH, KW, C), (N, Ho, Wo, G, F)
        low, high = [0, pl[0], pl[1], 0, 0], [0, ph[0], ph[1], 0, 0]
        op = "linalg.conv_2d_nhwgc_gfhwc"
    else:
        xs, ws, os_ = (N, G, C, H, W), (G, F, C, KH, KW), (N, G, F, Ho, Wo)
        low, high = [0, 0, 0, pl[0], pl[1]], [0, 0, 0, ph[0], ph[1]]
        op = "linalg.conv_2d_ngchw_gfchw"
    x, w, xp, text = padded_conv(ctx, "gconv", op, xs, ws, os_, low, high, s, d)
    ref = np.zeros(os_)
    w64 = w.astype(np.float64)
    for kh in range(KH):
        for kw in range(KW):
            if layout == "nhwgc":
                win = window(xp, 1, 2, kh, kw, s, d, Ho, Wo)     # n,ho,wo,g,c
                ref += np.einsum("nhwgc,gfc->nhwgf", win, w64[:, :, kh, kw, :])
            else:
                win = window(xp, 3, 4, kh, kw, s, d, Ho, Wo)     # n,g,c,ho,wo
                ref += np.einsum("ngchw,gfc->ngfhw", win, w64[:, :, :, kh, kw])
    (r,) = ctx.run(text, [x, w])
    assert_close(r, ref, k=C * KH * KW)


@test("conv_2d_nhwgc_gfhwc_grouped")
def _(ctx):
    grouped_conv_case(ctx, "nhwgc")


@test("conv_2d_ngchw_gfchw_grouped")
def _(ctx):
    grouped_conv_case(ctx, "ngchw")


@test("conv_transpose_as_strided_insert_slice")
def _(ctx):
    """A transposed convolution in the form frontends write on linalg
    (torch-mlir): the input scattered with a stride into zeros
    (tensor.insert_slice), then a stride-1 convolution with the flipped
    kernel. Checked against the scatter-add definition."""
    rng = ctx.rng
    KH, KW = rshape(rng, 2, 1, 4)
    s = rshape(rng, 2, 1, 3)
    N, C, F = int(rng.integers(1, 3)), int(rng.integers(1, 9)), pick(rng, [5, 8, 16])
    H, W = rshape(rng, 2, 2, 9)
    # The crop: below the kernel, and leaving an output of 1 or more.
    p = tuple(int(rng.integers(0, min(k, ((n - 1) * st + k + 1) // 2)))
              for k, n, st in ((KH, H, s[0]), (KW, W, s[1])))
    Hs, Ws = (H - 1) * s[0] + 1, (W - 1) * s[1] + 1
    eh, ew = KH - 1 - p[0], KW - 1 - p[1]                      # zero border
    zs = (N, Hs + 2 * eh, Ws + 2 * ew, C)
    Ho, Wo = zs[1] - KH + 1, zs[2] - KW + 1
    assert Ho >= 1 and Wo >= 1, (Ho, Wo)
    xs, ws, os_ = (N, H, W, C), (KH, KW, C, F), (N, Ho, Wo, F)
    body = fill("z", zs)
    body += ("  %%u = tensor.insert_slice %%x into %%z[0, %d, %d, 0] [%d, %d, %d, %d] "
             "[1, %d, %d, 1] : %s into %s\n"
             % (eh, ew, N, H, W, C, s[0], s[1], T(xs), T(zs)))
    body += fill("f", os_)
    body += ("  %%r = linalg.conv_2d_nhwc_hwcf {dilations = %s, strides = %s}\n"
             "      ins(%%u, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % (dense_i64((1, 1)), dense_i64((1, 1)), T(zs), T(ws), T(os_), T(os_)))
    text = func("convt", [("x", T(xs)), ("w", T(ws))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    # Scatter-add: input pixel (i, j) adds x * wt[a, b] at (i*s + a - p),
    # where wt is the kernel the convolution flips back.
    wt = w[::-1, ::-1].astype(np.float64)
    full = np.zeros((N, (H - 1) * s[0] + KH, (W - 1) * s[1] + KW, F))
    for a in range(KH):
        for b in range(KW):
            full[:, a:a + Hs:s[0], b:b + Ws:s[1], :] += np.einsum(
                "nhwc,cf->nhwf", x.astype(np.float64), wt[a, b])
    ref = full[:, p[0]:p[0] + Ho, p[1]:p[1] + Wo, :]
    (r,) = ctx.run(text, [x, w])
    assert_close(r, ref, k=C * KH * KW)


def depthwise_case(ctx, layout):
    """NHWC: filter KH x KW x C as an argument. NCHW (torch-mlir's form, run
    as nhwc_hwc between transposes by pbc-channels-last): a constant
    C x KH x KW filter, transposed at compile time."""
    rng = ctx.rng
    (KH, KW), s, d, pl, ph, (H, W) = conv_params(rng, kmax=5)
    N, C = int(rng.integers(1, 3)), int(rng.integers(1, 9))
    nchw = layout == "nchw"
    ah, aw = (2, 3) if nchw else (1, 2)   # the spatial axes
    xs, ws = ((N, C, H, W), (C, KH, KW)) if nchw else ((N, H, W, C), (KH, KW, C))
    low, high = [0, 0, 0, 0], [0, 0, 0, 0]
    low[ah], low[aw], high[ah], high[aw] = pl[0], pl[1], ph[0], ph[1]
    w, _ = ctx.rand(ws)
    body = "  %zero = arith.constant 0.0 : f32\n"
    if nchw:
        body += "  %%w = arith.constant dense<%s> : %s\n" % (
            repr(w.astype(np.float64).tolist()), T(ws))
    ptxt, xps = pad_text("x", xs, low, high, "zero")
    Ho, Wo = out_size(xps[ah], KH, s[0], d[0]), out_size(xps[aw], KW, s[1], d[1])
    os_ = (N, C, Ho, Wo) if nchw else (N, Ho, Wo, C)
    body += ptxt + fill("f", os_)
    body += ("  %%r = linalg.depthwise_conv_2d_%s {dilations = %s, strides = %s}\n"
             "      ins(%%x_p, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % ("nchw_chw" if nchw else "nhwc_hwc", dense_i64(d), dense_i64(s), T(xps), T(ws),
                T(os_), T(os_)))
    args = [("x", T(xs))] + ([] if nchw else [("w", T(ws))])
    text = func("dwconv", args, [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    xp = np.pad(x.astype(np.float64), list(zip(low, high)))
    ref = np.zeros(os_)
    for kh in range(KH):
        for kw in range(KW):
            tap = w[:, kh, kw][None, :, None, None] if nchw else w[kh, kw]
            ref += window(xp, ah, aw, kh, kw, s, d, Ho, Wo) * tap
    (r,) = ctx.run(text, [x] if nchw else [x, w])
    assert_close(r, ref, k=KH * KW)


@test("depthwise_conv_2d_nhwc_hwc_pad_stride_dilation")
def _(ctx):
    depthwise_case(ctx, "nhwc")


@test("depthwise_conv_2d_nchw_chw_constant_filter")
def _(ctx):
    depthwise_case(ctx, "nchw")


@test("row_stencil_overlapping_taps")
def _(ctx):
    # A 1xKW depthwise pass along rows of C interleaved channels, rows wide
    # enough, and C x KW filter vectors few enough, that its taps are
    # unrolled: taps C lanes apart share vector loads (pbc-overlapping-loads:
    # whole-vector loads and shuffles). Row widths, taps, dilations and
    # channel counts are random, so the runs of taps and their covers vary.
    rng = ctx.rng
    C, dil = pick(rng, [3, 5]), int(rng.integers(1, 3))
    KW = int(rng.integers(2, 6 if C == 3 else 4))
    H, Wo = int(rng.integers(1, 4)), 16 * int(rng.integers(10, 26))
    xs, ws, os_ = (1, H, Wo + dil * (KW - 1), C), (1, KW, C), (1, H, Wo, C)
    body = fill("f", os_)
    body += ("  %%r = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<[1, %d]> : tensor<2xi64>, "
             "strides = dense<1> : tensor<2xi64>}\n"
             "      ins(%%x, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % (dil, T(xs), T(ws), T(os_), T(os_)))
    text = func("rowstencil", [("x", T(xs)), ("w", T(ws))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    ref = sum(x[:, :, j * dil:j * dil + Wo, :].astype(np.float64) * w[0, j] for j in range(KW))
    (r,) = ctx.run(text, [x, w])
    assert_close(r, ref, k=KW)


@test("depthwise_conv_small_channels_bias")
def _(ctx):
    # A few channels innermost (an image's RGB; 1 for grayscale):
    # pbc-interleave vectorizes (w, c) together (pbc-tile leaves it the 2, 4
    # and 6 channels it would give 2- or 4-lane vectors); widths are
    # multiples of 16 so it applies, and the per-channel bias is read
    # through a replicated copy.
    rng = ctx.rng
    C = pick(rng, [1, 2, 3, 4, 5, 6])
    KH, KW = (int(v) for v in rng.integers(1, 6, size=2))
    N, Ho, Wo = int(rng.integers(1, 3)), int(rng.integers(1, 9)), 16 * int(rng.integers(1, 5))
    xs, ws, os_ = (N, Ho + KH - 1, Wo + KW - 1, C), (KH, KW, C), (N, Ho, Wo, C)
    body = fill("f", os_)
    body += ("  %%c = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, "
             "strides = dense<1> : tensor<2xi64>}\n"
             "      ins(%%x, %%w : %s, %s) outs(%%f : %s) -> %s\n" % (T(xs), T(ws), T(os_), T(os_)))
    body += add_generic("r", "c", "b", "f", 4, amap(4, ["d3"]), T(os_), T((C,)), T(os_))
    text = func("dw_rgb", [("x", T(xs)), ("w", T(ws)), ("b", T((C,)))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    b, _ = ctx.rand((C,))
    ref = np.zeros(os_) + b.astype(np.float64)
    for kh in range(KH):
        for kw in range(KW):
            ref += x[:, kh:kh + Ho, kw:kw + Wo, :].astype(np.float64) * w[kh, kw]
    (r,) = ctx.run(text, [x, w, b])
    assert_close(r, ref, k=KH * KW + 1)

def separable_blur_shapes(Ho, Wo, KH, KW, C):
    """Shapes of x, of the intermediate h and of the result r."""
    return (1, Ho + KH - 1, Wo + KW - 1, C), (1, Ho + KH - 1, Wo, C), (1, Ho, Wo, C)


def separable_blur_reference(x, row_taps, column_taps, Ho, Wo):
    """The two passes in float64; a tap is a scalar or one weight per channel."""
    h = sum(x[:, :, j:j + Wo, :].astype(np.float64) * np.float64(t) for j, t in enumerate(row_taps))
    return sum(h[:, i:i + Ho, :, :] * np.float64(t) for i, t in enumerate(column_taps))


def separable_blur_body(xs, hs, os_, wh, wv):
    """%h = x (*) a along the row (1 x KW taps), %r = h (*) b down the
    columns (KH x 1): two depthwise convolutions, the blur's form."""
    body = fill("f", hs)
    body += ("  %%h = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, "
             "strides = dense<1> : tensor<2xi64>}\n"
             "      ins(%%x, %%a : %s, %s) outs(%%f : %s) -> %s\n" % (T(xs), T(wh), T(hs), T(hs)))
    body += fill("g", os_)
    body += ("  %%r = linalg.depthwise_conv_2d_nhwc_hwc {dilations = dense<1> : tensor<2xi64>, "
             "strides = dense<1> : tensor<2xi64>}\n"
             "      ins(%%h, %%b : %s, %s) outs(%%g : %s) -> %s\n" % (T(hs), T(wv), T(os_), T(os_)))
    return body


@test("separable_blur_slice_fusion")
def _(ctx):
    # Two depthwise passes, 1xKW then KHx1 (random taps), on an RGB image:
    # pbc-fuse-slices computes each 64-row tile's slice of the intermediate
    # in a private buffer. Run again with L2 lowered to 64 KiB (CPU), where
    # those rows exceed half of it and the columns are tiled too (2-D tiles).
    rng = ctx.rng
    C, KH, KW = 3, pick(rng, [3, 5]), pick(rng, [3, 5])
    Ho, Wo = 64 * int(rng.integers(1, 4)), 64 * int(rng.integers(2, 5))
    xs, hs, os_ = separable_blur_shapes(Ho, Wo, KH, KW, C)
    wh, wv = (1, KW, C), (KH, 1, C)
    body = separable_blur_body(xs, hs, os_, wh, wv)
    text = func("blur", [("x", T(xs)), ("a", T(wh)), ("b", T(wv))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    a, _ = ctx.rand(wh)
    b, _ = ctx.rand(wv)
    ref = separable_blur_reference(x, a[0], b[:, 0], Ho, Wo)
    on_cpu = "--target=cpu" in pbc_lib.TARGET_ARGS
    for extra in ([], ["--chip-set=l2-bytes=65536"]) if on_cpu else ([],):
        (r,) = ctx.run(text, [x, a, b], extra_args=extra)
        assert_close(r, ref, k=KH * KW, what="result with %s" % (extra or "defaults"))


@test("separable_blur_constant_taps")
def _(ctx):
    # The blur's form with filters given as constants, equal across the 3
    # channels (random taps, 5 or 7 of them): pbc-hoist-invariant-loads
    # counts the 7-tap filters as their few distinct values, unrolls the tap
    # loops, pbc-fold-constant-loads makes them constants and
    # pbc-sliding-window slides a KH-row buffer down taller tiles.
    rng = ctx.rng
    C, KH, KW = 3, pick(rng, [5, 7]), pick(rng, [5, 7])
    Ho, Wo = 128 * int(rng.integers(1, 3)), 512 * int(rng.integers(1, 3))
    xs, hs, os_ = separable_blur_shapes(Ho, Wo, KH, KW, C)
    th = rng.uniform(0.1, 1.0, size=KW).astype(np.float32)
    tv = rng.uniform(0.1, 1.0, size=KH).astype(np.float32)
    a = np.repeat(th[None, :, None], C, axis=2)  # 1 x KW x C
    b = np.repeat(tv[:, None, None], C, axis=2)  # KH x 1 x C

    def dense(w):
        return "dense<%s>" % np.array2string(w, separator=", ", floatmode="unique",
                                             threshold=10 ** 6).replace("\n", "")

    body = "  %%a = arith.constant %s : %s\n" % (dense(a), T(a.shape))
    body += "  %%b = arith.constant %s : %s\n" % (dense(b), T(b.shape))
    body += separable_blur_body(xs, hs, os_, a.shape, b.shape)
    text = func("blur", [("x", T(xs))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    ref = separable_blur_reference(x, th, tv, Ho, Wo)
    (r,) = ctx.run(text, [x])
    assert_close(r, ref, k=KH * KW)

def pool_case(ctx, kind, layout="nhwc"):
    rng = ctx.rng
    (KH, KW), s, d, pl, ph, (H, W) = conv_params(rng)
    N, C = int(rng.integers(1, 3)), int(rng.integers(1, 9))
    nchw = layout == "nchw"
    ah, aw = (2, 3) if nchw else (1, 2)   # the spatial axes
    xs = (N, C, H, W) if nchw else (N, H, W, C)
    low, high = [0, 0, 0, 0], [0, 0, 0, 0]
    low[ah], low[aw], high[ah], high[aw] = pl[0], pl[1], ph[0], ph[1]
    init, padv = ("0.0", "0.0") if kind == "sum" else (NINF, NINF)
    body = "  %%padv = arith.constant %s : f32\n" % padv
    ptxt, xps = pad_text("x", xs, low, high, "padv")
    Ho, Wo = out_size(xps[ah], KH, s[0], d[0]), out_size(xps[aw], KW, s[1], d[1])
    os_ = (N, C, Ho, Wo) if nchw else (N, Ho, Wo, C)
    body += ptxt + fill("f", os_, value=init)
    body += "  %%win = tensor.empty() : %s\n" % T((KH, KW))
    body += ("  %%r = linalg.pooling_%s_%s {dilations = %s, strides = %s}\n"
             "      ins(%%x_p, %%win : %s, %s) outs(%%f : %s) -> %s\n"
             % (layout, kind, dense_i64(d), dense_i64(s), T(xps), T((KH, KW)), T(os_), T(os_)))
    text = func("pool", [("x", T(xs))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    xp = np.pad(x.astype(np.float64), list(zip(low, high)),
                constant_values=0.0 if kind == "sum" else -np.inf)
    wins = [window(xp, ah, aw, kh, kw, s, d, Ho, Wo) for kh in range(KH) for kw in range(KW)]
    ref = sum(wins) if kind == "sum" else np.max(np.stack(wins), axis=0)
    (r,) = ctx.run(text, [x])
    assert_close(r, ref, k=KH * KW)


@test("pooling_nhwc_max_pad_stride_dilation")
def _(ctx):
    pool_case(ctx, "max")


@test("pooling_nhwc_sum_pad_stride_dilation")
def _(ctx):
    pool_case(ctx, "sum")


@test("pooling_nchw_max_pad_stride_dilation")
def _(ctx):
    pool_case(ctx, "max", "nchw")


@test("pooling_nchw_sum_pad_stride_dilation")
def _(ctx):
    pool_case(ctx, "sum", "nchw")


@test("nchw_residual_block")
def _(ctx):
    """Channels-first layers run channels-last (pbc-channels-last): conv ->
    bias + ReLU -> pad -> conv with a constant filter (transposed at compile
    time) -> + bias + residual -> ReLU -> 2x2 max pooling, all NCHW; the
    transposes between the layers move below the elementwise ops and pads
    and cancel (pbc-sink-transposes)."""
    rng = ctx.rng
    N, C, H, W = int(rng.integers(1, 3)), int(rng.integers(2, 9)), 2 * int(rng.integers(2, 6)), \
        2 * int(rng.integers(2, 6))
    xs, ws = (N, C, H, W), (C, C, 3, 3)
    x, _ = ctx.rand(xs)
    w1, _ = ctx.rand(ws)
    w2, _ = ctx.rand(ws)
    b1, _ = ctx.rand((C,))
    b2, _ = ctx.rand((C,))
    dense = lambda a: "dense<[%s]>" % ", ".join(repr(float(v)) for v in a.reshape(-1))
    pads = ([0, 0, 1, 1], [0, 0, 1, 1])
    xps = (N, C, H + 2, W + 2)
    conv = ("  %%%s = linalg.conv_2d_nchw_fchw {dilations = dense<1> : tensor<2xi64>, "
            "strides = dense<1> : tensor<2xi64>} ins(%%%s, %%%s : %s, %s) outs(%%%s : %s) -> %s\n")
    bmap = amap(4, ["d1"])
    body = "  %zero = arith.constant 0.0 : f32\n"
    body += "  %%w2 = arith.constant %s : %s\n" % (dense(w2), T((C * C * 9,)))
    body += ("  %%w2r = tensor.expand_shape %%w2 [[0, 1, 2, 3]] output_shape [%d, %d, 3, 3] : %s into %s\n"
             % (C, C, T((C * C * 9,)), T(ws)))
    p1, _ = pad_text("x", xs, pads[0], pads[1], "zero")
    body += p1 + fill("f1", xs) + conv % ("c1", "x_p", "w1", T(xps), T(ws), "f1", T(xs), T(xs))
    body += "  %%e1 = tensor.empty() : %s\n" % T(xs)
    body += ("  %%r1 = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = %s} "
             "ins(%%c1, %%b1 : %s, %s) outs(%%e1 : %s) {\n"
             "  ^bb0(%%a: f32, %%b: f32, %%o: f32):\n"
             "    %%s = arith.addf %%a, %%b : f32\n"
             "    %%m = arith.maximumf %%s, %%zero : f32\n"
             "    linalg.yield %%m : f32\n"
             "  } -> %s\n" % (ident(4), bmap, ident(4), iters(["parallel"] * 4),
                              T(xs), T((C,)), T(xs), T(xs)))
    p2, _ = pad_text("r1", xs, pads[0], pads[1], "zero")
    body += p2 + fill("f2", xs) + conv % ("c2", "r1_p", "w2r", T(xps), T(ws), "f2", T(xs), T(xs))
    body += "  %%e2 = tensor.empty() : %s\n" % T(xs)
    body += ("  %%r2 = linalg.generic {indexing_maps = [%s, %s, %s, %s], iterator_types = %s} "
             "ins(%%c2, %%b2, %%x : %s, %s, %s) outs(%%e2 : %s) {\n"
             "  ^bb0(%%a: f32, %%b: f32, %%r: f32, %%o: f32):\n"
             "    %%s = arith.addf %%a, %%b : f32\n"
             "    %%t = arith.addf %%s, %%r : f32\n"
             "    %%m = arith.maximumf %%t, %%zero : f32\n"
             "    linalg.yield %%m : f32\n"
             "  } -> %s\n" % (ident(4), bmap, ident(4), ident(4), iters(["parallel"] * 4),
                              T(xs), T((C,)), T(xs), T(xs), T(xs)))
    os_ = (N, C, H // 2, W // 2)
    body += fill("f3", os_, value=NINF) + "  %%win = tensor.empty() : %s\n" % T((2, 2))
    body += ("  %%r = linalg.pooling_nchw_max {dilations = dense<1> : tensor<2xi64>, "
             "strides = dense<2> : tensor<2xi64>} ins(%%r2, %%win : %s, %s) outs(%%f3 : %s) -> %s\n"
             % (T(xs), T((2, 2)), T(os_), T(os_)))
    text = func("block", [("x", T(xs)), ("w1", T(ws)), ("b1", T((C,))), ("b2", T((C,)))],
                [("r", T(os_))], body)

    def conv_ref(inp, w):
        xp = np.pad(inp, [(0, 0), (0, 0), (1, 1), (1, 1)])
        out = np.zeros(inp.shape)
        for kh in range(3):
            for kw in range(3):
                win = window(xp, 2, 3, kh, kw, (1, 1), (1, 1), H, W)
                out += np.einsum("nchw,fc->nfhw", win, w[:, :, kh, kw].astype(np.float64))
        return out
    x64 = x.astype(np.float64)
    r1 = np.maximum(conv_ref(x64, w1) + b1.astype(np.float64)[None, :, None, None], 0)
    r2 = np.maximum(conv_ref(r1, w2) + b2.astype(np.float64)[None, :, None, None] + x64, 0)
    ref = r2.reshape(N, C, H // 2, 2, W // 2, 2).max(axis=(3, 5))
    (r,) = ctx.run(text, [x, w1, b1, b2])
    assert_close(r, ref, k=2 * C * 9)


# ---------------------------------------------------------------- elementwise

def _erf(x):
    return np.vectorize(math.erf, otypes=[np.float64])(x)


# name: (arity, body lines with %x0 %x1 -> %y, numpy ref, positive inputs)
ELEMENTWISE = {
    "add": (2, "%y = arith.addf %x0, %x1 : {e}", lambda a, b: a + b, False),
    "sub": (2, "%y = arith.subf %x0, %x1 : {e}", lambda a, b: a - b, False),
    "mul": (2, "%y = arith.mulf %x0, %x1 : {e}", lambda a, b: a * b, False),
    "div": (2, "%y = arith.divf %x0, %x1 : {e}", lambda a, b: a / b, False),
    "maximumf": (2, "%y = arith.maximumf %x0, %x1 : {e}", np.maximum, False),
    "minimumf": (2, "%y = arith.minimumf %x0, %x1 : {e}", np.minimum, False),
    "negf": (1, "%y = arith.negf %x0 : {e}", lambda a: -a, False),
    "absf": (1, "%y = math.absf %x0 : {e}", np.abs, False),
    "exp": (1, "%y = math.exp %x0 : {e}", np.exp, False),
    "log": (1, "%y = math.log %x0 : {e}", np.log, True),
    "tanh": (1, "%y = math.tanh %x0 : {e}", np.tanh, False),
    "erf": (1, "%y = math.erf %x0 : {e}", _erf, False),
    "sqrt": (1, "%y = math.sqrt %x0 : {e}", np.sqrt, True),
    "rsqrt": (1, "%y = math.rsqrt %x0 : {e}", lambda a: 1 / np.sqrt(a), True),
    "relu_cmpf_select": (1, "%z = arith.constant 0.0 : {e}\n"
                            "    %c = arith.cmpf ogt, %x0, %z : {e}\n"
                            "    %y = arith.select %c, %x0, %z : {e}",
                         lambda a: np.where(a > 0, a, 0.0), False),
    "sigmoid": (1, "%one = arith.constant 1.0 : {e}\n"
                   "    %n = arith.negf %x0 : {e}\n"
                   "    %ex = math.exp %n : {e}\n"
                   "    %d = arith.addf %one, %ex : {e}\n"
                   "    %y = arith.divf %one, %d : {e}",
                lambda a: 1 / (1 + np.exp(-a)), False),
    "gelu_erf": (1, "%half = arith.constant 0.5 : {e}\n"
                    "    %one = arith.constant 1.0 : {e}\n"
                    "    %is2 = arith.constant 0.70710678118 : {e}\n"
                    "    %s = arith.mulf %x0, %is2 : {e}\n"
                    "    %er = math.erf %s : {e}\n"
                    "    %p = arith.addf %er, %one : {e}\n"
                    "    %h = arith.mulf %x0, %half : {e}\n"
                    "    %y = arith.mulf %h, %p : {e}",
                 lambda a: 0.5 * a * (1 + _erf(a / np.sqrt(2.0))), False),
    "fma_mul_add": (2, "%m = arith.mulf %x0, %x1 : {e}\n"
                       "    %y = arith.addf %m, %x0 : {e}",
                    lambda a, b: a * b + a, False),
}


def elementwise_case(ctx, opname, dtype=F32):
    arity, op, ref_fn, positive = ELEMENTWISE[opname]
    e = elt(dtype)
    rank = int(ctx.rng.integers(1, 5))
    shape = rshape(ctx.rng, rank, 1, 12)
    t = T(shape, e)
    blocks = ", ".join("%%x%d: %s" % (i, e) for i in range(arity))
    body = "  %%o = tensor.empty() : %s\n" % t
    body += ("  %%r = linalg.generic {indexing_maps = [%s], iterator_types = %s}\n"
             "      ins(%s : %s) outs(%%o : %s) {\n"
             "  ^bb0(%s, %%out: %s):\n"
             "    %s\n"
             "    linalg.yield %%y : %s\n"
             "  } -> %s\n"
             % (", ".join([ident(rank)] * (arity + 1)), iters(["parallel"] * rank),
                ", ".join("%%a%d" % i for i in range(arity)), ", ".join([t] * arity), t,
                blocks, e, op.format(e=e), e, t))
    text = func("ew", [("a%d" % i, t) for i in range(arity)], [("r", t)], body)
    ins, ins32 = zip(*[ctx.rand(shape, dtype, positive=positive) for _ in range(arity)])
    (r,) = ctx.run(text, list(ins))
    ref = ref_fn(*[a.astype(np.float64) for a in ins32])
    assert_close(r, ref, dtype)


def _register_elementwise(opname):
    @test("elementwise_" + opname)
    def _(ctx):
        elementwise_case(ctx, opname)


for _op in ELEMENTWISE:
    _register_elementwise(_op)


@test("elementwise_f16_fma_mul_add")
def _(ctx):
    elementwise_case(ctx, "fma_mul_add", F16)


@test("elementwise_f16_exp")
def _(ctx):
    elementwise_case(ctx, "exp", F16)


@test("elementwise_bf16_fma_mul_add")
def _(ctx):
    elementwise_case(ctx, "fma_mul_add", BF16)


@test("elementwise_bf16_tanh")
def _(ctx):
    elementwise_case(ctx, "tanh", BF16)


# ---------------------------------------------------------------- broadcasts

def binary_generic(name, a_t, b_t, o_shape, maps, op="arith.addf"):
    rank = len(o_shape)
    body = "  %%o = tensor.empty() : %s\n" % T(o_shape)
    body += ("  %%r = linalg.generic {indexing_maps = [%s], iterator_types = %s}\n"
             "      ins(%%a, %%b : %s, %s) outs(%%o : %s) {\n"
             "  ^bb0(%%x: f32, %%y: f32, %%out: f32):\n"
             "    %%z = %s %%x, %%y : f32\n"
             "    linalg.yield %%z : f32\n"
             "  } -> %s\n"
             % (", ".join(maps), iters(["parallel"] * rank), a_t, b_t, T(o_shape), op,
                T(o_shape)))
    return func(name, [("a", a_t), ("b", b_t)], [("r", T(o_shape))], body)


@test("broadcast_row")
def _(ctx):
    M, N = rshape(ctx.rng, 2, 1, 40)
    text = binary_generic("bc", T((M, N)), T((N,)), (M, N),
                          [ident(2), amap(2, ["d1"]), ident(2)])
    a, _ = ctx.rand((M, N))
    b, _ = ctx.rand((N,))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.astype(np.float64) + b)


@test("broadcast_column")
def _(ctx):
    M, N = rshape(ctx.rng, 2, 1, 40)
    text = binary_generic("bc", T((M, N)), T((M,)), (M, N),
                          [ident(2), amap(2, ["d0"]), ident(2)], "arith.mulf")
    a, _ = ctx.rand((M, N))
    b, _ = ctx.rand((M,))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.astype(np.float64) * b[:, None])


@test("broadcast_scalar_rank0")
def _(ctx):
    shape = rshape(ctx.rng, 3, 1, 10)
    text = binary_generic("bc", T(shape), T(()), shape,
                          [ident(3), amap(3, []), ident(3)], "arith.subf")
    a, _ = ctx.rand(shape)
    b, _ = ctx.rand(())
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.astype(np.float64) - b)


@test("broadcast_outer_product")
def _(ctx):
    M, N = rshape(ctx.rng, 2, 1, 40)
    text = binary_generic("bc", T((M,)), T((N,)), (M, N),
                          [amap(2, ["d0"]), amap(2, ["d1"]), ident(2)], "arith.mulf")
    a, _ = ctx.rand((M,))
    b, _ = ctx.rand((N,))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, np.outer(a.astype(np.float64), b))


@test("broadcast_unit_dim_constant_index")
def _(ctx):
    B, M, N = rshape(ctx.rng, 3, 1, 12)
    text = binary_generic("bc", T((B, M, N)), T((B, 1, N)), (B, M, N),
                          [ident(3), amap(3, ["d0", "0", "d2"]), ident(3)])
    a, _ = ctx.rand((B, M, N))
    b, _ = ctx.rand((B, 1, N))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.astype(np.float64) + b)


@test("linalg_broadcast_named")
def _(ctx):
    M, N, K = rshape(ctx.rng, 3, 1, 12)
    body = "  %%o = tensor.empty() : %s\n" % T((M, N, K))
    body += ("  %%r = linalg.broadcast ins(%%a : %s) outs(%%o : %s) dimensions = [1]\n"
             % (T((M, K)), T((M, N, K))))
    text = func("bc", [("a", T((M, K)))], [("r", T((M, N, K)))], body)
    a, _ = ctx.rand((M, K))
    (r,) = ctx.run(text, [a])
    assert_close(r, np.broadcast_to(a[:, None, :], (M, N, K)))


@test("linalg_transpose_named")
def _(ctx):
    shape = rshape(ctx.rng, 3, 1, 12)
    perm = [int(p) for p in ctx.rng.permutation(3)]
    oshape = tuple(shape[p] for p in perm)
    body = "  %%o = tensor.empty() : %s\n" % T(oshape)
    body += ("  %%r = linalg.transpose ins(%%a : %s) outs(%%o : %s) permutation = [%s]\n"
             % (T(shape), T(oshape), ", ".join(map(str, perm))))
    text = func("tr", [("a", T(shape))], [("r", T(oshape))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, np.transpose(a, perm))


# ---------------------------------------------------------------- reductions

def reduce_case(ctx, kind, dims):
    shape = rshape(ctx.rng, 3, 1, 16)
    keep = [i for i in range(3) if i not in dims]
    oshape = tuple(shape[i] for i in keep)
    init = "0.0" if kind == "sum" else NINF
    op = "arith.addf" if kind == "sum" else "arith.maximumf"
    body = fill("f", oshape, value=init)
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%a : %s) outs(%%f : %s) {\n"
             "  ^bb0(%%x: f32, %%acc: f32):\n"
             "    %%z = %s %%x, %%acc : f32\n"
             "    linalg.yield %%z : f32\n"
             "  } -> %s\n"
             % (ident(3), amap(3, ["d%d" % i for i in keep]),
                iters(["reduction" if i in dims else "parallel" for i in range(3)]),
                T(shape), T(oshape), op, T(oshape)))
    text = func("red", [("a", T(shape))], [("r", T(oshape))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    a64 = a.astype(np.float64)
    ref = a64.sum(axis=tuple(dims)) if kind == "sum" else a64.max(axis=tuple(dims))
    assert_close(r, ref, k=int(np.prod([shape[i] for i in dims])))


@test("reduce_sum_random_dim")
def _(ctx):
    reduce_case(ctx, "sum", [int(ctx.rng.integers(0, 3))])


@test("reduce_max_random_dim")
def _(ctx):
    reduce_case(ctx, "max", [int(ctx.rng.integers(0, 3))])


@test("reduce_sum_two_dims")
def _(ctx):
    reduce_case(ctx, "sum", sorted(int(d) for d in ctx.rng.choice(3, 2, replace=False)))


@test("reduce_max_inner_dim")
def _(ctx):
    reduce_case(ctx, "max", [2])


@test("reduce_sum_all_to_rank0")
def _(ctx):
    reduce_case(ctx, "sum", [0, 1, 2])


@test("linalg_reduce_named_sum")
def _(ctx):
    shape = rshape(ctx.rng, 3, 1, 16)
    dim = int(ctx.rng.integers(0, 3))
    oshape = tuple(s for i, s in enumerate(shape) if i != dim)
    body = fill("f", oshape)
    body += ("  %%r = linalg.reduce ins(%%a : %s) outs(%%f : %s) dimensions = [%d]\n"
             "    (%%x: f32, %%acc: f32) {\n"
             "      %%z = arith.addf %%x, %%acc : f32\n"
             "      linalg.yield %%z : f32\n"
             "    }\n" % (T(shape), T(oshape), dim))
    text = func("red", [("a", T(shape))], [("r", T(oshape))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, a.astype(np.float64).sum(axis=dim), k=shape[dim])


@test("softmax_random_dim")
def _(ctx):
    shape = rshape(ctx.rng, 3, 1, 20)
    dim = int(ctx.rng.integers(0, 3))
    body = "  %%o = tensor.empty() : %s\n" % T(shape)
    body += ("  %%r = linalg.softmax dimension(%d) ins(%%a : %s) outs(%%o : %s) -> %s\n"
             % (dim, T(shape), T(shape), T(shape)))
    text = func("sm", [("a", T(shape))], [("r", T(shape))], body)
    a, _ = ctx.rand(shape, lo=0.1, hi=4.0)
    (r,) = ctx.run(text, [a])
    a64 = a.astype(np.float64)
    ex = np.exp(a64 - a64.max(axis=dim, keepdims=True))
    assert_close(r, ex / ex.sum(axis=dim, keepdims=True), atol=1e-6)


@test("softmax_fused_rows")
def _(ctx):
    """Softmax over the last dimension of rows long and many enough that
    pbc-fuse-rows makes its six nests one parallel loop over B x R rows
    (depth 2), each row's max, exponentials, sum and division inside. Half
    the draws make C a multiple of 64: the row reductions then run 4
    accumulator chains (pbc-vectorize-reductions); the others, 16 lanes and
    a tail."""
    B = int(ctx.rng.integers(1, 4))
    R = int(ctx.rng.integers(40, 101))
    C = int(ctx.rng.integers(47, 79)) * 64 + int(ctx.rng.integers(0, 2)) * int(ctx.rng.integers(1, 64))
    shape = (B, R, C)
    body = "  %%o = tensor.empty() : %s\n" % T(shape)
    body += ("  %%r = linalg.softmax dimension(2) ins(%%a : %s) outs(%%o : %s) -> %s\n"
             % (T(shape), T(shape), T(shape)))
    text = func("sm", [("a", T(shape))], [("r", T(shape))], body)
    a, _ = ctx.rand(shape, lo=0.1, hi=4.0)
    (r,) = ctx.run(text, [a])
    a64 = a.astype(np.float64)
    ex = np.exp(a64 - a64.max(axis=2, keepdims=True))
    assert_close(r, ex / ex.sum(axis=2, keepdims=True), atol=1e-7)


@test("logsumexp_two_reductions")
def _(ctx):
    """A row maximum, then the sum of exp(x - max) over the row: the second
    reduction reads the first's result at every step (pbc-fuse must not run
    it inside the first's row, where the maximum is partial)."""
    R, K = (int(v) for v in ctx.rng.integers(1, 40, size=2))
    mat, row = amap(2, ["d0", "d1"]), amap(2, ["d0"])
    body = fill("m0", (R,), value="-3.0e38") + fill("s0", (R,))
    body += ("  %%m = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%a : %s) outs(%%m0 : %s) {\n"
             "  ^bb0(%%x: f32, %%o: f32):\n"
             "    %%y = arith.maxnumf %%x, %%o : f32\n"
             "    linalg.yield %%y : f32\n"
             "  } -> %s\n" % (mat, row, iters(["parallel", "reduction"]), T((R, K)), T((R,)),
                              T((R,))))
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = %s}\n"
             "      ins(%%a, %%m : %s, %s) outs(%%s0 : %s) {\n"
             "  ^bb0(%%x: f32, %%mx: f32, %%o: f32):\n"
             "    %%d = arith.subf %%x, %%mx : f32\n"
             "    %%e = math.exp %%d : f32\n"
             "    %%y = arith.addf %%e, %%o : f32\n"
             "    linalg.yield %%y : f32\n"
             "  } -> %s\n" % (mat, row, row, iters(["parallel", "reduction"]), T((R, K)),
                              T((R,)), T((R,)), T((R,))))
    text = func("lse", [("a", T((R, K)))], [("r", T((R,)))], body)
    a, _ = ctx.rand((R, K), lo=0.1, hi=4.0)
    (r,) = ctx.run(text, [a])
    a64 = a.astype(np.float64)
    assert_close(r, np.exp(a64 - a64.max(axis=1, keepdims=True)).sum(axis=1), k=K)


@test("multi_result")
def _(ctx):
    shape = rshape(ctx.rng, 2, 1, 20)
    t = T(shape)
    body = "  %%o = tensor.empty() : %s\n" % t
    body += ("  %%r:2 = linalg.generic {indexing_maps = [%s, %s, %s, %s], iterator_types = %s}\n"
             "      ins(%%a, %%b : %s, %s) outs(%%o, %%o : %s, %s) {\n"
             "  ^bb0(%%x: f32, %%y: f32, %%o0: f32, %%o1: f32):\n"
             "    %%s = arith.addf %%x, %%y : f32\n"
             "    %%m = arith.maximumf %%x, %%y : f32\n"
             "    linalg.yield %%s, %%m : f32, f32\n"
             "  } -> (%s, %s)\n"
             % (ident(2), ident(2), ident(2), ident(2), iters(["parallel"] * 2),
                t, t, t, t, t, t))
    text = func("two", [("a", t), ("b", t)], [("r#0", t), ("r#1", t)], body)
    a, _ = ctx.rand(shape)
    b, _ = ctx.rand(shape)
    s, m = ctx.run(text, [a, b])
    assert_close(s, a.astype(np.float64) + b, what="result 0")
    assert_close(m, np.maximum(a, b), what="result 1")


# ---------------------------------------------------------------- tensor ops

@test("tensor_pad_nonzero_value")
def _(ctx):
    rank = int(ctx.rng.integers(1, 4))
    shape = rshape(ctx.rng, rank, 1, 10)
    low, high = rshape(ctx.rng, rank, 0, 3), rshape(ctx.rng, rank, 0, 3)
    body = "  %pv = arith.constant 0.5 : f32\n"
    ptxt, pshape = pad_text("a", shape, low, high, "pv")
    body += ptxt
    text = func("pad", [("a", T(shape))], [("a_p", T(pshape))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, np.pad(a, list(zip(low, high)), constant_values=0.5))


def random_slice(rng, shape):
    offs, sizes, strides = [], [], []
    for n in shape:
        st = int(rng.integers(1, 3))
        off = int(rng.integers(0, n))
        size = int(rng.integers(1, (n - 1 - off) // st + 2))
        offs.append(off)
        sizes.append(size)
        strides.append(st)
    return offs, sizes, strides


def slice_attrs(offs, sizes, strides):
    return "[%s] [%s] [%s]" % tuple(", ".join(map(str, v)) for v in (offs, sizes, strides))


def np_slice(offs, sizes, strides):
    return tuple(slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(offs, sizes, strides))


@test("tensor_extract_slice_strided")
def _(ctx):
    shape = rshape(ctx.rng, 3, 2, 12)
    offs, sizes, strides = random_slice(ctx.rng, shape)
    body = ("  %%s = tensor.extract_slice %%a%s : %s to %s\n"
            % (slice_attrs(offs, sizes, strides), T(shape), T(sizes)))
    text = func("xs", [("a", T(shape))], [("s", T(sizes))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, a[np_slice(offs, sizes, strides)])


@test("tensor_extract_slice_then_exp")
def _(ctx):
    shape = rshape(ctx.rng, 2, 2, 20)
    offs, sizes, strides = random_slice(ctx.rng, shape)
    body = ("  %%s = tensor.extract_slice %%a%s : %s to %s\n"
            % (slice_attrs(offs, sizes, strides), T(shape), T(sizes)))
    body += "  %%o = tensor.empty() : %s\n" % T(sizes)
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%s : %s) outs(%%o : %s) {\n"
             "  ^bb0(%%x: f32, %%out: f32):\n"
             "    %%y = math.exp %%x : f32\n"
             "    linalg.yield %%y : f32\n"
             "  } -> %s\n" % (ident(2), ident(2), iters(["parallel"] * 2),
                              T(sizes), T(sizes), T(sizes)))
    text = func("xs", [("a", T(shape))], [("r", T(sizes))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, np.exp(a[np_slice(offs, sizes, strides)].astype(np.float64)))


@test("tensor_insert_slice_into_fill")
def _(ctx):
    shape = rshape(ctx.rng, 2, 2, 16)
    offs, sizes, strides = random_slice(ctx.rng, shape)
    body = fill("f", shape, value="0.25")
    body += ("  %%r = tensor.insert_slice %%b into %%f%s : %s into %s\n"
             % (slice_attrs(offs, sizes, strides), T(sizes), T(shape)))
    text = func("ins", [("b", T(sizes))], [("r", T(shape))], body)
    b, _ = ctx.rand(sizes)
    ref = np.full(shape, 0.25)
    ref[np_slice(offs, sizes, strides)] = b
    (r,) = ctx.run(text, [b])
    assert_close(r, ref)


@test("tensor_insert_slice_into_input")
def _(ctx):
    shape = rshape(ctx.rng, 3, 2, 10)
    offs, sizes, strides = random_slice(ctx.rng, shape)
    body = ("  %%r = tensor.insert_slice %%b into %%a%s : %s into %s\n"
            % (slice_attrs(offs, sizes, strides), T(sizes), T(shape)))
    text = func("ins", [("a", T(shape)), ("b", T(sizes))], [("r", T(shape))], body)
    a, _ = ctx.rand(shape)
    b, _ = ctx.rand(sizes)
    ref = a.astype(np.float64).copy()
    ref[np_slice(offs, sizes, strides)] = b
    (r,) = ctx.run(text, [a, b])    # pbc_lib also checks that %a is not modified
    assert_close(r, ref)


def concat_text(name, feats, sizes, shape, d):
    """A concatenation as frontends lower `cat`: tensor.empty filled by one
    tensor.insert_slice per source along dimension d (sources %feats, of
    sizes[i] there, shape elsewhere). Returns (lines, result SSA name)."""
    out_shape = list(shape)
    out_shape[d] = sum(sizes)
    body = "  %%%s_0 = tensor.empty() : %s\n" % (name, T(out_shape))
    prev, off = "%s_0" % name, 0
    for j, (f, n) in enumerate(zip(feats, sizes)):
        fs = list(shape)
        fs[d] = n
        offs = [0] * len(shape)
        offs[d] = off
        body += ("  %%%s_%d = tensor.insert_slice %%%s into %%%s[%s] [%s] [%s] : %s into %s\n"
                 % (name, j + 1, f, prev, ", ".join(map(str, offs)), ", ".join(map(str, fs)),
                    ", ".join(["1"] * len(shape)), T(fs), T(out_shape)))
        prev, off = "%s_%d" % (name, j + 1), off + n
    return body, prev


@test("channel_params_in_nchw_broadcast_shape")
def _(ctx):
    """Per-channel parameters shaped Cx1x1 (NCHW's broadcast shape) read by a
    channels-last op as p[c, 0, 0], and a 1x1x1x1 scalar: S1 folds their unit
    dimensions (pbc-fold-unit-operand-dims) so the nest is vectorized."""
    n, h, w, c = rshape(ctx.rng, 4, 1, 6)
    c *= int(ctx.rng.integers(1, 9))
    x_t, p_t, s_t = T((n, h, w, c)), T((c, 1, 1)), T((1, 1, 1, 1))
    body = "  %%o = tensor.empty() : %s\n" % x_t
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s, %s, %s], iterator_types = %s}\n"
             "      ins(%%x, %%p, %%s : %s, %s, %s) outs(%%o : %s) {\n"
             "  ^bb0(%%a: f32, %%b: f32, %%t: f32, %%out: f32):\n"
             "    %%m = arith.mulf %%a, %%b : f32\n"
             "    %%q = arith.addf %%m, %%t : f32\n"
             "    %%z = arith.constant 0.0 : f32\n"
             "    %%y = arith.maximumf %%q, %%z : f32\n"
             "    linalg.yield %%y : f32\n"
             "  } -> %s\n" % (ident(4), amap(4, ["d3", "0", "0"]), amap(4, ["0", "0", "0", "0"]),
                              ident(4), iters(["parallel"] * 4), x_t, p_t, s_t, x_t, x_t))
    text = func("bn", [("x", x_t), ("p", p_t), ("s", s_t)], [("r", x_t)], body)
    x, _ = ctx.rand((n, h, w, c))
    p, _ = ctx.rand((c, 1, 1))
    t, _ = ctx.rand((1, 1, 1, 1))
    (r,) = ctx.run(text, [x, p, t])
    ref = np.maximum(x.astype(np.float64) * p.reshape(c) + t.reshape(()), 0.0)
    assert_close(r, ref)


@test("dense_block_concatenations")
def _(ctx):
    """A DenseNet block: layer k reads the concatenation of the input and
    every earlier layer's output (a contraction over the concatenated
    dimension) and its output joins the next concatenation. The
    concatenations share prefixes (pbc-share-concat-prefixes builds them in
    one tensor); an intermediate one is also returned, so it must survive
    the later layers' writes."""
    d = int(ctx.rng.integers(1, 4))
    shape = list(rshape(ctx.rng, 4, 1, 5))
    c0, g, layers = shape[d], int(ctx.rng.integers(1, 6)), int(ctx.rng.integers(2, 5))
    kept = int(ctx.rng.integers(0, layers))          # which concatenation is returned too
    pd = ["d%d" % i for i in range(4)]
    inp = list(pd)
    inp[d] = "d4"
    maps = "[%s, %s, %s]" % (amap(5, inp), amap(5, ["d4", "d%d" % d]), amap(5, pd))
    args, body, feats, ws = [("x0", T(shape))], "", ["x0"], []
    sizes, cat_t = [c0], None
    for k in range(layers):
        cin = sum(sizes)
        cat_shape = list(shape)
        cat_shape[d] = cin
        cat_t = T(cat_shape)
        if k == 0:
            cat = "x0"
        else:
            text, cat = concat_text("c%d" % k, feats, sizes, shape, d)
            body += text
        if k == kept:
            kept_ssa, kept_t = cat, cat_t
        out_shape = list(shape)
        out_shape[d] = g
        args.append(("w%d" % k, T((cin, g))))
        body += fill("o%d" % k, out_shape)
        body += ("  %%x%d = linalg.generic {indexing_maps = %s, iterator_types = %s} "
                 "ins(%%%s, %%w%d : %s, %s) outs(%%o%d : %s) {\n"
                 "  ^bb0(%%p: f32, %%q: f32, %%acc: f32):\n"
                 "    %%m = arith.mulf %%p, %%q : f32\n"
                 "    %%s = arith.addf %%acc, %%m : f32\n"
                 "    linalg.yield %%s : f32\n"
                 "  } -> %s\n" % (k + 1, maps, iters(["parallel"] * 4 + ["reduction"]), cat, k,
                                  cat_t, T((cin, g)), k, T(out_shape), T(out_shape)))
        feats.append("x%d" % (k + 1))
        sizes.append(g)
    final_shape = list(shape)
    final_shape[d] = sum(sizes)
    text, final = concat_text("f", feats, sizes, shape, d)
    body += text
    text = func("dense", args, [(final, T(final_shape)), (kept_ssa, kept_t)], body)
    x0, _ = ctx.rand(shape)
    ins, ref = [x0], [x0.astype(np.float64)]
    for k in range(layers):
        cat = np.concatenate(ref, axis=d)
        w, _ = ctx.rand((cat.shape[d], g))
        ins.append(w)
        if k == kept:
            kept_ref = cat
        ref.append(np.moveaxis(np.tensordot(cat, w.astype(np.float64), axes=([d], [0])), -1, d))
    r, kr = ctx.run(text, ins)
    assert_close(r, np.concatenate(ref, axis=d))
    assert_close(kr, kept_ref)


@test("tensor_expand_shape_then_bias")
def _(ctx):
    A, B, C = rshape(ctx.rng, 3, 1, 10)
    xs, es = (A * B, C), (A, B, C)
    body = ("  %%x = tensor.expand_shape %%a [[0, 1], [2]] output_shape [%d, %d, %d] "
            ": %s into %s\n" % (A, B, C, T(xs), T(es)))
    body += "  %%o = tensor.empty() : %s\n" % T(es)
    body += add_generic("r", "x", "b", "o", 3, amap(3, ["d1"]), T(es), T((B,)), T(es))
    text = func("ex", [("a", T(xs)), ("b", T((B,)))], [("r", T(es))], body)
    a, _ = ctx.rand(xs)
    b, _ = ctx.rand((B,))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.reshape(es).astype(np.float64) + b[None, :, None])


@test("streaming_stores_aligned_and_not")
def _(ctx):
    # A result beyond a quarter of L3 (here lowered to 64 KiB) is stored
    # non-temporally when it is 64-byte aligned; the nest is versioned, so
    # both placements of the output must give the sum.
    A, B = int(ctx.rng.integers(40, 80)), 16 * int(ctx.rng.integers(4, 12))
    body = "  %%o = tensor.empty() : %s\n" % T((A, B))
    body += add_generic("r", "x", "b", "o", 2, amap(2, ["d1"]), T((A, B)), T((B,)), T((A, B)))
    text = func("st", [("x", T((A, B))), ("b", T((B,)))], [("r", T((A, B)))], body)
    x, _ = ctx.rand((A, B))
    b, _ = ctx.rand((B,))
    # Streaming is a CPU cache policy (GPU chips have no l3-bytes key).
    on_cpu = "--target=cpu" in pbc_lib.TARGET_ARGS
    for offset in (0, 4, 32):
        (r,) = ctx.run(text, [x, b], extra_args=["--chip-set=l3-bytes=65536"] if on_cpu else [],
                       out_offset=offset)
        assert_close(r, x.astype(np.float64) + b[None, :], what="output at offset %d" % offset)


@test("weights_packed_once_across_calls")
def _(ctx):
    # B marked pbc.invariant: its packed panels (rows 4 KiB apart: packed)
    # are kept from the first call (pbc-pack-once). One library called again
    # with the output elsewhere (the streaming-store nest is versioned on its
    # alignment: the other version's panels are packed on its first run),
    # then with another B (packed again), then the first B again.
    M, K, N = 8 * int(ctx.rng.integers(4, 9)), 16 * int(ctx.rng.integers(2, 5)), 1024
    body = fill("f", (M, N))
    body += ("  %%r = linalg.matmul ins(%%a, %%b : %s, %s) outs(%%f : %s) -> %s\n"
             % (T((M, K)), T((K, N)), T((M, N)), T((M, N))))
    text = func("mm", [("a", T((M, K))), ("b", T((K, N)) + " {pbc.invariant}")],
                [("r", T((M, N)))], body)
    a, _ = ctx.rand((M, K))
    b1, _ = ctx.rand((K, N))
    b2, _ = ctx.rand((K, N))
    on_cpu = "--target=cpu" in pbc_lib.TARGET_ARGS
    name, _, results = pbc_lib.signature(text, None)
    lib = pbc_lib.compile(text, pbc=ctx.pbc,
                          extra_args=["--chip-set=l3-bytes=65536"] if on_cpu else [])
    try:
        for b, offset in ((b1, 0), (b1, 4), (b1, 0), (b2, 0), (b2, 32), (b1, 4)):
            (r,) = lib.call(name, [a, b], results, out_offset=offset)
            assert_close(r, a.astype(np.float64) @ b.astype(np.float64),
                         what="B %s, output at offset %d" % ("1" if b is b1 else "2", offset))
    finally:
        lib.close()


@test("tensor_collapse_shape_then_matmul")
def _(ctx):
    A, B, K, N = rshape(ctx.rng, 4, 1, 10)
    body = ("  %%x = tensor.collapse_shape %%a [[0, 1], [2]] : %s into %s\n"
            % (T((A, B, K)), T((A * B, K))))
    body += fill("f", (A * B, N))
    body += ("  %%r = linalg.matmul ins(%%x, %%w : %s, %s) outs(%%f : %s) -> %s\n"
             % (T((A * B, K)), T((K, N)), T((A * B, N)), T((A * B, N))))
    text = func("co", [("a", T((A, B, K))), ("w", T((K, N)))], [("r", T((A * B, N)))], body)
    a, _ = ctx.rand((A, B, K))
    w, _ = ctx.rand((K, N))
    (r,) = ctx.run(text, [a, w])
    assert_close(r, a.reshape(A * B, K).astype(np.float64) @ w, k=K)


@test("tensor_collapse_expand_roundtrip")
def _(ctx):
    A, B, C = rshape(ctx.rng, 3, 1, 8)
    body = ("  %%x = tensor.collapse_shape %%a [[0, 1, 2]] : %s into %s\n"
            % (T((A, B, C)), T((A * B * C,))))
    body += ("  %%y = tensor.expand_shape %%x [[0, 1]] output_shape [%d, %d] : %s into %s\n"
             % (A * B, C, T((A * B * C,)), T((A * B, C))))
    text = func("rt", [("a", T((A, B, C)))], [("y", T((A * B, C)))], body)
    a, _ = ctx.rand((A, B, C))
    (r,) = ctx.run(text, [a])
    assert_close(r, a.reshape(A * B, C))


@test("tensor_empty_fill_only")
def _(ctx):
    shape = rshape(ctx.rng, 2, 1, 16)
    body = fill("f", shape, value="1.5")
    body += "  %%r = linalg.add ins(%%f, %%a : %s, %s) outs(%%f_e : %s) -> %s\n" % (
        (T(shape),) * 4)
    text = func("ef", [("a", T(shape))], [("r", T(shape))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, a.astype(np.float64) + 1.5)


# ---------------------------------------------------------------- TOSA

def tosa_zp(name="zp", e="f32"):
    return ('  %%%s = "tosa.const"() <{values = dense<0.0> : tensor<1x%s>}> : () -> tensor<1x%s>\n'
            % (name, e, e))


@test("tosa_add_broadcast")
def _(ctx):
    shape = rshape(ctx.rng, 3, 1, 10)
    bshape = tuple(s if ctx.rng.random() < 0.5 else 1 for s in shape)
    body = ("  %%r = tosa.add %%a, %%b : (%s, %s) -> %s\n"
            % (T(shape), T(bshape), T(shape)))
    text = func("tadd", [("a", T(shape)), ("b", T(bshape))], [("r", T(shape))], body)
    a, _ = ctx.rand(shape)
    b, _ = ctx.rand(bshape)
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.astype(np.float64) + b)


@test("tosa_matmul")
def _(ctx):
    B, M, K, N = rshape(ctx.rng, 4, 1, 20)
    body = tosa_zp()
    body += ("  %%r = tosa.matmul %%a, %%b, %%zp, %%zp : (%s, %s, tensor<1xf32>, tensor<1xf32>) -> %s\n"
             % (T((B, M, K)), T((B, K, N)), T((B, M, N))))
    text = func("tmm", [("a", T((B, M, K))), ("b", T((B, K, N)))], [("r", T((B, M, N)))], body)
    a, _ = ctx.rand((B, M, K))
    b, _ = ctx.rand((B, K, N))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, np.einsum("bmk,bkn->bmn", a.astype(np.float64), b), k=K)


@test("tosa_conv2d")
def _(ctx):
    rng = ctx.rng
    KH, KW = rshape(rng, 2, 1, 3)
    s = rshape(rng, 2, 1, 2)
    d = rshape(rng, 2, 1, 2)
    pad = list(rshape(rng, 4, 0, 1))        # top, bottom, left, right
    N, C, F = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
    Ho, Wo = rshape(rng, 2, 1, 6)
    # TOSA requires (H - 1 + pads - (K - 1) * d) to be divisible by the stride:
    # derive the input size from the output size.
    H = (Ho - 1) * s[0] + (KH - 1) * d[0] + 1 - pad[0] - pad[1]
    W = (Wo - 1) * s[1] + (KW - 1) * d[1] + 1 - pad[2] - pad[3]
    if H < 1:
        pad[0] = pad[1] = 0
        H = (Ho - 1) * s[0] + (KH - 1) * d[0] + 1
    if W < 1:
        pad[2] = pad[3] = 0
        W = (Wo - 1) * s[1] + (KW - 1) * d[1] + 1
    xs, ws, os_ = (N, H, W, C), (F, KH, KW, C), (N, Ho, Wo, F)
    body = tosa_zp()
    body += ("  %%r = tosa.conv2d %%x, %%w, %%b, %%zp, %%zp {acc_type = f32, "
             "pad = array<i64: %s>, stride = array<i64: %d, %d>, dilation = array<i64: %d, %d>}"
             " : (%s, %s, %s, tensor<1xf32>, tensor<1xf32>) -> %s\n"
             % (", ".join(map(str, pad)), s[0], s[1], d[0], d[1], T(xs), T(ws), T((F,)),
                T(os_)))
    text = func("tconv", [("x", T(xs)), ("w", T(ws)), ("b", T((F,)))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    b, _ = ctx.rand((F,))
    xp = np.pad(x.astype(np.float64), [(0, 0), (pad[0], pad[1]), (pad[2], pad[3]), (0, 0)])
    ref = conv_nhwc_ref(xp, w.transpose(1, 2, 3, 0), s, d, Ho, Wo) + b
    (r,) = ctx.run(text, [x, w, b])
    assert_close(r, ref, k=C * KH * KW)


@test("tosa_transpose_conv2d")
def _(ctx):
    # A transposed convolution: every input pixel scatters its kernel-sized
    # patch into the output at stride steps. pbc takes it through MLIR's TOSA
    # decomposition (stride^2 sub-pixel convolutions, no stuffed zeros).
    rng = ctx.rng
    KH, KW = rshape(rng, 2, 1, 4)
    s = rshape(rng, 2, 1, 3)
    # out_pad: top, bottom, left, right; negative crops (PyTorch's padding).
    pad = [int(rng.integers(-(k - 1), 2)) if k > 1 else int(rng.integers(0, 2))
           for k in (KH, KH, KW, KW)]
    N, C, F = int(rng.integers(1, 3)), int(rng.integers(1, 6)), int(rng.integers(1, 6))
    H, W = rshape(rng, 2, 1, 7)
    if (H - 1) * s[0] + pad[0] + pad[1] + KH < 1:  # cropped to nothing
        pad[0] = pad[1] = 0
    if (W - 1) * s[1] + pad[2] + pad[3] + KW < 1:
        pad[2] = pad[3] = 0
    Ho = (H - 1) * s[0] + pad[0] + pad[1] + KH
    Wo = (W - 1) * s[1] + pad[2] + pad[3] + KW
    xs, ws, os_ = (N, H, W, C), (F, KH, KW, C), (N, Ho, Wo, F)
    body = tosa_zp()
    body += ("  %%r = tosa.transpose_conv2d %%x, %%w, %%b, %%zp, %%zp {acc_type = f32, "
             "out_pad = array<i64: %s>, stride = array<i64: %d, %d>}"
             " : (%s, %s, %s, tensor<1xf32>, tensor<1xf32>) -> %s\n"
             % (", ".join(map(str, pad)), s[0], s[1], T(xs), T(ws), T((F,)), T(os_)))
    text = func("tconv", [("x", T(xs)), ("w", T(ws)), ("b", T((F,)))], [("r", T(os_))], body)
    x, _ = ctx.rand(xs)
    w, _ = ctx.rand(ws)
    b, _ = ctx.rand((F,))
    # Scatter into the uncropped output, then take the out_pad window of it.
    full = np.zeros((N, (H - 1) * s[0] + KH + 2, (W - 1) * s[1] + KW + 2, F))
    for kh in range(KH):
        for kw in range(KW):
            tap = np.einsum("nhwc,fc->nhwf", x.astype(np.float64), w[:, kh, kw, :].astype(np.float64))
            full[:, 1 + kh:1 + kh + (H - 1) * s[0] + 1:s[0],
                 1 + kw:1 + kw + (W - 1) * s[1] + 1:s[1]] += tap
    ref = full[:, 1 - pad[0]:1 - pad[0] + Ho, 1 - pad[2]:1 - pad[2] + Wo] + b
    (r,) = ctx.run(text, [x, w, b])
    assert_close(r, ref, k=C * KH * KW)


@test("tosa_reduce_sum")
def _(ctx):
    shape = rshape(ctx.rng, 3, 1, 12)
    axis = int(ctx.rng.integers(0, 3))
    oshape = tuple(1 if i == axis else s for i, s in enumerate(shape))
    body = ("  %%r = tosa.reduce_sum %%a {axis = %d : i32} : (%s) -> %s\n"
            % (axis, T(shape), T(oshape)))
    text = func("tred", [("a", T(shape))], [("r", T(oshape))], body)
    a, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a])
    assert_close(r, a.astype(np.float64).sum(axis=axis, keepdims=True), k=shape[axis])


# ---------------------------------------------------------------- found by tests/differential

@test("index_mask_vectorized")
def _(ctx):
    """An elementwise select on linalg.index values, `j PRED i + k ? fill :
    x`: vectorized along j, the mask needs each lane's own j (pbc-vectorize
    once broadcast j itself: row 0 kept x in columns 1-15)."""
    R, C = int(ctx.rng.integers(1, 40)), int(ctx.rng.integers(1, 80))
    pred = pick(ctx.rng, ["ugt", "uge", "ult", "ule", "eq", "ne"])
    k = int(ctx.rng.integers(0, 3))
    fill = pick(ctx.rng, ["0xFF800000", "-1.0e+30", "0.0"])
    body = ("  %%e = tensor.empty() : %s\n  %%f = arith.constant %s : f32\n"
            "  %%k = arith.constant %d : index\n" % (T((R, C)), fill, k))
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%a : %s) outs(%%e : %s) {\n"
             "    ^bb0(%%x: f32, %%o: f32):\n"
             "      %%i = linalg.index 0 : index\n      %%j = linalg.index 1 : index\n"
             "      %%ik = arith.addi %%i, %%k : index\n"
             "      %%c = arith.cmpi %s, %%j, %%ik : index\n"
             "      %%s = arith.select %%c, %%f, %%x : f32\n      linalg.yield %%s : f32\n"
             "  } -> %s\n" % (ident(2), ident(2), iters(["parallel"] * 2), T((R, C)), T((R, C)),
                              pred, T((R, C))))
    text = func("mask", [("a", T((R, C)))], [("r", T((R, C)))], body)
    a, _ = ctx.rand((R, C))
    (r,) = ctx.run(text, [a])
    i, j = np.indices((R, C))
    cmp = {"ugt": np.greater, "uge": np.greater_equal, "ult": np.less, "ule": np.less_equal,
           "eq": np.equal, "ne": np.not_equal}[pred]
    fv = {"0xFF800000": -np.inf, "-1.0e+30": np.float32(-1e30), "0.0": 0.0}[fill]
    assert_close(r, np.where(cmp(j, i + k), fv, a))


@test("causal_attention")
def _(ctx):
    """Attention with K transposed by linalg.transpose, a causal mask from
    linalg.index (key > query: -inf) and the softmax written out as max, exp,
    sum and divide: the program the issue reported miscompiled at -O1..-O3."""
    H = int(ctx.rng.integers(1, 5))
    S = pick(ctx.rng, [7, 16, 33, 100, 128])
    D = pick(ctx.rng, [16, 64])
    q3 = (H, S, D)
    s3 = (H, S, S)
    m3 = amap(3, ["d0", "d1", "d2"])
    r3 = amap(3, ["d0", "d1"])
    body = ("  %%z = arith.constant 0.0 : f32\n  %%ninf = arith.constant 0xFF800000 : f32\n"
            "  %%sc = arith.constant %r : f32\n" % (1.0 / math.sqrt(D)))
    body += "  %%kt0 = tensor.empty() : %s\n" % T((H, D, S))
    body += ("  %%kt = linalg.transpose ins(%%k : %s) outs(%%kt0 : %s) permutation = [0, 2, 1]\n"
             % (T(q3), T((H, D, S))))
    body += "  %%s0 = tensor.empty() : %s\n" % T(s3)
    body += "  %%sz = linalg.fill ins(%%z : f32) outs(%%s0 : %s) -> %s\n" % (T(s3), T(s3))
    body += ("  %%s = linalg.batch_matmul ins(%%q, %%kt : %s, %s) outs(%%sz : %s) -> %s\n"
             % (T(q3), T((H, D, S)), T(s3), T(s3)))
    body += ("  %%m = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%s : %s) outs(%%s0 : %s) {\n"
             "    ^bb0(%%a: f32, %%o: f32):\n"
             "      %%i = linalg.index 1 : index\n      %%j = linalg.index 2 : index\n"
             "      %%c = arith.cmpi ugt, %%j, %%i : index\n"
             "      %%x = arith.mulf %%a, %%sc : f32\n"
             "      %%y = arith.select %%c, %%ninf, %%x : f32\n      linalg.yield %%y : f32\n"
             "  } -> %s\n" % (m3, m3, iters(["parallel"] * 3), T(s3), T(s3), T(s3)))
    body += "  %%r0 = tensor.empty() : %s\n" % T((H, S))
    body += "  %%mi = linalg.fill ins(%%ninf : f32) outs(%%r0 : %s) -> %s\n" % (T((H, S)), T((H, S)))
    body += ("  %%mx = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%m : %s) outs(%%mi : %s) {\n"
             "    ^bb0(%%a: f32, %%o: f32):\n      %%y = arith.maximumf %%a, %%o : f32\n"
             "      linalg.yield %%y : f32\n  } -> %s\n"
             % (m3, r3, iters(["parallel", "parallel", "reduction"]), T(s3), T((H, S)), T((H, S))))
    body += ("  %%e = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = %s}\n"
             "      ins(%%m, %%mx : %s, %s) outs(%%s0 : %s) {\n"
             "    ^bb0(%%a: f32, %%b: f32, %%o: f32):\n      %%d = arith.subf %%a, %%b : f32\n"
             "      %%y = math.exp %%d : f32\n      linalg.yield %%y : f32\n  } -> %s\n"
             % (m3, r3, m3, iters(["parallel"] * 3), T(s3), T((H, S)), T(s3), T(s3)))
    body += "  %%zi = linalg.fill ins(%%z : f32) outs(%%r0 : %s) -> %s\n" % (T((H, S)), T((H, S)))
    body += ("  %%sm = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%e : %s) outs(%%zi : %s) {\n"
             "    ^bb0(%%a: f32, %%o: f32):\n      %%y = arith.addf %%a, %%o : f32\n"
             "      linalg.yield %%y : f32\n  } -> %s\n"
             % (m3, r3, iters(["parallel", "parallel", "reduction"]), T(s3), T((H, S)), T((H, S))))
    body += ("  %%p = linalg.generic {indexing_maps = [%s, %s, %s], iterator_types = %s}\n"
             "      ins(%%e, %%sm : %s, %s) outs(%%s0 : %s) {\n"
             "    ^bb0(%%a: f32, %%b: f32, %%o: f32):\n      %%y = arith.divf %%a, %%b : f32\n"
             "      linalg.yield %%y : f32\n  } -> %s\n"
             % (m3, r3, m3, iters(["parallel"] * 3), T(s3), T((H, S)), T(s3), T(s3)))
    body += "  %%o0 = tensor.empty() : %s\n" % T(q3)
    body += "  %%oz = linalg.fill ins(%%z : f32) outs(%%o0 : %s) -> %s\n" % (T(q3), T(q3))
    body += ("  %%out = linalg.batch_matmul ins(%%p, %%v : %s, %s) outs(%%oz : %s) -> %s\n"
             % (T(s3), T(q3), T(q3), T(q3)))
    text = func("causal", [("q", T(q3)), ("k", T(q3)), ("v", T(q3))], [("out", T(q3))], body)
    q, _ = ctx.rand(q3)
    k, _ = ctx.rand(q3)
    v, _ = ctx.rand(q3)
    (r,) = ctx.run(text, [q, k, v])
    s = np.einsum("hid,hjd->hij", q.astype(np.float64), k.astype(np.float64)) / math.sqrt(D)
    s = np.where(np.triu(np.ones((S, S), bool), 1), -np.inf, s)
    p = np.exp(s - s.max(axis=2, keepdims=True))
    p /= p.sum(axis=2, keepdims=True)
    assert_close(r, np.einsum("hij,hjd->hid", p, v.astype(np.float64)), k=S)


@test("exp_of_nan_constant")
def _(ctx):
    """exp(x * NaN): every element NaN. The polynomial exp's float-to-int
    step folded a constant NaN to poison and LLVM dropped the stores."""
    n = int(ctx.rng.integers(1, 100))
    body = "  %%e = tensor.empty() : %s\n  %%nan = arith.constant 0x7FC00000 : f32\n" % T((n,))
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%a : %s) outs(%%e : %s) {\n"
             "    ^bb0(%%x: f32, %%o: f32):\n      %%m = arith.mulf %%x, %%nan : f32\n"
             "      %%y = math.exp %%m : f32\n      linalg.yield %%y : f32\n  } -> %s\n"
             % (ident(1), ident(1), iters(["parallel"]), T((n,)), T((n,)), T((n,))))
    text = func("f", [("a", T((n,)))], [("r", T((n,)))], body)
    a, _ = ctx.rand((n,))
    # The output starts finite (not pbc_lib's NaN sentinel): a NaN in every
    # element shows every store happened.
    lib = pbc_lib.compile(text, pbc=ctx.pbc)
    try:
        fn = getattr(lib._dll, "_mlir_ciface_f")
        out = np.full((n,), 7.0, np.float32)
        descs = [pbc_lib.make_descriptor(a), pbc_lib.make_descriptor(out)]
        fn(*[ctypes.byref(d) for d in descs])
    finally:
        lib.close()
    assert np.isnan(out).all(), "outputs left unwritten: %d of %d" % (int((~np.isnan(out)).sum()), n)


@test("exp_range_and_special_values")
def _(ctx):
    """exp over its whole float32 range against numpy, in units in the last
    place: a sweep of [-110, 95] at random points (results from 0 through
    denormals to inf), the edges of overflow and underflow, infinities, NaN
    and zeros; a length that leaves a tail after the vectors. pbc-exp-ldexp
    (the chip's ldexp = avx512, and native, also run on such a chip): within 2
    ulp of the correctly rounded result where it is normal, within 2 denormal
    steps below, and inf, 0 and NaN exactly where numpy has them. Where the
    chip's ldexp is library, MLIR's form: within 8 ulp (5 near overflow),
    results below the normal range may be 0."""
    info = subprocess.run([ctx.pbc, "--target-info"], capture_output=True, text=True).stdout
    how = re.search(r"^\s*ldexp\s*=\s*(\w+)\s*$", info, re.M)
    how = how.group(1) if how else "library"
    for extra in [()] + ([("--chip-set=ldexp=native",)] if how == "avx512" else []):
        exp_case(ctx, how != "library", extra)


def exp_case(ctx, denormals, extra):
    special = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.72, 88.7228, 88.73, 89.0,
                        100.0, 1e10, -1e10, -87.33, -87.34, -100.0, -103.2, -103.9, -104.0,
                        -110.0, 1e-8, -1e-8, 0.5 * np.log(2), -0.5 * np.log(2)], np.float32)
    n = 4096 + 16 * int(ctx.rng.integers(0, 8)) + int(ctx.rng.integers(1, 16))
    a = ctx.rng.uniform(-110.0, 95.0, n).astype(np.float32)
    a[ctx.rng.choice(n, len(special), replace=False)] = special
    body = "  %%e = tensor.empty() : %s\n" % T((n,))
    body += ("  %%r = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
             "      ins(%%a : %s) outs(%%e : %s) {\n"
             "    ^bb0(%%x: f32, %%o: f32):\n      %%y = math.exp %%x : f32\n"
             # a NaN result comes out as 7 (NaN is the harness's unwritten)
             "      %%nan = arith.cmpf uno, %%y, %%y : f32\n"
             "      %%seven = arith.constant 7.0 : f32\n"
             "      %%z = arith.select %%nan, %%seven, %%y : f32\n"
             "      linalg.yield %%z : f32\n  } -> %s\n"
             % (ident(1), ident(1), iters(["parallel"]), T((n,)), T((n,)), T((n,))))
    (r,) = ctx.run(func("f", [("a", T((n,)))], [("r", T((n,)))], body), [a], extra_args=extra)
    r = np.where(r == 7.0, np.float32(np.nan), r)
    with np.errstate(over="ignore"):
        want = np.exp(a.astype(np.float64)).astype(np.float32)
    if not denormals:  # flushed to 0 passes
        flushed = (r == 0) & (want < np.finfo(np.float32).tiny)
        want[flushed] = 0
    same_class = (np.isnan(r) == np.isnan(want)) & (np.isinf(r) == np.isinf(want)) & \
        ((r == 0) == (want == 0))
    assert same_class.all(), "exp(%s) = %s, numpy: %s" % (
        a[~same_class][:4], r[~same_class][:4], want[~same_class][:4])
    finite = np.isfinite(want) & (want != 0)
    # Positive floats are ordered as their bits: the distance is in ulp.
    ulp = np.abs(r[finite].view(np.int32).astype(np.int64) - want[finite].view(np.int32))
    assert ulp.max() <= (2 if denormals else 8), "exp(%s) = %r, numpy %r: %d ulp" % (
        a[finite][ulp.argmax()], r[finite][ulp.argmax()], want[finite][ulp.argmax()], ulp.max())


@test("softmax_1d")
def _(ctx):
    n = int(ctx.rng.integers(1, 300))
    body = "  %%o = tensor.empty() : %s\n" % T((n,))
    body += ("  %%r = linalg.softmax dimension(0) ins(%%a : %s) outs(%%o : %s) -> %s\n"
             % (T((n,)), T((n,)), T((n,))))
    text = func("sm", [("a", T((n,)))], [("r", T((n,)))], body)
    a, _ = ctx.rand((n,), lo=0.1, hi=4.0)
    (r,) = ctx.run(text, [a])
    ex = np.exp(a.astype(np.float64) - a.max())
    assert_close(r, ex / ex.sum(), atol=1e-7)


@test("softmax_of_strided_slice")
def _(ctx):
    """A softmax over every second column: its row reductions read a memref
    whose last dimension is strided (no vector loads there)."""
    R, s = int(ctx.rng.integers(1, 20)), int(ctx.rng.integers(2, 4))
    Cs = 16 * int(ctx.rng.integers(1, 5))  # whole vectors: the vector reduction's case
    C = Cs * s
    body = ("  %%s = tensor.extract_slice %%a[0, 0] [%d, %d] [1, %d] : %s to %s\n"
            % (R, Cs, s, T((R, C)), T((R, Cs))))
    body += "  %%o = tensor.empty() : %s\n" % T((R, Cs))
    body += ("  %%r = linalg.softmax dimension(1) ins(%%s : %s) outs(%%o : %s) -> %s\n"
             % (T((R, Cs)), T((R, Cs)), T((R, Cs))))
    text = func("sm", [("a", T((R, C)))], [("r", T((R, Cs)))], body)
    a, _ = ctx.rand((R, C), lo=0.1, hi=4.0)
    (r,) = ctx.run(text, [a])
    x = a[:, ::s].astype(np.float64)
    ex = np.exp(x - x.max(axis=1, keepdims=True))
    assert_close(r, ex / ex.sum(axis=1, keepdims=True), atol=1e-7)


@test("pack_mmt4d_unpack")
def _(ctx):
    """linalg.pack of A and B into tiles, linalg.mmt4d, linalg.unpack: the
    data-tiled matmul upstream MLIR's CPU tests write (pack and unpack are
    lowered to pad / transpose / reshapes in S1)."""
    M, N, K = (int(ctx.rng.integers(1, 40)) for _ in range(3))
    m0, n0, k0 = pick(ctx.rng, [4, 8]), pick(ctx.rng, [4, 8, 16]), pick(ctx.rng, [1, 2, 4])
    Mt, Nt, Kt = -(-M // m0), -(-N // n0), -(-K // k0)
    body = "  %z = arith.constant 0.0 : f32\n"
    body += "  %%pa0 = tensor.empty() : %s\n" % T((Mt, Kt, m0, k0))
    body += ("  %%pa = linalg.pack %%a padding_value(%%z : f32) inner_dims_pos = [0, 1] "
             "inner_tiles = [%d, %d] into %%pa0 : %s -> %s\n" % (m0, k0, T((M, K)), T((Mt, Kt, m0, k0))))
    body += "  %%pb0 = tensor.empty() : %s\n" % T((Nt, Kt, n0, k0))
    body += ("  %%pb = linalg.pack %%b padding_value(%%z : f32) outer_dims_perm = [1, 0] "
             "inner_dims_pos = [1, 0] inner_tiles = [%d, %d] into %%pb0 : %s -> %s\n"
             % (n0, k0, T((K, N)), T((Nt, Kt, n0, k0))))
    body += "  %%c0 = tensor.empty() : %s\n" % T((Mt, Nt, m0, n0))
    body += "  %%cz = linalg.fill ins(%%z : f32) outs(%%c0 : %s) -> %s\n" % ((T((Mt, Nt, m0, n0)),) * 2)
    body += ("  %%c = linalg.mmt4d ins(%%pa, %%pb : %s, %s) outs(%%cz : %s) -> %s\n"
             % (T((Mt, Kt, m0, k0)), T((Nt, Kt, n0, k0)), T((Mt, Nt, m0, n0)), T((Mt, Nt, m0, n0))))
    body += "  %%u0 = tensor.empty() : %s\n" % T((M, N))
    body += ("  %%r = linalg.unpack %%c inner_dims_pos = [0, 1] inner_tiles = [%d, %d] into %%u0 "
             ": %s -> %s\n" % (m0, n0, T((Mt, Nt, m0, n0)), T((M, N))))
    text = func("mm", [("a", T((M, K))), ("b", T((K, N)))], [("r", T((M, N)))], body)
    a, _ = ctx.rand((M, K))
    b, _ = ctx.rand((K, N))
    (r,) = ctx.run(text, [a, b])
    assert_close(r, a.astype(np.float64) @ b.astype(np.float64), k=K)


@test("linalg_elementwise_named")
def _(ctx):
    shape = rshape(ctx.rng, 2, 1, 40)
    kind = pick(ctx.rng, ["add", "sub", "mul", "max_signed"])
    body = "  %%e = tensor.empty() : %s\n" % T(shape)
    body += ("  %%r = linalg.elementwise kind=#linalg.elementwise_kind<%s> ins(%%a, %%b : %s, %s) "
             "outs(%%e : %s) -> %s\n" % (kind, T(shape), T(shape), T(shape), T(shape)))
    text = func("ew", [("a", T(shape)), ("b", T(shape))], [("r", T(shape))], body)
    a, _ = ctx.rand(shape)
    b, _ = ctx.rand(shape)
    (r,) = ctx.run(text, [a, b])
    f = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max_signed": np.maximum}[kind]
    assert_close(r, f(a.astype(np.float64), b.astype(np.float64)))


@test("entry_public_and_main")
def _(ctx):
    """`func.func public @f` (as JAX writes entries) gets its C interface; an
    entry named @main keeps `_mlir_ciface_main` but exports no `main`."""
    n = int(ctx.rng.integers(1, 50))
    for name, vis in (("f", "public "), ("main", "")):
        text = ("func.func %s@%s(%%a: %s) -> %s {\n  %%e = tensor.empty() : %s\n"
                "  %%r = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}\n"
                "      ins(%%a : %s) outs(%%e : %s) {\n"
                "    ^bb0(%%x: f32, %%o: f32):\n      %%y = arith.addf %%x, %%x : f32\n"
                "      linalg.yield %%y : f32\n  } -> %s\n  return %%r : %s\n}\n"
                % (vis, name, T((n,)), T((n,)), T((n,)), ident(1), ident(1), iters(["parallel"]),
                   T((n,)), T((n,)), T((n,)), T((n,))))
        a, _ = ctx.rand((n,))
        lib = pbc_lib.compile(text, pbc=ctx.pbc)
        try:
            (r,) = lib.call(name, [a], [((n,), np.float32)])
            if name == "main":
                assert not hasattr(lib._dll, "main"), "the library exports `main`"
        finally:
            lib.close()
        assert_close(r, 2.0 * a.astype(np.float64))


if __name__ == "__main__":
    sys.exit(harness.main(__doc__.splitlines()[1]))
