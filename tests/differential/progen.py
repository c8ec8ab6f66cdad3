"""Random tensor programs for differential testing: a DAG of linalg/tensor ops
on MLIR tensors, with an independent numpy evaluation of the same DAG.

A Program is a list of Nodes in topological order. A node is an op kind, its
operand nodes, attributes, and its result's shape and element type; `emit`
writes it as MLIR (one public func.func), `evaluate` computes every node with
numpy (float64 internally, rounded to the element type after each op, as the
program's types say). Programs are drawn by `generate(rng, ...)` from a
seeded numpy Generator together with their inputs, so a seed reproduces a
program exactly; the generator looks at the values it has computed so far to
keep them finite and away from the edges where a correct compiler and numpy
could disagree (exp overflow, comparisons within rounding of a threshold).

Element types: f32, f16, bf16 (carried as float64 values in numpy, bf16 as
uint16 bit patterns at the C interface), i32 and i8.
"""

import math

import numpy as np

FLOATS = ("f32", "f16", "bf16")
INTS = ("i32", "i8")

# Shapes are drawn to hit the edges the optimizer cares about: 1, primes,
# just under/over vector widths (4, 8, 16 lanes) and register/cache tiles.
EDGE_DIMS = (1, 1, 2, 3, 4, 5, 7, 8, 9, 13, 15, 16, 17, 24, 31, 32, 33, 48, 63, 64,
             65, 96, 100, 127, 128, 129)
BIG_DIMS = (192, 255, 256, 257, 384, 512, 1000, 1024)
MAX_ELEMS = 1 << 17          # per tensor
MAX_MACS = 1 << 22           # per contraction (numpy in float64 stays fast)
# One program in BIG_SHARE is big: tensors past the caches (packing, prefetch
# and non-temporal stores only start there), drawn from these dims.
BIG_SHARE = 0.08
HUGE_DIMS = (1024, 1536, 2048, 2049, 4096)
BIG_MAX_ELEMS = 1 << 22
BIG_MAX_MACS = 1 << 27
# Longest sum of a low-precision type the generator draws: a sum of positive
# values (a softmax's) in f16 or bf16 loses the small terms once the running
# sum outgrows them, by up to K units of roundoff however it is ordered.
LOW_PRECISION_SUM = {"f16": 512, "bf16": 128}
# Past this many terms a sum in f32 is as order-dependent as those: a running
# sum in one accumulator (-O0, --disable=vectorization) of 87381 terms was off
# by 7000 units of roundoff of the result, against numpy's pairwise 0.
LONG_F32_SUM = 1 << 14

# Values the generator keeps each element type's tensors under (by scaling),
# so that no overflow or near-overflow rounding separates pbc from numpy.
MAG_LIMIT = {"f32": 1e4, "f16": 64.0, "bf16": 64.0, "i32": 1 << 20, "i8": 100}


# ---------------------------------------------------------------- rounding

def round_to(x, dt):
    """float64/int64 array -> the values of element type dt (as float64 or
    int64): what storing into a tensor of dt does."""
    if dt == "f32":
        return np.asarray(x, np.float64).astype(np.float32).astype(np.float64)
    if dt == "f16":
        return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)
    if dt == "bf16":
        return bf16_bits_to_f64(f64_to_bf16_bits(x))
    if dt == "i32":
        return np.asarray(x, np.int64).astype(np.int32).astype(np.int64)
    if dt == "i8":
        return np.asarray(x, np.int64).astype(np.int8).astype(np.int64)
    raise ValueError(dt)


def f64_to_bf16_bits(x):
    x = np.asarray(x, np.float64)
    a = np.ascontiguousarray(x.astype(np.float32)).reshape(-1)
    u = a.view(np.uint32).astype(np.uint64)
    out = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) & 0xFFFF).astype(np.uint16)
    out[np.isnan(a)] = 0x7FC0
    return out.reshape(x.shape)


def bf16_bits_to_f64(b):
    b = np.asarray(b, np.uint16)
    flat = np.ascontiguousarray(b).reshape(-1)
    return (flat.astype(np.uint32) << 16).view(np.float32).astype(np.float64).reshape(b.shape)


def to_c(x, dt):
    """Values -> the array passed at the C interface."""
    if dt == "f32":
        return np.ascontiguousarray(x, np.float32)
    if dt == "f16":
        return np.ascontiguousarray(x, np.float16)
    if dt == "bf16":
        return f64_to_bf16_bits(x)
    return np.ascontiguousarray(x, {"i32": np.int32, "i8": np.int8}[dt])


def from_c(a, dt):
    if dt == "bf16":
        return bf16_bits_to_f64(a)
    if dt in INTS:
        return np.asarray(a).astype(np.int64)
    return np.asarray(a).astype(np.float64)


def c_dtype(dt):
    """The numpy dtype of dt's C buffers."""
    return {"f32": np.float32, "f16": np.float16, "bf16": np.uint16,
            "i32": np.int32, "i8": np.int8}[dt]


def is_float(dt):
    return dt in FLOATS


# Unit roundoff of each float type, and the units in the last place by which
# a correct op may be off (polynomial exp/tanh are within 2).
EPS = {"f32": 2.0 ** -24, "f16": 2.0 ** -11, "bf16": 2.0 ** -8}
NOISE_ULPS = 2


# ---------------------------------------------------------------- MLIR text

class Sym(int):
    """A dimension whose size the program takes from its input (dynamic.py):
    printed as MLIR's `?`; tensor.empty then takes the size as an operand."""

    def __str__(self):
        return "?"

    __repr__ = __str__


SYM_SIZE = "%sym"  # the SSA name of that size in an emitted function


def ttype(shape, dt):
    if not shape:
        return "tensor<%s>" % dt
    return "tensor<%sx%s>" % ("x".join(str(d) for d in shape), dt)


def amap(nd, results):
    return "affine_map<(%s) -> (%s)>" % (", ".join("d%d" % i for i in range(nd)),
                                         ", ".join(results))


def iters(kinds):
    return "[" + ", ".join('"%s"' % k for k in kinds) + "]"


def fconst(v, dt):
    """An arith.constant literal of float type dt (hex for non-finite)."""
    if math.isnan(v):
        return {"f32": "0x7FC00000", "f16": "0x7E00", "bf16": "0x7FC0"}[dt]
    if math.isinf(v):
        pos = v > 0
        return {"f32": "0x7F800000" if pos else "0xFF800000",
                "f16": "0x7C00" if pos else "0xFC00",
                "bf16": "0x7F80" if pos else "0xFF80"}[dt]
    return repr(float(v)) if float(v) != int(v) or abs(v) >= 1e16 else "%.1f" % v


def const_value(v, dt):
    """The value a constant of dt has after rounding to dt."""
    return float(round_to(np.array([v]), dt)[0]) if is_float(dt) else int(round_to(np.array([v]), dt)[0])


class Emitter:
    """Collects a function body's lines and fresh SSA names."""

    def __init__(self):
        self.lines = []
        self.n = 0

    def fresh(self, base="v"):
        self.n += 1
        return "%%%s%d" % (base, self.n)

    def line(self, s):
        self.lines.append("    " + s)

    def constant(self, v, dt):
        name = self.fresh("c")
        if is_float(dt):
            self.line("%s = arith.constant %s : %s" % (name, fconst(v, dt), dt))
        else:
            self.line("%s = arith.constant %d : %s" % (name, int(v), dt))
        return name

    def filled(self, shape, dt, v):
        e = self.empty(shape, dt)
        c = self.constant(v, dt)
        f = self.fresh("f")
        self.line("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s"
                  % (f, c, dt, e, ttype(shape, dt), ttype(shape, dt)))
        return f

    def empty(self, shape, dt):
        e = self.fresh("e")
        sizes = ", ".join(SYM_SIZE for d in shape if isinstance(d, Sym))
        self.line("%s = tensor.empty(%s) : %s" % (e, sizes, ttype(shape, dt)))
        return e


# ---------------------------------------------------------------- expressions
# The body of an elementwise linalg.generic: a small tree over its operands'
# scalars, linalg.index values and constants. Trees are tuples:
#   ("arg", i) ("const", v) ("un", op, t) ("bin", op, a, b)
#   ("divp", a, b): a / (1 + |b|)      ("bin", "divf", ...) only where b > 0
#   ("sel", cond, a, b)
# conditions: ("cmpf", pred, a, const) ("imask", pred, dim_a, dim_b_or_None, k)
#             ("cmpi", pred, a, const) for integer types

FUN = {"negf", "absf", "tanh", "exp", "sqrtabs", "relu"}
FBIN = ("addf", "subf", "mulf", "maximumf", "minimumf")
IBIN = ("addi", "subi", "muli", "maxsi", "minsi", "xori")
IPRED = {"ugt": np.greater, "uge": np.greater_equal, "ult": np.less, "ule": np.less_equal,
         "eq": np.equal, "ne": np.not_equal, "sgt": np.greater, "slt": np.less}
FPRED = {"olt": np.less, "ogt": np.greater, "ole": np.less_equal, "oge": np.greater_equal}


# The noise generator while Program.evaluate(noise=...) runs: every op of an
# elementwise body is perturbed by its rounding, not just the body's result.
_NOISE = [None]


