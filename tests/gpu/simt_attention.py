#!/usr/bin/env python3
"""Numbers from pbc's fused attention kernels (nvgpu: mma.sync block tiles;
amdgpu: a wave of MFMA or WMMA per 16 query rows), without a GPU: softmax(f(Q Kᵀ)) V programs of fixed and random shapes are compiled to
S3, checked to have become one kernel (one gpu.launch, no score buffer),
run in the SIMT simulator (simt.py) under its two schedules and compared
with numpy (float64 from the same f16 inputs).

f is any mix of a scale, an additive mask tensor and a causal mask (an
index comparison); queries and keys may differ in number and need not be
multiples of the kernel's 64-row tiles (tails); head dimensions 16..128;
f16 or bf16 operands. A quarter of the random programs take the form
frameworks export instead (framework_mlir: f16 scores and softmax, Kᵀ
materialized by linalg.transpose or read transposed).

  simt_attention.py --pbc PBC [--mlir-opt MLIR_OPT] [--target nvgpu|amdgpu]
                    [--chip sm_80|gfx90a|gfx942|gfx1100] [--only NAME]
                    [--random N] [--seed S] [--sms N]

On a GPU, the same cases (same --seed and --random) compiled here and run
there against numpy:

  here:   simt_attention.py --pbc PBC --chip sm_90 --random N --seed S --record DIR
  there:  simt_attention.py --chip sm_90 --random N --seed S --replay DIR
"""
import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "e2e"))
import simt  # noqa: E402


