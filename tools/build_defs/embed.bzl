"""embed_text: text files (pipelines, chip descriptions) as C strings."""

def embed_text(name, files):
    """files: dict symbol -> label of a text file. Makes NAME.c."""
    srcs = files.values()
    args = " ".join(["%s=$(location %s)" % (sym, f) for sym, f in files.items()])
    native.genrule(
        name = name,
        srcs = srcs,
        outs = [name + ".c"],
        cmd = "$(location //tools/build_defs:embed_text.sh) $@ " + args,
        tools = ["//tools/build_defs:embed_text.sh"],
    )
