"""pbc.onnx.compile against onnxruntime on models exported from PyTorch
(random weights, fresh random inputs): ResNet-18 (torchvision) and a
BERT-base encoder layer (hidden 768, 12 heads, GELU, post-norm, seq 128)
with a dynamic batch fixed through `shapes`; a small CNN whose dynamic
batch stays (called at several sizes); an int8 QDQ linear layer
(per-channel weight scales); the command-line route
(python -m pbc.onnx) writes text pbc compiles. Runs in the frontends
Python environment (tools/python-env.sh)."""

import os
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnxruntime as ort
import torch

import pbc.onnx


def seed():
    s = int(os.environ.get("PBC_TEST_SEED", time.time_ns() % 2**31))
    print("seed %d (PBC_TEST_SEED=%d reproduces)" % (s, s))
    torch.manual_seed(s)
    np.random.seed(s % 2**32)


def close(got, want, what, rtol=1e-4):
    assert got.shape == want.shape, (what, got.shape, want.shape)
    assert np.isfinite(got).all(), "%s: non-finite elements" % what
    scale, err = np.abs(want).max(), np.abs(got - want).max()
    print("%s: max abs err %.3g (output magnitude %.3g)" % (what, err, scale))
    assert err <= rtol * scale + 1e-6, "%s: error %.3g" % (what, err)


def export(model, x, path, dynamic_batch=False):
    kw = {"dynamic_axes": {"x": {0: "batch"}}} if dynamic_batch else {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model.eval(), (x,), path, input_names=["x"], output_names=["y"],
                          opset_version=17, dynamo=False, **kw)


def reference(path, x):
    s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def test_resnet18(tmp):
    import torchvision
    m = torchvision.models.resnet18()
    torch.nn.init.normal_(m.fc.weight, std=0.05)
    path = os.path.join(tmp, "resnet18.onnx")
    export(m, torch.randn(1, 3, 224, 224), path)
    model = pbc.onnx.compile(path)
    assert "linalg.conv_2d_nchw_fchw" in model.mlir
    x = np.random.randn(1, 3, 224, 224).astype(np.float32)
    close(model(x)[0], reference(path, x), "resnet18")
    close(model.run(["y"], {"x": x})[0], reference(path, x), "resnet18 via run()")


