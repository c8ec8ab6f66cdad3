"""The targets pbc builds, installs and tests: one line per target.

package:    its Bazel package, which calls pbc_target() (tools/build_defs/
            pbc_target.bzl) and so provides `:plugin` (the plugin and its
            runtime library);
e2e_chips:  chips the end-to-end suites (tests/e2e) compile every op family
            and example for, as `//tests/e2e:{ops,examples}_<name>_<chip>`
            (empty: the target runs the cpu-hosted suites only, or none);
device_tag: the tag of those suites' execution variants (`..._run`), which
            need the target's device; "" when programs run on this host.

Lit tests of a target live in tests/<name>/ and are tagged with its name;
//tests:<name> is its suite."""

PBC_TARGETS = {
    "cpu": struct(package = "//targets/cpu", e2e_chips = [], device_tag = ""),
    "nvgpu": struct(package = "//targets/nvgpu", e2e_chips = ["sm_80", "sm_90"], device_tag = "requires-gpu"),
    "amdgpu": struct(package = "//targets/amdgpu", e2e_chips = ["gfx90a", "gfx942", "gfx1100"], device_tag = "requires-amd-gpu"),
    "template": struct(package = "//plugins/template", e2e_chips = [], device_tag = ""),
}
