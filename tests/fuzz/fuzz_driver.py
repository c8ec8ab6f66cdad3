#!/usr/bin/python3
"""Mutation fuzzing of the pbc driver: mutants of valid programs (the
examples, the test inputs, random programs from tests/differential) are fed
to `pbc` on every target; each run is classified by how pbc ended.

    /usr/bin/python3 tests/fuzz/fuzz_driver.py --pbc build/bin/pbc \\
        [--seed S] [--count N] [--targets cpu,nvgpu,amdgpu] [--run-share 0.1] [--lib-share 0.15]
        [--out DIR]

Classes:
  ok / error     pbc compiled it, or rejected it with exit 1 or 2 (a clean
                 error: every diagnostic located, file:line:col)
  unlocated      exit 1 with an error that names no location in the input
  contained      exit 70: pbc caught a crash of MLIR/LLVM and wrote a
                 reproducer; replayed with `pbc-opt -p`, it must crash again
                 (or fail with a located error) -- else `no-replay`
  uncontained    pbc died of a signal, or any other exit status
  run-crash      with --run: the compiled program crashed (exit 71)
  mismatch       with --run --check: pbc's code and its naive reference
                 disagree (exit 3)
  hang           no exit within the timeout
  slow-run       --run of a program with tensors of over 2^22 elements that
                 did not finish within the timeout (not a failure)
The bar: no uncontained, run-crash, hang or no-replay. Mutants of those
classes are saved under --out (with the command that reproduces them).
Ends with "N passed, N failed" and exits 1 on a failure.
"""

import argparse
import collections
import concurrent.futures
import glob
import os
import random
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "differential"))

BAD = ("uncontained", "run-crash", "hang", "no-replay", "unlocated")

EDGE_NUMBERS = ("0", "1", "-1", "2", "3", "7", "64", "65535", "2147483647", "2147483648",
                "4294967296", "4611686018427387904", "9223372036854775807",
                "-9223372036854775808", "18446744073709551616", "1e309", "-0.0", "nan")
TYPES = ("f32", "f16", "bf16", "f64", "i1", "i8", "i32", "i64", "index", "f8E4M3FN", "complex<f32>")
OPS = ("linalg.matmul", "linalg.batch_matmul", "linalg.generic", "linalg.fill", "linalg.transpose",
       "linalg.broadcast", "linalg.reduce", "linalg.softmax", "tensor.empty", "tensor.pad",
       "tensor.extract_slice", "tensor.insert_slice", "tensor.expand_shape", "tensor.collapse_shape",
       "arith.addf", "arith.mulf", "arith.addi", "arith.select", "arith.cmpi", "math.exp",
       "linalg.conv_2d_nhwc_hwcf", "linalg.pooling_nhwc_max", "tosa.add", "tosa.matmul",
       "linalg.matvec", "linalg.depthwise_conv_2d_nhwc_hwc", "tensor.concat", "linalg.pack")


# ---------------------------------------------------------------- seeds

def seed_corpus(n_random, rng_seed):
    """(name, text) of valid programs to mutate."""
    files = sorted(glob.glob(os.path.join(ROOT, "examples", "*.mlir")) +
                   glob.glob(os.path.join(ROOT, "tests", "gpu", "inputs", "*.mlir")) +
                   glob.glob(os.path.join(ROOT, "tests", "differential", "regressions", "*.mlir")))
    corpus = []
    for f in files:
        with open(f) as fh:
            text = fh.read()
        if "func.func" in text and "RUN:" not in text:
            corpus.append((os.path.relpath(f, ROOT), text))
    try:
        import numpy as np
        import progen
        for k in range(n_random):
            p = progen.generate(np.random.default_rng([rng_seed, k]), max_ops=4)
            corpus.append(("progen:%d:%d" % (rng_seed, k), progen.module([p.emit("f")])))
    except ImportError:
        pass
    return corpus


# ---------------------------------------------------------------- mutations

NUM = re.compile(r"(?<![\w#%@.])-?\d+(\.\d+)?(e[+-]?\d+)?(?![\w.])")
TYPE_RE = re.compile(r"\b(f32|f16|bf16|f64|i1|i8|i32|i64|index)\b")
OP_RE = re.compile(r"\b(linalg|tensor|arith|math|tosa)\.\w+")
SHAPE_RE = re.compile(r"(tensor<)((?:\d+x)+)")


def m_number(r, t):
    ms = list(NUM.finditer(t))
    if not ms:
        return None
    m = r.choice(ms)
    return t[:m.start()] + r.choice(EDGE_NUMBERS) + t[m.end():]


