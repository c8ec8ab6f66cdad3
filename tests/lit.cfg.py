# lit configuration for pbc's FileCheck tests (run through tests/run_lit.sh).
import os
import lit.formats

config.name = "pbc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["fixtures", "e2e", "inputs"]
for var in ("PATH", "PBC_PLUGIN_PATH", "PBC_TEST_FIXTURES", "PBC_EXAMPLES", "TMPDIR",
            "PBC_RUNFILES_ROOT"):
    if var in os.environ:
        config.environment[var] = os.environ[var]
config.substitutions.append(("%fixtures", os.environ.get("PBC_TEST_FIXTURES", "")))
config.substitutions.append(("%examples", os.environ.get("PBC_EXAMPLES", "")))
# The source files a test reads (docs it checks against the code).
config.substitutions.append(("%root", os.environ.get("PBC_RUNFILES_ROOT", "")))
# Tests that need the absence (or presence) of an NVIDIA driver.
import ctypes
try:
    ctypes.CDLL("libcuda.so.1")
    config.available_features.add("cuda-driver")
except OSError:
    pass
# ... and of the HIP runtime (AMD).
try:
    ctypes.CDLL("libamdhip64.so")
    config.available_features.add("hip-runtime")
except OSError:
    pass
