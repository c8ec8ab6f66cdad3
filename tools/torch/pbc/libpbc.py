"""ctypes binding of libpbc (tools/libpbc/include/pbc/libpbc.h).

The compiler stays in C: this module only asks libpbc to compile MLIR text
into a loaded program and calls its entry points on tensors' memory through
MLIR memref descriptors.
"""

import ctypes
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_CANDIDATES = [
    os.environ.get("PBC_LIBPBC", ""),
    os.path.join(_HERE, "..", "..", "..", "build", "bin", "libpbc.so"),
    os.path.join(_HERE, "..", "..", "..", "bazel-bin", "tools", "libpbc", "libpbc.so"),
]


class CompileError(RuntimeError):
    """pbc rejected or failed to compile a program; the message has pbc's
    located diagnostics."""


class _Options(ctypes.Structure):
    _fields_ = [("target", ctypes.c_char_p), ("chip", ctypes.c_char_p),
                ("optLevel", ctypes.c_int), ("disable", ctypes.c_char_p),
                ("pluginDir", ctypes.c_char_p), ("cacheDir", ctypes.c_char_p)]


class _ArgInfo(ctypes.Structure):
    _fields_ = [("elem", ctypes.c_char_p), ("rank", ctypes.c_int),
                ("shape", ctypes.POINTER(ctypes.c_int64))]


_lib = None


def library():
    """Loads libpbc.so once (PBC_LIBPBC, the file or its folder; else
    build/bin, else bazel-bin)."""
    global _lib
    if _lib is not None:
        return _lib
    for path in _CANDIDATES:
        if path and os.path.isdir(path):  # PBC_LIBPBC may name the folder
            path = os.path.join(path, "libpbc.so")
        if path and os.path.exists(path):
            break
    else:
        raise OSError("libpbc.so not found: build it with tools/build.sh or set PBC_LIBPBC")
    lib = ctypes.CDLL(os.path.abspath(path))
    P, S, I = ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int
    sigs = {
        "pbcProgramCompile": (P, [S, S, ctypes.POINTER(_Options), ctypes.POINTER(P)]),
        "pbcProgramCompileShaped": (P, [S, S, ctypes.POINTER(_Options), S, ctypes.POINTER(P)]),
        "pbcProgramDestroy": (None, [P]),
        "pbcProgramNumEntries": (I, [P]),
        "pbcProgramEntryName": (S, [P, I]),
        "pbcProgramFindEntry": (I, [P, S]),
        "pbcProgramEntryNumInputs": (I, [P, I]),
        "pbcProgramEntryNumOutputs": (I, [P, I]),
        "pbcProgramEntryArg": (ctypes.c_bool, [P, I, I, ctypes.POINTER(_ArgInfo)]),
        "pbcProgramEntrySymbolMax": (ctypes.c_int64, [P, I, I]),
        "pbcProgramEntryFunction": (P, [P, I]),
        "pbcProgramEntryPackedFunction": (P, [P, I]),
        "pbcProgramLibraryPath": (S, [P]),
        "pbcMessageDestroy": (None, [P]),
        "pbcVersion": (S, []),
    }
    for name, (res, args) in sigs.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    _lib = lib
    return lib


def _descriptor_type(rank):
    fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
              ("offset", ctypes.c_int64)]
    if rank:
        fields += [("sizes", ctypes.c_int64 * rank), ("strides", ctypes.c_int64 * rank)]
    return type("MemRef%d" % rank, (ctypes.Structure,), {"_fields_": fields})


_DESCRIPTORS = {}


def descriptor(data_ptr, shape):
    """A memref descriptor of a contiguous row-major buffer at data_ptr."""
    rank = len(shape)
    t = _DESCRIPTORS.get(rank) or _DESCRIPTORS.setdefault(rank, _descriptor_type(rank))
    d = t()
    d.allocated = d.aligned = data_ptr
    if rank:
        stride = 1
        for i in reversed(range(rank)):
            d.sizes[i] = shape[i]
            d.strides[i] = stride
            stride *= shape[i]
    return d


def PBC_ARG_SYMBOL(s):
    """libpbc's size of symbol s in a signature."""
    return -2 - s


class Entry:
    def __init__(self, program, index):
        lib = library()
        h = program._handle
        self.name = lib.pbcProgramEntryName(h, index).decode()
        self.num_inputs = lib.pbcProgramEntryNumInputs(h, index)
        self.num_outputs = lib.pbcProgramEntryNumOutputs(h, index)
        self.args = []
        info = _ArgInfo()
        for a in range(self.num_inputs + self.num_outputs):
            lib.pbcProgramEntryArg(h, index, a, ctypes.byref(info))
            self.args.append((info.elem.decode(), tuple(info.shape[i] for i in range(info.rank))))
        # Each size symbol's largest size (0: any): a call past it is refused
        # here (the raw function traps on it).
        symbols = {-2 - d for _, shape in self.args for d in shape if d < -1}
        self.symbol_max = {PBC_ARG_SYMBOL(k): lib.pbcProgramEntrySymbolMax(h, index, k)
                           for k in symbols}
        n = self.num_inputs + self.num_outputs
        fn_type = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n))
        self.function = fn_type(lib.pbcProgramEntryFunction(h, index))
        # void F(void **descriptors): one foreign call for any number of
        # arguments (a model's segment takes hundreds of parameters).
        self.packed = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(
            lib.pbcProgramEntryPackedFunction(h, index))

    def call(self, buffers):
        """Runs the entry on contiguous row-major buffers, (data pointer,
        shape) each: the inputs, then one caller-allocated output per
        result."""
        descriptors = [descriptor(p, tuple(s)) for p, s in buffers]
        self.function(*[ctypes.addressof(d) for d in descriptors])


def shapes_spec(shapes, entry=None):
    """libpbc's (and `pbc --shape`'s) text for the inputs' sizes: shapes[i]
    is input i's, or None to leave it as the program declares it."""
    prefix = entry + ":" if entry else ""
    return ";".join("%s%d=%s" % (prefix, i, "x".join(str(int(d)) for d in s))
                    for i, s in enumerate(shapes) if s is not None)


class Program:
    """A compiled program loaded into this process. shapes: the inputs'
    sizes for a program with dynamic ones (shapes_spec's text): compiled
    for those (pbc compiles static shapes)."""

    def __init__(self, text, name="<torch>", target="cpu", chip=None, opt_level=3,
                 disable=None, cache_dir=None, shapes=None):
        lib = library()
        enc = lambda s: s.encode() if s is not None else None
        opts = _Options(enc(target), enc(chip), opt_level, enc(disable),
                        enc(os.environ.get("PBC_PLUGIN_DIR")), enc(cache_dir))
        err = ctypes.c_void_p()
        self._handle = lib.pbcProgramCompileShaped(text.encode(), name.encode(), ctypes.byref(opts),
                                                   enc(shapes), ctypes.byref(err))
        if not self._handle:
            msg = ctypes.cast(err, ctypes.c_char_p).value.decode() if err else "unknown error"
            lib.pbcMessageDestroy(err)
            raise CompileError(msg)
        self.entries = {}
        for i in range(lib.pbcProgramNumEntries(self._handle)):
            e = Entry(self, i)
            self.entries[e.name] = e

    @property
    def library_path(self):
        return library().pbcProgramLibraryPath(self._handle).decode()

    def __del__(self):
        if getattr(self, "_handle", None) and _lib is not None:
            _lib.pbcProgramDestroy(self._handle)
            self._handle = None
