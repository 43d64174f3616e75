"""burn.linalg on the wgpu backend: native OpenCL kernels (Cholesky, triangular solve,
LU: solve/inv/det/slogdet/lu_factor/lu_solve/lu, Householder QR, diagonal, eigh/eigvalsh (Jacobi below N = 10, else tridiagonal QL),
one-sided Jacobi svd/svdvals, pinv, lstsq) against numpy/scipy, every op against flex,
gradients through wgpu, ``burn info`` and the transfer counter (complex inputs are the
remaining host fallback)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.linalg as sl

import burn

L = pytest.importorskip("burn_linalg")


@pytest.fixture
def rng():
    return np.random.default_rng(7)


def _dtypes(dc):
    return [np.float32] + ([np.float64] if dc.fp64 else [])


def _tol(dt):
    return dict(rtol=2e-4, atol=2e-4) if dt == np.float32 else dict(rtol=1e-10, atol=1e-10)


def W(x, dev, dt):
    return burn.tensor(np.asarray(x, dtype=dt), device=dev)


def spd(rng, *shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


def wellcond(rng, *shape):
    return rng.standard_normal(shape) + 2 * shape[-1] ** 0.5 * np.eye(shape[-1])


def _transfers(dc):
    return dc.stats.get("host_transfers", 0), dc.stats.get("host_transfer_bytes", 0)


# -- native kernels vs numpy / scipy --------------------------------------------------------------

def test_native_cholesky_solve_inv_det(wg, rng):
    dev, dc = wg
    s, a, b = spd(rng, 3, 6, 6), wellcond(rng, 2, 1, 5, 5), rng.standard_normal((3, 5, 2))
    for dt in _dtypes(dc):
        tol = _tol(dt)
        np.testing.assert_allclose(L.cholesky(W(s, dev, dt)).numpy(), np.linalg.cholesky(s), **tol)
        np.testing.assert_allclose(L.cholesky(W(s, dev, dt), upper=True).numpy(),
                                   np.linalg.cholesky(s, upper=True), **tol)
        # batch dims broadcast: (2, 1) with (3,)
        np.testing.assert_allclose(L.solve(W(a, dev, dt), W(b, dev, dt)).numpy(), np.linalg.solve(a, b), **tol)
        np.testing.assert_allclose(L.inv(W(a, dev, dt)).numpy(), np.linalg.inv(a), **tol)
        np.testing.assert_allclose(L.det(W(a, dev, dt)).numpy(), np.linalg.det(a), **tol)
        # pivoting matters: a zero leading entry
        p = np.array([[0.0, 2.0, 1.0], [1.0, 1.0, 0.0], [3.0, 0.0, 1.0]])
        np.testing.assert_allclose(L.det(W(p, dev, dt)).numpy(), np.linalg.det(p), **tol)
        lu_, piv = L.lu_factor(W(a[0, 0], dev, dt))
        lu0, piv0 = sl.lu_factor(a[0, 0])
        np.testing.assert_allclose(lu_.numpy(), lu0, **tol)
        np.testing.assert_array_equal(piv.numpy(), piv0)
        for trans in (0, 1):
            np.testing.assert_allclose(L.lu_solve((lu_, piv), W(b, dev, dt), trans=trans).numpy(),
                                       sl.lu_solve((lu0, piv0), b, trans=trans), **tol)
        sign, logabs = L.slogdet(W(a, dev, dt))
        sign0, logabs0 = np.linalg.slogdet(a)
        np.testing.assert_allclose(sign.numpy(), sign0, **tol)
        np.testing.assert_allclose(logabs.numpy(), logabs0, **tol)
        sign, logabs = L.slogdet(W([[1.0, 2.0], [2.0, 4.0]], dev, dt))
        assert float(sign.numpy()) == 0.0 and float(logabs.numpy()) == -np.inf


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
def test_native_solve_triangular(wg, rng, lower, trans):
    dev, dc = wg
    a, b = wellcond(rng, 2, 7, 7), rng.standard_normal((2, 7, 3))
    for dt in _dtypes(dc):
        for unit in (False, True):
            want = sl.solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit)
            got = L.solve_triangular(W(a, dev, dt), W(b, dev, dt), lower=lower, trans=trans, unit_diagonal=unit)
            np.testing.assert_allclose(got.numpy(), want, **_tol(dt))
        # one matrix for a batch of right-hand sides, given as a transposed (strided) view
        a1, bb = a[0], rng.standard_normal((2, 3, 7, 2))
        got = L.solve_triangular(W(a1.T, dev, dt).mT, W(bb, dev, dt), lower=lower, trans=trans)
        np.testing.assert_allclose(got.numpy(), sl.solve_triangular(a1, bb, lower=lower, trans=trans), **_tol(dt))


def test_native_larger_batched_matrix(wg, rng):
    dev, dc = wg
    a = wellcond(rng, 4, 64, 64)
    dt = _dtypes(dc)[-1]
    np.testing.assert_allclose(L.inv(W(a, dev, dt)).numpy(), np.linalg.inv(a), **_tol(dt))
    s = spd(rng, 2, 64, 64)
    np.testing.assert_allclose(L.cholesky(W(s, dev, dt)).numpy(), np.linalg.cholesky(s), **_tol(dt))


def test_native_errors_are_linalg_errors(wg):
    dev, dc = wg
    with pytest.raises(L.LinAlgError, match=r"linalg::cholesky.*positive definite"):
        L.cholesky(W([[1.0, 2.0], [2.0, 1.0]], dev, np.float32)).numpy()
    with pytest.raises(L.LinAlgError, match=r"linalg::solve.*singular"):
        L.solve(W([[1.0, 2.0], [2.0, 4.0]], dev, np.float32), W([[1.0], [1.0]], dev, np.float32)).numpy()
    with pytest.raises(L.LinAlgError, match=r"linalg::inv.*singular"):
        L.inv(W([[1.0, 2.0], [2.0, 4.0]], dev, np.float32)).numpy()
    assert float(L.det(W([[1.0, 2.0], [2.0, 4.0]], dev, np.float32)).numpy()) == 0.0
    with pytest.raises(L.LinAlgError, match=r"linalg::lu_solve.*singular"):
        L.lu_solve((W([[1.0, 2.0], [0.0, 0.0]], dev, np.float32), W([0, 1], dev, np.int32)),
                   W([[1.0], [1.0]], dev, np.float32)).numpy()


QR_SHAPES = [(5, 3), (3, 5), (4, 4), (1, 1), (6, 1), (1, 6), (2, 3, 7, 4), (3, 4, 9), (2, 70, 67), (67, 70)]


@pytest.mark.parametrize("shape", QR_SHAPES)
def test_native_qr_matches_numpy_signs_included(wg, rng, shape):
    # the kernel's reflectors are LAPACK's (dlarfg): Q and R match numpy's exactly, signs included
    dev, dc = wg
    a = rng.standard_normal(shape)
    for dt in _dtypes(dc):
        x = a.astype(dt)
        tol = dict(rtol=1e-3, atol=1e-4) if dt == np.float32 else _tol(dt)
        for mode in ("reduced", "complete"):
            q, r = L.qr(W(x, dev, dt), mode=mode)
            q0, r0 = np.linalg.qr(a, mode=mode)
            assert q.dtype == burn.as_dtype(dt) and q.shape == q0.shape and r.shape == r0.shape
            np.testing.assert_allclose(q.numpy(), q0, err_msg=mode, **tol)
            np.testing.assert_allclose(r.numpy(), r0, err_msg=mode, **tol)
        np.testing.assert_allclose(L.qr(W(x, dev, dt), mode="r").numpy(), np.linalg.qr(a, mode="r"), **tol)


def test_native_qr_special_inputs(wg, rng):
    dev, dc = wg
    dt = _dtypes(dc)[-1]
    # a strided (transposed) input, a rank-deficient one, an already triangular one (tau = 0)
    a = rng.standard_normal((2, 6, 5))
    q, r = L.qr(W(a, dev, dt).mT)
    q0, r0 = np.linalg.qr(np.swapaxes(a, -1, -2))
    np.testing.assert_allclose(q.numpy(), q0, **_tol(dt))
    np.testing.assert_allclose(r.numpy(), r0, **_tol(dt))
    low = rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4))
    q, r = L.qr(W(low, dev, dt))
    np.testing.assert_allclose(q.numpy() @ r.numpy(), low, **_tol(dt))
    np.testing.assert_allclose(q.numpy().T @ q.numpy(), np.eye(4), **_tol(dt))
    up = np.triu(rng.standard_normal((4, 4)))
    for mode in ("reduced", "complete"):
        q, r = L.qr(W(up, dev, dt), mode=mode)
        q0, r0 = np.linalg.qr(up, mode=mode)
        np.testing.assert_allclose(q.numpy(), q0, **_tol(dt))
        np.testing.assert_allclose(r.numpy(), r0, **_tol(dt))
    # huge and tiny columns: the norm is scaled, float32 does not overflow or flush to zero
    big = np.array([[3e30, 1.0], [4e30, 2.0]])
    q, r = L.qr(W(big, dev, np.float32))
    q0, r0 = np.linalg.qr(big)
    np.testing.assert_allclose(q.numpy(), q0, rtol=1e-5)
    np.testing.assert_allclose(r.numpy()[0], r0[0], rtol=1e-5)


def test_native_qr_errors_at_the_call(wg):
    dev, _ = wg
    with pytest.raises(burn.DTypeError, match=r"linalg::qr.*floating"):
        L.qr(burn.tensor([[1, 2], [3, 4]], device=dev))
    with pytest.raises(burn.ShapeError, match=r"linalg::qr"):
        L.qr(burn.tensor([1.0, 2.0], device=dev))
    with pytest.raises(burn.BurnError, match=r"linalg::qr: mode"):
        L.qr(burn.tensor([[1.0]], device=dev), mode="economic")


def test_native_qr_runs_on_the_device(wg, rng):
    dev, dc = wg
    a = W(rng.standard_normal((3, 8, 5)), dev, np.float32)
    a.numpy()
    n0 = _transfers(dc)
    for mode in ("reduced", "complete", "r"):
        out = L.qr(a, mode=mode)
        for t in (out if isinstance(out, tuple) else (out,)):
            assert t.device == dev
            t.numpy()
    assert _transfers(dc) == n0, "qr copied through the host"


# -- every op on wgpu matches flex ---------------------------------------------------------------

def _every_op(rng):
    a, s, r = wellcond(rng, 2, 4, 4), spd(rng, 2, 4, 4), rng.standard_normal((2, 5, 3))
    b = rng.standard_normal((2, 4, 2))
    return [
        ("solve", lambda t: L.solve(t(a), t(b))), ("inv", lambda t: L.inv(t(a))),
        ("det", lambda t: L.det(t(a))), ("slogdet", lambda t: tuple(L.slogdet(t(a)))),
        ("cholesky", lambda t: L.cholesky(t(s))),
        ("qr", lambda t: tuple(x.abs() for x in L.qr(t(r)))),
        ("svdvals", lambda t: L.svdvals(t(r))), ("svd", lambda t: L.svd(t(r))[1]),
        ("eigvalsh", lambda t: L.eigvalsh(t(s))), ("eigh", lambda t: L.eigh(t(s))[0]),
        ("lstsq", lambda t: L.lstsq(t(r), t(r[..., :1]))[0]), ("pinv", lambda t: L.pinv(t(r))),
        ("lu", lambda t: tuple(L.lu(t(a)))), ("lu_factor", lambda t: tuple(L.lu_factor(t(a)))),
        ("lu_solve", lambda t: L.lu_solve(L.lu_factor(t(a)), t(b), trans=1)),
        ("solve_triangular", lambda t: L.solve_triangular(t(a), t(b), lower=True)),
        ("diagonal", lambda t: L.diagonal(t(a), offset=1)),
        ("norm", lambda t: L.norm(t(r), ord=2, axis=(-2, -1))),
        ("matrix_rank", lambda t: L.matrix_rank(t(r))), ("matrix_power", lambda t: L.matrix_power(t(a), -2)),
    ]


def test_every_op_on_wgpu_matches_flex(wg, rng):
    dev, dc = wg
    dt = _dtypes(dc)[-1]
    for name, fn in _every_op(rng):
        got = fn(lambda x: W(x, dev, dt))
        want = fn(lambda x: W(x, burn.Device.flex(), dt))
        got, want = (got, want) if isinstance(got, tuple) else ((got,), (want,))
        for g, w in zip(got, want):
            assert g.device == dev, name
            np.testing.assert_allclose(g.numpy(), w.numpy(), err_msg=name, **_tol(dt))


# -- gradients through the wgpu kernels -----------------------------------------------------------

def test_gradients_on_wgpu(wg, rng):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    gc = burn.testing.gradcheck
    a, s, b = wellcond(rng, 2, 3, 3), spd(rng, 3, 3), rng.standard_normal((2, 3, 2))
    assert gc(lambda x, y: L.solve(x, y), a, b, device=dev)
    assert gc(lambda x: L.inv(x), a, device=dev)
    assert gc(lambda x: L.det(x), a, device=dev)
    assert gc(lambda x: L.slogdet(x)[1], a, device=dev)
    assert gc(lambda x: L.cholesky((x + x.mT) * 0.5), s, device=dev)
    assert gc(lambda x, y: L.solve_triangular(x, y, lower=True), a, b, device=dev)
    assert gc(lambda x: L.svdvals(x), a, device=dev)


@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 3, 5)])
def test_qr_gradients_on_wgpu(wg, rng, shape):
    dev, dc = wg
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")
    gc = burn.testing.gradcheck
    a = rng.standard_normal(shape)
    assert gc(lambda x: L.qr(x)[0], a, device=dev)
    assert gc(lambda x: L.qr(x)[1], a, device=dev)
    assert gc(lambda x: L.qr(x, mode="r"), a, device=dev)
    if shape[-2] <= shape[-1]:
        assert gc(lambda x: L.qr(x, mode="complete")[0], a, device=dev)


def test_eig_eigvals_run_on_the_host_and_match_numpy(wg, rng):
    dev, dc = wg
    for dt in _dtypes(dc):
        a = rng.standard_normal((2, 5, 5)).astype(dt)
        n0, _ = _transfers(dc)
        w, v = L.eig(W(a, dev, dt))
        ct = np.result_type(dt, np.complex64)
        assert w.device == dev and w.dtype == burn.as_dtype(ct) and v.dtype == burn.as_dtype(ct)
        wn, vn = w.numpy(), v.numpy()
        assert _transfers(dc)[0] > n0, "eig is a declared host fallback: its copies are counted"
        tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else _tol(dt)
        np.testing.assert_allclose(a.astype(ct) @ vn, vn * wn[..., None, :], **tol)
        np.testing.assert_allclose(wn, np.linalg.eigvals(a).astype(ct), **tol)   # same LAPACK order
        np.testing.assert_allclose(L.eigvals(W(a, dev, dt)).numpy(), wn, **tol)


# -- burn info and the transfer counter --------------------------------------------------------------

def test_burn_info_lists_only_eig_as_wgpu_host_fallback(wg):
    from burn.cli import info_text
    from burn_linalg import _wgpu
    out = info_text()
    assert _wgpu.HOST_FALLBACK == {"eig", "eigvals"}     # general eigenproblems: LAPACK's geev on the host
    for op in sorted(_wgpu.HOST_FALLBACK):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"linalg::{op} "))
        assert "wgpu: linalg host-fallback" in line, line
    for op in ("cholesky", "solve", "inv", "det", "slogdet", "solve_triangular", "lu_factor", "lu_solve", "qr",
               "diagonal", "lu", "eigh", "eigvalsh", "svd", "svdvals", "pinv", "lstsq"):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"linalg::{op} "))
        assert "wgpu: linalg" in line and "wgpu: linalg host-fallback" not in line, line


def test_transfer_counter_counts_fallbacks_only(wg, rng):
    dev, dc = wg
    a = W(wellcond(rng, 4, 4), dev, np.float32)
    a.numpy()                        # upload done before counting
    n0, b0 = _transfers(dc)
    L.inv(a).numpy(); L.cholesky(a @ a.mT).numpy(); L.det(a).numpy(); L.qr(a)[1].numpy()
    L.eigh(a @ a.mT)[1].numpy(); L.svd(a)[0].numpy(); L.pinv(a).numpy(); L.lu(a)[0].numpy()
    assert _transfers(dc) == (n0, b0), "a native kernel copied through the host"
    # complex matrices still run on the host (declared at run time), except eigh / eigvalsh: counted
    c = burn.tensor(wellcond(rng, 4, 4) + 1j * rng.standard_normal((4, 4)), dtype=burn.complex64, device=dev)
    h = c @ c.mT.conj()
    h.numpy()
    n0, b0 = _transfers(dc)
    w, v = L.eigh(h)
    v.numpy()
    assert _transfers(dc) == (n0, b0), "complex eigh copied through the host"
    np.testing.assert_allclose(w.numpy(), np.linalg.eigvalsh(h.numpy()), rtol=1e-4, atol=1e-4)
    ci = L.inv(c)
    ci.numpy()
    n1, b1 = _transfers(dc)
    assert n1 == n0 + 2 and b1 == b0 + 8 * 16 + 8 * 16     # the matrix down, the inverse up
    np.testing.assert_allclose(ci.numpy(), np.linalg.inv(c.numpy()), rtol=1e-4, atol=1e-4)
    assert burn.Device.wgpu().backend.stats(0)["host_transfers"] == n1


def _no_transfers(dc, fn):
    n0 = _transfers(dc)
    out = fn()
    for t in (out if isinstance(out, tuple) else (out,)):
        t.numpy()
    assert _transfers(dc) == n0, "copied through the host"
    return out


# -- diagonal ------------------------------------------------------------------------------------------

def test_native_diagonal_offsets_batches_strides_dtypes(wg, rng):
    dev, dc = wg
    a = rng.standard_normal((2, 3, 5, 7))
    x = burn.tensor(a, dtype=burn.float32, device=dev)
    ref = a.astype(np.float32)
    views = {
        "plain": (x, ref),
        "transposed": (x.mT, np.swapaxes(ref, -1, -2)),
        "sliced": (x[:, ::2, 1:, ::3], ref[:, ::2, 1:, ::3]),
        "batch permuted": (x.permute(1, 0, 2, 3), ref.transpose(1, 0, 2, 3)),   # batch dims do not collapse
    }
    for name, (t, r) in views.items():
        for off in (-5, -2, -1, 0, 1, 3, 6, 9):
            got = _no_transfers(dc, lambda: L.diagonal(t, offset=off))
            np.testing.assert_array_equal(got.numpy(), np.diagonal(r, off, -2, -1), err_msg=f"{name} {off}")
    # bits are copied: integer, bool, float64 and complex elements
    for dt, arr in ((burn.int32, (a * 10).astype(np.int32)), (burn.int64, (a * 10).astype(np.int64)),
                    (burn.bool, a > 0), (burn.complex64, (a + 1j * a[::-1]).astype(np.complex64))):
        got = L.diagonal(burn.tensor(arr, dtype=dt, device=dev), offset=1)
        assert got.dtype == dt
        np.testing.assert_array_equal(got.numpy(), np.diagonal(arr, 1, -2, -1))
    with pytest.raises(burn.ShapeError, match=r"linalg::diagonal"):
        L.diagonal(burn.tensor([1.0, 2.0], device=dev))


# -- lu ------------------------------------------------------------------------------------------------

LU_SHAPES = [(4, 4), (1, 1), (5, 3), (3, 5), (6, 1), (1, 6), (2, 3, 6, 6), (2, 7, 4), (2, 4, 7), (40, 40), (33, 70)]


@pytest.mark.parametrize("shape", LU_SHAPES)
def test_native_lu_matches_scipy(wg, rng, shape):
    # same pivots as getrf (the first largest |entry|): P exactly, L and U to rounding
    dev, dc = wg
    a = rng.standard_normal(shape)
    for dt in _dtypes(dc):
        tol = dict(rtol=1e-4, atol=1e-5) if dt == np.float32 else _tol(dt)
        x = a.astype(dt)
        p, l, u = _no_transfers(dc, lambda: L.lu(W(x, dev, dt)))
        p0, l0, u0 = sl.lu(x)
        assert p.dtype == burn.as_dtype(dt) and (p.shape, l.shape, u.shape) == (p0.shape, l0.shape, u0.shape)
        np.testing.assert_array_equal(p.numpy(), p0)
        np.testing.assert_allclose(l.numpy(), l0, **tol)
        np.testing.assert_allclose(u.numpy(), u0, **tol)
        pl, u2 = _no_transfers(dc, lambda: L.lu(W(x, dev, dt), permute_l=True))
        pl0, _ = sl.lu(x, permute_l=True)
        np.testing.assert_allclose(pl.numpy(), pl0, **tol)
        np.testing.assert_allclose(u2.numpy(), u0, **tol)


def test_native_lu_singular_and_strided(wg, rng):
    dev, dc = wg
    dt = _dtypes(dc)[-1]
    # exact zero pivots (no error, as scipy), ties between equal magnitudes, a rank-1 matrix whose
    # multipliers are exact (powers of 2: no rounding noise to pivot on, whether or not FMAs contract)
    for a in (np.array([[1.0, 2.0], [2.0, 4.0]]), np.zeros((3, 4)), np.array([[1.0, 1.0], [-1.0, 2.0]]),
              np.outer([1.0, -2.0, 4.0], [2.0, 1.0, 0.0, -1.0]),
              np.array([[0.0, 0.0, 1.0], [0.0, 2.0, 0.0], [3.0, 0.0, 0.0]])):
        for got, want in zip(L.lu(W(a, dev, dt)), sl.lu(a)):
            np.testing.assert_allclose(got.numpy(), want, **_tol(dt))
    a = rng.standard_normal((2, 6, 5))
    for got, want in zip(L.lu(W(a, dev, dt).mT), sl.lu(np.swapaxes(a, -1, -2))):
        np.testing.assert_allclose(got.numpy(), want, **_tol(dt))


# -- eigh / eigvalsh -----------------------------------------------------------------------------------

def _sym(rng, *shape):
    a = rng.standard_normal(shape)
    return (a + np.swapaxes(a, -1, -2)) / 2


def _check_eigh(w, v, a, tol):
    """Ascending values as LAPACK's, orthonormal vectors, A V = V diag(w), the sign convention."""
    w0 = np.linalg.eigvalsh(a)
    scale = max(np.abs(w0).max(), 1e-300)
    np.testing.assert_allclose(w, w0, rtol=0, atol=tol * scale)
    assert np.all(np.diff(w, axis=-1) >= 0)
    n = a.shape[-1]
    np.testing.assert_allclose(np.swapaxes(v, -1, -2) @ v, np.broadcast_to(np.eye(n), v.shape), rtol=0, atol=tol * n)
    np.testing.assert_allclose(a @ v, v * w[..., None, :], rtol=0, atol=tol * scale * n)
    # deterministic signs: each column's largest-magnitude component (the first of equal ones) is positive
    idx = np.argmax(np.abs(v), axis=-2)
    assert np.all(np.take_along_axis(v, idx[..., None, :], axis=-2) > 0)


