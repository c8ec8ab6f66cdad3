"""ATen ops -> MLIR, one small lowering per op (see emit.py for the layout
rules). A lowering raises Unsupported when it cannot handle a case; the
runtime then runs that op eagerly and warns."""

import math

import torch

from . import emit
from .emit import NHWC, Val

# A grouped transposed convolution becomes one per group (see _per_group);
# beyond this many, the op runs eagerly rather than as hundreds of nests.
MAX_CONV_GROUPS = 64


class Unsupported(Exception):
    pass


class Const:
    """A tensor known when compiling (a parameter, or folded from them)."""

    def __init__(self, tensor):
        self.tensor = tensor


LOWERINGS = {}


def lowers(*names):
    def reg(fn):
        for n in names:
            LOWERINGS[n] = fn
        return fn
    return reg


def op_name(target):
    """'add.Tensor' for torch.ops.aten.add.Tensor; None for non-ATen."""
    s = str(target)
    return s[5:] if s.startswith("aten.") else None


def find_lowering(target):
    name = op_name(target)
    if name is None:
        return None
    low = LOWERINGS.get(name) or LOWERINGS.get(name.split(".")[0])
    if low is None and name.split(".")[0].endswith("_copy"):
        # expand_copy, slice_copy, ...: functionalization's copying forms
        # of views; on values the view and its copy are the same.
        view = name.replace("_copy", "", 1)
        low = LOWERINGS.get(view) or LOWERINGS.get(view.split(".")[0])
    return low


def ints(v, n=2):
    v = list(v) if isinstance(v, (list, tuple)) else [v]
    return v * n if len(v) == 1 else v


# ---------------------------------------------------------------- elementwise

def _floats(*vals):
    """The arithmetic lowerings emit f32 operations: other element types
    run eagerly (named) instead of failing their segment's compile."""
    for v in vals:
        if isinstance(v, Val) and v.elem != "f32":
            raise Unsupported("arithmetic on %s" % v.elem)


_INT_WIDTH = {"i1": 1, "i32": 32, "i64": 64}


def _binary(ctx, a, b, fn, int_op=None, alpha=1):
    """a `op` b with PyTorch's type promotion: integer tensors (and integer
    numbers) give integer arithmetic in the wider type (int_op: the arith
    op, b scaled by alpha); with a float tensor or number in it, the
    integers are converted and the float op `fn` runs."""
    raw = (a, b)
    a, b = ctx.operand(a), ctx.operand(b)
    if not isinstance(a, Val) and not isinstance(b, Val):
        raise Unsupported("scalar-only arithmetic")
    vals = [x for x in (a, b) if isinstance(x, Val)]
    if any(v.elem not in ("f32",) + tuple(_INT_WIDTH) for v in vals):
        raise Unsupported("arithmetic on %s" % ", ".join(v.elem for v in vals))
    integral = all(v.elem in _INT_WIDTH for v in vals) and all(
        isinstance(r, int) for r, x in zip(raw, (a, b)) if not isinstance(x, Val))
    if integral:
        elem = max((v.elem for v in vals), key=_INT_WIDTH.get)
        if int_op is None or elem == "i1" or alpha != int(alpha):
            raise Unsupported("this arithmetic on %s" % elem)
        a, b = [ctx.f.convert(x, elem) if isinstance(x, Val) else int(x) for x in (a, b)]

        def body(e, x, y):
            x = x if isinstance(x, str) else e.const(x, elem)
            y = y if isinstance(y, str) else e.const(y, elem)
            if alpha != 1:
                y = e.op("arith.muli %s, %s" % (y, e.const(int(alpha), elem)), elem)
            return e.op("%s %s, %s" % (int_op, x, y), elem)
        return ctx.f.elementwise([a, b], body, out_elem=elem)
    a, b = [ctx.f.convert(x, "f32") if isinstance(x, Val) else x for x in (a, b)]
    return ctx.f.elementwise([a, b], fn)


_COMPARE = {"gt": ("ogt", "sgt"), "lt": ("olt", "slt"), "ge": ("oge", "sge"),
            "le": ("ole", "sle"), "eq": ("oeq", "eq"), "ne": ("une", "ne")}


def _compare(pred):
    def lower(ctx, a, b):
        a, b = ctx.operand(a), ctx.operand(b)
        vals = [x for x in (a, b) if isinstance(x, Val)]
        elem = vals[0].elem
        if any(v.elem != elem for v in vals) or elem == "i1":
            raise Unsupported("comparison of %s" % ", ".join(v.elem for v in vals))
        fp = elem.startswith("f")
        if not fp and any(not isinstance(x, Val) and x != int(x) for x in (a, b)):
            raise Unsupported("comparison of an integer tensor with a fraction")

        def body(e, x, y):
            x = x if isinstance(x, str) else e.const(x if fp else int(x), elem)
            y = y if isinstance(y, str) else e.const(y if fp else int(y), elem)
            return e.op("%s %s, %s, %s" % ("arith.cmpf" if fp else "arith.cmpi",
                                           _COMPARE[pred][0 if fp else 1], x, y), elem)
        return ctx.f.elementwise([a, b], body, out_elem="i1")
    return lower


for _p in _COMPARE:
    lowers("%s.Tensor" % _p, "%s.Scalar" % _p)(_compare(_p))


@lowers("masked_fill.Scalar")
def _masked_fill(ctx, x, mask, value):
    v, m = ctx.tensor(x), ctx.tensor(mask)
    if v.elem != "f32" or m.elem != "i1":
        raise Unsupported("masked_fill of %s by %s" % (v.elem, m.elem))
    return ctx.f.elementwise([v, m], lambda e, a, k: e.op(
        "arith.select %s, %s, %s" % (k, e.const(float(value)), a)), shape=v.shape)


@lowers("add.Tensor", "add_.Tensor", "add.Scalar")
def _add(ctx, a, b, alpha=1):
    return _binary(ctx, a, b, lambda e, x, y: e.add(x, e.mul(y, float(alpha)) if alpha != 1 else y),
                   "arith.addi", alpha)


@lowers("sub.Tensor", "sub_.Tensor", "sub.Scalar")
def _sub(ctx, a, b, alpha=1):
    return _binary(ctx, a, b, lambda e, x, y: e.sub(x, e.mul(y, float(alpha)) if alpha != 1 else y),
                   "arith.subi", alpha)


@lowers("rsub.Scalar", "rsub.Tensor")
def _rsub(ctx, a, b, alpha=1):
    return _sub(ctx, b, a, alpha)


@lowers("addcmul", "addcdiv")
def _addcmul(ctx, x, t1, t2, value=1):
    """x + value * t1 * t2 (addcdiv: t1 / t2), floats."""
    div = ctx.op.startswith("addcdiv")
    vals = [ctx.operand(a) for a in (x, t1, t2)]
    if not any(isinstance(a, Val) for a in vals):
        raise Unsupported("scalar-only arithmetic")
    _floats(*vals)

    def body(e, a, b, c):
        return e.add(a, e.mul(float(value), e.div(b, c) if div else e.mul(b, c)))
    return ctx.f.elementwise(vals, body)


@lowers("mul.Tensor", "mul_.Tensor", "mul.Scalar")
def _mul(ctx, a, b):
    return _binary(ctx, a, b, lambda e, x, y: e.mul(x, y), "arith.muli")


@lowers("div.Tensor", "div_.Tensor", "div.Scalar")
def _div(ctx, a, b):
    return _binary(ctx, a, b, lambda e, x, y: e.div(x, y))


def _unary(fn):
    def lower(ctx, x, *args, **kw):
        _floats(ctx.tensor(x))
        return ctx.f.elementwise([ctx.tensor(x)], lambda e, v: fn(e, v, *args, **kw))
    return lower


def _gelu(e, x, approximate="none"):
    if approximate == "tanh":
        inner = e.mul(e.add(x, e.mul(0.044715, e.mul(x, e.mul(x, x)))), math.sqrt(2 / math.pi))
        return e.mul(e.mul(0.5, x), e.add(1.0, e.math("tanh", inner)))
    return e.mul(e.mul(0.5, x), e.add(1.0, e.math("erf", e.mul(x, 1 / math.sqrt(2)))))


def _clamp(e, x, lo=None, hi=None):
    if lo is not None:
        x = e.max(x, float(lo))
    if hi is not None:
        x = e.min(x, float(hi))
    return x


def _where_positive(e, x, pos, neg):
    """pos if x > 0 else neg (both computed)."""
    c = e.op("arith.cmpf ogt, %s, %s" % (x, e.const(0.0)))
    return e.op("arith.select %s, %s, %s" % (c, pos, neg))


