"""wgpu kernels of burn.linalg, the factorizations (``kernels/lu.cl``): Cholesky, triangular
solves, LU with partial pivoting and what is built from it (solve, inv, det, slogdet, lu_factor,
lu_solve, scipy's P, L, U). One work-group per matrix for the factorizations; the solves run
one work-item per right-hand-side column on X^T, whose rows are contiguous."""
from __future__ import annotations

import numpy as np

from .common import copy, fallback, i32, kernel, launch_groups, native_ok, nbatch, raise_if, transposed, zeros_i32


def cholesky(a, *, upper=False):
    """Batched Cholesky (the lower triangle read), one work-group per matrix.

    >>> import burn, burn_linalg
    >>> burn_linalg.cholesky(burn.tensor([[4.0, 2.0], [2.0, 5.0]], device=burn.Device.wgpu())).numpy().tolist()
    [[2.0, 0.0], [1.0, 2.0]]
    """
    if not native_ok(a) or a.size == 0:
        return fallback("cholesky")(a, upper=upper)
    dc, N = a.dc, a.shape[-1]
    nb = nbatch(a.shape[:-2])
    out = copy(a)
    info = zeros_i32(dc, nb)
    launch_groups(dc, kernel(dc, a.dtype, "chol"), nb, (i32(N), out.buf, info.buf))
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
    dc.launch(kernel(dc, a.dtype, "trsm"), nb * K,
              (i32(N), i32(K), i32(nb), i32(lower), i32(trans), i32(unit), a.buf, i32(a.offset),
               np.int64(sa), x.buf, info.buf, i32(rs), i32(cs)))
    if not unit:
        raise_if(name, info, a_shape, a.dtype, nb)
    return copy(transposed(x)) if xt else x


def _flat_batch(x, batch):
    """``x`` broadcast to ``batch`` + its matrix dims, as (nb, M, N) with per-matrix contiguous rows."""
    from burn_wgpu import kernels as wk
    shape = tuple(batch) + x.shape[-2:]
    v = wk.broadcast_to(x, shape=shape)
    m = v.shape[-2:]
    st = v.strides[-2:]
    if st != (m[1], 1) and m[0] * m[1] > 1:
        v = copy(v)
    return wk.reshape(v, shape=(nbatch(batch),) + tuple(m))


def _flat_vec(v, batch):
    """``v`` broadcast to ``batch`` + its last dim, as (nb, N) with contiguous rows."""
    from burn_wgpu import kernels as wk
    shape = tuple(batch) + v.shape[-1:]
    w = wk.broadcast_to(v, shape=shape)
    if w.strides[-1] != 1 and w.shape[-1] > 1:
        w = copy(w)
    return wk.reshape(w, shape=(nbatch(batch),) + v.shape[-1:])