EIGH_SHAPES = [(1, 1), (2, 2), (3, 3), (5, 5), (2, 3, 7, 7), (4, 16, 16), (2, 65, 65)]


@pytest.mark.parametrize("shape", EIGH_SHAPES)
def test_native_eigh_matches_lapack(wg, rng, shape):
    dev, dc = wg
    a = _sym(rng, *shape)
    for dt in _dtypes(dc):
        x = a.astype(dt)
        tol = 5e-6 if dt == np.float32 else 1e-13
        w, v = _no_transfers(dc, lambda: L.eigh(W(x, dev, dt)))
        assert w.dtype == v.dtype == burn.as_dtype(dt) and w.shape == shape[:-1] and v.shape == shape
        _check_eigh(w.numpy(), v.numpy(), x.astype(np.float64), tol)
        # distinct eigenvalues: the vectors are LAPACK's up to a sign per column
        w0, v0 = np.linalg.eigh(x.astype(np.float64))
        s = np.sign(np.sum(v.numpy() * v0, axis=-2, keepdims=True))
        np.testing.assert_allclose(v.numpy() * s, v0, rtol=0, atol=tol * 1e3)
        wv = _no_transfers(dc, lambda: L.eigvalsh(W(x, dev, dt)))
        np.testing.assert_allclose(wv.numpy(), w.numpy(), rtol=0, atol=tol * np.abs(w0).max())


