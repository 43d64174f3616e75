"""wgpu kernels of burn.linalg's svd / svdvals / pinv / lstsq (``kernels/svd.cl``).

One-sided (Hestenes) Jacobi on the rows of A^T, from min(M, N) = ``SVD_PRECOND_MIN`` started
from V^T A^T with V the eigenvectors (``eigh``) of the Gram matrix A^T A (2-3x fewer sweeps);
a tall A is first reduced by QR (Jacobi then works on R, U = Q U_R, and
``full_matrices=True`` takes its extra columns from the complete Q); a wide A is the
transpose of a tall one. Singular values descending; each column of U has its
largest-magnitude component positive (Vh's row flips with it); U's columns for zero singular
values are completed to an orthonormal basis by Gram-Schmidt on the device. ``pinv`` from that
SVD (numpy's cutoff) or, ``hermitian=True``, from ``eigh`` of the lower triangle (as numpy);
``lstsq`` = pinv(A) @ B, gelsd's minimum-norm solution.
"""
from __future__ import annotations

import numpy as np

from .common import SWEEPS, copy, fallback, i32, kernel, launch_groups, native_ok, nbatch, transposed
from .eigh_ops import real_eigh
from .qr_ops import qr

SVD_PRECOND_MIN = 16    # Jacobi preconditioned by eigh of the Gram matrix from this min(M, N)


def _hestenes(a, want_vecs):
    """One-sided Jacobi on the rows of X = A^T (M >= N) or X = A (M < N): S, or for M >= N only
    (U (M x N), S, Vh (N x N)) with zero singular values' U columns completed; signs as they come."""
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, (M, N), batch = a.dc, a.shape[-2:], tuple(a.shape[:-2])
    nb, tall = nbatch(batch), M >= N
    K, Lw = min(M, N), max(M, N)
    x = copy(transposed(a) if tall else a)
    sc, nrm = empty(dc, (nb,), a.dtype), empty(dc, (nb, K), a.dtype)
    pre = K >= SVD_PRECOND_MIN
    if pre:
        # X = Y^T X' with Y = V^T, X' = V^T X: G = X X^T = V diag V^T (eigh); X' has nearly orthogonal rows
        x = wk.reshape(x, shape=(nb, K, Lw))
        g = empty(dc, (nb, K, K), a.dtype)
        launch_groups(dc, kernel(dc, a.dtype, "svd_gram"), nb, (i32(K), i32(Lw), x.buf, g.buf, sc.buf))
        vt = copy(transposed(real_eigh(g, "L", True)[1]))
        x, y = copy(wk.matmul(vt, x)), vt
    else:
        y = empty(dc, (nb, K, K), a.dtype)
    launch_groups(dc, kernel(dc, a.dtype, "hestenes"), nb,
                  (i32(K), i32(Lw), i32(SWEEPS), i32(pre), x.buf, y.buf, sc.buf, nrm.buf))
    s = empty(dc, batch + (K,), a.dtype)
    if not want_vecs:
        dc.launch(kernel(dc, a.dtype, "svd_out"), nb * K, (i32(K), i32(Lw), i32(nb), i32(0), x.buf, y.buf, sc.buf,
                                                           nrm.buf, s.buf, s.buf, np.int64(0), i32(0), i32(0), s.buf,
                                                           i32(0), i32(0)))
        return s
    assert tall
    # A = Z S Y: X's normalized rows are U's columns, Y's rows are Vh's rows
    u, vh = empty(dc, batch + (M, K), a.dtype), empty(dc, batch + (K, K), a.dtype)
    dc.launch(kernel(dc, a.dtype, "svd_out"), nb * K,
              (i32(K), i32(Lw), i32(nb), i32(1), x.buf, y.buf, sc.buf, nrm.buf, s.buf, u.buf,
               np.int64(M * K), i32(1), i32(K), vh.buf, i32(K), i32(1)))
    dc.launch(kernel(dc, a.dtype, "svd_complete"), nb, (i32(K), i32(K), i32(Lw), i32(nb), s.buf, u.buf,
                                                        np.int64(M * K), i32(1), i32(K)))
    return u, s, vh


