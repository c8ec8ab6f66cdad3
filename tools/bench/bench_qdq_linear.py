#!/usr/bin/env python3
"""An int8 linear layer in ONNX's QDQ form (QuantizeLinear on the input,
DequantizeLinear on it and on an i8 weight, MatMul, bias Add: what
quantization tools write), run by pbc (pbc.onnx: torch-mlir's importer,
then pbc-quantized-matmul and pbc-dot-i8) and by onnxruntime, in one
process, rounds alternating; prints medians and onnxruntime's time over
pbc's, after checking that the two agree.

  PBC_LIBPBC=build/bin LD_PRELOAD=/usr/lib/llvm-22/lib/libomp.so.5 \\
    VENV_PYTHON tools/bench/bench_qdq_linear.py [--rounds 5] [--calls 50]

Runs in the frontends environment (tools/python-env.sh: onnx,
onnxruntime, torch-mlir). onnxruntime: default session options (all graph
optimizations), CPU provider, intra-op threads = OMP_NUM_THREADS (default 2).
"""
import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "torch"))

# M x K times K x N; weight scales per tensor or per output channel;
# activations s8 symmetric or u8 with zero point 128 (onnxruntime's
# quantizer's default).
CASES = [(64, 256, 128, False, False), (64, 256, 128, True, False),
         (128, 768, 768, True, False), (128, 768, 3072, True, False),
         (128, 3072, 768, True, False), (128, 768, 768, True, True),
         (128, 768, 3072, True, True)]


def qdq_linear(path, m, k, n, per_channel, rng, u8=False):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = rng.integers(-127, 128, (k, n)).astype(np.int8)
    ws = (rng.random(n) * 0.02 + 0.005).astype(np.float32) if per_channel else np.array(
        0.02, np.float32)
    wz = np.zeros(n, np.int8) if per_channel else np.array(0, np.int8)
    inits = [numpy_helper.from_array(w, "w_q"), numpy_helper.from_array(ws, "w_s"),
             numpy_helper.from_array(wz, "w_zp"),
             numpy_helper.from_array(np.array(0.05, np.float32), "x_s"),
             numpy_helper.from_array(np.array(128, np.uint8) if u8 else np.array(0, np.int8),
                                     "x_zp"),
             numpy_helper.from_array(rng.standard_normal(n).astype(np.float32), "bias")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["x_q"]),
             helper.make_node("DequantizeLinear", ["x_q", "x_s", "x_zp"], ["x_dq"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_zp"], ["w_dq"],
                              **({"axis": 1} if per_channel else {})),
             helper.make_node("MatMul", ["x_dq", "w_dq"], ["mm"]),
             helper.make_node("Add", ["mm", "bias"], ["y"])]
    g = helper.make_graph(nodes, "qdq_linear",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def timed(fn, calls):
    ts = []
    for _ in range(calls):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=50)
    args = p.parse_args()
    import onnxruntime as ort
    import pbc.onnx
    threads = int(os.environ.get("OMP_NUM_THREADS", "2"))
    rng = np.random.default_rng(0)
    print("| M x K x N | weight scales | activations | pbc ms | onnxruntime ms | ort/pbc |")
    print("|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for m, k, n, per_channel, u8 in CASES:
            path = os.path.join(tmp, "q.onnx")
            qdq_linear(path, m, k, n, per_channel, rng, u8)
            model = pbc.onnx.compile(path)
            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
            x = (rng.standard_normal((m, k)) * 3).astype(np.float32)
            got, want = model(x)[0], sess.run(None, {"x": x})[0]
            err = np.abs(got - want).max() / np.abs(want).max()
            if not err <= 1e-4:
                sys.exit("pbc and onnxruntime disagree: relative error %.3g" % err)
            rp, ro = [], []
            for _ in range(args.rounds):
                rp.append(timed(lambda: model(x), args.calls))
                ro.append(timed(lambda: sess.run(None, {"x": x}), args.calls))
            tp, to = np.median(rp) * 1e3, np.median(ro) * 1e3
            print("| %d x %d x %d | %s | %s | %.3f | %.3f | %.2fx |" % (
                m, k, n, "per channel" if per_channel else "per tensor",
                "u8, zero point 128" if u8 else "s8", tp, to, to / tp), flush=True)


if __name__ == "__main__":
    main()