def test_native_eigh_reads_only_the_uplo_triangle(wg, rng):
    dev, dc = wg
    a = _sym(rng, 3, 6, 6)
    junk = rng.standard_normal((3, 6, 6)) * 100
    for dt in _dtypes(dc):
        tol = 5e-6 if dt == np.float32 else 1e-13
        low = np.tril(a) + np.triu(junk, 1)
        up = np.triu(a) + np.tril(junk, -1)
        w, v = L.eigh(W(low, dev, dt), UPLO="L")
        _check_eigh(w.numpy(), v.numpy(), a, tol)
        w, v = L.eigh(W(up, dev, dt), UPLO="U")
        _check_eigh(w.numpy(), v.numpy(), a, tol)
        np.testing.assert_allclose(L.eigvalsh(W(up, dev, dt), UPLO="U").numpy(), np.linalg.eigvalsh(a),
                                   rtol=0, atol=tol * 10)
        # a transposed (strided) input: the lower triangle of a^T is a's upper one
        w, v = L.eigh(W(up, dev, dt).mT, UPLO="L")
        _check_eigh(w.numpy(), v.numpy(), a, tol)


def test_native_eigh_degenerate_and_scaled_spectra(wg, rng):
    dev, dc = wg
    q, _ = np.linalg.qr(rng.standard_normal((8, 8)))
    cases = {
        "identity": np.eye(5), "zeros": np.zeros((4, 4)), "diagonal": np.diag([3.0, -1.0, 2.0, -1.0]),
        "repeated": (q * np.array([1, 1, 1, 2, 2, -3, 5, 5.0])) @ q.T,
        "graded": (q * np.logspace(-6, 6, 8)) @ q.T,
        "tiny": _sym(rng, 6, 6) * 1e-30, "huge": _sym(rng, 6, 6) * 1e30,
    }
    for dt in _dtypes(dc):
        tol = 5e-6 if dt == np.float32 else 1e-13
        for name, a in cases.items():
            if dt == np.float32 and name in ("tiny", "huge"):
                a = a * (1e-20 if name == "huge" else 1e20)        # stay inside float32's range
            w, v = L.eigh(W(a, dev, dt))
            _check_eigh(w.numpy(), v.numpy(), a.astype(dt).astype(np.float64), tol)
            # repeated eigenvalues: the eigenspaces (projectors) are unique, the bases are not
            if name == "repeated":
                vv, ww = v.numpy(), w.numpy()
                for val in (1.0, 5.0):
                    sel = np.abs(ww - val) < 1e-3
                    w0, v0 = np.linalg.eigh(a)
                    sel0 = np.abs(w0 - val) < 1e-3
                    np.testing.assert_allclose(vv[:, sel] @ vv[:, sel].T, v0[:, sel0] @ v0[:, sel0].T,
                                               rtol=0, atol=tol * 100)


