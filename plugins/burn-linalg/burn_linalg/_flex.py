"""flex kernels of burn.linalg: numpy.linalg / scipy.linalg (LAPACK), batched.

Kernels receive numpy arrays exactly as given and the op's keyword options,
and return arrays of the shapes and dtypes the ops' ``.meta`` rules declare.
LAPACK has no half-precision routines, so float16/bfloat16 inputs are
computed in float32 and cast back. This module is imported only from the
``burn_register_kernels`` hook, when burn-flex is installed; SciPy is imported
inside the kernels that use it.
"""
from __future__ import annotations

import functools

import numpy as np

from ._errors import LinAlgError


def _up(a):
    # LAPACK routines exist for float32/float64 (and complex64/complex128) only
    return a.astype(np.float32) if a.dtype.itemsize < 4 else a


def _real(dt):
    """The dtype of real results (singular values, Hermitian eigenvalues, log|det|)."""
    return np.empty(0, dt).real.dtype


def _lapack(name):
    """Turn LAPACK failures (singular, not positive definite) into burn errors
    naming the op and the operands; they surface when the value is computed."""
    def deco(fn):
        @functools.wraps(fn)
        def run(*arrays, **kw):
            try:
                return fn(*arrays, **kw)
            except np.linalg.LinAlgError as e:
                ops = ", ".join(f"shape={tuple(a.shape)} dtype={a.dtype}" for a in arrays)
                raise LinAlgError(f"linalg::{name}: {e} (input {ops}); {_FIX.get(name, '')}".rstrip("; ")) from e
        run.linalg_name = name
        return run
    return deco


_FIX = {
    "solve": "the matrix is singular: check it, or use burn.linalg.lstsq for a least-squares solution",
    "inv": "the matrix is singular: use burn.linalg.pinv for a pseudo-inverse",
    "cholesky": "the matrix is not symmetric positive definite (add a small multiple of the identity?)",
    "lu_solve": "the factorized matrix is singular",
    "solve_triangular": "the triangular matrix has a zero on its diagonal",
    "svd": "SVD did not converge",
    "eigh": "the eigenvalue iteration did not converge",
    "eig": "the eigenvalue iteration did not converge",
}


def _scipy_ok(*arrays):
    # scipy's batched wrappers reject zero-size batches: numpy handles empty inputs
    return all(a.size for a in arrays)


@_lapack("solve")
def solve(a, b):
    dt = a.dtype
    a, b = _up(a), _up(b)
    if _scipy_ok(a, b):
        import scipy.linalg as sl
        return sl.solve(a, b, check_finite=False).astype(dt, copy=False)
    return np.linalg.solve(a, b).astype(dt, copy=False)


@_lapack("inv")
def inv(a):
    if _scipy_ok(a):
        import scipy.linalg as sl
        return sl.inv(_up(a), check_finite=False).astype(a.dtype, copy=False)
    return np.linalg.inv(_up(a)).astype(a.dtype, copy=False)


@_lapack("det")
def det(a):
    if _scipy_ok(a):
        import scipy.linalg as sl
        return np.asarray(sl.det(_up(a), check_finite=False)).astype(a.dtype, copy=False)
    return np.asarray(np.linalg.det(_up(a))).astype(a.dtype, copy=False)


@_lapack("slogdet")
def slogdet(a):
    s, l = np.linalg.slogdet(_up(a))
    return np.asarray(s).astype(a.dtype, copy=False), np.asarray(l).astype(_real(a.dtype), copy=False)


@_lapack("cholesky")
def cholesky(a, *, upper=False):
    if _scipy_ok(a):
        import scipy.linalg as sl
        if upper:   # numpy reads the lower triangle for either factor: so do we
            return np.swapaxes(sl.cholesky(_up(a), lower=True, check_finite=False), -1, -2).conj().astype(a.dtype)
        return sl.cholesky(_up(a), lower=True, check_finite=False).astype(a.dtype, copy=False)
    return np.linalg.cholesky(_up(a), upper=upper).astype(a.dtype, copy=False)


@_lapack("qr")
def qr(a, *, mode="reduced"):
    dt = a.dtype
    if not _scipy_ok(a):
        r = np.linalg.qr(_up(a), mode=mode)
        return r.astype(dt, copy=False) if mode == "r" else tuple(x.astype(dt, copy=False) for x in r)
    import scipy.linalg as sl
    if mode == "r":
        r = sl.qr(_up(a), mode="r", check_finite=False)
        r = r[0] if isinstance(r, tuple) else r                 # (R,) unbatched, R batched
        return r[..., :min(a.shape[-2:]), :].astype(dt)         # numpy's reduced R
    q, r = sl.qr(_up(a), mode="economic" if mode == "reduced" else "full", check_finite=False)
    return q.astype(dt, copy=False), r.astype(dt, copy=False)


@_lapack("svd")
def svd(a, *, full_matrices=True):
    dt = a.dtype
    if _scipy_ok(a):
        import scipy.linalg as sl
        u, s, vh = sl.svd(_up(a), full_matrices=full_matrices, check_finite=False)
    else:
        u, s, vh = np.linalg.svd(_up(a), full_matrices=full_matrices)
    return u.astype(dt, copy=False), s.astype(_real(dt), copy=False), vh.astype(dt, copy=False)


