"""The JAX and ONNX routes against each framework's own compiler, in one
process: pbc.jax.jit against jax.jit (XLA:CPU) on the ResNet-style CNN and
the ViT-style block of tests/frontends/test_jax.py, and pbc.onnx against
onnxruntime (CPU provider, all graph optimizations, 2 intra-op threads)
on ResNet-18 and a BERT-base layer exported from PyTorch. Interleaved
rounds, medians; ratio = peer's time / pbc's (> 1: pbc faster).

  PY=$(tools/python-env.sh | tail -1)
  OMP_NUM_THREADS=2 LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5 \\
    PYTHONPATH=tools/torch:tests/frontends:tests/torch $PY tools/bench/bench_frontends.py
XLA is given the same two cores (taskset of this machine: 2 vCPUs)."""

import argparse
import os
import statistics
import tempfile
import time


def timed(f, runs):
    f()
    ts = []
    for _ in range(runs):
        t = time.perf_counter()
        f()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def compare(name, ours, peer, rounds, runs, peer_name):
    a, b = [], []
    for _ in range(rounds):
        a.append(timed(ours, runs))
        b.append(timed(peer, runs))
    pa, pb = statistics.median(a), statistics.median(b)
    print("%-22s pbc %8.2f ms   %-12s %8.2f ms   ratio %.2f" % (name, pa, peer_name, pb, pb / pa),
          flush=True)


def main():
    ap = argparse.ArgumentParser(allow_abbrev=False, description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=10)
    a = ap.parse_args()

    import jax
    import numpy as np
    import pbc.jax as pjax
    import test_jax as tj
    k1, k2, k3, k4 = jax.random.split(jax.random.PRNGKey(0), 4)
    params, x = tj.cnn_params(k1, widths=(64, 128)), jax.random.normal(k2, (1, 112, 112, 3))
    ours, xla = pjax.jit(tj.cnn), jax.jit(tj.cnn)
    compare("jax cnn 112x112", lambda: ours(params, x).block_until_ready(),
            lambda: xla(params, x).block_until_ready(), a.rounds, a.runs, "jax.jit")
    vp, vx = tj.vit_params(k3, 768, 3072), jax.random.normal(k4, (1, 197, 768))
    ours = pjax.jit(tj.vit_block, static_argnums=2)
    xla = jax.jit(tj.vit_block, static_argnums=2)
    compare("jax vit block 197x768", lambda: ours(vp, vx, 12).block_until_ready(),
            lambda: xla(vp, vx, 12).block_until_ready(), a.rounds, a.runs, "jax.jit")

    import onnxruntime as ort
    import torch
    import torchvision
    import pbc.onnx
    import test_onnx as to
    opts = ort.SessionOptions()
    opts.intra_op_num_threads, opts.inter_op_num_threads = 2, 1
    with tempfile.TemporaryDirectory() as tmp:
        cases = [("onnx resnet18", torchvision.models.resnet18(), (1, 3, 224, 224)),
                 ("onnx bert layer", to.BertLayer(), (1, 128, 768))]
        for name, m, shape in cases:
            path = os.path.join(tmp, name.replace(" ", "_") + ".onnx")
            to.export(m, torch.randn(*shape), path)
            ours = pbc.onnx.compile(path)
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            xin = np.random.randn(*shape).astype(np.float32)
            compare(name, lambda: ours(xin), lambda: sess.run(None, {"x": xin}),
                    a.rounds, a.runs, "onnxruntime")


if __name__ == "__main__":
    main()
