"""clone, isclose, allclose and topk (issue 17 part 4), each against torch / numpy with the same inputs."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import burn

AD = burn.Device.flex().autodiff()


def test_clone_is_a_copy_that_passes_the_gradient_like_torch():
    x = np.array([1.0, -2.0, 3.0])
    b = burn.tensor(x, device=AD).require_grad()
    t = torch.tensor(x, requires_grad=True)
    bc, tc = b.clone(), t.clone()
    assert bc is not b and burn.clone(b).tolist() == tc.tolist()
    g = (bc * bc * 3).sum().backward()
    (tc * tc * 3).sum().backward()
    np.testing.assert_allclose(b.grad(g).numpy(), t.grad.numpy())
    # a write into the original after the copy does not reach the copy (nor a read of it taken before)
    h = burn.tensor(x)
    hc = h.clone()
    h[0] = 100.0
    h.assign_(h * 2)
    assert hc.tolist() == x.tolist() and h.tolist()[0] == 200.0
    with pytest.raises(TypeError, match="clone"):
        burn.clone(np.ones(2))


@pytest.mark.parametrize("kw", [{}, dict(rtol=0.1), dict(atol=1.0), dict(equal_nan=True), dict(rtol=0.0, atol=0.0)])
def test_isclose_allclose_follow_numpy(kw):
    a = np.array([1.0, 1e10, np.nan, np.inf, -np.inf, np.inf, 0.0, 2.0, 1e-9, np.nan])
    b = np.array([1.0 + 1e-7, 1.0001e10, np.nan, np.inf, np.inf, 1.0, 1e-9, 2.5, 0.0, 1.0])
    got = burn.isclose(burn.tensor(a), burn.tensor(b), **kw)
    assert got.dtype == burn.bool
    np.testing.assert_array_equal(got.numpy(), np.isclose(a, b, **kw))
    np.testing.assert_array_equal(got.numpy(), torch.isclose(torch.tensor(a), torch.tensor(b), **kw).numpy())
    for i in range(len(a)):
        assert burn.allclose(burn.tensor(a[i:]), burn.tensor(b[i:]), **kw) == np.allclose(a[i:], b[i:], **kw)


def test_isclose_broadcasts_takes_numbers_and_ints_and_is_asymmetric_like_numpy():
    a = np.arange(6).reshape(2, 3)
    np.testing.assert_array_equal(burn.isclose(burn.tensor(a), 2).numpy(), np.isclose(a, 2))
    np.testing.assert_array_equal(burn.isclose(burn.tensor(a), burn.tensor([0.0, 1.0, 2.1])).numpy(),
                                  np.isclose(a, [0.0, 1.0, 2.1]))
    # numpy's rule scales the tolerance by |b| only
    x, y = 1.0, 1.0 + 1.5e-5 * 1.0
    assert bool(burn.isclose(burn.tensor([y]), x, rtol=1.4e-5, atol=0).item()) == bool(np.isclose(y, x, rtol=1.4e-5, atol=0))
    assert burn.allclose(burn.tensor([1.0]), burn.tensor([1.0, 1.0 + 1e-9]))
    with pytest.raises(ValueError, match="rtol"):
        burn.isclose(burn.tensor([1.0]), 1.0, rtol=-1)
    with pytest.raises(TypeError, match="isclose"):
        burn.isclose(1.0, 2.0)


@pytest.mark.parametrize("shape, k, axis, largest", [((7,), 3, -1, True), ((4, 9), 4, 1, False), ((5, 3, 4), 2, 0, True),
                                                     ((5, 3, 4), 3, 1, False), ((6,), 6, 0, True), ((6,), 0, 0, True)])
def test_topk_values_indices_and_gradient_match_torch(shape, k, axis, largest):
    rng = np.random.default_rng(3)
    x = rng.permutation(int(np.prod(shape))).reshape(shape).astype(np.float64) * 0.5 - 3   # distinct values
    b = burn.tensor(x, device=AD).require_grad()
    t = torch.tensor(x, requires_grad=True)
    v, i = burn.topk(b, k, axis=axis, largest=largest)
    tv, ti = torch.topk(t, k, dim=axis, largest=largest)
    np.testing.assert_array_equal(v.numpy(), tv.detach().numpy())
    np.testing.assert_array_equal(i.numpy(), ti.numpy())
    assert i.dtype == burn.int64
    w = rng.standard_normal(tv.shape)
    g = (v * burn.tensor(w, device=AD)).sum().backward()
    (tv * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(b.grad(g).numpy(), t.grad.numpy())


def test_topk_nan_counts_as_largest_ints_and_errors():
    x = np.array([1.0, np.nan, 3.0, 2.0])
    v, i = burn.topk(burn.tensor(x), 2)
    tv, ti = torch.topk(torch.tensor(x), 2)
    np.testing.assert_array_equal(v.numpy(), tv.numpy())
    assert i.tolist() == ti.tolist()
    v, i = burn.topk(burn.tensor(x), 2, largest=False)
    assert v.tolist() == [1.0, 2.0] and i.tolist() == [0, 3]
    r = burn.topk(burn.tensor([4, 9, 1]), 2, sorted=False)
    assert r.values.tolist() == [9, 4] and r.indices.tolist() == [1, 0]
    with pytest.raises(burn.ShapeError, match="topk: k=4"):
        burn.topk(burn.tensor([1, 2, 3]), 4)
    with pytest.raises(burn.ShapeError, match="topk"):
        burn.topk(burn.tensor(1.0), 1)
