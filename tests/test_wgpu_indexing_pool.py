"""Native wgpu kernels that replaced the host fallbacks: advanced indexing (index, its
gradient index_add, index_put) against numpy, and max / avg pool2d with their gradients
against torch; no core primitive is registered as a wgpu host fallback any more."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)
import burn.nn.functional as F
from index_keys import KEYS  # noqa: E402  (tests/ is on sys.path under pytest)


def _key(dev, key):
    return tuple(burn.tensor(k, device=dev) if isinstance(k, np.ndarray) else k for k in key)


@pytest.mark.parametrize("k", range(len(KEYS)))
def test_index_gradient_and_put_match_numpy(k):
    dev = _wgpu_or_skip()
    ad = dev.autodiff()
    key = KEYS[k]
    rng = np.random.default_rng(k)
    x = rng.standard_normal((4, 5, 6)).astype(np.float32)
    tx = burn.tensor(x, device=ad).require_grad()
    y = tx[_key(ad, key)]
    want = x[key]
    assert y.shape == want.shape
    np.testing.assert_array_equal(y.numpy(), want)
    g = rng.standard_normal(want.shape).astype(np.float32)
    grads = (y * burn.tensor(g, device=ad)).sum().backward()
    z = np.zeros_like(x)
    np.add.at(z, key, g)
    np.testing.assert_allclose(tx.grad(grads).numpy(), z, rtol=1e-6, atol=1e-6)
    v = rng.standard_normal(want.shape[-1:]).astype(np.float32)
    got = burn.index_put(burn.tensor(x, device=dev), _key(dev, key), burn.tensor(v, device=dev))
    w = x.copy()
    w[key] = v
    np.testing.assert_array_equal(got.numpy(), w)


def test_index_on_integers_and_out_of_range_is_an_error():
    dev = _wgpu_or_skip()
    x = np.arange(24, dtype=np.int64).reshape(6, 4)
    idx = np.array([5, -6, 2])
    np.testing.assert_array_equal(burn.tensor(x, device=dev)[burn.tensor(idx, device=dev)].numpy(), x[idx])
    with pytest.raises(burn.BurnError, match="out of bounds"):
        burn.tensor(x, device=dev)[burn.tensor(np.array([6]), device=dev)].numpy()


POOLS = [  # shape, kernel, stride, padding, dilation, count_include_pad, relu (ties)
    ((2, 3, 8, 8), 2, 2, 0, 1, True, True),
    ((1, 2, 7, 9), 3, 2, 1, 1, False, False),
    ((2, 1, 10, 10), 3, 1, 1, 2, True, True),
    ((1, 1, 5, 6), (2, 3), (1, 2), (1, 0), 1, False, True),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
@pytest.mark.parametrize("kind", ["max", "avg"])
def test_pool2d_and_gradients_match_torch(kind, case):
    torch = pytest.importorskip("torch")
    TF = torch.nn.functional
    dev = _wgpu_or_skip().autodiff()
    shape, k, s, p, d, inc, relu = POOLS[case]
    if kind == "avg" and d != 1:
        pytest.skip("avg_pool2d has no dilation")
    rng = np.random.default_rng(case)
    x = rng.standard_normal(shape).astype(np.float32)
    if relu:
        x = np.maximum(x, 0)          # all-zero windows: the gradient goes to the first maximum
    tx = torch.tensor(x, requires_grad=True)
    bx = burn.tensor(x, device=dev).require_grad()
    if kind == "max":
        ty, by = TF.max_pool2d(tx, k, s, p, dilation=d), F.max_pool2d(bx, k, s, p, dilation=d)
    else:
        ty = TF.avg_pool2d(tx, k, s, p, count_include_pad=inc)
        by = F.avg_pool2d(bx, k, s, p, count_include_pad=inc)
    g = rng.standard_normal(tuple(ty.shape)).astype(np.float32)
    (ty * torch.tensor(g)).sum().backward()
    grads = (by * burn.tensor(g, device=dev)).sum().backward()
    np.testing.assert_allclose(by.numpy(), ty.detach().numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(bx.grad(grads).numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-6)


def test_no_core_primitive_is_a_wgpu_host_fallback():
    _wgpu_or_skip()
    from burn.dispatch import registry
    burn.plugins.ensure_loaded()
    ops = ["index", "index_add", "index_put", "max_pool2d", "max_pool2d_grad", "avg_pool2d", "avg_pool2d_grad"]
    for op in ops:
        entries = [e for e in registry.kernel_entries(op, "wgpu")]
        assert entries and not entries[0].host_fallback, op
    fallbacks = [k for (op, b), es in registry.kernels.items() if b == "wgpu" and "::" not in op
                 for k in es if k.host_fallback]
    assert fallbacks == []          # no core primitive runs on the host
