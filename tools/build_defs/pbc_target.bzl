"""pbc_target: a target plugin's package in one call.

In a target's BUILD file:

    pbc_target(
        name = "mychip",                      # the target's name
        srcs = ["mychip_plugin.c"],
        data_files = {"pbc_mychip_s5": "s5.pipeline", ...},  # embedded text
        deps = [...],                         # e.g. //core:core_shared
        runtime = ":libpbc_mychip_runtime.so",  # what compiled programs link
    )

makes libpbc_target_<name>.so (the data files as C strings, exporting only
pbc_target_plugin_query: plugins/plugin.lds) and the filegroup `plugin`
(the plugin and its runtime) that //:plugins collects. Listing the package
in //:targets.bzl is the one other line a new target needs."""

load("//tools/build_defs:embed.bzl", "embed_text")

def pbc_target(name, srcs, data_files = {}, deps = [], runtime = None, copts = []):
    data = name + "_data"
    embed_text(name = data, files = data_files)
    plugin = "libpbc_target_%s.so" % name
    native.cc_binary(
        name = plugin,
        srcs = srcs + [data + ".c"],
        additional_linker_inputs = ["//plugins:plugin.lds"],
        copts = ["-fvisibility=hidden"] + copts,
        data = [runtime] if runtime else [],
        linkopts = [
            "-Wl,-rpath,$$ORIGIN",
            "-Wl,--version-script=$(location //plugins:plugin.lds)",
        ],
        linkshared = True,
        deps = ["//plugins:plugin_api"] + deps,
    )
    native.filegroup(
        name = "plugin",
        srcs = [plugin] + ([runtime] if runtime else []),
    )
