"""From a PyTorch callable to a plan of compiled segments and eager ops.

capture(): torch.fx's make_fx records the ATen graph of the functionalized
callable on copies of the example inputs (writes through views become
scatters into fresh values); ops on parameters only are folded once, and
every node's example value is recorded (shapes, dtypes).
Plan: the supported nodes, in order, form segments, each one function in a
single MLIR module compiled by libpbc; an op without a lowering (or a case
its lowering rejects) runs eagerly between segments, with a warning naming it.
"""

import collections
import contextlib
import ctypes
import operator
import threading
import warnings

import torch
import torch.fx
from torch.fx.experimental.proxy_tensor import make_fx
from torch.utils._python_dispatch import TorchDispatchMode

from . import aten, emit
from .libpbc import CompileError, Program, descriptor


class _Recorder(torch.fx.Interpreter):
    """Runs the graph once, keeping each node's value."""

    def __init__(self, gm):
        super().__init__(gm)
        self.values = {}

    def run_node(self, n):
        v = super().run_node(n)
        self.values[n] = v
        return v


class TraceError(Exception):
    """The callable cannot be traced into one ATen graph (data-dependent
    control flow, a Python value read from a tensor, ...)."""


try:  # PyTorch 2.x
    from torch.func import functionalize as _functionalize
except ImportError:  # 1.13 ships it in functorch
    from functorch import functionalize as _functionalize


def _is_inplace(n):
    name = aten.op_name(n.target) if n.op == "call_function" else None
    base = name.split(".")[0] if name else ""
    return base.endswith("_") and not base.startswith("_")


def _is_random(n):
    name = aten.op_name(n.target) or ""
    return name.startswith(("rand", "normal", "bernoulli", "uniform", "multinomial",
                            "native_dropout", "dropout", "exponential", "poisson"))


def _eliminate_dead_code(graph):
    """Unused nodes go, except in-place ops: after functionalization those
    are the writes back into the caller's tensors (x.add_(1) on an input)."""
    for n in reversed(list(graph.nodes)):
        if n.op == "call_function" and not n.users and not _is_inplace(n):
            graph.erase_node(n)


@contextlib.contextmanager
def rng_kept():
    """Tracing runs the function's random ops: the caller's random stream
    is left where it was, so eager random ops draw what they would have."""
    state = torch.random.get_rng_state()
    try:
        yield
    finally:
        torch.random.set_rng_state(state)


class _StateWrites(TorchDispatchMode):
    """Sees the writes tracing makes into real tensors (functionalization
    turns those into the inputs' copies into values; a module's buffer or
    a tensor the function closes over is written for real): each such
    tensor's contents before its first write are kept, and put back after
    tracing, so tracing never changes the caller's state."""

    def __init__(self, copies):
        super().__init__()
        self.copies = copies  # ids of the trace's own copies of the inputs: not state
        self.saved = {}       # id -> (tensor, its contents before the first write)

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func._schema.is_mutable:
            for a, t in zip(func._schema.arguments, args):
                if a.alias_info is not None and a.alias_info.is_write and \
                        isinstance(t, torch.Tensor) and id(t) not in self.saved and \
                        id(t) not in self.copies:
                    self.saved[id(t)] = (t, t.detach().clone())
        return func(*args, **(kwargs or {}))

    def restore(self):
        """Puts back every written tensor; returns them."""
        with torch.no_grad():
            for t, before in self.saved.values():
                t.copy_(before)
        return [t for t, _ in self.saved.values()]