def attention_mlir(g, m, n, d, dv, scale, mask, causal, out, ab="f16"):
    """Q [g,]m x d, K [g,]n x d, V [g,]n x dv (ab: f16 or bf16); scores f32;
    O ab or f32."""
    b = "b, " if g else ""
    lead = "%dx" % g if g else ""
    sh = lambda *dims: lead + "x".join(str(x) for x in dims)
    rank = 3 if g else 2
    dims3 = ", ".join((["b"] if g else []) + ["i", "j"])
    par = lambda k: ", ".join(['"parallel"'] * k)
    ident = "affine_map<(%s) -> (%s)>" % (dims3, dims3)
    lines = []
    add = lines.append
    args = ["%%q: tensor<%sx%s>" % (sh(m, d), ab), "%%k: tensor<%sx%s>" % (sh(n, d), ab),
            "%%v: tensor<%sx%s>" % (sh(n, dv), ab)]
    if mask:
        args.append("%%mask: tensor<%dx%dxf32>" % (m, n))
    add("func.func @f(%s) -> tensor<%sx%s> {" % (", ".join(args), sh(m, dv), out))
    add("  %z = arith.constant 0.0 : f32")
    add("  %ninf = arith.constant 0xFF800000 : f32")
    add("  %%es = tensor.empty() : tensor<%sxf32>" % sh(m, n))
    add("  %%fs = linalg.fill ins(%%z : f32) outs(%%es : tensor<%sxf32>) -> tensor<%sxf32>" % (sh(m, n), sh(m, n)))
    qk = ("[affine_map<({b}i, j, k) -> ({b}i, k)>, affine_map<({b}i, j, k) -> ({b}j, k)>, "
          "affine_map<({b}i, j, k) -> ({b}i, j)>]").format(b=b)
    add("  %%s0 = linalg.generic {indexing_maps = %s, iterator_types = [%s, \"reduction\"]}" % (qk, par(rank)))
    add("      ins(%%q, %%k : tensor<%sx%s>, tensor<%sx%s>) outs(%%fs : tensor<%sxf32>) {" % (sh(m, d), ab, sh(n, d), ab, sh(m, n)))
    add("  ^bb0(%%x: %s, %%y: %s, %%acc: f32):" % (ab, ab))
    add("    %%xf = arith.extf %%x : %s to f32" % ab)
    add("    %%yf = arith.extf %%y : %s to f32" % ab)
    add("    %p = arith.mulf %xf, %yf : f32")
    add("    %a = arith.addf %acc, %p : f32")
    add("    linalg.yield %a : f32")
    add("  } -> tensor<%sxf32>" % sh(m, n))
    cur = "%s0"
    step = 0

    def pointwise(body, extra_in=None):
        nonlocal cur, step
        step += 1
        ins = "%s" % cur
        tys = "tensor<%sxf32>" % sh(m, n)
        maps = [ident]
        if extra_in:
            ins += ", " + extra_in[0]
            tys += ", " + extra_in[1]
            maps.append(extra_in[2])
        maps.append(ident)
        add("  %%e%d = tensor.empty() : tensor<%sxf32>" % (step, sh(m, n)))
        add("  %%s%d = linalg.generic {indexing_maps = [%s], iterator_types = [%s]}" % (step, ", ".join(maps), par(rank)))
        add("      ins(%s : %s) outs(%%e%d : tensor<%sxf32>) {" % (ins, tys, step, sh(m, n)))
        add("  ^bb0(%%x: f32, %s%%o: f32):" % ("%w: f32, " if extra_in else ""))
        for l in body:
            add("    " + l)
        add("  } -> tensor<%sxf32>" % sh(m, n))
        cur = "%%s%d" % step

    if scale is not None:
        add("  %%scale = arith.constant %.9e : f32" % scale)
        pointwise(["%r = arith.mulf %x, %scale : f32", "linalg.yield %r : f32"])
    if mask:
        mmap = "affine_map<(%s) -> (i, j)>" % dims3
        pointwise(["%r = arith.addf %x, %w : f32", "linalg.yield %r : f32"],
                  ("%mask", "tensor<%dx%dxf32>" % (m, n), mmap))
    if causal:
        ii, jj = (1, 2) if g else (0, 1)
        pointwise(["%%i = linalg.index %d : index" % ii, "%%j = linalg.index %d : index" % jj,
                   "%c = arith.cmpi ugt, %j, %i : index",
                   "%r = arith.select %c, %ninf, %x : f32", "linalg.yield %r : f32"])
    add("  %%ep = tensor.empty() : tensor<%sxf32>" % sh(m, n))
    add("  %%p = linalg.softmax dimension(%d) ins(%s : tensor<%sxf32>) outs(%%ep : tensor<%sxf32>) -> tensor<%sxf32>"
        % (rank - 1, cur, sh(m, n), sh(m, n), sh(m, n)))
    def truncate(src, dst, shape, to):
        add("  %%%s_e = tensor.empty() : tensor<%sx%s>" % (dst, shape, to))
        add("  %%%s = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]}" % (dst, ident, ident, par(rank)))
        add("      ins(%%%s : tensor<%sxf32>) outs(%%%s_e : tensor<%sx%s>) {" % (src, shape, dst, shape, to))
        add("  ^bb0(%%x: f32, %%w: %s):" % to)
        add("    %%t = arith.truncf %%x : f32 to %s" % to)
        add("    linalg.yield %%t : %s" % to)
        add("  } -> tensor<%sx%s>" % (shape, to))

    truncate("p", "ph", sh(m, n), ab)
    # bf16 outputs: P V accumulates in f32 and an epilogue narrows it (as
    # frameworks write it; bf16 accumulation would lose 1-3% over 100+
    # keys). f16 outputs accumulate in f16 itself (the kernel uses f32).
    acc = "f32" if ab == "bf16" else out
    add("  %%zo = arith.constant 0.0 : %s" % acc)
    add("  %%eo = tensor.empty() : tensor<%sx%s>" % (sh(m, dv), acc))
    add("  %%fo = linalg.fill ins(%%zo : %s) outs(%%eo : tensor<%sx%s>) -> tensor<%sx%s>" % (acc, sh(m, dv), acc, sh(m, dv), acc))
    op = "linalg.batch_matmul" if g else "linalg.matmul"
    add("  %%o = %s ins(%%ph, %%v : tensor<%sx%s>, tensor<%sx%s>) outs(%%fo : tensor<%sx%s>) -> tensor<%sx%s>"
        % (op, sh(m, n), ab, sh(n, dv), ab, sh(m, dv), acc, sh(m, dv), acc))
    res = "%o"
    if acc != out:
        truncate("o", "on", sh(m, dv), out)
        res = "%on"
    add("  return %s : tensor<%sx%s>" % (res, sh(m, dv), out))
    add("}")
    return "\n".join(lines) + "\n"


