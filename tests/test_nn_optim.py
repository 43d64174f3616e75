"""Module discovery and optimizers, checked against PyTorch with the same init and data."""
import numpy as np
import pytest

import burn
import burn.nn.functional as F

torch = pytest.importorskip("torch")

AD = burn.Device.flex().autodiff()


def _mlp(seed=0):
    burn.Device.flex().seed(seed)
    return burn.nn.Sequential(burn.nn.Linear(5, 7, device=AD), burn.nn.ReLU(), burn.nn.Linear(7, 3, device=AD))


def _torch_copy(model):
    lin1, lin2 = model.layers[0], model.layers[2]
    t = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.ReLU(), torch.nn.Linear(7, 3)).double()
    with torch.no_grad():
        for tl, bl in ((t[0], lin1), (t[2], lin2)):
            tl.weight.copy_(torch.from_numpy(bl.weight.numpy().T.astype(np.float64)))   # burn: [d_in, d_out]
            tl.bias.copy_(torch.from_numpy(bl.bias.numpy().astype(np.float64)))
    return t


@pytest.mark.parametrize("name,kwargs", [
    ("SGD", dict(lr=0.1)),
    ("SGD", dict(lr=0.05, momentum=0.9)),
    ("SGD", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("Adam", dict(lr=0.01)),
    ("Adam", dict(lr=0.01, betas=(0.8, 0.99), weight_decay=0.1)),
    ("AdamW", dict(lr=0.01, weight_decay=0.1)),
])
def test_optimizer_trajectory_matches_torch(name, kwargs):
    model = _mlp()
    tmodel = _torch_copy(model)
    opt = getattr(burn.optim, name)(model, **kwargs)
    topt = getattr(torch.optim, name)(tmodel.parameters(), **kwargs)
    rng = np.random.default_rng(1)
    for _ in range(5):
        x = rng.standard_normal((8, 5)).astype(np.float32)
        y = rng.integers(0, 3, 8)
        loss = F.cross_entropy(model(burn.tensor(x, device=AD)), burn.tensor(y, device=AD))
        opt.step(loss.backward())
        topt.zero_grad()
        tl = torch.nn.functional.cross_entropy(tmodel(torch.from_numpy(x).double()), torch.from_numpy(y))
        tl.backward()
        topt.step()
        assert abs(loss.item() - tl.item()) < 1e-4
    np.testing.assert_allclose(model.layers[0].weight.numpy(), tmodel[0].weight.detach().numpy().T, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(model.layers[2].bias.numpy(), tmodel[2].bias.detach().numpy(), rtol=1e-4, atol=1e-5)


def test_frozen_parameters_stay_listed_but_get_no_grad_and_no_update():
    model = _mlp()
    model.layers[0].freeze()
    before = model.layers[0].weight.numpy().copy()
    assert len(model.parameters()) == 4 and "layers.0.weight" in model.state_dict()
    loss = model(burn.ones((2, 5), device=AD)).sum()
    grads = loss.backward()
    assert model.layers[0].weight.grad(grads) is None
    assert model.layers[2].weight.grad(grads) is not None
    burn.optim.SGD(model, lr=1.0).step(grads)
    np.testing.assert_array_equal(model.layers[0].weight.numpy(), before)


def test_a_loss_read_after_the_step_shows_the_pre_step_value():
    model = _mlp()
    x = burn.ones((2, 5), device=AD)
    with burn.no_grad():
        expected = model(x).sum().item()
    loss = model(x).sum()           # lazily pending
    grads = loss.backward()
    burn.optim.SGD(model, lr=1.0).step(grads)
    assert loss.item() == pytest.approx(expected, rel=1e-6)


def test_named_parameters_paths_state_dict_round_trip_and_mismatch_errors():
    model = _mlp()
    names = [n for n, _ in model.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.2.weight", "layers.2.bias"]
    other = _mlp(seed=5)
    other.load_state_dict({k: v.numpy() for k, v in model.state_dict().items()})
    for (_, a), (_, b) in zip(model.named_parameters(), other.named_parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    bad = {k: v.numpy() for k, v in model.state_dict().items()}
    bad["layers.0.weight"] = np.zeros((2, 2), np.float32)
    del bad["layers.2.bias"]
    bad["extra"] = np.zeros(1)
    with pytest.raises(burn.BurnError) as e:
        other.load_state_dict(bad)
    msg = str(e.value)
    assert "layers.0.weight" in msg and "missing: layers.2.bias" in msg and "unexpected: extra" in msg


def test_to_device_makes_parameters_trainable_on_autodiff_devices():
    m = burn.nn.Linear(3, 2, device=burn.Device.flex())
    assert not m.weight.requires_grad
    m.to_device(AD)
    assert m.weight.requires_grad and isinstance(m.weight, burn.nn.Parameter)
    assert "Linear(d_in=3, d_out=2, bias=True)" in repr(burn.nn.Sequential(m))
