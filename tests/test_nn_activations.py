"""Activation modules (issue 17 part 4) against torch.nn's: forward and backward on the same inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

AD = burn.Device.flex().autodiff()

CASES = [
    (lambda: burn.nn.Tanh(), lambda: torch.nn.Tanh()),
    (lambda: burn.nn.Sigmoid(), lambda: torch.nn.Sigmoid()),
    (lambda: burn.nn.LeakyReLU(), lambda: torch.nn.LeakyReLU()),
    (lambda: burn.nn.LeakyReLU(0.2), lambda: torch.nn.LeakyReLU(0.2)),
    (lambda: burn.nn.GELU(), lambda: torch.nn.GELU()),
    (lambda: burn.nn.GELU(approximate="tanh"), lambda: torch.nn.GELU(approximate="tanh")),
    (lambda: burn.nn.SiLU(), lambda: torch.nn.SiLU()),
    (lambda: burn.nn.Softmax(), lambda: torch.nn.Softmax(dim=-1)),
    (lambda: burn.nn.Softmax(dim=0), lambda: torch.nn.Softmax(dim=0)),
    (lambda: burn.nn.Softmax(1), lambda: torch.nn.Softmax(1)),
    (lambda: burn.nn.ReLU(), lambda: torch.nn.ReLU()),
]


@pytest.mark.parametrize("i", range(len(CASES)))
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_activation_forward_and_backward_match_torch(i, dtype):
    make_b, make_t = CASES[i]
    rng = np.random.default_rng(i)
    x = (rng.standard_normal((4, 5, 3)) * 3).astype(dtype)
    x[0, 0, 0] = 0.0                       # the kink of the piecewise ones: same one-sided gradient as torch
    w = rng.standard_normal(x.shape).astype(dtype)
    b = burn.tensor(x, device=AD).require_grad()
    t = torch.tensor(x, requires_grad=True)
    yb, yt = make_b()(b), make_t()(t)
    tol = dict(rtol=1e-12, atol=1e-12) if dtype == "float64" else dict(rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(yb.numpy(), yt.detach().numpy(), **tol)
    g = (yb * burn.tensor(w, device=AD)).sum().backward()
    (yt * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(b.grad(g).numpy(), t.grad.numpy(), **tol)


def test_activation_arguments_are_checked_and_shown():
    with pytest.raises(TypeError, match="both axis=1 and dim=0"):
        burn.nn.Softmax(1, dim=0)
    with pytest.raises(ValueError, match="approximate"):
        burn.nn.GELU(approximate="erf")
    assert "negative_slope=0.2" in repr(burn.nn.LeakyReLU(0.2)) and "axis=0" in repr(burn.nn.Softmax(dim=0))
    assert list(burn.nn.Tanh().named_parameters()) == []
    seq = burn.nn.Sequential(burn.nn.Linear(3, 4), burn.nn.GELU("tanh"), burn.nn.Linear(4, 2), burn.nn.Softmax())
    assert np.allclose(seq(burn.ones((2, 3))).sum(axis=-1).numpy(), 1.0)