def test_native_eigh_errors_at_the_call(wg):
    dev, _ = wg
    with pytest.raises(burn.ShapeError, match=r"linalg::eigh.*square"):
        L.eigh(burn.tensor(np.ones((2, 3)), device=dev))
    with pytest.raises(burn.DTypeError, match=r"linalg::eigvalsh.*floating"):
        L.eigvalsh(burn.tensor([[1, 2], [2, 1]], device=dev))
    with pytest.raises(burn.BurnError, match=r"linalg::eigh: UPLO"):
        L.eigh(burn.tensor([[1.0]], device=dev), UPLO="X")


# -- svd / svdvals -------------------------------------------------------------------------------------

# square: Jacobi directly; tall: after a QR; wide: transposed
SVD_SHAPES = [(1, 1), (4, 4), (5, 3), (3, 5), (6, 1), (1, 6), (2, 3, 7, 4), (2, 4, 9), (2, 40, 17), (17, 40),
              (3, 33, 33), (300, 7), (7, 300)]


def _check_svd(u, s, vh, a, full, tol):
    m, n = a.shape[-2:]
    k = min(m, n)
    u0, s0, vh0 = np.linalg.svd(a, full_matrices=full)
    assert u.shape == u0.shape and s.shape == s0.shape and vh.shape == vh0.shape
    scale = max(s0.max(initial=0), 1e-300)
    np.testing.assert_allclose(s, s0, rtol=0, atol=tol * scale)
    assert np.all(np.diff(s, axis=-1) <= 0)
    np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], a, rtol=0, atol=tol * scale * 10)
    for q in (np.swapaxes(u, -1, -2) @ u, vh @ np.swapaxes(vh, -1, -2)):
        np.testing.assert_allclose(q, np.broadcast_to(np.eye(q.shape[-1]), q.shape), rtol=0, atol=tol * 10)
    # distinct singular values: each (u_i, v_i) is LAPACK's up to one common sign
    sg = np.sign(np.sum(u[..., :, :k] * u0[..., :, :k], axis=-2))
    np.testing.assert_allclose(u[..., :, :k] * sg[..., None, :], u0[..., :, :k], rtol=0, atol=tol * 1e3)
    np.testing.assert_allclose(vh[..., :k, :] * sg[..., :, None], vh0[..., :k, :], rtol=0, atol=tol * 1e3)