def m_dim(r, t):
    ms = list(SHAPE_RE.finditer(t))
    if not ms:
        return None
    m = r.choice(ms)
    dims = m.group(2).split("x")[:-1]
    k = r.randrange(len(dims))
    dims[k] = r.choice(("0", "1", "3", "2147483648", "4611686018427387904", "65536", "?"))
    return t[:m.start(2)] + "x".join(dims) + "x" + t[m.end(2):]


def m_dim_all(r, t):
    """One extent changed wherever it appears in a shape: the program often
    stays valid, at an odd or huge size."""
    dims = sorted({d for m in SHAPE_RE.finditer(t) for d in m.group(2).split("x")[:-1]})
    if not dims:
        return None
    old = r.choice(dims)
    new = r.choice(("1", "2", "3", "5", "7", "13", "17", "31", "33", "127", "129", "1000", "4099",
                    "65536", "1048576", "2147483648"))
    return SHAPE_RE.sub(lambda m: m.group(1) + "x".join(
        new if d == old else d for d in m.group(2).split("x")[:-1]) + "x", t)


def m_batch(r, t):
    """One leading size made `?` wherever it leads a shape: a dynamic
    batch, which --emit=lib compiles once for every batch or names what
    keeps it from that (a static tensor.empty left is a verifier's error)."""
    leads = sorted({m.group(2).split("x")[0] for m in SHAPE_RE.finditer(t)})
    if not leads:
        return None
    old = r.choice(leads)
    return SHAPE_RE.sub(lambda m: m.group(1) + (
        "?x" + m.group(2)[len(old) + 1:] if m.group(2).split("x")[0] == old else m.group(2)), t)


def m_type(r, t):
    ms = list(TYPE_RE.finditer(t))
    if not ms:
        return None
    m = r.choice(ms)
    return t[:m.start()] + r.choice(TYPES) + t[m.end():]


def m_type_all(r, t):
    a, b = r.choice(TYPES[:8]), r.choice(TYPES[:8])
    return re.sub(r"\b%s\b" % a, b, t)


def m_op(r, t):
    ms = list(OP_RE.finditer(t))
    if not ms:
        return None
    m = r.choice(ms)
    return t[:m.start()] + r.choice(OPS) + t[m.end():]


def _lines(t):
    return t.split("\n")


def m_delete_line(r, t):
    ls = _lines(t)
    del ls[r.randrange(len(ls))]
    return "\n".join(ls)


def m_dup_line(r, t):
    ls = _lines(t)
    k = r.randrange(len(ls))
    ls.insert(r.randrange(len(ls)), ls[k])
    return "\n".join(ls)


def m_swap_lines(r, t):
    ls = _lines(t)
    i, j = r.randrange(len(ls)), r.randrange(len(ls))
    ls[i], ls[j] = ls[j], ls[i]
    return "\n".join(ls)


def m_bytes(r, t):
    b = bytearray(t.encode())
    for _ in range(r.randint(1, 4)):
        k = r.randrange(len(b))
        op = r.randrange(3)
        if op == 0:
            del b[k]
        elif op == 1:
            b.insert(k, r.choice(b"{}[]()<>:,%@#=\"\\x0123456789-+ \n\x00\xff"))
        else:
            b[k] = r.randrange(256)
    return b.decode(errors="replace")


def m_truncate(r, t):
    return t[:r.randrange(len(t))]


def m_nest(r, t):
    depth = r.choice((100, 1000, 5000, 20000))
    open_, close = r.choice((("[", "]"), ("(", ")"), ("{a = ", "}"), ("array<i64: ", ">")))
    k = r.randrange(len(t))
    return t[:k] + open_ * depth + close * depth + t[k:]


def m_perm(r, t):
    ms = list(re.finditer(r"(permutation|dimensions) = \[([^\]]*)\]", t))
    if not ms:
        return None
    m = r.choice(ms)
    new = ", ".join(str(r.choice((-1, 0, 0, 1, 1, 2, 3, 7, 64, 2 ** 40)))
                    for _ in range(r.randint(0, 5)))
    return t[:m.start(2)] + new + t[m.end(2):]


