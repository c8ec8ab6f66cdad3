#!/usr/bin/python3
"""Differential testing of pbc: random tensor programs (progen.py) compiled
under every variant asked for and compared with numpy (oracle.py).

    /usr/bin/python3 tests/differential/difftest.py --pbc build/bin/pbc \\
        [--seed S] [--count N] [--variants o3|all|levels|O3,no-fusion,...] \\
        [--dtypes f32,f16,bf16,i32] [--out DIR] [--jobs J]
    difftest.py --replay DIR/NAME.json [--variants ...]   # one saved program
    difftest.py --dynamic ...   # each program with one size `?`, run at 3 sizes

--dynamic (dynamic.py): each program drawn has one of its size classes
made dynamic in its MLIR; it is compiled from that one text for each of
three sizes (its own and two drawn: 1, primes, vector and tile edges) and
called at each against numpy at that size. Its programs are drawn from the
families whose sizes can move (dynamic.FAMILIES, unless --families); one
with no free size class is skipped (counted). Program-variant pairs count each size.

Program k of seed S is drawn from numpy's default_rng([S, k]): `--seed S
--first k --count 1` draws it again. Each failure is printed with that
command; with --out, it is shrunk (ops replaced by inputs holding the values
they computed, operands bypassed, outputs dropped, while the failure stays)
and saved as a reproducer: NAME.mlir (with the pbc arguments in its header),
NAME.npz (inputs, numpy's outputs, tolerances) and NAME.json (the program).
Copying the .mlir and .npz into tests/differential/regressions/ makes it a
regression test (run_regressions.py).

Ends with "N passed, N failed" (program x variant pairs); exits 1 on any
failure.
"""

import argparse
import collections
import concurrent.futures
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import dynamic  # noqa: E402
import oracle  # noqa: E402
import progen  # noqa: E402

DEFAULT_PBC = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                            "..", "..", "build", "bin", "pbc"))


def draw(seed, k, dtypes, families, max_ops):
    rng = np.random.default_rng([seed, k])
    dt = dtypes[int(rng.integers(0, len(dtypes)))] if dtypes else None
    return progen.generate(rng, dt, families, max_ops)


# ---------------------------------------------------------------- shrinking

def _replace_by_input(prog, i, vals):
    nodes = list(prog.nodes)
    n = nodes[i]
    nodes[i] = progen.Node("input", [], {}, n.shape, n.dt)
    inputs = dict(prog.inputs)
    inputs[i] = vals[i]
    return progen.Program(nodes, prog.outputs, inputs).compact()


def _bypass(prog, i, j):
    nodes = [progen.Node(n.kind, [j if o == i else o for o in n.operands], n.attrs, n.shape, n.dt)
             for n in prog.nodes]
    outs = [j if o == i else o for o in prog.outputs]
    if len(set(outs)) != len(outs):
        return None
    return progen.Program(nodes, outs, prog.inputs).compact()


def _subexprs(e):
    if e[0] in ("arg", "const"):
        return []
    kids = {"un": [e[2]] if len(e) > 2 else [], "bin": [e[2], e[3]], "divp": [e[1], e[2]],
            "sel": [e[2], e[3]]}.get(e[0], [])
    return kids


def candidates(prog):
    """Smaller programs, most promising first."""
    vals = prog.evaluate()
    for k in range(len(prog.outputs)):
        if len(prog.outputs) > 1:
            yield progen.Program(prog.nodes, prog.outputs[:k] + prog.outputs[k + 1:],
                                 prog.inputs).compact()
    for i in reversed(range(len(prog.nodes))):
        n = prog.nodes[i]
        if n.kind == "input":
            continue
        yield _replace_by_input(prog, i, vals)
        for j in n.operands:
            m = prog.nodes[j]
            if m.shape == n.shape and m.dt == n.dt:
                p = _bypass(prog, i, j)
                if p is not None:
                    yield p
        if n.kind == "ewise":
            for sub in _subexprs(n.attrs["expr"]):
                nodes = list(prog.nodes)
                attrs = dict(n.attrs)
                attrs["expr"] = sub
                nodes[i] = progen.Node(n.kind, n.operands, attrs, n.shape, n.dt)
                yield progen.Program(nodes, prog.outputs, prog.inputs).compact()


def shrink(pbc, prog, args, outcome, timeout, budget_s=300):
    """The smallest program found that fails like `outcome` under args."""
    t0 = time.time()
    improved = True
    while improved and time.time() - t0 < budget_s:
        improved = False
        for cand in candidates(prog):
            if time.time() - t0 > budget_s:
                break
            try:
                got = oracle.check_one(pbc, cand, args, timeout)
            except Exception:  # noqa: BLE001 — a candidate the reference can't evaluate
                continue
            if got.cls == outcome.cls:
                prog, outcome, improved = cand, got, True
                break
    return prog, outcome