def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False):
    """op(A) X = B with A triangular (trans 0 / 1 / 2 as scipy's; real, so 2 is 1)."""
    if not native_ok(a, b) or a.dtype != b.dtype or a.size == 0 or b.size == 0:
        return fallback("solve_triangular")(a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    from burn_wgpu import kernels as wk
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    nb = nbatch(batch)
    af = _flat_batch(a, batch)
    x = _trsm(a.dc, af, _flat_batch(b, batch), nb, lower=int(bool(lower)), trans=int(trans in (1, 2, "T", "C")),
              unit=int(bool(unit_diagonal)), name="solve_triangular", a_shape=a.shape)
    return wk.reshape(x, shape=batch + b.shape[-2:])


def _lu(a, name, batch=None):
    """(LU factors (nb, N, N), pivots (nb, N) int32, nb); raises on a singular matrix if name is given."""
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, N = a.dc, a.shape[-1]
    batch = a.shape[:-2] if batch is None else batch
    nb = nbatch(batch)
    lu_ = wk.reshape(copy(a, tuple(batch) + a.shape[-2:]), shape=(nb, N, N))
    piv = empty(dc, (nb, N), "int32")
    info = zeros_i32(dc, nb)
    launch_groups(dc, kernel(dc, a.dtype, "lu"), nb, (i32(N), i32(N), lu_.buf, piv.buf, info.buf))
    if name:
        raise_if(name, info, a.shape, a.dtype, nb)
    return lu_, piv, nb


def lu_factor(a):
    """scipy.linalg.lu_factor: the getrf factors and 0-based pivots; a singular matrix factors."""
    if not native_ok(a) or a.size == 0:
        return fallback("lu_factor")(a)
    from burn_wgpu import kernels as wk
    lu_, piv, _ = _lu(a, None)     # scipy warns (does not raise) on a singular matrix: so do we not raise
    return wk.reshape(lu_, shape=a.shape), wk.reshape(piv, shape=a.shape[:-1])


def _lus(dc, lu_, piv, rhs, nb, eye, trans=0):
    """X (nb, N, K) contiguous = A^-1 rhs (A^-T rhs with trans) from ``lu_`` (nb, N, N) and ``piv``
    (nb, N) with per-matrix contiguous rows (batch stride may be 0); ``rhs``: (nb, N, K), any
    strides, or None for the identity (``eye``). The plain solve runs on X^T (contiguous rows)."""
    from burn_wgpu.tensor import empty
    N = lu_.shape[-1]
    K = N if rhs is None else rhs.shape[-1]
    xt = not trans
    if rhs is None:
        x = empty(dc, (nb, K, N) if xt else (nb, N, K), lu_.dtype)
    else:
        x = copy(transposed(rhs)) if xt else copy(rhs)
    rs, cs = (1, N) if xt else (K, 1)
    dc.launch(kernel(dc, lu_.dtype, "lus"), nb * K,
              (i32(N), i32(K), i32(nb), i32(eye), i32(trans), lu_.buf, np.int64(lu_.offset),
               np.int64(lu_.strides[0]), piv.buf, np.int64(piv.offset), np.int64(piv.strides[0]), x.buf,
               i32(rs), i32(cs)))
    return copy(transposed(x)) if xt else x


def lu_solve(lu_, piv, b, *, trans=0):
    """scipy.linalg.lu_solve from the factors; a zero on U's diagonal raises, as on flex."""
    if not (native_ok(lu_, b) and lu_.dtype == b.dtype and piv.dtype == "int32" and lu_.size and b.size
            and trans in (0, 1, 2, "N", "T", "C")):
        return fallback("lu_solve")(lu_, piv, b, trans=trans)
    from burn_wgpu import kernels as wk
    batch = tuple(np.broadcast_shapes(lu_.shape[:-2], piv.shape[:-1], b.shape[:-2]))
    nb = nbatch(batch)
    lf = _flat_batch(lu_, batch)
    pf = _flat_vec(piv, batch)
    # a zero on U's diagonal: raise as flex does (LAPACK's getrs would divide by it)
    info = zeros_i32(lu_.dc, nb)
    lu_.dc.launch(kernel(lu_.dc, lu_.dtype, "diagzero"), nb, (i32(lu_.shape[-1]), i32(nb), lf.buf,
                                                              np.int64(lf.offset), np.int64(lf.strides[0]), info.buf))
    raise_if("lu_solve", info, lu_.shape, lu_.dtype, nb)
    x = _lus(lu_.dc, lf, pf, _flat_batch(b, batch), nb, 0, int(trans not in (0, "N")))
    return wk.reshape(x, shape=batch + b.shape[-2:])


def slogdet(a):
    """(sign, log|det|) from the LU factors (sign 0 and -inf when singular, as numpy)."""
    if not native_ok(a) or a.size == 0:
        return fallback("slogdet")(a)
    from burn_wgpu.tensor import empty
    lu_, piv, nb = _lu(a, None)
    sgn, logabs = empty(a.dc, a.shape[:-2], a.dtype), empty(a.dc, a.shape[:-2], a.dtype)
    a.dc.launch(kernel(a.dc, a.dtype, "luslogdet"), nb, (i32(a.shape[-1]), i32(nb), lu_.buf, piv.buf,
                                                         sgn.buf, logabs.buf))
    return sgn, logabs


def solve(a, b):
    """A X = B by LU with partial pivoting (batch dims broadcast); a singular A raises."""
    if not native_ok(a, b) or a.dtype != b.dtype or a.size == 0 or b.size == 0:
        return fallback("solve")(a, b)
    from burn_wgpu import kernels as wk
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    lu_, piv, nb = _lu(a, "solve", batch)
    x = _lus(a.dc, lu_, piv, _flat_batch(b, batch), nb, 0)
    return wk.reshape(x, shape=batch + b.shape[-2:])


def inv(a):
    """A^-1 from the LU factors (the solve started from the identity); a singular A raises."""
    if not native_ok(a) or a.size == 0:
        return fallback("inv")(a)
    from burn_wgpu import kernels as wk
    lu_, piv, nb = _lu(a, "inv")
    return wk.reshape(_lus(a.dc, lu_, piv, None, nb, 1), shape=a.shape)


def det(a):
    """The product of U's diagonal, signed by the pivots."""
    if not native_ok(a) or a.size == 0:
        return fallback("det")(a)
    from burn_wgpu.tensor import empty
    lu_, piv, nb = _lu(a, None)     # a singular matrix has determinant 0: no error
    out = empty(a.dc, a.shape[:-2], a.dtype)
    a.dc.launch(kernel(a.dc, a.dtype, "ludet"), nb, (i32(a.shape[-1]), i32(nb), lu_.buf, piv.buf, out.buf))
    return out


def lu(a, *, permute_l=False):
    """scipy.linalg.lu from the native (rectangular) getrf: the pivots become P on the device."""
    if not native_ok(a) or a.size == 0:
        return fallback("lu")(a, permute_l=permute_l)
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, (M, N) = a.dc, a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb = nbatch(batch)
    f = wk.reshape(copy(a), shape=(nb, M, N))
    piv = empty(dc, (nb, K), "int32")
    info = zeros_i32(dc, nb)
    launch_groups(dc, kernel(dc, a.dtype, "lu"), nb, (i32(M), i32(N), f.buf, piv.buf, info.buf))
    perm = empty(dc, (nb, M), "int32")
    dc.launch(kernel(dc, a.dtype, "lu_perm"), nb, (i32(M), i32(K), i32(nb), piv.buf, perm.buf))
    lo = empty(dc, batch + (M, K), a.dtype)
    dc.launch(kernel(dc, a.dtype, "lu_lower"), lo.size, (i32(M), i32(N), i32(K), i32(bool(permute_l)),
                                                         np.int64(lo.size), f.buf, perm.buf, lo.buf))
    up = empty(dc, batch + (K, N), a.dtype)
    dc.launch(kernel(dc, a.dtype, "triu_rows"), up.size, (i32(M), i32(N), i32(K), np.int64(up.size), f.buf, up.buf))
    if permute_l:
        return lo, up
    p = empty(dc, batch + (M, M), a.dtype)
    dc.launch(kernel(dc, a.dtype, "perm_matrix"), p.size, (i32(M), np.int64(p.size), perm.buf, p.buf))
    return p, lo, up
