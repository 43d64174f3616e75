"""cuda kernels of burn.linalg: cupy.linalg (cuSOLVER) and cupyx.scipy.linalg, on cupy arrays.

The flex kernels (``_flex``) are the reference: same results, shapes and
dtypes (half precision computed in float32 and cast back, as LAPACK and
cuSOLVER have no half routines), and the same errors. cuSOLVER reports a
singular or non positive definite matrix through an ``info`` word that CuPy
only checks under ``cupyx.errstate(linalg="raise")``; the kernels that flex
makes raise run under it, and the error becomes :class:`LinAlgError` naming
the op (checking ``info`` is a device sync, as reading flex's result is).

Native, batched: ``solve``, ``inv``, ``det``, ``slogdet``, ``cholesky``,
``qr``, ``svd``, ``svdvals``, ``eigh``, ``eigvalsh``, ``pinv`` (from the
SVD, as numpy computes it) and ``diagonal``. ``lstsq``, ``lu``,
``lu_factor``, ``lu_solve`` and ``solve_triangular`` wrap CuPy's 2-D
routines in a loop over the broadcast batch (the data stays on the device).
``HOST_FALLBACK`` (download, the flex kernel, upload; ``burn info`` marks
them) is ``eig`` and ``eigvals``: general (non-symmetric) eigenproblems have no
batched cuSOLVER routine that CuPy wraps, so they run LAPACK's geev on the host.

This module is imported only when the cuda backend is registered, which
burn-cuda does even without CuPy: CuPy is imported inside the kernels. Everything of
burn-cuda goes through its public kernel API, ``burn_cuda.api``.
"""
from __future__ import annotations

import functools

import numpy as np
from burn_cuda import api as cuda

from . import _flex
from ._errors import LinAlgError


def _cp():
    return cuda.cupy()      # imported on first use (BackendUnavailable without CuPy)


def _real(dt):
    """The dtype of real results (singular values, Hermitian eigenvalues, log|det|)."""
    return np.empty(0, dt).real.dtype


def _up(a):
    # cuSOLVER routines exist for float32/float64 only
    return a.astype(np.float32) if a.dtype.itemsize < 4 else a


def _linalg(name, *, check=True):
    """Run under ``errstate(linalg="raise")`` (when ``check``) and turn LinAlgErrors into burn's,
    worded as flex words them. Runs in burn-cuda's scope (device, stream, pool) of the arrays."""
    def deco(fn):
        @functools.wraps(fn)
        def run(*arrays, **kw):
            import contextlib

            import cupyx
            cp = _cp()
            with cupyx.errstate(linalg="raise") if check else contextlib.nullcontext():
                try:
                    # burn-cuda's scope: the arrays' device, burn's stream and memory pool
                    return cuda.on_device(fn)(*arrays, **kw)
                except (np.linalg.LinAlgError, getattr(cp.linalg, "LinAlgError", np.linalg.LinAlgError)) as e:
                    if isinstance(e, LinAlgError):
                        raise
                    ops = ", ".join(f"shape={tuple(a.shape)} dtype={a.dtype}" for a in arrays)
                    raise LinAlgError(f"linalg::{name}: {e} (input {ops}); "
                                      f"{_flex._FIX.get(name, '')}".rstrip("; ")) from e
        run.__name__ = f"cuda_linalg_{fn.__name__}"
        run.linalg_name = name
        return run
    return deco


def _bcast(cp, batch, *arrays):
    return [cp.ascontiguousarray(cp.broadcast_to(a, batch + a.shape[-2:])) for a in arrays]


def _loop(cp, batch, fn, *arrays):
    """Apply a 2-D CuPy routine over the batch (arrays already broadcast to ``batch``); tuple outputs
    are stacked per position."""
    if not batch:
        return fn(*arrays)
    outs = [fn(*[a[idx] for a in arrays]) for idx in np.ndindex(*batch)]
    if not outs:
        raise NotImplementedError("empty batch")
    if isinstance(outs[0], tuple):
        return tuple(cp.stack([o[i] for o in outs]).reshape(batch + outs[0][i].shape) for i in range(len(outs[0])))
    return cp.stack(outs).reshape(batch + outs[0].shape)


def _on_host(name, *arrays, **kw):
    """flex's kernel on host copies, uploaded (for empty inputs, which CuPy's routines reject)."""
    cp = _cp()
    r = _flex.KERNELS[name](*[cp.asnumpy(a) for a in arrays], **kw)
    return tuple(cp.asarray(x) for x in r) if isinstance(r, tuple) else cp.asarray(r)


