"""MLIR text for ATen ops: linalg, tensor, arith and math on tensors.

A value carries its logical shape (PyTorch's) and a physical dimension order
`perm` (physical dim j holds logical dim perm[j]). Convolutions and pooling
run on channels-last data, the layout pbc's implicit-GEMM convolutions want:
their results stay channels-last through elementwise ops, batch norm and
pooling, and are transposed back only where an op needs PyTorch's order
(views, the function's results). Everything here is text generation; pbc
does the compiling.
"""

import math

F32 = "f32"
_ELEM = {"torch.float32": "f32", "torch.int64": "i64", "torch.int32": "i32",
         "torch.bool": "i1"}


def elem_of(dtype):
    return _ELEM.get(str(dtype))


def ttype(shape, elem=F32):
    return "tensor<%s%s>" % ("".join("%dx" % s for s in shape), elem)


def flt(v):
    """A float literal MLIR accepts (inf/nan as hex bit patterns)."""
    if v == math.inf:
        return "0x7F800000"
    if v == -math.inf:
        return "0xFF800000"
    if v != v:
        return "0x7FC00000"
    return "%.9e" % float(v)


def amap(n, exprs):
    dims = ", ".join("d%d" % i for i in range(n))
    return "affine_map<(%s) -> (%s)>" % (dims, ", ".join(exprs))


class Val:
    def __init__(self, ssa, shape, elem=F32, perm=None):
        self.ssa, self.shape, self.elem = ssa, tuple(shape), elem
        self.perm = tuple(perm) if perm is not None else tuple(range(len(shape)))

    @property
    def phys(self):
        return tuple(self.shape[p] for p in self.perm)

    @property
    def type(self):
        return ttype(self.phys, self.elem)

    @property
    def is_logical(self):
        return self.perm == tuple(range(len(self.shape)))


NHWC = (0, 2, 3, 1)


class Body:
    """Scalar code inside a linalg.generic region."""

    def __init__(self, fn):
        self.fn, self.lines = fn, []

    def op(self, text, elem=F32):
        r = self.fn.fresh()
        self.lines.append("%s = %s : %s" % (r, text, elem))
        return r

    def const(self, v, elem=F32):
        r = self.fn.fresh()
        lit = flt(v) if elem.startswith("f") else str(int(v))
        self.lines.append("%s = arith.constant %s : %s" % (r, lit, elem))
        return r

    def arg(self, x):
        return self.const(x) if isinstance(x, (int, float)) else x

    def add(self, a, b): return self.op("arith.addf %s, %s" % (self.arg(a), self.arg(b)))
    def sub(self, a, b): return self.op("arith.subf %s, %s" % (self.arg(a), self.arg(b)))
    def mul(self, a, b): return self.op("arith.mulf %s, %s" % (self.arg(a), self.arg(b)))
    def div(self, a, b): return self.op("arith.divf %s, %s" % (self.arg(a), self.arg(b)))
    def max(self, a, b): return self.op("arith.maximumf %s, %s" % (self.arg(a), self.arg(b)))
    def min(self, a, b): return self.op("arith.minimumf %s, %s" % (self.arg(a), self.arg(b)))
    def neg(self, a): return self.op("arith.negf %s" % a)
    def math(self, name, a): return self.op("math.%s %s" % (name, a))

    def sigmoid(self, x):
        return self.div(1.0, self.add(1.0, self.math("exp", self.neg(x))))


