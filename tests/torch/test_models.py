"""A model compiled through the bridge matches eager PyTorch on fresh random
inputs, with no op left to eager. argv[1]: mlp | resnet18 | mobilenet_v2 |
encoder."""

import sys
import warnings

import torch

import pbc
from common import close, randomize_norms, seed


def mlp():
    m = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(),
                            torch.nn.Linear(512, 512), torch.nn.SiLU(),
                            torch.nn.Dropout(0.1), torch.nn.Linear(512, 10))
    return m, torch.randn(16, 256)


def resnet18():
    import torchvision
    return randomize_norms(torchvision.models.resnet18()), torch.randn(1, 3, 224, 224)


def mobilenet_v2():
    import torchvision
    return randomize_norms(torchvision.models.mobilenet_v2()), torch.randn(1, 3, 224, 224)


def encoder():
    """nn.TransformerEncoderLayer with BERT-base shapes, sequence 128."""
    m = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True)
    return m, torch.randn(1, 128, 768)


def main():
    seed()
    name = sys.argv[1]
    model, x = globals()[name]()
    model.eval()
    fast = pbc.jit(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fallback would be an error here
        got = fast(x)
    plan = fast.plan(x)
    assert not plan.fallbacks, plan.fallbacks
    with torch.no_grad():
        want = model(x)
    close(got, want, name)
    # A second call with fresh inputs reuses the compiled plan.
    x2 = torch.randn_like(x)
    close(fast(x2), model(x2).detach(), name + " (second input)")
    assert len(fast.plans) == 1
    print("PASS")


if __name__ == "__main__":
    main()