def _svd_tall(a, full_matrices):
    """M >= N. A square matrix goes straight to Jacobi; a tall one is first reduced by QR (A = Q R),
    so Jacobi works on N x N and U = Q U_R; full_matrices' extra columns are Q's (complete mode)."""
    from burn_wgpu import kernels as wk
    M, N = a.shape[-2:]
    if M == N:
        return _hestenes(a, True)
    nd, lead = len(a.shape), list(a.shape[:-2])
    q, r = qr(a, mode="complete" if full_matrices else "reduced")
    if full_matrices:
        r = wk.slice_(r, starts=[0] * nd, stops=lead + [N, N], steps=[1] * nd)
    ur, s, vh = _hestenes(r, True)
    q1 = wk.slice_(q, starts=[0] * nd, stops=lead + [M, N], steps=[1] * nd) if full_matrices else q
    u = wk.matmul(q1, ur)
    if full_matrices:
        rest = wk.slice_(q, starts=[0] * (nd - 1) + [N], stops=lead + [M, M], steps=[1] * nd)
        u = wk.concat(u, rest, axis=nd - 1)
    return u, s, vh


def _svd(a, full_matrices):
    """(U, S, Vh) with the sign convention; a wide A is the transpose of a tall one."""
    M, N = a.shape[-2:]
    if M >= N:
        u, s, vh = _svd_tall(a, full_matrices)
    else:
        u2, s, vh2 = _svd_tall(transposed(a), full_matrices)
        u, vh = copy(transposed(vh2)), copy(transposed(u2))
    K = min(M, N)
    a.dc.launch(kernel(a.dc, a.dtype, "svd_flip"), nbatch(a.shape[:-2]) * K,
                (i32(M), i32(u.shape[-1]), i32(vh.shape[-2]), i32(N), i32(K), i32(nbatch(a.shape[:-2])),
                 u.buf, vh.buf))
    return u, s, vh


def _svd_ok(a):
    return native_ok(a) and a.size


def svd(a, *, full_matrices=True):
    """Batched one-sided Jacobi (after a QR when tall; from min(M, N) >= 16 started from the
    eigenvectors of the Gram matrix); S descending; U's columns have their
    largest-magnitude component positive; zero singular values get orthonormal completions.

    >>> import burn, burn_linalg, numpy as np
    >>> u, s, vh = burn_linalg.svd(burn.tensor([[3.0, 0.0], [0.0, -4.0]], device=burn.Device.wgpu()))
    >>> assert np.allclose(s.numpy(), [4.0, 3.0]) and np.allclose(u.numpy(), [[0.0, 1.0], [1.0, 0.0]])
    """
    if not _svd_ok(a):
        return fallback("svd")(a, full_matrices=full_matrices)
    return _svd(a, full_matrices)


def svdvals(a):
    """The singular values (descending) without the vectors."""
    if not _svd_ok(a):
        return fallback("svdvals")(a)
    return _hestenes(a, False)


def _pinv(a, rcond, hermitian):
    from burn_wgpu.tensor import empty
    M, N = a.shape[-2:]
    if hermitian:
        d, u = real_eigh(a, "L", True)         # numpy's hermitian pinv reads the lower triangle (eigh)
        vh, k = u, N
    else:
        u, d, vh = _svd(a, False)
        k = min(M, N)
    p = empty(a.dc, tuple(a.shape[:-2]) + (N, M), a.dtype)
    T = np.float64 if a.dtype == "float64" else np.float32
    a.dc.launch(kernel(a.dc, a.dtype, "pinv_form"), p.size, (i32(M), i32(N), i32(k), i32(hermitian), T(rcond),
                                                             np.int64(p.size), u.buf, d.buf, vh.buf, p.buf))
    return p


def pinv(a, *, rcond, hermitian=False):
    """numpy.linalg.pinv: from the SVD, or (``hermitian``) from eigh of the lower triangle."""
    if not (_svd_ok(a) and (not hermitian or a.shape[-1] == a.shape[-2])):
        return fallback("pinv")(a, rcond=rcond, hermitian=hermitian)
    return _pinv(a, rcond, bool(hermitian))


def lstsq(a, b, *, rcond):
    """gelsd's minimum-norm solution: X = pinv(A) B, singular values <= rcond * max(S) dropped."""
    if not (_svd_ok(a) and native_ok(b) and a.dtype == b.dtype and b.size):
        return fallback("lstsq")(a, b, rcond=rcond)
    from burn_wgpu import kernels as wk
    if rcond < 0:       # LAPACK: a negative rcond means machine precision
        rcond = float(np.finfo(np.float64 if a.dtype == "float64" else np.float32).eps)
    return wk.matmul(_pinv(a, rcond, False), b)
