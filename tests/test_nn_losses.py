"""cross_entropy / nll_loss with PyTorch's options (class weights, ignore_index, label
smoothing, [N, C, d1, ...] and unbatched layouts, probability targets): values and
gradients against torch.nn.functional, on flex and (forward and gradients) on wgpu."""
from __future__ import annotations

import numpy as np
import pytest

import burn
from devices import flex_and_wgpu  # noqa: E402  (tests/ is on sys.path under pytest)

torch = pytest.importorskip("torch")
F = burn.nn.functional
TF = torch.nn.functional


DEVICES = flex_and_wgpu()


def run(dev, burn_fn, torch_fn, x, *consts, tol=1e-9):
    """Value and d(sum(value))/dx, burn on ``dev`` (float64 where it has it) vs torch."""
    ad = dev.autodiff()
    dtype = burn.float64
    if dev.kind == "wgpu" and not getattr(dev, "supports_float64", lambda: True)():
        dtype = burn.float32
    bx = burn.tensor(x, dtype=dtype, device=ad).require_grad()
    bc = [None if c is None else burn.tensor(c, device=ad, dtype=dtype if np.asarray(c).dtype.kind == "f" else None)
          for c in consts]
    tx = torch.tensor(x, requires_grad=True)
    tc = [None if c is None else torch.tensor(c) for c in consts]
    out_b, out_t = burn_fn(bx, *bc), torch_fn(tx, *tc)
    np.testing.assert_allclose(out_b.numpy(), out_t.detach().numpy(), rtol=tol, atol=tol)
    g = out_b.sum().backward().get(bx).numpy()
    (gt,) = torch.autograd.grad(out_t.sum(), tx)
    np.testing.assert_allclose(g, gt.numpy(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.kind)
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("smoothing", [0.0, 0.15])
@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_weights_ignore_index_smoothing(rng, dev, reduction, smoothing, weighted):
    x = rng.standard_normal((7, 5))
    y = rng.integers(0, 5, 7)
    y[[1, 4]] = -100
    w = rng.random(5) + 0.5 if weighted else None
    tol = 1e-9 if dev.kind == "flex" else 1e-5
    run(dev, lambda a, t, wt: F.cross_entropy(a, t, weight=wt, ignore_index=-100, reduction=reduction,
                                              label_smoothing=smoothing),
        lambda a, t, wt: TF.cross_entropy(a, t, weight=wt, ignore_index=-100, reduction=reduction,
                                          label_smoothing=smoothing),
        x, y, w, tol=tol)


@pytest.mark.parametrize("dev", DEVICES, ids=lambda d: d.kind)
@pytest.mark.parametrize("reduction", ["mean", "none"])
def test_cross_entropy_spatial_and_unbatched(rng, dev, reduction):
    tol = 1e-9 if dev.kind == "flex" else 1e-5
    x = rng.standard_normal((2, 4, 3, 5))                 # per-pixel classes, as segmentation
    y = rng.integers(0, 4, (2, 3, 5))
    y[0, 1, 2] = 3
    w = rng.random(4) + 0.5
    run(dev, lambda a, t: F.cross_entropy(a, t, reduction=reduction),
        lambda a, t: TF.cross_entropy(a, t, reduction=reduction), x, y, tol=tol)
    run(dev, lambda a, t, wt: F.cross_entropy(a, t, weight=wt, ignore_index=3, reduction=reduction,
                                              label_smoothing=0.1),
        lambda a, t, wt: TF.cross_entropy(a, t, weight=wt, ignore_index=3, reduction=reduction,
                                          label_smoothing=0.1), x, y, w, tol=tol)
    run(dev, lambda a, t: F.cross_entropy(a, t), lambda a, t: TF.cross_entropy(a, t),
        rng.standard_normal(6), np.array(2), tol=tol)


@pytest.mark.parametrize("weighted", [False, True])
def test_cross_entropy_probability_targets_with_weights(rng, weighted):
    x = rng.standard_normal((4, 3, 2))
    p = rng.random((4, 3, 2))
    p /= p.sum(axis=1, keepdims=True)
    w = rng.random(3) + 0.5 if weighted else None
    run(burn.Device.flex(), lambda a, t, wt: F.cross_entropy(a, t, weight=wt, label_smoothing=0.2),
        lambda a, t, wt: TF.cross_entropy(a, t, weight=wt, label_smoothing=0.2), x, p, w)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss_weights_and_ignore_index(rng, reduction):
    x = rng.standard_normal((6, 4, 3))
    y = rng.integers(0, 4, (6, 3))
    y[2, 0] = -1
    w = rng.random(4) + 0.5
    run(burn.Device.flex(), lambda a, t, wt: F.nll_loss(F.log_softmax(a, axis=1), t, weight=wt, ignore_index=-1,
                                                        reduction=reduction),
        lambda a, t, wt: TF.nll_loss(TF.log_softmax(a, dim=1), t, weight=wt, ignore_index=-1, reduction=reduction),
        x, y, w)


def test_loss_modules_pass_the_options(rng):
    x = rng.standard_normal((5, 3))
    y = np.array([0, 2, -100, 1, 2])
    w = np.array([1.0, 2.0, 0.5])
    got = burn.nn.CrossEntropyLoss(weight=burn.tensor(w, dtype=burn.float64), ignore_index=-100)(
        burn.tensor(x), burn.tensor(y))
    want = torch.nn.CrossEntropyLoss(weight=torch.tensor(w), ignore_index=-100)(torch.tensor(x), torch.tensor(y))
    assert abs(got.item() - want.item()) < 1e-12
    lp = np.log(np.full((5, 3), 1 / 3))
    got = burn.nn.NLLLoss(weight=burn.tensor(w, dtype=burn.float64), ignore_index=-100)(burn.tensor(lp),
                                                                                         burn.tensor(y))
    want = torch.nn.NLLLoss(weight=torch.tensor(w), ignore_index=-100)(torch.tensor(lp), torch.tensor(y))
    assert abs(got.item() - want.item()) < 1e-12


def test_clear_errors_at_the_call():
    x = burn.zeros((4, 3))
    with pytest.raises(burn.ShapeError, match=r"cross_entropy: weight must hold one value per class \(3\)"):
        F.cross_entropy(x, burn.tensor([0, 1, 2, 0]), weight=burn.ones((4,)))
    with pytest.raises(burn.ShapeError, match=r"cross_entropy: expected scores \[N, C\]"):
        F.cross_entropy(x, burn.tensor([0, 1]), ignore_index=-1)
    with pytest.raises(ValueError, match="ignore_index applies to class-index targets"):
        F.cross_entropy(x, burn.zeros((4, 3)), ignore_index=-1)
    with pytest.raises(burn.DTypeError, match="nll_loss: target must hold integer class indices"):
        F.nll_loss(x, burn.zeros((4,)))
    with pytest.raises(ValueError, match="label_smoothing must be in"):
        F.cross_entropy(x, burn.tensor([0, 1, 2, 0]), label_smoothing=1.5)


def test_without_ignore_index_a_negative_target_is_an_error_not_a_dropped_sample():
    # PyTorch silently drops -100 targets by default; burn only does when asked
    with pytest.raises(IndexError, match=r"cross_entropy: target class indices must lie in \[0, 3\)"):
        F.cross_entropy(burn.zeros((2, 3)), burn.tensor([0, -100])).item()


def test_mse_loss_warns_on_broadcast_like_torch_at_the_users_line():
    import warnings
    x, y = burn.ones((4, 1)), burn.zeros((4,))
    for call in (lambda: burn.nn.functional.mse_loss(x, y), lambda: burn.nn.MSELoss()(x, y)):
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always")
            loss = call()
        assert len(seen) == 1 and seen[0].category is UserWarning, [str(w.message) for w in seen]
        assert "(4,)" in str(seen[0].message) and "(4, 1)" in str(seen[0].message)
        assert seen[0].filename == __file__      # the user's line, not burn's
        assert loss.item() == 1.0                 # still broadcast, as torch: (4, 4) of ones
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        burn.nn.functional.mse_loss(burn.ones((4,)), burn.zeros((4,)))
