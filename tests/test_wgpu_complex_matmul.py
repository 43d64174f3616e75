"""Complex matmul on wgpu: complex64 by default as ONE real matmul of the library
(burn_wgpu.kernels.linear ``_matmul_real``: A read as real [M, 2K], B expanded to the real
[2K, 2N] matrix of blocks [[br, bi], [-bi, br]], the real [M, 2N] result read as C), the
4-multiplication products of numpy / BLAS; complex128 by default with the tiled kernel. Every method ("real", "gauss" = 3 real products, "tiled", "simple") matches numpy
on shapes that are not multiples of any tile, K = 1, empty shapes, batched and broadcast
operands, transposed (strided) and offset views, complex64 and complex128; NaN / inf reach the
same elements of C as in numpy; the default keeps each part's accuracy where "gauss" loses the
smaller part."""
import numpy as np
import pytest

import burn
from devices import wgpu_or_skip as _wgpu_or_skip  # noqa: E402  (tests/ is on sys.path)

TOL = {np.complex64: 2e-6, np.complex128: 1e-13}


def _c(rng, shape, dtype, s_re=1.0, s_im=1.0):
    return (s_re * rng.standard_normal(shape) + 1j * s_im * rng.standard_normal(shape)).astype(dtype)


def _rel_err(got, want):
    return np.abs(got - want).max() / max(np.abs(want).max(), 1e-30)


def _part_errs(got, want):
    """The error of each part relative to that part's largest value (numpy's 4-multiplication
    products keep both small; a 3-multiplication one loses the smaller part)."""
    return (_rel_err(got.real, want.real), _rel_err(got.imag, want.imag))


@pytest.fixture(params=["real", "gauss", "tiled", "simple"])
def variant(request, monkeypatch):
    from burn_wgpu.kernels import linear as wlinear
    monkeypatch.setattr(wlinear, "COMPLEX_MATMUL", request.param)
    return request.param


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("shapes", [((1, 1), (1, 1)), ((33, 17), (17, 65)), ((70, 40), (40, 3)),
                                    ((5, 1), (1, 7)), ((1, 9), (9, 1)), ((2, 3, 31, 45), (45, 9)),
                                    ((31, 45), (2, 45, 9)), ((4, 1, 5, 8), (3, 8, 7)), ((2, 1, 7, 1), (3, 1, 5)),
                                    ((3, 0), (0, 4)), ((2, 3, 0), (0, 5)), ((0, 5), (5, 3)), ((4, 3), (3, 0)),
                                    ((0, 3, 4), (4, 2))])
def test_complex_matmul_matches_numpy(variant, dtype, shapes):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(sum(map(sum, shapes)))
    a, b = _c(rng, shapes[0], dtype), _c(rng, shapes[1], dtype)
    got = (burn.tensor(a, device=dev) @ burn.tensor(b, device=dev)).numpy()
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    assert got.dtype == dtype and got.shape == want.shape
    if want.size and want.any():
        assert _rel_err(got, want) < TOL[dtype]
    else:       # empty, or K == 0: zeros
        np.testing.assert_array_equal(got, want.astype(dtype))


def test_complex_matmul_reads_transposed_and_sliced_views(variant):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(11)
    a, b = _c(rng, (50, 37), np.complex64), _c(rng, (41, 50), np.complex64)
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    got = (ta.T[3:40] @ tb.T[:, 1:36]).numpy()          # strided rows and columns, offsets
    want = a.T[3:40].astype(np.complex128) @ b.T[:, 1:36]
    assert _rel_err(got, want) < 2e-6
    # an odd offset along rows (A read as reals from element 2 * offset), row-major operands
    got = (ta[1:, 1:] @ tb[:36, 3:40]).numpy()
    assert _rel_err(got, a[1:, 1:].astype(np.complex128) @ b[:36, 3:40]) < 2e-6
    # reversed views (flip) of A's rows, A's columns with B's rows, B's columns
    for fa, fb, na, nb in ((ta.flip(axis=0), tb[:37], a[::-1], b[:37]),
                           (ta.flip(axis=1), tb[:37].flip(axis=0), a[:, ::-1], b[:37][::-1]),
                           (ta, tb[:37].flip(axis=1), a, b[:37, ::-1])):
        assert _rel_err((fa @ fb).numpy(), na.astype(np.complex128) @ nb) < 2e-6


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_matmul_batched_transposed_and_broadcast_views(variant, dtype):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(14)
    a, b = _c(rng, (3, 19, 10), dtype), _c(rng, (13, 19), dtype)
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    # A: batched and transposed (K-stride M); B: transposed, shared by every batch (stride 0)
    got = (ta.mT @ tb.T).numpy()
    want = np.swapaxes(a, -1, -2).astype(np.complex128) @ b.T.astype(np.complex128)
    assert got.shape == (3, 10, 13) and _rel_err(got, want) < TOL[dtype]
    # A broadcast over B's batch, B batched and transposed
    c = _c(rng, (2, 1, 13, 19), dtype)
    got = (tb @ burn.tensor(c, device=dev).mT).numpy()
    want = b.astype(np.complex128) @ np.swapaxes(c, -1, -2).astype(np.complex128)
    assert got.shape == (2, 1, 13, 13) and _rel_err(got, want) < TOL[dtype]


