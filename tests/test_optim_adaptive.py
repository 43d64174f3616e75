"""RMSprop and Adagrad (issue 17 part 4) against torch.optim: 20 steps with copied weights and data,
parameter groups, and a save/load in the middle that changes nothing."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import burn
import burn.nn.functional as F
from burn.optim import ParamGroup

AD = burn.Device.flex().autodiff()


def _pair(seed=0):
    burn.Device.flex().seed(seed)
    m = burn.nn.Sequential(burn.nn.Linear(5, 7, device=AD, dtype=burn.float64), burn.nn.Tanh(),
                           burn.nn.Linear(7, 3, device=AD, dtype=burn.float64))
    t = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3)).double()
    with torch.no_grad():
        for i in (0, 2):
            t[i].weight.copy_(torch.tensor(m[i].weight.numpy().T))     # burn: [d_in, d_out]
            t[i].bias.copy_(torch.tensor(m[i].bias.numpy()))
    return m, t


def _step(model, opt, tmodel, topt, rng):
    x = rng.standard_normal((8, 5))
    y = rng.integers(0, 3, 8)
    loss = F.cross_entropy(model(burn.tensor(x, device=AD)), burn.tensor(y, device=AD))
    opt.step(loss.backward())
    topt.zero_grad()
    tl = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x)), torch.from_numpy(y))
    tl.backward()
    topt.step()
    return loss.item(), tl.item()


def _assert_same(model, tmodel, tol=1e-9):
    for i in (0, 2):
        np.testing.assert_allclose(model[i].weight.numpy(), tmodel[i].weight.detach().numpy().T, rtol=tol, atol=tol)
        np.testing.assert_allclose(model[i].bias.numpy(), tmodel[i].bias.detach().numpy(), rtol=tol, atol=tol)


CASES = [
    ("RMSprop", {}),
    ("RMSprop", dict(lr=0.005, alpha=0.9, eps=1e-6, weight_decay=0.1)),
    ("RMSprop", dict(lr=0.005, momentum=0.9)),
    ("RMSprop", dict(lr=0.005, momentum=0.5, centered=True, weight_decay=0.01)),
    ("RMSprop", dict(centered=True)),
    ("Adagrad", {}),
    ("Adagrad", dict(lr=0.1, lr_decay=0.05, weight_decay=0.1)),
    ("Adagrad", dict(lr=0.05, initial_accumulator_value=0.5, eps=1e-6)),
]


@pytest.mark.parametrize("name, kw", CASES)
def test_twenty_steps_match_torch(name, kw):
    model, tmodel = _pair()
    opt = getattr(burn.optim, name)(model, **kw)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kw)
    rng = np.random.default_rng(1)
    for _ in range(20):
        lb, lt = _step(model, opt, tmodel, topt, rng)
        assert abs(lb - lt) < 1e-9
    _assert_same(model, tmodel)


@pytest.mark.parametrize("name, kw, override", [("RMSprop", dict(momentum=0.9, lr=0.003), dict(lr=0.02, alpha=0.5)),
                                                ("Adagrad", dict(lr=0.05), dict(lr=0.2, lr_decay=0.1))])
def test_param_groups_match_torch_groups(name, kw, override):
    model, tmodel = _pair(3)
    opt = getattr(burn.optim, name)(model, groups=[(ParamGroup(glob="*.bias"), {**override, "weight_decay": 0.1})],
                                    **kw)
    biases = [tmodel[0].bias, tmodel[2].bias]
    weights = [tmodel[0].weight, tmodel[2].weight]
    topt = getattr(torch.optim, name)([{"params": biases, **override, "weight_decay": 0.1}, {"params": weights}], **kw)
    assert [g["paths"] for g in opt.param_groups] == [["layers.0.bias", "layers.2.bias"],
                                                      ["layers.0.weight", "layers.2.weight"]]
    rng = np.random.default_rng(2)
    for _ in range(20):
        _step(model, opt, tmodel, topt, rng)
    _assert_same(model, tmodel)


@pytest.mark.parametrize("name, kw", [("RMSprop", dict(momentum=0.9, centered=True)), ("Adagrad", dict(lr_decay=0.1))])
def test_save_and_load_midway_continues_exactly(name, kw, tmp_path):
    model, tmodel = _pair(5)
    opt = getattr(burn.optim, name)(model, **kw)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kw)
    rng = np.random.default_rng(4)
    for _ in range(10):
        _step(model, opt, tmodel, topt, rng)
    path = os.path.join(tmp_path, "ckpt.safetensors")
    burn.optim.save(opt, path, model=model)
    model2, _ = _pair(9)                       # other weights: all of them come from the file
    opt2 = getattr(burn.optim, name)(model2, **kw)
    burn.optim.load(opt2, path, model=model2)
    assert opt2.state["layers.0.weight"]["step"] == 10 and opt2.steps == 10
    for _ in range(10):
        _step(model2, opt2, tmodel, topt, rng)
    _assert_same(model2, tmodel)


def test_bad_hyperparameters_are_named():
    w = burn.nn.Parameter(burn.zeros((2,), device=AD))
    with pytest.raises(burn.BurnError, match="RMSprop: alpha must be a number >= 0 in the defaults"):
        burn.optim.RMSprop([w], alpha=-0.1)
    with pytest.raises(burn.BurnError, match="Adagrad: lr_decay must be a number >= 0"):
        burn.optim.Adagrad([w], lr_decay=-1)
    with pytest.raises(burn.BurnError, match="unknown option"):
        burn.optim.Adagrad([w], groups=[(ParamGroup(paths="0"), {"momentum": 0.9})])