def framework_mlir(g, m, n, d, scale, causal, transpose_k):
    """The form frameworks export for f16 attention (the differential
    tester's too): Kᵀ by linalg.transpose (or read transposed), f16 scores,
    linalg.softmax in f16, P V into f16, no truncation."""
    lead = (g,) if g else ()
    t = lambda *dims: "tensor<%sxf16>" % "x".join(str(x) for x in lead + dims)
    rank = len(lead) + 2
    ids = ", ".join("d%d" % i for i in range(rank))
    ident = "affine_map<(%s) -> (%s)>" % (ids, ids)
    mm = "linalg.batch_matmul" if g else "linalg.matmul"
    lines = ["func.func @f(%%q: %s, %%k: %s, %%v: %s) -> %s {" % (t(m, d), t(n, d), t(n, d), t(m, d)),
             "  %z = arith.constant 0.0 : f16",
             "  %ninf = arith.constant 0xFC00 : f16",
             "  %%es = tensor.empty() : %s" % t(m, n),
             "  %%fs = linalg.fill ins(%%z : f16) outs(%%es : %s) -> %s" % (t(m, n), t(m, n))]
    if transpose_k:
        perm = ", ".join(str(i) for i in list(range(rank - 2)) + [rank - 1, rank - 2])
        lines += ["  %%ek = tensor.empty() : %s" % t(d, n),
                  "  %%kt = linalg.transpose ins(%%k : %s) outs(%%ek : %s) permutation = [%s]"
                  % (t(n, d), t(d, n), perm),
                  "  %%s = %s ins(%%q, %%kt : %s, %s) outs(%%fs : %s) -> %s"
                  % (mm, t(m, d), t(d, n), t(m, n), t(m, n))]
    else:
        b = "b, " if g else ""
        lines += ["  %%s = linalg.generic {indexing_maps = [affine_map<(%si, j, k) -> (%si, k)>, "
                  "affine_map<(%si, j, k) -> (%sj, k)>, affine_map<(%si, j, k) -> (%si, j)>], "
                  "iterator_types = [%s\"parallel\", \"parallel\", \"reduction\"]} ins(%%q, %%k : %s, %s) "
                  "outs(%%fs : %s) {" % (b, b, b, b, b, b, "\"parallel\", " if g else "", t(m, d),
                                         t(n, d), t(m, n)),
                  "  ^bb0(%x: f16, %y: f16, %acc: f16):",
                  "    %p = arith.mulf %x, %y : f16", "    %a = arith.addf %acc, %p : f16",
                  "    linalg.yield %a : f16", "  } -> %s" % t(m, n)]
    body = ["%r = arith.mulf %x, %c : f16", "linalg.yield %r : f16"]
    if causal:
        body = ["%r0 = arith.mulf %x, %c : f16",
                "%%i = linalg.index %d : index" % (rank - 2), "%%j = linalg.index %d : index" % (rank - 1),
                "%gt = arith.cmpi ugt, %j, %i : index", "%r = arith.select %gt, %ninf, %r0 : f16",
                "linalg.yield %r : f16"]
    lines += ["  %%c = arith.constant %.6e : f16" % scale,
              "  %%e1 = tensor.empty() : %s" % t(m, n),
              "  %%x1 = linalg.generic {indexing_maps = [%s, %s], iterator_types = [%s]} ins(%%s : %s) "
              "outs(%%e1 : %s) {" % (ident, ident, ", ".join(['"parallel"'] * rank), t(m, n), t(m, n)),
              "  ^bb0(%x: f16, %o: f16):"] + ["    " + l for l in body] + ["  } -> %s" % t(m, n)]
    lines += ["  %%ep = tensor.empty() : %s" % t(m, n),
              "  %%p = linalg.softmax dimension(%d) ins(%%x1 : %s) outs(%%ep : %s) -> %s"
              % (rank - 1, t(m, n), t(m, n), t(m, n)),
              "  %%eo = tensor.empty() : %s" % t(m, d),
              "  %%fo = linalg.fill ins(%%z : f16) outs(%%eo : %s) -> %s" % (t(m, d), t(m, d)),
              "  %%o = %s ins(%%p, %%v : %s, %s) outs(%%fo : %s) -> %s"
              % (mm, t(m, n), t(n, d), t(m, d), t(m, d)),
              "  return %%o : %s" % t(m, d), "}"]
    return "\n".join(lines) + "\n"