def m_map(r, t):
    ms = list(re.finditer(r"affine_map<\(([^)]*)\) -> \(([^)]*)\)>", t))
    if not ms:
        return None
    m = r.choice(ms)
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    res = [x.strip() for x in m.group(2).split(",") if x.strip()]
    op = r.randrange(4)
    if op == 0 and res:
        del res[r.randrange(len(res))]
    elif op == 1 and dims:
        res.insert(r.randrange(len(res) + 1), r.choice(dims))
    elif op == 2 and res and dims:
        res[r.randrange(len(res))] = "%s * %d + %s floordiv 2" % (r.choice(dims), r.randint(-3, 3),
                                                                   r.choice(dims))
    elif dims:
        res = list(reversed(res))
    return t[:m.start(2)] + ", ".join(res) + t[m.end(2):]


def m_name(r, t):
    ms = list(re.finditer(r"@(\w+)", t))
    if not ms:
        return None
    m = r.choice(ms)
    name = r.choice(("main", "a" * r.choice((255, 256, 1023, 1024, 5000)), "x.y", "0f",
                     "_mlir_ciface_f", "malloc", "\"sp ace\""))
    return t[:m.start(1)] + name + t[m.end(1):]


def m_visibility(r, t):
    return re.sub(r"func\.func @", r.choice(("func.func public @", "func.func private @",
                                             "func.func nested @")), t, count=1)


# Weighted towards mutations that keep the text parseable (numbers, shapes,
# lists, maps, names), which reach the stages; raw bytes and truncation
# mostly test the parser.
MUTATORS = (m_number,) * 6 + (m_dim,) * 4 + (m_dim_all,) * 6 + (m_perm,) * 3 + (m_map,) * 3 + (
    m_type, m_type_all, m_op, m_delete_line, m_dup_line, m_swap_lines, m_bytes, m_truncate,
    m_nest, m_name, m_name, m_visibility, m_batch, m_batch)


def mutate(r, text):
    t = text
    for _ in range(r.choice((1, 1, 1, 2, 3))):
        for _ in range(10):
            if len(t) < 2:
                return t
            u = r.choice(MUTATORS)(r, t)
            if u is not None and u != t:
                t = u
                break
    return t


# ---------------------------------------------------------------- running

LOCATED = re.compile(r"(^|\n)[^\n:]+:\d+:\d+: error:")


# A mutant run (--run --check) with tensors this large may take longer than
# the timeout legitimately: random inputs, the code, and the naive -O0
# reference over hundreds of millions of elements. Such a timeout is
# `slow-run`, not a hang (a compile that times out always is one).
BIG_RUN_ELEMENTS = 1 << 22


def largest_tensor(path):
    with open(path, errors="replace") as f:
        text = f.read()
    best = 0
    for m in re.finditer(r"tensor<((?:\d+x)+)", text):
        n = 1
        for d in m.group(1).split("x")[:-1]:
            n *= int(d)
        best = max(best, n)
    return best


def classify(pbc, pbc_opt, path, args, timeout, workdir):
    cmd = [pbc] + args + [path]
    try:
        p = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        if "--run=1" in args and largest_tensor(path) > BIG_RUN_ELEMENTS:
            return "slow-run", "timeout %ds running a program of %d-element tensors" % (
                timeout, largest_tensor(path))
        return "hang", "timeout %ds" % timeout
    err = p.stderr.decode(errors="replace")
    rc = p.returncode
    if rc == 0:
        return "ok", ""
    if rc == 2:
        return "error", err[-200:]
    if rc == 1:
        if LOCATED.search(err) or "pbc: error: cannot allocate" in err or "pbc: error: cannot run" in err:
            return "error", err[-200:]
        return "unlocated", err[-400:]
    if rc == 3:
        return "mismatch", (p.stdout.decode(errors="replace") + err)[-400:]
    if rc == 71:
        return "run-crash", err[-400:]
    if rc == 70:
        m = re.search(r"(\S*pbc-crash-\S+\.mlir)", err)
        if not m:
            return "no-replay", "no reproducer named: " + err[-300:]
        repro = m.group(1)
        if not os.path.isabs(repro):
            repro = os.path.join(workdir, repro)
        replay = replay_cmd(pbc_opt, repro)
        if replay is None:
            return "no-replay", "reproducer %s has no pipeline line" % repro
        try:
            q = subprocess.run(replay, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               timeout=timeout)
        except subprocess.TimeoutExpired:
            return "contained", "replay hangs"
        qerr = q.stderr.decode(errors="replace")
        if q.returncode < 0 or q.returncode == 70 or (q.returncode == 1 and LOCATED.search(qerr)):
            return "contained", err[-200:]
        return "no-replay", "replay exit %d: %s\n%s" % (q.returncode, " ".join(replay), qerr[-300:])
    return "uncontained", "exit %d: %s" % (rc, err[-400:])


