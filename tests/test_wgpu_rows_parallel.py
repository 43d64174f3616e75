"""Row kernels of burn-wgpu (softmax, log_softmax, layer_norm and their gradients) in both
variants: one work-item per row and one work-group per row (a local-memory tree of the row's
max / sums). Each variant is pinned through ``burn_wgpu.kernels.nn.ROWS_FORCE`` and checked
against torch: few long rows and many short ones, lengths that are not multiples of the
work-group size (1, primes), every axis, -inf and NaN rows, float32 and float64, gradients."""
import numpy as np
import pytest

import burn
import burn.nn.functional as F
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)

torch = pytest.importorskip("torch")
lib = pytest.importorskip("burn_wgpu.kernels.nn")

VARIANTS = ["row", "group"]
TOL = {np.float32: 2e-5, np.float64: 1e-11}


@pytest.fixture
def force(monkeypatch):
    def pin(variant):
        monkeypatch.setattr(lib, "ROWS_FORCE", variant)
        lib.LAST_ROWS[0] = None
    return pin


def _check_variant(variant):
    # the kernel that ran is the pinned one (a test of the row kernel would otherwise pass
    # vacuously through another path)
    assert lib.LAST_ROWS[0] == variant


def _softmax_case(fn, tfn, a, gy, axis, dev, variant):
    ad = dev.autodiff()
    x = burn.tensor(a, device=ad).require_grad()
    y = fn(x, axis=axis)
    yv = y.numpy()
    _check_variant(variant)
    lib.LAST_ROWS[0] = None
    grads = (y * burn.tensor(gy, device=ad)).sum().backward()
    gx = x.grad(grads).numpy()
    _check_variant(variant)
    t = torch.tensor(a, requires_grad=True)
    ty = tfn(t, dim=axis)
    (ty * torch.tensor(gy)).sum().backward()
    return yv, gx, ty.detach().numpy(), t.grad.numpy()


SHAPES = [((3, 1000), 1), ((2, 4099), -1), ((5, 1), 1), ((600, 13), 1), ((4, 67, 3), 1), ((131, 2, 5), 0),
          ((2, 3, 257), 2), ((1, 64), 1), ((1, 65), 1), ((7, 127), 0)]


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape,axis", SHAPES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_softmax_family_matches_torch(variant, name, shape, axis, dtype, force):
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(hash((shape, axis)) % 2**32)
    a = (rng.standard_normal(shape) * 4).astype(dtype)
    gy = rng.standard_normal(shape).astype(dtype)
    fn, tfn = (F.softmax, torch.softmax) if name == "softmax" else (F.log_softmax, torch.log_softmax)
    y, gx, ty, tg = _softmax_case(fn, tfn, a, gy, axis, dev, variant)
    assert y.dtype == dtype and gx.dtype == dtype
    tol = TOL[dtype]
    np.testing.assert_allclose(y, ty, rtol=tol, atol=tol)
    np.testing.assert_allclose(gx, tg, rtol=tol * 10, atol=tol * 10)


@pytest.mark.parametrize("variant", VARIANTS)
def test_long_rows_keep_float32_accuracy(variant, force):
    # rows of 200k: the compensated per-item sums (then a tree) keep float32 near float64
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(5)
    a = rng.standard_normal((3, 200_003)).astype(np.float32)
    y = F.log_softmax(burn.tensor(a, device=dev), axis=1).numpy()
    _check_variant(variant)
    a64 = a.astype(np.float64)
    ref = a64 - a64.max(1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(1, keepdims=True))
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    s = F.softmax(burn.tensor(a, device=dev), axis=1).numpy()
    np.testing.assert_allclose(s.astype(np.float64).sum(1), 1.0, rtol=1e-5)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_large_logits_need_the_true_row_max(variant, dtype, force):
    # exp overflows unless the row's max is exact: a wrong lane fold or tree shows as inf / NaN
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(9)
    big = 100.0 if dtype == np.float32 else 800.0
    a = (rng.standard_normal((4, 20_011)) * big).astype(dtype)
    a[1, 17] = a[1].max() + big          # the max in one item's first vector, another's last element
    a[2, -1] = a[2].max() + big
    a64 = a.astype(np.float64)
    ref = a64 - a64.max(1, keepdims=True)
    ref = ref - np.log(np.exp(ref).sum(1, keepdims=True))
    y = F.log_softmax(burn.tensor(a, device=dev), axis=1).numpy()
    _check_variant(variant)
    tol = TOL[dtype] * 10
    np.testing.assert_allclose(y, ref, rtol=tol, atol=tol * big)
    s = F.softmax(burn.tensor(a, device=dev), axis=1).numpy()
    np.testing.assert_allclose(s, np.exp(ref), rtol=tol, atol=tol)


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_inf_and_nan_rows_match_torch(variant, name, force):
    dev = _wgpu_or_skip()
    force(variant)
    # rows of 3001: each item's block (47) runs the vector loop and a scalar remainder
    a = np.random.default_rng(6).standard_normal((7, 3001)).astype(np.float32)
    a[0] = -np.inf                      # all -inf: NaN (as torch)
    a[1, ::7] = -np.inf                 # some -inf: zeros there
    a[2, 1500] = np.nan                 # a NaN anywhere poisons the row: in a vector lane,
    a[4, 3000] = np.nan                 # in the last scalar remainder
    a[5, 46] = np.nan                   # and in the remainder of the first block
    a[3, 1500] = np.inf                 # +inf mid-row: NaN everywhere (inf - inf), as torch
    fn, tfn = (F.softmax, torch.softmax) if name == "softmax" else (F.log_softmax, torch.log_softmax)
    y = fn(burn.tensor(a, device=dev), axis=1).numpy()
    _check_variant(variant)
    ty = tfn(torch.tensor(a), dim=1).numpy()
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ty))
    np.testing.assert_allclose(y, ty, rtol=2e-5, atol=2e-5)