def framework_case(g, m, n, d, scale, causal=False, transpose_k=True):
    text = framework_mlir(g, m, n, d, scale, causal, transpose_k)

    def make(rng):
        lead = (g,) if g else ()
        Q, K, V = (rng.standard_normal(lead + s).astype(np.float16) for s in ((m, d), (n, d), (n, d)))
        # The program rounds the scores to f16 (then scales them in f16).
        s = np.einsum("...id,...jd->...ij", Q.astype(np.float64), K.astype(np.float64))
        s = (s.astype(np.float16) * np.float16(scale)).astype(np.float64)
        if causal:
            s = np.where(np.arange(n)[None, :] > np.arange(m)[:, None], -np.inf, s)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p = (p / p.sum(axis=-1, keepdims=True)).astype(np.float16).astype(np.float64)
        O0 = rng.standard_normal(lead + (m, d)).astype(np.float16)
        return [Q, K, V, O0], np.einsum("...ij,...jd->...id", p, V.astype(np.float64))
    return text, make, "f16"


def reference(Q, K, V, scale, mask, causal):
    s = np.einsum("...id,...jd->...ij", Q.astype(np.float64), K.astype(np.float64))
    if scale is not None:
        s = s * scale
    if mask is not None:
        s = s + mask
    if causal:
        m, n = s.shape[-2:]
        s = np.where(np.arange(n)[None, :] > np.arange(m)[:, None], -np.inf, s)
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p = p / p.sum(axis=-1, keepdims=True)
    return np.einsum("...ij,...jd->...id", p, V.astype(np.float64))


def make_case(g, m, n, d, dv, scale=None, mask=False, causal=False, out="f32", ab="f16"):
    text = attention_mlir(g, m, n, d, dv, scale, mask, causal, out, ab)

    def make(rng):
        lead = (g,) if g else ()
        Q, K, V = (rng.standard_normal(lead + s).astype(np.float32)
                   for s in ((m, d), (n, d), (n, dv)))
        if ab == "bf16":  # bit patterns for the kernel, their values for numpy
            args = [simt.f32_to_bf16(x) for x in (Q, K, V)]
            Q, K, V = (simt.bf16_to_f32(x) for x in args)
        else:
            Q, K, V = (x.astype(np.float16) for x in (Q, K, V))
            args = [Q, K, V]
        M = None
        if mask:
            M = (rng.standard_normal((m, n)) * 2).astype(np.float32)
            args.append(M)
        O0 = rng.standard_normal(lead + (m, dv)).astype(np.float16 if out == "f16" else np.float32)
        if out == "bf16":
            O0 = simt.f32_to_bf16(O0)
        return args + [O0], reference(Q, K, V, scale, M, causal)
    return text, make, out