def capture(fn, example_inputs):
    """The ATen graph of fn, functionalized: a write through a view
    (`y[:, a:b] = v`, `y[i] = 0`, `y[:, :2] += 1`) becomes slice_scatter /
    select_scatter on a fresh value, in-place ops become their functional
    forms, and a mutation of an input becomes a copy_ into it at the end
    (run eagerly). Traced and recorded on copies of the inputs, so tracing
    does not apply the function's own mutations to the caller's tensors;
    writes into other tensors (a module's buffers) are undone after the
    trace, and kept only where the function is stationary (_stationary)."""
    made = set()  # ids of the trace's copies of the inputs (`alive` holds them: no id reuse)
    alive = []

    def copies():
        c = [a.clone() if isinstance(a, torch.Tensor) else a for a in example_inputs]
        alive.extend(c)
        made.update(id(t) for t in c)
        return c

    def record(writes):
        rec = _Recorder(gm)
        ins = copies()
        with writes, torch.no_grad():
            rec.run(*ins)
        for i, (c, a) in enumerate(zip(ins, example_inputs)):
            # Functionalization writes an out= result back with a resize
            # where eager keeps the out tensor's shape (arange(1, 13,
            # out=x) of a 3x4 x: [12], eager [3, 4]): the graph would
            # compute another shape, and resize the caller's tensor.
            if isinstance(a, torch.Tensor) and c.shape != a.shape:
                raise TraceError("it resizes input %d (an out= argument?) from %s to %s"
                                 % (i, list(a.shape), list(c.shape)))
        return rec.values

    writes = _StateWrites(made)
    with rng_kept():
        try:
            with writes:
                # With autograd on, modules take their composite paths (e.g.
                # not TransformerEncoderLayer's fused inference kernel),
                # which lower to ATen ops pbc knows.
                with torch.enable_grad():
                    gm = make_fx(_functionalize(fn, remove="mutations"))(*copies())
            _eliminate_dead_code(gm.graph)
            gm.recompile()
            state = writes.restore()  # as the caller had it
            values = record(writes)
            if state:
                values = _stationary(state, values, lambda: record(_StateWrites(made)))
        except TraceError:
            writes.restore()
            raise
        except Exception as e:  # tracing runs the user's code: anything can raise
            writes.restore()
            raise TraceError(str(e).splitlines()[0] if str(e) else type(e).__name__) from e
    return gm, values


def _same(a, b):
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and a.shape == b.shape and a.dtype == b.dtype and \
            bool(torch.equal(a, b) if not a.is_floating_point() else
                 torch.equal(torch.nan_to_num(a, 0.0), torch.nan_to_num(b, 0.0)))
    if isinstance(a, (tuple, list)):
        return isinstance(b, (tuple, list)) and len(a) == len(b) and all(map(_same, a, b))
    return a == b


def _stationary(state, values, again):
    """A graph that writes into tensors it does not take as inputs (a
    module's buffers): the plan keeps those as constants, so it is right
    only if a call leaves them as the first call did and computes what the
    first call computed (a cache of position indices filled once: ConViT's).
    `values` is the first call's (from the caller's state, which it wrote);
    the function is run again from there: the same values and the same
    state, or a TraceError (a step counter, a KV cache: their writes differ
    call after call, and a folded plan would repeat the first one's)."""
    after = [t.detach().clone() for t in state]
    second = again()
    if all(_same(a, t) for a, t in zip(after, state)) and \
            all(_same(values[n], second.get(n)) for n in values):
        return values  # the state stays as the first call left it
    raise TraceError("it writes into %d tensor(s) it does not take as inputs (a module's "
                     "buffers, a cache; shapes %s), differently on each call: pbc compiles "
                     "them as constants" % (len(state), ", ".join(
                         str(list(t.shape)) for t in state[:3])))


# ATen ops whose result is a view of their first operand's storage.
_VIEW_OPS = {"slice", "select", "view", "_unsafe_view", "expand", "permute", "transpose", "t",
             "unsqueeze", "squeeze", "alias", "detach", "as_strided", "diagonal", "narrow",
             "unfold", "split", "split_with_sizes", "chunk", "unbind", "view_as_real"}


_VERSION = operator.attrgetter("_version")
_FOLDED = "_pbc_folded"  # attributes holding weights with batch norms folded in


class _Segment:
    def __init__(self, index):
        self.name = "pbc_segment%d" % index
        self.nodes = []
        self.inputs = []   # per function argument: ("node", node) or ("fixed", tensor)
        self.outputs = []  # nodes whose values leave the segment
        self.out_types = []  # (shape, torch dtype) per output
        self.entry = None
        self.fixed_descriptors = {}
        # (index Val, lowest valid index, rows of the table) per gather:
        # 0 for embeddings, -rows for advanced indexing (negatives wrap).
        self.gathers = []
        self.index_checks = []  # (input position, lowest, rows): indices checked per call
        self.frame = None       # _Frame: the arguments of the calls, reused