def save_repro(out_dir, name, prog, args, outcome, origin):
    os.makedirs(out_dir, exist_ok=True)
    ref = oracle.Reference(prog)
    header = ("// pbc differential reproducer (%s)\n// ARGS: %s\n// outcome: %s\n"
              % (origin, " ".join(args), str(outcome).replace("\n", "\n//   ")))
    with open(os.path.join(out_dir, name + ".mlir"), "w") as f:
        f.write(header + progen.module([prog.emit("f")]))
    arrays = {}
    for k, a in enumerate(prog.c_inputs()):
        arrays["in%d" % k] = a
    for k, (v, al, dt) in enumerate(zip(ref.outputs, ref.allowed, ref.dts)):
        arrays["out%d" % k] = v
        arrays["allowed%d" % k] = al.astype(np.float32)
        arrays["dt%d" % k] = np.array(dt)
    np.savez_compressed(os.path.join(out_dir, name + ".npz"), **arrays)
    with open(os.path.join(out_dir, name + ".json"), "w") as f:
        json.dump({"program": prog.to_json(), "args": args, "origin": origin}, f)
    return os.path.join(out_dir, name + ".mlir")


def load_json(path):
    with open(path) as f:
        d = json.load(f)
    nodes = [progen.Node.from_json(n) for n in d["program"]["nodes"]]
    npz = np.load(path[:-5] + ".npz")
    inputs = {}
    ids = [i for i, n in enumerate(nodes) if n.kind == "input"]
    for k, i in enumerate(ids):
        inputs[i] = progen.from_c(npz["in%d" % k], nodes[i].dt)
    return progen.Program(nodes, d["program"]["outputs"], inputs)


