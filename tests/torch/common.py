"""Shared by the bridge tests: fresh seeds, comparison with eager PyTorch."""

import os
import sys
import time

import torch


def seed():
    s = int(os.environ.get("PBC_TEST_SEED", time.time_ns() % 2**31))
    print("seed %d (PBC_TEST_SEED=%d reproduces)" % (s, s))
    torch.manual_seed(s)
    return s


def close(got, want, what, rtol=1e-4):
    """Every element finite (so written) and within rtol of the output's
    magnitude; prints the error."""
    got, want = got.detach(), want.detach()
    assert got.shape == want.shape, "%s: shape %s, want %s" % (what, got.shape, want.shape)
    assert torch.isfinite(got).all(), "%s: non-finite output elements" % what
    scale = want.abs().max().item()
    err = (got - want).abs().max().item()
    print("%s: max abs err %.3g (output magnitude %.3g)" % (what, err, scale))
    assert err <= rtol * scale + 1e-6, "%s: error %.3g > %.3g" % (what, err, rtol * scale)


def randomize_norms(model):
    """Random batch-norm statistics and affine parameters, so activations
    keep a useful magnitude through deep randomly initialized networks."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.2, 0.2)
            m.running_var.uniform_(0.5, 1.5)
            m.weight.data.uniform_(0.5, 1.5)
            m.bias.data.uniform_(-0.2, 0.2)
    return model


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)