@_lapack("svd")
def svdvals(a):
    if _scipy_ok(a):
        import scipy.linalg as sl
        return sl.svd(_up(a), compute_uv=False, check_finite=False).astype(_real(a.dtype), copy=False)
    return np.linalg.svd(_up(a), compute_uv=False).astype(_real(a.dtype), copy=False)


@_lapack("eigh")
def eigh(a, *, UPLO="L"):
    if _scipy_ok(a):
        import scipy.linalg as sl
        # driver 'evd' is numpy's syevd: same results, faster than scipy's default evr here
        w, v = sl.eigh(_up(a), lower=UPLO == "L", driver="evd", check_finite=False)
    else:
        w, v = np.linalg.eigh(_up(a), UPLO=UPLO)
    return w.astype(_real(a.dtype), copy=False), v.astype(a.dtype, copy=False)


@_lapack("eigh")
def eigvalsh(a, *, UPLO="L"):
    if _scipy_ok(a):
        import scipy.linalg as sl
        w = sl.eigh(_up(a), lower=UPLO == "L", eigvals_only=True, driver="evd", check_finite=False)
    else:
        w = np.linalg.eigvalsh(_up(a), UPLO=UPLO)
    return w.astype(_real(a.dtype), copy=False)


def _complex(dt):
    """The complex dtype of general eigenvalues/eigenvectors (complex even when they are real, as the
    Array API says; numpy returns real arrays when every eigenvalue is real)."""
    return np.result_type(_up(np.empty(0, dt)).dtype, np.complex64)


@_lapack("eig")
def eig(a):
    w, v = np.linalg.eig(_up(a))
    return w.astype(_complex(a.dtype), copy=False), v.astype(_complex(a.dtype), copy=False)


@_lapack("eig")
def eigvals(a):
    return np.linalg.eigvals(_up(a)).astype(_complex(a.dtype), copy=False)


@_lapack("lstsq")
def lstsq(a, b, *, rcond):
    dt = a.dtype
    a, b = _up(a), _up(b)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    if not batch:
        return np.linalg.lstsq(a, b, rcond=rcond)[0].astype(dt, copy=False)
    # numpy's lstsq (gelsd) is 2-D only: loop over the broadcast batch
    a = np.broadcast_to(a, batch + a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:])
    out = np.empty(batch + (a.shape[-1], b.shape[-1]), dtype=np.result_type(a, b))
    for idx in np.ndindex(*batch):
        out[idx] = np.linalg.lstsq(a[idx], b[idx], rcond=rcond)[0]
    return out.astype(dt, copy=False)


@_lapack("pinv")
def pinv(a, *, rcond, hermitian=False):
    return np.linalg.pinv(_up(a), rcond=rcond, hermitian=hermitian).astype(a.dtype, copy=False)


@_lapack("lu")
def lu(a, *, permute_l=False):
    import scipy.linalg as sl
    r = sl.lu(_up(a), permute_l=permute_l, check_finite=False)
    return tuple(x.astype(a.dtype, copy=False) for x in r)


@_lapack("lu_factor")
def lu_factor(a):
    import scipy.linalg as sl
    lu_, piv = sl.lu_factor(_up(a), check_finite=False)
    if np.isscalar(piv) or np.ndim(piv) == 0:
        piv = np.asarray([piv])
    return lu_.astype(a.dtype, copy=False), np.asarray(piv, dtype=np.int32)


@_lapack("lu_solve")
def lu_solve(lu_, piv, b, *, trans=0):
    import scipy.linalg as sl
    dt = b.dtype
    batch = np.broadcast_shapes(lu_.shape[:-2], piv.shape[:-1], b.shape[:-2])
    lu_ = np.broadcast_to(_up(lu_), batch + lu_.shape[-2:])
    piv = np.broadcast_to(piv, batch + piv.shape[-1:])
    b = np.broadcast_to(_up(b), batch + b.shape[-2:])
    _check_nonsingular("lu_solve", lu_)
    return sl.lu_solve((lu_, piv), b, trans=trans, check_finite=False).astype(dt, copy=False)


@_lapack("solve_triangular")
def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False):
    import scipy.linalg as sl
    dt = b.dtype
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(_up(a), batch + a.shape[-2:])
    b = np.broadcast_to(_up(b), batch + b.shape[-2:])
    if not unit_diagonal:
        _check_nonsingular("solve_triangular", a)
    return sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal,
                               check_finite=False).astype(dt, copy=False)


def _check_nonsingular(name, tri):
    # trtrs/getrs do not report a zero pivot through scipy's batched path:
    # check the diagonal ourselves rather than return inf/nan silently
    d = np.diagonal(tri, axis1=-2, axis2=-1)
    if d.size and not np.all(d):
        raise np.linalg.LinAlgError("singular matrix: zero on the diagonal of the triangular factor")


def diagonal(x, *, offset=0):
    return np.diagonal(x, offset=offset, axis1=-2, axis2=-1).copy()


KERNELS = {
    f.__name__: f for f in (solve, inv, det, slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh, eig, eigvals,
              lstsq, pinv, lu, lu_factor, lu_solve, solve_triangular)
}
KERNELS["diagonal"] = diagonal
