"""wgpu kernels of burn.linalg, the factorizations (``kernels/lu.cl``): Cholesky, triangular
solves, LU with partial pivoting and what is built from it (solve, inv, det, slogdet, lu_factor,
lu_solve, scipy's P, L, U). One work-group per matrix for the factorizations; the solves run
one work-item per right-hand-side column on X^T, whose rows are contiguous."""
from __future__ import annotations

import numpy as np
from burn_wgpu import api as wgpu

from .common import copy, fallback, kernel, launch, launch_groups, native_ok, nbatch, raise_if, transposed, zeros_i32


def cholesky(a, *, upper=False):
    """Batched Cholesky (the lower triangle read), one work-group per matrix.

    >>> import burn, burn_linalg
    >>> burn_linalg.cholesky(burn.tensor([[4.0, 2.0], [2.0, 5.0]], device=burn.Device.wgpu())).numpy().tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    if not native_ok(a) or a.size == 0:
        return fallback("cholesky")(a, upper=upper)
    dc, N = wgpu.device_of(a), a.shape[-1]
    nb = nbatch(a.shape[:-2])
    out = copy(a)
    info = zeros_i32(dc, nb)
    launch_groups(dc, kernel(dc, a.dtype, "chol"), nb, (N, out, info))
    raise_if("cholesky", info, a.shape, a.dtype, nb)
    if upper:
        out = copy(transposed(out))
    return out


def _trsm(dc, a, rhs, nb, *, lower, trans, unit, name, a_shape):
    """X (nb, N, K) contiguous solving op(a) X = rhs; ``a`` contiguous per matrix (batch stride may
    be 0); ``rhs`` (nb, N, K), any strides. Without a transpose the kernel runs on X^T (contiguous rows)."""
    N, K = rhs.shape[-2], rhs.shape[-1]
    sa = a.strides[0] if len(a.shape) > 2 else 0
    xt = not trans
    x = copy(transposed(rhs)) if xt else copy(rhs)
    rs, cs = (1, N) if xt else (K, 1)
    info = zeros_i32(dc, nb)
    launch(dc, kernel(dc, a.dtype, "trsm"), nb * K,
           (N, K, nb, lower, trans, unit, wgpu.buffer(a), a.offset, np.int64(sa), x, info, rs, cs))
    if not unit:
        raise_if(name, info, a_shape, a.dtype, nb)
    return copy(transposed(x)) if xt else x


def _flat_batch(x, batch):
    """``x`` broadcast to ``batch`` + its matrix dims, as (nb, M, N) with per-matrix contiguous rows."""
    shape = tuple(batch) + x.shape[-2:]
    v = wgpu.broadcast_to(x, shape)
    m = v.shape[-2:]
    st = v.strides[-2:]
    if st != (m[1], 1) and m[0] * m[1] > 1:
        v = copy(v)
    return wgpu.reshape(v, (nbatch(batch),) + tuple(m))


def _flat_vec(v, batch):
    """``v`` broadcast to ``batch`` + its last dim, as (nb, N) with contiguous rows."""
    shape = tuple(batch) + v.shape[-1:]
    w = wgpu.broadcast_to(v, shape)
    if w.strides[-1] != 1 and w.shape[-1] > 1:
        w = copy(w)
    return wgpu.reshape(w, (nbatch(batch),) + v.shape[-1:])


def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False):
    """op(A) X = B with A triangular (trans 0 / 1 / 2 as scipy's; real, so 2 is 1).

    >>> import burn, burn_linalg
    >>> a = burn.tensor([[2.0, 0.0], [1.0, 1.0]], device=burn.Device.wgpu())
    >>> burn_linalg.solve_triangular(a, burn.tensor([[2.0], [3.0]], device=a.device), lower=True).numpy().tolist()
    [[1.0], [2.0]]
    """
    if not native_ok(a, b) or a.dtype != b.dtype or a.size == 0 or b.size == 0:
        return fallback("solve_triangular")(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    nb = nbatch(batch)
    af = _flat_batch(a, batch)
    x = _trsm(wgpu.device_of(a), af, _flat_batch(b, batch), nb, lower=bool(lower), trans=trans in (1, 2, "T", "C"),
              unit=bool(unit_diagonal), name="solve_triangular", a_shape=a.shape)
    return wgpu.reshape(x, batch + b.shape[-2:])


def _lu(a, name, batch=None):
    """(LU factors (nb, N, N), pivots (nb, N) int32, nb); raises on a singular matrix if name is given."""
    dc, N = wgpu.device_of(a), a.shape[-1]
    batch = a.shape[:-2] if batch is None else batch
    nb = nbatch(batch)
    lu_ = wgpu.reshape(copy(a, tuple(batch) + a.shape[-2:]), (nb, N, N))
    piv = wgpu.empty((nb, N), "int32", dc)
    info = zeros_i32(dc, nb)
    launch_groups(dc, kernel(dc, a.dtype, "lu"), nb, (N, N, lu_, piv, info))
    if name:
        raise_if(name, info, a.shape, a.dtype, nb)
    return lu_, piv, nb


def lu_factor(a):
    """scipy.linalg.lu_factor: the getrf factors and 0-based pivots; a singular matrix factors.

    >>> import burn, burn_linalg
    >>> lu, piv = burn_linalg.lu_factor(burn.tensor([[1.0, 2.0], [4.0, 4.0]], device=burn.Device.wgpu()))
    >>> lu.numpy().tolist(), piv.numpy().tolist()
    ([[4.0, 4.0], [0.25, 1.0]], [1, 1])
    """
    if not native_ok(a) or a.size == 0:
        return fallback("lu_factor")(a)
    lu_, piv, _ = _lu(a, None)     # scipy warns (does not raise) on a singular matrix: so do we not raise
    return wgpu.reshape(lu_, a.shape), wgpu.reshape(piv, a.shape[:-1])


def _lus(dc, lu_, piv, rhs, nb, eye, trans=0):
    """X (nb, N, K) contiguous = A^-1 rhs (A^-T rhs with trans) from ``lu_`` (nb, N, N) and ``piv``
    (nb, N) with per-matrix contiguous rows (batch stride may be 0); ``rhs``: (nb, N, K), any
    strides, or None for the identity (``eye``). The plain solve runs on X^T (contiguous rows)."""
    N = lu_.shape[-1]
    K = N if rhs is None else rhs.shape[-1]
    xt = not trans
    if rhs is None:
        x = wgpu.empty((nb, K, N) if xt else (nb, N, K), lu_.dtype, dc)
    else:
        x = copy(transposed(rhs)) if xt else copy(rhs)
    rs, cs = (1, N) if xt else (K, 1)
    launch(dc, kernel(dc, lu_.dtype, "lus"), nb * K,
           (N, K, nb, eye, trans, wgpu.buffer(lu_), np.int64(lu_.offset), np.int64(lu_.strides[0]),
            wgpu.buffer(piv), np.int64(piv.offset), np.int64(piv.strides[0]), x, rs, cs))
    return copy(transposed(x)) if xt else x


def lu_solve(lu_, piv, b, *, trans=0):
    """scipy.linalg.lu_solve from the factors; a zero on U's diagonal raises, as on flex.

    >>> import burn, burn_linalg
    >>> a = burn.tensor([[1.0, 2.0], [4.0, 4.0]], device=burn.Device.wgpu())
    >>> burn_linalg.lu_solve(burn_linalg.lu_factor(a), burn.tensor([[3.0], [8.0]], device=a.device)).numpy().tolist()
    [[1.0], [1.0]]
    """
    if not (native_ok(lu_, b) and lu_.dtype == b.dtype and piv.dtype == "int32" and lu_.size and b.size
            and trans in (0, 1, 2, "N", "T", "C")):
        return fallback("lu_solve")(lu_, piv, b, trans=trans)
    batch = tuple(np.broadcast_shapes(lu_.shape[:-2], piv.shape[:-1], b.shape[:-2]))
    nb = nbatch(batch)
    lf = _flat_batch(lu_, batch)
    pf = _flat_vec(piv, batch)
    # a zero on U's diagonal: raise as flex does (LAPACK's getrs would divide by it)
    dc = wgpu.device_of(lu_)
    info = zeros_i32(dc, nb)
    launch(dc, kernel(dc, lu_.dtype, "diagzero"), nb,
           (lu_.shape[-1], nb, wgpu.buffer(lf), np.int64(lf.offset), np.int64(lf.strides[0]), info))
    raise_if("lu_solve", info, lu_.shape, lu_.dtype, nb)
    x = _lus(dc, lf, pf, _flat_batch(b, batch), nb, 0, trans not in (0, "N"))
    return wgpu.reshape(x, batch + b.shape[-2:])


def slogdet(a):
    """(sign, log|det|) from the LU factors (sign 0 and -inf when singular, as numpy).

    >>> import burn, burn_linalg
    >>> sign, logabs = burn_linalg.slogdet(burn.tensor([[0.0, 2.0], [1.0, 0.0]], device=burn.Device.wgpu()))
    >>> sign.item(), round(logabs.item(), 6)
    (-1.0, 0.693147)
    """
    if not native_ok(a) or a.size == 0:
        return fallback("slogdet")(a)
    dc = wgpu.device_of(a)
    lu_, piv, nb = _lu(a, None)
    sgn, logabs = wgpu.empty(a.shape[:-2], a.dtype, dc), wgpu.empty(a.shape[:-2], a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "luslogdet"), nb, (a.shape[-1], nb, lu_, piv, sgn, logabs))
    return sgn, logabs


def solve(a, b):
    """A X = B by LU with partial pivoting (batch dims broadcast); a singular A raises.

    >>> import burn, burn_linalg
    >>> a = burn.tensor([[2.0, 1.0], [1.0, 3.0]], device=burn.Device.wgpu())
    >>> burn_linalg.solve(a, burn.tensor([[3.0], [4.0]], device=a.device)).numpy().tolist()
    [[1.0], [1.0]]
    """
    if not native_ok(a, b) or a.dtype != b.dtype or a.size == 0 or b.size == 0:
        return fallback("solve")(a, b)
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    lu_, piv, nb = _lu(a, "solve", batch)
    x = _lus(wgpu.device_of(a), lu_, piv, _flat_batch(b, batch), nb, 0)
    return wgpu.reshape(x, batch + b.shape[-2:])


def inv(a):
    """A^-1 from the LU factors (the solve started from the identity); a singular A raises.

    >>> import burn, burn_linalg
    >>> burn_linalg.inv(burn.tensor([[2.0, 0.0], [0.0, 4.0]], device=burn.Device.wgpu())).numpy().tolist()
    [[0.5, 0.0], [0.0, 0.25]]
    """
    if not native_ok(a) or a.size == 0:
        return fallback("inv")(a)
    lu_, piv, nb = _lu(a, "inv")
    return wgpu.reshape(_lus(wgpu.device_of(a), lu_, piv, None, nb, 1), a.shape)


def det(a):
    """The product of U's diagonal, signed by the pivots.

    >>> import burn, burn_linalg
    >>> round(burn_linalg.det(burn.tensor([[1.0, 2.0], [3.0, 4.0]], device=burn.Device.wgpu())).item(), 5)
    -2.0
    """
    if not native_ok(a) or a.size == 0:
        return fallback("det")(a)
    dc = wgpu.device_of(a)
    lu_, piv, nb = _lu(a, None)     # a singular matrix has determinant 0: no error
    out = wgpu.empty(a.shape[:-2], a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "ludet"), nb, (a.shape[-1], nb, lu_, piv, out))
    return out


def lu(a, *, permute_l=False):
    """scipy.linalg.lu from the native (rectangular) getrf: the pivots become P on the device.

    >>> import burn, burn_linalg
    >>> p, l, u = burn_linalg.lu(burn.tensor([[1.0, 2.0], [4.0, 4.0]], device=burn.Device.wgpu()))
    >>> p.numpy().tolist(), u.numpy().tolist()
    ([[0.0, 1.0], [1.0, 0.0]], [[4.0, 4.0], [0.0, 1.0]])
    """
    if not native_ok(a) or a.size == 0:
        return fallback("lu")(a, permute_l=permute_l)
    dc, (M, N) = wgpu.device_of(a), a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb = nbatch(batch)
    f = wgpu.reshape(copy(a), (nb, M, N))
    piv = wgpu.empty((nb, K), "int32", dc)
    info = zeros_i32(dc, nb)
    launch_groups(dc, kernel(dc, a.dtype, "lu"), nb, (M, N, f, piv, info))
    perm = wgpu.empty((nb, M), "int32", dc)
    launch(dc, kernel(dc, a.dtype, "lu_perm"), nb, (M, K, nb, piv, perm))
    lo = wgpu.empty(batch + (M, K), a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "lu_lower"), lo.size, (M, N, K, bool(permute_l), np.int64(lo.size), f, perm, lo))
    up = wgpu.empty(batch + (K, N), a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "triu_rows"), up.size, (M, N, K, np.int64(up.size), f, up))
    if permute_l:
        return lo, up
    p = wgpu.empty(batch + (M, M), a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "perm_matrix"), p.size, (M, np.int64(p.size), perm, p))
    return p, lo, up
