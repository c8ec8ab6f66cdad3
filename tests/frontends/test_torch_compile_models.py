"""torch.compile(model, backend="pbc") on PyTorch 2.x, whole models against
eager PyTorch: torchvision resnet50, mobilenet_v3_large, efficientnet_b0,
vit_b_16, convnext_tiny, swin_t, and HF transformers' BERT-base and GPT-2
(random weights from their default configs, nothing downloaded). Each must
compile with no op left eager (no pbc fallback, every graph Dynamo hands
over compiled) and match eager within 1e-3 of the output's magnitude.
    test_torch_compile_models.py [MODEL ...]     (default: all)"""

import os
import sys
import time
import warnings

import torch
import torch._dynamo as dynamo

import pbc
from common import randomize_norms  # tests/torch/common.py

TORCHVISION = ["resnet50", "mobilenet_v3_large", "efficientnet_b0", "vit_b_16",
               "convnext_tiny", "swin_t"]
HF = ["bert", "gpt2"]


def build(name):
    if name in TORCHVISION:
        import torchvision
        m = getattr(torchvision.models, name)()
        for mod in m.modules():  # zero-initialized heads (ViT) would hide errors
            if isinstance(mod, torch.nn.Linear) and not mod.weight.abs().max():
                torch.nn.init.normal_(mod.weight, std=0.05)
        randomize_norms(m)  # default statistics let activations vanish
        return m.eval(), (torch.randn(1, 3, 224, 224),), lambda y: y
    import transformers
    cfg = transformers.BertConfig() if name == "bert" else transformers.GPT2Config()
    m = (transformers.BertModel if name == "bert" else transformers.GPT2Model)(cfg).eval()
    return m, (torch.randint(0, cfg.vocab_size, (1, 128)),), lambda y: y.last_hidden_state


def check(name):
    m, inputs, out = build(name)
    plans = []
    dynamo.reset()
    with torch.no_grad():
        want = out(m(*inputs))
        fast = torch.compile(m, backend=pbc.recording_backend(plans))
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = time.time()
            got = out(fast(*inputs))
            t = time.time() - t
    pbc_warnings = [str(x.message) for x in w if "pbc" in str(x.message)]
    assert not pbc_warnings, "%s: %s" % (name, pbc_warnings[:5])
    assert plans and all(hasattr(p, "fallbacks") and not p.fallbacks for p in plans), \
        "%s: a graph was not compiled by pbc (%s)" % (name, plans)
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    print("%-20s %d graph(s), first call %.1f s, max abs err %.3g (output magnitude %.3g)" % (
        name, len(plans), t, err, scale))
    assert torch.isfinite(got).all() and err <= 1e-3 * scale, name


if __name__ == "__main__":
    s = int(os.environ.get("PBC_TEST_SEED", time.time_ns() % 2**31))
    print("seed %d (PBC_TEST_SEED=%d reproduces)" % (s, s))
    torch.manual_seed(s)
    for name in sys.argv[1:] or TORCHVISION + HF:
        check(name)
    print("PASS")