class _Frame:
    """A segment's argument array with descriptors for the inputs it
    computes and its outputs, made once and reused call after call: only
    their data pointers change. Built per call, they touched dozens of
    Python objects that the kernels had evicted from the caches, about 0.1
    ms a call on MobileNet-v2 (tools/bench/README.md). `lock` is held during
    a call; a thread that finds it taken makes a frame of its own."""

    def __init__(self, seg):
        self.lock = threading.Lock()
        self.argv = type(seg.argv).from_buffer_copy(seg.argv)
        slots = [i for i, _ in seg.computed_inputs] + [
            len(seg.inputs) + j for j in range(len(seg.out_types))]
        # Shapes as the compiled entry takes them (_signature_mismatch
        # checked them against the traced tensors).
        self.descriptors = [descriptor(0, seg.entry.args[i][1]) for i in slots]
        for i, d in zip(slots, self.descriptors):
            self.argv[i] = ctypes.addressof(d)


class _Ctx:
    """What a lowering sees: the function, the op, and how to get operands."""

    def __init__(self, f, seg, op):
        self.f, self.seg, self.op = f, seg, op
        self.bound = {}

    def bind(self, tensor):
        t = tensor.detach().contiguous()
        elem = emit.elem_of(t.dtype)
        if elem is None:
            raise aten.Unsupported("constant of type %s" % t.dtype)
        v = self.f.arg(tuple(t.shape), elem, invariant=True)
        self.seg.inputs.append(("fixed", t))
        return v

    def tensor(self, x):
        if isinstance(x, emit.Val):
            return x
        if isinstance(x, aten.Const):
            key = id(x.tensor)
            if key not in self.bound:
                self.bound[key] = self.bind(x.tensor)
            return self.bound[key]
        raise aten.Unsupported("operand %r is not a tensor" % (x,))

    def operand(self, x):
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return float(x)
        return self.tensor(x)

    def const_tensor(self, x):
        if isinstance(x, aten.Const):
            return x.tensor
        raise aten.Unsupported("operand computed at run time where a constant is needed")


def _tensors(v):
    """A tensor, or a tuple or list of tensors (an op's several results)."""
    return isinstance(v, torch.Tensor) or (
        isinstance(v, (tuple, list)) and bool(v) and all(isinstance(t, torch.Tensor) for t in v))