# ---------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pbc", default=os.environ.get("PBC", DEFAULT_PBC))
    ap.add_argument("--seed", type=int, default=None, help="default: from the clock (printed)")
    ap.add_argument("--first", type=int, default=0, help="index of the first program")
    ap.add_argument("--count", type=int, default=50)
    ap.add_argument("--long", action="store_true",
                    help="a campaign: 2,000 programs under every variant (unless given)")
    ap.add_argument("--batch", type=int, default=8, help="programs per compiled module")
    ap.add_argument("--variants", default="o3")
    ap.add_argument("--dtypes", default="f32,f16,bf16,i32")
    ap.add_argument("--families", default=None,
                    help="comma list of op families (default all: %s)" % ",".join(progen.Gen.FAMILIES))
    ap.add_argument("--max-ops", type=int, default=10)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per compile or run")
    ap.add_argument("--out", default=None, help="save shrunk reproducers here")
    ap.add_argument("--no-shrink", action="store_true")
    ap.add_argument("--replay", default=None, help="a saved NAME.json program")
    ap.add_argument("--print", action="store_true", help="print the programs' MLIR and exit")
    ap.add_argument("--dynamic", action="store_true",
                    help="one size of each program `?`, compiled and run at three sizes")
    ap.add_argument("--target", default=None, help="pbc target (default: cpu)")
    ap.add_argument("--chip", default=None, help="chip of the target")
    ap.add_argument("--record", metavar="DIR", default=None,
                    help="compile only, keeping each library in DIR for --replay-libs on a "
                         "machine with the target's device")
    ap.add_argument("--replay-libs", metavar="DIR", default=None,
                    help="run the libraries --record kept in DIR (same --seed, --count, "
                         "--batch, variants, target, chip) instead of compiling")
    args = ap.parse_args()
    if args.long:
        args.count = max(args.count, 2000)
        if args.variants == "o3":
            args.variants = "all"

    pbc = os.path.abspath(args.pbc)
    if args.record or args.replay_libs:
        oracle.pbc_lib.prebuilt_setup("record" if args.record else "replay",
                                      args.record or args.replay_libs, pbc, args.target or "cpu")
    if not args.replay_libs and not os.access(pbc, os.X_OK):
        print("error: pbc not found: %s (use --pbc)" % pbc)
        print("0 passed, 1 failed")
        return 2
    vs = oracle.variants(args.variants)
    if args.target not in (None, "cpu") and args.variants == "all":
        vs = [v for v in vs if v[0] != "small-caches"]  # a CPU chip's caches
    target = (["--target=" + args.target] if args.target else []) + (
        ["--chip=" + args.chip] if args.chip else [])
    vs = [(name, vargs + target) for name, vargs in vs]
    dtypes = args.dtypes.split(",")
    families = tuple(args.families.split(",")) if args.families else \
        (dynamic.FAMILIES if args.dynamic else None)
    seed = args.seed if args.seed is not None else int(time.time()) % 100000

    if args.replay:
        progs = [(os.path.basename(args.replay), load_json(args.replay))]
    else:
        print("seed %d, programs %d..%d, variants %s, pbc %s"
              % (seed, args.first, args.first + args.count - 1, ",".join(v[0] for v in vs), pbc))
        progs = [("%d" % k, draw(seed, k, dtypes, families, args.max_ops))
                 for k in range(args.first, args.first + args.count)]
    if args.dynamic:
        drawn = len(progs)
        progs = [("%s@%d" % (name, inst.size), inst) for name, p in progs
                 for inst in dynamic.make(p, np.random.default_rng([seed, 7919, int(name) if name.isdigit() else 0]))]
        print("dynamic: %d of %d programs have a free size class; %d instances"
              % (len({n.split("@")[0] for n, _ in progs}), drawn, len(progs)))
    if args.print:
        for name, p in progs:
            print("// program %s\n%s" % (name, progen.module([p.emit("f")])))
        return 0
    sys.stdout.flush()
    refs = [oracle.Reference(p) for _, p in progs]
    kinds = collections.Counter(n.kind if n.kind != "conv" else n.attrs["op"].split("_")[0]
                                for _, p in progs for n in p.nodes if n.kind != "input")
    masks = sum(1 for _, p in progs for n in p.nodes
                if n.kind == "ewise" and "imask" in repr(n.attrs["expr"]))
    dts = collections.Counter(p.nodes[p.outputs[0]].dt for _, p in progs)
    print("ops drawn: %s; index masks: %d; element types: %s"
          % (", ".join("%s %d" % kv for kv in sorted(kinds.items())), masks,
             ", ".join("%s %d" % kv for kv in sorted(dts.items()))))

    tasks = []
    for vname, vargs in vs:
        for b in range(0, len(progs), args.batch):
            tasks.append((vname, vargs, b, progs[b:b + args.batch], refs[b:b + args.batch]))
    results = {}
    t0 = time.time()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as ex:
        futs = {ex.submit(oracle.check_batch, pbc, [p for _, p in ps], rs, vargs, args.timeout):
                (vname, b, ps) for vname, vargs, b, ps, rs in tasks}
        for fut in concurrent.futures.as_completed(futs):
            vname, b, ps = futs[fut]
            for (name, _), out in zip(ps, fut.result()):
                results[(name, vname)] = out
                if out.cls not in ("ok", "recorded"):
                    how = ("--replay %s" % args.replay) if args.replay else \
                        "--seed %d --first %s --count 1%s" % (
                            seed, name.split("@")[0], " --dynamic" if args.dynamic else "")
                    print("FAIL program %s [%s] %s\n    reproduce: difftest.py %s --variants %s"
                          % (name, vname, str(out).replace("\n", "\n    "), how, vname))
                    sys.stdout.flush()

    per = collections.defaultdict(collections.Counter)
    for (name, vname), out in results.items():
        per[vname][out.cls] += 1
    for vname, _ in vs:
        c = per[vname]
        print("%-22s %s" % (vname, ", ".join("%s %d" % kv for kv in sorted(c.items()))))
    failed = sorted({k for k, o in results.items() if o.cls not in ("ok", "recorded")},
                    key=lambda k: (int(k[0]) if k[0].isdigit() else 0, k[1]))
    if args.out and failed and not args.no_shrink and not args.dynamic:
        done = set()
        for name, vname in failed:
            if name in done:
                continue  # one reproducer per program: its first failing variant
            done.add(name)
            prog = dict(progs)[name]
            vargs = dict(vs)[vname]
            small, out = shrink(pbc, prog, vargs, results[(name, vname)], args.timeout)
            path = save_repro(args.out, "seed%d_p%s_%s" % (seed, name, vname), small, vargs, out,
                              "seed %d program %s, variant %s" % (seed, name, vname))
            print("reproducer: %s (%d ops, %s)" % (path, sum(1 for n in small.nodes if n.kind != "input"),
                                                    out.cls))
    if args.dynamic:
        routes = collections.Counter(o.route for o in results.values() if o.route)
        print("dynamic: %d runs of one compile for every size (%d with the batch loop, %d with "
              "symbolic sizes), %d of compiles for their sizes"
              % (routes["batch"] + routes["symbolic"], routes["batch"], routes["symbolic"],
                 routes["sized"]))
    n_ok = sum(1 for o in results.values() if o.cls in ("ok", "recorded"))
    print("%.0fs; %d passed, %d failed" % (time.time() - t0, n_ok, len(results) - n_ok))
    return 1 if n_ok != len(results) else 0


if __name__ == "__main__":
    sys.exit(main())