@pytest.mark.parametrize("shape", SVD_SHAPES)
def test_native_svd_matches_lapack(wg, rng, shape):
    dev, dc = wg
    a = rng.standard_normal(shape)
    for dt in _dtypes(dc):
        x = a.astype(dt)
        tol = 5e-6 if dt == np.float32 else 1e-13
        for full in (False, True):
            u, s, vh = _no_transfers(dc, lambda: L.svd(W(x, dev, dt), full_matrices=full))
            assert u.dtype == s.dtype == vh.dtype == burn.as_dtype(dt)
            _check_svd(u.numpy(), s.numpy(), vh.numpy(), x.astype(np.float64), full, tol)
            # deterministic signs: U's columns have their largest-magnitude component positive
            k = min(shape[-2:])
            uk = u.numpy()[..., :, :k]
            idx = np.argmax(np.abs(uk), axis=-2)
            assert np.all(np.take_along_axis(uk, idx[..., None, :], axis=-2) > 0)
        sv = _no_transfers(dc, lambda: L.svdvals(W(x, dev, dt)))
        np.testing.assert_allclose(sv.numpy(), s.numpy(), rtol=0, atol=tol * s.numpy().max())
        assert L.svd(W(x, dev, dt), compute_uv=False).shape == sv.shape


def test_native_svd_rank_deficient_zero_and_strided(wg, rng):
    # zero singular values: U / Vh still orthonormal (completed on the device)
    dev, dc = wg
    for dt in _dtypes(dc):
        tol = 5e-6 if dt == np.float32 else 1e-13
        cases = [rng.standard_normal((2, 6, 2)) @ rng.standard_normal((2, 2, 5)),
                 rng.standard_normal((5, 1)) @ rng.standard_normal((1, 7)),
                 np.zeros((4, 3)), np.zeros((3, 5)), np.diag([2.0, 0.0, 1.0]), np.eye(4)[:, :3] * 3]
        for a in cases:
            x = a.astype(dt).astype(np.float64)
            for full in (False, True):
                u, s, vh = (t.numpy() for t in L.svd(W(a, dev, dt), full_matrices=full))
                m, n = a.shape[-2:]
                k = min(m, n)
                s0 = np.linalg.svd(x, compute_uv=False)
                np.testing.assert_allclose(s, s0, rtol=0, atol=tol * max(s0.max(), 1) * 10)
                np.testing.assert_allclose((u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :], x, rtol=0,
                                           atol=tol * max(s0.max(), 1) * 10)
                for q in (np.swapaxes(u, -1, -2) @ u, vh @ np.swapaxes(vh, -1, -2)):
                    np.testing.assert_allclose(q, np.broadcast_to(np.eye(q.shape[-1]), q.shape), rtol=0,
                                               atol=tol * 10)
        a = rng.standard_normal((2, 5, 8))
        u, s, vh = (t.numpy() for t in L.svd(W(a, dev, dt).mT, full_matrices=False))
        _check_svd(u, s, vh, np.swapaxes(a.astype(dt).astype(np.float64), -1, -2), False, tol)


