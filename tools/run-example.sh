#!/bin/bash
# Quick start (a): set up, build, compile an example for the cpu target, run it
# on random inputs and check it against the naive reference.
set -euo pipefail
cd "$(dirname "$0")/.."
./setup.sh
tools/build.sh
example=${1:-examples/mlp.mlir}
build/bin/pbc --target=cpu --run=20 --check "$example"
