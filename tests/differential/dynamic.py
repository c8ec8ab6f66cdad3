"""Dynamic-shape programs for the differential tester (difftest.py
--dynamic): a random program of progen's with one of its sizes made `?`
in its MLIR, compiled and called at several sizes, each against numpy at
that size.

A program's size classes are the (node, dimension) positions its ops tie
to one size: an elementwise generic's operand dimension and the result
dimension its map names, a contraction's m, n and k, a reduction's kept
dimensions, a transpose's permuted ones, a convolution's batch. A class
that some op's attributes would have to change with (a slice's sizes, a
pad, a reshape, a concatenation, a convolution's window, a gather's table)
is pinned. One free class that an input has is drawn: its positions print
as `?` (tensor.empty takes the size from the input, by tensor.dim), and
the program is instantiated at each size drawn: the same ops, the class's
positions at that size, fresh inputs where their shape changed. numpy
evaluates each instance (the oracle's tolerance per instance). The oracle
compiles the one dynamic text without sizes first (pbc's one compile for
every size: the batch loop, pbc/batch_loop.h, or symbolic sizes,
pbc/symbolic_sizes.h; the header says which), then the entries pbc
refuses that for with `--shape` giving each entry's inputs. Half the programs take a batch-like
class where they have one (at their inputs' and outputs' leading
dimensions only) and return only the results it leads, so that the batch
route is drawn often; whether pbc takes it is pbc's to decide.
"""

import numpy as np

import progen

# The sizes a dynamic dimension is called with: 1, primes, vector and tile
# edges, and sizes past L1/L2 for a wide row (the caps below bound them).
# The op families whose sizes can move (a few slices and pads among them:
# they pin their own classes, not the whole program's).
FAMILIES = ("ewise", "elementwise", "matmul", "conv", "pool", "reduce", "softmax", "transpose",
            "broadcast", "cast", "mask", "attention", "gather", "slice", "pad")

SIZES = (1, 2, 3, 5, 7, 8, 13, 16, 17, 31, 32, 33, 63, 64, 65, 100, 127, 128, 129, 257, 1000)


class _Classes:
    def __init__(self):
        self.parent = {}
        self.pinned = set()

    def find(self, p):
        self.parent.setdefault(p, p)
        while self.parent[p] != p:
            self.parent[p] = self.parent[self.parent[p]]
            p = self.parent[p]
        return p

    def union(self, a, b):
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[ra] = rb
            if ra in self.pinned:
                self.pinned.add(rb)

    def pin(self, p):
        self.pinned.add(self.find(p))

    def is_pinned(self, p):
        return self.find(p) in self.pinned


def _init_operand(c, i, n):
    """The accumulator operand _init reads: a value of the result's shape
    (acc) or a vector along its last dimension (bias)."""
    if n.attrs.get("acc"):
        for d in range(len(n.shape)):
            c.union((n.operands[-1], d), (i, d))
    elif n.attrs.get("bias"):
        c.union((n.operands[-1], 0), (i, len(n.shape) - 1))


def _same(c, i, n, nodes):
    for o in n.operands:
        for d in range(len(n.shape)):
            c.union((o, d), (i, d))


def _matmul(c, i, n, nodes):
    a, b = n.operands[0], n.operands[1]
    form = n.attrs["form"]
    tb = form == "matmul_tb" or (form in ("generic_tb", "generic_ext") and n.attrs.get("tb", True))
    if form == "batch_matmul":
        for x in (a, b):
            c.union((x, 0), (i, 0))
        c.union((a, 1), (i, 1))
        c.union((a, 2), (b, 1))
        c.union((b, 2), (i, 2))
    elif form == "matvec":
        c.union((a, 0), (i, 0))
        c.union((a, 1), (b, 0))
    else:
        c.union((a, 0), (i, 0))
        c.union((a, 1), (b, 1 if tb else 0))
        c.union((b, 0 if tb else 1), (i, 1))
    _init_operand(c, i, n)