CASES = {
    # One 64-row block, one key block: the unmasked core.
    "single_block": make_case(0, 64, 64, 32, 32),
    # Batched, scaled, several key blocks (double buffering), f16 out.
    "batched_scaled": make_case(2, 64, 192, 64, 64, scale=0.125, out="f16"),
    # Tails: queries and keys not multiples of 64, queries != keys.
    "tails": make_case(0, 77, 100, 16, 48, scale=0.25),
    # Causal (index comparison) and an additive mask tensor.
    "causal": make_case(1, 96, 96, 32, 32, scale=0.2, causal=True),
    "mask": make_case(0, 40, 130, 32, 16, mask=True),
    # The largest head dimension.
    "d128": make_case(0, 64, 64, 128, 128, scale=0.088),
    # bf16 Q, K, V (P in bf16), bf16 or f32 out.
    "bf16": make_case(2, 70, 130, 64, 32, scale=0.125, causal=True, out="bf16", ab="bf16"),
    "bf16_f32": make_case(0, 64, 64, 32, 64, mask=True, ab="bf16"),
    # f16 scores and softmax, Kᵀ materialized by linalg.transpose (causal)
    # or read transposed: the frameworks' form.
    "framework_kt": framework_case(2, 64, 100, 64, 0.125, causal=True),
    "framework": framework_case(0, 50, 64, 32, 0.177, transpose_k=False),
}


def random_case(rng):
    if rng.random() < 0.25:
        g, m, n = int(rng.choice([0, 1, 2, 3])), int(rng.integers(1, 161)), int(rng.integers(1, 200))
        d = 16 * int(rng.integers(1, 9))
        causal, kt = bool(rng.random() < 0.4) and m <= n, bool(rng.random() < 0.6)
        scale = float(rng.uniform(0.05, 0.3))
        name = "framework g=%d m=%d n=%d d=%d scale=%.3f causal=%s transposed K=%s" % (
            g, m, n, d, scale, causal, kt)
        return name, framework_case(g, m, n, d, scale, causal, kt)
    g = int(rng.choice([0, 1, 2, 3]))
    m, n = int(rng.integers(1, 161)), int(rng.integers(1, 200))
    d, dv = (16 * int(rng.integers(1, 9)) for _ in range(2))
    scale = float(rng.uniform(0.05, 0.5)) if rng.random() < 0.7 else None
    mask = bool(rng.random() < 0.3)
    causal = bool(rng.random() < 0.3) and m <= n
    ab = str(rng.choice(["f16", "bf16"]))
    out = str(rng.choice(["f32", ab]))
    name = "g=%d m=%d n=%d d=%d dv=%d scale=%s mask=%s causal=%s %s -> %s" % (
        g, m, n, d, dv, "-" if scale is None else "%.3f" % scale, mask, causal, ab, out)
    return name, make_case(g, m, n, d, dv, scale, mask, causal, out, ab)


CHIP_SET = []  # --chip-set overrides (--sms)

# Relative to the largest |O|: P enters P V rounded to f16 (bf16: 8 bits of
# mantissa), and so does O when it is stored narrow.
TOL = {("f16", "f32"): 3e-3, ("f16", "f16"): 6e-3, ("bf16", "f32"): 8e-3, ("bf16", "bf16"): 8e-3}


def ab_of(text):
    return "bf16" if "%q: tensor<" in text and "xbf16>" in text.split("%k")[0] else "f16"


def tol_of(text, out):
    # The frameworks' form accumulates Q Kᵀ and P V in f16 (so does the
    # cpu stand-in that --record runs; the kernel accumulates in f32).
    if "linalg.softmax" in text and "tensor<" in text and "xf32>" not in text:
        return 2e-2
    return TOL[(ab_of(text), out)]


def as_f64(x, out):
    return (simt.bf16_to_f32(x) if out == "bf16" else x).astype(np.float64)


# Lanes per warp (wave) by chip: CDNA's MFMA runs wave 64.
WAVE = {"gfx90a": 64, "gfx942": 64}


