"""A SIMT simulator for pbc's GPU kernels at S3, so that matrix-unit kernels
are checked for numbers on machines without a GPU.

It runs the gpu.launch ops of a function in MLIR's generic form (what
`mlir-opt --mlir-print-op-generic` prints) on numpy arrays: every block at
once, each warp as a coroutine of 32 lanes in lockstep. Warps run one after
another between barriers, in a chosen order (forward or reverse), so a
missing barrier shows as wrong data. 16-byte async copies land either at
issue ("eager") or as late as their wait allows ("late"), so a missing or
too-weak wait shows as wrong data too. Shared memory starts as NaN.

Hardware semantics modelled (PTX ISA, "Matrix fragments for mma.m16n8k16"
and "ldmatrix"); g = lane / 4, t = lane % 4:
  mma.sync m16n8k16 f16 -> f32 (nvgpu.mma.sync), bf16 -> f32
    (nvvm.mma.sync on registers of two halves; bf16 as bit patterns),
    m16n8k32 s8 -> s32 (A[g + 8 (r % 2)][4t + e + 16 (r / 2)],
    B[4t + e + 16 r][g]; ldmatrix gives each lane four i8 per matrix)
    A (4 x 2 halves): register r, element e -> A[g + 8 (r % 2)][2t + e + 8 (r / 2)]
    B (2 x 2 halves): register r, element e -> B[2t + e + 8 r][g]
    C, D (2 x 2 f32): register r, element e -> C[g + 8 r][2t + e]
  ldmatrix .x1/.x2/.x4 [.trans]: lanes 8i..8i+7 address the 8 rows of
    matrix i (8 halves each); lane l receives row l / 4, halves 2 (l % 4),
    +1 of each matrix (of its transpose with .trans).
  cp.async with a source size: the rest of the 16 bytes are zeros.
  Global memory: an element stored by two threads in one launch is a race
    (one thread may store it again: an accumulator in memory).
  scf.if: the lanes where the condition fails are masked: they store
    nothing, and their loads read element 0 (any address they compute is
    then harmless).
  gpu.shuffle xor: lane l receives lane (l ^ offset)'s value.
AMD matrix instructions (AMD's matrix instruction calculator for CDNA2/3,
the RDNA3 ISA guide's WMMA section); a warp is a wave of 64 (CDNA) or 32
(RDNA3) lanes, run_function's `warp`:
  amdgpu.mfma 16x16xK, wave 64, P = K/4 elements of A and B per lane
    (f16, bf16 -> f32: K 16; i8 -> i32: K 16 or 32):
    A[i][k]: lane i + 16 (k / P), element k % P; B[k][j]: lane
    j + 16 (k / P), element k % P; C, D[i][j]: lane j + 16 (i / 4),
    element i % 4.
  amdgpu.wmma 16x16x16, wave 32 (f16, bf16 -> f32; i8 -> i32, signed):
    A[i][k]: lanes i and i + 16, element k (both half-waves must hold
    the same A and B); B[k][j]: lanes j and j + 16, element k;
    C, D[i][j]: lane j + 16 (i % 2), element i / 2.
Only what pbc's kernels use is modelled; anything else is an error, never
silently skipped. Ops outside gpu.launch other than constants are skipped:
the caller provides the memrefs' contents before the launches.
"""
import collections
import re

import numpy as np

WARP = 32

# --- Parsing MLIR's generic form -------------------------------------------

Op = collections.namedtuple("Op", "name results operands text regions tail")
Block = collections.namedtuple("Block", "args ops")

_OP = re.compile(r'(?:(%[\w]+)(?::(\d+))? = )?"([\w.]+)"\((.*?)\)(.*)$')


def _split_top(s):
    """Splits s at the commas outside any bracket."""
    parts, depth, cur = [], 0, ""
    for ch in s:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur.strip())
    return parts


def _parse_ops(lines, pos):
    blocks = [Block([], [])]
    while pos < len(lines):
        s = lines[pos].strip()
        if s.startswith("}"):
            return blocks, pos
        if s.startswith("^"):
            args = [a.split(":")[0].strip() for a in _split_top(s[s.index("(") + 1:s.rindex(")")])]
            if blocks[-1].ops or blocks[-1].args:
                blocks.append(Block(args, []))
            else:
                blocks[-1] = Block(args, [])
            pos += 1
            continue
        if not s or s.startswith("#"):
            pos += 1
            continue
        op, pos = _parse_op(lines, pos)
        blocks[-1].ops.append(op)
    return blocks, pos