def _ewise(c, i, n, nodes):
    for o, m in zip(n.operands, n.attrs["maps"]):
        for j, d in enumerate(m):
            c.union((o, j), (i, d))


def _reduce(c, i, n, nodes):
    src = nodes[n.operands[0]]
    keep = [d for d in range(len(src.shape)) if d not in n.attrs["dims"]]
    for j, d in enumerate(keep):
        c.union((n.operands[0], d), (i, j))
    _init_operand(c, i, n)


def _transpose(c, i, n, nodes):
    for j, p in enumerate(n.attrs["perm"]):
        c.union((n.operands[0], p), (i, j))


def _broadcast(c, i, n, nodes):
    keep = [d for d in range(len(n.shape)) if d not in n.attrs["dims"]]
    for j, d in enumerate(keep):
        c.union((n.operands[0], j), (i, d))


def _conv(c, i, n, nodes):
    """The batch (dimension 0 of the image and the result) is free; the
    rest follows the window arithmetic: pinned."""
    img = n.operands[0]
    c.union((img, 0), (i, 0))
    for o in n.operands[1:]:
        for d in range(len(nodes[o].shape)):
            c.pin((o, d))
    for d in range(1, len(n.shape)):
        c.pin((i, d))
    for d in range(1, len(nodes[img].shape)):
        c.pin((img, d))
    _init_operand(c, i, n)


RULES = {"ewise": _ewise, "elementwise": _same, "softmax": _same, "cast": _same,
         "matmul": _matmul, "reduce": _reduce, "transpose": _transpose,
         "broadcast": _broadcast, "conv": _conv}


def size_classes(prog):
    """{root: [(node, dim)]} of the free classes, and the classes object."""
    c = _Classes()
    for i, n in enumerate(prog.nodes):
        for d in range(len(n.shape)):
            c.find((i, d))
        if n.kind == "input":
            continue
        rule = RULES.get(n.kind)
        if rule is None:  # sizes in its attributes: it and its operands pinned
            for p in [(i, d) for d in range(len(n.shape))] + [
                    (o, d) for o in n.operands for d in range(len(prog.nodes[o].shape))]:
                c.pin(p)
        else:
            rule(c, i, n, prog.nodes)
    groups = {}
    for p in list(c.parent):
        if not c.is_pinned(p):
            groups.setdefault(c.find(p), []).append(p)
    return groups


def _reduces_over(prog, positions):
    """Whether a class is summed over: a reduction's reduced dimension or a
    contraction's k (a low-precision sum's length is bounded)."""
    pos = set(positions)
    for i, n in enumerate(prog.nodes):
        if n.kind == "reduce" and any((n.operands[0], d) in pos for d in n.attrs["dims"]):
            return True
        if n.kind == "softmax" and (i, n.attrs["dim"]) in pos:
            return True
        if n.kind == "matmul" and (n.operands[0], len(prog.nodes[n.operands[0]].shape) - 1) in pos:
            return True
    return False


def _cap(prog, positions):
    """The largest size the class may take: tensors within progen's element
    limit (a big program's), contractions within its MAC limit, and
    low-precision sums within their length."""
    per = {}
    for i, d in positions:
        per[i] = per.get(i, 0) + 1
    cap = 1 << 30
    big = any(int(np.prod(n.shape or (1,))) > progen.MAX_ELEMS for n in prog.nodes)
    limit = progen.BIG_MAX_ELEMS if big else progen.MAX_ELEMS
    for i, k in per.items():
        rest = int(np.prod([s for d, s in enumerate(prog.nodes[i].shape) if (i, d) not in positions]
                           or [1]))
        cap = min(cap, int((limit / max(rest, 1)) ** (1.0 / k)))
    for i, n in enumerate(prog.nodes):
        if n.kind in ("matmul", "conv") and any(p[0] == i for p in positions):
            macs = int(np.prod(n.shape)) * progen.CONTRACTED.get(n.kind, lambda n, o: 1)(
                n, [prog.nodes[o] for o in n.operands])
            own = np.prod([s for d, s in enumerate(n.shape) if (i, d) in positions] or [1])
            cap = min(cap, max(1, int(own * progen.MAX_MACS * 4 / max(macs, 1))))
    dt = prog.nodes[prog.outputs[0]].dt
    if _reduces_over(prog, positions) and dt in progen.LOW_PRECISION_SUM:
        cap = min(cap, progen.LOW_PRECISION_SUM[dt])
    return cap


