"""One Bazel test per lit file, so results are counted per property."""

LIT_DATA = [
    "//tests:lit.cfg.py",
    "//tools/pbc",
    "//tools/pbc-opt",
    "//targets/cpu:libpbc_target_cpu.so",
    "//plugins/template:libpbc_target_template.so",
    "//targets/nvgpu:libpbc_target_nvgpu.so",
    "//targets/nvgpu:libpbc_nvgpu_runtime.so",
    "//targets/amdgpu:libpbc_target_amdgpu.so",
    "//targets/amdgpu:libpbc_amdgpu_runtime.so",
    "//tests/plugins/fixtures",
    "//examples",
]

def lit_tests(srcs, tags = ["cpu"]):
    for src in srcs:
        native.sh_test(
            name = src.rsplit(".", 1)[0],
            srcs = ["//tests:run_lit.sh"],
            args = ["$(rootpath %s)" % src],
            data = [src] + native.glob(["*/inputs/*", "gpu/*.py"]) + LIT_DATA,
            tags = tags,
            size = "small",
        )