def test_native_svd_extreme_scales(wg, rng):
    # float32 sums of squares of 1e25 overflow and of 1e-25 underflow: the kernel scales first
    dev, dc = wg
    a = rng.standard_normal((2, 6, 4))
    for dt in _dtypes(dc):
        tol = 5e-6 if dt == np.float32 else 1e-13
        for scale in (1e-35, 1e-25, 1e25, 1e36):
            x = (a * scale).astype(dt)
            u, s, vh = (t.numpy() for t in L.svd(W(x, dev, dt), full_matrices=False))
            _check_svd(u, s, vh, x.astype(np.float64), False, tol)
            np.testing.assert_allclose(L.svdvals(W(x, dev, dt)).numpy(), s, rtol=tol, atol=0)


def test_native_svd_errors_at_the_call(wg):
    dev, _ = wg
    with pytest.raises(burn.ShapeError, match=r"linalg::svd"):
        L.svd(burn.tensor([1.0, 2.0], device=dev))
    with pytest.raises(burn.DTypeError, match=r"linalg::svdvals.*floating"):
        L.svdvals(burn.tensor([[1, 2]], device=dev))


# -- pinv / lstsq --------------------------------------------------------------------------------------

def _rank_def(rng, *shape, rank):
    return rng.standard_normal(shape[:-1] + (rank,)) @ rng.standard_normal(shape[:-2] + (rank, shape[-1]))


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (5, 3), (3, 5), (2, 3, 6, 4), (2, 30, 50)])
def test_native_pinv_matches_numpy(wg, rng, shape):
    dev, dc = wg
    for dt in _dtypes(dc):
        tol = dict(rtol=1e-4, atol=1e-4) if dt == np.float32 else _tol(dt)
        rtol_cut = 1e-4 if dt == np.float32 else 1e-10      # drops the noise of a rank-deficient input
        for a in (rng.standard_normal(shape), _rank_def(rng, *shape, rank=max(1, min(shape[-2:]) - 1))):
            x = a.astype(dt)
            got = _no_transfers(dc, lambda: L.pinv(W(x, dev, dt), rcond=rtol_cut))
            np.testing.assert_allclose(got.numpy(), np.linalg.pinv(x.astype(np.float64), rcond=rtol_cut), **tol)
        # the default rcond (1e-15) on a well-conditioned input, rtol=None (max(M, N) * eps)
        a = rng.standard_normal(shape).astype(dt)
        np.testing.assert_allclose(L.pinv(W(a, dev, dt)).numpy(), np.linalg.pinv(a.astype(np.float64)), **tol)
        np.testing.assert_allclose(L.pinv(W(a, dev, dt), rtol=None).numpy(),
                                   np.linalg.pinv(a.astype(np.float64), rtol=None), **tol)