def _empty(*arrays):
    return any(a.size == 0 for a in arrays)


@_linalg("solve")
def solve(a, b):
    cp = _cp()
    if _empty(a, b):
        return _on_host("solve", a, b)
    dt = b.dtype
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    # same ndim on both sides: CuPy then reads b as a stack of matrices, never as vectors
    a, b = _bcast(cp, batch, _up(a), _up(b))
    return cp.linalg.solve(a, b).astype(dt, copy=False)


@_linalg("inv")
def inv(a):
    cp = _cp()
    if _empty(a):
        return _on_host("inv", a)
    return cp.linalg.inv(_up(a)).astype(a.dtype, copy=False)


@_linalg("det", check=False)        # a singular matrix has determinant 0: no error
def det(a):
    cp = _cp()
    if _empty(a):
        return _on_host("det", a)
    return cp.asarray(cp.linalg.det(_up(a))).astype(a.dtype, copy=False)


@_linalg("slogdet", check=False)
def slogdet(a):
    cp = _cp()
    if _empty(a):
        return _on_host("slogdet", a)
    s, l = cp.linalg.slogdet(_up(a))
    return cp.asarray(s).astype(a.dtype, copy=False), cp.asarray(l).astype(_real(a.dtype), copy=False)


@_linalg("cholesky")
def cholesky(a, *, upper=False):
    cp = _cp()
    if _empty(a):
        return _on_host("cholesky", a, upper=upper)
    low = cp.linalg.cholesky(_up(a))        # reads the lower triangle, as flex (numpy) does for either factor
    if upper:
        low = cp.ascontiguousarray(cp.swapaxes(low.conj() if low.dtype.kind == "c" else low, -1, -2))
    return low.astype(a.dtype, copy=False)


@_linalg("qr", check=False)
def qr(a, *, mode="reduced"):
    cp = _cp()
    if _empty(a):
        return _on_host("qr", a, mode=mode)
    r = cp.linalg.qr(_up(a), mode=mode)
    if mode == "r":
        return r.astype(a.dtype, copy=False)
    return tuple(x.astype(a.dtype, copy=False) for x in r)


@_linalg("svd")
def svd(a, *, full_matrices=True):
    cp = _cp()
    if _empty(a):
        return _on_host("svd", a, full_matrices=full_matrices)
    u, s, vh = cp.linalg.svd(_up(a), full_matrices=full_matrices)
    return u.astype(a.dtype, copy=False), s.astype(_real(a.dtype), copy=False), vh.astype(a.dtype, copy=False)


@_linalg("svd")
def svdvals(a):
    cp = _cp()
    if _empty(a):
        return _on_host("svdvals", a)
    return cp.linalg.svd(_up(a), compute_uv=False).astype(_real(a.dtype), copy=False)


@_linalg("eigh")
def eigh(a, *, UPLO="L"):
    cp = _cp()
    if _empty(a):
        return _on_host("eigh", a, UPLO=UPLO)
    w, v = cp.linalg.eigh(_up(a), UPLO=UPLO)
    return w.astype(_real(a.dtype), copy=False), v.astype(a.dtype, copy=False)


@_linalg("eigh")
def eigvalsh(a, *, UPLO="L"):
    cp = _cp()
    if _empty(a):
        return _on_host("eigvalsh", a, UPLO=UPLO)
    return cp.linalg.eigvalsh(_up(a), UPLO=UPLO).astype(_real(a.dtype), copy=False)


@_linalg("lstsq", check=False)
def lstsq(a, b, *, rcond):
    cp = _cp()
    if _empty(a, b):
        return _on_host("lstsq", a, b, rcond=rcond)
    dt = a.dtype
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a, b = _bcast(cp, batch, _up(a), _up(b))
    # cupy.linalg.lstsq (like numpy's) is 2-D only
    return _loop(cp, batch, lambda a, b: cp.linalg.lstsq(a, b, rcond=rcond)[0], a, b).astype(dt, copy=False)


