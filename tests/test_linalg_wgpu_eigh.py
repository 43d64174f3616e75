"""eigh / eigvalsh on the wgpu backend, both native routes: Householder tridiagonalization +
implicit QL (``tridiag_ql``, N >= ``EIGH_TRIDIAG_MIN``) and cyclic Jacobi (smaller N), each
forced on every size here, against numpy.linalg.eigh (LAPACK): values, vectors up to the sign
rule, A V = V diag(w), orthonormality, the sign convention, UPLO, batching, degenerate, diagonal,
graded and badly scaled spectra, float32 and float64; complex64 / complex128 Hermitian inputs
(``htridiag_ql``) likewise, with the phase rule, no host copy, and gradients vs torch."""
from __future__ import annotations

import numpy as np
import pytest

import burn

L = pytest.importorskip("burn_linalg")


def _strided_batch_matches_each_matrix(g, tol):
    """eigh of a batch taken through a strided slice equals eigh of each matrix alone."""
    w, v = L.eigh(g[::2])
    for i, k in enumerate((0, 2)):
        wi, vi = L.eigh(g[k])
        np.testing.assert_allclose(w.numpy()[i], wi.numpy(), rtol=0, atol=tol * 10)
        np.testing.assert_allclose(v.numpy()[i], vi.numpy(), rtol=0, atol=tol * 100)


# the kernel modules whose thresholds pick the routes
eigh_ops = pytest.importorskip("burn_linalg._wgpu.eigh_ops")
svd_ops = pytest.importorskip("burn_linalg._wgpu.svd_ops")

ROUTES = {"tridiag": 1, "jacobi": 10 ** 9}


@pytest.fixture
def rng():
    return np.random.default_rng(11)


@pytest.fixture(params=sorted(ROUTES))
def route(request, monkeypatch):
    monkeypatch.setattr(eigh_ops, "EIGH_TRIDIAG_MIN", ROUTES[request.param])
    return request.param


def _dtypes(dc):
    return [np.float32] + ([np.float64] if dc.fp64 else [])


def _tol(dt):
    return 5e-6 if dt == np.float32 else 1e-13


def W(x, dev, dt):
    return burn.tensor(np.asarray(x, dtype=dt), device=dev)


def _sym(rng, *shape):
    a = rng.standard_normal(shape)
    return (a + np.swapaxes(a, -1, -2)) / 2


def _transfers(dc):
    return dc.stats.get("host_transfers", 0), dc.stats.get("host_transfer_bytes", 0)


def _check(w, v, a, tol):
    """Ascending values as LAPACK's, orthonormal vectors, A V = V diag(w), the sign convention."""
    w0 = np.linalg.eigvalsh(a)
    scale = max(np.abs(w0).max(), 1e-300)
    np.testing.assert_allclose(w, w0, rtol=0, atol=tol * scale)
    assert np.all(np.diff(w, axis=-1) >= 0)
    n = a.shape[-1]
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(n), v.shape), rtol=0,
                               atol=tol * max(n, 4))
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=0, atol=tol * scale * max(n, 4))
    idx = np.argmax(np.abs(v), axis=-2)
    assert np.all(np.take_along_axis(v, idx[..., None, :], axis=-2) > 0)


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (9, 9), (10, 10), (17, 17), (64, 64), (128, 128),
                                   (200, 200), (2, 3, 17, 17), (4, 33, 33)])

def test_eigh_matches_lapack(wg, rng, route, shape):
    dev, dc = wg
    a = _sym(rng, *shape)
    for dt in _dtypes(dc):
        x = a.astype(dt)
        x64 = x.astype(np.float64)
        tol = _tol(dt)
        n0 = _transfers(dc)
        w, v = L.eigh(W(x, dev, dt))
        wv = L.eigvalsh(W(x, dev, dt))
        w, v, wv = w.numpy(), v.numpy(), wv.numpy()
        assert _transfers(dc) == n0, "copied through the host"
        assert w.dtype == v.dtype == dt and w.shape == shape[:-1] and v.shape == shape
        _check(w, v, x64, tol)
        # random spectra are distinct: the vectors are LAPACK's up to one sign per column
        w0, v0 = np.linalg.eigh(x64)
        s = np.sign(np.sum(v * v0, axis=-2, keepdims=True))
        gap = np.diff(w0, axis=-1).min() if shape[-1] > 1 else 1.0
        np.testing.assert_allclose(v * s, v0, rtol=0, atol=tol * 20 * shape[-1] / min(gap, 1.0))
        np.testing.assert_allclose(wv, w, rtol=0, atol=tol * np.abs(w0).max())