def test_native_pinv_cutoff_and_hermitian(wg, rng):
    dev, dc = wg
    dt = _dtypes(dc)[-1]
    d = np.diag([4.0, 1.0, 1e-3, 0.0])
    for rcond in (1e-15, 1e-2, 0.3):       # strict cutoff: s > rcond * max(s) is inverted
        np.testing.assert_allclose(L.pinv(W(d, dev, dt), rcond=rcond).numpy(), np.linalg.pinv(d, rcond=rcond),
                                   **_tol(dt))
    np.testing.assert_allclose(L.pinv(W(d, dev, dt), rcond=0.25).numpy(), np.diag([0.25, 0, 0, 0]), **_tol(dt))
    # hermitian: eigen-decomposition of the lower triangle (as numpy), negative eigenvalues kept
    for dtt in _dtypes(dc):
        h = _sym(rng, 3, 5, 5)
        h[0] = _rank_def(rng, 5, 5, rank=3); h[0] = h[0] @ h[0].T
        junk = np.tril(h) + np.triu(rng.standard_normal((3, 5, 5)), 1)
        tol = dict(rtol=1e-4, atol=1e-4) if dtt == np.float32 else _tol(dtt)
        cut = 1e-4 if dtt == np.float32 else 1e-12
        got = _no_transfers(dc, lambda: L.pinv(W(junk, dev, dtt), rcond=cut, hermitian=True))
        np.testing.assert_allclose(got.numpy(), np.linalg.pinv(junk.astype(dtt).astype(np.float64), rcond=cut,
                                                               hermitian=True), **tol)


def test_native_pinv_rtol_array_per_matrix(wg, rng):
    # an array rtol is composed from the native svd / eigh: one cutoff per matrix, no host round trip
    dev, dc = wg
    d = np.stack([np.diag([4.0, 1.0, 1e-2, 0.0])] * 3)
    rtol = np.array([1e-5, 1e-2, 0.3])
    for dt in _dtypes(dc):
        got = _no_transfers(dc, lambda: L.pinv(W(d, dev, dt), rtol=W(rtol, dev, dt)))
        assert got.dtype == burn.as_dtype(dt)
        np.testing.assert_allclose(got.numpy(), np.linalg.pinv(d, rtol=rtol), **_tol(dt))
        h = _sym(rng, 3, 5, 5)
        np.testing.assert_allclose(L.pinv(W(h, dev, dt), rtol=rtol, hermitian=True).numpy(),
                                   np.linalg.pinv(h.astype(dt).astype(np.float64), rtol=rtol, hermitian=True),
                                   **_tol(dt))


LSTSQ_CASES = [((4, 4), (4, 2)), ((6, 3), (6, 1)), ((3, 6), (3, 2)), ((1, 1), (1, 1)), ((2, 5, 3), (5, 4)),
               ((5, 3), (2, 5, 2)), ((2, 1, 7, 4), (3, 7, 2))]