def run_case(name, case, pbc, mlir_opt, chip, rng, target="nvgpu"):
    text, make, out = case
    generic, problem = simt.s3_generic(pbc, mlir_opt, chip, text, CHIP_SET, target=target)
    if problem:
        return problem
    # One kernel, and no buffer of scores: the fusion happened.
    if generic.count('"gpu.launch"') != 1 or "memref.alloc" in generic:
        return "not fused: %d launches, %s" % (
            generic.count('"gpu.launch"'),
            "a buffer allocated" if "memref.alloc" in generic else "no allocation")
    func = list(simt.parse_module(generic).values())[0]
    args, expect = make(rng)
    tol = tol_of(text, out)
    for order, late in (("forward", True), ("reverse", False)):
        run = [x.copy() for x in args]
        try:
            simt.run_function(func, run, order=order, late_copies=late,
                              warp=WAVE.get(chip, simt.WARP))
        except RuntimeError as e:
            return "%s warps: %s" % (order, e)
        got = as_f64(run[-1], out)
        err = np.max(np.abs(got - expect)) / max(np.max(np.abs(expect)), 1e-30)
        if not np.isfinite(err) or err > tol:
            bad = np.argwhere(~np.isclose(got, expect, rtol=tol, atol=tol * np.max(np.abs(expect))))
            return "%s warps, %s copies: relative error %.3g (%d elements off, first at %s)" % (
                order, "late" if late else "eager", err, len(bad), tuple(bad[0]) if len(bad) else "-")
    return None


def run_on_device(name, case, pbc, chip, rng, target="nvgpu"):
    """--record (compile only) or --replay (run the recorded library)."""
    import pbc_lib
    text, make, out = case
    args, expect = make(rng)
    try:
        pbc_lib.TARGET_ARGS = ["--target=" + target, "--chip=" + chip] + CHIP_SET
        lib = pbc_lib.compile(text, pbc)
    except pbc_lib.CompiledOnly:
        return None
    except pbc_lib.CompileError as e:
        return "pbc failed: %s" % str(e).splitlines()[0]
    dtype = {"f16": np.float16, "bf16": pbc_lib.BF16}.get(out, np.float32)
    try:
        (got,) = lib.call("f", args[:-1], [(args[-1].shape, dtype)], check_inputs=False)
    except pbc_lib.CallError as e:
        return "call failed: %s" % e
    finally:
        lib.close()
    tol = tol_of(text, out)
    got = as_f64(got, out)
    err = np.max(np.abs(got - expect)) / max(np.max(np.abs(expect)), 1e-30)
    if not np.isfinite(err) or err > tol:
        return "relative error %.3g" % err
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--pbc", help="required unless --replay")
    p.add_argument("--mlir-opt", default="/usr/lib/llvm-22/bin/mlir-opt")
    p.add_argument("--target", choices=("nvgpu", "amdgpu"), default="nvgpu")
    p.add_argument("--chip", help="default sm_80 (nvgpu), gfx90a (amdgpu)")
    p.add_argument("--only")
    p.add_argument("--random", type=int, default=0, help="also N programs of random shape")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--sms", type=int, help="the chip's SM count instead of its own (the kernel "
                   "takes 128 rows per block only where blocks of 128 cover the SMs)")
    p.add_argument("--record", metavar="DIR", help="compile the libraries into DIR only")
    p.add_argument("--replay", metavar="DIR", help="run the libraries --record kept in DIR")
    p.set_defaults(pbc=None)
    args = p.parse_args()
    args.chip = args.chip or ("gfx90a" if args.target == "amdgpu" else "sm_80")
    if args.sms:
        CHIP_SET.append("--chip-set=cores=%d" % args.sms)
    if args.record or args.replay:
        import pbc_lib
        pbc_lib.prebuilt_setup("record" if args.record else "replay",
                               args.record or args.replay, os.path.abspath(args.pbc or "pbc"),
                               args.target)
        args.pbc = os.path.abspath(args.pbc or "pbc")
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    print("seed %d" % seed)
    rng = np.random.default_rng(seed)
    failed = 0
    cases = [(k, v) for k, v in CASES.items() if not args.only or k == args.only]
    cases += [random_case(rng) for _ in range(args.random)]
    for name, case in cases:
        t0 = time.time()
        if args.record or args.replay:
            problem = run_on_device(name, case, args.pbc, args.chip, rng, args.target)
        else:
            problem = run_case(name, case, args.pbc, args.mlir_opt, args.chip, rng, args.target)
        print(("FAIL %s: %s" % (name, problem)) if problem else
              "PASS %s (%.1f s)" % (name, time.time() - t0), flush=True)
        failed += bool(problem)
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