def test_eigh_routes_by_size(wg, rng, monkeypatch):
    """Jacobi below EIGH_TRIDIAG_MIN, tridiag_ql from it (the kernel names launched)."""
    dev, dc = wg
    seen = []
    orig = eigh_ops.kernel
    monkeypatch.setattr(eigh_ops, "kernel", lambda dc_, dt, name: (seen.append(name), orig(dc_, dt, name))[1])
    t = eigh_ops.EIGH_TRIDIAG_MIN
    for n, want in ((t - 1, "jacobi_eigh"), (t, "tridiag_ql")):
        for fn in (lambda x: L.eigh(x)[0], L.eigvalsh):
            seen.clear()
            fn(W(_sym(rng, 2, n, n), dev, np.float32)).numpy()
            assert want in seen and ({"jacobi_eigh", "tridiag_ql"} - {want}).isdisjoint(seen), (n, seen)


def test_eigh_reads_only_the_uplo_triangle(wg, rng, route):
    dev, dc = wg
    a = _sym(rng, 3, 20, 20)
    junk = rng.standard_normal((3, 20, 20)) * 100
    junk[0, 5, 2] = junk[1, 2, 5] = np.nan          # never read
    for dt in _dtypes(dc):
        tol = _tol(dt)
        low, up = np.tril(a) + np.triu(junk, 1), np.triu(a) + np.tril(junk, -1)
        w, v = L.eigh(W(low, dev, dt), UPLO="L")
        _check(w.numpy(), v.numpy(), a, tol)
        w, v = L.eigh(W(up, dev, dt), UPLO="U")
        _check(w.numpy(), v.numpy(), a, tol)
        np.testing.assert_allclose(L.eigvalsh(W(up, dev, dt), UPLO="U").numpy(), np.linalg.eigvalsh(a),
                                   rtol=0, atol=tol * 10 * np.abs(a).max())
        w, v = L.eigh(W(up, dev, dt).mT, UPLO="L")      # a strided view: a^T's lower triangle is a's upper one
        _check(w.numpy(), v.numpy(), a, tol)