def replay_cmd(pbc_opt, repro):
    """`pbc-opt -p PIPELINE REPRO` from the reproducer's header."""
    with open(repro, errors="replace") as f:
        head = f.read(4000)
    m = re.search(r"pbc-opt[^\n]*?-p\s+'([^']*)'", head) or re.search(r"pipeline:\s*(.+)", head)
    if not m:
        return None
    plugin = re.search(r"--target=(\S+)", head)
    cmd = [pbc_opt, "-p", m.group(1).strip(), repro]
    if plugin:
        cmd.insert(1, "--target=" + plugin.group(1))
    return cmd


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pbc", default=os.path.join(ROOT, "build", "bin", "pbc"))
    ap.add_argument("--pbc-opt", default=None)
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--long", action="store_true", help="a campaign: 20,000 mutants")
    ap.add_argument("--targets", default="cpu,nvgpu,amdgpu")
    ap.add_argument("--run-share", type=float, default=0.1,
                    help="share of cpu mutants run with --run=1 --check")
    ap.add_argument("--lib-share", type=float, default=0.15,
                    help="share of the other cpu mutants compiled with --emit=lib")
    ap.add_argument("--random-seeds", type=int, default=40,
                    help="random programs added to the corpus")
    ap.add_argument("--timeout", type=int, default=60)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", default=None, help="save failing mutants here")
    args = ap.parse_args()
    if args.long:
        args.count = max(args.count, 20000)
    pbc = os.path.abspath(args.pbc)
    pbc_opt = os.path.abspath(args.pbc_opt or os.path.join(os.path.dirname(pbc), "pbc-opt"))
    seed = args.seed if args.seed is not None else int(time.time()) % 100000
    corpus = seed_corpus(args.random_seeds, seed)
    targets = args.targets.split(",")
    print("seed %d: %d mutants of %d programs, targets %s, pbc %s"
          % (seed, args.count, len(corpus), ",".join(targets), pbc))
    sys.stdout.flush()
    workroot = tempfile.mkdtemp(prefix="pbc_fuzz_")

    def one(k):
        r = random.Random("%d:%d" % (seed, k))
        name, text = corpus[r.randrange(len(corpus))]
        mutant = mutate(r, text)
        target = targets[k % len(targets)]
        wd = os.path.join(workroot, str(k))
        os.makedirs(wd)
        path = os.path.join(wd, "mutant.mlir")
        with open(path, "w", errors="replace") as f:
            f.write(mutant)
        pargs = ["--target=" + target]
        if target == "cpu" and r.random() < args.run_share:
            pargs += ["--run=1", "--check", "--seed=1"]
        elif target == "cpu" and r.random() < args.lib_share:
            pargs += ["--emit=lib", "-o", os.path.join(wd, "out.so")]
        else:
            pargs += ["--emit=obj", "-o", os.path.join(wd, "out.o")]
        cls, detail = classify(pbc, pbc_opt, path, pargs, args.timeout, wd)
        saved = None
        if cls in BAD + ("mismatch", "contained") and args.out:
            os.makedirs(args.out, exist_ok=True)
            saved = os.path.join(args.out, "seed%d_%d_%s.mlir" % (seed, k, cls))
            with open(saved, "w", errors="replace") as f:
                f.write("// pbc fuzz mutant of %s (seed %d, mutant %d)\n// run: pbc %s FILE\n"
                        % (name, seed, k, " ".join(pargs)))
                f.write(mutant)
        subprocess.run(["rm", "-rf", wd])
        return k, target, cls, detail, saved, name

    counts = collections.Counter()
    failures = 0
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for k, target, cls, detail, saved, name in ex.map(one, range(args.count)):
            counts[(target, cls)] += 1
            if cls in BAD:
                failures += 1
                print("FAIL mutant %d (%s, of %s) %s: %s%s" % (k, target, name, cls,
                                                               detail.strip().replace("\n", "\n    ")[:600],
                                                               ("\n    saved: " + saved) if saved else ""))
                sys.stdout.flush()
    subprocess.run(["rm", "-rf", workroot])
    for target in targets:
        print("%-7s %s" % (target, ", ".join("%s %d" % (c, n) for (t, c), n in sorted(counts.items())
                                              if t == target)))
    print("%.0fs; %d passed, %d failed" % (time.time() - t0, args.count - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