class Function:
    """One func.func being emitted."""

    def __init__(self, name):
        self.name, self.lines, self.args, self.n = name, [], [], 0
        self.invariant = set()  # args whose contents never change between calls

    def fresh(self):
        self.n += 1
        return "%%v%d" % self.n

    def arg(self, shape, elem=F32, invariant=False):
        """invariant: the same tensor, unchanged, on every call (a parameter):
        marked `pbc.invariant`, pbc packs its tiles on the first call only."""
        v = Val("%%arg%d" % len(self.args), shape, elem)
        self.args.append(v)
        if invariant:
            self.invariant.add(v.ssa)
        return v

    def emit(self, line):
        self.lines.append(line)

    def text(self, results):
        sig = ", ".join("%s: %s%s" % (a.ssa, a.type, " {pbc.invariant}" if a.ssa in self.invariant
                                      else "") for a in self.args)
        res = ", ".join(r.type for r in results)
        body = "\n".join("    " + l for l in self.lines)
        ret = "    return %s : %s" % (", ".join(r.ssa for r in results), res)
        return "  func.func @%s(%s) -> (%s) {\n%s\n%s\n  }" % (self.name, sig, res, body, ret)

    # ------------------------------------------------------------ building blocks

    def empty(self, phys, elem=F32):
        r = self.fresh()
        self.emit("%s = tensor.empty() : %s" % (r, ttype(phys, elem)))
        return r

    def filled(self, phys, value, elem=F32):
        c, r = self.fresh(), self.fresh()
        lit = flt(value) if elem.startswith("f") else str(int(value))
        self.emit("%s = arith.constant %s : %s" % (c, lit, elem))
        self.emit("%s = linalg.fill ins(%s : %s) outs(%s : %s) -> %s" % (
            r, c, elem, self.empty(phys, elem), ttype(phys, elem), ttype(phys, elem)))
        return r

    def generic(self, out_phys, ins, out_map, iterators, body_fn, out_elem=F32, init=None):
        """ins: [(Val, map exprs)]; body_fn(body, args) -> the yielded scalar."""
        n = len(iterators)
        maps = [amap(n, m) for _, m in ins] + [amap(n, out_map)]
        its = ", ".join('"%s"' % i for i in iterators)
        b = Body(self)
        args = [self.fresh() for _ in ins]
        out_arg = self.fresh()
        y = body_fn(b, args + [out_arg])
        r = self.fresh()
        out_t = ttype(out_phys, out_elem)
        init = init or self.empty(out_phys, out_elem)
        ins_txt = ""
        if ins:
            ins_txt = "ins(%s : %s) " % (", ".join(v.ssa for v, _ in ins),
                                         ", ".join(v.type for v, _ in ins))
        self.emit("%s = linalg.generic {indexing_maps = [%s], iterator_types = [%s]} %s"
                  "outs(%s : %s) {" % (r, ", ".join(maps), its, ins_txt, init, out_t))
        params = ", ".join("%s: %s" % (a, v.elem) for a, (v, _) in zip(args, ins))
        params += (", " if params else "") + "%s: %s" % (out_arg, out_elem)
        self.emit("^bb0(%s):" % params)
        for l in b.lines:
            self.emit("  " + l)
        self.emit("  linalg.yield %s : %s" % (y, out_elem))
        self.emit("} -> %s" % out_t)
        return r

    # ------------------------------------------------------------ layouts

    def transpose_to(self, v, perm):
        """v with physical order perm (a linalg.transpose when it differs)."""
        perm = tuple(perm)
        if v.perm == perm:
            return v
        # physical dim j of the result holds logical perm[j], which is
        # physical dim v.perm.index(perm[j]) of v.
        p = [v.perm.index(l) for l in perm]
        out = Val(None, v.shape, v.elem, perm)
        r = self.fresh()
        self.emit("%s = linalg.transpose ins(%s : %s) outs(%s : %s) permutation = [%s]" % (
            r, v.ssa, v.type, self.empty(out.phys, v.elem), out.type,
            ", ".join(map(str, p))))
        out.ssa = r
        return out

    def logical(self, v):
        return self.transpose_to(v, range(len(v.shape)))

    def reshape(self, v, shape):
        """A view of contiguous data: collapse to 1-D, expand to the shape."""
        v = self.logical(v)
        shape = tuple(shape)
        if shape == v.shape:
            return v
        r = self.fresh()
        if not v.shape:  # rank 0 -> all ones
            self.emit("%s = tensor.expand_shape %s [] output_shape [%s] : %s into %s" % (
                r, v.ssa, ", ".join(map(str, shape)), v.type, ttype(shape, v.elem)))
            return Val(r, shape, v.elem)
        flat = v
        if len(v.shape) != 1:
            n = math.prod(v.shape)
            self.emit("%s = tensor.collapse_shape %s [[%s]] : %s into %s" % (
                r, v.ssa, ", ".join(map(str, range(len(v.shape)))), v.type,
                ttype((n,), v.elem)))
            flat = Val(r, (n,), v.elem)
            r = self.fresh()
        if len(shape) == 1:
            return flat
        if not shape:
            self.emit("%s = tensor.collapse_shape %s [] : %s into %s" % (
                r, flat.ssa, flat.type, ttype((), v.elem)))
        else:
            self.emit("%s = tensor.expand_shape %s [[%s]] output_shape [%s] : %s into %s" % (
                r, flat.ssa, ", ".join(map(str, range(len(shape)))),
                ", ".join(map(str, shape)), flat.type, ttype(shape, v.elem)))
        return Val(r, shape, v.elem)

    # ------------------------------------------------------------ op families

    def elementwise(self, operands, body_fn, out_elem=F32, shape=None):
        """numpy-broadcasting elementwise op over Vals and Python scalars (to
        `shape` if given); works on the physical order of the first
        highest-rank operand."""
        tensors = [o for o in operands if isinstance(o, Val)]
        rank = max(len(t.shape) for t in tensors)
        if shape is None:
            shape = [1] * rank
            for t in tensors:
                off = rank - len(t.shape)
                for i, s in enumerate(t.shape):
                    if s != 1:
                        shape[off + i] = s
        else:
            shape = list(shape)
        lead = next((t for t in tensors if len(t.shape) == len(shape)), None)
        perm = lead.perm if lead is not None else tuple(range(len(shape)))
        rank = len(shape)
        ins = []
        for t in tensors:
            off = rank - len(t.shape)
            exprs = []
            for j in range(len(t.shape)):
                d = t.perm[j] + off
                exprs.append("0" if t.shape[t.perm[j]] == 1 and shape[d] != 1
                             else "d%d" % perm.index(d))
            ins.append((t, exprs))
        phys = [shape[p] for p in perm]

        def body(b, args):
            it = iter(args)
            vals = [next(it) if isinstance(o, Val) else o for o in operands]
            return body_fn(b, *vals)

        r = self.generic(phys, ins, ["d%d" % i for i in range(rank)],
                         ["parallel"] * rank, body, out_elem)
        return Val(r, shape, out_elem, perm)

    def reduce(self, v, dims, keepdim, kind="sum"):
        """Sum or max over logical dims, on v's physical order."""
        rank = len(v.shape)
        dims = sorted(d % rank for d in dims)
        red = [v.perm.index(d) for d in dims]
        kept = [j for j in range(rank) if j not in red]
        if keepdim:
            out_shape = tuple(1 if i in dims else s for i, s in enumerate(v.shape))
            out_perm = v.perm
            out_map = ["0" if j in red else "d%d" % j for j in range(rank)]
        else:
            keep_logical = [i for i in range(rank) if i not in dims]
            out_shape = tuple(v.shape[i] for i in keep_logical)
            out_perm = [keep_logical.index(v.perm[j]) for j in kept]
            out_map = ["d%d" % j for j in kept]
        out = Val(None, out_shape, v.elem, out_perm)
        init = self.filled(out.phys, 0.0 if kind == "sum" else -math.inf)
        its = ["reduction" if j in red else "parallel" for j in range(rank)]
        op = (lambda b, a: b.add(a[0], a[1])) if kind == "sum" else (lambda b, a: b.max(a[0], a[1]))
        out.ssa = self.generic(out.phys, [(v, ["d%d" % j for j in range(rank)])], out_map, its,
                               op, init=init)
        return out

    def cumsum(self, v, dim):
        """Inclusive prefix sums along logical dim `dim`: out[.., i, ..] =
        sum over j <= i of v[.., j, ..], as one reduction over j (n^2 adds
        along the dim: the lengths frameworks take prefix sums over,
        positions and masks, are short)."""
        v = self.logical(v)
        rank = len(v.shape)
        dim %= rank
        fp = v.elem.startswith("f")
        init = self.filled(v.shape, 0, v.elem)
        ins = ["d%d" % (rank if i == dim else i) for i in range(rank)]

        def body(b, a):
            i, j, keep, z, x, r = (self.fresh() for _ in range(6))
            b.lines.append("%s = linalg.index %d : index" % (i, dim))
            b.lines.append("%s = linalg.index %d : index" % (j, rank))
            b.lines.append("%s = arith.cmpi ule, %s, %s : index" % (keep, j, i))
            b.lines.append("%s = arith.constant %s : %s" % (z, flt(0.0) if fp else "0", v.elem))
            b.lines.append("%s = arith.select %s, %s, %s : %s" % (x, keep, a[0], z, v.elem))
            b.lines.append("%s = %s %s, %s : %s" % (r, "arith.addf" if fp else "arith.addi",
                                                     x, a[1], v.elem))
            return r

        r = self.generic(v.shape, [(v, ins)], ["d%d" % i for i in range(rank)],
                         ["parallel"] * rank + ["reduction"], body, v.elem, init=init)
        return Val(r, v.shape, v.elem)

    def mean(self, v, dims, keepdim):
        n = math.prod(v.shape[d % len(v.shape)] for d in dims)
        s = self.reduce(v, dims, keepdim)
        return self.elementwise([s], lambda b, x: b.mul(x, 1.0 / n))

    def broadcast_rows(self, vec, phys):
        """A tensor of physical shape phys whose last dim is vec (bias)."""
        vec = self.logical(vec)
        n = len(phys)
        return self.generic(phys, [(vec, ["d%d" % (n - 1)])], ["d%d" % i for i in range(n)],
                            ["parallel"] * n, lambda b, a: a[0])

    def matmul(self, a, b, batch=False, bias=None):
        """bias (the last dim's vector) initializes the accumulators: no
        separate pass over the result."""
        a, b = self.logical(a), self.logical(b)
        shape = (a.shape[0], a.shape[1], b.shape[2]) if batch else (a.shape[0], b.shape[1])
        init = self.broadcast_rows(bias, shape) if bias is not None else self.filled(shape, 0.0)
        r = self.fresh()
        self.emit("%s = linalg.%s ins(%s, %s : %s, %s) outs(%s : %s) -> %s" % (
            r, "batch_matmul" if batch else "matmul", a.ssa, b.ssa, a.type, b.type, init,
            ttype(shape), ttype(shape)))
        return Val(r, shape)

    def pad(self, v, low, high, value):
        """Pads physical dims (lists per physical dim)."""
        if not any(low) and not any(high):
            return v
        out_phys = [s + l + h for s, l, h in zip(v.phys, low, high)]
        c, r = self.fresh(), self.fresh()
        self.emit("%s = arith.constant %s : f32" % (c, flt(value)))
        idx = ", ".join("%%i%d: index" % i for i in range(len(low)))
        self.emit("%s = tensor.pad %s low[%s] high[%s] {" % (
            r, v.ssa, ", ".join(map(str, low)), ", ".join(map(str, high))))
        self.emit("^bb0(%s):" % idx)
        self.emit("  tensor.yield %s : f32" % c)
        self.emit("} : %s to %s" % (v.type, ttype(out_phys)))
        out = Val(r, v.shape, v.elem, v.perm)
        out.shape = tuple(out_phys[out.perm.index(i)] for i in range(len(v.shape)))
        return out

    def conv2d(self, x, w, stride, padding, dilation, depthwise, bias=None, groups=1):
        """x: logical NCHW; w: HWCF, HWC for depthwise, or GFHWC (F per
        group) for groups > 1, as a logical Val; bias (F) initializes the
        accumulators. A grouped convolution runs as one
        linalg.conv_2d_nhwgc_gfhwc on views that split the channels (pbc-tile
        makes each group an implicit GEMM)."""
        x = self.transpose_to(x, NHWC)
        x = self.pad(x, [0, padding[0], padding[1], 0], [0, padding[0], padding[1], 0], 0.0)
        n, c, h, wd = x.shape
        if groups > 1:
            (kh, kw), f = w.shape[2:4], w.shape[0] * w.shape[1]
        else:
            (kh, kw), f = w.shape[0:2], c if depthwise else w.shape[3]
        oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
        ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
        out = Val(None, (n, f, oh, ow), F32, NHWC)
        init = self.broadcast_rows(bias, out.phys) if bias is not None else \
            self.filled(out.phys, 0.0)
        phys, xv = out.phys, x
        if groups > 1:  # [n, h, w, c] -> [n, h, w, g, c / g]; the result alike
            phys = out.phys[:3] + (groups, f // groups)
            xv = Val(self._split_last(x.ssa, x.phys, groups), x.phys[:3] + (groups, c // groups))
            init = self._split_last(init, out.phys, groups)
        op = "conv_2d_nhwgc_gfhwc" if groups > 1 else \
            "depthwise_conv_2d_nhwc_hwc" if depthwise else "conv_2d_nhwc_hwcf"
        r = self.fresh()
        self.emit("%s = linalg.%s {dilations = dense<[%d, %d]> : tensor<2xi64>, "
                  "strides = dense<[%d, %d]> : tensor<2xi64>} ins(%s, %s : %s, %s) "
                  "outs(%s : %s) -> %s" % (
                      r, op, dilation[0], dilation[1], stride[0], stride[1], xv.ssa, w.ssa,
                      xv.type, w.type, init, ttype(phys), ttype(phys)))
        if groups > 1:
            r2 = self.fresh()
            self.emit("%s = tensor.collapse_shape %s [[0], [1], [2], [3, 4]] : %s into %s" % (
                r2, r, ttype(phys), out.type))
            r = r2
        out.ssa = r
        return out

    def _split_last(self, ssa, phys, parts):
        """The SSA name of `ssa` (physical shape phys) with its last dim split
        into [parts, last / parts]."""
        r = self.fresh()
        shape = tuple(phys[:-1]) + (parts, phys[-1] // parts)
        self.emit("%s = tensor.expand_shape %s [%s, [%d, %d]] output_shape [%s] : %s into %s" % (
            r, ssa, ", ".join("[%d]" % i for i in range(len(phys) - 1)), len(phys) - 1,
            len(phys), ", ".join(map(str, shape)), ttype(phys), ttype(shape)))
        return r

    def conv_transpose2d(self, x, w_fhwc, bias, stride, padding, output_padding):
        """x: logical NCHW; w: FHWC (TOSA's OHWI) as a logical Val; bias (F)
        or None. TOSA's transpose_conv2d, which pbc's S1 decomposes into
        stride^2 sub-pixel convolutions; PyTorch's padding crops the output
        (a negative out_pad), output_padding extends its far side."""
        x = self.transpose_to(x, NHWC)
        n, c, h, wd = x.shape
        f, kh, kw = w_fhwc.shape[0], w_fhwc.shape[1], w_fhwc.shape[2]
        pads = [-padding[0], -padding[0] + output_padding[0],
                -padding[1], -padding[1] + output_padding[1]]
        oh = (h - 1) * stride[0] + pads[0] + pads[1] + kh
        ow = (wd - 1) * stride[1] + pads[2] + pads[3] + kw
        out = Val(None, (n, f, oh, ow), F32, NHWC)
        zp, r = self.fresh(), self.fresh()
        self.emit('%s = "tosa.const"() <{values = dense<0.0> : tensor<1xf32>}> : () -> '
                  'tensor<1xf32>' % zp)
        if bias is None:
            bias_ssa = self.fresh()
            self.emit('%s = "tosa.const"() <{values = dense<0.0> : tensor<%dxf32>}> : () -> '
                      'tensor<%dxf32>' % (bias_ssa, f, f))
        else:
            bias_ssa = self.logical(bias).ssa
        self.emit("%s = tosa.transpose_conv2d %s, %s, %s, %s, %s {acc_type = f32, "
                  "out_pad = array<i64: %s>, stride = array<i64: %d, %d>} : "
                  "(%s, %s, %s, tensor<1xf32>, tensor<1xf32>) -> %s" % (
                      r, x.ssa, w_fhwc.ssa, bias_ssa, zp, zp, ", ".join(map(str, pads)),
                      stride[0], stride[1], x.type, w_fhwc.type, ttype((f,)), out.type))
        out.ssa = r
        return out

    def pool2d(self, x, kernel, stride, padding, kind, padding_high=None):
        """padding_high: the bottom and right padding where it differs from
        the top and left (ceil_mode's last windows)."""
        x = self.transpose_to(x, NHWC)
        fill = -math.inf if kind == "max" else 0.0
        high = padding_high if padding_high is not None else padding
        x = self.pad(x, [0, padding[0], padding[1], 0], [0, high[0], high[1], 0], fill)
        n, c, h, w = x.shape
        oh = (h - kernel[0]) // stride[0] + 1
        ow = (w - kernel[1]) // stride[1] + 1
        out = Val(None, (n, c, oh, ow), F32, NHWC)
        init = self.filled(out.phys, fill)
        win = self.empty(kernel)
        r = self.fresh()
        self.emit("%s = linalg.pooling_nhwc_%s {dilations = dense<1> : tensor<2xi64>, "
                  "strides = dense<[%d, %d]> : tensor<2xi64>} ins(%s, %s : %s, %s) "
                  "outs(%s : %s) -> %s" % (
                      r, kind, stride[0], stride[1], x.ssa, win, x.type, ttype(kernel),
                      init, out.type, out.type))
        out.ssa = r
        return out

    def softmax(self, v, dim):
        d = v.perm.index(dim % len(v.shape))
        r = self.fresh()
        self.emit("%s = linalg.softmax dimension(%d) ins(%s : %s) outs(%s : %s) -> %s" % (
            r, d, v.ssa, v.type, self.empty(v.phys), v.type, v.type))
        return Val(r, v.shape, v.elem, v.perm)

    def slice(self, v, dim, start, size, step=1):
        """Logical dim `dim` of v restricted to start, start + step, ...
        (size elements), in v's physical layout (no transpose first)."""
        pd = v.perm.index(dim)
        offs = [0] * len(v.shape)
        sizes = list(v.phys)
        steps = [1] * len(v.shape)
        offs[pd], sizes[pd], steps[pd] = start, size, step
        shape = list(v.shape)
        shape[dim] = size
        r = self.fresh()
        self.emit("%s = tensor.extract_slice %s[%s] [%s] [%s] : %s to %s" % (
            r, v.ssa, ", ".join(map(str, offs)), ", ".join(map(str, sizes)),
            ", ".join(map(str, steps)), v.type, ttype(sizes, v.elem)))
        return Val(r, shape, v.elem, v.perm)

    def insert_slice(self, dst, src, dim, start, step=1):
        """dst with logical dim `dim` at start, start + step, ... replaced by
        src (whose shape is dst's with that dim shortened), in dst's layout.
        dim, start and step may be equally long tuples: several dims at once."""
        dims, starts, steps_of = ((a,) if isinstance(a, int) else tuple(a)
                                  for a in (dim, start, step))
        src = self.transpose_to(src, dst.perm)
        offs = [0] * len(dst.shape)
        steps = [1] * len(dst.shape)
        for d, o, k in zip(dims, starts, steps_of):
            pd = dst.perm.index(d)
            offs[pd], steps[pd] = o, k
        r = self.fresh()
        self.emit("%s = tensor.insert_slice %s into %s[%s] [%s] [%s] : %s into %s" % (
            r, src.ssa, dst.ssa, ", ".join(map(str, offs)), ", ".join(map(str, src.phys)),
            ", ".join(map(str, steps)), src.type, dst.type))
        return Val(r, dst.shape, dst.elem, dst.perm)

    def convert(self, v, elem):
        """v's elements as `elem` with PyTorch's conversion rules: floats to
        integers truncate, anything to bool is `!= 0`, bool is 0 or 1."""
        if v.elem == elem:
            return v
        src = v.elem

        def body(b, x):
            if elem == "i1":
                if src.startswith("f"):
                    return b.op("arith.cmpf une, %s, %s" % (x, b.const(0.0, src)), src)
                return b.op("arith.cmpi ne, %s, %s" % (x, b.const(0, src)), src)
            if elem.startswith("f"):
                op = "arith.uitofp" if src == "i1" else "arith.sitofp"
            elif src.startswith("f"):
                op = "arith.fptosi"
            else:
                op = "arith.extui" if src == "i1" else \
                    "arith.extsi" if int(src[1:]) < int(elem[1:]) else "arith.trunci"
            r = self.fresh()
            b.lines.append("%s = %s %s : %s to %s" % (r, op, x, src, elem))
            return r

        return self.elementwise([v], body, out_elem=elem)

    def concat(self, vals, dim):
        perm = vals[0].perm
        if any(v.perm != perm for v in vals):
            vals = [self.logical(v) for v in vals]
            perm = vals[0].perm
        shape = list(vals[0].shape)
        shape[dim] = sum(v.shape[dim] for v in vals)
        out = Val(None, shape, vals[0].elem, perm)
        cur = self.empty(out.phys, out.elem)
        pd, off = perm.index(dim), 0
        for v in vals:
            offs = [0] * len(shape)
            offs[pd] = off
            r = self.fresh()
            self.emit("%s = tensor.insert_slice %s into %s[%s] [%s] [%s] : %s into %s" % (
                r, v.ssa, cur, ", ".join(map(str, offs)), ", ".join(map(str, v.phys)),
                ", ".join(["1"] * len(shape)), v.type, out.type))
            cur, off = r, off + v.shape[dim]
        out.ssa = cur
        return out

    def gather_rows(self, table, idx):
        """embedding: out[i..., d] = table[idx[i...], d]."""
        table, idx = self.logical(table), self.logical(idx)
        rank = len(idx.shape) + 1
        shape = idx.shape + (table.shape[1],)

        def body(b, a):
            i = self.fresh()
            b.lines.append("%s = arith.index_cast %s : %s to index" % (i, a[0], idx.elem))
            d = self.fresh()
            b.lines.append("%s = linalg.index %d : index" % (d, rank - 1))
            v = self.fresh()
            b.lines.append("%s = tensor.extract %s[%s, %s] : %s" % (v, table.ssa, i, d, table.type))
            return v

        r = self.generic(shape, [(idx, ["d%d" % i for i in range(rank - 1)])],
                         ["d%d" % i for i in range(rank)], ["parallel"] * rank, body)
        return Val(r, shape)

    def _wrapped_index(self, b, value, elem, n):
        """An index read from data (`value` of integer type `elem`) as an
        index into a dim of n elements, negative ones counted from the end
        as PyTorch does."""
        i, size, z, neg, w, r = (self.fresh() for _ in range(6))
        b.lines.append("%s = arith.index_cast %s : %s to index" % (i, value, elem))
        b.lines.append("%s = arith.constant %d : index" % (size, n))
        b.lines.append("%s = arith.constant 0 : index" % z)
        b.lines.append("%s = arith.cmpi slt, %s, %s : index" % (neg, i, z))
        b.lines.append("%s = arith.addi %s, %s : index" % (w, i, size))
        b.lines.append("%s = arith.select %s, %s, %s : index" % (r, neg, w, i))
        return r

    def gather_index(self, x, indices, shape, out_dims):
        """Advanced indexing (aten.index.Tensor): out[o] = x[i_0, ..., i_r]
        where i_d is indices[d] (an integer Val, broadcast to the output:
        `out_dims` lists the output dims of its dims, right-aligned) read at
        o and wrapped if negative, or for a dim without an index tensor the
        output dim out_dims[d] (an int). pbc clamps the indices read from
        data into x (pbc-clamp-gather-indices)."""
        x = self.logical(x)
        rank = len(shape)
        ins, order = [], []
        for d in range(len(x.shape)):
            if d in indices:
                v = self.logical(indices[d])
                dims = out_dims[d][len(out_dims[d]) - len(v.shape):]
                ins.append((v, ["0" if v.shape[j] == 1 and shape[o] != 1 else "d%d" % o
                                for j, o in enumerate(dims)]))
                order.append(d)

        def body(b, a):
            subs = []
            args = dict(zip(order, a))
            for d in range(len(x.shape)):
                if d in indices:
                    i = self._wrapped_index(b, args[d], indices[d].elem, x.shape[d])
                else:
                    i = self.fresh()
                    b.lines.append("%s = linalg.index %d : index" % (i, out_dims[d]))
                subs.append(i)
            v = self.fresh()
            b.lines.append("%s = tensor.extract %s[%s] : %s" % (v, x.ssa, ", ".join(subs), x.type))
            return v

        r = self.generic(shape, ins, ["d%d" % i for i in range(rank)], ["parallel"] * rank, body,
                         x.elem)
        return Val(r, shape, x.elem)

    def scatter_index(self, x, indices, bshape, values, value_dims, accumulate):
        """index_put: x with x[i_0, ..., i_r] = values (or += values with
        accumulate), the index tensors indices[d] broadcast to bshape. One
        generic over x's dims and, as a reduction, the index positions: an
        element takes the value of the last position whose indices name it
        (a KV cache's new rows: few positions, so few steps per element).
        value_dims: for each of values' dims (right-aligned), the iteration
        dim it runs along (x's dims are 0..rank-1, the index positions
        rank..rank+len(bshape)-1), or None where values has size 1 there."""
        x, values = self.logical(x), self.logical(values)
        rank, nb = len(x.shape), len(bshape)
        ins, order = [], []
        for d in range(rank):
            if d in indices:
                v = self.logical(indices[d])
                off = nb - len(v.shape)
                ins.append((v, ["0" if v.shape[j] == 1 and bshape[off + j] != 1
                                else "d%d" % (rank + off + j) for j in range(len(v.shape))]))
                order.append(d)
        ins.append((values, ["0" if k is None else "d%d" % k for k in value_dims]))

        def body(b, a):
            args = dict(zip(order, a))
            hit = None
            for d in order:
                r = self._wrapped_index(b, args[d], indices[d].elem, x.shape[d])
                o, eq = self.fresh(), self.fresh()
                b.lines.append("%s = linalg.index %d : index" % (o, d))
                b.lines.append("%s = arith.cmpi eq, %s, %s : index" % (eq, r, o))
                if hit is None:
                    hit = eq
                else:
                    both = self.fresh()
                    b.lines.append("%s = arith.andi %s, %s : i1" % (both, hit, eq))
                    hit = both
            val, acc = a[len(order)], a[len(order) + 1]
            if accumulate:
                fp = x.elem.startswith("f")
                z, s_ = self.fresh(), self.fresh()
                b.lines.append("%s = arith.constant %s : %s" % (z, flt(0.0) if fp else "0", x.elem))
                add = self.fresh()
                b.lines.append("%s = arith.select %s, %s, %s : %s" % (s_, hit, val, z, x.elem))
                b.lines.append("%s = %s %s, %s : %s" % (add, "arith.addf" if fp else "arith.addi",
                                                         acc, s_, x.elem))
                return add
            r = self.fresh()
            b.lines.append("%s = arith.select %s, %s, %s : %s" % (r, hit, val, acc, x.elem))
            return r

        r = self.generic(x.shape, ins, ["d%d" % i for i in range(rank)],
                         ["parallel"] * rank + ["reduction"] * nb, body, x.elem, init=x.ssa)
        return Val(r, x.shape, x.elem)


def module(functions_text):
    return "module {\n%s\n}\n" % "\n".join(functions_text)