def _noisy(r, dt):
    rng = _NOISE[0]
    if rng is None or not is_float(dt):
        return r
    with np.errstate(all="ignore"):
        return r + NOISE_ULPS * 2 * EPS[dt] * np.abs(r) * rng.uniform(-1, 1, size=np.shape(r))


def _expr_eval(e, args, idx, dt):
    k = e[0]
    if k == "arg":
        return args[e[1]]
    if k == "const":
        return np.float64(e[1]) if is_float(dt) else np.int64(e[1])
    if k == "un":
        x = _expr_eval(e[2], args, idx, dt)
        with np.errstate(all="ignore"):
            r = {"negf": lambda v: -v, "absf": np.abs, "tanh": np.tanh, "exp": np.exp,
                 "sqrtabs": lambda v: np.sqrt(np.abs(v)),
                 "relu": lambda v: np.maximum(v, 0.0)}[e[1]](x)
        return _noisy(round_to(r, dt), dt)
    if k == "bin":
        a = _expr_eval(e[2], args, idx, dt)
        b = _expr_eval(e[3], args, idx, dt)
        with np.errstate(all="ignore"):
            r = {"addf": np.add, "subf": np.subtract, "mulf": np.multiply,
                 "maximumf": np.maximum, "minimumf": np.minimum, "divf": np.divide,
                 "addi": np.add, "subi": np.subtract, "muli": np.multiply,
                 "maxsi": np.maximum, "minsi": np.minimum, "xori": np.bitwise_xor}[e[1]](a, b)
        return _noisy(round_to(r, dt), dt)
    if k == "divp":
        a = _expr_eval(e[1], args, idx, dt)
        b = _expr_eval(e[2], args, idx, dt)
        with np.errstate(all="ignore"):
            d = round_to(1.0 + round_to(np.abs(b), dt), dt)
            return _noisy(round_to(a / d, dt), dt)
    if k == "sel":
        c = _cond_eval(e[1], args, idx, dt)
        a = _expr_eval(e[2], args, idx, dt)
        b = _expr_eval(e[3], args, idx, dt)
        return np.where(c, a, b)
    raise ValueError(k)


def _cond_eval(c, args, idx, dt):
    if c[0] == "cmpf":
        return FPRED[c[1]](_expr_eval(c[2], args, idx, dt), c[3])
    if c[0] == "cmpi":
        return IPRED[c[1]](_expr_eval(c[2], args, idx, dt), c[3])
    _, pred, da, db, k = c
    lhs = idx[da]
    rhs = (idx[db] if db is not None else 0) + k
    return IPRED[pred](lhs, rhs)


def _expr_emit(em, e, argnames, dt, idxnames):
    k = e[0]
    if k == "arg":
        return argnames[e[1]]
    if k == "const":
        return em.constant(e[1], dt)
    if k == "un":
        x = _expr_emit(em, e[2], argnames, dt, idxnames)
        r = em.fresh()
        op = e[1]
        if op == "negf":
            em.line("%s = arith.negf %s : %s" % (r, x, dt))
        elif op == "absf":
            em.line("%s = math.absf %s : %s" % (r, x, dt))
        elif op in ("tanh", "exp"):
            em.line("%s = math.%s %s : %s" % (r, op, x, dt))
        elif op == "sqrtabs":
            a = em.fresh()
            em.line("%s = math.absf %s : %s" % (a, x, dt))
            em.line("%s = math.sqrt %s : %s" % (r, a, dt))
        elif op == "relu":
            z = em.constant(0.0, dt)
            em.line("%s = arith.maximumf %s, %s : %s" % (r, x, z, dt))
        return r
    if k == "bin":
        a = _expr_emit(em, e[2], argnames, dt, idxnames)
        b = _expr_emit(em, e[3], argnames, dt, idxnames)
        r = em.fresh()
        em.line("%s = arith.%s %s, %s : %s" % (r, e[1], a, b, dt))
        return r
    if k == "divp":
        a = _expr_emit(em, e[1], argnames, dt, idxnames)
        b = _expr_emit(em, e[2], argnames, dt, idxnames)
        ab, one, d, r = em.fresh(), em.constant(1.0, dt), em.fresh(), em.fresh()
        em.line("%s = math.absf %s : %s" % (ab, b, dt))
        em.line("%s = arith.addf %s, %s : %s" % (d, one, ab, dt))
        em.line("%s = arith.divf %s, %s : %s" % (r, a, d, dt))
        return r
    if k == "sel":
        c = _cond_emit(em, e[1], argnames, dt, idxnames)
        a = _expr_emit(em, e[2], argnames, dt, idxnames)
        b = _expr_emit(em, e[3], argnames, dt, idxnames)
        r = em.fresh()
        em.line("%s = arith.select %s, %s, %s : %s" % (r, c, a, b, dt))
        return r
    raise ValueError(k)


def _cond_emit(em, c, argnames, dt, idxnames):
    r = em.fresh("p")
    if c[0] in ("cmpf", "cmpi"):
        x = _expr_emit(em, c[2], argnames, dt, idxnames)
        k = em.constant(c[3], dt)
        em.line("%s = arith.%s %s, %s, %s : %s" % (r, c[0], c[1], x, k, dt))
        return r
    _, pred, da, db, k = c
    lhs = idxnames(da)
    if db is None:
        rhs = em.fresh()
        em.line("%s = arith.constant %d : index" % (rhs, k))
    elif k == 0:
        rhs = idxnames(db)
    else:
        kk = em.fresh()
        em.line("%s = arith.constant %d : index" % (kk, k))
        rhs = em.fresh()
        em.line("%s = arith.addi %s, %s : index" % (rhs, idxnames(db), kk))
    em.line("%s = arith.cmpi %s, %s, %s : index" % (r, pred, lhs, rhs))
    return r


# ---------------------------------------------------------------- nodes

class Node:
    """One value of the program: kind, operand node ids, attributes, and the
    result's shape and element type."""

    def __init__(self, kind, operands, attrs, shape, dt):
        self.kind = kind
        self.operands = list(operands)
        self.attrs = dict(attrs)
        self.shape = tuple(d if isinstance(d, Sym) else int(d) for d in shape)
        self.dt = dt

    def to_json(self):
        return {"kind": self.kind, "operands": self.operands, "attrs": _jsonable(self.attrs),
                "shape": list(self.shape), "dt": self.dt}

    @staticmethod
    def from_json(d):
        return Node(d["kind"], d["operands"], _unjson(d["attrs"]), d["shape"], d["dt"])


def _jsonable(v):
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, tuple):
        return {"__tuple__": [_jsonable(x) for x in v]}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f) or math.isinf(f):
            return {"__float__": repr(f)}
        return f
    return v