def _parse_op(lines, pos):
    s = lines[pos].strip()
    m = _OP.match(s)
    if not m:
        raise ValueError("cannot parse: " + s)
    res, nres, name, operands, rest = m.groups()
    results = [] if not res else [res] if not nres else ["%s#%d" % (res, i) for i in range(int(nres))]
    op = Op(name, results, re.findall(r"%[\w#]+", operands), rest, [], [])
    pos += 1
    if rest.endswith("({"):
        while True:
            blocks, pos = _parse_ops(lines, pos)
            op.regions.append(blocks)
            close = lines[pos].strip()
            pos += 1
            if not close.startswith("}, {"):
                op.tail.append(close)
                break
    return op, pos


def parse_module(text):
    """The func.func ops of a module in generic form, by name."""
    blocks, _ = _parse_ops(text.splitlines(), 0)
    funcs = {}

    def walk(ops):
        for op in ops:
            if op.name == "func.func":
                funcs[re.search(r'sym_name = "([\w.]+)"', op.text).group(1)] = op
            for region in op.regions:
                for b in region:
                    walk(b.ops)
    walk(blocks[0].ops)
    return funcs


def _result_types(op):
    text = op.tail[0] if op.tail else op.text
    out = text[text.rindex("->") + 2:].strip()
    if out.startswith("("):
        out = out[1:-1]
    return _split_top(out)


# bf16 values live as their bit patterns (numpy has no bfloat16): only
# moves, selects, extf/truncf and the matrix instruction look at them.
_DTYPES = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "i32": np.int64,
           "i64": np.int64, "index": np.int64, "i1": np.bool_, "bf16": np.uint16, "i8": np.int8}


def bf16_to_f32(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    """Round to nearest even, as arith.truncf does; NaN stays NaN."""
    u = np.asarray(x, np.float32).view(np.uint32)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(x, np.float32)), np.uint16(0x7FC0), r)


def _operand_types(op):
    text = op.tail[0] if op.tail else op.text
    m = re.search(r":\s*\((.*)\)\s*->", text)
    return _split_top(m.group(1)) if m else []


def _shape_dtype(t):
    """(shape, dtype) of a vector or memref type text; ((), dtype) of a scalar."""
    m = re.match(r"(?:vector|memref)<([^,>]*)", t)
    if not m:
        return (), _DTYPES[t]
    dims = m.group(1).split("x")
    return tuple(int(d) if d != "?" else -1 for d in dims[:-1]), _DTYPES[dims[-1]]


def _attr(op, name):
    m = re.search(r"\b%s = ([^,}>]+(?:<[^>]*>)?)" % re.escape(name), op.text)
    return m.group(1).strip() if m else None


def _ints(op, name):
    m = re.search(r"\b%s = (?:array<i\d+: )?\[?([-\d, :i]*)" % re.escape(name), op.text)
    return [int(x.split(":")[0]) for x in m.group(1).split(",") if x.strip()]


# --- Values -----------------------------------------------------------------

class Shared:
    """A memref in shared memory: arr has the block as its first axis."""

    def __init__(self, arr):
        self.arr = arr


class Global:
    def __init__(self, arr):
        self.arr = arr


class Warp:
    """What a warp carries: its lanes' thread ids, async copies in flight."""

    def __init__(self, blocks, tid):
        self.bid = np.arange(blocks)[:, None]
        self.tid = tid
        self.size = tid.shape[-1]
        self.pending, self.groups = [], collections.deque()


def _u(v):
    """The one value of a uniform index."""
    a = np.asarray(v)
    if a.size and not np.all(a == a.flat[0]):
        raise ValueError("value is not uniform across threads")
    return int(a.flat[0])


def _index(mem, w, idx, mask=None):
    """Subscripts into mem's array; lanes a mask turns off read element 0."""
    idx = tuple(np.asarray(i, dtype=np.int64) for i in idx)
    if mask is not None:
        idx = tuple(np.where(mask, i, 0) for i in idx)
    if isinstance(mem, Shared):
        return (w.bid,) + idx
    return idx