class BertLayer(torch.nn.Module):
    """One BERT encoder layer, written out (HF BertLayer's computation)."""

    def __init__(self, d=768, heads=12, ff=3072):
        super().__init__()
        self.heads = heads
        self.q, self.k, self.v, self.o = (torch.nn.Linear(d, d) for _ in range(4))
        self.ln1, self.ln2 = torch.nn.LayerNorm(d, eps=1e-12), torch.nn.LayerNorm(d, eps=1e-12)
        self.fc1, self.fc2 = torch.nn.Linear(d, ff), torch.nn.Linear(ff, d)
        for ln in (self.ln1, self.ln2):
            torch.nn.init.uniform_(ln.weight, 0.5, 1.5)
            torch.nn.init.normal_(ln.bias, std=0.1)

    def forward(self, x):
        b, n, d = x.shape
        split = lambda t: t.view(b, n, self.heads, d // self.heads).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1)
        o = (att @ v).transpose(1, 2).reshape(b, n, d)
        x = self.ln1(x + self.o(o))
        return self.ln2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


def test_bert_layer(tmp):
    path = os.path.join(tmp, "bert_layer.onnx")
    export(BertLayer(), torch.randn(2, 128, 768), path, dynamic_batch=True)
    model = pbc.onnx.compile(path, shapes={"x": (1, 128, 768)})
    x = np.random.randn(1, 128, 768).astype(np.float32)
    close(model(x)[0], reference(path, x), "BERT layer")
    # The batch left symbolic: one compile for every batch (the rows of
    # batch x sequence merged for the linear layers; torch-mlir's dynamic
    # broadcasts), each batch against onnxruntime.
    model = pbc.onnx.compile(path)
    assert not model.dynamic, model.refused
    for b in (1, 3):
        x = np.random.randn(b, 128, 768).astype(np.float32)
        close(model(x)[0], reference(path, x), "BERT layer for every batch, at batch %d" % b)
    # Batch and sequence both symbolic: the heads' Reshape takes a shape
    # tensor of the sizes, static once they are fixed.
    path = os.path.join(tmp, "bert_layer_dynamic.onnx")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(BertLayer().eval(), (torch.randn(2, 16, 768),), path, input_names=["x"],
                          output_names=["y"], opset_version=17, dynamo=False,
                          dynamic_axes={"x": {0: "batch", 1: "seq"}})
    # The sequence does not separate over the batch: one compile with both
    # sizes as symbols (s0 x s1 x 768), nothing said, each size against
    # onnxruntime, a sequence of 1 among them.
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model = pbc.onnx.compile(path)
        for b, n in ((1, 7), (2, 33), (1, 1)):
            x = np.random.randn(b, n, 768).astype(np.float32)
            close(model(x)[0], reference(path, x), "BERT layer at batch %d, sequence %d" % (b, n))
    told = [str(w.message) for w in said if "pbc:" in str(w.message)]
    assert not told and not model.dynamic and not model.sized, (told, model.refused)
    assert model.entry.args[0][1] == (-2, -3, 768), model.entry.args


def test_symbolic_bound(tmp):
    """A program that slices a 512-entry table by its sequence compiles
    once with the sequence a symbol of at most 512: called at 5 and 512
    against numpy, and at 513 refused with a TypeError (not the trap the
    raw function would take)."""
    from pbc.arrays import ArrayEntry
    text = """func.func @f(%ids: tensor<1x?xi64>) -> tensor<1x?xi64> {
  %c1 = arith.constant 1 : index
  %table = arith.constant dense<7> : tensor<1x512xi64>
  %n = tensor.dim %ids, %c1 : tensor<1x?xi64>
  %s = tensor.extract_slice %table[0, 0] [1, %n] [1, 1] : tensor<1x512xi64> to tensor<1x?xi64>
  %e = tensor.empty(%n) : tensor<1x?xi64>
  %r = linalg.add ins(%s, %ids : tensor<1x?xi64>, tensor<1x?xi64>) outs(%e : tensor<1x?xi64>) -> tensor<1x?xi64>
  return %r : tensor<1x?xi64>
}
"""
    e = ArrayEntry(text, "bounded")
    assert e.entry.args[0][1] == (1, -2) and e.entry.symbol_max == {-2: 512}, \
        (e.entry.args, e.entry.symbol_max)
    for n in (5, 512):
        x = np.random.randint(-1000, 1000, (1, n)).astype(np.int64)
        assert (e(x)[0] == x + 7).all(), "symbolic bounded program at %d" % n
    try:
        e(np.zeros((1, 513), np.int64))
    except TypeError as err:
        assert "1 to 512" in str(err), err
    else:
        raise AssertionError("a sequence past the table was taken")


def qdq_linear(path, m, k, n, u8=False):
    """x -> QuantizeLinear -> DequantizeLinear (per tensor, symmetric; u8:
    u8 with zero point 128, as onnxruntime's quantizer writes activations);
    an i8 weight -> DequantizeLinear per output channel; MatMul; + bias: the
    QDQ form quantization tools write (a weight-and-activation int8 linear)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    w = np.random.randint(-127, 128, (k, n)).astype(np.int8)
    inits = [numpy_helper.from_array(w, "w_q"),
             numpy_helper.from_array((np.random.rand(n) * 0.02 + 0.005).astype(np.float32), "w_s"),
             numpy_helper.from_array(np.zeros(n, np.int8), "w_zp"),
             numpy_helper.from_array(np.array(0.05, np.float32), "x_s"),
             numpy_helper.from_array(np.array(128, np.uint8) if u8 else np.array(0, np.int8),
                                     "x_zp"),
             numpy_helper.from_array(np.random.randn(n).astype(np.float32), "bias")]
    nodes = [helper.make_node("QuantizeLinear", ["x", "x_s", "x_zp"], ["x_q"]),
             helper.make_node("DequantizeLinear", ["x_q", "x_s", "x_zp"], ["x_dq"]),
             helper.make_node("DequantizeLinear", ["w_q", "w_s", "w_zp"], ["w_dq"], axis=1),
             helper.make_node("MatMul", ["x_dq", "w_dq"], ["mm"]),
             helper.make_node("Add", ["mm", "bias"], ["y"])]
    g = helper.make_graph(nodes, "qdq_linear",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [m, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [m, n])], inits)
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), path)


def test_qdq_linear(tmp):
    # pbc runs the float matmul of dequantized 8-bit tensors as an integer
    # matmul (pbc-quantized-matmul), on vpdpbusd where the CPU has AVX-512
    # VNNI; u8 activations with a zero point as well.
    for u8 in (False, True):
        path = os.path.join(tmp, "qdq_linear.onnx")
        qdq_linear(path, 64, 256, 96, u8)
        model = pbc.onnx.compile(path)
        x = (np.random.randn(64, 256) * 3).astype(np.float32)
        close(model(x)[0], reference(path, x),
              "QDQ linear (per-channel int8 weights, %s activations)" % ("u8" if u8 else "s8"))


def test_command_line(tmp):
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                            torch.nn.Linear(8, 5))
    path = os.path.join(tmp, "small.onnx")
    export(m, torch.randn(1, 3, 16, 16), path, dynamic_batch=True)
    out = os.path.join(tmp, "small.mlir")
    subprocess.run([sys.executable, "-m", "pbc.onnx", path, "--shape", "x=3x3x16x16",
                    "-o", out], check=True)
    pbc_bin = os.environ.get("PBC_DRIVER", "pbc")
    plugins = ["--plugin-dir=" + os.environ["PBC_PLUGIN_DIR"]] if "PBC_PLUGIN_DIR" in os.environ else []
    r = subprocess.run([pbc_bin] + plugins + ["--run=1", "--check", out], capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr
    print("pbc --run --check on the command-line route: ok")


def test_dynamic_batch(tmp):
    """A model exported with a symbolic batch keeps it: compiled once for
    every batch (each element computed on its own: pbc's batch loop), called
    at several batch sizes, each against onnxruntime at that size, with no
    compile per size and nothing said; the command-line route without
    --shape gives pbc a dynamic program, which pbc --run draws a size for."""
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.ReLU(),
                            torch.nn.Flatten(), torch.nn.Linear(8 * 10 * 10, 5))
    path = os.path.join(tmp, "dyn.onnx")
    export(m, torch.randn(2, 3, 10, 10), path, dynamic_batch=True)
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model = pbc.onnx.compile(path)
        for b in (1, 3, 7, 3, 16):
            x = np.random.randn(b, 3, 10, 10).astype(np.float32)
            close(model(x)[0], reference(path, x), "dynamic-batch ONNX at batch %d" % b)
    told = [w for w in said if "dynamic sizes" in str(w.message)]
    assert not told and not model.dynamic and not model.sized, [str(w.message) for w in said]
    assert model.entry.args[0][1][0] == -1, model.entry.args  # the batch: any size
    out = os.path.join(tmp, "dyn.mlir")
    subprocess.run([sys.executable, "-m", "pbc.onnx", path, "-o", out], check=True)
    assert "tensor<?x3x10x10xf32>" in open(out).read()
    pbc_bin = os.environ.get("PBC_DRIVER", "pbc")
    plugins = ["--plugin-dir=" + os.environ["PBC_PLUGIN_DIR"]] if "PBC_PLUGIN_DIR" in os.environ else []
    r = subprocess.run([pbc_bin] + plugins + ["--run=1", "--check", out], capture_output=True,
                       text=True)
    assert r.returncode == 0 and "sizes drawn as" in r.stderr, r.stderr


def test_dynamic_sequence_reimported(tmp):
    """A model torch-mlir cannot lower with its symbolic sequence (GPT-2's
    attention reshapes, one small layer from its config): imported again
    per input shape with the size fixed, said once, each size against
    onnxruntime."""
    import transformers
    cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=100, n_positions=64)

    class LastHiddenState(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.m = transformers.GPT2Model(cfg)

        def forward(self, ids):
            return self.m(ids).last_hidden_state
    path = os.path.join(tmp, "gpt2_small.onnx")
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(LastHiddenState().eval(), (torch.randint(0, 100, (1, 8)),), path,
                          opset_version=17, dynamo=False, input_names=["x"], output_names=["y"],
                          dynamic_axes={"x": {1: "n"}})
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        model = pbc.onnx.compile(path)
        for n in (3, 11, 3):
            x = np.random.randint(0, 100, (1, n)).astype(np.int64)
            s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            close(model(x)[0], s.run(None, {"x": x})[0], "GPT-2 layer at sequence %d" % n)
    told = [str(w.message) for w in said if "pbc:" in str(w.message)]
    assert len(told) == 1, told


if __name__ == "__main__":
    seed()
    with tempfile.TemporaryDirectory() as tmp:
        for name, fn in list(globals().items()):
            if name.startswith("test_"):
                print("--", name)
                fn(tmp)
    print("PASS")