def _unjson(v):
    if isinstance(v, dict):
        if "__tuple__" in v:
            return tuple(_unjson(x) for x in v["__tuple__"])
        if "__float__" in v:
            return float(v["__float__"])
        return {k: _unjson(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_unjson(x) for x in v]
    return v


class Program:
    def __init__(self, nodes, outputs, inputs):
        self.nodes = nodes          # [Node]
        self.outputs = list(outputs)  # node ids returned, in order
        self.inputs = inputs        # {node id: value array (float64/int64)}

    # ---- structure
    def input_ids(self):
        return [i for i, n in enumerate(self.nodes) if n.kind == "input"]

    def live(self):
        """Node ids the outputs depend on."""
        seen = set()
        stack = list(self.outputs)
        while stack:
            i = stack.pop()
            if i in seen:
                continue
            seen.add(i)
            stack.extend(self.nodes[i].operands)
        return seen

    def compact(self):
        """Drops dead nodes and renumbers."""
        live = self.live()
        order = [i for i in range(len(self.nodes)) if i in live]
        new = {old: k for k, old in enumerate(order)}
        nodes = []
        for old in order:
            n = self.nodes[old]
            nodes.append(Node(n.kind, [new[o] for o in n.operands], n.attrs, n.shape, n.dt))
        inputs = {new[i]: v for i, v in self.inputs.items() if i in new}
        return Program(nodes, [new[o] for o in self.outputs], inputs)

    def to_json(self):
        return {"nodes": [n.to_json() for n in self.nodes], "outputs": self.outputs}

    # ---- numpy
    def evaluate(self, noise=None):
        """Every node's value. With `noise` (a numpy Generator), each float
        result is perturbed by up to one unit in the last place of its type,
        a contraction's by sqrt(K) units of its absolute sum: how far a
        correct compiler's rounding and summation order may move the values
        (the oracle's tolerance comes from the spread of noisy runs)."""
        vals = {}
        for i, n in enumerate(self.nodes):
            if n.kind == "input":
                vals[i] = self.inputs[i]
                continue
            ops = [vals[o] for o in n.operands]
            _NOISE[0] = noise
            try:
                v = EVAL[n.kind](n, ops)
            finally:
                _NOISE[0] = None
            assert v.shape == n.shape, (n.kind, v.shape, n.shape)
            if noise is not None and is_float(n.dt):
                with np.errstate(all="ignore"):
                    scale = np.abs(v)
                    k = CONTRACTED.get(n.kind, lambda n, ops: 0)(n, ops)
                    # Sums in f16/bf16 are off by up to K roundoffs (the
                    # running sum swallows small terms); f32 by sqrt(K), or
                    # K past LONG_F32_SUM terms.
                    kf = k if n.dt in LOW_PRECISION_SUM or k > LONG_F32_SUM else math.sqrt(k)
                    if n.kind == "softmax":
                        scale = scale * (2 + kf)
                    elif k:
                        absum = EVAL[n.kind](n, [np.abs(x) for x in ops])
                        scale = scale + kf * np.abs(absum)
                    v = v + NOISE_ULPS * 2 * EPS[n.dt] * scale * noise.uniform(-1, 1, size=v.shape)
            vals[i] = v
        return vals

    def c_inputs(self):
        return [to_c(self.inputs[i], self.nodes[i].dt) for i in self.input_ids()]

    def c_outputs(self):
        return [(self.nodes[o].shape, c_dtype(self.nodes[o].dt)) for o in self.outputs]

    # ---- MLIR
    def emit(self, name="f"):
        em = Emitter()
        names = {}
        args = []
        for i in self.input_ids():
            names[i] = "%%a%d" % len(args)
            # Every second argument (a contraction's B, a convolution's
            # filter) is marked unchanged between calls, as a model's
            # weights are: pbc-pack-once keeps its packed tiles across the
            # two calls run_child.py makes; the others are packed per call.
            mark = " {pbc.invariant}" if len(args) % 2 else ""
            args.append("%s: %s%s" % (names[i], ttype(self.nodes[i].shape, self.nodes[i].dt), mark))
        for i in self.input_ids():  # a dynamic size: read from the first input that has it
            dims = [d for d, s in enumerate(self.nodes[i].shape) if isinstance(s, Sym)]
            if dims:
                em.line("%%symd = arith.constant %d : index" % dims[0])
                em.line("%s = tensor.dim %s, %%symd : %s"
                        % (SYM_SIZE, names[i], ttype(self.nodes[i].shape, self.nodes[i].dt)))
                break
        for i, n in enumerate(self.nodes):
            if n.kind != "input":
                names[i] = EMIT[n.kind](em, n, [names[o] for o in n.operands],
                                        [self.nodes[o] for o in n.operands])
        rt = [ttype(self.nodes[o].shape, self.nodes[o].dt) for o in self.outputs]
        res = ", ".join(rt) if len(rt) == 1 else "(" + ", ".join(rt) + ")"
        body = "\n".join(em.lines)
        return ("  func.func @%s(%s) -> %s {\n%s\n    return %s : %s\n  }\n"
                % (name, ", ".join(args), res, body,
                   ", ".join(names[o] for o in self.outputs), ", ".join(rt)))


def module(funcs):
    return "module {\n" + "".join(funcs) + "}\n"


# ---------------------------------------------------------------- op kinds
# Each kind: EMIT[kind](emitter, node, operand names, operand nodes) -> name
#            EVAL[kind](node, operand values) -> value

EMIT, EVAL = {}, {}


def kind(name):
    def reg(pair):
        EMIT[name], EVAL[name] = pair
        return pair
    return reg


# -- elementwise generic: operands broadcast into the result by projections
def _ewise_emit(em, n, names, ops):
    r = len(n.shape)
    maps = [amap(r, ["d%d" % d for d in m]) for m in n.attrs["maps"]]
    maps.append(amap(r, ["d%d" % d for d in range(r)]))
    e = em.empty(n.shape, n.dt)
    out = em.fresh()
    ins = ", ".join(names)
    tys = ", ".join(ttype(o.shape, o.dt) for o in ops)
    em.line("%s = linalg.generic {indexing_maps = [%s], iterator_types = %s}"
            % (out, ", ".join(maps), iters(["parallel"] * r)))
    em.line("    ins(%s : %s) outs(%s : %s) {" % (ins, tys, e, ttype(n.shape, n.dt)))
    bargs = ["%%b%d" % k for k in range(len(ops))]
    em.line("  ^bb0(%s, %%bo: %s):" % (", ".join("%s: %s" % (b, o.dt) for b, o in zip(bargs, ops)), n.dt))
    idx = {}

    def idxname(d):
        if d not in idx:
            idx[d] = em.fresh("i")
            em.line("%s = linalg.index %d : index" % (idx[d], d))
        return idx[d]
    v = _expr_emit(em, n.attrs["expr"], bargs, n.dt, idxname)
    em.line("  linalg.yield %s : %s" % (v, n.dt))
    em.line("} -> %s" % ttype(n.shape, n.dt))
    return out


def _broadcast_to(v, m, shape):
    """Operand value v indexed by result dims m -> array of the result shape."""
    r = len(shape)
    # v's axis k is result dim m[k]; transpose into increasing dim order.
    order = sorted(range(len(m)), key=lambda k: m[k])
    vt = np.transpose(v, order) if len(m) > 1 else v
    dims = sorted(m)
    full = [1] * r
    for k, d in enumerate(dims):
        full[d] = vt.shape[k]
    return np.broadcast_to(np.reshape(vt, full), shape)


def _ewise_eval(n, vals):
    args = [_broadcast_to(v, m, n.shape) for v, m in zip(vals, n.attrs["maps"])]
    idx = np.indices(n.shape) if n.shape else []
    out = _expr_eval(n.attrs["expr"], args, idx, n.dt)
    return round_to(np.broadcast_to(out, n.shape), n.dt).copy()


kind("ewise")((_ewise_emit, _ewise_eval))


# -- linalg.elementwise (MLIR 22's named op)
ELEMENTWISE_UN = {"exp": np.exp, "abs": np.abs, "negf": np.negative, "tanh": np.tanh,
                  "square": np.square}
ELEMENTWISE_BIN = {"add": np.add, "sub": np.subtract, "mul": np.multiply,
                   "max_signed": np.maximum, "min_signed": np.minimum}


def _named_ew_emit(em, n, names, ops):
    e = em.empty(n.shape, n.dt)
    out = em.fresh()
    tys = ", ".join(ttype(o.shape, o.dt) for o in ops)
    em.line("%s = linalg.elementwise kind=#linalg.elementwise_kind<%s> ins(%s : %s) outs(%s : %s) -> %s"
            % (out, n.attrs["op"], ", ".join(names), tys, e, ttype(n.shape, n.dt),
               ttype(n.shape, n.dt)))
    return out


def _named_ew_eval(n, vals):
    f = ELEMENTWISE_UN.get(n.attrs["op"]) or ELEMENTWISE_BIN[n.attrs["op"]]
    with np.errstate(all="ignore"):
        return round_to(f(*vals), n.dt)


kind("elementwise")((_named_ew_emit, _named_ew_eval))


# -- contractions: matmul (optionally B transposed), batch_matmul, matvec, and
# an i8 x i8 -> i32 / f16 -> f32 accumulating generic.
def _init(em, n, names, ops):
    """The accumulator: a fill of attrs['init'], the last operand (a value
    of the result's shape: C = C0 + A B), or with attrs['bias'] the last
    operand (a vector) broadcast along the result's last dimension, as
    frontends write a layer's bias."""
    if n.attrs.get("acc"):
        return names[-1]
    if n.attrs.get("bias"):
        r = len(n.shape)
        dims = ", ".join("d%d" % i for i in range(r))
        e = em.empty(n.shape, n.dt)
        out = em.fresh()
        em.line("%s = linalg.generic {indexing_maps = [affine_map<(%s) -> (d%d)>, "
                "affine_map<(%s) -> (%s)>], iterator_types = [%s]} ins(%s : %s) outs(%s : %s) {"
                % (out, dims, r - 1, dims, dims, ", ".join(['"parallel"'] * r), names[-1],
                   ttype(ops[-1].shape, ops[-1].dt), e, ttype(n.shape, n.dt)))
        em.line("^bb0(%%bi: %s, %%bo: %s):" % (n.dt, n.dt))
        em.line("  linalg.yield %%bi : %s" % n.dt)
        em.line("} -> %s" % ttype(n.shape, n.dt))
        return out
    return em.filled(n.shape, n.dt, n.attrs["init"])


def _matmul_emit(em, n, names, ops):
    a, b = names[0], names[1]
    c = _init(em, n, names, ops)
    out = em.fresh()
    form = n.attrs["form"]
    tys = "%s, %s" % (ttype(ops[0].shape, ops[0].dt), ttype(ops[1].shape, ops[1].dt))
    ct = ttype(n.shape, n.dt)
    if form == "matmul":
        em.line("%s = linalg.matmul ins(%s, %s : %s) outs(%s : %s) -> %s" % (out, a, b, tys, c, ct, ct))
    elif form == "matmul_tb":
        em.line("%s = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, "
                "affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>] "
                "ins(%s, %s : %s) outs(%s : %s) -> %s" % (out, a, b, tys, c, ct, ct))
    elif form == "batch_matmul":
        em.line("%s = linalg.batch_matmul ins(%s, %s : %s) outs(%s : %s) -> %s"
                % (out, a, b, tys, c, ct, ct))
    elif form == "matvec":
        em.line("%s = linalg.matvec ins(%s, %s : %s) outs(%s : %s) -> %s" % (out, a, b, tys, c, ct, ct))
    elif form in ("generic_tb", "generic_ext"):
        # C[m,n] += ext(A[m,k]) * ext(B[n,k] or B[k,n]) in the result's type.
        tb = n.attrs.get("tb", True)
        bmap = "affine_map<(m, n, k) -> (n, k)>" if tb else "affine_map<(m, n, k) -> (k, n)>"
        em.line("%s = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, %s, "
                "affine_map<(m, n, k) -> (m, n)>], iterator_types = [\"parallel\", \"parallel\", "
                "\"reduction\"]}" % (out, bmap))
        em.line("    ins(%s, %s : %s) outs(%s : %s) {" % (a, b, tys, c, ct))
        em.line("  ^bb0(%%x: %s, %%y: %s, %%acc: %s):" % (ops[0].dt, ops[1].dt, n.dt))
        x, y = "%x", "%y"
        if ops[0].dt != n.dt:
            ext = "arith.extf" if is_float(n.dt) else "arith.extsi"
            x, y = em.fresh(), em.fresh()
            em.line("%s = %s %%x : %s to %s" % (x, ext, ops[0].dt, n.dt))
            em.line("%s = %s %%y : %s to %s" % (y, ext, ops[1].dt, n.dt))
        p, s = em.fresh(), em.fresh()
        if is_float(n.dt):
            em.line("%s = arith.mulf %s, %s : %s" % (p, x, y, n.dt))
            em.line("%s = arith.addf %%acc, %s : %s" % (s, p, n.dt))
        else:
            em.line("%s = arith.muli %s, %s : %s" % (p, x, y, n.dt))
            em.line("%s = arith.addi %%acc, %s : %s" % (s, p, n.dt))
        em.line("  linalg.yield %s : %s" % (s, n.dt))
        em.line("} -> %s" % ct)
    return out


def _acc_round(n, exact, c0):
    """The contraction's value: float sums are rounded once (pbc and numpy
    may associate differently; the tolerance covers the difference)."""
    return round_to(exact + c0, n.dt)


def _matmul_eval(n, vals):
    a, b = vals[0], vals[1]
    c0 = vals[2] if n.attrs.get("acc") or n.attrs.get("bias") else n.attrs["init"]
    form = n.attrs["form"]
    if form in ("matmul_tb",) or (form in ("generic_tb", "generic_ext") and n.attrs.get("tb", True)):
        b = np.swapaxes(b, -1, -2)
    if form == "matvec":
        exact = a @ b
    else:
        exact = np.matmul(a, b)
    return _acc_round(n, exact, c0)


kind("matmul")((_matmul_emit, _matmul_eval))


# -- convolutions and pooling, NHWC / NCHW, strides and dilations
def _conv_emit(em, n, names, ops):
    a = n.attrs
    c = _init(em, n, names, ops)
    out = em.fresh()
    op = a["op"]
    sd = "{dilations = dense<[%d, %d]> : tensor<2xi64>, strides = dense<[%d, %d]> : tensor<2xi64>}" % (
        a["dil"][0], a["dil"][1], a["stride"][0], a["stride"][1])
    ct = ttype(n.shape, n.dt)
    if op.startswith("pooling"):
        w = em.empty(tuple(a["window"]), n.dt)
        em.line("%s = linalg.%s %s ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
                % (out, op, sd, names[0], w, ttype(ops[0].shape, ops[0].dt),
                   ttype(tuple(a["window"]), n.dt), c, ct, ct))
    else:
        em.line("%s = linalg.%s %s ins(%s, %s : %s, %s) outs(%s : %s) -> %s"
                % (out, op, sd, names[0], names[1], ttype(ops[0].shape, ops[0].dt),
                   ttype(ops[1].shape, ops[1].dt), c, ct, ct))
    return out


def _conv_nhwc(x, w, stride, dil, out_hw):
    """x: N,H,W,C; w: KH,KW,C,F -> N,OH,OW,F (float64)."""
    kh, kw = w.shape[0], w.shape[1]
    oh, ow = out_hw
    acc = np.zeros((x.shape[0], oh, ow, w.shape[3]))
    for i in range(kh):
        for j in range(kw):
            xs = x[:, i * dil[0]: i * dil[0] + (oh - 1) * stride[0] + 1: stride[0],
                   j * dil[1]: j * dil[1] + (ow - 1) * stride[1] + 1: stride[1], :]
            acc += np.tensordot(xs, w[i, j], axes=([3], [0]))
    return acc


def _window(x, i, j, stride, dil, oh, ow):
    return x[:, i * dil[0]: i * dil[0] + (oh - 1) * stride[0] + 1: stride[0],
             j * dil[1]: j * dil[1] + (ow - 1) * stride[1] + 1: stride[1], :]


def _conv_eval(n, vals):
    a = n.attrs
    c0 = vals[-1] if a.get("acc") or a.get("bias") else a["init"]
    op, st, dl = a["op"], a["stride"], a["dil"]
    x = vals[0]
    if op == "conv_2d_nhwc_hwcf":
        oh, ow = n.shape[1], n.shape[2]
        r = _conv_nhwc(x, vals[1], st, dl, (oh, ow))
    elif op == "conv_2d_nhwc_fhwc":
        oh, ow = n.shape[1], n.shape[2]
        r = _conv_nhwc(x, np.transpose(vals[1], (1, 2, 3, 0)), st, dl, (oh, ow))
    elif op == "conv_2d_nchw_fchw":
        oh, ow = n.shape[2], n.shape[3]
        r = _conv_nhwc(np.transpose(x, (0, 2, 3, 1)), np.transpose(vals[1], (2, 3, 1, 0)),
                       st, dl, (oh, ow))
        r = np.transpose(r, (0, 3, 1, 2))
    elif op == "depthwise_conv_2d_nhwc_hwc":
        oh, ow = n.shape[1], n.shape[2]
        w = vals[1]
        r = np.zeros(n.shape)
        for i in range(w.shape[0]):
            for j in range(w.shape[1]):
                r += _window(x, i, j, st, dl, oh, ow) * w[i, j]
    elif op in ("pooling_nhwc_max", "pooling_nhwc_sum"):
        oh, ow = n.shape[1], n.shape[2]
        kh, kw = a["window"]
        wins = [_window(x, i, j, st, dl, oh, ow) for i in range(kh) for j in range(kw)]
        if op == "pooling_nhwc_max":
            r = np.maximum(np.max(np.stack(wins), axis=0), c0)
            return round_to(r, n.dt)
        r = np.sum(np.stack(wins), axis=0)
    else:
        raise ValueError(op)
    return _acc_round(n, r, c0)


kind("conv")((_conv_emit, _conv_eval))


# -- tensor.pad with a constant
def _pad_emit(em, n, names, ops):
    lo, hi = n.attrs["lo"], n.attrs["hi"]
    out = em.fresh()
    em.line("%s = tensor.pad %s low[%s] high[%s] {" % (out, names[0], ", ".join(map(str, lo)),
                                                       ", ".join(map(str, hi))))
    em.line("^bb0(%s):" % ", ".join("%%p%d: index" % k for k in range(len(lo))))
    c = em.constant(n.attrs["value"], n.dt)
    em.line("  tensor.yield %s : %s" % (c, n.dt))
    em.line("} : %s to %s" % (ttype(ops[0].shape, ops[0].dt), ttype(n.shape, n.dt)))
    return out


def _pad_eval(n, vals):
    return np.pad(vals[0], list(zip(n.attrs["lo"], n.attrs["hi"])), constant_values=n.attrs["value"])


kind("pad")((_pad_emit, _pad_eval))


# -- reductions along any set of dims (to rank 0 too)
def _reduce_emit(em, n, names, ops):
    a = n.attrs
    src = ops[0]
    dims = a["dims"]
    c = _init(em, n, names, ops)
    out = em.fresh()
    ct = ttype(n.shape, n.dt)
    opname = a["op"]
    if a["form"] == "reduce":
        em.line("%s = linalg.reduce ins(%s : %s) outs(%s : %s) dimensions = [%s]"
                % (out, names[0], ttype(src.shape, src.dt), c, ct, ", ".join(map(str, dims))))
        em.line("  (%%x: %s, %%y: %s) {" % (n.dt, n.dt))
        s = em.fresh()
        em.line("    %s = arith.%s %%x, %%y : %s" % (s, opname, n.dt))
        em.line("    linalg.yield %s : %s" % (s, n.dt))
        em.line("  }")
    else:
        r = len(src.shape)
        keep = [d for d in range(r) if d not in dims]
        kinds = ["reduction" if d in dims else "parallel" for d in range(r)]
        em.line("%s = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}"
                % (out, amap(r, ["d%d" % d for d in range(r)]), amap(r, ["d%d" % d for d in keep]),
                   iters(kinds)))
        em.line("    ins(%s : %s) outs(%s : %s) {" % (names[0], ttype(src.shape, src.dt), c, ct))
        em.line("  ^bb0(%%x: %s, %%y: %s):" % (n.dt, n.dt))
        s = em.fresh()
        em.line("    %s = arith.%s %%x, %%y : %s" % (s, opname, n.dt))
        em.line("  linalg.yield %s : %s" % (s, n.dt))
        em.line("} -> %s" % ct)
    return out


def _reduce_eval(n, vals):
    a = n.attrs
    c0 = vals[-1] if a.get("acc") or a.get("bias") else a["init"]
    x = vals[0]
    ax = tuple(a["dims"])
    if a["op"] in ("addf", "addi"):
        return _acc_round(n, np.sum(x, axis=ax), c0)
    if a["op"] in ("maximumf", "maxsi"):
        return round_to(np.maximum(np.max(x, axis=ax), c0), n.dt)
    if a["op"] in ("minimumf", "minsi"):
        return round_to(np.minimum(np.min(x, axis=ax), c0), n.dt)
    raise ValueError(a["op"])


kind("reduce")((_reduce_emit, _reduce_eval))


# -- softmax
def _softmax_emit(em, n, names, ops):
    e = em.empty(n.shape, n.dt)
    out = em.fresh()
    t = ttype(n.shape, n.dt)
    em.line("%s = linalg.softmax dimension(%d) ins(%s : %s) outs(%s : %s) -> %s"
            % (out, n.attrs["dim"], names[0], t, e, t, t))
    return out


def _softmax_eval(n, vals):
    x = vals[0]
    d = n.attrs["dim"]
    m = np.max(x, axis=d, keepdims=True)
    e = np.exp(x - m)
    return round_to(e / np.sum(e, axis=d, keepdims=True), n.dt)


kind("softmax")((_softmax_emit, _softmax_eval))


# -- layout: transpose, broadcast, reshape, slices, concat
def _layout_emit(op, listed, key):
    """linalg.transpose / linalg.broadcast: one input, an empty init, and a
    list attribute (`permutation` / `dimensions`) from attrs[key]."""
    def emit_(em, n, names, ops):
        e = em.empty(n.shape, n.dt)
        out = em.fresh()
        em.line("%s = linalg.%s ins(%s : %s) outs(%s : %s) %s = [%s]"
                % (out, op, names[0], ttype(ops[0].shape, ops[0].dt), e, ttype(n.shape, n.dt),
                   listed, ", ".join(map(str, n.attrs[key]))))
        return out
    return emit_


kind("transpose")((_layout_emit("transpose", "permutation", "perm"),
                   lambda n, v: np.transpose(v[0], n.attrs["perm"]).copy()))


def _bcast_eval(n, vals):
    keep = [d for d in range(len(n.shape)) if d not in n.attrs["dims"]]
    return _broadcast_to(vals[0], keep, n.shape).copy()


kind("broadcast")((_layout_emit("broadcast", "dimensions", "dims"), _bcast_eval))


def _reassoc_str(groups):
    return "[" + ", ".join("[" + ", ".join(map(str, g)) + "]" for g in groups) + "]"


def _expand_emit(em, n, names, ops):
    out = em.fresh()
    em.line("%s = tensor.expand_shape %s %s output_shape [%s] : %s into %s"
            % (out, names[0], _reassoc_str(n.attrs["groups"]), ", ".join(map(str, n.shape)),
               ttype(ops[0].shape, ops[0].dt), ttype(n.shape, n.dt)))
    return out


def _collapse_emit(em, n, names, ops):
    out = em.fresh()
    em.line("%s = tensor.collapse_shape %s %s : %s into %s"
            % (out, names[0], _reassoc_str(n.attrs["groups"]),
               ttype(ops[0].shape, ops[0].dt), ttype(n.shape, n.dt)))
    return out


kind("expand")((_expand_emit, lambda n, v: np.reshape(v[0], n.shape).copy()))
kind("collapse")((_collapse_emit, lambda n, v: np.reshape(v[0], n.shape).copy()))


def _slice_emit(em, n, names, ops):
    a = n.attrs
    out = em.fresh()
    em.line("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s"
            % (out, names[0], ", ".join(map(str, a["off"])), ", ".join(map(str, n.shape)),
               ", ".join(map(str, a["step"])), ttype(ops[0].shape, ops[0].dt), ttype(n.shape, n.dt)))
    return out


def _slice_eval(n, vals):
    a = n.attrs
    sl = tuple(slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(a["off"], n.shape, a["step"]))
    return vals[0][sl].copy()


kind("slice")((_slice_emit, _slice_eval))


def _insert_emit(em, n, names, ops):
    a = n.attrs
    out = em.fresh()
    em.line("%s = tensor.insert_slice %s into %s[%s] [%s] [%s] : %s into %s"
            % (out, names[0], names[1], ", ".join(map(str, a["off"])),
               ", ".join(map(str, ops[0].shape)), ", ".join(map(str, a["step"])),
               ttype(ops[0].shape, ops[0].dt), ttype(n.shape, n.dt)))
    return out


def _insert_eval(n, vals):
    a = n.attrs
    r = vals[1].copy()
    sl = tuple(slice(o, o + (s - 1) * st + 1, st) for o, s, st in zip(a["off"], vals[0].shape, a["step"]))
    r[sl] = vals[0]
    return r


kind("insert")((_insert_emit, _insert_eval))


def _concat_emit(em, n, names, ops):
    out = em.fresh()
    em.line("%s = tensor.concat dim(%d) %s : (%s) -> %s"
            % (out, n.attrs["dim"], ", ".join(names), ", ".join(ttype(o.shape, o.dt) for o in ops),
               ttype(n.shape, n.dt)))
    return out


kind("concat")((_concat_emit, lambda n, v: np.concatenate(v, axis=n.attrs["dim"])))


# -- element type conversions
def _cast_emit(em, n, names, ops):
    src = ops[0]
    r = len(n.shape)
    e = em.empty(n.shape, n.dt)
    out = em.fresh()
    idm = amap(r, ["d%d" % d for d in range(r)])
    em.line("%s = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}"
            % (out, idm, idm, iters(["parallel"] * r)))
    em.line("    ins(%s : %s) outs(%s : %s) {" % (names[0], ttype(src.shape, src.dt), e,
                                                 ttype(n.shape, n.dt)))
    em.line("  ^bb0(%%x: %s, %%o: %s):" % (src.dt, n.dt))
    y = em.fresh()
    em.line("%s = arith.%s %%x : %s to %s" % (y, n.attrs["op"], src.dt, n.dt))
    em.line("  linalg.yield %s : %s" % (y, n.dt))
    em.line("} -> %s" % ttype(n.shape, n.dt))
    return out


def _cast_eval(n, vals):
    return round_to(vals[0], n.dt)


kind("cast")((_cast_emit, _cast_eval))


# -- gathers (an embedding): out[s..., d] = table[idx[s...], d], the index
# read from an i32 tensor. pbc clamps an index read from data into the
# table (XLA's semantics): out-of-range indices read the first or last row.
def _gather_emit(em, n, names, ops):
    table, idx = ops
    r = len(n.shape)
    e = em.empty(n.shape, n.dt)
    out = em.fresh()
    em.line("%s = linalg.generic {indexing_maps = [%s, %s], iterator_types = %s}"
            % (out, amap(r, ["d%d" % d for d in range(r - 1)]),
               amap(r, ["d%d" % d for d in range(r)]), iters(["parallel"] * r)))
    em.line("    ins(%s : %s) outs(%s : %s) {" % (names[1], ttype(idx.shape, idx.dt), e,
                                                 ttype(n.shape, n.dt)))
    em.line("  ^bb0(%%x: %s, %%o: %s):" % (idx.dt, n.dt))
    i, d, v = em.fresh(), em.fresh(), em.fresh()
    em.line("%s = arith.index_cast %%x : %s to index" % (i, idx.dt))
    em.line("%s = linalg.index %d : index" % (d, r - 1))
    em.line("%s = tensor.extract %s[%s, %s] : %s" % (v, names[0], i, d,
                                                    ttype(table.shape, table.dt)))
    em.line("  linalg.yield %s : %s" % (v, n.dt))
    em.line("} -> %s" % ttype(n.shape, n.dt))
    return out


def _gather_eval(n, vals):
    table, idx = vals
    return table[np.clip(idx, 0, table.shape[0] - 1)].copy()


kind("gather")((_gather_emit, _gather_eval))


# ---------------------------------------------------------------- generation

def fresh_input(rng, shape, dt):
    """Random non-zero values of an input: magnitudes 0.1..1 (floats) or
    1..7 / 1..50 (i8 / i32), either sign."""
    if is_float(dt):
        mag = rng.uniform(0.1, 1.0, size=shape) * rng.choice([-1.0, 1.0], size=shape)
    else:
        hi = 7 if dt == "i8" else 50
        mag = rng.integers(1, hi + 1, size=shape) * rng.choice([-1, 1], size=shape)
    return round_to(np.asarray(mag).reshape(shape), dt)


class Gen:
    """Draws one program. `families` restricts the op kinds drawn."""

    FAMILIES = ("ewise", "elementwise", "matmul", "conv", "pool", "reduce", "softmax",
                "transpose", "broadcast", "reshape", "slice", "insert", "concat", "pad",
                "cast", "mask", "mask", "attention", "gather")

    def __init__(self, rng, dt, families=None, max_ops=10):
        self.rng = rng
        self.dt = dt
        self.nodes = []
        self.vals = []
        self.inputs = {}
        self.families = families or self.FAMILIES
        self.max_ops = max_ops
        self.big = rng.random() < BIG_SHARE
        self.max_elems = BIG_MAX_ELEMS if self.big else MAX_ELEMS
        self.max_macs = BIG_MAX_MACS if self.big else MAX_MACS

    # ---- random helpers
    def r(self, n):
        return int(self.rng.integers(0, n))

    def chance(self, p):
        return self.rng.random() < p

    def choice(self, seq):
        return seq[self.r(len(seq))]

    def dim(self, big=0.08):
        if self.big and self.chance(0.4):
            return self.choice(HUGE_DIMS)
        if self.chance(big):
            return self.choice(BIG_DIMS)
        return self.choice(EDGE_DIMS)

    def shape(self, rank, limit=None):
        limit = limit or self.max_elems
        for _ in range(20):
            s = tuple(self.dim() for _ in range(rank))
            if int(np.prod(s)) <= limit:
                return s
        return tuple(self.choice((1, 2, 3, 5, 8)) for _ in range(rank))

    # ---- values
    def add(self, kind, operands, attrs, shape, dt):
        n = Node(kind, operands, attrs, shape, dt)
        val = EVAL[kind](n, [self.vals[o] for o in operands])
        self.nodes.append(n)
        self.vals.append(val)
        return len(self.nodes) - 1

    def new_input(self, shape, dt=None):
        dt = dt or self.dt
        v = fresh_input(self.rng, shape, dt)
        n = Node("input", [], {}, shape, dt)
        self.nodes.append(n)
        self.vals.append(v)
        self.inputs[len(self.nodes) - 1] = v
        return len(self.nodes) - 1

    def mag(self, i):
        v = self.vals[i]
        if v.size == 0:
            return 0.0
        f = np.abs(v[np.isfinite(v)]) if is_float(self.nodes[i].dt) else np.abs(v)
        return float(f.max()) if f.size else 0.0

    def tame(self, i):
        """A value of node i scaled under its type's limit (a multiply by a
        power of two, exact), or i itself."""
        n = self.nodes[i]
        m = self.mag(i)
        lim = MAG_LIMIT[n.dt]
        if not is_float(n.dt) or m <= lim:
            return i
        k = 2.0 ** -math.ceil(math.log2(m / (lim / 4)))
        expr = ("bin", "mulf", ("arg", 0), ("const", k))
        return self.add("ewise", [i], {"maps": [list(range(len(n.shape)))], "expr": expr},
                        n.shape, n.dt)

    def pick_value(self, pred=lambda n: True, dt=None):
        dt = dt or self.dt
        cands = [i for i, n in enumerate(self.nodes) if n.dt == dt and pred(n)]
        if not cands:
            return None
        # Prefer recent values: programs become chains with some fan-in.
        w = np.arange(1, len(cands) + 1, dtype=np.float64) ** 2
        i = cands[int(self.rng.choice(len(cands), p=w / w.sum()))]
        return self.tame(i)

    def value_of_shape(self, shape, dt=None, fresh=0.4):
        dt = dt or self.dt
        if not self.chance(fresh):
            i = self.pick_value(lambda n: n.shape == tuple(shape), dt)
            if i is not None:
                return i
        return self.new_input(tuple(shape), dt)

    def any_value(self, rank_lo=0, rank_hi=4, dt=None):
        i = self.pick_value(lambda n: rank_lo <= len(n.shape) <= rank_hi, dt)
        if i is None or self.chance(0.15):
            i = self.new_input(self.shape(self.r(rank_hi - max(rank_lo, 1) + 1) + max(rank_lo, 1)), dt)
        return i

    # ---- expression trees (elementwise bodies)
    def expr(self, args, idx_shape, depth, mask=False):
        """A tree over args (arrays of the result shape), evaluated as built
        so that exp sees bounded inputs and comparisons keep a margin."""
        dt = self.dt
        idx = np.indices(idx_shape) if idx_shape else []
        intt = not is_float(dt)

        def leaf():
            if self.chance(0.8) or not args:
                k = self.r(len(args))
                return ("arg", k), args[k]
            if intt:
                v = int(self.rng.integers(-5, 6)) or 1
            else:
                v = const_value(self.choice([0.5, -1.5, 2.0, 0.125, 3.0, -0.75]), dt)
            return ("const", v), (np.int64(v) if intt else np.float64(v))

        def grow(d):
            if d == 0 or self.chance(0.25):
                return leaf()
            roll = self.rng.random()
            if mask and roll < 0.3:
                return self.masked(grow, d, idx, idx_shape)
            if intt:
                a, av = grow(d - 1)
                b, bv = grow(d - 1)
                op = self.choice(IBIN)
                e = ("bin", op, a, b)
                return e, self._ev(e, args, idx)
            if roll < 0.35:
                a, av = grow(d - 1)
                op = self.choice(("negf", "absf", "tanh", "exp", "sqrtabs", "relu"))
                if op == "exp":
                    lim = 8.0 if dt != "f32" else 30.0
                    fin = np.abs(av[np.isfinite(av)]) if np.ndim(av) else np.abs(av)
                    if np.size(fin) and np.max(fin) > lim:
                        a = ("un", "tanh", a)
                e = ("un", op, a)
                return e, self._ev(e, args, idx)
            if roll < 0.85:
                a, _ = grow(d - 1)
                b, _ = grow(d - 1)
                e = ("bin", self.choice(FBIN), a, b)
                return e, self._ev(e, args, idx)
            a, _ = grow(d - 1)
            b, _ = grow(d - 1)
            e = ("divp", a, b)
            return e, self._ev(e, args, idx)

        e, _ = grow(depth)
        return e

    def _ev(self, e, args, idx):
        return _expr_eval(e, args, idx, self.dt)

    def masked(self, grow, d, idx, shape):
        """select(cond, a, b): an index mask (j > i, i == k, ...), or a
        comparison of a value with a threshold no element is close to."""
        r = len(shape)
        a, _ = grow(d - 1)
        if self.chance(0.4) and is_float(self.dt):
            b = ("const", self.choice([float("-inf"), -1e4 if self.dt == "f32" else -60.0, 0.0]))
        else:
            b, _ = grow(d - 1)
        if not is_float(self.dt) and not r:
            x, xv = grow(d - 1)
            cond = ("cmpi", self.choice(("slt", "sgt", "eq", "ne")), x, int(self.rng.integers(-3, 4)))
        elif r and (self.chance(0.75) or not is_float(self.dt)):
            pred = self.choice(list(IPRED))
            da = self.r(r)
            if r > 1 and self.chance(0.7):
                db = self.choice([x for x in range(r) if x != da])
                k = self.choice([0, 0, 0, 1, -1, 2])
                if pred.startswith("u") and k < 0:
                    k = 0
            else:
                db, k = None, self.r(max(shape[da], 1) + 1)
            cond = ("imask", pred, da, db, k)
        else:
            x, xv = grow(d - 1)
            xv = np.asarray(xv, np.float64)
            if not np.isfinite(xv).all():
                return grow(d - 1)
            m = max(1.0, float(np.max(np.abs(xv))) if xv.size else 1.0)
            tol = (1e-3 if self.dt == "f32" else 0.1) * m
            t = None
            for _ in range(8):
                cand = const_value(float(self.rng.uniform(-1, 1)) * m, self.dt)
                if np.all(np.abs(xv - cand) > tol):
                    t = cand
                    break
            if t is None:
                return grow(d - 1)
            cond = ("cmpf", self.choice(list(FPRED)), x, t)
        e = ("sel", cond, a, b)
        return e, self._ev(e, self._args_cache, idx)

    # ---- op families
    def g_ewise(self, mask=False):
        mask = mask or self.chance(0.25)
        out = self.any_value(0, 4)
        shape = self.nodes[out].shape
        r = len(shape)
        operands, maps = [out], [list(range(r))]
        for _ in range(self.r(3)):
            if r and self.chance(0.5):
                # A broadcast operand: a subset of the result's dims, maybe transposed.
                keep = sorted(self.rng.choice(r, size=self.r(r) + 1, replace=False).tolist())
                m = list(keep)
                if len(m) > 1 and self.chance(0.3):
                    m = m[::-1]
                o = self.value_of_shape(tuple(shape[d] for d in m))
            else:
                m = list(range(r))
                o = self.value_of_shape(shape)
            operands.append(o)
            maps.append(m)
        args = [_broadcast_to(self.vals[o], m, shape) for o, m in zip(operands, maps)]
        self._args_cache = args
        e = self.expr(args, shape, self.r(3) + 1, mask=mask)
        return self.add("ewise", operands, {"maps": maps, "expr": e}, shape, self.dt)

    def g_mask(self):
        return self.g_ewise(mask=True)

    def g_attention(self):
        """Scaled dot-product attention, causal or padding-masked or not, in
        one of the forms frontends write: K transposed by linalg.transpose
        or read transposed, softmax as linalg.softmax or decomposed into
        max / exp / sum / divide."""
        if not is_float(self.dt):
            return None
        b = self.choice((1, 2, 4, 12))
        sq = self.choice((1, 7, 16, 17, 64, 100, 128))
        sk = sq if self.chance(0.7) else self.choice((8, 33, 128))
        d = self.choice((8, 16, 32, 64))
        if b * sq * sk * d > self.max_macs:
            return None
        q = self.new_input((b, sq, d))
        k = self.new_input((b, sk, d))
        v = self.new_input((b, sk, d))
        kt = self.add("transpose", [k], {"perm": [0, 2, 1]}, (b, d, sk), self.dt)
        s = self.add("matmul", [q, kt], {"form": "batch_matmul", "init": 0.0}, (b, sq, sk), self.dt)
        scale = const_value(1.0 / math.sqrt(d), self.dt)
        fill = self.choice((float("-inf"), -1e4 if self.dt == "f32" else -60.0))
        da, db = (2, 1) if self.chance(0.8) else (1, 2)
        pred = self.choice(("ugt", "uge", "ult"))
        masked = ("bin", "mulf", ("arg", 0), ("const", scale))
        if self.chance(0.8):  # a row masked whole is NaN (-inf fill), in numpy too
            masked = ("sel", ("imask", pred, da, db, 0), ("const", fill), masked)
        m = self.add("ewise", [s], {"maps": [[0, 1, 2]], "expr": masked}, (b, sq, sk), self.dt)
        if self.chance(0.5):
            p = self.add("softmax", [m], {"dim": 2}, (b, sq, sk), self.dt)
        else:
            mx = self.add("reduce", [m], {"dims": [2], "op": "maximumf", "form": "generic",
                                          "init": float("-inf")}, (b, sq), self.dt)
            e = self.add("ewise", [m, mx], {"maps": [[0, 1, 2], [0, 1]],
                                            "expr": ("un", "exp", ("bin", "subf", ("arg", 0), ("arg", 1)))},
                         (b, sq, sk), self.dt)
            sm = self.add("reduce", [e], {"dims": [2], "op": "addf", "form": "generic", "init": 0.0},
                          (b, sq), self.dt)
            p = self.add("ewise", [e, sm], {"maps": [[0, 1, 2], [0, 1]],
                                            "expr": ("bin", "divf", ("arg", 0), ("arg", 1))},
                         (b, sq, sk), self.dt)
        return self.add("matmul", [p, v], {"form": "batch_matmul", "init": 0.0}, (b, sq, d), self.dt)

    def g_elementwise(self):
        if not is_float(self.dt):
            return None
        a = self.any_value(1, 4)
        shape = self.nodes[a].shape
        if self.chance(0.5):
            op = self.choice(("exp", "abs", "negf", "tanh", "square"))
            if op in ("exp", "square") and self.mag(a) > (8 if self.dt != "f32" else 30):
                op = "tanh"
            return self.add("elementwise", [a], {"op": op}, shape, self.dt)
        b = self.value_of_shape(shape)
        op = self.choice(tuple(ELEMENTWISE_BIN))
        return self.add("elementwise", [a, b], {"op": op}, shape, self.dt)

    def contraction_dims(self):
        for _ in range(20):
            m = self.choice((1, 2, 4, 8, 9, 16, 31, 32, 33, 64)) if self.chance(0.4) else self.dim()
            n, k = self.dim(), self.dim()
            if self.dt in ("f16", "bf16"):
                k = min(k, 64)
            if m * n * k <= self.max_macs and m * n <= self.max_elems:
                return m, n, k
        return 8, 16, 16

    def init_attrs(self, shape, attrs, operands):
        if self.chance(0.3):
            operands.append(self.value_of_shape(shape, fresh=0.2))
            attrs["acc"] = True
        elif is_float(self.dt) and self.chance(0.25):
            operands.append(self.value_of_shape((shape[-1],), fresh=0.5))
            attrs["bias"] = True
        else:
            attrs["init"] = 0.0 if is_float(self.dt) else 0
            if self.chance(0.2):
                attrs["init"] = const_value(0.5, self.dt) if is_float(self.dt) else 3

    def g_matmul(self):
        form = self.choice(("matmul", "matmul", "matmul_tb", "batch_matmul", "matvec",
                            "generic_tb", "generic_ext"))
        m, n, k = self.contraction_dims()
        attrs = {"form": form}
        dt = self.dt
        in_dt = dt
        if form == "generic_ext":
            # Narrow operands, wide accumulator: f16/bf16 -> f32, i8 -> i32.
            if dt == "f32":
                in_dt = self.choice(("f16", "bf16"))
            elif dt == "i32":
                in_dt = "i8"
            else:
                form = attrs["form"] = "generic_tb"
            attrs["tb"] = self.chance(0.5)
        elif form == "generic_tb":
            attrs["tb"] = True
        if form == "batch_matmul":
            b = self.choice((1, 2, 3, 4, 12))
            while b * m * n * k > self.max_macs and m > 1:
                m = max(1, m // 2)
            sa, sb, sc = (b, m, k), (b, k, n), (b, m, n)
        elif form == "matvec":
            sa, sb, sc = (m, k), (k,), (m,)
        elif form == "matmul_tb" or (form in ("generic_tb", "generic_ext") and attrs.get("tb", True)):
            sa, sb, sc = (m, k), (n, k), (m, n)
        else:
            sa, sb, sc = (m, k), (k, n), (m, n)
        if not is_float(dt) and form in ("matmul", "matmul_tb", "batch_matmul", "matvec"):
            return None  # integer contractions go through the generic forms
        A = self.value_of_shape(sa, in_dt, fresh=0.5)
        B = self.value_of_shape(sb, in_dt, fresh=0.7)
        operands = [A, B]
        self.init_attrs(sc, attrs, operands)
        return self.add("matmul", operands, attrs, sc, dt)

    def g_conv(self, pool=False):
        if not is_float(self.dt):
            return None
        for _ in range(20):
            nb = self.choice((1, 1, 2))
            h, w = self.choice((1, 3, 5, 7, 8, 9, 12, 14, 17)), self.choice((1, 3, 5, 7, 8, 9, 12, 16, 17, 20))
            c = self.choice((1, 2, 3, 4, 8, 16, 17, 32))
            f = self.choice((1, 4, 8, 16, 24, 32))
            kh, kw = self.choice((1, 2, 3, 5)), self.choice((1, 2, 3, 5))
            st = (self.choice((1, 1, 2, 3)), self.choice((1, 1, 2)))
            dl = (self.choice((1, 1, 2)), self.choice((1, 1, 2)))
            pad = [self.choice((0, 0, 1, 2)) for _ in range(4)]
            ph, pw = h + pad[0] + pad[1], w + pad[2] + pad[3]
            oh = (ph - dl[0] * (kh - 1) - 1) // st[0] + 1
            ow = (pw - dl[1] * (kw - 1) - 1) // st[1] + 1
            if oh >= 1 and ow >= 1 and nb * oh * ow * f * kh * kw * c <= self.max_macs:
                break
        else:
            return None
        if pool:
            op = self.choice(("pooling_nhwc_max", "pooling_nhwc_sum"))
        else:
            op = self.choice(("conv_2d_nhwc_hwcf", "conv_2d_nhwc_hwcf", "conv_2d_nchw_fchw",
                              "depthwise_conv_2d_nhwc_hwc", "conv_2d_nhwc_fhwc"))
        nchw = op == "conv_2d_nchw_fchw"
        xs = (nb, c, h, w) if nchw else (nb, h, w, c)
        x = self.value_of_shape(xs, fresh=0.6)
        if any(pad):
            lo = [0, 0, pad[0], pad[2]] if nchw else [0, pad[0], pad[2], 0]
            hi = [0, 0, pad[1], pad[3]] if nchw else [0, pad[1], pad[3], 0]
            ps = tuple(s + l + u for s, l, u in zip(xs, lo, hi))
            pv = 0.0 if self.chance(0.7) else const_value(0.25, self.dt)
            x = self.add("pad", [x], {"lo": lo, "hi": hi, "value": pv}, ps, self.dt)
        attrs = {"op": op, "stride": list(st), "dil": list(dl)}
        operands = [x]
        if op == "conv_2d_nhwc_hwcf":
            operands.append(self.value_of_shape((kh, kw, c, f), fresh=0.9))
            out = (nb, oh, ow, f)
        elif op == "conv_2d_nhwc_fhwc":
            operands.append(self.value_of_shape((f, kh, kw, c), fresh=0.9))
            out = (nb, oh, ow, f)
        elif op == "conv_2d_nchw_fchw":
            operands.append(self.value_of_shape((f, c, kh, kw), fresh=0.9))
            out = (nb, f, oh, ow)
        elif op == "depthwise_conv_2d_nhwc_hwc":
            operands.append(self.value_of_shape((kh, kw, c), fresh=0.9))
            out = (nb, oh, ow, c)
        else:
            attrs["window"] = [kh, kw]
            out = (nb, oh, ow, c)
        if op == "pooling_nhwc_max":
            attrs["init"] = float("-inf") if self.chance(0.7) else 0.0
        else:
            self.init_attrs(out, attrs, operands)
        return self.add("conv", operands, attrs, out, self.dt)

    def g_pool(self):
        return self.g_conv(pool=True)

    def g_reduce(self):
        x = self.any_value(1, 4)
        shape = self.nodes[x].shape
        r = len(shape)
        if self.chance(0.15):
            dims = list(range(r))
        else:
            dims = sorted(self.rng.choice(r, size=self.r(r) + 1, replace=False).tolist())
            if len(dims) == r and self.chance(0.5):
                dims = dims[:-1] or dims
        out = tuple(s for d, s in enumerate(shape) if d not in dims)
        if int(np.prod([shape[d] for d in dims])) > LOW_PRECISION_SUM.get(self.dt, 1 << 62):
            return None
        fl = is_float(self.dt)
        op = self.choice(("addf", "addf", "maximumf", "minimumf") if fl else ("addi", "maxsi", "minsi"))
        attrs = {"dims": dims, "op": op, "form": self.choice(("reduce", "generic"))}
        operands = [x]
        if self.chance(0.25):
            operands.append(self.value_of_shape(out, fresh=0.3))
            attrs["acc"] = True
        elif op in ("maximumf",):
            attrs["init"] = float("-inf") if self.chance(0.6) else -2.0
        elif op in ("minimumf",):
            attrs["init"] = float("inf") if self.chance(0.6) else 2.0
        elif op == "maxsi":
            attrs["init"] = -(1 << 30)
        elif op == "minsi":
            attrs["init"] = 1 << 30
        else:
            attrs["init"] = 0.0 if fl else 0
        return self.add("reduce", operands, attrs, out, self.dt)

    def g_softmax(self):
        if not is_float(self.dt):
            return None
        x = self.any_value(1, 4)
        d = self.r(len(self.nodes[x].shape))
        if self.nodes[x].shape[d] > LOW_PRECISION_SUM.get(self.dt, 1 << 62):
            return None
        return self.add("softmax", [x], {"dim": d}, self.nodes[x].shape, self.dt)

    def g_transpose(self):
        x = self.any_value(2, 4)
        r = len(self.nodes[x].shape)
        if r < 2:
            return None
        perm = self.rng.permutation(r).tolist()
        shape = tuple(self.nodes[x].shape[p] for p in perm)
        return self.add("transpose", [x], {"perm": perm}, shape, self.dt)

    def g_broadcast(self):
        x = self.any_value(0, 3)
        s = list(self.nodes[x].shape)
        r = len(s) + 1 + self.r(min(2, 4 - len(s)))
        if r > 4:
            return None
        dims = sorted(self.rng.choice(r, size=r - len(s), replace=False).tolist())
        shape, it = [], iter(s)
        for d in range(r):
            shape.append(self.choice((1, 2, 3, 8, 16, 17)) if d in dims else next(it))
        if np.prod(shape) > self.max_elems:
            return None
        return self.add("broadcast", [x], {"dims": dims}, tuple(shape), self.dt)

    def g_reshape(self):
        x = self.any_value(1, 4)
        s = self.nodes[x].shape
        if len(s) >= 2 and self.chance(0.5):
            d = self.r(len(s) - 1)
            groups = [[i] for i in range(d)] + [[d, d + 1]] + [[i + 1] for i in range(d + 1, len(s) - 1)]
            shape = s[:d] + (s[d] * s[d + 1],) + s[d + 2:]
            return self.add("collapse", [x], {"groups": groups}, shape, self.dt)
        if len(s) >= 4:
            return None
        d = self.r(len(s))
        divs = [k for k in range(1, s[d] + 1) if s[d] % k == 0]
        k = self.choice(divs)
        groups = [[i] for i in range(d)] + [[d, d + 1]] + [[i + 1] for i in range(d + 1, len(s))]
        shape = s[:d] + (k, s[d] // k) + s[d + 1:]
        return self.add("expand", [x], {"groups": groups}, shape, self.dt)

    def g_slice(self):
        x = self.any_value(1, 4)
        s = self.nodes[x].shape
        off, size, step = [], [], []
        for n in s:
            st = self.choice((1, 1, 1, 2, 3))
            o = self.r(max(1, n // 3) + 1) if n > 1 else 0
            o = min(o, n - 1)
            maxsz = (n - 1 - o) // st + 1
            size.append(self.r(maxsz) + 1)
            off.append(o)
            step.append(st)
        return self.add("slice", [x], {"off": off, "step": step}, tuple(size), self.dt)

    def g_insert(self):
        dst = self.any_value(1, 4)
        s = self.nodes[dst].shape
        off, size, step = [], [], []
        for n in s:
            st = self.choice((1, 1, 2))
            o = self.r(max(1, n // 3) + 1) if n > 1 else 0
            o = min(o, n - 1)
            maxsz = (n - 1 - o) // st + 1
            size.append(self.r(maxsz) + 1)
            off.append(o)
            step.append(st)
        src = self.value_of_shape(tuple(size), fresh=0.5)
        return self.add("insert", [src, dst], {"off": off, "step": step}, s, self.dt)

    def g_concat(self):
        x = self.any_value(1, 4)
        s = self.nodes[x].shape
        d = self.r(len(s))
        ops = [x]
        for _ in range(1 + self.r(2)):
            t = list(s)
            t[d] = self.choice((1, 3, 8, 16, 17))
            ops.append(self.value_of_shape(tuple(t), fresh=0.8))
        shape = list(s)
        shape[d] = sum(self.nodes[o].shape[d] for o in ops)
        if np.prod(shape) > self.max_elems:
            return None
        return self.add("concat", ops, {"dim": d}, tuple(shape), self.dt)

    def g_pad(self):
        x = self.any_value(1, 4)
        s = self.nodes[x].shape
        lo = [self.choice((0, 0, 1, 2, 3)) for _ in s]
        hi = [self.choice((0, 0, 1, 2, 5)) for _ in s]
        shape = tuple(a + b + c for a, b, c in zip(s, lo, hi))
        if np.prod(shape) > self.max_elems:
            return None
        v = const_value(self.choice((0.0, 1.5, -2.0)), self.dt) if is_float(self.dt) else self.choice((0, 7))
        return self.add("pad", [x], {"lo": lo, "hi": hi, "value": v}, shape, self.dt)

    def g_cast(self):
        """A round trip through another element type, back to the program's."""
        if not is_float(self.dt):
            return None
        x = self.any_value(0, 4)
        other = self.choice([t for t in FLOATS if t != self.dt])
        wide = {"f32": 3, "f16": 2, "bf16": 1}
        op1 = "truncf" if wide[other] < wide[self.dt] or (other, self.dt) in (("f16", "bf16"), ("bf16", "f16")) else "extf"
        if {other, self.dt} == {"f16", "bf16"}:
            return None  # no direct conversion between the two in arith
        s = self.nodes[x].shape
        y = self.add("cast", [x], {"op": op1}, s, other)
        op2 = "extf" if op1 == "truncf" else "truncf"
        return self.add("cast", [y], {"op": op2}, s, self.dt)

    def g_gather(self):
        """Rows of a table picked by an i32 index tensor; now and then
        indices past either end of the table."""
        table = self.any_value(2, 2)
        rows, width = self.nodes[table].shape
        shape = self.shape(self.r(3), limit=max(1, self.max_elems // max(width, 1)))
        if rows == 0 or int(np.prod(shape)) * width > self.max_elems:
            return None
        lo, hi = (-3, rows + 3) if self.chance(0.3) else (0, rows)
        idx = np.asarray(self.rng.integers(lo, hi, size=shape), np.int64).reshape(shape)
        self.nodes.append(Node("input", [], {}, shape, "i32"))
        self.vals.append(idx)
        self.inputs[len(self.nodes) - 1] = idx
        return self.add("gather", [table, len(self.nodes) - 1], {}, tuple(shape) + (width,),
                        self.dt)

    # ---- a program
    def program(self):
        n_ops = 1 + self.r(self.max_ops)
        made = []
        tries = 0
        while len(made) < n_ops and tries < 10 * n_ops:
            tries += 1
            fam = self.choice(self.families)
            i = getattr(self, "g_" + fam)()
            if i is not None:
                made.append(i)
        if not made:
            made.append(self.g_ewise())
        # Outputs: the values nothing else reads (up to 3, the latest), so
        # that every op drawn is live; of the program's own element type (a
        # cast round trip ends in it).
        used = {o for n in self.nodes for o in n.operands}
        sinks = [i for i, n in enumerate(self.nodes)
                 if i not in used and n.kind != "input" and n.dt == self.dt]
        outs = sinks[-3:] or [made[-1]]
        return Program(self.nodes, outs, self.inputs).compact()


def _k_matmul(n, ops):
    return ops[0].shape[-1]


def _k_conv(n, ops):
    a = n.attrs
    if a["op"].startswith("pooling"):
        return a["window"][0] * a["window"][1]
    w = ops[1].shape
    if a["op"] == "depthwise_conv_2d_nhwc_hwc":
        return w[0] * w[1]
    return int(np.prod(w)) // (w[0] if a["op"] in ("conv_2d_nhwc_fhwc", "conv_2d_nchw_fchw") else w[3])


def _k_reduce(n, ops):
    return int(np.prod([ops[0].shape[d] for d in n.attrs["dims"]])) if n.attrs["op"] == "addf" else 0


def _k_softmax(n, ops):
    return ops[0].shape[n.attrs["dim"]]


# Reduction length per kind of node (for the noise of summation order).
CONTRACTED = {"matmul": _k_matmul, "conv": _k_conv, "reduce": _k_reduce, "softmax": _k_softmax}


def generate(rng, dt=None, families=None, max_ops=10):
    """One random program (its inputs drawn with it)."""
    dt = dt or ("f32" if rng.random() < 0.55 else ("f16" if rng.random() < 0.5 else
                ("bf16" if rng.random() < 0.5 else rng.choice(["i32", "i32"]))))
    return Gen(rng, str(dt), families, max_ops).program()
