"""burn.linalg (burn-linalg) on flex: forward vs numpy/SciPy, gradients vs finite
differences (float64), errors, `burn info`, and a higher-priority third-party kernel."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import scipy.linalg as sl

import burn

pytest.importorskip("burn_linalg")
L = burn.linalg
gradcheck = burn.testing.gradcheck


def T(a, dtype=burn.float64):
    return burn.tensor(np.asarray(a), dtype=dtype)


def spd(rng, *shape):
    n = shape[-1]
    x = rng.standard_normal(shape)
    return x @ np.swapaxes(x, -1, -2) + n * np.eye(n)


def wellcond(rng, *shape):
    # eigenvalues within about 3 +- 1: far from singular, so finite differences are accurate
    return 0.4 * rng.standard_normal(shape) + 3 * np.eye(shape[-1])


def sym(x):
    return (x + x.mT) * 0.5


# -- namespace ---------------------------------------------------------------------------------------

def test_namespace_present():
    import burn_linalg
    assert hasattr(burn, "linalg") and burn.linalg is burn_linalg
    for name in ["solve", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh",
                 "eig", "eigvals", "lstsq", "pinv", "lu", "lu_solve", "solve_triangular", "norm", "matrix_rank",
                 "matrix_power", "trace", "diagonal", "outer", "matvec", "vecdot", "cross", "cosine_similarity"]:
        assert callable(getattr(burn.linalg, name)), name


# -- forward vs numpy / scipy ------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,tol", [(burn.float64, 1e-10), (burn.float32, 1e-4)])
def test_solve_inv_det_slogdet(rng, dtype, tol):
    a = wellcond(rng, 2, 3, 4, 4)
    b = rng.standard_normal((3, 4, 2))           # batch broadcasts against a's (2, 3)
    v = rng.standard_normal(4)
    ta, tb = T(a, dtype), T(b, dtype)
    x = L.solve(ta, tb)
    assert x.shape == (2, 3, 4, 2) and x.dtype is dtype
    np.testing.assert_allclose(x.numpy(), np.linalg.solve(a, b), rtol=tol, atol=tol)
    np.testing.assert_allclose(L.solve(ta, T(v, dtype)).numpy(), np.linalg.solve(a, v), rtol=tol, atol=tol)
    np.testing.assert_allclose(L.inv(ta).numpy(), np.linalg.inv(a), rtol=tol, atol=tol)
    np.testing.assert_allclose(L.det(ta).numpy(), np.linalg.det(a), rtol=tol)
    s, ld = L.slogdet(ta)
    s0, l0 = np.linalg.slogdet(a)
    np.testing.assert_array_equal(s.numpy(), s0)
    np.testing.assert_allclose(ld.numpy(), l0, rtol=tol)


def test_half_precision_computed_in_float32(rng):
    a = wellcond(rng, 3, 3)
    x = L.inv(T(a, burn.float16))
    assert x.dtype is burn.float16
    np.testing.assert_allclose(x.numpy().astype(np.float64), np.linalg.inv(a), atol=5e-3, rtol=5e-3)


def test_cholesky(rng):
    a = spd(rng, 5, 6, 6)
    np.testing.assert_allclose(L.cholesky(T(a)).numpy(), np.linalg.cholesky(a), atol=1e-12)
    np.testing.assert_allclose(L.cholesky(T(a), upper=True).numpy(), np.linalg.cholesky(a, upper=True), atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3)])
def test_qr(rng, shape):
    a = rng.standard_normal(shape)
    for mode in ("reduced", "complete"):
        q, r = L.qr(T(a), mode=mode)
        q0, r0 = np.linalg.qr(a, mode=mode)
        np.testing.assert_allclose(q.numpy(), q0, atol=1e-12)
        np.testing.assert_allclose(r.numpy(), r0, atol=1e-12)
    np.testing.assert_allclose(L.qr(T(a), mode="r").numpy(), np.linalg.qr(a, mode="r"), atol=1e-12)


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 3, 4, 4)])
def test_svd_svdvals(rng, shape):
    a = rng.standard_normal(shape)
    for full in (True, False):
        u, s, vh = L.svd(T(a), full_matrices=full)
        u0, s0, vh0 = np.linalg.svd(a, full_matrices=full)
        assert u.shape == u0.shape and vh.shape == vh0.shape
        np.testing.assert_allclose(s.numpy(), s0, atol=1e-12)
        k = s0.shape[-1]
        rec = (u.numpy()[..., :k] * s.numpy()[..., None, :]) @ vh.numpy()[..., :k, :]
        np.testing.assert_allclose(rec, a, atol=1e-12)
    np.testing.assert_allclose(L.svdvals(T(a)).numpy(), np.linalg.svd(a, compute_uv=False), atol=1e-12)
    np.testing.assert_allclose(L.svd(T(a), compute_uv=False).numpy(), np.linalg.svdvals(a), atol=1e-12)


def test_eigh_eigvalsh(rng):
    a = spd(rng, 3, 5, 5)
    w, v = L.eigh(T(a))
    w0, v0 = np.linalg.eigh(a)
    np.testing.assert_allclose(w.numpy(), w0, atol=1e-10)
    np.testing.assert_allclose(np.abs(v.numpy()), np.abs(v0), atol=1e-8)
    np.testing.assert_allclose(L.eigvalsh(T(a), UPLO="U").numpy(), np.linalg.eigvalsh(a, UPLO="U"), atol=1e-10)


@pytest.mark.parametrize("m,n", [(6, 3), (3, 6), (4, 4)])
def test_lstsq_pinv(rng, m, n):
    a = rng.standard_normal((m, n))
    b = rng.standard_normal((m, 2))
    x, res, rank, s = L.lstsq(T(a), T(b))
    x0, res0, rank0, s0 = np.linalg.lstsq(a, b)
    np.testing.assert_allclose(x.numpy(), x0, atol=1e-10)
    assert res.shape == res0.shape and rank.item() == rank0
    np.testing.assert_allclose(res.numpy(), res0, atol=1e-10)
    np.testing.assert_allclose(s.numpy(), s0, atol=1e-12)
    xv, resv, _, _ = L.lstsq(T(a), T(b[:, 0]))
    xv0, resv0, _, _ = np.linalg.lstsq(a, b[:, 0])
    np.testing.assert_allclose(xv.numpy(), xv0, atol=1e-10)
    assert resv.shape == resv0.shape
    # batched (numpy's lstsq is 2-D only): compare per matrix
    ab = rng.standard_normal((3, m, n))
    xb = L.lstsq(T(ab), T(b))[0].numpy()
    for i in range(3):
        np.testing.assert_allclose(xb[i], np.linalg.lstsq(ab[i], b)[0], atol=1e-10)
    np.testing.assert_allclose(L.pinv(T(ab)).numpy(), np.linalg.pinv(ab), atol=1e-10)
    np.testing.assert_allclose(L.pinv(T(a), rtol=None).numpy(), np.linalg.pinv(a, rtol=None), atol=1e-10)


@pytest.mark.parametrize("dt", [np.float32, np.float64, np.complex64, np.complex128])
def test_eig_eigvals_vs_numpy(rng, dt):
    a = rng.standard_normal((3, 4, 4))
    if np.dtype(dt).kind == "c":
        a = a + 1j * rng.standard_normal((3, 4, 4))
    a = a.astype(dt)
    ct = np.result_type(dt, np.complex64)
    w, v = L.eig(burn.tensor(a))
    w0, v0 = np.linalg.eig(a)
    assert w.dtype is burn.as_dtype(ct) and v.dtype is burn.as_dtype(ct) and w.shape == (3, 4) and v.shape == a.shape
    tol = 1e-4 if ct == np.complex64 else 1e-10
    np.testing.assert_allclose(w.numpy(), w0, rtol=tol, atol=tol)
    np.testing.assert_allclose(v.numpy(), v0, rtol=tol, atol=tol)
    np.testing.assert_allclose(a @ v.numpy(), v.numpy() * w.numpy()[..., None, :], rtol=tol, atol=tol)
    np.testing.assert_allclose(L.eigvals(burn.tensor(a)).numpy(), w0, rtol=tol, atol=tol)
    assert isinstance(L.eig(burn.tensor(a)), L.EigResult)


def test_eig_real_spectrum_is_complex_and_errors(rng):
    # every eigenvalue real: numpy returns float64, the Array API (and burn) complex128
    d = np.diag([3.0, -1.0, 2.0])
    w, v = L.eig(T(d))
    assert w.dtype is burn.complex128
    np.testing.assert_allclose(w.numpy(), [3.0, -1.0, 2.0])
    assert L.eig(T(np.zeros((0, 2, 2)))).eigenvalues.shape == (0, 2)
    with pytest.raises(burn.ShapeError, match="eig: a must be square"):
        L.eig(T(np.ones((2, 3))))
    with pytest.raises(burn.DTypeError, match="eigvals: needs a floating"):
        L.eigvals(burn.tensor(np.ones((2, 2), dtype=np.int64)))


def _eig_losses(xp, lib):
    """Losses of eig's outputs that do not depend on each eigenvector's phase nor on the order of
    the eigenpairs (numpy's and torch's geev need not order them alike)."""
    ab = xp.abs

    def values(w, c):
        return (lib.real(w) ** 3).sum() + (lib.imag(w) ** 2 * 0.5).sum() + lib.real((w * w).sum())

    def vectors(w, v, c):
        mag = ab(v) ** 2                                # phase invariant, column by column
        return ((mag * c[:, None]).sum(axis=-2) * lib.real(w)).sum() + (ab(v[..., 0, :]) * lib.imag(w)).sum()
    return values, vectors


@pytest.mark.parametrize("complex_input", [False, True])
def test_eig_and_eigvals_gradients_match_torch(rng, complex_input):
    torch = pytest.importorskip("torch")
    n = 4
    # well-separated eigenvalues: a diagonal spectrum conjugated by a well-conditioned matrix
    lam = np.array([3.0, -2.0, 0.7, 5.5]) + (1j * np.array([0.5, -1.0, 2.0, 0.0]) if complex_input else 0)
    P = np.eye(n) + 0.3 * rng.standard_normal((n, n))
    if complex_input:
        P = P + 0.3j * rng.standard_normal((n, n))
    a = P @ np.diag(lam) @ np.linalg.inv(P)
    if not complex_input:       # a real matrix with a complex-conjugate pair and two real eigenvalues
        a = rng.standard_normal((n, n))
        a = a @ a.T * 0.1 + np.array([[0, 2.0, 0, 0], [-2.0, 0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, -1.5]])
    c = rng.standard_normal(n)
    ad = burn.Device.flex().autodiff()
    bv, tv = _eig_losses(burn, burn), _eig_losses(torch, torch)
    bc, tc = burn.tensor(c, dtype=burn.float64, device=ad), torch.tensor(c)
    for which in ("eigvals", "eig"):
        x = burn.tensor(a, device=ad).require_grad()
        t = torch.tensor(a, requires_grad=True)
        if which == "eigvals":
            lb, lt = bv[0](L.eigvals(x), bc), tv[0](torch.linalg.eigvals(t), tc)
        else:
            (wb, vb), (wt, vt) = L.eig(x), torch.linalg.eig(t)
            lb, lt = bv[0](wb, bc) + bv[1](wb, vb, bc), tv[0](wt, tc) + tv[1](wt, vt, tc)
        np.testing.assert_allclose(lb.item(), lt.item(), rtol=1e-10)
        g = x.grad(lb.backward())
        lt.backward()
        assert g.dtype is x.dtype
        np.testing.assert_allclose(g.numpy(), t.grad.numpy(), rtol=1e-8, atol=1e-10, err_msg=which)


def test_pinv_rtol_array_one_cutoff_per_matrix(rng):
    # rank-deficient stack: a per-matrix cutoff decides which singular values survive
    a = rng.standard_normal((3, 2, 5, 3))
    d = np.stack([np.diag([4.0, 1.0, 1e-3, 0.0])] * 3)
    for rtol in (np.array([1e-15, 1e-2, 0.3]), np.array([[1e-15, 0.3], [0.01, 1e-4], [0.5, 0.0]]), np.array([0.1])):
        x = d if rtol.ndim == 1 and rtol.size == 3 else a
        for arr in (rtol, burn.tensor(rtol)):
            got = L.pinv(T(x), rtol=arr)
            want = np.linalg.pinv(x, rtol=rtol)
            assert got.shape == want.shape and got.dtype is burn.float64
            np.testing.assert_allclose(got.numpy(), want, atol=1e-10)
    # broadcasting the batch against rtol, hermitian (eigh of the lower triangle, as numpy), float32, complex
    r = np.array([[1e-3], [0.6]])
    np.testing.assert_allclose(L.pinv(T(d), rtol=r).numpy(), np.linalg.pinv(np.broadcast_to(d, (2, 3, 4, 4)), rtol=r),
                               atol=1e-10)   # numpy does not broadcast the stack itself: compare on a broadcast copy
    h = np.tril(sym(rng.standard_normal((3, 4, 4)))) + np.triu(rng.standard_normal((3, 4, 4)), 1)
    rh = np.array([1e-3, 0.4, 0.9])
    np.testing.assert_allclose(L.pinv(T(h), rtol=rh, hermitian=True).numpy(),
                               np.linalg.pinv(h, rtol=rh, hermitian=True), atol=1e-10)
    f = L.pinv(T(d, burn.float32), rtol=np.array([1e-2, 0.3, 0.5]))
    assert f.dtype is burn.float32
    np.testing.assert_allclose(f.numpy(), np.linalg.pinv(d, rtol=np.array([1e-2, 0.3, 0.5])), atol=1e-5)
    z = rng.standard_normal((2, 3, 4)) + 1j * rng.standard_normal((2, 3, 4))
    rz = np.array([1e-15, 0.5])
    np.testing.assert_allclose(L.pinv(T(z, burn.complex128), rtol=rz).numpy(), np.linalg.pinv(z, rtol=rz), atol=1e-10)
    # empty stacks and matrices, errors, gradients through the composition
    assert L.pinv(T(np.zeros((0, 3, 2))), rtol=np.array([0.1])).shape == (0, 2, 3)
    assert L.pinv(T(np.zeros((2, 0, 3))), rtol=np.array([0.1, 0.2])).shape == (2, 3, 0)
    with pytest.raises(burn.ShapeError, match="rtol of shape"):
        L.pinv(T(a), rtol=np.ones(4))
    with pytest.raises(burn.DTypeError, match="pinv"):
        L.pinv(burn.tensor(np.ones((2, 2, 2), dtype=np.int64)), rtol=np.array([0.1, 0.2]))
    w = rng.standard_normal((2, 5, 3))
    gradcheck(lambda m: L.pinv(m, rtol=np.array([1e-10, 1e-12])), w)
    # hermitian reads the lower triangle only: differentiate through a symmetric parametrisation
    gradcheck(lambda m: L.pinv(sym(m), rtol=np.array([1e-10, 1e-12]), hermitian=True), rng.standard_normal((2, 3, 3)))


@pytest.mark.parametrize("shape", [(4, 4), (5, 3), (3, 5), (2, 3, 4, 4)])
def test_lu(rng, shape):
    a = rng.standard_normal(shape)
    for got, want in zip(L.lu(T(a)), sl.lu(a)):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12)
    for got, want in zip(L.lu(T(a), permute_l=True), sl.lu(a, permute_l=True)):
        np.testing.assert_allclose(got.numpy(), want, atol=1e-12)


def test_lu_factor_solve(rng):
    a = wellcond(rng, 3, 5, 5)
    b = rng.standard_normal((3, 5, 2))
    lu_, piv = L.lu_factor(T(a))
    lu0, piv0 = sl.lu_factor(a)
    np.testing.assert_allclose(lu_.numpy(), lu0, atol=1e-12)
    np.testing.assert_array_equal(piv.numpy(), piv0)
    for trans in (0, 1, "T"):
        x = L.lu_solve((lu_, piv), T(b), trans=trans)
        want = sl.lu_solve((lu0, piv0), b, trans={"T": 1}.get(trans, trans))
        np.testing.assert_allclose(x.numpy(), want, atol=1e-10)
    a2 = wellcond(rng, 4, 4)
    v = rng.standard_normal(4)
    np.testing.assert_allclose(L.lu_solve(L.lu_factor(T(a2)), T(v)).numpy(), np.linalg.solve(a2, v), atol=1e-10)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize("trans", [0, 1])
@pytest.mark.parametrize("unit", [False, True])
def test_solve_triangular(rng, lower, trans, unit):
    a = wellcond(rng, 2, 4, 4)
    b = rng.standard_normal((2, 4, 3))
    want = sl.solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit)
    got = L.solve_triangular(T(a), T(b), lower=lower, trans=trans, unit_diagonal=unit)
    np.testing.assert_allclose(got.numpy(), want, atol=1e-10)
    # the burn-op reference definition (what other backends without a kernel run) agrees
    ref = L.ops["solve_triangular"].reference(T(a), T(b), trans=trans, lower=lower, unit_diagonal=unit)
    np.testing.assert_allclose(ref.numpy(), want, atol=1e-10)


def test_cholesky_and_diagonal_references(rng):
    a = spd(rng, 2, 5, 5)
    ref = L.ops["cholesky"].reference(T(a))
    np.testing.assert_allclose(ref.numpy(), np.linalg.cholesky(a), atol=1e-10)
    x = rng.standard_normal((2, 3, 5))
    for off in (-2, 0, 1, 4, 7):
        want = np.diagonal(x, offset=off, axis1=-2, axis2=-1)
        np.testing.assert_allclose(L.ops["diagonal"].reference(T(x), offset=off).numpy(), want)
        np.testing.assert_allclose(L.diagonal(T(x), offset=off).numpy(), want)


@pytest.mark.parametrize("x_shape", [(7,), (4, 5), (2, 3, 4)])
def test_norm(rng, x_shape):
    x = rng.standard_normal(x_shape)
    tx = T(x)
    np.testing.assert_allclose(L.norm(tx).numpy(), np.linalg.norm(x))
    np.testing.assert_allclose(L.norm(tx, keepdims=True).numpy(), np.linalg.norm(x, keepdims=True))
    for ord_ in (None, 0, 1, 2, np.inf, -np.inf, 3, 0.5):
        for axis in range(len(x_shape)):
            for kd in (False, True):
                np.testing.assert_allclose(L.norm(tx, ord=ord_, axis=axis, keepdims=kd).numpy(),
                                           np.linalg.norm(x, ord=ord_, axis=axis, keepdims=kd), rtol=1e-10)
    if len(x_shape) >= 2:
        for ord_ in (None, "fro", "nuc", 1, -1, 2, -2, np.inf, -np.inf):
            for axis in ((0, 1), (1, 0), (-1, -2)) if len(x_shape) == 2 else ((0, 2), (-1, 1)):
                for kd in (False, True):
                    np.testing.assert_allclose(L.norm(tx, ord=ord_, axis=axis, keepdims=kd).numpy(),
                                               np.linalg.norm(x, ord=ord_, axis=axis, keepdims=kd), rtol=1e-10)
        np.testing.assert_allclose(L.matrix_norm(tx, ord="nuc").numpy(), np.linalg.matrix_norm(x, ord="nuc"))
    np.testing.assert_allclose(L.vector_norm(tx, ord=3).numpy(), np.linalg.vector_norm(x, ord=3))


def test_rank_power_trace_products(rng):
    a = rng.standard_normal((3, 5, 2)) @ rng.standard_normal((3, 2, 4))   # rank 2
    np.testing.assert_array_equal(L.matrix_rank(T(a)).numpy(), np.linalg.matrix_rank(a))
    np.testing.assert_array_equal(L.matrix_rank(T(a), tol=1e3).numpy(), np.linalg.matrix_rank(a, tol=1e3))
    m = wellcond(rng, 2, 3, 3)
    for n in (0, 1, 2, 5, -1, -3):
        np.testing.assert_allclose(L.matrix_power(T(m), n).numpy(), np.linalg.matrix_power(m, n), rtol=1e-9, atol=1e-9)
    x = rng.standard_normal((2, 4, 6))
    for off in (0, 2, -1):
        np.testing.assert_allclose(L.trace(T(x), offset=off).numpy(), np.linalg.trace(x, offset=off))
    u, v = rng.standard_normal(3), rng.standard_normal(4)
    np.testing.assert_allclose(L.outer(T(u), T(v)).numpy(), np.linalg.outer(u, v))
    mv = rng.standard_normal((2, 1, 4, 3))
    vec = rng.standard_normal((5, 3))
    np.testing.assert_allclose(L.matvec(T(mv), T(vec)).numpy(), np.matvec(mv, vec))
    np.testing.assert_allclose(L.vecdot(T(x), T(x), axis=1).numpy(), np.linalg.vecdot(x, x, axis=1))
    c1, c2 = rng.standard_normal((4, 3, 2)), rng.standard_normal((1, 3, 1))
    np.testing.assert_allclose(L.cross(T(c1), T(c2), axis=1).numpy(), np.linalg.cross(c1, c2, axis=1))


def test_cosine_similarity_vs_torch(rng):
    torch = pytest.importorskip("torch")
    x1, x2 = rng.standard_normal((4, 5)), rng.standard_normal((3, 1, 5))
    want = torch.nn.functional.cosine_similarity(torch.tensor(x1), torch.tensor(x2), dim=-1).numpy()
    np.testing.assert_allclose(L.cosine_similarity(T(x1), T(x2)).numpy(), want, rtol=1e-12)
    z = np.zeros((1, 5))
    want0 = torch.nn.functional.cosine_similarity(torch.tensor(z), torch.tensor(x1), dim=-1).numpy()
    np.testing.assert_allclose(L.cosine_similarity(T(z), T(x1)).numpy(), want0)


# -- gradients vs finite differences (float64) --------------------------------------------------------

def test_grad_solve_inv_det(rng):
    a = wellcond(rng, 2, 3, 3)
    b = rng.standard_normal((3, 2))
    gradcheck(lambda a, b: L.solve(a, b), a, b)
    gradcheck(lambda a, v: L.solve(a, v), a[0], b[:, 0])
    gradcheck(L.inv, a)
    gradcheck(L.det, a)
    gradcheck(lambda a: L.slogdet(a)[1], a)
    gradcheck(lambda a: L.matrix_power(a, 3), a)
    gradcheck(lambda a: L.matrix_power(a, -2), a)


def test_grad_cholesky(rng):
    x = spd(rng, 2, 4, 4)
    gradcheck(lambda x: L.cholesky(sym(x)), x)
    gradcheck(lambda x: L.cholesky(sym(x), upper=True), x)


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 4, 3)])
def test_grad_qr(rng, shape):
    a = rng.standard_normal(shape) + (2 * np.eye(*shape[-2:]))

    def f(a):  # sign-invariant: fix each column of Q / row of R by the sign of R's diagonal
        q, r = L.qr(a)
        d = burn.sign(L.diagonal(r))
        return burn.concat([(q * d[..., None, :]).reshape(a.shape[:-2] + (-1,)),
                            (r * d[..., :, None]).reshape(a.shape[:-2] + (-1,))], axis=-1)
    gradcheck(f, a)
    gradcheck(lambda a: L.qr(a, mode="r") * burn.sign(L.diagonal(L.qr(a, mode="r")))[..., :, None], a)


def _distinct_spectrum(rng, m, n):
    # singular values 1, 2, 3, ... (well separated) with random singular vectors
    k = min(m, n)
    u, _ = np.linalg.qr(rng.standard_normal((m, m)))
    v, _ = np.linalg.qr(rng.standard_normal((n, n)))
    s = np.zeros((m, n))
    s[np.arange(k), np.arange(k)] = np.arange(1, k + 1)
    return u @ s @ v.T


@pytest.mark.parametrize("m,n", [(4, 4), (5, 3), (3, 5)])
def test_grad_svd(rng, m, n):
    a = _distinct_spectrum(rng, m, n)

    def f(a):  # invariant to the sign of each singular pair
        u, s, vh = L.svd(a, full_matrices=False)
        return burn.concat([s, (u * u).reshape((-1,)), (vh * vh).reshape((-1,)), (u @ vh).reshape((-1,))])
    gradcheck(f, a)
    gradcheck(L.svdvals, a)
    gradcheck(lambda a: L.norm(a, ord="nuc"), a)
    gradcheck(lambda a: L.norm(a, ord=2), a)


def test_grad_svd_full_matrices_square(rng):
    a = _distinct_spectrum(rng, 3, 3)
    gradcheck(lambda a: L.svd(a)[0] @ L.svd(a)[2], a)


def test_grad_eigh(rng):
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    a = q @ np.diag([1.0, 2.0, 4.0, 7.0]) @ q.T

    def f(x):
        w, v = L.eigh(sym(x))
        return burn.concat([w, (v * v).reshape((-1,))])
    gradcheck(f, a)
    gradcheck(lambda x: L.eigvalsh(sym(x)), a)


def test_grad_eigh_degenerate_is_finite_for_invariant_loss(rng):
    # repeated eigenvalue 2: eigenvectors are not unique, the projector onto the
    # repeated eigenspace is, and its gradient is exact with the guard
    q, _ = np.linalg.qr(rng.standard_normal((4, 4)))
    a = q @ np.diag([1.0, 2.0, 2.0, 5.0]) @ q.T

    def proj(x):
        w, v = L.eigh(sym(x))
        vs = v[:, 1:3]
        return vs @ vs.mT
    gradcheck(proj, a, atol=1e-5)


def test_grad_lstsq_pinv(rng):
    a = rng.standard_normal((5, 3))
    b = rng.standard_normal((5, 2))
    gradcheck(lambda a, b: L.lstsq(a, b)[0], a, b)
    gradcheck(lambda a, b: L.lstsq(a, b)[1], a, b)
    gradcheck(L.pinv, a)
    gradcheck(L.pinv, a.T.copy())


def test_grad_lu(rng):
    a = wellcond(rng, 2, 4, 4)
    gradcheck(lambda a: burn.concat([x.reshape((2, -1)) for x in L.lu(a)[1:]], axis=-1), a)
    gradcheck(lambda a: L.lu(a, permute_l=True)[0], a)
    gradcheck(lambda a: L.lu_factor(a)[0], a)


@pytest.mark.parametrize("trans", [0, 1])
def test_grad_lu_solve(rng, trans):
    a = wellcond(rng, 4, 4)
    lu0, piv0 = sl.lu_factor(a)
    b = rng.standard_normal((4, 2))
    gradcheck(lambda lu_, b: L.lu_solve((lu_, burn.tensor(piv0, device=lu_.device)), b, trans=trans), lu0, b)
    # and end to end through lu_factor
    gradcheck(lambda a, b: L.lu_solve(L.lu_factor(a), b, trans=trans), a, b)


@pytest.mark.parametrize("lower,trans,unit", [(True, 0, False), (False, 1, False), (True, 1, True), (False, 0, True)])
def test_grad_solve_triangular(rng, lower, trans, unit):
    a = wellcond(rng, 2, 4, 4)
    b = rng.standard_normal((4, 3))
    gradcheck(lambda a, b: L.solve_triangular(a, b, lower=lower, trans=trans, unit_diagonal=unit), a, b)


def test_grad_composites(rng):
    x = rng.standard_normal((3, 4))
    for ord_ in (None, 1, 3, np.inf):
        gradcheck(lambda x: L.norm(x, ord=ord_, axis=1), x)
    gradcheck(lambda x: L.norm(x, ord="fro"), x)
    gradcheck(lambda x: L.trace(x, offset=1), x)
    gradcheck(lambda x: L.diagonal(x, offset=-1), x)
    gradcheck(lambda x, y: L.cosine_similarity(x, y), x, rng.standard_normal((3, 4)))
    gradcheck(lambda x, y: L.cross(x, y, axis=0), x[:, :3].T.copy(), rng.standard_normal((3, 3)))
    gradcheck(lambda m, v: L.matvec(m, v), x, rng.standard_normal(4))


# -- errors ---------------------------------------------------------------------------------------------

def test_shape_and_dtype_errors_at_the_call(rng):
    with pytest.raises(burn.ShapeError, match=r"linalg::cholesky.*square.*\(3, 4\)"):
        L.cholesky(T(rng.standard_normal((3, 4))))
    with pytest.raises(burn.ShapeError, match=r"linalg::inv.*\(5,\)"):
        L.inv(T(rng.standard_normal(5)))
    with pytest.raises(burn.ShapeError, match=r"linalg::solve.*batch.*\(2, 3, 3\).*\(4, 3, 1\)"):
        L.solve(T(wellcond(rng, 2, 3, 3)), T(rng.standard_normal((4, 3, 1))))
    with pytest.raises(burn.ShapeError, match=r"linalg::solve.*3 rows"):
        L.solve(T(wellcond(rng, 3, 3)), T(rng.standard_normal((4, 2))))
    with pytest.raises(burn.ShapeError, match=r"linalg::solve.*vector b needs 3"):
        L.solve(T(wellcond(rng, 3, 3)), T(rng.standard_normal(4)))
    with pytest.raises(burn.ShapeError, match=r"linalg::lu_solve"):
        L.lu_solve((T(np.eye(3)), burn.tensor([0, 1])), T(np.ones(3)))
    with pytest.raises(burn.DTypeError, match=r"linalg::det.*int64"):
        L.det(burn.tensor([[1, 2], [3, 4]]))
    with pytest.raises(burn.DTypeError, match=r"linalg::solve.*different dtypes"):
        L.solve(T(np.eye(2)), T(np.ones((2, 1)), burn.float32))


def test_data_dependent_errors_are_burn_errors(rng):
    # the values decide these, so they surface when the value is computed (read / sync)
    not_pd = np.array([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(burn.BurnError, match=r"linalg::cholesky.*positive definite.*shape=\(2, 2\)"):
        L.cholesky(T(not_pd)).numpy()
    singular = np.array([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(burn.BurnError, match=r"linalg::solve.*[Ss]ingular.*shape=\(2, 2\)"):
        L.solve(T(singular), T(np.ones((2, 1)))).numpy()
    with pytest.raises(burn.BurnError, match=r"linalg::inv.*[Ss]ingular.*shape=\(3, 2, 2\)"):
        L.inv(T(np.stack([np.eye(2), singular, np.eye(2)]))).numpy()
    with pytest.raises(np.linalg.LinAlgError):          # also catchable as numpy's
        L.inv(T(singular)).numpy()
    with pytest.raises(burn.BurnError, match=r"linalg::solve_triangular.*singular"):
        L.solve_triangular(T([[1.0, 2.0], [0.0, 0.0]]), T(np.ones(2))).numpy()
    # the device keeps working after a failed flush
    assert L.det(T(np.eye(2))).item() == 1.0


def test_backward_errors(rng):
    ad = burn.Device.flex().autodiff()
    a = burn.tensor(rng.standard_normal((5, 3)), dtype=burn.float64, device=ad).require_grad()
    q, r = L.qr(a, mode="complete")
    with pytest.raises(burn.AutodiffError, match=r"linalg::qr.*complete"):
        q.sum().backward()
    p, l, u = L.lu(a)
    with pytest.raises(burn.AutodiffError, match=r"linalg::lu.*square"):
        u.sum().backward()


# -- plugin integration ------------------------------------------------------------------------------

def test_burn_info_lists_linalg_flex_kernels():
    out = subprocess.run([sys.executable, "-m", "burn", "info"], capture_output=True, text=True, timeout=60).stdout
    assert "linalg" in out and "burn-linalg" in out
    for op in ("solve", "cholesky", "qr", "svd", "eigh", "lu_solve", "solve_triangular"):
        line = next(ln for ln in out.splitlines() if ln.strip().startswith(f"linalg::{op} "))
        assert "defined by linalg" in line and "flex: linalg" in line, line


def test_higher_priority_qr_kernel_wins(rng):
    from burn.dispatch import registry
    calls = []
    default = registry.kernel("linalg::qr", "flex")

    def fast_qr(a, *, mode="reduced"):
        calls.append(a.shape)
        return default(a, mode=mode)
    registry.register_kernel("linalg::qr", "flex", fast_qr, priority=10, plugin="test-fast-qr")
    try:
        a = rng.standard_normal((6, 4))
        q, r = L.qr(T(a))
        np.testing.assert_allclose((q @ r).numpy(), a, atol=1e-12)
        assert calls == [(6, 4)]
        entries = registry.kernel_entries("linalg::qr", "flex")
        assert [e.plugin for e in entries] == ["test-fast-qr", "linalg"]
        import burn.cli
        line = next(ln for ln in burn.cli.info_text().splitlines() if "linalg::qr " in ln)
        assert "test-fast-qr p=10 (wins)" in line
    finally:
        registry.forget_plugin("test-fast-qr")
    L.qr(T(rng.standard_normal((3, 3))))[0].numpy()
    assert len(calls) == 1 and registry.kernel("linalg::qr", "flex") is default


def test_reference_runs_without_a_kernel(rng):
    # what a backend with no linalg kernel sees: the op falls back to its reference
    from burn.dispatch import registry
    entries = registry.kernels.pop(("linalg::solve_triangular", "flex"))
    registry._invalidate(("linalg::solve_triangular", "flex"))
    try:
        a, b = wellcond(rng, 3, 3), rng.standard_normal((3, 2))
        x = L.solve_triangular(T(a), T(b), lower=True)
        np.testing.assert_allclose(x.numpy(), sl.solve_triangular(a, b, lower=True), atol=1e-10)
        gradcheck(lambda a, b: L.solve_triangular(a, b, lower=True), a, b)
    finally:
        registry.kernels[("linalg::solve_triangular", "flex")] = entries
        registry._invalidate(("linalg::solve_triangular", "flex"))


def test_missing_plugin_message():
    code = ("import sys; sys.modules['burn_linalg'] = None\n"
            "import burn\n"
            "try:\n    burn.linalg\nexcept AttributeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "pip install burn-linalg" in out.stdout, out.stdout + out.stderr


def test_disabled_plugin_hides_namespace():
    code = ("import burn\n"
            "print(hasattr(burn, 'linalg'))\n"
            "try:\n    burn.linalg\nexcept AttributeError as e:\n    print(e)\n")
    env = dict(__import__("os").environ, BURN_PLUGINS_DISABLE="linalg")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert out.stdout.splitlines()[0] == "False", out.stdout + out.stderr
    assert "BURN_PLUGINS_DISABLE" in out.stdout


def test_package_doctests():
    import doctest
    import burn_linalg
    from burn_linalg import _api, _errors
    for mod in (burn_linalg, _api, _errors):
        res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
        assert res.failed == 0 and (res.attempted > 0 or mod is not _errors), (mod.__name__, res)


# -- the package's layout: kernel modules that import cheaply, kernel sources as package data -------

def test_kernel_modules_import_no_scipy_submodule_nor_a_driver():
    """Importing the wgpu / cuda kernel modules (what registration does) imports neither SciPy's
    heavy submodules nor PyOpenCL / CuPy: only running a flex kernel or a host fallback may."""
    heavy = ("scipy.signal", "scipy.fft", "scipy.linalg", "scipy.stats", "pyopencl", "cupy")
    code = ("import sys, burn_linalg._wgpu, burn_linalg._cuda, burn_linalg._flex\n"
            f"print(sorted(m for m in sys.modules if m.split('.')[0] in ('scipy', 'pyopencl', 'cupy')"
            f" and any(m == h or m.startswith(h + '.') for h in {heavy!r})))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.strip() == "[]", r.stdout


def test_opencl_sources_are_package_data_not_python_strings():
    """The OpenCL C lives in burn_linalg/kernels/*.cl, declared as package data; no Python module
    of burn_linalg holds a kernel in a string."""
    import importlib.resources
    import pathlib
    import tomllib

    import burn_linalg
    from burn_linalg._wgpu import common
    pkg = pathlib.Path(burn_linalg.__file__).parent
    for py in pkg.rglob("*.py"):
        assert "__kernel" not in py.read_text(), f"{py}: OpenCL C in a Python string (move it to kernels/*.cl)"
    shipped = {p.name for p in importlib.resources.files("burn_linalg").joinpath("kernels").iterdir()}
    assert set(common._CL_FILES) | {"gather.cl"} == {f for f in shipped if f.endswith(".cl")}
    pyproject = pkg.parent / "pyproject.toml"
    if pyproject.exists():          # a source checkout: the files are declared for a normal install
        cfg = tomllib.loads(pyproject.read_text())["tool"]["setuptools"]
        assert "kernels/*.cl" in cfg["package-data"]["burn_linalg"]
        assert {"burn_linalg", "burn_linalg._wgpu"} <= set(cfg["packages"])
    src = common.cl_text(*common._CL_FILES)
    assert all(f"__kernel void {k}(" in src for k in ("chol", "lus", "qrt", "tridiag_ql", "htridiag_ql", "hestenes"))
    assert [common.program_defines(dt)["FP64"] for dt in ("float32", "float64")] == [0, 1]
    with pytest.raises(ValueError, match="float16"):
        common.program_defines("float16")