def _softplus(e, x, beta=1.0, threshold=20.0):
    """log(1 + exp(beta x)) / beta, x itself past the threshold (PyTorch's)."""
    bx = e.mul(x, float(beta))
    soft = e.div(e.math("log1p", e.math("exp", bx)), float(beta))
    c = e.op("arith.cmpf ogt, %s, %s" % (bx, e.const(float(threshold))))
    return e.op("arith.select %s, %s, %s" % (c, x, soft))


def _elu(e, x, alpha=1.0, scale=1.0, input_scale=1.0):
    neg = e.mul(e.mul(float(alpha), e.math("expm1", e.mul(x, float(input_scale)))), float(scale))
    return _where_positive(e, x, e.mul(x, float(scale)), neg)


_SELU_ALPHA, _SELU_SCALE = 1.6732632423543772, 1.0507009873554805

for _names, _fn in [
        (("leaky_relu", "leaky_relu_"), lambda e, x, slope=0.01: _where_positive(
            e, x, x, e.mul(x, float(slope)))),
        (("elu", "elu_"), _elu),
        (("selu", "selu_"), lambda e, x: _elu(e, x, _SELU_ALPHA, _SELU_SCALE)),
        (("celu", "celu_"), lambda e, x, alpha=1.0: _elu(e, x, alpha, 1.0, 1.0 / alpha)),
        (("softplus",), _softplus),
        (("mish", "mish_"), lambda e, x: e.mul(x, e.math("tanh", _softplus(e, x)))),
        (("sin",), lambda e, x: e.math("sin", x)),
        (("cos",), lambda e, x: e.math("cos", x)),
        (("relu", "relu_"), lambda e, x: e.max(x, 0.0)),
        (("clamp_min", "clamp_min_"), lambda e, x, lo: e.max(x, float(lo))),
        (("clamp_max", "clamp_max_"), lambda e, x, hi: e.min(x, float(hi))),
        (("sigmoid", "sigmoid_"), lambda e, x: e.sigmoid(x)),
        (("silu", "silu_"), lambda e, x: e.mul(x, e.sigmoid(x))),
        (("tanh", "tanh_"), lambda e, x: e.math("tanh", x)),
        (("gelu", "gelu_"), _gelu),
        (("hardtanh", "hardtanh_", "clamp", "clamp_"), _clamp),
        (("hardsigmoid", "hardsigmoid_"), lambda e, x: e.min(e.max(e.add(e.div(x, 6.0), 0.5), 0.0), 1.0)),
        (("hardswish", "hardswish_"), lambda e, x: e.mul(x, e.min(e.max(e.add(e.div(x, 6.0), 0.5), 0.0), 1.0))),
        (("exp",), lambda e, x: e.math("exp", x)),
        (("log",), lambda e, x: e.math("log", x)),
        (("sqrt",), lambda e, x: e.math("sqrt", x)),
        (("rsqrt",), lambda e, x: e.math("rsqrt", x)),
        (("erf",), lambda e, x: e.math("erf", x)),
        (("abs",), lambda e, x: e.math("absf", x)),
        (("neg",), lambda e, x: e.neg(x)),
        (("reciprocal",), lambda e, x: e.div(1.0, x)),
        (("pow.Tensor_Scalar",), lambda e, x, p: e.mul(x, x) if p == 2 else e.math("powf", x + ", " + e.const(float(p)))),
]:
    lowers(*_names)(_unary(_fn))


@lowers("clone", "detach", "alias", "contiguous", "lift_fresh_copy", "lift_fresh")
def _identity(ctx, x, *args, **kw):
    return ctx.tensor(x)


@lowers("_to_copy")
def _to_copy(ctx, x, dtype=None, **kw):
    v = ctx.tensor(x)
    if dtype is None:
        return v
    elem = emit.elem_of(dtype)
    if elem is None:
        raise Unsupported("conversion to %s" % dtype)
    return ctx.f.convert(v, elem)


@lowers("dropout", "native_dropout")
def _dropout(ctx, x, p, train):
    if train:
        raise Unsupported("dropout in training mode")
    return ctx.tensor(x)


# ---------------------------------------------------------------- views

def _resolve_shape(shape, numel):
    shape = list(shape)
    if -1 in shape:
        i = shape.index(-1)
        rest = math.prod(s for j, s in enumerate(shape) if j != i)
        shape[i] = numel // rest
    return shape


@lowers("view", "_unsafe_view", "reshape", "_reshape_alias")
def _view(ctx, x, shape, *stride):
    v = ctx.tensor(x)
    return ctx.f.reshape(v, _resolve_shape(shape, math.prod(v.shape)))


@lowers("flatten.using_ints")
def _flatten(ctx, x, start=0, end=-1):
    v = ctx.tensor(x)
    r = len(v.shape)
    start, end = start % r, end % r
    shape = v.shape[:start] + (math.prod(v.shape[start:end + 1]),) + v.shape[end + 1:]
    return ctx.f.reshape(v, shape)


@lowers("unsqueeze")
def _unsqueeze(ctx, x, dim):
    v = ctx.tensor(x)
    dim = dim % (len(v.shape) + 1)
    return ctx.f.reshape(v, v.shape[:dim] + (1,) + v.shape[dim:])


@lowers("squeeze.dim", "squeeze.default", "squeeze")
def _squeeze(ctx, x, dim=None):
    v = ctx.tensor(x)
    dims = range(len(v.shape)) if dim is None else [dim % max(1, len(v.shape))]
    shape = [s for i, s in enumerate(v.shape) if not (i in dims and s == 1)]
    return ctx.f.reshape(v, shape)


@lowers("permute")
def _permute(ctx, x, dims):
    """Free: only the logical order changes (see emit.Val)."""
    v = ctx.tensor(x)
    dims = [d % len(v.shape) for d in dims]
    return Val(v.ssa, [v.shape[d] for d in dims], v.elem, [dims.index(p) for p in v.perm])


@lowers("transpose.int", "transpose")
def _transpose(ctx, x, a, b):
    v = ctx.tensor(x)
    dims = list(range(len(v.shape)))
    dims[a], dims[b] = dims[b], dims[a]
    return _permute(ctx, v, dims)


@lowers("t")
def _t(ctx, x):
    v = ctx.tensor(x)
    return v if len(v.shape) < 2 else _transpose(ctx, v, 0, 1)


@lowers("expand")
def _expand(ctx, x, size, implicit=False):
    v = ctx.tensor(x)
    off = len(size) - len(v.shape)
    shape = [v.shape[i - off] if s == -1 else s for i, s in enumerate(size)]
    if tuple(shape) == v.shape:
        return v
    return ctx.f.elementwise([v], lambda e, a: a, shape=shape)


