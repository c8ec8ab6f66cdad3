"""One Bazel test per lit file, so results are counted per property."""

LIT_DATA = [
    "//tests:lit.cfg.py",
    "//tools/pbc",
    "//tools/pbc-opt",
    "//:plugins",
    "//tests/plugins/fixtures",
    "//plugins:WRITING_A_TARGET.md",
    "//examples",
]

def lit_tests(srcs, tags = ["cpu"], sizes = {}):
    """sizes: file -> Bazel test size, for the files that need more than a
    small test's 60 s (the default)."""
    for src in srcs:
        native.sh_test(
            name = src.rsplit(".", 1)[0],
            srcs = ["//tests:run_lit.sh"],
            args = ["$(rootpath %s)" % src],
            data = [src] + native.glob(["*/inputs/*", "gpu/*.py"]) + LIT_DATA,
            tags = tags,
            size = sizes.get(src, "small"),
        )