class Instance:
    """A dynamic program at one size: emits the dynamic text, is evaluated
    and called as the concrete program, and gives pbc the entry's input
    shapes."""

    def __init__(self, template, concrete, size):
        self.template, self.concrete, self.size = template, concrete, size
        self.nodes, self.outputs, self.inputs = concrete.nodes, concrete.outputs, concrete.inputs

    def emit(self, name="f"):
        return self.template.emit(name)

    def evaluate(self, noise=None):
        return self.concrete.evaluate(noise)

    def c_inputs(self):
        return self.concrete.c_inputs()

    def c_outputs(self):
        return self.concrete.c_outputs()

    def pbc_args(self, name):
        ids = self.concrete.input_ids()
        spec = ["%s:%d=%s" % (name, k, "x".join(str(d) for d in self.concrete.nodes[i].shape))
                for k, i in enumerate(ids)
                if any(isinstance(d, progen.Sym) for d in self.template.nodes[i].shape)]
        return ["--shape=" + ";".join(spec)] if spec else []


def make(prog, rng, sizes=3):
    """[Instance] of prog with one free size class made dynamic, at `sizes`
    sizes drawn (the program's own among them); [] if it has none."""
    groups = size_classes(prog)
    inputs = set(prog.input_ids())
    cands = [ps for ps in groups.values() if any(i in inputs for i, _ in ps)]
    if not cands:
        return []
    # Half the programs take a batch-like class (only inputs' and outputs'
    # leading dimensions among its input and output positions) where there
    # is one, and return only the results it leads: what pbc compiles once
    # for every batch (pbc/batch_loop.h) if nothing mixes batch elements.
    outs = set(prog.outputs)
    batchlike = [ps for ps in cands
                 if all(d == 0 for i, d in ps if i in inputs or i in outs)
                 and any((o, 0) in ps for o in outs)]
    if batchlike and rng.integers(0, 2) == 0:
        positions = set(batchlike[int(rng.integers(0, len(batchlike)))])
        prog = progen.Program(prog.nodes, [o for o in prog.outputs if (o, 0) in positions],
                              prog.inputs)
    else:
        positions = set(cands[int(rng.integers(0, len(cands)))])
    own = prog.nodes[next(iter(positions))[0]].shape[next(iter(positions))[1]]
    cap = _cap(prog, positions)
    pool = [s for s in SIZES if s <= cap and s != own]
    chosen = [own] + list(rng.choice(pool, size=min(sizes - 1, len(pool)), replace=False)) \
        if pool else [own]
    template = _with_sizes(prog, positions, None, rng)
    return [Instance(template, _with_sizes(prog, positions, int(s), rng), int(s)) for s in chosen]


def _with_sizes(prog, positions, size, rng):
    """prog with the class's positions at `size` (None: as progen.Sym, the
    text's `?`), fresh inputs where a shape changed."""
    nodes, inputs = [], {}
    for i, n in enumerate(prog.nodes):
        shape = tuple((progen.Sym(s) if size is None else size) if (i, d) in positions else s
                      for d, s in enumerate(n.shape))
        nodes.append(progen.Node(n.kind, list(n.operands), n.attrs, shape, n.dt))
        if n.kind == "input":
            if size is None or shape == tuple(n.shape):
                inputs[i] = prog.inputs[i]
            else:
                inputs[i] = progen.fresh_input(rng, shape, n.dt)
    return progen.Program(nodes, prog.outputs, inputs)