def _slice_range(n, start, end, step):
    start = 0 if start is None else (start + n if start < 0 else min(start, n))
    end = n if end is None else (end + n if end < 0 else min(end, n))
    return start, max(0, (end - start + step - 1) // step)


@lowers("slice.Tensor")
def _slice(ctx, x, dim=0, start=None, end=None, step=1):
    v = ctx.tensor(x)
    dim %= len(v.shape)
    n = v.shape[dim]
    start, size = _slice_range(n, start, end, step)
    if start == 0 and size == n and step == 1:
        return v
    return ctx.f.slice(v, dim, start, size, step)


@lowers("select.int")
def _select(ctx, x, dim, index):
    v = ctx.tensor(x)
    dim %= len(v.shape)
    s = ctx.f.slice(v, dim, index % v.shape[dim], 1)
    return ctx.f.reshape(s, v.shape[:dim] + v.shape[dim + 1:])


# Writes through views: functionalization (runtime.capture) turns
# `y[:, a:b] = v` into slice_scatter, `y[i] = v` into select_scatter, and
# the write itself into copy/fill on the view's value.

@lowers("slice_scatter")
def _slice_scatter(ctx, x, src, dim=0, start=None, end=None, step=1):
    v, u = ctx.tensor(x), ctx.tensor(src)
    dim %= len(v.shape)
    start, size = _slice_range(v.shape[dim], start, end, step)
    if u.shape[dim] != size or u.elem != v.elem:
        raise Unsupported("slice_scatter of %s%s into %s" % (u.elem, list(u.shape), v.elem))
    if size == v.shape[dim]:
        return u
    return ctx.f.insert_slice(v, u, dim, start, step)


@lowers("select_scatter")
def _select_scatter(ctx, x, src, dim, index):
    v, u = ctx.tensor(x), ctx.tensor(src)
    dim %= len(v.shape)
    if u.elem != v.elem:
        raise Unsupported("select_scatter of %s into %s" % (u.elem, v.elem))
    u = ctx.f.reshape(u, v.shape[:dim] + (1,) + v.shape[dim + 1:])
    return ctx.f.insert_slice(v, u, dim, index % v.shape[dim])


@lowers("copy.default")
def _copy(ctx, x, src, non_blocking=False):
    """The functional copy: src broadcast to x's shape, in x's element type."""
    v, u = ctx.tensor(x), ctx.tensor(src)
    u = ctx.f.convert(u, v.elem)
    if u.shape == v.shape:
        return u
    return ctx.f.elementwise([u], lambda e, a: a, out_elem=v.elem, shape=v.shape)


@lowers("fill.Scalar", "fill.Tensor")
def _fill(ctx, x, value):
    if not isinstance(value, (int, float)):
        return _copy(ctx, x, value)  # a 0-d tensor's value, broadcast
    v = ctx.tensor(x)
    if not v.elem.startswith("f"):
        raise Unsupported("fill of %s" % v.elem)
    return Val(ctx.f.filled(v.phys, float(value)), v.shape, v.elem, v.perm)


@lowers("constant_pad_nd")
def _constant_pad(ctx, x, pad, value=0.0):
    """pad: (low, high) pairs from the last dim backwards; negative crops."""
    v = ctx.tensor(x)
    _floats(v)
    rank = len(v.shape)
    low, high = [0] * rank, [0] * rank
    for k in range(len(pad) // 2):
        d = rank - 1 - k
        low[d], high[d] = pad[2 * k], pad[2 * k + 1]
    for d in range(rank):  # crops first, as slices
        if low[d] < 0 or high[d] < 0:
            lo, hi = max(0, -low[d]), max(0, -high[d])
            v = ctx.f.slice(v, d, lo, v.shape[d] - lo - hi)
            low[d], high[d] = max(0, low[d]), max(0, high[d])
    phys_low = [low[p] for p in v.perm]
    phys_high = [high[p] for p in v.perm]
    return ctx.f.pad(v, phys_low, phys_high, float(value))


@lowers("roll")
def _roll(ctx, x, shifts, dims=()):
    v = ctx.tensor(x)
    shifts = [shifts] if isinstance(shifts, int) else list(shifts)
    dims = [dims] if isinstance(dims, int) else list(dims)
    if len(dims) != len(shifts):
        raise Unsupported("roll of the flattened tensor")
    for s, d in zip(shifts, dims):
        d %= len(v.shape)
        n = v.shape[d]
        s %= n
        if s:
            v = ctx.f.concat([ctx.f.slice(v, d, n - s, s), ctx.f.slice(v, d, 0, n - s)], d)
    return v


@lowers("flip")
def _flip(ctx, x, dims):
    v = ctx.f.logical(ctx.tensor(x))
    rank = len(v.shape)
    flipped = {d % rank for d in dims}
    exprs = ["%d - d%d" % (v.shape[i] - 1, i) if i in flipped else "d%d" % i for i in range(rank)]
    r = ctx.f.generic(v.shape, [(v, exprs)], ["d%d" % i for i in range(rank)],
                      ["parallel"] * rank, lambda e, a: a[0], v.elem)
    return Val(r, v.shape, v.elem)


@lowers("unfold")
def _unfold(ctx, x, dim, size, step):
    """Tensor.unfold: windows of `size` elements every `step` along dim, as
    a new last dim (HaloNet's blocks): out[.., i, .., k] = x[.., i*step + k, ..]."""
    v = ctx.f.logical(ctx.tensor(x))
    rank = len(v.shape)
    dim %= max(rank, 1)
    n = (v.shape[dim] - size) // step + 1
    shape = v.shape[:dim] + (n,) + v.shape[dim + 1:] + (size,)
    exprs = ["d%d * %d + d%d" % (dim, step, rank) if i == dim else "d%d" % i for i in range(rank)]
    r = ctx.f.generic(shape, [(v, exprs)], ["d%d" % i for i in range(rank + 1)],
                      ["parallel"] * (rank + 1), lambda e, a: a[0], v.elem)
    return Val(r, shape, v.elem)


def _batched_windows(ctx, x, ranks, what):
    """im2col's and col2im's operand as a logical Val with a leading batch
    (a unit one added when it has none: `batched` False)."""
    v = ctx.f.logical(ctx.tensor(x))
    _floats(v)
    if len(v.shape) not in ranks:
        raise Unsupported("%s of a %d-d tensor" % (what, len(v.shape)))
    batched = len(v.shape) == max(ranks)
    return (v if batched else ctx.f.reshape(v, (1,) + v.shape)), batched


def _window_counts(hp, wp, kernel, dilation, stride):
    """Windows along the padded height and width (nn.Unfold's L factors)."""
    (kh, kw), (dh, dw), (sh, sw) = kernel, dilation, stride
    return (hp - dh * (kh - 1) - 1) // sh + 1, (wp - dw * (kw - 1) - 1) // sw + 1


@lowers("im2col")
def _im2col(ctx, x, kernel_size, dilation, padding, stride):
    """nn.Unfold (VOLO's outlook attention): every kh x kw window of the
    padded input as a column, out[n, (c, i, j), (oh, ow)] =
    xpad[n, c, oh*sh + i*dh, ow*sw + j*dw]: one generic over (n, c, i, j,
    oh, ow) and a reshape."""
    v, batched = _batched_windows(ctx, x, (3, 4), "im2col")
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (ints(a) for a in
                                              (kernel_size, dilation, padding, stride))
    v = ctx.f.pad(v, [0, 0, ph, pw], [0, 0, ph, pw], 0.0)
    n, c, h, w = v.shape
    oh, ow = _window_counts(h, w, (kh, kw), (dh, dw), (sh, sw))
    if oh <= 0 or ow <= 0:
        raise Unsupported("im2col with no windows")
    shape = (n, c, kh, kw, oh, ow)
    exprs = ["d0", "d1", "d4 * %d + d2 * %d" % (sh, dh), "d5 * %d + d3 * %d" % (sw, dw)]
    r = ctx.f.generic(shape, [(v, exprs)], ["d%d" % i for i in range(6)], ["parallel"] * 6,
                      lambda e, a: a[0], v.elem)
    cols = (n, c * kh * kw, oh * ow) if batched else (c * kh * kw, oh * ow)
    return ctx.f.reshape(Val(r, shape, v.elem), cols)


@lowers("col2im")
def _col2im(ctx, x, output_size, kernel_size, dilation, padding, stride):
    """nn.Fold, im2col's adjoint: each column entry (c, i, j) of window
    (oh, ow) is added into the padded output at (oh*sh + i*dh, ow*sw + j*dw).
    Per kernel offset (i, j), the (oh, ow) plane is placed at its strided
    rows and columns of the padded output: that strided window of the sum
    so far, plus the plane, is inserted back (kh*kw passes over oh x ow
    planes, no scatter)."""
    v, batched = _batched_windows(ctx, x, (2, 3), "col2im")
    (h, w), (kh, kw), (dh, dw), (ph, pw), (sh, sw) = (
        ints(a) for a in (output_size, kernel_size, dilation, padding, stride))
    hp, wp = h + 2 * ph, w + 2 * pw
    oh, ow = _window_counts(hp, wp, (kh, kw), (dh, dw), (sh, sw))
    n, rows, cols = v.shape
    if oh <= 0 or ow <= 0 or rows % (kh * kw) or cols != oh * ow:
        raise Unsupported("col2im of %s into %s" % (list(v.shape), [h, w]))
    c = rows // (kh * kw)
    v = ctx.f.reshape(v, (n, c, kh, kw, oh, ow))
    acc = Val(ctx.f.filled((n, c, hp, wp), 0.0), (n, c, hp, wp))
    for i in range(kh):
        for j in range(kw):
            plane = ctx.f.reshape(ctx.f.slice(ctx.f.slice(v, 2, i, 1), 3, j, 1), (n, c, oh, ow))
            window = ctx.f.slice(ctx.f.slice(acc, 2, i * dh, oh, sh), 3, j * dw, ow, sw)
            summed = ctx.f.elementwise([window, plane], lambda b, p, q: b.add(p, q))
            acc = ctx.f.insert_slice(acc, summed, (2, 3), (i * dh, j * dw), (sh, sw))
    out = ctx.f.slice(ctx.f.slice(acc, 2, ph, h), 3, pw, w)
    return out if batched else ctx.f.reshape(out, (c, h, w))


@lowers("new_zeros", "new_ones", "new_full", "new_empty")
def _new_filled(ctx, x, size, *args, dtype=None, **kw):
    if ctx.op.startswith("new_full"):
        value = args[0]
    else:
        value = 1.0 if ctx.op.startswith("new_ones") else 0.0
    elem = emit.elem_of(dtype) if dtype is not None else ctx.tensor(x).elem
    if elem != "f32":
        raise Unsupported("%s of type %s" % (ctx.op, dtype))
    return Val(ctx.f.filled(tuple(size), float(value)), tuple(size))


@lowers("split.Tensor", "split_with_sizes")
def _split(ctx, x, sizes, dim=0):
    v = ctx.tensor(x)
    dim %= len(v.shape)
    n = v.shape[dim]
    if isinstance(sizes, int):
        sizes = [min(sizes, n - i) for i in range(0, n, sizes)]
    out, off = [], 0
    for s in sizes:
        out.append(ctx.f.slice(v, dim, off, s))
        off += s
    return tuple(out)


@lowers("unbind.int", "unbind")
def _unbind(ctx, x, dim=0):
    v = ctx.tensor(x)
    dim %= len(v.shape)
    return tuple(_select(ctx, v, dim, i) for i in range(v.shape[dim]))


@lowers("stack")
def _stack(ctx, tensors, dim=0):
    vals = [ctx.tensor(t) for t in tensors]
    dim %= len(vals[0].shape) + 1
    vals = [_unsqueeze(ctx, v, dim) for v in vals]
    return vals[0] if len(vals) == 1 else ctx.f.concat(vals, dim)


@lowers("cat")
def _cat(ctx, tensors, dim=0):
    # Empty tensors add nothing (torch.cat also skips 1-D empty ones of any
    # other shape: an empty key/value cache before the first step).
    vals = [v for v in (ctx.tensor(t) for t in tensors) if math.prod(v.shape) > 0]
    if not vals:
        raise Unsupported("cat of empty tensors")
    if len(vals) == 1:
        return vals[0]
    return ctx.f.concat(vals, dim % len(vals[0].shape))


# ---------------------------------------------------------------- contractions

@lowers("mm")
def _mm(ctx, a, b):
    _floats(ctx.tensor(a), ctx.tensor(b))  # integer products run eagerly (exact)
    return ctx.f.matmul(ctx.tensor(a), ctx.tensor(b))


@lowers("bmm")
def _bmm(ctx, a, b):
    _floats(ctx.tensor(a), ctx.tensor(b))
    return ctx.f.matmul(ctx.tensor(a), ctx.tensor(b), batch=True)


@lowers("addmm")
def _addmm(ctx, bias, a, b, beta=1, alpha=1):
    _floats(ctx.tensor(a), ctx.tensor(b))
    bias_v = ctx.tensor(bias)
    if alpha == 1 and beta == 1 and len(bias_v.shape) == 1:
        return ctx.f.matmul(ctx.tensor(a), ctx.tensor(b), bias=bias_v)
    m = ctx.f.matmul(ctx.tensor(a), ctx.tensor(b))
    return ctx.f.elementwise([m, ctx.tensor(bias)],
                             lambda e, x, y: e.add(e.mul(x, float(alpha)) if alpha != 1 else x,
                                                   e.mul(y, float(beta)) if beta != 1 else y))


@lowers("baddbmm")
def _baddbmm(ctx, bias, a, b, beta=1, alpha=1):
    """beta * bias + alpha * (a @ b), batched (BLOOM's ALiBi scores)."""
    _floats(ctx.tensor(a), ctx.tensor(b))
    m = ctx.f.matmul(ctx.tensor(a), ctx.tensor(b), batch=True)
    if beta == 0:  # PyTorch ignores bias then (even inf or nan in it)
        return ctx.f.elementwise([m], lambda e, x: e.mul(x, float(alpha)) if alpha != 1 else x)
    return ctx.f.elementwise([m, ctx.tensor(bias)],
                             lambda e, x, y: e.add(e.mul(x, float(alpha)) if alpha != 1 else x,
                                                   e.mul(y, float(beta)) if beta != 1 else y))


@lowers("convolution")
def _convolution(ctx, x, w, bias, stride, padding, dilation, transposed, output_padding,
                 groups):
    v = ctx.tensor(x)
    if not isinstance(w, Const):
        raise Unsupported("convolution with a weight computed at run time")
    wt = w.tensor
    if len(v.shape) == 3 and not transposed:
        # 1-D (ECA's channel attention, audio front ends): a 2-D
        # convolution over a height of 1.
        n, c, length = v.shape
        y = _convolution(ctx, ctx.f.reshape(v, (n, c, 1, length)), Const(wt.unsqueeze(2)), bias,
                         [1] + ints(stride, 1), [0] + ints(padding, 1), [1] + ints(dilation, 1),
                         False, (0, 0), groups)
        return ctx.f.reshape(y, (n, y.shape[1], y.shape[3]))
    if len(v.shape) == 5 and not transposed and wt.shape[4] == 1 and ints(stride, 3)[2] == 1 \
            and ints(padding, 3)[2] == 0:
        # 3-D with a kernel one deep in the last dim (LambdaNet's position
        # lambdas): a 2-D convolution of each last-dim slice.
        n, c, d1, d2, d3 = v.shape
        x2 = ctx.f.reshape(_permute(ctx, v, [0, 4, 1, 2, 3]), (n * d3, c, d1, d2))
        y = _convolution(ctx, x2, Const(wt[..., 0]), bias, ints(stride, 3)[:2],
                         ints(padding, 3)[:2], ints(dilation, 3)[:2], False, (0, 0), groups)
        y = ctx.f.reshape(y, (n, d3) + y.shape[1:])
        return _permute(ctx, y, [0, 2, 3, 4, 1])
    if len(v.shape) != 4:
        raise Unsupported("%d-D convolution" % (len(v.shape) - 2))
    if transposed:
        return _conv_transpose(ctx, v, wt, bias, ints(stride), ints(padding), ints(dilation),
                               ints(output_padding), groups)
    f_, cg, kh, kw = wt.shape
    c = v.shape[1]
    if groups > 1 and groups == c == f_ and cg == 1:
        hwc = wt.permute(2, 3, 0, 1).reshape(kh, kw, c)
        return ctx.f.conv2d(v, ctx.bind(hwc), ints(stride), ints(padding), ints(dilation),
                            True, ctx.tensor(bias) if bias is not None else None)
    if groups > 1:  # (F, C/G, KH, KW) -> (G, F/G, KH, KW, C/G)
        w_ = ctx.bind(wt.reshape(groups, f_ // groups, cg, kh, kw).permute(0, 1, 3, 4, 2))
    else:
        w_ = ctx.bind(wt.permute(2, 3, 1, 0))
    return ctx.f.conv2d(v, w_, ints(stride), ints(padding), ints(dilation), False,
                        ctx.tensor(bias) if bias is not None else None, groups)


def _per_group(ctx, v, wt, bias, groups, fg, conv):
    """A grouped transposed convolution as `groups` ones, conv(x_g, w_g, bias_g),
    on the channel groups of v (NHWC slices) and of the weight's dim 0, their
    results concatenated along the channels. Each group's convolution is a
    GEMM pbc tiles like any other (a block-diagonal weight would multiply
    zeros: groups times the work)."""
    bias_v = ctx.tensor(bias) if bias is not None else None
    if groups == 1:
        return conv(v, wt, bias_v)
    if groups > MAX_CONV_GROUPS:
        raise Unsupported("transposed convolution with %d groups (at most %d, one each)"
                          % (groups, MAX_CONV_GROUPS))
    v = ctx.f.transpose_to(v, NHWC)
    cg, wg = v.shape[1] // groups, wt.shape[0] // groups
    outs = []
    for g in range(groups):
        bg = ctx.f.slice(bias_v, 0, g * fg, fg) if bias_v is not None else None
        outs.append(conv(ctx.f.slice(v, 1, g * cg, cg), wt[g * wg:(g + 1) * wg], bg))
    return ctx.f.concat(outs, 1)


def _conv_transpose(ctx, v, wt, bias, stride, padding, dilation, output_padding, groups):
    # PyTorch's weight is (C, F / groups, KH, KW); TOSA wants (F, KH, KW, C).
    if dilation != [1, 1]:
        # A dilated kernel is the kernel with dilation - 1 zeros between its
        # taps (exact; the zeros are multiplied).
        c, fg, kh, kw = wt.shape
        stuffed = wt.new_zeros(c, fg, dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1)
        stuffed[:, :, ::dilation[0], ::dilation[1]] = wt
        wt = stuffed
    kh, kw = wt.shape[2], wt.shape[3]
    if padding[0] >= kh or padding[1] >= kw:
        raise Unsupported("transposed convolution cropping a kernel or more (padding %s)"
                          % padding)

    def conv(xg, wg, bg):
        return ctx.f.conv_transpose2d(xg, ctx.bind(wg.permute(1, 2, 3, 0)), bg, stride,
                                      padding, output_padding)

    return _per_group(ctx, v, wt, bias, groups, wt.shape[1], conv)


# ---------------------------------------------------------------- normalization

def batch_norm_scale_shift(w, b, mean, var, eps):
    """Inference batch norm as y = x * scale + shift, per channel."""
    scale = torch.rsqrt(var + eps)
    if w is not None:
        scale = scale * w
    shift = -mean * scale
    if b is not None:
        shift = shift + b
    return scale, shift


@lowers("native_batch_norm", "_native_batch_norm_legit_no_training")
def _batch_norm(ctx, x, w, b, mean, var, *rest):
    training = rest[0] if len(rest) == 3 else False
    eps = rest[-1]
    if training:
        raise Unsupported("batch norm in training mode")
    v = ctx.tensor(x)
    const = lambda t: ctx.const_tensor(t) if t is not None else None
    try:
        scale, shift = batch_norm_scale_shift(const(w), const(b), const(mean), const(var), eps)
    except Unsupported:
        raise Unsupported("batch norm with statistics computed at run time")
    tail = (1,) * (len(v.shape) - 2)
    out = ctx.f.elementwise([v, ctx.bind(scale.reshape(-1, *tail)),
                             ctx.bind(shift.reshape(-1, *tail))],
                            lambda e, a, s, t: e.add(e.mul(a, s), t))
    return (out, None, None)


@lowers("native_layer_norm")
def _layer_norm(ctx, x, shape, w, b, eps):
    v = ctx.tensor(x)
    dims = list(range(len(v.shape) - len(shape), len(v.shape)))
    f = ctx.f
    mean = f.mean(v, dims, True)
    centered = f.elementwise([v, mean], lambda e, a, m: e.sub(a, m))
    var = f.mean(f.elementwise([centered], lambda e, a: e.mul(a, a)), dims, True)
    rstd = f.elementwise([var], lambda e, a: e.math("rsqrt", e.add(a, float(eps))))
    ops = [centered, rstd] + [ctx.tensor(t) for t in (w, b) if t is not None]

    def body(e, c, r, *wb):
        y = e.mul(c, r)
        if w is not None:
            y = e.mul(y, wb[0])
        if b is not None:
            y = e.add(y, wb[-1])
        return y

    return (f.elementwise(ops, body), mean, rstd)


@lowers("native_group_norm")
def _group_norm(ctx, x, w, b, n, c, hw, groups, eps):
    """(N, C, *) normalized over each group of C / G channels and the
    spatial dims, then scaled and shifted per channel (wav2vec2's feature
    encoder, GroupNorm CNNs); mean and rstd (N, G) as its other results."""
    v = ctx.f.logical(ctx.tensor(x))
    _floats(v)
    f = ctx.f
    grouped = f.reshape(v, (n, groups, (c // groups) * hw))
    mean = f.mean(grouped, [2], True)
    centered = f.elementwise([grouped, mean], lambda e, a, m: e.sub(a, m))
    var = f.mean(f.elementwise([centered], lambda e, a: e.mul(a, a)), [2], True)
    rstd = f.elementwise([var], lambda e, a: e.math("rsqrt", e.add(a, float(eps))))
    y = f.reshape(f.elementwise([centered, rstd], lambda e, a, r: e.mul(a, r)), v.shape)
    bshape = (c,) + (1,) * (len(v.shape) - 2)
    ops = [y] + [f.reshape(ctx.tensor(t), bshape) for t in (w, b) if t is not None]

    def body(e, a, *wb):
        if w is not None:
            a = e.mul(a, wb[0])
        if b is not None:
            a = e.add(a, wb[-1])
        return a
    out = f.elementwise(ops, body) if len(ops) > 1 else y
    return (out, f.reshape(mean, (n, groups)), f.reshape(rstd, (n, groups)))


@lowers("_log_softmax", "log_softmax.int")
def _log_softmax(ctx, x, dim, half_to_float=False, **kw):
    """x - max - log(sum(exp(x - max))) along dim: no log of an underflowed
    softmax."""
    v = ctx.tensor(x)
    _floats(v)
    f = ctx.f
    m = f.reduce(v, [dim], True, "max")
    shifted = f.elementwise([v, m], lambda e, a, b: e.sub(a, b))
    s = f.reduce(f.elementwise([shifted], lambda e, a: e.math("exp", a)), [dim], True)
    return f.elementwise([shifted, s], lambda e, a, b: e.sub(a, e.math("log", b)))


@lowers("minimum", "maximum")
def _min_max(ctx, a, b):
    return _binary(ctx, a, b, (lambda e, x, y: e.min(x, y)) if ctx.op.startswith("minimum")
                   else (lambda e, x, y: e.max(x, y)),
                   "arith.minsi" if ctx.op.startswith("minimum") else "arith.maxsi")


@lowers("_softmax", "softmax.int")
def _softmax(ctx, x, dim, half_to_float=False, **kw):
    return ctx.f.softmax(ctx.tensor(x), dim)


@lowers("_safe_softmax")
def _safe_softmax(ctx, x, dim, dtype=None):
    """softmax, 0 on rows that are all -inf (a query every key of which is
    masked: T5's and transformers 5's masks) where softmax gives NaN."""
    v = ctx.tensor(x)
    _floats(v)
    if dtype not in (None, torch.float32):
        raise Unsupported("a softmax into %s" % dtype)
    s = ctx.f.softmax(v, dim)
    m = ctx.f.reduce(v, [dim], True, "max")

    def body(e, p, mx):
        dead = e.op("arith.cmpf oeq, %s, %s" % (mx, e.const(-math.inf)))
        return e.op("arith.select %s, %s, %s" % (dead, e.const(0.0), p))
    return ctx.f.elementwise([s, m], body)


# ---------------------------------------------------------------- pooling, reductions

def _pool_out(n, k, s, p, ceil):
    num = n + 2 * p - k
    return (-(-num // s) if ceil else num // s) + 1


def _pool_geometry(v, kernel, stride, padding, ceil_mode):
    """Kernel, stride, top/left and bottom/right padding of a 2-d pooling
    as PyTorch sizes it: with ceil_mode the last window may start past the
    input's end minus the kernel (not past the input and its left padding),
    and the bottom/right padding grows to cover it."""
    k, p = ints(kernel), ints(padding)
    s = ints(stride) if stride else k
    high = []
    for i in range(2):
        n = v.shape[2 + i]
        out = _pool_out(n, k[i], s[i], p[i], ceil_mode)
        if ceil_mode and (out - 1) * s[i] >= n + p[i]:
            out -= 1
        high.append(max(p[i], (out - 1) * s[i] + k[i] - n - p[i]))
    return k, s, p, high


@lowers("max_pool2d_with_indices", "max_pool2d")
def _max_pool(ctx, x, kernel, stride=(), padding=0, dilation=1, ceil_mode=False):
    v = ctx.tensor(x)
    _floats(v)
    if ints(dilation) != [1, 1]:
        raise Unsupported("dilated max pooling")
    k, s, p, high = _pool_geometry(v, kernel, stride, padding, ceil_mode)
    out = ctx.f.pool2d(v, k, s, p, "max", high)
    return (out, None) if "indices" in ctx.op else out


@lowers("avg_pool2d")
def _avg_pool(ctx, x, kernel, stride=(), padding=0, ceil_mode=False, count_include_pad=True,
              divisor_override=None):
    """A sum pooling, times the reciprocal of each window's divisor. The
    divisors (which windows count padding, how ceil_mode's last windows are
    clipped, an override) are PyTorch's own: avg_pool2d of ones divided by
    the number of input elements in each window, computed when compiling."""
    v = ctx.tensor(x)
    _floats(v)
    k, s, p, high = _pool_geometry(v, kernel, stride, padding, ceil_mode)
    out = ctx.f.pool2d(v, k, s, p, "sum", high)
    plain = not ceil_mode and divisor_override is None and (count_include_pad or not any(p))
    if plain:
        return ctx.f.elementwise([out], lambda e, a: e.mul(a, 1.0 / (k[0] * k[1])))
    ones = torch.ones((1, 1) + tuple(v.shape[2:]), dtype=torch.float64)
    avg = torch.nn.functional.avg_pool2d(ones, k, s, p, ceil_mode, count_include_pad,
                                         divisor_override)
    counts = torch.nn.functional.avg_pool2d(ones, k, s, p, ceil_mode, count_include_pad, 1)
    scale = (avg / counts)[0, 0].float()
    if tuple(scale.shape) != tuple(out.shape[2:]):
        raise Unsupported("average pooling of output %s, PyTorch's %s" % (
            out.shape[2:], tuple(scale.shape)))
    return ctx.f.elementwise([out, ctx.tensor(Const(scale))], lambda e, a, r: e.mul(a, r))


@lowers("_adaptive_avg_pool2d", "adaptive_avg_pool2d")
def _adaptive_avg_pool(ctx, x, size):
    v = ctx.tensor(x)
    oh, ow = ints(size)
    h, w = v.shape[-2:]
    if (oh, ow) == (1, 1):
        return ctx.f.mean(v, [-2, -1], True)
    if h % oh or w % ow or len(v.shape) != 4:
        raise Unsupported("adaptive pooling with uneven windows")
    return _avg_pool(ctx, v, [h // oh, w // ow])


@lowers("adaptive_max_pool2d")
def _adaptive_max_pool(ctx, x, size):
    """Whole-map or evenly divided windows; the indices (second result) are
    not computed."""
    v = ctx.tensor(x)
    _floats(v)
    oh, ow = ints(size)
    h, w = v.shape[-2:]
    if len(v.shape) != 4:
        raise Unsupported("adaptive max pooling of a %d-D tensor" % len(v.shape))
    if (oh, ow) == (1, 1):
        return ctx.f.reduce(v, [-2, -1], True, "max"), None
    if h % oh or w % ow:
        raise Unsupported("adaptive max pooling with uneven windows")
    k = [h // oh, w // ow]
    return ctx.f.pool2d(v, k, k, [0, 0], "max"), None


def _reduction(ctx, x, dims, dtype, reduce):
    v = ctx.tensor(x)
    _floats(v)
    if dtype not in (None, torch.float32):
        raise Unsupported("a reduction into %s" % dtype)
    if not v.shape:  # a 0-d tensor reduced over its one "dimension" (0 or -1)
        return v
    return reduce(v, dims if dims else range(len(v.shape)))


@lowers("cumsum")
def _cumsum(ctx, x, dim, dtype=None):
    v = ctx.tensor(x)
    if dtype is not None:
        elem = emit.elem_of(dtype)
    else:  # PyTorch's: integers and booleans sum in int64
        elem = v.elem if v.elem.startswith("f") else "i64"
    if elem not in ("f32", "i64", "i32"):
        raise Unsupported("cumsum into %s" % dtype)
    if not v.shape:
        return ctx.f.convert(v, elem)
    return ctx.f.cumsum(ctx.f.convert(v, elem), dim)


@lowers("mean.dim")
def _mean(ctx, x, dims, keepdim=False, dtype=None):
    return _reduction(ctx, x, dims, dtype, lambda v, d: ctx.f.mean(v, d, keepdim))


@lowers("sum.dim_IntList")
def _sum(ctx, x, dims, keepdim=False, dtype=None):
    return _reduction(ctx, x, dims, dtype, lambda v, d: ctx.f.reduce(v, d, keepdim))


@lowers("mean.default", "sum.default")
def _reduce_all(ctx, x, dtype=None):
    """mean or sum of every element: a 0-d result."""
    if ctx.op.startswith("mean"):
        return _reduction(ctx, x, (), dtype, lambda v, d: ctx.f.mean(v, d, False))
    return _reduction(ctx, x, (), dtype, lambda v, d: ctx.f.reduce(v, d, False))


@lowers("amax")
def _amax(ctx, x, dims=(), keepdim=False):
    return _reduction(ctx, x, dims, None, lambda v, d: ctx.f.reduce(v, d, keepdim, "max"))


@lowers("max.dim")
def _max_dim(ctx, x, dim, keepdim=False):
    """(values, indices) of the maximum along dim; the index is the first
    that holds it (a NaN's, the first NaN's: PyTorch's)."""
    v = ctx.f.logical(ctx.tensor(x))
    _floats(v)
    if not v.shape:
        raise Unsupported("max.dim of a 0-d tensor")
    rank = len(v.shape)
    dim %= rank
    m = ctx.f.reduce(v, [dim], True, "max")
    kept = tuple(1 if i == dim else s for i, s in enumerate(v.shape))
    init = ctx.f.filled(kept, 2**62, "i64")  # past every index: the min keeps a hit
    ids = ["d%d" % i for i in range(rank)]
    at_max = ["0" if i == dim else "d%d" % i for i in range(rank)]

    def body(b, a):
        i, i64, eq, nan, hit, cand, r = (ctx.f.fresh() for _ in range(7))
        b.lines.append("%s = linalg.index %d : index" % (i, dim))
        b.lines.append("%s = arith.index_cast %s : index to i64" % (i64, i))
        b.lines.append("%s = arith.cmpf oeq, %s, %s : f32" % (eq, a[0], a[1]))
        b.lines.append("%s = arith.cmpf uno, %s, %s : f32" % (nan, a[0], a[0]))
        b.lines.append("%s = arith.ori %s, %s : i1" % (hit, eq, nan))
        b.lines.append("%s = arith.select %s, %s, %s : i64" % (cand, hit, i64, a[2]))
        b.lines.append("%s = arith.minsi %s, %s : i64" % (r, cand, a[2]))
        return r

    its = ["reduction" if i == dim else "parallel" for i in range(rank)]
    r = ctx.f.generic(kept, [(v, ids), (ctx.f.logical(m), at_max)], at_max, its, body, "i64",
                      init=init)
    idx = Val(r, kept, "i64")
    if keepdim:
        return ctx.f.logical(m), idx
    out = tuple(s for i, s in enumerate(v.shape) if i != dim)
    return ctx.f.reshape(ctx.f.logical(m), out), ctx.f.reshape(idx, out)


@lowers("linalg_vector_norm", "norm.ScalarOpt_dim")
def _vector_norm(ctx, x, ord=2, dims=None, keepdim=False, dtype=None):
    """The 1-, 2- and max-norms over dims (ConvNeXt-V2's global response
    normalization)."""
    v = ctx.tensor(x)
    _floats(v)
    if dtype not in (None, torch.float32):
        raise Unsupported("a norm into %s" % dtype)
    dims = list(range(len(v.shape))) if dims is None or dims == [] else \
        ([dims] if isinstance(dims, int) else list(dims))
    f = ctx.f
    if ord == 2:
        sq = f.reduce(f.elementwise([v], lambda e, a: e.mul(a, a)), dims, keepdim)
        return f.elementwise([sq], lambda e, a: e.math("sqrt", a))
    if ord == 1:
        return f.reduce(f.elementwise([v], lambda e, a: e.math("absf", a)), dims, keepdim)
    if ord == math.inf:
        return f.reduce(f.elementwise([v], lambda e, a: e.math("absf", a)), dims, keepdim, "max")
    raise Unsupported("the %s-norm" % ord)


# ---------------------------------------------------------------- other

@lowers("embedding")
def _embedding(ctx, weight, indices, *rest):
    idx = ctx.tensor(indices)
    if idx.elem not in ("i64", "i32"):
        raise Unsupported("embedding indices of type %s" % idx.elem)
    table = ctx.tensor(weight)
    ctx.seg.gathers.append((idx, 0, table.shape[0]))
    return ctx.f.gather_rows(table, idx)


def _index_tensors(ctx, indices):
    """Advanced indexing's index list: {dim: integer index Val} (None: the
    whole dim) and the shape they broadcast to. Boolean masks (a
    data-dependent shape) are not lowered."""
    idx = {}
    for d, t in enumerate(indices):
        if t is None:
            continue
        t = ctx.tensor(t)
        if t.elem not in ("i64", "i32"):
            raise Unsupported("indexing with a %s tensor" % t.elem)
        idx[d] = t
    bshape = []
    for t in idx.values():
        bshape = list(torch.broadcast_shapes(tuple(bshape), t.shape))
    return idx, bshape


def _indexed_order(rank, dims, nb):
    """The dims of x[indices], NumPy's placement: ("x", d) for a whole dim d
    of x, ("b", k) for dim k of the index tensors' broadcast shape (nb
    dims), which takes the place of the indexed dims (sorted `dims`) when
    those are adjacent, else leads."""
    rest = [d for d in range(rank) if d not in dims]
    block = [("b", k) for k in range(nb)]
    if dims == list(range(dims[0], dims[-1] + 1)):
        return [("x", d) for d in rest if d < dims[0]] + block + \
            [("x", d) for d in rest if d > dims[-1]]
    return block + [("x", d) for d in rest]


@lowers("index.Tensor", "_unsafe_index.Tensor")
def _index(ctx, x, indices):
    """x[i0, i1, ...] with integer index tensors (None: the whole dim),
    NumPy's rules: the index tensors broadcast together; their dims take the
    place of the indexed dims when those are adjacent, else lead. Boolean
    masks (a data-dependent shape) run eagerly."""
    v = ctx.tensor(x)
    idx, bshape = _index_tensors(ctx, indices)
    if not idx:
        return v
    order = _indexed_order(len(v.shape), sorted(idx), len(bshape))
    shape = [v.shape[j] if kind == "x" else bshape[j] for kind, j in order]
    out_dims = {j: o for o, (kind, j) in enumerate(order) if kind == "x"}
    bdims = [o for o, (kind, _) in enumerate(order) if kind == "b"]
    for d in idx:
        out_dims[d] = bdims
    for d, t in idx.items():
        ctx.seg.gathers.append((t, -v.shape[d], v.shape[d]))
    return ctx.f.gather_index(v, idx, tuple(shape), out_dims)


@lowers("index_put", "_unsafe_index_put", "index_put_", "_index_put_impl")
def _index_put(ctx, x, indices, values, accumulate=False, unsafe=False):
    """x[i0, i1, ...] = values (+= with accumulate), integer index tensors
    (None: the whole dim), NumPy's placement of the indexed dims as in
    _index; values broadcast to x[i0, i1, ...]'s shape. Boolean masks run
    eagerly."""
    v = ctx.tensor(x)
    vals = ctx.tensor(values)
    idx, bshape = _index_tensors(ctx, indices)
    if not idx:
        raise Unsupported("index_put without index tensors")
    if vals.elem != v.elem:
        vals = ctx.f.convert(vals, v.elem)
    rank = len(v.shape)
    nb = len(bshape)
    # The iteration dim of each dim of x[indices]: x's own dims for the
    # whole ones, the index positions (rank + k) for the indexed block.
    sel = [j if kind == "x" else rank + j for kind, j in _indexed_order(rank, sorted(idx), nb)]
    sizes = {d: v.shape[d] for d in range(rank)}
    sizes.update({rank + k: bshape[k] for k in range(nb)})
    if len(vals.shape) > len(sel):
        raise Unsupported("index_put of values of rank %d" % len(vals.shape))
    value_dims = []
    for j, n in enumerate(vals.shape):
        it = sel[len(sel) - len(vals.shape) + j]
        if n == sizes[it]:
            value_dims.append(it)
        elif n == 1:
            value_dims.append(None)
        else:
            raise Unsupported("index_put of values %s into %s" % (vals.shape, tuple(sizes[i]
                                                                                  for i in sel)))
    for d, t in idx.items():
        ctx.seg.gathers.append((t, -v.shape[d], v.shape[d]))
    return ctx.f.scatter_index(v, idx, tuple(bshape), vals, value_dims, bool(accumulate))


@lowers("index_copy", "index_copy_")
def _index_copy(ctx, x, dim, index, source):
    """x with x.select(dim, index[k]) = source.select(dim, k): index_put
    along one dim (the KV cache's update)."""
    v = ctx.tensor(x)
    dim %= len(v.shape)
    return _index_put(ctx, v, [None] * dim + [index], source)


def _bitwise(kind):
    def lower(ctx, a, b=None):
        a = ctx.tensor(a)
        if a.elem.startswith("f"):
            raise Unsupported("bitwise op on %s" % a.elem)
        if b is None:  # bitwise_not: xor with all ones
            ones = -1 if a.elem != "i1" else 1
            return ctx.f.elementwise([a], lambda e, x: e.op("arith.xori %s, %s" % (
                x, e.const(ones, a.elem)), a.elem), out_elem=a.elem)
        b = ctx.operand(b)
        if isinstance(b, Val) and b.elem != a.elem:
            raise Unsupported("bitwise op on %s and %s" % (a.elem, b.elem))
        op = {"and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}[kind]

        def body(e, x, y):
            y = y if isinstance(y, str) else e.const(int(y), a.elem)
            return e.op("%s %s, %s" % (op, x, y), a.elem)
        return ctx.f.elementwise([a, b], body, out_elem=a.elem)
    return lower


for _k in ("and", "or", "xor"):
    lowers("bitwise_%s.Tensor" % _k, "bitwise_%s.Scalar" % _k)(_bitwise(_k))
lowers("bitwise_not")(_bitwise("not"))


def _logical(kind):
    def lower(ctx, a, b=None):
        vals = [ctx.f.convert(ctx.tensor(t), "i1") for t in ((a,) if b is None else (a, b))]
        if b is None:
            return ctx.f.elementwise(vals, lambda e, x: e.op("arith.xori %s, %s" % (
                x, e.const(1, "i1")), "i1"), out_elem="i1")
        op = {"and": "arith.andi", "or": "arith.ori", "xor": "arith.xori"}[kind]
        return ctx.f.elementwise(vals, lambda e, x, y: e.op("%s %s, %s" % (op, x, y), "i1"),
                                 out_elem="i1")
    return lower


for _k in ("and", "or", "xor", "not"):
    lowers("logical_%s" % _k)(_logical(_k))


def _aten_overload(name):
    """torch.ops.aten's OpOverload for 'upsample_nearest2d.vec'."""
    base, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, base), overload or "default")


def _gather_by_probe(ctx, x, spatial_dims, apply):
    """An op that only moves elements of its last `spatial_dims` dims
    (resizing by nearest neighbour, reflection and replication padding) as
    a gather: which input element each output element copies is PyTorch's
    own answer, the op applied (when compiling) to an image of element
    numbers."""
    v = ctx.tensor(x)
    lead, spatial = v.shape[:-spatial_dims], v.shape[-spatial_dims:]
    numbers = torch.arange(math.prod(spatial), dtype=torch.float64).reshape((1, 1) + spatial)
    src = apply(numbers)[0, 0].to(torch.int64)
    flat = ctx.f.reshape(v, lead + (math.prod(spatial),))
    k = len(lead)
    out_dims = {d: d for d in range(k)}
    out_dims[k] = list(range(k, k + src.dim()))
    return ctx.f.gather_index(flat, {k: ctx.tensor(Const(src))}, lead + tuple(src.shape), out_dims)


@lowers("upsample_nearest1d", "upsample_nearest2d", "upsample_nearest3d",
        "_upsample_nearest_exact1d", "_upsample_nearest_exact2d", "_upsample_nearest_exact3d")
def _upsample_nearest(ctx, x, *args, **kw):
    op = _aten_overload(ctx.op)
    return _gather_by_probe(ctx, x, len(ctx.tensor(x).shape) - 2, lambda t: op(t, *args, **kw))


@lowers("reflection_pad1d", "reflection_pad2d", "reflection_pad3d",
        "replication_pad1d", "replication_pad2d", "replication_pad3d")
def _copying_pad(ctx, x, *args, **kw):
    op = _aten_overload(ctx.op)
    return _gather_by_probe(ctx, x, int(ctx.op.split(".")[0][-2]), lambda t: op(t, *args, **kw))


@lowers("gather")
def _gather(ctx, x, dim, index, sparse_grad=False):
    """out[.., i, ..] = x[.., index[.., i, ..], ..] along dim; the index
    tensor's shape is the result's."""
    v, idx = ctx.tensor(x), ctx.tensor(index)
    if idx.elem not in ("i64", "i32"):
        raise Unsupported("gather with %s indices" % idx.elem)
    rank = len(v.shape)
    if len(idx.shape) != rank:
        raise Unsupported("gather with an index of another rank")
    dim %= rank
    out_dims = {d: d for d in range(rank)}
    out_dims[dim] = list(range(rank))
    ctx.seg.gathers.append((idx, -v.shape[dim], v.shape[dim]))
    return ctx.f.gather_index(v, {dim: idx}, idx.shape, out_dims)


@lowers("upsample_bilinear2d", "upsample_bicubic2d")
def _upsample_bilinear(ctx, x, *args, **kw):
    """Bilinear and bicubic resizing are separable and linear: y = A x Bᵀ per image,
    with A (OH x H) and B (OW x W) PyTorch's own weights, read off the op
    applied (when compiling) to unit rows and unit columns (align_corners,
    scales and sizes as given)."""
    v = ctx.f.logical(ctx.tensor(x))
    _floats(v)
    if len(v.shape) != 4:
        raise Unsupported("bilinear resizing of a %d-D tensor" % len(v.shape))
    n, c, h, w = v.shape
    op = _aten_overload(ctx.op)
    rows = torch.zeros(h, 1, h, w, dtype=torch.float64)
    cols = torch.zeros(w, 1, h, w, dtype=torch.float64)
    for i in range(h):
        rows[i, 0, i, :] = 1
    for j in range(w):
        cols[j, 0, :, j] = 1
    a = op(rows, *args, **kw)[:, 0, :, 0].t().float().contiguous()   # (OH, H)
    b = op(cols, *args, **kw)[:, 0, 0, :].t().float().contiguous()   # (OW, W)
    oh, ow = a.shape[0], b.shape[0]
    f = ctx.f
    av, bv = ctx.tensor(Const(a)), ctx.tensor(Const(b))
    t = f.generic((n, c, oh, w), [(av, ["d2", "d4"]), (v, ["d0", "d1", "d4", "d3"])],
                  ["d0", "d1", "d2", "d3"], ["parallel"] * 4 + ["reduction"],
                  lambda e, q: e.add(e.mul(q[0], q[1]), q[2]), init=f.filled((n, c, oh, w), 0.0))
    t = Val(t, (n, c, oh, w))
    y = f.generic((n, c, oh, ow), [(t, ["d0", "d1", "d2", "d4"]), (bv, ["d3", "d4"])],
                  ["d0", "d1", "d2", "d3"], ["parallel"] * 4 + ["reduction"],
                  lambda e, q: e.add(e.mul(q[0], q[1]), q[2]), init=f.filled((n, c, oh, ow), 0.0))
    return Val(y, (n, c, oh, ow))


@lowers("scalar_tensor")
def _scalar_tensor(ctx, value, dtype=None, **kw):
    if dtype not in (None, torch.float32):
        raise Unsupported("scalar_tensor of type %s" % dtype)
    return Val(ctx.f.filled((), float(value)), ())


@lowers("where.self")
def _where(ctx, cond, a, b):
    """select(cond, a, b) with numpy broadcasting; a and b f32 tensors or
    numbers (a boolean attention mask becomes an additive one this way)."""
    c = ctx.tensor(cond)
    a, b = ctx.operand(a), ctx.operand(b)
    if c.elem != "i1" or any(isinstance(x, Val) and x.elem != "f32" for x in (a, b)):
        raise Unsupported("where on %s" % ", ".join(
            x.elem if isinstance(x, Val) else "a number" for x in (c, a, b)))
    return ctx.f.elementwise(
        [c, a, b], lambda e, k, x, y: e.op("arith.select %s, %s, %s" % (k, e.arg(x), e.arg(y))))


def _kv_to_heads(f, t, lead, grouped):
    """Keys or values with the queries' leading dims: as they are, broadcast
    from size 1 (multi-query attention: one head for all), or with
    enable_gqa each of the H / Hkv query heads of a group reading its key
    head (grouped-query attention), copied out per query head."""
    if tuple(t.shape[:-2]) == tuple(lead):
        return t
    tl = t.shape[:-2]
    if len(tl) > len(lead):
        raise Unsupported("attention with keys of more batch dims than the queries")
    off = len(lead) - len(tl)
    exprs = []
    for i, n in enumerate(lead):
        j = i - off
        if j < 0:
            continue
        m = tl[j]
        if m == n:
            exprs.append("d%d" % i)
        elif m == 1:
            exprs.append("0")
        elif grouped and i == len(lead) - 1 and n % m == 0:
            exprs.append("d%d floordiv %d" % (i, n // m))
        else:
            raise Unsupported("attention with keys of batch dims %s for queries' %s" % (tl, lead))
    rank = len(lead) + 2
    exprs += ["d%d" % (rank - 2), "d%d" % (rank - 1)]
    t = f.logical(t)
    shape = tuple(lead) + tuple(t.shape[-2:])
    r = f.generic(shape, [(t, exprs)], ["d%d" % i for i in range(rank)], ["parallel"] * rank,
                  lambda e, a: a[0], t.elem)
    return Val(r, shape, t.elem)


@lowers("scaled_dot_product_attention", "_scaled_dot_product_attention",
        "_scaled_dot_product_attention_forward",
        "_scaled_dot_product_flash_attention_for_cpu")
def _sdpa(ctx, q, k, v, *args, **kw):
    """softmax(Q Kᵀ scale + mask) V on (..., L, E) tensors, in the form the
    cpu target's attention fusion (and the GPU targets' kernel) take: the
    leading dims flattened into one batch, the mask (additive, or boolean:
    False drops a key) over (L, S) or over all leading dims, causality as
    an index comparison. The flash variant's second result (logsumexp) is
    not computed."""
    # Positional arguments after q, k, v: torch 2's public op; its flash
    # variant (a second result); PyTorch 1.13's private op (the attention
    # weights as a second result, when asked for).
    flash = "flash" in ctx.op
    legacy = ctx.op.startswith("_scaled_dot_product_attention")
    names = (("dropout_p", "is_causal", "attn_mask", "scale") if flash
             else ("attn_mask", "dropout_p", "need_attn_weights", "is_causal") if legacy
             else ("attn_mask", "dropout_p", "is_causal", "scale", "enable_gqa"))
    opts = dict(zip(names, args))
    opts.update(kw)
    attn_mask, dropout_p = opts.get("attn_mask"), opts.get("dropout_p", 0.0)
    is_causal, scale = opts.get("is_causal", False), opts.get("scale")
    if dropout_p:
        raise Unsupported("attention with dropout")
    if opts.get("need_attn_weights"):
        raise Unsupported("attention returning its weights")
    q, k, v = ctx.tensor(q), ctx.tensor(k), ctx.tensor(v)
    lead = q.shape[:-2]
    f = ctx.f
    # The flash variant groups query heads over fewer key heads by itself
    # (what enable_gqa=True decomposes to).
    grouped = flash or bool(opts.get("enable_gqa", False))
    k = _kv_to_heads(f, k, lead, grouped)
    v = _kv_to_heads(f, v, lead, grouped)
    b = math.prod(lead)
    q3 = f.reshape(q, (b,) + q.shape[-2:])
    k3 = f.reshape(k, (b,) + k.shape[-2:])
    v3 = f.reshape(v, (b,) + v.shape[-2:])
    kt = _transpose(ctx, k3, 1, 2)
    s = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    sl, sk = q.shape[-2], k.shape[-2]
    mask = None
    if attn_mask is not None:
        mask = ctx.tensor(attn_mask)
        if mask.elem not in ("f32", "i1"):
            raise Unsupported("attention mask of type %s" % mask.elem)
        ms = mask.shape
        if len(ms) < 2 or ms[-2] not in (1, sl) or ms[-1] not in (1, sk):
            raise Unsupported("attention mask of shape %s" % (ms,))
        if all(d == 1 for d in ms[:-2]):
            mask = f.reshape(mask, ms[-2:])          # one mask for every batch
        elif len(ms) - 2 <= len(lead) and all(
                m in (1, n) for m, n in zip(reversed(ms[:-2]), reversed(lead))):
            if tuple(ms[:-2]) != tuple(lead):       # one per batch, for every head
                mask = f.elementwise([mask], lambda e, a: a, out_elem=mask.elem,
                                     shape=tuple(lead) + ms[-2:])
            mask = f.reshape(mask, (b,) + ms[-2:])  # a mask per batch and head
        else:
            raise Unsupported("attention mask of shape %s over batch dims %s" % (ms, lead))

    def masked(e, x, *m):
        y = e.mul(x, s)
        if m:
            if mask.elem == "i1":
                ninf = e.const(-math.inf)
                y = e.op("arith.select %s, %s, %s" % (m[0], y, ninf))
            else:
                y = e.add(y, m[0])
        if is_causal:  # keys after the query's position dropped (top-left aligned)
            i, j = f.fresh(), f.fresh()
            e.lines.append("%s = linalg.index 1 : index" % i)
            e.lines.append("%s = linalg.index 2 : index" % j)
            keep = f.fresh()
            e.lines.append("%s = arith.cmpi ule, %s, %s : index" % (keep, j, i))
            y = e.op("arith.select %s, %s, %s" % (keep, y, e.const(-math.inf)))
        return y

    scores = f.elementwise([f.matmul(q3, kt, batch=True)] + ([mask] if mask is not None else []),
                           masked)
    out = f.matmul(f.softmax(scores, 2), v3, batch=True)
    out = f.reshape(out, lead + out.shape[-2:])
    return (out, None) if flash or legacy else out