@_linalg("pinv", check=False)
def pinv(a, *, rcond, hermitian=False):
    cp = _cp()
    if _empty(a):
        return _on_host("pinv", a, rcond=rcond, hermitian=hermitian)
    # numpy's definition, batched (cupy.linalg.pinv is 2-D only in older CuPy); for a symmetric
    # matrix the SVD gives the same pseudo-inverse as numpy's eigh path
    x = _up(a)
    u, s, vh = cp.linalg.svd(x, full_matrices=False)
    cutoff = cp.asarray(rcond, dtype=s.dtype)[..., None] * cp.max(s, axis=-1, keepdims=True)
    sinv = cp.where(s > cutoff, 1 / cp.where(s > cutoff, s, 1), 0).astype(s.dtype, copy=False)
    r = cp.matmul(cp.swapaxes(vh.conj(), -1, -2) * sinv[..., None, :], cp.swapaxes(u.conj(), -1, -2))
    return r.astype(a.dtype, copy=False)


@_linalg("lu", check=False)
def lu(a, *, permute_l=False):
    cp = _cp()
    if _empty(a):
        return _on_host("lu", a, permute_l=permute_l)
    import cupyx.scipy.linalg as csl
    batch = tuple(a.shape[:-2])
    r = _loop(cp, batch, lambda m: tuple(csl.lu(m, permute_l=permute_l)), _up(a))
    return tuple(x.astype(a.dtype, copy=False) for x in r)


@_linalg("lu_factor", check=False)   # a singular matrix factors (zero pivot), as scipy's does
def lu_factor(a):
    cp = _cp()
    if _empty(a):
        return _on_host("lu_factor", a)
    import cupyx.scipy.linalg as csl
    batch = tuple(a.shape[:-2])
    lu_, piv = _loop(cp, batch, lambda m: tuple(csl.lu_factor(m)), _up(a))
    return lu_.astype(a.dtype, copy=False), piv.astype(np.int32, copy=False)


def _check_nonsingular(cp, tri):
    # as flex: a zero on the triangular factor's diagonal is an error, not silent inf/nan (one sync)
    if bool(cp.any(cp.diagonal(tri, axis1=-2, axis2=-1) == 0)):
        raise np.linalg.LinAlgError("singular matrix: zero on the diagonal of the triangular factor")


@_linalg("lu_solve", check=False)
def lu_solve(lu_, piv, b, *, trans=0):
    cp = _cp()
    if _empty(lu_, piv, b):
        return _on_host("lu_solve", lu_, piv, b, trans=trans)
    import cupyx.scipy.linalg as csl
    dt = b.dtype
    batch = tuple(np.broadcast_shapes(lu_.shape[:-2], piv.shape[:-1], b.shape[:-2]))
    lu_, b = _bcast(cp, batch, _up(lu_), _up(b))
    # cupyx's lu_solve hands ``ipiv.data.ptr`` to cuSOLVER's getrs (int* pivots) without a cast:
    # any other integer dtype (an int64 piv from the user) would be read as garbage pivots
    piv = cp.ascontiguousarray(cp.broadcast_to(piv, batch + piv.shape[-1:]), dtype=np.int32)
    _check_nonsingular(cp, lu_)
    return _loop(cp, batch, lambda m, p, v: csl.lu_solve((m, p), v, trans=trans), lu_, piv, b).astype(dt, copy=False)


@_linalg("solve_triangular", check=False)
def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False):
    cp = _cp()
    if _empty(a, b):
        return _on_host("solve_triangular", a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    import cupyx.scipy.linalg as csl
    dt = b.dtype
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    a, b = _bcast(cp, batch, _up(a), _up(b))
    if not unit_diagonal:
        _check_nonsingular(cp, a)
    return _loop(cp, batch, lambda m, v: csl.solve_triangular(m, v, trans=trans, lower=lower,
                                                              unit_diagonal=unit_diagonal), a, b).astype(dt, copy=False)


@_linalg("diagonal", check=False)
def diagonal(x, *, offset=0):
    cp = _cp()
    return cp.ascontiguousarray(cp.diagonal(x, offset=offset, axis1=-2, axis2=-1))


NATIVE = {f.__name__.removeprefix("cuda_linalg_"): f for f in (
    solve, inv, det, slogdet, cholesky, qr, svd, svdvals, eigh, eigvalsh, lstsq, pinv, lu, lu_factor,
    lu_solve, solve_triangular, diagonal)}


def _fallback_kernel(name):
    def k(*xs, **kw):
        return _on_host(name, *xs, **kw)
    k.__name__ = f"cuda_host_linalg_{name}"
    return k


KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, LAPACK, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
