"""burn.linalg on the wgpu backend: native OpenCL kernels (Cholesky, triangular solve,
LU: solve/inv/det/slogdet/lu_factor/lu_solve, Householder QR) against numpy/scipy, every other op as a
declared host fallback against flex, gradients through wgpu, ``burn info`` and the
transfer counter."""
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
    assert gc(lambda x: L.svdvals(x), a, device=dev)       # a host fallback in the graph


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


# -- declared host fallbacks -----------------------------------------------------------------------

def test_burn_info_lists_wgpu_host_fallbacks(wg):
    from burn.cli import info_text
    from burn_linalg import _wgpu
    out = info_text()
    for op in ("svd", "eigh", "lstsq", "pinv", "lu"):
        assert op in _wgpu.HOST_FALLBACK
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"linalg::{op} "))
        assert "wgpu: linalg host-fallback" in line, line
    for op in ("cholesky", "solve", "inv", "det", "slogdet", "solve_triangular", "lu_factor", "lu_solve", "qr"):
        assert op not in _wgpu.HOST_FALLBACK
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"linalg::{op} "))
        assert "wgpu: linalg" in line and "wgpu: linalg host-fallback" not in line, line


def test_transfer_counter_counts_fallbacks_only(wg, rng):
    dev, dc = wg
    a = W(wellcond(rng, 4, 4), dev, np.float32)
    a.numpy()                        # upload done before counting
    n0, b0 = _transfers(dc)
    L.inv(a).numpy(); L.cholesky(a @ a.mT).numpy(); L.det(a).numpy(); L.qr(a)[1].numpy()
    assert _transfers(dc) == (n0, b0), "a native kernel copied through the host"
    L.eigh(a @ a.mT)[1].numpy()
    n1, b1 = _transfers(dc)
    assert n1 == n0 + 3 and b1 == b0 + 4 * (4 * 4 + 4 + 4 * 4)    # the matrix down, w and v up
    assert burn.Device.wgpu().backend.stats(0)["host_transfers"] == n1