def _special(rng, n):
    q, _ = np.linalg.qr(rng.standard_normal((n, n)))
    u = rng.standard_normal(n)
    return {
        "identity": np.eye(n), "zeros": np.zeros((n, n)),
        "diagonal": np.diag(rng.permutation(np.arange(n, dtype=float) - n / 3)),
        "diagonal_repeated": np.diag(np.repeat([2.0, -1.0, 0.5], -(-n // 3))[:n]),
        "rank1_plus_identity": np.eye(n) + np.outer(u, u),
        "repeated": (q * np.repeat([1.0, -3.0, 5.0, 5.0], -(-n // 4))[:n]) @ q.T,
        "graded": (q * np.logspace(-6, 6, n)) @ q.T,
        "graded_diag": np.diag(np.logspace(-8, 8, n)) + 1e-3 * (np.eye(n, k=1) + np.eye(n, k=-1)),
        "tridiagonal": np.diag(np.full(n, 2.0)) - np.diag(np.ones(n - 1), 1) - np.diag(np.ones(n - 1), -1),
        "tiny": _sym(rng, n, n) * 1e-30, "huge": _sym(rng, n, n) * 1e30,
    }


@pytest.mark.parametrize("n", [3, 17, 64, 128])
def test_eigh_degenerate_diagonal_graded_scaled(wg, rng, route, n):
    dev, dc = wg
    for dt in _dtypes(dc):
        tol = _tol(dt)
        for name, a in _special(rng, n).items():
            if dt == np.float32 and name in ("tiny", "huge"):
                a = a * (1e-20 if name == "huge" else 1e20)        # stay inside float32's range
            x = a.astype(dt).astype(np.float64)
            w, v = L.eigh(W(x, dev, dt))
            w, v = w.numpy(), v.numpy()
            try:
                _check(w, v, x, tol)
                np.testing.assert_allclose(L.eigvalsh(W(x, dev, dt)).numpy(), w, rtol=0,
                                           atol=tol * max(np.abs(w).max(), 1e-300))
            except AssertionError as e:
                raise AssertionError(f"{name} n={n} {dt.__name__}: {e}") from None
            if name in ("identity", "diagonal"):        # already diagonal: exact values, unit vectors
                np.testing.assert_array_equal(w, np.sort(np.diag(x)))
                np.testing.assert_allclose(np.abs(v).max(axis=0), 1, rtol=0, atol=tol)
            if name in ("repeated", "rank1_plus_identity"):
                # the eigenspaces (projectors) are unique, the bases are not
                w0, v0 = np.linalg.eigh(x)
                for val in np.unique(np.round(w0, 3)):
                    sel, sel0 = np.abs(w - val) < 1e-3, np.abs(w0 - val) < 1e-3
                    np.testing.assert_allclose(v[:, sel] @ v[:, sel].T, v0[:, sel0] @ v0[:, sel0].T,
                                               rtol=0, atol=tol * 20 * n)


def test_eigh_batched_broadcast_views_and_nan(wg, rng):
    dev, dc = wg
    a = _sym(rng, 3, 24, 24)
    g = W(a, dev, np.float64 if dc.fp64 else np.float32)
    dt = g.numpy().dtype.type
    # a batch taken through a strided slice, and each matrix alone: the same answer
    _strided_batch_matches_each_matrix(g, _tol(dt))
    # a NaN in the read triangle: the sweeps stop at their cap, the result says NaN (no hang)
    bad = a[0].copy()
    bad[7, 3] = np.nan
    assert np.isnan(L.eigvalsh(W(bad, dev, dt)).numpy()).any()


# -- svd: one-sided Jacobi, from min(M, N) >= SVD_PRECOND_MIN started from the Gram matrix's eigh --

SVD_ROUTES = {"preconditioned": 1, "plain": 10 ** 9}


@pytest.fixture(params=sorted(SVD_ROUTES))
def svd_route(request, monkeypatch):
    monkeypatch.setattr(svd_ops, "SVD_PRECOND_MIN", SVD_ROUTES[request.param])
    return request.param


def _check_svd(u, s, vh, a, tol):
    k = min(a.shape[-2:])
    s0 = np.linalg.svd(a, compute_uv=False)
    scale = max(s0.max(initial=0), 1e-300)
    np.testing.assert_allclose(s, s0, rtol=0, atol=tol * scale)
    assert np.all(np.diff(s, axis=-1) <= 0)
    np.testing.assert_allclose((u * s[..., None, :]) @ vh, a, rtol=0, atol=tol * scale * 10)
    for q in (np.swapaxes(u, -1, -2) @ u, vh @ np.swapaxes(vh, -1, -2)):
        np.testing.assert_allclose(q, np.broadcast_to(np.eye(k), q.shape), rtol=0, atol=tol * 10)
    idx = np.argmax(np.abs(u), axis=-2)
    assert np.all(np.take_along_axis(u, idx[..., None, :], axis=-2) > 0)


@pytest.mark.parametrize("shape", [(15, 15), (16, 16), (64, 64), (128, 128), (2, 50, 20), (20, 50), (3, 17, 17)])
def test_svd_matches_lapack(wg, rng, svd_route, shape):
    dev, dc = wg
    a = rng.standard_normal(shape)
    for dt in _dtypes(dc):
        x = a.astype(dt)
        tol = _tol(dt)
        u, s, vh = (t.numpy() for t in L.svd(W(x, dev, dt), full_matrices=False))
        _check_svd(u, s, vh, x.astype(np.float64), tol)
        # distinct singular values: (u_i, v_i) are LAPACK's up to one common sign
        u0, _, vh0 = np.linalg.svd(x.astype(np.float64), full_matrices=False)
        sg = np.sign(np.sum(u * u0, axis=-2))
        np.testing.assert_allclose(u * sg[..., None, :], u0, rtol=0, atol=tol * 2e3)
        np.testing.assert_allclose(vh * sg[..., :, None], vh0, rtol=0, atol=tol * 2e3)
        np.testing.assert_allclose(L.svdvals(W(x, dev, dt)).numpy(), s, rtol=0, atol=tol * s.max())


def test_svd_rank_deficient_and_scaled(wg, rng, svd_route):
    dev, dc = wg
    base = rng.standard_normal((20, 24))
    for dt in _dtypes(dc):
        tol = _tol(dt)
        cases = {"rank3": rng.standard_normal((20, 3)) @ rng.standard_normal((3, 24)), "zeros": np.zeros((20, 24)),
                 "graded": base * np.logspace(-4, 4, 24)}
        for sc in (1e-25, 1e25) + ((1e-200, 1e200) if dt == np.float64 else ()):
            cases[f"x{sc:g}"] = base * sc
        for name, a in cases.items():
            x = a.astype(dt).astype(np.float64)
            u, s, vh = (t.numpy() for t in L.svd(W(x, dev, dt), full_matrices=False))
            s0 = np.linalg.svd(x, compute_uv=False)
            big = max(s0.max(), 1e-300) if name != "zeros" else 1.0
            try:
                np.testing.assert_allclose(s, s0, rtol=0, atol=tol * big * 10)
                np.testing.assert_allclose((u * s[None, :]) @ vh, x, rtol=0, atol=tol * big * 10)
                for q in (u.T @ u, vh @ vh.T):
                    np.testing.assert_allclose(q, np.eye(20), rtol=0, atol=tol * 10)
            except AssertionError as e:
                raise AssertionError(f"{name} {dt.__name__}: {e}") from None


def test_svd_small_singular_values_keep_relative_accuracy(wg, rng, svd_route):
    """A column-graded A = B D (D from 1 to 1e-12): every singular value to ~1e-12 relative, against
    40-digit mpmath (LAPACK in float64 gets ~1e-14 here; a normwise method would lose the small ones)."""
    dev, dc = wg
    if not dc.fp64:
        pytest.skip("needs float64 on the OpenCL device")
    mpmath = pytest.importorskip("mpmath")
    a = rng.standard_normal((24, 24)) * np.logspace(0, -12, 24)
    with mpmath.workdps(40):
        s_ref = np.array(sorted((float(x) for x in mpmath.svd_r(mpmath.matrix(a.tolist()), compute_uv=False)),
                                reverse=True))
    s = L.svdvals(W(a, dev, np.float64)).numpy()
    np.testing.assert_allclose(s, s_ref, rtol=1e-12, atol=0)


# -- complex Hermitian: htridiag_ql (complex Householder, a diagonal phase scaling, the real QL) ----

def _cdtypes(dc):
    return [np.complex64] + ([np.complex128] if dc.fp64 else [])


def _ctol(dt):
    return 5e-6 if dt == np.complex64 else 1e-13


def _herm(rng, *shape):
    a = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    return (a + np.conj(np.swapaxes(a, -1, -2))) / 2


def _unitary(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n)))
    return q * (np.diagonal(r) / np.abs(np.diagonal(r)))


def _phase_rule(v):
    """Each column times the unit phase making its largest-|.| entry (the first of equal ones) real
    positive: the convention the wgpu kernel promises, applied here to LAPACK's vectors."""
    idx = np.argmax(np.abs(v), axis=-2)
    big = np.take_along_axis(v, idx[..., None, :], axis=-2)
    return v * (np.conj(big) / np.abs(big))


def _check_c(w, v, a, tol, phase=True):
    """Ascending real values as LAPACK's, unitary vectors, A V = V diag(w), the phase rule."""
    w0 = np.linalg.eigvalsh(a)
    scale = max(np.abs(w0).max(), 1e-300)
    np.testing.assert_allclose(w, w0, rtol=0, atol=tol * scale * 4)
    assert np.all(np.diff(w, axis=-1) >= 0)
    n = a.shape[-1]
    vh = np.conj(np.swapaxes(v, -1, -2))
    np.testing.assert_allclose(vh @ v, np.broadcast_to(np.eye(n), v.shape), rtol=0, atol=tol * max(n, 4))
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=0, atol=tol * scale * max(n, 4))
    if phase:
        idx = np.argmax(np.abs(v), axis=-2)
        big = np.take_along_axis(v, idx[..., None, :], axis=-2)
        assert np.all(big.imag == 0) and np.all(big.real > 0)


def _run_c(dev, dc, x, **kw):
    """eigh and eigvalsh of the complex x on wgpu; asserts no host copy and the output dtypes."""
    n0 = _transfers(dc)
    w, v = L.eigh(burn.tensor(x, device=dev), **kw)
    wv = L.eigvalsh(burn.tensor(x, device=dev), **kw)
    w, v, wv = w.numpy(), v.numpy(), wv.numpy()
    assert _transfers(dc) == n0, "copied through the host"
    real = np.float32 if x.dtype == np.complex64 else np.float64
    assert w.dtype == wv.dtype == real and v.dtype == x.dtype
    assert w.shape == x.shape[:-1] and v.shape == x.shape
    np.testing.assert_array_equal(w, wv)
    return w, v


@pytest.mark.parametrize("shape", [(1, 1), (2, 2), (3, 3), (9, 9), (10, 10), (17, 17), (64, 64), (2, 3, 17, 17),
                                   (4, 5, 5)])
def test_complex_eigh_matches_lapack(wg, rng, shape):
    dev, dc = wg
    a = _herm(rng, *shape)
    for dt in _cdtypes(dc):
        x = a.astype(dt)
        x128 = x.astype(np.complex128)
        w, v = _run_c(dev, dc, x)
        _check_c(w, v, x128, _ctol(dt))
        # the vectors themselves: LAPACK's under the same phase rule (random spectra: distinct values)
        w0, v0 = np.linalg.eigh(x128)
        gap = np.diff(w0, axis=-1).min(initial=np.inf)
        n = shape[-1]
        np.testing.assert_allclose(v, _phase_rule(v0), rtol=0, atol=_ctol(dt) * n * max(1, 4 / gap))


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_complex_eigh_reads_only_the_uplo_triangle(wg, rng, UPLO):
    dev, dc = wg
    n = 12
    a = _herm(rng, 2, n, n)
    junk = 100 * (rng.standard_normal((2, n, n)) + 1j * rng.standard_normal((2, n, n)))
    other = np.triu(np.ones((n, n)), 1) if UPLO == "L" else np.tril(np.ones((n, n)), -1)
    # junk in the other triangle, and an imaginary part on the diagonal (ignored, as LAPACK's zheevd)
    x = np.where(other.astype(bool), junk, a) + 1j * np.diag(rng.standard_normal(n))
    for dt in _cdtypes(dc):
        xd = x.astype(dt)
        w, v = _run_c(dev, dc, xd, UPLO=UPLO)
        np.testing.assert_allclose(w, np.linalg.eigvalsh(xd.astype(np.complex128), UPLO=UPLO), rtol=0,
                                   atol=_ctol(dt) * 40)
        _check_c(w, v, a.astype(dt).astype(np.complex128), _ctol(dt))


@pytest.mark.parametrize("n", [3, 10, 17, 40])
def test_complex_eigh_repeated_diagonal_and_phase_only(wg, rng, n):
    dev, dc = wg
    u = _unitary(rng, n)
    vals = np.repeat(np.arange(-(n // 3), n - n // 3, 3, dtype=float), 3)[:n]      # each value (up to) 3 times
    s = _sym(rng, n, n)
    ph = np.exp(1j * rng.uniform(-np.pi, np.pi, n))
    tri = np.diag(rng.standard_normal(n)) + np.diag(rng.standard_normal(n - 1), 1)
    tri = tri + np.triu(tri, 1).T
    cases = {"repeated": (u * vals) @ np.conj(u).T,
             "identity": 2.5 * np.eye(n),
             "diagonal": np.diag(rng.standard_normal(n)),
             # a real symmetric S seen through a diagonal unitary: only phases are complex
             "phase_only": (ph[:, None] * s) * np.conj(ph)[None, :],
             "phase_only_tridiagonal": (ph[:, None] * tri) * np.conj(ph)[None, :]}
    for name, a in cases.items():
        for dt in _cdtypes(dc):
            x = a.astype(dt)
            w, v = _run_c(dev, dc, x)
            _check_c(w, v, x.astype(np.complex128), _ctol(dt))
            if name in ("identity", "diagonal"):      # the eigenvectors are unit vectors, exactly
                perm = np.argsort(np.diag(a).real, kind="stable")
                np.testing.assert_array_equal(v, np.eye(n)[:, perm].astype(dt))
            if name.startswith("phase_only"):        # D S D^H: S's eigenvalues
                base = s if name == "phase_only" else tri
                np.testing.assert_allclose(w, np.linalg.eigvalsh(base), rtol=0, atol=_ctol(dt) * 20 * n)


def test_complex_eigh_batched_views_nan_and_host_path_for_large(wg, rng, monkeypatch):
    dev, dc = wg
    dt = np.complex128 if dc.fp64 else np.complex64
    a = _herm(rng, 3, 20, 20).astype(dt)
    g = burn.tensor(a, device=dev)
    _strided_batch_matches_each_matrix(g, _ctol(dt))
    bad = a[0].copy()
    bad[7, 3] = np.nan
    assert np.isnan(L.eigvalsh(burn.tensor(bad, device=dev)).numpy()).any()
    # beyond the kernel's size limit the host path stays, and says so in the transfer counter
    monkeypatch.setattr(eigh_ops, "MAXP", 4)
    n0 = _transfers(dc)
    w, v = L.eigh(burn.tensor(a[0], device=dev))
    w, v = w.numpy(), v.numpy()
    assert _transfers(dc) > n0
    _check_c(w, v, a[0].astype(np.complex128), _ctol(dt), phase=False)   # LAPACK's phases


def test_complex_eigh_grad_on_wgpu_matches_torch(wg, rng):
    """Autodiff is the op-level rule: the gradient of a phase-invariant loss through the native
    kernel equals torch's (complex autograd, dL = Re tr(G^H dZ))."""
    torch = pytest.importorskip("torch")
    dev, dc = wg
    if not dc.fp64:
        pytest.skip("needs complex128 (cl_khr_fp64) for a tight comparison")
    n = 12
    h = _herm(rng, n, n)
    c = rng.standard_normal(n)
    wt = rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))
    ad = dev.autodiff()
    x = burn.tensor(h, device=ad).require_grad()
    w, v = L.eigh(x)
    loss = burn.sum(burn.real(((v * burn.tensor(c, device=ad)) @ burn.conj(v).mT) * burn.tensor(wt, device=ad)))
    loss = loss + burn.sum(w * w)
    n0 = _transfers(dc)
    got = loss.backward().get(x).numpy()
    assert _transfers(dc) == n0, "copied through the host"
    tx = torch.tensor(h, requires_grad=True)
    tw, tv = torch.linalg.eigh(tx)
    tl = torch.sum(torch.real(((tv * torch.as_tensor(c)) @ tv.mH) * torch.as_tensor(wt))) + torch.sum(tw * tw)
    (want,) = torch.autograd.grad(tl, tx)
    herm = lambda g: (g + np.conj(g.T)) / 2   # noqa: E731
    np.testing.assert_allclose(herm(got), herm(want.numpy()), rtol=1e-8, atol=1e-8)
