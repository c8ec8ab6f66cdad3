"""pbc_lib — compile an MLIR program with pbc and call it from Python.

    lib = compile("examples/mlp.mlir", pbc="bazel-bin/tools/pbc/pbc")
    (y,) = lib.call("mlp", [x, w1, b1, w2, b2], [((32, 128), np.float32)])

The AOT ABI: for each public `func.func @F(inputs) -> (results)` the library
exports `void _mlir_ciface_F(Desc *in0, ..., Desc *out0, ...)`: inputs first,
then one caller-allocated out-param per result, each a pointer to a memref
descriptor {T *allocated; T *aligned; int64_t offset; int64_t sizes[R];
int64_t strides[R];} (rank 0: the first three fields only), strides in
elements, row-major contiguous.

Element types: np.float32, np.float16, BF16 (bf16 values carried as np.uint16
bit patterns; see f32_to_bf16 / bf16_to_f32), and integer numpy types.

`pbc` is either the real driver (run as `PBC --emit=lib -o OUT.so IN.mlir
EXTRA...`) or the upstream-only stand-in script, recognised by its basename
`standin.sh` (run as `standin.sh IN.mlir OUT.so`; extra args are ignored).
"""

import ctypes
import os
import re
import shutil
import subprocess
import tempfile

import numpy as np

# Marker dtype for bf16: arrays are np.uint16 bit patterns.
BF16 = "bf16"

DEFAULT_PBC = os.path.normpath(os.environ.get(
    "PBC", os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "bazel-bin", "tools", "pbc", "pbc")))


class CompileError(RuntimeError):
    pass


class CallError(RuntimeError):
    pass


class CompiledOnly(Exception):
    """Raised by compile() in compile-only mode (a GPU target on a machine
    without that GPU): the program compiled and its device code passed the
    target's offline checks; nothing was run."""


# Target selection for every compile() (set by harness from --target/--chip).
TARGET_ARGS = []
# None: run what compiles. Otherwise a function(pbc, src, workdir) that checks
# the device code offline (raising CompileError) before CompiledOnly is raised.
COMPILE_ONLY_CHECK = None
# Prebuilt libraries, for running on a machine that has the device but no pbc
# (a lent GPU): None, or (mode, folder) with mode "record" (compile here, keep
# each library in folder under a digest of its source and pbc arguments, raise
# CompiledOnly) or "replay" (load the library recorded for the same source
# and arguments instead of running pbc; a recorded compile error is raised
# again). The tests draw the same programs from the same --seed both times.
PREBUILT = None


# ---------------------------------------------------------------- bf16 helpers

def f32_to_bf16(a):
    """float array -> bf16 bit patterns (np.uint16), round to nearest even."""
    a = np.ascontiguousarray(np.asarray(a, dtype=np.float32))
    u = a.view(np.uint32).astype(np.uint64)
    nan = np.isnan(a)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    out = (rounded & 0xFFFF).astype(np.uint16)
    out[nan] = 0x7FC0
    return out


def bf16_to_f32(b):
    """bf16 bit patterns (np.uint16) -> float32 array (exact)."""
    b = np.ascontiguousarray(np.asarray(b, dtype=np.uint16))
    return (b.astype(np.uint32) << 16).view(np.float32)


def round_bf16(a):
    """Round float values to the nearest bf16 value, returned as float32."""
    return bf16_to_f32(f32_to_bf16(a))


def bf16_isnan(b):
    b = np.asarray(b, dtype=np.uint16)
    return ((b & 0x7F80) == 0x7F80) & ((b & 0x007F) != 0)


def to_f32(a, dtype):
    """Output buffer of element type `dtype` -> float32 values."""
    if dtype is BF16 or dtype == BF16:
        return bf16_to_f32(a)
    return np.asarray(a).astype(np.float32)


def _np_dtype(dtype):
    if isinstance(dtype, str) and dtype == BF16:
        return np.dtype(np.uint16)
    return np.dtype(dtype)


# ---------------------------------------------------------------- descriptors

_desc_types = {}


def _desc_type(rank):
    if rank not in _desc_types:
        fields = [("allocated", ctypes.c_void_p), ("aligned", ctypes.c_void_p),
                  ("offset", ctypes.c_int64)]
        if rank > 0:
            fields += [("sizes", ctypes.c_int64 * rank),
                       ("strides", ctypes.c_int64 * rank)]
        _desc_types[rank] = type("MemRefDesc%d" % rank, (ctypes.Structure,),
                                 {"_fields_": fields})
    return _desc_types[rank]


