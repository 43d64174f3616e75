"""The same program on Device.flex() and Device.wgpu() gives the same results
(float32 tolerance): random element-wise/reduction/movement programs, a model
step with its gradients, and a digits-like MLP training loop on wgpu autodiff."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)
import burn.nn.functional as F


FLEX = burn.Device.flex()


def _program(dev, arrays):
    """A fixed program mixing broadcasting, strided views, fusion, reductions and matmul."""
    a, b, c = (burn.tensor(v, device=dev) for v in arrays)
    t = (a * 1.5 - b.T).tanh() + c                  # transposed operand, broadcast row
    u = t.exp().sum(axis=1, keepdims=True)          # reduction with an element-wise prologue
    v = (t / u) @ a.T                               # matmul with a strided operand
    w = burn.concat([v[:, ::-1], v[::2].repeat(2, axis=0)[: v.shape[0]]], axis=1)
    m = burn.maximum(w, 0.0).mean(axis=0)
    return [t, u, v, w, m, w.argmax(axis=1), burn.cumsum(w, axis=0), burn.pad(w, ((1, 0), (0, 2)), value=-1.0)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_program_matches_flex(seed):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(seed)
    n, k = 6 + seed, 5
    arrays = [rng.standard_normal((n, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32),
              rng.standard_normal((k,)).astype(np.float32)]
    for got, want in zip(_program(dev, arrays), _program(FLEX, arrays)):
        assert got.shape == want.shape and got.dtype is want.dtype
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-6)


def _mlp(device, seed):
    device.inner().seed(seed)
    return burn.nn.Sequential(burn.nn.Linear(16, 32, device=device), burn.nn.ReLU(),
                              burn.nn.Linear(32, 4, device=device))


def test_model_step_and_gradients_match_flex():
    dev = _wgpu_or_skip().autodiff()
    rng = np.random.default_rng(3)
    x = rng.standard_normal((24, 16)).astype(np.float32)
    y = rng.integers(0, 4, 24)
    results = []
    for d in (dev, FLEX.autodiff()):
        model = _mlp(d, 7)
        loss = F.cross_entropy(model(burn.tensor(x, device=d)), burn.tensor(y, device=d))
        grads = loss.backward()
        results.append((loss.item(), [p.grad(grads).numpy() for p in model.parameters()],
                        [p.numpy() for p in model.parameters()]))
    (lw, gw, pw), (lf, gf, pf) = results
    for a, b in zip(pw, pf):
        np.testing.assert_array_equal(a, b)        # same seed, same host RNG: identical init
    assert abs(lw - lf) < 1e-5
    for a, b in zip(gw, gf):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_digits_like_mlp_trains_on_wgpu_autodiff_like_on_flex():
    dev = _wgpu_or_skip().autodiff()
    rng = np.random.default_rng(0)
    centers = rng.standard_normal((4, 16)).astype(np.float32) * 2
    labels = rng.integers(0, 4, 256)
    data = (centers[labels] + rng.standard_normal((256, 16)).astype(np.float32) * 0.5).astype(np.float32)
    curves = []
    for d in (dev, FLEX.autodiff()):
        model = _mlp(d, 1)
        opt = burn.optim.Adam(model.parameters(), lr=1e-2)
        losses = []
        for step in range(30):
            i = (step * 64) % 256
            xb = burn.tensor(data[i:i + 64], device=d)
            yb = burn.tensor(labels[i:i + 64], device=d)
            loss = F.cross_entropy(model(xb), yb)
            opt.step(loss.backward())
            losses.append(loss.item())
        acc = (model(burn.tensor(data, device=d)).argmax(axis=1).numpy() == labels).mean()
        curves.append((losses, acc))
    (lw, accw), (lf, accf) = curves
    assert lw[-1] < 0.3 * lw[0] and accw > 0.9
    np.testing.assert_allclose(lw, lf, rtol=1e-3, atol=1e-4)


def test_cnn_step_matches_flex():
    """conv2d (native im2col + matmul) and its gradients, pooling (native) and a linear head."""
    dev = _wgpu_or_skip().autodiff()
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 1, 12, 12)).astype(np.float32)
    y = rng.integers(0, 3, 4)
    results = []
    for d in (dev, FLEX.autodiff()):
        d.inner().seed(2)
        conv = burn.nn.Conv2d(1, 4, 3, padding=1, device=d)
        head = burn.nn.Linear(4 * 6 * 6, 3, device=d)
        h = F.max_pool2d(conv(burn.tensor(x, device=d)).relu(), 2)
        loss = F.cross_entropy(head(h.reshape((4, -1))), burn.tensor(y, device=d))
        grads = loss.backward()
        results.append((loss.item(), [p.grad(grads).numpy() for p in (conv.weight, conv.bias, head.weight)]))
    (lw, gw), (lf, gf) = results
    assert abs(lw - lf) < 1e-5
    for a, b in zip(gw, gf):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)