class Kernel:
    def __init__(self, late_copies):
        self.late = late_copies
        self.writes = {}  # id(Global) -> (Global, writing thread per element, races)

    def count_writes(self, mem, idx, writer):
        if id(mem) not in self.writes:
            self.writes[id(mem)] = [mem, np.full(mem.arr.shape, -1, np.int64), 0, None]
        entry = self.writes[id(mem)]
        before = entry[1][idx]
        race = (before != -1) & (before != writer)
        entry[1][idx] = writer
        race |= entry[1][idx] != writer  # two lanes of one store
        if race.any():
            entry[2] += int(race.sum())
            if entry[3] is None:
                entry[3] = tuple(int(i[race][0]) for i in idx)

    def check_writes(self):
        """No element of global memory is stored by two threads in one launch
        (a race: which value lands depends on the schedule)."""
        for mem, _, races, first in self.writes.values():
            if races:
                raise RuntimeError("simt: %d global stores race with another thread's, first at %s"
                                   % (races, first))

    def store(self, mem, subscripts, value, mask, w):
        idx = _index(mem, w, subscripts, mask)
        shape = np.broadcast(*idx, w.bid, w.tid).shape
        idx = tuple(np.broadcast_to(i, shape) for i in idx)
        val = np.broadcast_to(value, shape)
        on = np.ones(shape, bool) if mask is None else np.broadcast_to(mask, shape)
        mem.arr[tuple(i[on] for i in idx)] = val[on]
        if isinstance(mem, Global):
            writer = np.broadcast_to(w.bid * (1 << 20) + w.tid, shape)
            self.count_writes(mem, tuple(i[on] for i in idx), writer[on])

    @staticmethod
    def check_alignment(op, mem, subscripts, w):
        """A vector access's claimed alignment holds for every lane (row-major
        offsets from an aligned base)."""
        if "alignment = " not in op.text:
            return
        claim = _ints(op, "alignment")
        arr = mem.arr[0] if isinstance(mem, Shared) else mem.arr
        idx = np.broadcast_arrays(*[np.asarray(i, dtype=np.int64) for i in subscripts])
        offset = np.ravel_multi_index(tuple(idx), arr.shape) * arr.dtype.itemsize
        if (offset % claim[0]).any():
            raise RuntimeError("simt: %s claims %d-byte alignment; an access is %d bytes off"
                               % (op.name, claim[0], int(offset[offset % claim[0] != 0].flat[0])))

    def land(self, copies):
        for mem, dst, vals in copies:
            mem.arr[dst] = vals

    def run(self, ops, env, w):
        """Runs ops for warp w; yields at each barrier."""
        for op in ops:
            n = op.name
            get = lambda i: env[op.operands[i]]
            if n == "gpu.barrier":
                yield "barrier"
            elif n in ("gpu.terminator", "scf.yield"):
                env["__yield__"] = [env[x] for x in op.operands]
            elif n == "scf.if":
                # Lanes run the region masked: stores only where the
                # condition (and any enclosing one) holds.
                if op.results:
                    raise NotImplementedError("simt: scf.if with results")
                inner = dict(env)
                inner["__mask__"] = np.logical_and(env.get("__mask__", True), get(0))
                yield from self.run(op.regions[0][0].ops, inner, w)
            elif n == "scf.for":
                lb, ub, step = (_u(get(i)) for i in range(3))
                carried = [get(i) for i in range(3, len(op.operands))]
                body = op.regions[0][0]
                for k in range(lb, ub, step):
                    inner = dict(env)
                    inner[body.args[0]] = np.int64(k)
                    for a, v in zip(body.args[1:], carried):
                        inner[a] = v
                    yield from self.run(body.ops, inner, w)
                    carried = inner["__yield__"]
                for r, v in zip(op.results, carried):
                    env[r] = v
            else:
                self.step(op, env, w)

    def step(self, op, env, w):
        n, get = op.name, (lambda i: env[op.operands[i]])
        types = _result_types(op)
        binary = {"arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
                  "arith.divui": np.floor_divide, "arith.remui": np.remainder,
                  "arith.minui": np.minimum, "arith.addf": np.add, "arith.mulf": np.multiply,
                  "arith.maxui": np.maximum, "arith.subf": np.subtract, "arith.divf": np.divide,
                  "arith.maximumf": np.maximum, "arith.minimumf": np.minimum,
                  "arith.maxnumf": np.fmax, "arith.minnumf": np.fmin}
        unary = {"arith.negf": np.negative, "math.exp": np.exp, "math.exp2": np.exp2,
                 "math.tanh": np.tanh}
        if n in binary:
            out = binary[n](get(0), get(1))
        elif n in unary:
            out = unary[n](get(0))
        elif n == "math.fma":
            a, b, c = (np.asarray(get(i), np.float64) for i in range(3))
            out = (a * b + c).astype(_shape_dtype(types[0])[1])  # one rounding
        elif n == "arith.constant":
            out = _constant(op, types[0])
        elif n == "arith.extf" and _operand_types(op)[0].endswith("bf16"):
            out = bf16_to_f32(get(0))
        elif n == "arith.truncf" and types[0].endswith("bf16"):
            out = f32_to_bf16(get(0))
        elif n == "arith.extsi":
            out = np.asarray(get(0)).astype(np.int64)
        elif n in ("arith.extf", "arith.truncf"):
            out = np.asarray(get(0)).astype(_shape_dtype(types[0])[1])
        elif n == "vector.bitcast":
            # Two 16-bit halves as one i32 register, the halves kept apart
            # (an i32 that only nvvm.mma.sync reads).
            if not (_operand_types(op)[0] in ("vector<2xbf16>", "vector<2xf16>")
                    and types[0] == "vector<1xi32>"):
                raise NotImplementedError("simt: vector.bitcast other than 2 halves to i32")
            v = np.asarray(get(0))
            out = v.reshape(v.shape[:-1] + (1, 2))
        elif n == "nvvm.mma.sync":
            # m16n8k16 with bf16 operands: A in 4 registers, B in 2 (each
            # two halves), C as 4 f32; the result struct as a vector of 4.
            if "mma_type<bf16>" not in op.text:
                raise NotImplementedError("simt: nvvm.mma.sync other than bf16")
            regs = [np.asarray(get(i)) for i in range(10)]
            base = np.broadcast(w.bid, w.tid).shape
            a = np.stack([np.broadcast_to(bf16_to_f32(r), base + (2,)) for r in regs[:4]], -2)
            b = np.stack([np.broadcast_to(bf16_to_f32(r), base + (2,)) for r in regs[4:6]], -2)
            c = np.stack([np.broadcast_to(r, base) for r in regs[6:]], -1).reshape(base + (2, 2))
            out = _mma_m16n8k16(a, b, c).reshape(base + (4,))
        elif n == "llvm.extractvalue":
            out = np.asarray(get(0))[..., _ints(op, "position")[0]]
        elif n == "gpu.dynamic_shared_memory":
            out = env["__raw__"]
        elif n == "memref.view":
            shape, dt = _shape_dtype(types[0])
            if types[0].split("x")[-1].startswith("i32"):  # 4 bytes in shared memory
                dt = np.int32
            off, raw = _u(get(1)), get(0).arr
            size = int(np.prod(shape)) * np.dtype(dt).itemsize
            out = Shared(raw[:, off:off + size].view(dt).reshape((raw.shape[0],) + shape))
        elif n == "memref.load":
            mem, mask = get(0), env.get("__mask__")
            out = mem.arr[_index(mem, w, [get(i) for i in range(1, len(op.operands))], mask)]
        elif n == "memref.store":
            self.store(get(1), [get(i) for i in range(2, len(op.operands))], get(0),
                       env.get("__mask__"), w)
        elif n == "vector.load":
            # vector<N>: N elements along the last subscript (from the
            # alignment the op claims, checked).
            mem, mask = get(0), env.get("__mask__")
            idx = [get(i) for i in range(1, len(op.operands))]
            self.check_alignment(op, mem, idx, w)
            width = _shape_dtype(types[0])[0][0]
            out = np.stack([mem.arr[_index(mem, w, idx[:-1] + [idx[-1] + k], mask)]
                            for k in range(width)], axis=-1)
        elif n == "vector.store":
            mem, val = get(1), np.asarray(get(0))
            idx = [get(i) for i in range(2, len(op.operands))]
            self.check_alignment(op, mem, idx, w)
            for k in range(val.shape[-1]):
                self.store(mem, idx[:-1] + [idx[-1] + k], val[..., k], env.get("__mask__"), w)
        elif n == "arith.cmpi":
            # Predicates: eq 0, ne 1, slt 2, sle 3, sgt 4, sge 5, ult 6,
            # ule 7, ugt 8, uge 9 (indices are never negative here).
            pred = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal,
                    4: np.greater, 5: np.greater_equal, 6: np.less, 7: np.less_equal,
                    8: np.greater, 9: np.greater_equal}[_ints(op, "predicate")[0]]
            out = pred(get(0), get(1))
        elif n == "arith.cmpf":
            # Ordered predicates (false when either side is NaN): oeq 1,
            # ogt 2, oge 3, olt 4, ole 5; ugt 8 (true when unordered).
            a, b = get(0), get(1)
            p = _ints(op, "predicate")[0]
            ordered = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less,
                       5: np.less_equal}
            if p in ordered:
                out = ordered[p](a, b)
            elif p == 8:
                out = np.logical_or(np.greater(a, b), np.isnan(a) | np.isnan(b))
            else:
                raise NotImplementedError("simt: arith.cmpf predicate %d" % p)
        elif n == "arith.andi":
            out = np.logical_and(get(0), get(1)) if types[0] == "i1" else np.bitwise_and(get(0), get(1))
        elif n == "arith.select":
            out = np.where(get(0), get(1), get(2))
        elif n == "vector.extract":
            # Vectors carry (block, lane) axes first; pos indexes the rest.
            pos = tuple(_ints(op, "static_position"))
            out = np.asarray(get(0))[(slice(None), slice(None)) + pos]
        elif n == "vector.to_elements":
            vec = np.asarray(get(0))
            flat = vec.reshape(vec.shape[:2] + (-1,))
            for i, r in enumerate(op.results):
                env[r] = flat[..., i]
            return
        elif n == "vector.insert":
            pos = tuple(_ints(op, "static_position"))
            vec = np.asarray(get(1))
            dest = np.array(np.broadcast_to(vec, np.broadcast(w.bid, w.tid).shape + vec.shape[2:]))
            dest[(slice(None), slice(None)) + pos] = get(0)
            out = dest
        elif n == "vector.broadcast":
            # A scalar to every element (vectors carry (block, lane) first).
            shape, dt = _shape_dtype(types[0])
            base = np.broadcast(w.bid, w.tid).shape
            v = np.broadcast_to(get(0), base)
            out = np.broadcast_to(v.reshape(base + (1,) * len(shape)), base + shape).astype(dt)
        elif n == "vector.from_elements":
            shape, dt = _shape_dtype(types[0])
            base = np.broadcast(w.bid, w.tid).shape
            parts = [np.broadcast_to(env[x], base) for x in op.operands]
            out = np.stack(parts, axis=-1).astype(dt).reshape(base + shape)
        elif n == "nvgpu.device_async_copy":
            self.async_copy(op, env, w)
            out = None
        elif n == "nvgpu.device_async_create_group":
            w.groups.append(w.pending)
            w.pending = []
            out = None
        elif n == "nvgpu.device_async_wait":
            keep = _ints(op, "numGroups")[0]
            while len(w.groups) > keep:
                self.land(w.groups.popleft())
            return
        elif n == "nvgpu.ldmatrix":
            out = self.ldmatrix(op, env, w)
        elif n == "gpu.shuffle":
            # xor mode: lane l reads lane l ^ offset's value (the offset
            # uniform, the width a whole warp: what pbc emits).
            if "shuffle_mode xor" not in op.text or _u(get(2)) != w.size:
                raise NotImplementedError("simt: gpu.shuffle other than xor over a warp")
            base = np.broadcast(w.bid, w.tid).shape
            val = np.broadcast_to(get(0), base)
            env[op.results[0]] = val[:, (w.tid[0] % w.size) ^ _u(get(1))]
            env[op.results[1]] = np.bool_(True)
            return
        elif n == "nvgpu.mma.sync":
            a = np.asarray(get(0))
            out = (_mma_m16n8k32_s8 if a.dtype == np.int8 else _mma_m16n8k16)(a, get(1), get(2))
        elif n in ("amdgpu.mfma", "amdgpu.wmma"):
            out = _amd_matrix(op, [get(i) for i in range(3)], w)
        else:
            raise NotImplementedError("simt: no model of " + n)
        if op.results:
            env[op.results[0]] = out

    def async_copy(self, op, env, w):
        seg = _ints(op, "operandSegmentSizes")
        vals = [env[x] for x in op.operands]
        dst, dst_idx = vals[0], vals[1:1 + seg[1]]
        src, src_idx = vals[1 + seg[1]], vals[2 + seg[1]:2 + seg[1] + seg[3]]
        n = _ints(op, "dstElements")[0]
        e = np.arange(n)
        base = np.broadcast(w.bid, w.tid).shape
        # With a source element count, the rest of the destination is zeros
        # (cp.async's src-size) and those source elements are not read.
        count = np.broadcast_to(vals[-1], base)[..., None] if seg[4] else n
        s = tuple(np.broadcast_to(i, base)[..., None] for i in src_idx[:-1]) + \
            (np.broadcast_to(src_idx[-1], base)[..., None] + np.minimum(e, np.maximum(count - 1, 0)),)
        d = (np.broadcast_to(w.bid, base)[..., None],) + \
            tuple(np.broadcast_to(i, base)[..., None] for i in dst_idx[:-1]) + \
            (np.broadcast_to(dst_idx[-1], base)[..., None] + e,)
        copy = (dst, d, np.where(e < count, src.arr[s], 0).astype(src.arr.dtype))
        if self.late:
            w.pending.append(copy)
        else:
            self.land([copy])

    def ldmatrix(self, op, env, w):
        tiles = _ints(op, "numTiles")[0]
        trans = _attr(op, "transpose") == "true"
        mem = env[op.operands[0]]
        idx = [env[x] for x in op.operands[1:]]
        base = np.broadcast(w.bid, w.tid).shape
        # A row is 16 bytes; each lane gets 4 bytes of each matrix (two
        # halves, or four i8, which .trans cannot take).
        size = mem.arr.dtype.itemsize
        per = 4 // size
        if trans and size != 2:
            raise NotImplementedError("simt: ldmatrix .trans of %d-byte elements" % size)
        e = np.arange(16 // size)
        rows = mem.arr[(np.broadcast_to(w.bid, base)[..., None],) +
                       tuple(np.broadcast_to(i, base)[..., None] for i in idx[:-1]) +
                       (np.broadcast_to(idx[-1], base)[..., None] + e,)]  # (B, 32, row)
        lane = np.arange(WARP)
        out = np.empty(base + (tiles, per), dtype=mem.arr.dtype)
        for i in range(tiles):
            m = rows[:, 8 * i:8 * i + 8, :]  # (B, 8 rows, row)
            if trans:
                m = np.swapaxes(m, 1, 2)
            for k in range(per):
                out[:, :, i, k] = m[:, lane // 4, per * (lane % 4) + k]
        return out


def _constant(op, t):
    shape, dt = _shape_dtype(t)
    v = _attr(op, "value")
    if t.endswith("bf16") or t.endswith("bf16>"):
        lit = re.match(r"(?:dense<)?([^>:]*)", v).group(1).strip()
        x = (np.array(int(lit, 16), np.uint16) if lit.startswith("0x")
             else f32_to_bf16(np.float32(float(lit))))
        return np.full((1, 1) + shape, x, dtype=np.uint16) if shape else x[()]
    if v.startswith("dense<"):
        x = float(re.match(r"dense<([^>]*)", v).group(1))
        return np.full((1, 1) + shape, x, dtype=dt)
    lit = v.split(":")[0].strip()
    if lit in ("true", "false"):
        return np.bool_(lit == "true")
    if dt in (np.float16, np.float32, np.float64):
        if lit.startswith("0x"):  # the bit pattern (infinities, NaN)
            bits = {np.float16: np.uint16, np.float32: np.uint32, np.float64: np.uint64}[dt]
            return np.array(int(lit, 16), dtype=bits).view(dt)[()]
        return dt(float(lit))
    return np.int64(int(lit))


_LANE = np.arange(WARP)
_G, _T = _LANE // 4, _LANE % 4


def _mma(a, b, c, k, per, dtype):
    """One m16n8k mma.sync in the PTX fragment layouts: a (B,32,4,per),
    b (B,32,2,per), c (B,32,2,2); each register holds `per` consecutive k
    (two halves, four i8):
      A[g + 8 (r % 2)][per t + e + k/2 (r / 2)], B[per t + e + k/2 r][g],
      C[g + 8 r][2t + e]."""
    nb = max(np.asarray(x).shape[0] for x in (a, b, c))
    a = np.broadcast_to(a, (nb, WARP, 4, per))
    b = np.broadcast_to(b, (nb, WARP, 2, per))
    c = np.broadcast_to(c, (nb, WARP, 2, 2))
    A = np.zeros((nb, 16, k), dtype)
    B = np.zeros((nb, k, 8), dtype)
    C = np.zeros((nb, 16, 8), dtype)
    for r in range(4):
        for e in range(per):
            A[:, _G + 8 * (r % 2), per * _T + e + k // 2 * (r // 2)] = a[:, :, r, e]
    for r in range(2):
        for e in range(per):
            B[:, per * _T + e + k // 2 * r, _G] = b[:, :, r, e]
        for e in range(2):
            C[:, _G + 8 * r, 2 * _T + e] = c[:, :, r, e]
    D = A @ B + C
    out = np.empty((nb, WARP, 2, 2), dtype)
    for r in range(2):
        for e in range(2):
            out[:, :, r, e] = D[:, _G + 8 * r, 2 * _T + e]
    return out


def _mma_m16n8k16(a, b, c):
    """m16n8k16 on f16 (or bf16 values) into f32."""
    return _mma(a, b, c, 16, 2, np.float32)


def _mma_m16n8k32_s8(a, b, c):
    """m16n8k32 s8 into s32: exact integer products and sums."""
    return _mma(a, b, c, 32, 4, np.int64)


def _amd_values(x):
    """Operand values as numbers: bf16 bit patterns as f32, i8 as int64."""
    x = np.asarray(x)
    if x.dtype == np.uint16:
        return bf16_to_f32(x).astype(np.float64)
    return x.astype(np.int64 if x.dtype.kind in "iu" else np.float64)


def _amd_matrix(op, vals, w):
    """amdgpu.mfma / amdgpu.wmma 16x16xK for each block (layouts in the
    module docstring); the result keeps C's type."""
    m, n, k = (_ints(op, x)[0] for x in ("m", "n", "k"))
    base = np.broadcast(w.bid, w.tid).shape
    a, b = (np.broadcast_to(_amd_values(v), base + np.asarray(v).shape[2:]) for v in vals[:2])
    c = np.asarray(vals[2])
    c = np.broadcast_to(c, base + c.shape[2:])
    nb, lanes = base
    rows = np.arange(16)
    if (m, n) != (16, 16):
        raise NotImplementedError("simt: %s %dx%dx%d" % (op.name, m, n, k))
    if op.name == "amdgpu.mfma":
        for attr, want in (("blocks", 1), ("cbsz", 0), ("abid", 0)):
            if _ints(op, attr)[0] != want:
                raise NotImplementedError("simt: amdgpu.mfma with %s != %d" % (attr, want))
        if "blgp = #amdgpu<mfma_perm_b none>" not in op.text or lanes != 64:
            raise NotImplementedError("simt: amdgpu.mfma other than a plain wave-64 product")
        per = k // 4
        kk = np.arange(k)
        A = a[:, rows[:, None] + 16 * (kk[None, :] // per), kk[None, :] % per]  # (nb, i, k)
        B = b[:, rows[None, :] + 16 * (kk[:, None] // per), kk[:, None] % per]  # (nb, k, j)
        C = c[:, rows[None, :] + 16 * (rows[:, None] // 4), rows[:, None] % 4]  # (nb, i, j)
        D = A @ B + C
        out = np.empty(c.shape, c.dtype)
        lane, e = np.arange(64), np.arange(4)
        out[:, lane[:, None], e[None, :]] = D[:, 4 * (lane[:, None] // 16) + e[None, :], lane[:, None] % 16]
        return out
    if lanes != 32 or k != 16 or "unsigned" in op.text or "clamp" in op.text:
        raise NotImplementedError("simt: amdgpu.wmma other than a signed wave-32 16x16x16")
    for x in (a, b):
        if not np.array_equal(x[:, :16], x[:, 16:]):
            raise RuntimeError("simt: amdgpu.wmma: the half-waves hold different A or B")
    A = a[:, :16, :]                     # (nb, i, k)
    B = np.swapaxes(b[:, :16, :], 1, 2)  # (nb, k, j)
    C = c[:, rows[None, :] + 16 * (rows[:, None] % 2), rows[:, None] // 2]
    D = A @ B + C
    out = np.empty(c.shape, c.dtype)
    lane, e = np.arange(32), np.arange(8)
    out[:, lane[:, None], e[None, :]] = D[:, 2 * e[None, :] + lane[:, None] // 16, lane[:, None] % 16]
    return out


def s3_generic(pbc, mlir_opt, chip, text, extra=(), target="nvgpu"):
    """The program's S3 for a GPU target in MLIR's generic form (what
    parse_module reads), or (None, the failing tool's message)."""
    import subprocess
    s3 = subprocess.run([pbc, "--target=" + target, "--chip=" + chip, "--emit=s3", "-"] + list(extra),
                        input=text, capture_output=True, text=True)
    if s3.returncode:
        return None, "pbc failed:\n" + s3.stderr
    generic = subprocess.run([mlir_opt, "--mlir-print-op-generic"], input=s3.stdout,
                             capture_output=True, text=True)
    if generic.returncode:
        return None, "mlir-opt failed:\n" + generic.stderr
    return generic.stdout, None


def run_function(func, args, order="forward", late_copies=True, warp=WARP):
    """Runs the gpu.launch ops of func (a parsed func.func) on args (numpy
    arrays for its memref arguments, updated in place), in warps (waves) of
    `warp` lanes."""
    body = func.regions[0][0]
    env = {a: Global(x) for a, x in zip(body.args, args)}
    for op in body.ops:
        if op.name == "arith.constant":
            env[op.results[0]] = _constant(op, _result_types(op)[0])
        elif op.name == "gpu.launch":
            _launch(op, env, order, late_copies, warp)


def _launch(op, env, order, late, warp):
    seg = _ints(op, "operandSegmentSizes")
    if seg[0] or any(seg[7:10]):
        raise NotImplementedError("simt: async or clustered launch")
    vals = [_u(env[x]) for x in op.operands]
    gx, gy, gz, tx, ty, tz = vals[:6]
    smem = vals[6] if seg[10] else 0
    threads = tx * ty * tz
    nb = gx * gy * gz
    bid = np.arange(nb)[:, None]
    body = op.regions[0][0]
    raw = Shared(np.full((nb, max(smem, 1)), 0xFF, np.uint8))  # f16/f32 NaN
    kernel = Kernel(late)
    warps, coroutines = [], []
    for wi in range((threads + warp - 1) // warp):
        w = Warp(nb, wi * warp + np.arange(warp)[None, :])
        inner = dict(env)
        if (wi + 1) * warp > threads:  # a last, partial warp: its extra lanes do nothing
            inner["__mask__"] = w.tid < threads
        # Threads x fastest, as the hardware numbers a block's warps.
        ids = [bid % gx, (bid // gx) % gy, bid // (gx * gy),
               w.tid % tx, (w.tid // tx) % ty, w.tid // (tx * ty), gx, gy, gz, tx, ty, tz]
        for a, v in zip(body.args, ids):
            inner[a] = np.asarray(v, dtype=np.int64)
        inner["__raw__"] = raw
        warps.append(w)
        coroutines.append(kernel.run(body.ops, inner, w))
    live = list(range(len(coroutines)))
    while live:
        seq = live if order == "forward" else list(reversed(live))
        done = [i for i in seq if _advance(coroutines[i])]
        if done and len(done) != len(live):
            raise RuntimeError("simt: warps disagree on the number of barriers")
        live = [i for i in live if i not in done]
    kernel.check_writes()
    for w in warps:
        if w.pending or w.groups:
            raise RuntimeError("simt: async copies still in flight when the kernel ends")


def _advance(co):
    """Runs a warp to its next barrier; True when it has finished."""
    try:
        next(co)
        return False
    except StopIteration:
        return True
