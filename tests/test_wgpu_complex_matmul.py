"""Complex matmul on wgpu runs the local-memory tiled kernel (burn_wgpu.reduce_complex,
``matmul_tiled``) and matches numpy on shapes that are not multiples of the tile, batched
and broadcast operands, transposed (strided) views, complex64 and complex128."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)


def _c(rng, shape, dtype):
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def _rel_err(got, want):
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)


@pytest.fixture(params=["tiled", "simple"])
def variant(request, monkeypatch):
    from burn_wgpu import reduce_complex
    monkeypatch.setattr(reduce_complex, "MATMUL", request.param)
    return request.param


@pytest.mark.parametrize("dtype,tol", [(np.complex64, 2e-6), (np.complex128, 1e-13)])
@pytest.mark.parametrize("shapes", [((1, 1), (1, 1)), ((33, 17), (17, 65)), ((70, 40), (40, 3)),
                                    ((2, 3, 31, 45), (45, 9)), ((4, 1, 5, 8), (3, 8, 7)), ((3, 0), (0, 4))])
def test_complex_matmul_matches_numpy(variant, dtype, tol, shapes):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(sum(map(sum, shapes)))
    a, b = _c(rng, shapes[0], dtype), _c(rng, shapes[1], dtype)
    got = (burn.tensor(a, device=dev) @ burn.tensor(b, device=dev)).numpy()
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    assert got.dtype == dtype and got.shape == want.shape
    if want.size and want.any():
        assert _rel_err(got, want) < tol
    else:
        np.testing.assert_array_equal(got, want.astype(dtype))


def test_complex_matmul_reads_transposed_and_sliced_views(variant):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(11)
    a, b = _c(rng, (50, 37), np.complex64), _c(rng, (41, 50), np.complex64)
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    got = (ta.T[3:40] @ tb.T[:, 1:36]).numpy()          # strided rows and columns, offsets
    want = a.T[3:40].astype(np.complex128) @ b.T[:, 1:36]
    assert _rel_err(got, want) < 2e-6


def test_complex_matmul_is_one_tiled_launch():
    dev = _wgpu_or_skip()
    from burn_wgpu import reduce_complex
    assert reduce_complex.MATMUL == "tiled"      # the default
    rng = np.random.default_rng(12)
    ta = burn.tensor(_c(rng, (2, 40, 24), np.complex64), device=dev)
    tb = burn.tensor(_c(rng, (2, 24, 36), np.complex64), device=dev)
    dev.sync()
    stats = dev.backend.stats(dev.index)
    before = stats["launches"]
    (ta @ tb).numpy()
    assert dev.backend.stats(dev.index)["launches"] - before == 1
    assert "matmul_tiled" in reduce_complex.complex_source("complex64")


def test_complex_matmul_gradient_matches_torch():
    dev = _wgpu_or_skip()
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(13)
    a, b = _c(rng, (9, 6), np.complex64), _c(rng, (6, 5), np.complex64)
    ad = dev.autodiff()
    ta, tb = burn.tensor(a, device=ad).require_grad(), burn.tensor(b, device=ad).require_grad()
    grads = burn.real(ta @ tb).sum().backward()
    xa, xb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    torch.real(xa @ xb).sum().backward()
    # torch's complex gradient is the conjugate Wirtinger one; compare up to that convention
    for t, x in ((ta, xa), (tb, xb)):
        g = t.grad(grads).numpy()
        tg = x.grad.numpy()
        assert _rel_err(g, tg) < 1e-5 or _rel_err(np.conj(g), tg) < 1e-5