def test_complex_matmul_nan_and_inf_reach_the_elements_numpy_s_do(variant):
    dev = _wgpu_or_skip()
    rng = np.random.default_rng(15)
    a, b = _c(rng, (6, 5), np.complex64), _c(rng, (5, 7), np.complex64)
    a[0, 1] = complex(np.nan, 0)
    a[1, 2] = complex(np.inf, 0)
    a[2, 0] = complex(1, -np.inf)
    b[4, 3] = complex(-np.inf, 2)
    b[2, 5] = complex(0, np.nan)
    got = (burn.tensor(a, device=dev) @ burn.tensor(b, device=dev)).numpy()
    with np.errstate(all="ignore"):
        want = a @ b                                  # BLAS: a non-finite product is nan + nanj
        loop = np.einsum("ik,kj->ij", a, b)           # numpy's own loop: the 4-mult parts
    fin = np.isfinite(want)
    assert 0 < fin.sum() < fin.size
    np.testing.assert_array_equal(np.isfinite(got), fin)
    assert _rel_err(got[fin], want[fin].astype(np.complex128)) < 2e-6
    if variant != "gauss":      # each part NaN / +-inf as numpy's complex loop has it
        for part in (np.real, np.imag):
            np.testing.assert_array_equal(np.isnan(part(got)), np.isnan(part(loop)))
            np.testing.assert_array_equal(np.isposinf(part(got)), np.isposinf(part(loop)))
            np.testing.assert_array_equal(np.isneginf(part(got)), np.isneginf(part(loop)))


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("scales", [(1.0, 1e-4), (1e-4, 1.0)])
def test_complex_matmul_keeps_the_smaller_part_accurate(monkeypatch, dtype, scales):
    """Real-dominant (or imaginary-dominant) operands: the small part of C is a sum of small
    products; the 4-multiplication default computes it as such, the 3-multiplication Gauss form
    as (Ar + Ai)(Br + Bi) - ArBr - AiBi, a difference of large values (measured ~7e-3 off in
    complex64): the part-wise tolerance below catches it."""
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels import linear as wlinear
    monkeypatch.setattr(wlinear, "COMPLEX_MATMUL", "real")     # complex64's default, also for complex128
    rng = np.random.default_rng(16)
    a, b = _c(rng, (96, 128), dtype, *scales), _c(rng, (128, 80), dtype, *scales)
    want = a.astype(np.complex128) @ b.astype(np.complex128)
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    got = (ta @ tb).numpy()
    tol = 5 * TOL[dtype]
    assert max(_part_errs(got, want)) < tol
    monkeypatch.setattr(wlinear, "COMPLEX_MATMUL", "gauss")
    gauss = (ta @ tb).numpy()
    assert _rel_err(gauss, want) < TOL[dtype]               # fine measured on the whole of C ...
    assert max(_part_errs(gauss, want)) > 10 * tol          # ... not part by part


def _launches(dev, fn):
    dev.sync()
    before = dev.backend.stats(dev.index)["launches"]
    fn()
    return dev.backend.stats(dev.index)["launches"] - before


def test_complex_matmul_is_one_real_matmul():
    """complex64's default: the expansion of B, then the real matmul's own launches for
    [M, 2K] @ [2K, 2N] (+1 for the copy of an A that is transposed); complex128's default:
    one tiled launch."""
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels import linear as wlinear
    assert wlinear.COMPLEX_MATMUL == "auto"
    assert wlinear.matmul_method("complex64") == "real"
    assert wlinear.matmul_method("complex128") == "tiled"
    rng = np.random.default_rng(12)
    for M, K, N in ((40, 24, 36), (9, 300, 600)):      # row-major B read in place / packed
        a, b = _c(rng, (2, M, K), np.complex64), _c(rng, (2, K, N), np.complex64)
        ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
        ra = burn.tensor(a.view(np.float32), device=dev)
        rb = burn.tensor(rng.standard_normal((2, 2 * K, 2 * N)).astype(np.float32), device=dev)
        (ta @ tb).numpy(), (ra @ rb).numpy()                       # compiled
        real = _launches(dev, lambda: (ra @ rb).numpy())
        assert _launches(dev, lambda: (ta @ tb).numpy()) == real + 1
        at = burn.tensor(np.ascontiguousarray(np.swapaxes(a, -1, -2)), device=dev).mT
        got = None

        def run():
            nonlocal got
            got = (at @ tb).numpy()
        assert _launches(dev, run) == real + 2
        assert _rel_err(got, a.astype(np.complex128) @ b) < 2e-6
    assert "matmul_expand_b" in wlinear.complex_matmul_source("complex64")
    a, b = _c(rng, (2, 40, 24), np.complex128), _c(rng, (2, 24, 36), np.complex128)
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    (ta @ tb).numpy()
    assert _launches(dev, lambda: (ta @ tb).numpy()) == 1


def test_complex_matmul_unknown_method_names_the_choices(monkeypatch):
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels import linear as wlinear
    monkeypatch.setattr(wlinear, "COMPLEX_MATMUL", "fast")
    x = burn.tensor(np.ones((2, 2), np.complex64), device=dev)
    with pytest.raises(burn.BurnError, match="auto, real, gauss, tiled or simple"):
        (x @ x).numpy()


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


def test_complex_matmul_refuses_an_a_the_real_kernel_cannot_index():
    """A read as reals spans twice its complex extent: past 2**31 reals, 32-bit offsets of the
    real kernel would wrap; a clear error instead (a view with a huge row stride, never read)."""
    dev = _wgpu_or_skip()
    from burn_wgpu.kernels import linear as wlinear
    from burn_wgpu.runtime import context
    from burn_wgpu.native import WTensor, empty
    dc = context(dev.index)
    small = empty(dc, (2, 2), "complex64")
    a = WTensor(dc, small.block, (2, 2), "complex64", (2 ** 30, 1), 0)
    with pytest.raises(burn.BurnError, match="2\\*\\*30 or more complex elements"):
        wlinear.complex_matmul(a, small, (), 0, 0)
    assert wlinear.complex_matmul(small.view((2, 2), (1, 2), 0), small, (), 0, 0).shape == (2, 2)
