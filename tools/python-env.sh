#!/bin/bash
# The frontends' Python environment: PyTorch 2.x, torch-mlir, JAX, ONNX,
# onnxruntime, IREE's compiler and runtime, HF transformers and timm from PyPI at pinned
# versions (peers and importers only, never dependencies of generated code). Idempotent and
# cached: a complete environment for these pins is reused. Prints its
# python's path as the last line.
#   tools/python-env.sh            create if needed, print the path
#   PBC_VENV_DIR=DIR               use DIR instead of ~/.cache/pbc/venv-<pins hash>
set -euo pipefail
PINS=(torch==2.15.0 torchvision==0.29.2 numpy==2.4.6 pillow==13.0.0 torch-mlir==20261001 jax==0.10.2
      jaxlib==0.10.2 onnx==1.23.2 onnxruntime==1.32.0 iree-base-compiler==3.13.0 iree-base-runtime==3.13.0
      transformers==5.24.0 timm==1.0.31)
hash=$(echo "${PINS[*]}" | sha1sum | cut -c1-12)
dir=${PBC_VENV_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pbc/venv-$hash}
if [ -f "$dir/.complete" ]; then
  echo "$dir/bin/python"
  exit 0
fi
mkdir -p "$(dirname "$dir")"
exec 9>"$dir.lock"
flock 9
if [ ! -f "$dir/.complete" ]; then
  # A python with venv and pip from PyPI: the one on PATH (pyenv here), not
  # Debian's /usr/bin/python3 (no ensurepip without python3-venv).
  py=$(command -v python3.11 || command -v python3)
  rm -rf "$dir"
  "$py" -m venv "$dir" >&2
  for attempt in 1 2 3; do
    if "$dir/bin/pip" install -q --disable-pip-version-check "${PINS[@]}" >&2; then
      touch "$dir/.complete"
      break
    fi
    echo "python-env: pip failed (attempt $attempt)" >&2
    sleep 10
  done
fi
[ -f "$dir/.complete" ] || { echo "python-env: could not install ${PINS[*]}" >&2; exit 1; }
echo "$dir/bin/python"
