"""Ahead of time: a torch.export program to a shared library and its C
header, through torch-mlir's lowering and the pbc driver.

    ep = torch.export.export(model.eval(), (x,))
    lib, header = pbc.export(ep, "build/libresnet")    # libresnet.so, libresnet.h

The library's entry `_mlir_ciface_main` takes pointers to memref
descriptors: the inputs, then one caller-allocated output per result (see
the header). Parameters and buffers are compiled in as constants.

A program exported with a dynamic batch (torch.export's Dim on the inputs'
leading dimension) whose batch elements are computed each from its own
becomes one library for every batch size: the header shows the batch as
`?`, and every `?` of one call takes the same size. Other dynamic programs
become one library with symbolic sizes (the header shows s0, s1, ...: each
any size from 1, the same for one symbol in one call) where their results'
sizes are their inputs'; the rest are refused with the driver's error,
unless `shapes` gives the sizes to compile for (one per input, None for a
static one); the library then takes exactly those."""

import os
import subprocess

from .libpbc import CompileError, shapes_spec
from .torch_mlir_graph import NotLowered, _lower


def _driver():
    env = os.environ.get("PBC_DRIVER")
    if env:
        return env
    from .libpbc import library
    lib = library()
    # The driver sits next to libpbc.so in build/bin; under Bazel in tools/pbc.
    here = os.path.dirname(os.path.realpath(lib._name))
    for cand in (os.path.join(here, "pbc"), os.path.join(here, "..", "pbc", "pbc")):
        if os.path.exists(cand):
            return cand
    raise CompileError("pbc: the pbc driver was not found (set PBC_DRIVER)")


def export(program, path, target="cpu", chip=None, opt_level=3, disable=None, shapes=None):
    """program: a torch.export.ExportedProgram; path: the library's path
    without extension; shapes: the inputs' sizes (see above). Returns
    (library path, header path)."""
    try:
        text = _lower(program)
    except NotLowered as e:
        raise CompileError("pbc.export: %s" % e)
    base = path[:-3] if path.endswith(".so") else path
    mlir, lib = base + ".mlir", base + ".so"
    with open(mlir, "w") as f:
        f.write(text)
    cmd = [_driver(), "--emit=lib", "--target=" + target, "-O%d" % opt_level, "-o", lib, mlir]
    if chip:
        cmd.insert(2, "--chip=" + chip)
    if disable:
        cmd.insert(2, "--disable=" + disable)
    if shapes:
        cmd.insert(2, "--shape=" + shapes_spec(shapes))
    if os.environ.get("PBC_PLUGIN_DIR"):
        cmd.insert(1, "--plugin-dir=" + os.environ["PBC_PLUGIN_DIR"])
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        raise CompileError("pbc.export: %s" % p.stderr.strip())
    return lib, base + ".h"
