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
from burn_wgpu import api as wgpu

from .common import SWEEPS, copy, fallback, kernel, launch, launch_groups, native_ok, nbatch, transposed
from .eigh_ops import real_eigh
from .qr_ops import qr

SVD_PRECOND_MIN = 16    # Jacobi preconditioned by eigh of the Gram matrix from this min(M, N)


def _hestenes(a, want_vecs):
    """One-sided Jacobi on the rows of X = A^T (M >= N) or X = A (M < N): S, or for M >= N only
    (U (M x N), S, Vh (N x N)) with zero singular values' U columns completed; signs as they come."""
    dc, (M, N), batch = wgpu.device_of(a), a.shape[-2:], tuple(a.shape[:-2])
    nb, tall = nbatch(batch), M >= N
    K, Lw = min(M, N), max(M, N)
    x = copy(transposed(a) if tall else a)
    sc, nrm = wgpu.empty((nb,), a.dtype, dc), wgpu.empty((nb, K), a.dtype, dc)
    pre = K >= SVD_PRECOND_MIN
    if pre:
        # X = Y^T X' with Y = V^T, X' = V^T X: G = X X^T = V diag V^T (eigh); X' has nearly orthogonal rows
        x = wgpu.reshape(x, (nb, K, Lw))
        g = wgpu.empty((nb, K, K), a.dtype, dc)
        launch_groups(dc, kernel(dc, a.dtype, "svd_gram"), nb, (K, Lw, x, g, sc))
        vt = copy(transposed(real_eigh(g, "L", True)[1]))
        x, y = copy(wgpu.matmul(vt, x)), vt
    else:
        y = wgpu.empty((nb, K, K), a.dtype, dc)
    launch_groups(dc, kernel(dc, a.dtype, "hestenes"), nb, (K, Lw, SWEEPS, pre, x, y, sc, nrm))
    s = wgpu.empty(batch + (K,), a.dtype, dc)
    if not want_vecs:
        launch(dc, kernel(dc, a.dtype, "svd_out"), nb * K,
               (K, Lw, nb, 0, x, y, sc, nrm, s, s, np.int64(0), 0, 0, s, 0, 0))
        return s
    assert tall
    # A = Z S Y: X's normalized rows are U's columns, Y's rows are Vh's rows
    u, vh = wgpu.empty(batch + (M, K), a.dtype, dc), wgpu.empty(batch + (K, K), a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "svd_out"), nb * K,
           (K, Lw, nb, 1, x, y, sc, nrm, s, u, np.int64(M * K), 1, K, vh, K, 1))
    launch(dc, kernel(dc, a.dtype, "svd_complete"), nb, (K, K, Lw, nb, s, u, np.int64(M * K), 1, K))
    return u, s, vh


def _svd_tall(a, full_matrices):
    """M >= N. A square matrix goes straight to Jacobi; a tall one is first reduced by QR (A = Q R),
    so Jacobi works on N x N and U = Q U_R; full_matrices' extra columns are Q's (complete mode)."""
    M, N = a.shape[-2:]
    if M == N:
        return _hestenes(a, True)
    nd, lead = len(a.shape), list(a.shape[:-2])
    q, r = qr(a, mode="complete" if full_matrices else "reduced")
    if full_matrices:
        r = wgpu.slice(r, [0] * nd, lead + [N, N], [1] * nd)
    ur, s, vh = _hestenes(r, True)
    q1 = wgpu.slice(q, [0] * nd, lead + [M, N], [1] * nd) if full_matrices else q
    u = wgpu.matmul(q1, ur)
    if full_matrices:
        rest = wgpu.slice(q, [0] * (nd - 1) + [N], lead + [M, M], [1] * nd)
        u = wgpu.concat([u, rest], nd - 1)
    return u, s, vh


def _svd(a, full_matrices):
    """(U, S, Vh) with the sign convention; a wide A is the transpose of a tall one."""
    M, N = a.shape[-2:]
    if M >= N:
        u, s, vh = _svd_tall(a, full_matrices)
    else:
        u2, s, vh2 = _svd_tall(transposed(a), full_matrices)
        u, vh = copy(transposed(vh2)), copy(transposed(u2))
    K, nb, dc = min(M, N), nbatch(a.shape[:-2]), wgpu.device_of(a)
    launch(dc, kernel(dc, a.dtype, "svd_flip"), nb * K, (M, u.shape[-1], vh.shape[-2], N, K, nb, u, vh))
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
    """The singular values (descending) without the vectors.

    >>> import burn, burn_linalg
    >>> burn_linalg.svdvals(burn.tensor([[0.0, 2.0], [-3.0, 0.0]], device=burn.Device.wgpu())).numpy().tolist()
    [3.0, 2.0]
    """
    if not _svd_ok(a):
        return fallback("svdvals")(a)
    return _hestenes(a, False)


def _pinv(a, rcond, hermitian):
    M, N = a.shape[-2:]
    if hermitian:
        d, u = real_eigh(a, "L", True)         # numpy's hermitian pinv reads the lower triangle (eigh)
        vh, k = u, N
    else:
        u, d, vh = _svd(a, False)
        k = min(M, N)
    dc = wgpu.device_of(a)
    p = wgpu.empty(tuple(a.shape[:-2]) + (N, M), a.dtype, dc)
    T = np.float64 if a.dtype == "float64" else np.float32
    launch(dc, kernel(dc, a.dtype, "pinv_form"), p.size, (M, N, k, hermitian, T(rcond), np.int64(p.size), u, d, vh, p))
    return p


def pinv(a, *, rcond, hermitian=False):
    """numpy.linalg.pinv: from the SVD, or (``hermitian``) from eigh of the lower triangle.

    >>> import burn, burn_linalg
    >>> burn_linalg.pinv(burn.tensor([[2.0, 0.0], [0.0, 0.0]], device=burn.Device.wgpu())).numpy().tolist()
    [[0.5, 0.0], [0.0, 0.0]]
    """
    if not (_svd_ok(a) and (not hermitian or a.shape[-1] == a.shape[-2])):
        return fallback("pinv")(a, rcond=rcond, hermitian=hermitian)
    return _pinv(a, rcond, bool(hermitian))


def lstsq(a, b, *, rcond):
    """gelsd's minimum-norm solution: X = pinv(A) B, singular values <= rcond * max(S) dropped.

    >>> import burn, burn_linalg, numpy as np
    >>> a = burn.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]], device=burn.Device.wgpu())
    >>> x = burn_linalg.lstsq(a, burn.tensor([[1.0], [1.0], [2.0]], device=a.device)).solution
    >>> assert np.allclose(x.numpy(), [[1.0], [1.0]], atol=1e-6)
    """
    if not (_svd_ok(a) and native_ok(b) and a.dtype == b.dtype and b.size):
        return fallback("lstsq")(a, b, rcond=rcond)
    if rcond < 0:       # LAPACK: a negative rcond means machine precision
        rcond = float(np.finfo(np.float64 if a.dtype == "float64" else np.float32).eps)
    return wgpu.matmul(_pinv(a, rcond, False), b)