def make_descriptor(arr):
    """Memref descriptor for a C-contiguous numpy array (kept alive by caller)."""
    assert arr.flags["C_CONTIGUOUS"], "array must be C-contiguous"
    desc = _desc_type(arr.ndim)()
    ptr = arr.ctypes.data
    desc.allocated = ptr
    desc.aligned = ptr
    desc.offset = 0
    if arr.ndim > 0:
        for i, (s, st) in enumerate(zip(arr.shape, arr.strides)):
            desc.sizes[i] = s
            desc.strides[i] = st // arr.itemsize
    return desc


def _placed(buf, offset):
    """A copy of `buf` starting `offset` bytes past a 64-byte boundary."""
    raw = np.empty(buf.nbytes + 128, dtype=np.uint8)
    start = (offset - raw.ctypes.data) % 64
    out = raw[start:start + buf.nbytes].view(buf.dtype).reshape(buf.shape)
    out[...] = buf
    return out


# ---------------------------------------------------------------- library

class Library:
    def __init__(self, so_path, workdir=None):
        self.path = so_path
        self._workdir = workdir
        self._dll = ctypes.CDLL(so_path)

    def has(self, func_name):
        try:
            getattr(self._dll, "_mlir_ciface_" + func_name)
            return True
        except AttributeError:
            return False

    def call(self, func_name, inputs, output_shapes_dtypes, check_written=True,
             check_inputs=True, out_offset=None):
        """Call `_mlir_ciface_<func_name>(inputs..., outputs...)`.

        inputs: numpy arrays (bf16 as np.uint16 bit patterns).
        output_shapes_dtypes: [(shape, dtype)], dtype np.float32/np.float16/
        BF16/an integer type. Float outputs are pre-filled with NaN (bf16:
        0xFFFF), integer ones with 0x5A bytes; with check_written, a NaN
        left in any float output raises CallError.
        With check_inputs, an input buffer modified by the call raises CallError
        (tensor semantics: a kernel never writes its inputs).
        out_offset: place each output `out_offset` bytes past a 64-byte
        boundary (code versioned on alignment runs either way).
        Returns the output arrays.
        """
        try:
            fn = getattr(self._dll, "_mlir_ciface_" + func_name)
        except AttributeError:
            raise CallError("symbol _mlir_ciface_%s not found in %s"
                            % (func_name, self.path))
        fn.restype = None
        ins = [np.ascontiguousarray(a) for a in inputs]
        saved = [a.copy() for a in ins] if check_inputs else []
        outs = []
        for shape, dtype in output_shapes_dtypes:
            nd = _np_dtype(dtype)
            if isinstance(dtype, str) and dtype == BF16:
                buf = np.full(shape, 0xFFFF, dtype=np.uint16)
            elif nd.kind == "f":
                buf = np.full(shape, np.nan, dtype=nd)
            else:  # a byte pattern no computation here produces
                buf = np.empty(shape, dtype=nd)
                buf.reshape(-1).view(np.uint8)[:] = 0x5A
            if out_offset is not None:
                buf = _placed(buf, out_offset)
            outs.append(buf)
        descs = [make_descriptor(a) for a in ins + outs]
        fn(*[ctypes.byref(d) for d in descs])
        for i, (a, b) in enumerate(zip(ins, saved)):
            if a.tobytes() != b.tobytes():
                raise CallError("input %d was modified by the call" % i)
        if check_written:
            for i, ((shape, dtype), buf) in enumerate(zip(output_shapes_dtypes, outs)):
                if isinstance(dtype, str) and dtype == BF16:
                    nan = bf16_isnan(buf)
                elif buf.dtype.kind == "f":
                    nan = np.isnan(buf)
                else:
                    continue
                if nan.any():
                    idx = tuple(int(v) for v in np.argwhere(nan)[0])
                    raise CallError("output %d: %d of %d elements NaN / not written "
                                    "(first at %s)" % (i, int(nan.sum()), buf.size, idx))
        return outs

    def close(self):
        if self._workdir:
            shutil.rmtree(self._workdir, ignore_errors=True)
            self._workdir = None

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _is_standin(pbc):
    return os.path.basename(pbc) == "standin.sh"