@pytest.mark.parametrize("ash,bsh", LSTSQ_CASES)
def test_native_lstsq_matches_numpy(wg, rng, ash, bsh):
    dev, dc = wg
    for dt in _dtypes(dc):
        tol = dict(rtol=2e-4, atol=2e-4) if dt == np.float32 else _tol(dt)
        for rankdef in (False, True):
            a = _rank_def(rng, *ash, rank=max(1, min(ash[-2:]) - 1)) if rankdef else rng.standard_normal(ash)
            b = rng.standard_normal(bsh)
            rcond = (1e-4 if dt == np.float32 else 1e-10) if rankdef else None
            x, res, rank, s = L.lstsq(W(a, dev, dt), W(b, dev, dt), rcond=rcond)
            batch = np.broadcast_shapes(ash[:-2], bsh[:-2])
            ab, bb = np.broadcast_to(a, batch + ash[-2:]), np.broadcast_to(b, batch + bsh[-2:])
            want = np.empty(batch + (ash[-1], bsh[-1]))
            wrank = np.empty(batch, int)
            for idx in np.ndindex(*batch):
                r = np.linalg.lstsq(ab[idx].astype(dt).astype(np.float64), bb[idx].astype(dt).astype(np.float64),
                                    rcond=rcond if rcond is not None else np.finfo(dt).eps * max(ash[-2:]))
                want[idx], wrank[idx] = r[0], r[2]
            np.testing.assert_allclose(x.numpy(), want, **tol)
            # rank (from a's singular values) has a's batch shape: it broadcasts to the solution's
            np.testing.assert_array_equal(np.broadcast_to(rank.numpy(), batch), wrank)


def test_native_lstsq_runs_on_the_device_and_errors(wg, rng):
    dev, dc = wg
    a, b = W(rng.standard_normal((2, 6, 3)), dev, np.float32), W(rng.standard_normal((6,)), dev, np.float32)
    x = _no_transfers(dc, lambda: L.lstsq(a, b)[0])
    np.testing.assert_allclose(x.numpy(), np.linalg.pinv(a.numpy()) @ b.numpy(), rtol=1e-4, atol=1e-4)
    with pytest.raises(burn.ShapeError, match=r"linalg::lstsq"):
        L.lstsq(a, W(np.ones((5, 1)), dev, np.float32))
    with pytest.raises(burn.DTypeError, match=r"linalg::pinv.*floating"):
        L.pinv(burn.tensor([[1, 2]], device=dev))


# -- gradients of the new native ops ----------------------------------------------------------------

def _need_fp64(dc):
    if not dc.fp64:
        pytest.skip(f"{dc.device.name} has no float64: the gradcheck needs it")


def test_gradients_diagonal_lu_on_wgpu(wg, rng):
    dev, dc = wg
    _need_fp64(dc)
    gc = burn.testing.gradcheck
    a = wellcond(rng, 2, 4, 4)
    for off in (-1, 0, 2):
        assert gc(lambda x: L.diagonal(x, offset=off), rng.standard_normal((2, 3, 5)), device=dev)
    assert gc(lambda x: L.lu(x)[1], a, device=dev)
    assert gc(lambda x: L.lu(x)[2], a, device=dev)
    assert gc(lambda x: L.lu(x, permute_l=True)[0], a, device=dev)


def test_gradients_eigh_on_wgpu(wg, rng):
    dev, dc = wg
    _need_fp64(dc)
    gc = burn.testing.gradcheck
    a = _sym(rng, 2, 4, 4)        # random: distinct eigenvalues
    sym = lambda x: (x + x.mT) * 0.5           # noqa: E731  (eigh reads one triangle: differentiate the symmetric part)
    assert gc(lambda x: L.eigh(sym(x))[0], a, device=dev)
    assert gc(lambda x: L.eigh(sym(x))[1], a, device=dev)
    assert gc(lambda x: L.eigh(sym(x), UPLO="U")[1], a, device=dev)
    assert gc(lambda x: L.eigvalsh(sym(x)), a, device=dev)


@pytest.mark.parametrize("shape", [(2, 4, 3), (3, 3), (2, 3, 5)])
def test_gradients_svd_on_wgpu(wg, rng, shape):
    dev, dc = wg
    _need_fp64(dc)
    gc = burn.testing.gradcheck
    a = rng.standard_normal(shape)
    assert gc(lambda x: L.svdvals(x), a, device=dev)
    for i in range(3):
        assert gc(lambda x: L.svd(x, full_matrices=False)[i], a, device=dev)
    assert gc(lambda x: L.svd(x)[1], a, device=dev)


def test_gradients_pinv_lstsq_on_wgpu(wg, rng):
    dev, dc = wg
    _need_fp64(dc)
    gc = burn.testing.gradcheck
    for shape in ((4, 3), (3, 4), (2, 3, 3)):
        assert gc(lambda x: L.pinv(x), rng.standard_normal(shape), device=dev)
    h = spd(rng, 4, 4)
    assert gc(lambda x: L.pinv((x + x.mT) * 0.5, hermitian=True), h, device=dev)
    assert gc(lambda x, y: L.lstsq(x, y)[0], rng.standard_normal((2, 5, 3)), rng.standard_normal((5, 2)), device=dev)
    assert gc(lambda x, y: L.lstsq(x, y)[0], rng.standard_normal((3, 5)), rng.standard_normal((3, 2)), device=dev)
