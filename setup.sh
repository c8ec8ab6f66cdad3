#!/bin/bash
# Installs every Debian package pbc needs (idempotent: fast when present).
set -euo pipefail
PKGS=(libmlir-22-dev mlir-22-tools llvm-22-dev llvm-22-tools clang-22 lld-22 libomp-22-dev
      bazel-bootstrap bazel-rules-java python3-numpy libdnnl-dev libopenblas-dev
      python3-torch python3-torchvision rocm-device-libs)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