def compile(mlir_path_or_text, pbc=None, extra_args=(), name="X", timeout=600, _prebuilt=True):
    """Compile an MLIR file (path) or MLIR text into a shared library.

    Runs `PBC --emit=lib -o DIR/lib<name>.so INPUT EXTRA...` in a fresh temp
    dir (or the stand-in `standin.sh INPUT OUT.so`). Raises CompileError with
    the tool's output on failure.
    """
    pbc = pbc or DEFAULT_PBC
    workdir = tempfile.mkdtemp(prefix="pbc_e2e_")
    src = mlir_path_or_text
    if "\n" in src or not os.path.exists(src):
        path = os.path.join(workdir, "input.mlir")
        with open(path, "w") as f:
            f.write(src)
        src = path
    else:
        src = os.path.abspath(src)
    out = os.path.join(workdir, "lib%s.so" % name)
    if _is_standin(pbc):
        cmd = [pbc, src, out]
    else:
        # A test that names its own target (e.g. the template) keeps it.
        target = [] if any(a.startswith("--target=") for a in extra_args) else TARGET_ARGS
        cmd = [pbc, "--emit=lib", "-o", out, src] + target + list(extra_args)
    prebuilt = PREBUILT if _prebuilt else None
    if prebuilt is not None:
        with open(src, "rb") as f:
            key = prebuilt_key(f.read(), cmd[5:] if not _is_standin(pbc) else [])
        if prebuilt[0] == "replay":
            return _replay(os.path.join(prebuilt[1], key), out, workdir)
    try:
        p = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=timeout)
    except subprocess.TimeoutExpired:
        shutil.rmtree(workdir, ignore_errors=True)
        raise CompileError("timeout after %ds: %s" % (timeout, " ".join(cmd)))
    if p.returncode != 0 or not os.path.exists(out):
        shutil.rmtree(workdir, ignore_errors=True)
        text = p.stdout.decode(errors="replace").strip()
        message = "exit %d: %s\n%s" % (p.returncode, " ".join(cmd),
                                       "\n".join(text.splitlines()[-30:]))
        if prebuilt is not None:
            with open(os.path.join(prebuilt[1], key + ".err"), "w") as f:
                f.write(message)
        raise CompileError(message)
    if prebuilt is not None:
        shutil.copy(out, os.path.join(prebuilt[1], key + ".so"))
        if target and TARGET_ARGS != ["--target=cpu"]:
            # The test goes on with the same program compiled for the cpu
            # (not recorded), so that every library it compiles after this
            # one is recorded too.
            shutil.rmtree(workdir, ignore_errors=True)
            try:
                return compile(mlir_path_or_text, pbc, ["--target=cpu"] + [
                    a for a in extra_args if not a.startswith("--chip=")], name, timeout,
                    _prebuilt=False)
            except CompileError as e:
                raise CompiledOnly("recorded as %s.so; the cpu stand-in that lets the test "
                                   "go on failed: %s" % (key, str(e).splitlines()[0]))
        return Library(out, workdir)
    if COMPILE_ONLY_CHECK is not None and target:
        try:
            summary = COMPILE_ONLY_CHECK(pbc, src, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
        raise CompiledOnly(summary)
    return Library(out, workdir)


def prebuilt_setup(mode, folder, pbc, target):
    """Sets PREBUILT. The record keeps a copy of the target's runtime, which
    the replay installs where the libraries expect it (install_runtime)."""
    import json
    global PREBUILT
    folder = os.path.abspath(folder)
    manifest = os.path.join(folder, "runtime.json")
    if mode == "record":
        os.makedirs(folder, exist_ok=True)
        runtime = os.path.join(os.path.dirname(pbc), "libpbc_%s_runtime.so" % target)
        if os.path.exists(runtime):
            shutil.copy(runtime, folder)
            with open(manifest, "w") as f:
                json.dump({"linked_as": runtime}, f)
    elif os.path.exists(manifest):
        with open(manifest) as f:
            linked = json.load(f)["linked_as"]
        install_runtime(linked, os.path.join(folder, os.path.basename(linked)))
    PREBUILT = (mode, folder)


def install_runtime(linked_as, copy):
    """A library compiled elsewhere names its target's runtime by the path
    the runtime had there: puts `copy` at that path if nothing is there."""
    if not os.path.exists(linked_as):
        os.makedirs(os.path.dirname(linked_as), exist_ok=True)
        shutil.copy(copy, linked_as)


def prebuilt_key(source, args):
    import hashlib
    h = hashlib.sha256(source)
    h.update("\0".join(["", "args"] + list(args)).encode())
    return h.hexdigest()[:24]


def _replay(base, out, workdir):
    if os.path.exists(base + ".err"):
        shutil.rmtree(workdir, ignore_errors=True)
        with open(base + ".err") as f:
            raise CompileError("(recorded) " + f.read())
    if not os.path.exists(base + ".so"):
        shutil.rmtree(workdir, ignore_errors=True)
        raise CompileError("no recorded library %s.so: record with the same --seed, "
                           "target and chip" % base)
    shutil.copy(base + ".so", out)
    return Library(out, workdir)


# ---------------------------------------------------------------- device code

PTXAS_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")


def find_ptxas():
    for d in os.environ.get("PATH", "").split(os.pathsep) + ["/usr/local/cuda/bin"]:
        p = os.path.join(d, "ptxas")
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return None


def split_device_code(text):
    """`pbc --emit=device` output -> [(binary symbol, module text)]."""
    parts = re.split(r"^// pbc: gpu\.binary @(\S+)\n", text, flags=re.M)
    return list(zip(parts[1::2], parts[2::2]))


def device_modules(pbc, src, workdir, ext):
    """`pbc --emit=device` of src, one file per kernel module:
    [(binary symbol, path)]. Raises CompileError if there is none."""
    cmd = [pbc, "--emit=device", "-o", os.path.join(workdir, "device." + ext), src] + TARGET_ARGS
    p = subprocess.run(cmd, cwd=workdir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if p.returncode != 0:
        raise CompileError("exit %d: %s\n%s" % (p.returncode, " ".join(cmd),
                                                 p.stdout.decode(errors="replace")))
    with open(os.path.join(workdir, "device." + ext)) as f:
        modules = split_device_code(f.read())
    if not modules:
        raise CompileError("no device code in %s" % src)
    paths = []
    for sym, text in modules:
        path = os.path.join(workdir, "%s.%s" % (sym, ext))
        with open(path, "w") as f:
            f.write(text)
        paths.append((sym, path))
    return paths


def _run_tool(cmd, sym):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    report = r.stdout.decode(errors="replace")
    if r.returncode != 0:
        raise CompileError("%s rejected @%s:\n%s" % (os.path.basename(cmd[0]), sym, report))
    return report


def ptxas_check(chip):
    """Compile-only check for nvgpu: every kernel module of the program is
    accepted by ptxas for `chip` with no register spills (its -v report)."""
    ptxas = find_ptxas()
    if not ptxas:
        raise CompileError("ptxas not found (PATH, /usr/local/cuda/bin)")

    def check(pbc, src, workdir):
        modules = device_modules(pbc, src, workdir, "ptx")
        for sym, path in modules:
            report = _run_tool([ptxas, "-arch=" + chip, "-v", "-o", os.devnull, path], sym)
            for st, ld in PTXAS_SPILLS.findall(report):
                if int(st) or int(ld):
                    raise CompileError("@%s spills registers (%s bytes stored, %s loaded):\n%s"
                                       % (sym, st, ld, report))
        return "%d kernel modules, ptxas -arch=%s: no spills" % (len(modules), chip)
    return check


AMDGPU_SPILLS = re.compile(r"\.([sv]gpr)_spill_count:\s*(\d+)")
LLVM_MC = "/usr/lib/llvm-22/bin/llvm-mc"


def amdgpu_check(chip):
    """Compile-only check for amdgpu: every kernel module's assembly is
    accepted by llvm-mc-22 for `chip`, and its kernel metadata reports no
    SGPR or VGPR spills."""
    def check(pbc, src, workdir):
        modules = device_modules(pbc, src, workdir, "s")
        kernels = 0
        for sym, path in modules:
            _run_tool([LLVM_MC, "--triple=amdgcn-amd-amdhsa", "-mcpu=" + chip, "-filetype=obj",
                       "-o", os.devnull, path], sym)
            with open(path) as f:
                counts = AMDGPU_SPILLS.findall(f.read())
            if not counts:
                raise CompileError("@%s: no kernel metadata (spill counts) in its assembly" % sym)
            kernels += len(counts) // 2
            for kind, n in counts:
                if int(n):
                    raise CompileError("@%s spills %s %sGPRs" % (sym, n, kind[0].upper()))
        return "%d kernel modules, llvm-mc -mcpu=%s: no spills" % (len(modules), chip)
    return check


# ---------------------------------------------------------------- signatures

_ELT = {"f32": np.float32, "f16": np.float16, "bf16": BF16, "f64": np.float64,
        "i32": np.int32, "i64": np.int64, "i8": np.int8, "i16": np.int16,
        "i1": np.bool_}


def parse_tensor_type(t):
    """'tensor<4x8xf32>' -> ((4, 8), np.float32)."""
    m = re.fullmatch(r"\s*tensor<(.*)>\s*", t)
    if not m:
        raise ValueError("not a static tensor type: %r" % t)
    parts = m.group(1).split("x")
    return tuple(int(p) for p in parts[:-1]), _ELT[parts[-1].strip()]


def signature(mlir_text, func_name=None):
    """(name, [(shape, dtype)] inputs, [(shape, dtype)] results) of a public
    func.func with static tensor arguments."""
    for m in re.finditer(r"func\.func\s+(?:public\s+)?@(\w+)\s*\((.*?)\)\s*(->\s*"
                         r"(\(.*?\)|tensor<[^>]*>))?\s*(attributes\s*\{[^}]*\}\s*)?\{",
                         mlir_text, re.S):
        name = m.group(1)
        if func_name and name != func_name:
            continue
        args = [parse_tensor_type(t) for t in
                re.findall(r"%\w+\s*:\s*(tensor<[^>]*>)", m.group(2))]
        res = []
        if m.group(4):
            res = [parse_tensor_type(t) for t in re.findall(r"tensor<[^>]*>", m.group(4))]
        return name, args, res
    raise ValueError("no func.func found" + (" named " + func_name if func_name else ""))