def _ln_torch(a, w, b, gy, eps):
    t, tw, tb = (torch.tensor(v, requires_grad=True) for v in (a, w, b))
    ty = torch.nn.functional.layer_norm(t, (a.shape[-1],), tw, tb, eps)
    (ty * torch.tensor(gy)).sum().backward()
    return ty.detach().numpy(), t.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("shape", [(3, 1000), (2, 4099), (4, 1), (600, 13), (2, 3, 257), (1, 65)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_layer_norm_and_gradients_match_torch(variant, shape, dtype, force):
    dev = _wgpu_or_skip()
    force(variant)
    rng = np.random.default_rng(sum(shape))
    # a large mean: the two-pass variance must not cancel
    a = (rng.standard_normal(shape) * 3 + 50).astype(dtype)
    w = rng.standard_normal(shape[-1]).astype(dtype)
    b = rng.standard_normal(shape[-1]).astype(dtype)
    gy = rng.standard_normal(shape).astype(dtype)
    ad = dev.autodiff()
    x, xw, xb = (burn.tensor(v, device=ad).require_grad() for v in (a, w, b))
    y = F.layer_norm(x, (shape[-1],), xw, xb, eps=1e-5)
    yv = y.numpy()
    _check_variant(variant)
    lib.LAST_ROWS[0] = None
    grads = (y * burn.tensor(gy, device=ad)).sum().backward()
    gx, gw, gb = (t.grad(grads).numpy() for t in (x, xw, xb))
    _check_variant(variant)
    ty, tg, tgw, tgb = _ln_torch(a, w, b, gy, 1e-5)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    np.testing.assert_allclose(yv, ty, rtol=tol, atol=tol)
    np.testing.assert_allclose(gx, tg, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(gw, tgw, rtol=tol * 10, atol=tol * 10)
    np.testing.assert_allclose(gb, tgb, rtol=tol * 10, atol=tol * 10)


def test_selection_picks_group_for_few_long_rows_and_row_for_many_short(force):
    dev = _wgpu_or_skip()
    force(None)
    rng = np.random.default_rng(8)
    few = rng.standard_normal((4, 5000)).astype(np.float32)
    F.softmax(burn.tensor(few, device=dev), axis=1).numpy()
    assert lib.LAST_ROWS[0] == "group"
    many = rng.standard_normal((4096, 8)).astype(np.float32)
    F.softmax(burn.tensor(many, device=dev), axis=1).numpy()
    assert lib.LAST_ROWS[0] == "row"
    many_long = rng.standard_normal((2048, 1000)).astype(np.float32)
    F.layer_norm(burn.tensor(many_long, device=dev), (1000,), burn.ones((1000,), device=dev),
                 burn.zeros((1000,), device=dev)).numpy()
    assert lib.LAST_ROWS[0] == "group"             # long enough for the group's vector loops
    assert lib.rows_variant(16384, 512, 2) == "row" and lib.rows_variant(8, 1 << 20, 2) == "group"
    assert lib.rows_variant(8, 32, 2) == "row"      # shorter than a work-group
    assert lib.rows_variant(100, 300, 2) == "group"  # too few rows to fill the units
    # the exp kernels' one-item variant sums contiguous rows in vector lanes: up to 4K it wins
    F.softmax(burn.tensor(many_long, device=dev), axis=-1).numpy()
    assert lib.LAST_ROWS[0] == "row"
    F.softmax(burn.tensor(many_long.T.copy(), device=dev), axis=0).numpy()     # strided rows
    assert lib.LAST_ROWS[0] == "group"
    assert lib.rows_variant(2048, 8192, 2, kernel="softmax") == "group"


def test_unknown_forced_variant_is_a_clear_error():
    with pytest.raises(ValueError, match="BURN_WGPU_ROWS"):
        lib.rows_variant(4, 100, 2, force="split")