class Plan:
    """A traced callable, compiled for one input signature."""

    def __init__(self, fn, example_inputs, target="cpu", chip=None, opt_level=3, disable=None,
                 per_op=False):
        """per_op: one compiled segment per op, for profile()."""
        self.per_op = per_op
        self.gm, values = capture(fn, example_inputs)
        graph = self.gm.graph
        self.placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        self.output_node = next(n for n in graph.nodes if n.op == "output")
        self.consts = self._fold_constants(values)
        self.values = values
        self._fold_batch_norms()
        # After functionalization, in-place ops are writes into the inputs.
        self.mutates_inputs = any(_is_inplace(n) for n in graph.nodes)
        self.has_random_ops = any(n.op == "call_function" and _is_random(n) for n in graph.nodes)
        self.fallbacks = []  # (op, why) of the ops that run eagerly
        self.steps = self._partition()
        self._compile(target, chip, opt_level, disable)
        self.shapes = {n: tuple(v.shape) for n, v in self.values.items()
                       if isinstance(v, torch.Tensor)}
        # Integer divisions that round (torch-mlir computes them in f64,
        # inexact beyond 2**53: see __init__.best_plan).
        self.int64_divisions = any(
            n.op == "call_function" and (aten.op_name(n.target) or "").startswith(
                ("div.Tensor_mode", "div.Scalar_mode", "floor_divide", "remainder", "fmod"))
            and any(isinstance(values.get(a), torch.Tensor) and values[a].dtype == torch.int64
                    for a in n.all_input_nodes) for n in graph.nodes)
        # What each input was when traced: a tensor's shape and dtype, or a
        # Python value (traced as a constant). A call with anything else
        # would run code compiled for other sizes: refused (_check_inputs).
        # From the inputs as given: the recorded placeholder values are the
        # copies the trace ran on, which an op with out= may have resized.
        given = list(example_inputs) if len(example_inputs) == len(self.placeholders) else \
            [values.get(n) for n in self.placeholders]
        self._expect = [(tuple(v.shape), v.dtype) if isinstance(v, torch.Tensor) else ("py", v)
                        for v in given]
        self.values = None  # example values are not needed any more
        self._direct = self._direct_call()
        # The parameters and buffers the graph read when traced: the plan
        # folded them and the compiled code keeps their packed tiles (they
        # are marked pbc.invariant), so a write into one afterwards makes
        # the plan stale. Not the weights _fold_batch_norms made (the plan's
        # own, never written; their sources are watched). Version counters
        # only grow: their sum is unchanged exactly when every one is.
        self._watched = [t for n, t in self.consts.items()
                         if n.op == "get_attr" and isinstance(t, torch.Tensor)
                         and not str(n.target).startswith(_FOLDED)]
        self._versions = sum(map(_VERSION, self._watched))

    def stale(self):
        """True if a parameter or buffer the graph read was written since
        the plan was made (the caller makes a new one)."""
        return sum(map(_VERSION, self._watched)) != self._versions

    # ------------------------------------------------------------ planning

    def _fold_constants(self, values):
        consts = {}
        for n in self.gm.graph.nodes:
            if n.op == "get_attr":
                consts[n] = values[n]
            elif n.op == "call_function" and all(a in consts for a in n.all_input_nodes) and \
                    _tensors(values[n]) and not _is_random(n):
                # Ops on parameters only, and tensors made from nothing
                # (zeros, arange, full): computed once, when traced. Ops
                # with several results too (a weight standardized by a
                # training-mode batch norm: NF-Nets' ScaledStdConv2d), and
                # the getitems that take them apart.
                consts[n] = values[n]
        return consts

    def _fold_batch_norms(self):
        """conv -> batch norm (inference, constant statistics): scale the
        convolution's weights and bias instead (one pass over the data less)."""
        graph = self.gm.graph
        for bn in list(graph.nodes):
            name = aten.op_name(bn.target) if bn.op == "call_function" else None
            if name not in ("native_batch_norm.default",
                            "_native_batch_norm_legit_no_training.default"):
                continue
            conv = bn.args[0]
            args = list(bn.args)
            training = args[5] if name.startswith("native") else False
            if training or not isinstance(conv, torch.fx.Node) or \
                    aten.op_name(conv.target) != "convolution.default" or len(conv.users) != 1 \
                    or conv.args[6] or any(a is not None and a not in self.consts
                                           for a in args[1:5]) or conv.args[1] not in self.consts:
                continue
            if any(u.target is not operator.getitem or u.args[1] != 0 for u in bn.users):
                continue
            w = self.consts[conv.args[1]]
            b = self.consts[conv.args[2]] if conv.args[2] is not None else torch.zeros(w.shape[0])
            const = lambda a: self.consts[a] if a is not None else None
            scale, shift = aten.batch_norm_scale_shift(const(args[1]), const(args[2]),
                                                       const(args[3]), const(args[4]), args[-1])
            new_w = (w * scale.reshape(-1, *([1] * (w.dim() - 1)))).contiguous()
            new_b = (b * scale + shift).contiguous()
            with graph.inserting_before(conv):
                nodes = []
                for t in (new_w, new_b):
                    attr = _FOLDED + "%d" % len(self.consts)
                    self.gm.register_buffer(attr, t)
                    n = graph.get_attr(attr)
                    self.consts[n] = self.values[n] = t
                    nodes.append(n)
            conv.args = (conv.args[0], nodes[0], nodes[1]) + tuple(conv.args[3:])
            for u in list(bn.users):
                u.replace_all_uses_with(conv)
                graph.erase_node(u)
            graph.erase_node(bn)
        _eliminate_dead_code(graph)

    def _resolve(self, x, vals):
        if isinstance(x, torch.fx.Node):
            if x in self.consts:
                return aten.Const(self.consts[x])
            if x not in vals:
                raise KeyError(x)
            return vals[x]
        if isinstance(x, (list, tuple)):
            return type(x)(self._resolve(a, vals) for a in x)
        return x

    def _lower(self, ctx, n, vals):
        """The node's value(s) in the function being emitted."""
        if n.target is operator.getitem:
            tup = vals.get(n.args[0])
            if not isinstance(tup, tuple) or tup[n.args[1]] is None:
                raise aten.Unsupported("this result of %s" % n.args[0].target)
            return tup[n.args[1]]
        low = aten.find_lowering(n.target)
        if low is None:
            raise aten.Unsupported("no lowering")
        args = self._resolve(n.args, vals)
        kwargs = {k: self._resolve(v, vals) for k, v in n.kwargs.items()}
        return low(ctx, *args, **kwargs)

    def _supported(self, n):
        """None if the node lowers (a dry run: the node alone, its tensor
        operands as arguments, its result of a type pbc handles), else why not."""
        result = self.values.get(n)
        if isinstance(result, torch.Tensor) and emit.elem_of(result.dtype) is None:
            return "result of type %s" % result.dtype
        f = emit.Function("probe")
        ctx = _Ctx(f, _Segment(0), aten.op_name(n.target) or "")
        vals = {}
        try:
            for a in n.all_input_nodes:
                if a in self.consts:
                    continue
                v = self.values.get(a)
                if isinstance(v, (tuple, list)):
                    vals[a] = tuple(self._probe_arg(f, x) for x in v)
                else:
                    vals[a] = self._probe_arg(f, v)
            self._lower(ctx, n, vals)
        except aten.Unsupported as e:
            return str(e)
        except Exception as e:  # a lowering's bug on these arguments: eager, named
            return "cannot lower these arguments (%s: %s)" % (type(e).__name__, e)
        return None

    @staticmethod
    def _probe_arg(f, v):
        if not isinstance(v, torch.Tensor):
            return None
        elem = emit.elem_of(v.dtype)
        if elem is None:
            raise aten.Unsupported("tensor of type %s" % v.dtype)
        return f.arg(tuple(v.shape), elem)

    def _layout_bound(self):
        """Nodes that must run eagerly because an eager op reads their
        storage, not just their values: as_strided takes sizes, strides and
        a storage offset relative to the storage the traced tensor had. A
        compiled segment's outputs are fresh contiguous tensors, so the
        views between such an op and the tensor that owned the storage are
        recomputed eagerly from it, and that owner must be one whose traced
        layout a fresh tensor reproduces (contiguous, offset 0, its whole
        storage); else it runs eagerly too, and so on upwards."""
        eager = set()
        todo = [n for n in self.gm.graph.nodes if n.op == "call_function" and
                (aten.op_name(n.target) or "").startswith("as_strided")]
        while todo:
            n = todo.pop()
            for a in n.all_input_nodes:
                if a in eager or a in self.consts or a.op != "call_function":
                    continue
                v = self.values.get(a)
                owns = isinstance(v, torch.Tensor) and v.is_contiguous() and \
                    v.storage_offset() == 0 and v.untyped_storage().nbytes() == v.numel() * v.element_size() \
                    if hasattr(v, "untyped_storage") else \
                    isinstance(v, torch.Tensor) and v.is_contiguous() and v.storage_offset() == 0 and \
                    v.storage().size() == v.numel()
                name = (aten.op_name(a.target) or "").split(".")[0]
                if name in _VIEW_OPS or not owns:
                    eager.add(a)
                    todo.append(a)
        return eager

    def _partition(self):
        steps, seg = [], None
        layout_bound = self._layout_bound()
        for n in self.gm.graph.nodes:
            if n.op != "call_function" or n in self.consts:
                continue
            if n.target is operator.getitem:
                # Part of the segment computing the tuple, else plain Python.
                if seg is not None and n.args[0] in seg.nodes and \
                        self._supported(n) is None:
                    seg.nodes.append(n)
                else:
                    steps.append(n)
                    seg = None
                continue
            if _is_inplace(n):
                # After functionalization only the writes back into the
                # caller's tensors are in place: they run eagerly, last.
                steps.append(n)
                seg = None
                continue
            why = "an eager as_strided reads its storage" if n in layout_bound else self._supported(n)
            if why is None:
                if seg is None or self.per_op:
                    seg = _Segment(len([s for s in steps if isinstance(s, _Segment)]))
                    steps.append(seg)
                seg.nodes.append(n)
            else:
                name = aten.op_name(n.target) or str(n.target)
                self.fallbacks.append((name, why))
                warnings.warn("pbc: aten.%s is not compiled (%s); it runs eagerly" % (name, why),
                              stacklevel=4)
                steps.append(n)
                seg = None
        return steps

    # ------------------------------------------------------------ compiling

    def _emit_segment(self, seg):
        f = emit.Function(seg.name)
        inside = set(seg.nodes)
        ctx = _Ctx(f, seg, "")
        vals = {}
        for n in seg.nodes:
            for a in n.all_input_nodes:
                if a in inside or a in vals or a in self.consts:
                    continue
                v = self.values[a]
                vals[a] = f.arg(tuple(v.shape), emit.elem_of(v.dtype))
                seg.inputs.append(("node", a))
            ctx.op = aten.op_name(n.target) or ""
            vals[n] = self._lower(ctx, n, vals)
            self._check_lowered(n, vals[n])
        # Indices that arrive as inputs are checked before each call (the
        # compiled gather clamps them; eager PyTorch raises).
        for idx, low, rows in seg.gathers:
            seg.index_checks += [(j, low, rows) for j, (kind, x) in enumerate(seg.inputs)
                                 if kind == "node" and vals.get(x) is idx]
        results = []
        for n in seg.nodes:
            if isinstance(vals[n], emit.Val) and any(u not in inside for u in n.users):
                seg.outputs.append(n)
                results.append(f.logical(vals[n]))
                seg.out_types.append((tuple(results[-1].shape), self.values[n].dtype))
        return f.text(results)

    def _check_lowered(self, n, val):
        """A lowering's result must have the traced tensor's shape and
        element type: else the code would compute something else, or write
        past a buffer. Such a segment runs eagerly (and the lowering is a
        bug to fix)."""
        want = self.values.get(n)
        if isinstance(val, emit.Val) and isinstance(want, torch.Tensor) and (
                val.shape != tuple(want.shape) or val.elem != emit.elem_of(want.dtype)):
            raise aten.Unsupported("pbc internal error: %s lowered to %s%s, traced %s%s" % (
                aten.op_name(n.target), val.elem, list(val.shape), want.dtype, list(want.shape)))

    def _compile(self, target, chip, opt_level, disable):
        segs = [s for s in self.steps if isinstance(s, _Segment)]
        self.programs, self.mlir = [], []
        texts, failed = {}, []
        for s in segs:
            try:
                texts[s.name] = self._emit_segment(s)
            except aten.Unsupported as e:
                failed.append((s, str(e)))
            except Exception as e:  # a lowering's bug: the segment runs eagerly, named
                failed.append((s, "pbc internal error: %s: %s" % (type(e).__name__, e)))
        segs = [s for s in segs if s.name in texts]
        # One module per 64 segments: pbc takes at most 64 entry points. A
        # module of several segments that does not compile is compiled a
        # segment at a time (a module of one is not compiled again
        # unchanged); a segment that still fails runs eagerly, with a warning.
        for i in range(0, len(segs), 64):
            group = segs[i:i + 64]
            try:
                self._compile_group(group, texts, target, chip, opt_level, disable)
            except CompileError as e:
                if len(group) == 1:
                    failed.append((group[0], str(e).splitlines()[0]))
                    continue
                for s in group:
                    try:
                        self._compile_group([s], texts, target, chip, opt_level, disable)
                    except CompileError as e:
                        failed.append((s, str(e).splitlines()[0]))
        for s in segs:
            if s.entry is not None:
                why = self._signature_mismatch(s)
                if why:
                    failed.append((s, why))
        for s, why in failed:
            warnings.warn("pbc: a segment (%s) runs eagerly: %s" % (
                ", ".join(aten.op_name(n.target) or "getitem" for n in s.nodes), why), stacklevel=4)
            s.entry = None
            k = self.steps.index(s)
            self.steps[k:k + 1] = list(s.nodes)

    @property
    def eager_fraction(self):
        """The share of the graph's ATen ops that run eagerly."""
        ops = [n for n in self.gm.graph.nodes if n.op == "call_function" and
               n.target is not operator.getitem and n not in self.consts]
        eager = [n for n in self.steps if isinstance(n, torch.fx.Node) and
                 n.target is not operator.getitem and not _is_inplace(n)]
        return len(eager) / max(1, len(ops))

    def _compile_group(self, group, texts, target, chip, opt_level, disable):
        text = emit.module([texts[s.name] for s in group])
        program = Program(text, "<torch graph>", target, chip, opt_level, disable)
        self.mlir.append(text)
        self.programs.append(program)
        for s in group:
            s.entry = program.entries[s.name]
            for j, (kind, t) in enumerate(s.inputs):
                if kind == "fixed":
                    s.fixed_descriptors[j] = descriptor(t.data_ptr(), tuple(t.shape))
            # The packed call's argument array with the parameters' descriptors
            # in place; each call copies it and fills in the rest.
            s.argv = (ctypes.c_void_p * (len(s.inputs) + len(s.out_types)))()
            # What each call fills in: the inputs computed at run time.
            s.computed_inputs = [(j, x) for j, (kind, x) in enumerate(s.inputs) if kind != "fixed"]
            for j, d in s.fixed_descriptors.items():
                s.argv[j] = ctypes.addressof(d)

    def _signature_mismatch(self, seg):
        """Why the compiled entry's arguments disagree with the traced
        tensors the segment is called with (element type or shape), or
        None. A mismatch would have the code read or write past a buffer."""
        e = seg.entry
        for j, (kind, x) in enumerate(seg.inputs):
            t = x if kind == "fixed" else (self.values or {}).get(x)
            elem, shape = e.args[j]
            if isinstance(t, torch.Tensor) and (emit.elem_of(t.dtype) != elem or tuple(t.shape) != shape):
                return "input %d is %s%s, the compiled code takes %s%s" % (
                    j, t.dtype, list(t.shape), elem, list(shape))
        for j, (n, (shape, dtype)) in enumerate(zip(seg.outputs, seg.out_types)):
            elem, cshape = e.args[e.num_inputs + j]
            if emit.elem_of(dtype) != elem or tuple(shape) != cshape:
                return "result %d is %s%s where the traced tensor is %s%s" % (
                    j, elem, list(cshape), dtype, list(shape))
        return None

    # ------------------------------------------------------------ running

    def _direct_call(self):
        """For a plan that is one compiled segment reading only the graph's
        inputs and returning only its results (a CNN): (positions of the
        inputs it computes with, its outputs' order in the result, whether
        the result is one tensor rather than a tuple), which the call runs
        with no environment, no grad-mode switch and no walk of the output
        structure. None otherwise."""
        if len(self.steps) != 1 or not isinstance(self.steps[0], _Segment):
            return None
        seg = self.steps[0]
        if seg.entry is None or seg.index_checks or \
                any(x not in self.placeholders for _, x in seg.computed_inputs):
            return None
        result = self.output_node.args[0]
        single = isinstance(result, torch.fx.Node)
        nodes = [result] if single else result
        if not (single or type(result) is tuple) or \
                any(not isinstance(n, torch.fx.Node) or n not in seg.outputs for n in nodes):
            return None  # (other structures: map_arg's types, below)
        where = [self.placeholders.index(x) for _, x in seg.computed_inputs]
        return where, [seg.outputs.index(n) for n in nodes], single

    def _check_inputs(self, inputs):
        """Refuses inputs of other shapes, dtypes or values than those the
        plan was traced with (the compiled code has their sizes built in)."""
        if len(inputs) != len(self._expect):
            raise TypeError("pbc: the compiled plan takes %d inputs, got %d"
                            % (len(self._expect), len(inputs)))
        for i, (x, (a, b)) in enumerate(zip(inputs, self._expect)):
            if a == "py":
                if isinstance(x, torch.Tensor) or x != b:
                    raise ValueError("pbc: input %d is %r; this plan was traced with %r "
                                     "(make one per value: pbc.jit does)" % (i, x, b))
            elif not isinstance(x, torch.Tensor) or x.shape != a or x.dtype != b:
                got = "%s%s" % (x.dtype, list(x.shape)) if isinstance(x, torch.Tensor) else repr(x)
                raise ValueError("pbc: input %d is %s; this plan was compiled for %s%s (make "
                                 "one per shape: pbc.jit and the torch.compile backend do)"
                                 % (i, got, b, list(a)))

    def __call__(self, *inputs):
        self._check_inputs(inputs)
        if self._direct is not None:
            # The kernels write new tensors and read the inputs: no autograd
            # record either way. (Measured: tools/bench/README.md, bridge.)
            where, order, single = self._direct
            outputs = self._call_segment(self.steps[0], [inputs[i] for i in where])
            return outputs[order[0]] if single else tuple(outputs[i] for i in order)
        # The constants are looked up, not copied in: a copy of every entry
        # per call touched hundreds of objects, all evicted from the caches
        # by the previous call's kernels: about 0.1 ms a call on
        # MobileNet-v2 (tools/bench/README.md).
        env = collections.ChainMap(dict(zip(self.placeholders, inputs)), self.consts)
        with torch.no_grad():
            for step in self.steps:
                self._run_step(step, env)
        return torch.fx.node.map_arg(self.output_node.args[0], lambda a: env[a])

    def _run_step(self, step, env):
        if isinstance(step, _Segment):
            self._run_segment(step, env)
        else:
            args = torch.fx.node.map_arg(step.args, lambda a: env[a])
            kwargs = torch.fx.node.map_arg(step.kwargs, lambda a: env[a])
            env[step] = step.target(*args, **kwargs)

    def profile(self, *inputs, runs=10):
        """Median milliseconds of each step over `runs` calls, slowest first:
        [(ms, description)]. Most useful with per_op=True."""
        import statistics
        import time
        times = {id(s): [] for s in self.steps}
        for _ in range(runs):
            env = collections.ChainMap(dict(zip(self.placeholders, inputs)), self.consts)
            with torch.no_grad():
                for step in self.steps:
                    t = time.perf_counter()
                    self._run_step(step, env)
                    times[id(step)].append((time.perf_counter() - t) * 1e3)
        rows = []
        for step in self.steps:
            if isinstance(step, _Segment):
                what = "pbc: " + " ".join(
                    "%s%s" % (aten.op_name(n.target) or "getitem",
                              list(self.shapes.get(n, ()))) for n in step.nodes)
            else:
                what = "eager: %s" % step.target
            rows.append((statistics.median(times[id(step)]), what))
        return sorted(rows, reverse=True)

    @staticmethod
    def _run_segment(seg, env):
        for j, low, rows in seg.index_checks:
            t = env[seg.inputs[j][1]]
            if t.numel() and (int(t.min()) < low or int(t.max()) >= rows):
                raise IndexError("index out of range in self (pbc: indices must lie in "
                                 "[%d, %d), got %d..%d)" % (low, rows, int(t.min()), int(t.max())))
        outputs = Plan._call_segment(seg, [env[x] for _, x in seg.computed_inputs])
        for n, t in zip(seg.outputs, outputs):
            env[n] = t

    @staticmethod
    def _call_segment(seg, tensors):
        """The segment's compiled code on `tensors` (its computed inputs, in
        order): its results, new tensors."""
        inputs = [t.contiguous() for t in tensors]  # alive for the call
        outputs = [torch.empty(shape, dtype=dtype) for shape, dtype in seg.out_types]
        frame = seg.frame
        if frame is None or not frame.lock.acquire(blocking=False):
            # The first call, or another thread is inside this segment: a
            # frame of its own (the next calls reuse the first one).
            frame = _Frame(seg)
            frame.lock.acquire()
            if seg.frame is None:
                seg.frame = frame
        try:
            for d, t in zip(frame.descriptors, inputs + outputs):
                d.allocated = d.aligned = t.data_ptr()
            seg.entry.packed(frame.argv)
        finally:
            frame.lock.release()
        return outputs
