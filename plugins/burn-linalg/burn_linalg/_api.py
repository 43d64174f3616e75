"""The public functions of ``burn.linalg`` (numpy.linalg / scipy.linalg names and defaults).

Decompositions and solvers are extension ops (:mod:`burn_linalg._ops`) with a
kernel per backend; norms, traces, products and the like are compositions
of burn ops and of those extension ops, so they run and differentiate
wherever those do.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

import burn
from burn import DTypeError, ShapeError, Tensor
from burn.dtypes import real_of

from . import _ops as O

__all__ = [
    "solve", "inv", "det", "slogdet", "cholesky", "qr", "svd", "svdvals", "eigh", "eigvalsh",
    "eig", "eigvals", "lstsq", "pinv", "lu", "lu_factor", "lu_solve", "solve_triangular", "norm", "vector_norm",
    "matrix_norm", "matrix_rank", "matrix_power", "trace", "diagonal", "outer", "matvec", "vecdot",
    "cross", "cosine_similarity", "matmul", "matrix_transpose", "tensordot",
    "SlogdetResult", "QRResult", "SVDResult", "EighResult", "EigResult", "LstsqResult",
]


class SlogdetResult(NamedTuple):
    """What :func:`slogdet` returns: ``sign`` and ``logabsdet`` (unpack it or use the names).

    Example:
        >>> import burn
        >>> r = burn.linalg.slogdet(burn.tensor([[2.0, 0.0], [0.0, 2.0]]))
        >>> assert r.sign.item() == 1.0 and abs(r.logabsdet.exp().item() - 4.0) < 1e-5
    """
    sign: Tensor
    logabsdet: Tensor


class QRResult(NamedTuple):
    """What :func:`qr` returns (modes 'reduced' and 'complete'): ``Q`` and ``R``.

    Example:
        >>> import burn
        >>> r = burn.linalg.qr(burn.tensor([[3.0, 0.0], [4.0, 5.0]]))
        >>> assert r.Q.shape == r.R.shape == (2, 2) and abs(abs(r.R[0, 0].item()) - 5.0) < 1e-5
    """
    Q: Tensor
    R: Tensor


class SVDResult(NamedTuple):
    """What :func:`svd` returns: ``U``, singular values ``S`` (descending) and ``Vh``.

    Example:
        >>> import burn
        >>> r = burn.linalg.svd(burn.tensor([[3.0, 0.0], [0.0, -4.0]]))
        >>> assert [round(s, 5) for s in r.S.tolist()] == [4.0, 3.0] and r.Vh.shape == (2, 2)
    """
    U: Tensor
    S: Tensor
    Vh: Tensor


class EighResult(NamedTuple):
    """What :func:`eigh` returns: ``eigenvalues`` (ascending) and ``eigenvectors`` (columns).

    Example:
        >>> import burn
        >>> r = burn.linalg.eigh(burn.tensor([[2.0, 0.0], [0.0, 1.0]]))
        >>> assert r.eigenvalues.tolist() == [1.0, 2.0] and r.eigenvectors.shape == (2, 2)
    """
    eigenvalues: Tensor
    eigenvectors: Tensor


class EigResult(NamedTuple):
    """What :func:`eig` returns: complex ``eigenvalues`` and ``eigenvectors`` (columns, unit norm).

    Example:
        >>> import burn
        >>> r = burn.linalg.eig(burn.tensor([[2.0, 0.0], [0.0, 1.0]]))
        >>> assert r.eigenvalues.dtype is burn.complex64 and r.eigenvectors.shape == (2, 2)
    """
    eigenvalues: Tensor
    eigenvectors: Tensor


class LstsqResult(NamedTuple):
    """What :func:`lstsq` returns: ``solution``, ``residuals``, ``rank``, ``singular_values``.

    Example:
        >>> import burn
        >>> r = burn.linalg.lstsq(burn.tensor([[2.0, 0.0], [0.0, 4.0]]), burn.tensor([2.0, 2.0]))
        >>> assert r.solution.tolist() == [1.0, 0.5] and r.rank.item() == 2
    """
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def _t(x, like=None) -> Tensor:
    if isinstance(x, Tensor):
        return x
    if like is not None:
        return burn.asarray(x, device=like.device, dtype=like.dtype if like.dtype.is_inexact else None)
    return burn.asarray(x)


def _vector_rhs(op, a, b):
    """numpy 2 rule: a 1-D b is a vector (result 1-D); otherwise b is (..., N, K)."""
    if b.ndim == 1:
        if a.ndim >= 2 and b.shape[0] != a.shape[-1]:
            raise ShapeError(f"linalg::{op}: b of shape {b.shape} does not match a of shape {a.shape}: "
                             f"a vector b needs {a.shape[-1]} entries")
        return b[:, None], True
    return b, False


def _float_eps(dtype) -> float:
    return float(np.finfo(np.float32 if dtype.itemsize <= 4 else np.float64).eps)


# -- solvers and inverses ---------------------------------------------------------------------------

def solve(a, b, /) -> Tensor:
    """Solve ``a @ x = b`` for square ``a`` (..., N, N); ``b`` is (..., N, K), or (N,) for one vector.

    Batch dimensions broadcast. A singular ``a`` raises :class:`burn_linalg.LinAlgError`
    (a ``burn.BurnError``) when the value is computed.

    Example:
        >>> import burn, numpy as np
        >>> a = burn.tensor([[3.0, 1.0], [1.0, 2.0]]); b = burn.tensor([9.0, 8.0])
        >>> assert np.allclose(burn.linalg.solve(a, b).numpy(), [2.0, 3.0])
    """
    a = _t(a)
    b, vec = _vector_rhs("solve", a, _t(b, a))
    x = O.solve_op(a, b)
    return x[..., 0] if vec else x


def inv(a, /) -> Tensor:
    """The inverse of square matrices (..., N, N).

    Example:
        >>> import burn
        >>> x = burn.linalg.inv(burn.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> assert x.tolist() == [[0.5, 0.0], [0.0, 0.25]]
    """
    return O.inv_op(_t(a))


def det(a, /) -> Tensor:
    """Determinants of square matrices (..., N, N) -> (...).

    Example:
        >>> import burn
        >>> assert burn.linalg.det(burn.tensor([[1.0, 2.0], [3.0, 4.0]])).item() == -2.0
    """
    return O.det_op(_t(a))


def slogdet(a, /) -> SlogdetResult:
    """``(sign, logabsdet)`` of square matrices: det = sign * exp(logabsdet), without overflow.

    Example:
        >>> import burn, math
        >>> s, l = burn.linalg.slogdet(burn.tensor([[-2.0, 0.0], [0.0, 3.0]]))
        >>> assert s.item() == -1.0 and abs(l.item() - math.log(6.0)) < 1e-6
    """
    return SlogdetResult(*O.slogdet_op(_t(a)))


def cholesky(a, /, *, upper=False) -> Tensor:
    """Cholesky factor of symmetric positive-definite matrices: lower ``L`` with ``a = L @ L.mT``
    (``upper=True``: ``U`` with ``a = U.mT @ U``). Only the lower triangle of ``a`` is read
    (numpy). A matrix that is not positive definite raises :class:`burn_linalg.LinAlgError`
    when the value is computed.

    Example:
        >>> import burn
        >>> L = burn.linalg.cholesky(burn.tensor([[4.0, 2.0], [2.0, 5.0]]))
        >>> assert L.tolist() == [[2.0, 0.0], [1.0, 2.0]]
    """
    return O.cholesky_op(_t(a), upper=bool(upper))


def qr(a, /, mode="reduced"):
    """QR decomposition of (..., M, N): ``mode='reduced'`` (default) -> ``(Q, R)`` with Q (M, K),
    R (K, N), K = min(M, N); ``'complete'`` -> Q (M, M), R (M, N); ``'r'`` -> R only.

    Example:
        >>> import burn, numpy as np
        >>> a = burn.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
        >>> q, r = burn.linalg.qr(a)
        >>> assert q.shape == (3, 2) and np.allclose((q @ r).numpy(), a.numpy(), atol=1e-5)
    """
    if mode not in ("reduced", "complete", "r"):
        raise burn.BurnError(f"linalg::qr: mode must be 'reduced', 'complete' or 'r', got {mode!r}")
    out = O.qr_op(_t(a), mode=mode)
    return out if mode == "r" else QRResult(*out)


def svd(a, /, full_matrices=True, compute_uv=True, hermitian=False):
    """Singular value decomposition ``a = U @ diag(S) @ Vh`` of (..., M, N), S descending.

    ``full_matrices=True`` (numpy's default) gives U (M, M) and Vh (N, N); False gives the
    reduced U (M, K), Vh (K, N). ``compute_uv=False`` returns S only (see :func:`svdvals`).
    ``hermitian`` is accepted for numpy compatibility; the general SVD is computed.
    Gradients: see the note on degenerate spectra in :mod:`burn_linalg._ops`; with
    ``full_matrices=True`` and M != N only the first K columns of U / rows of Vh carry a
    gradient (the others span a complement whose basis is not unique).

    Example:
        >>> import burn, numpy as np
        >>> u, s, vh = burn.linalg.svd(burn.tensor([[3.0, 0.0], [0.0, -2.0]]))
        >>> assert np.allclose(s.numpy(), [3.0, 2.0])
    """
    a = _t(a)
    if not compute_uv:
        return O.svdvals_op(a)
    return SVDResult(*O.svd_op(a, full_matrices=bool(full_matrices)))


def svdvals(x, /) -> Tensor:
    """Singular values of (..., M, N), descending, shape (..., min(M, N)).

    Example:
        >>> import burn, numpy as np
        >>> assert np.allclose(burn.linalg.svdvals(burn.tensor([[0.0, 2.0], [1.0, 0.0]])).numpy(), [2.0, 1.0])
    """
    return O.svdvals_op(_t(x))


def eigh(a, /, UPLO="L") -> EighResult:
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices (..., N, N);
    only the ``UPLO`` triangle is read. Gradients are symmetric and assume distinct
    eigenvalues unless the loss is invariant to the basis of repeated ones (see
    :mod:`burn_linalg._ops`).

    Example:
        >>> import burn, numpy as np
        >>> w, v = burn.linalg.eigh(burn.tensor([[2.0, 1.0], [1.0, 2.0]]))
        >>> assert np.allclose(w.numpy(), [1.0, 3.0])
    """
    if UPLO not in ("L", "U"):
        raise burn.BurnError(f"linalg::eigh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return EighResult(*O.eigh_op(_t(a), UPLO=UPLO))


def eigvalsh(a, /, UPLO="L") -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices (..., N, N).

    Example:
        >>> import burn, numpy as np
        >>> assert np.allclose(burn.linalg.eigvalsh(burn.tensor([[2.0, 1.0], [1.0, 2.0]])).numpy(), [1.0, 3.0])
    """
    if UPLO not in ("L", "U"):
        raise burn.BurnError(f"linalg::eigvalsh: UPLO must be 'L' or 'U', got {UPLO!r}")
    return O.eigvalsh_op(_t(a), UPLO=UPLO)


def pinv(a, /, rcond=None, hermitian=False, *, rtol=np._NoValue) -> Tensor:
    """Moore-Penrose pseudo-inverse of (..., M, N) -> (..., N, M), numpy's cutoffs: singular
    values below ``rcond * max(S)`` are dropped (default 1e-15; ``rtol=None`` means
    ``max(M, N) * eps``). An array ``rtol``/``rcond`` gives one cutoff per matrix of the stack
    (broadcast against ``a.shape[:-2]``). The gradient assumes the rank does not change near ``a``.

    Example:
        >>> import burn, numpy as np
        >>> p = burn.linalg.pinv(burn.tensor([[1.0, 0.0], [0.0, 0.0]]))
        >>> assert np.allclose(p.numpy(), [[1.0, 0.0], [0.0, 0.0]])
        >>> d = burn.tensor([[[4.0, 0.0], [0.0, 1.0]]] * 2)
        >>> assert np.allclose(burn.linalg.pinv(d, rtol=np.array([0.1, 0.5])).numpy()[:, 1, 1], [1.0, 0.0])
    """
    a = _t(a)
    if rcond is None:
        if rtol is np._NoValue:
            rcond = 1e-15
        elif rtol is None:
            rcond = max(a.shape[-2:]) * _float_eps(a.dtype) if a.ndim >= 2 else 1e-15
        else:
            rcond = rtol
    elif rtol is not np._NoValue:
        raise burn.BurnError("linalg::pinv: give rcond or rtol, not both")
    if isinstance(rcond, Tensor) or np.ndim(rcond) > 0:
        # the cutoffs in the real dtype of the singular values (a device without float64 can hold them)
        rdt = real_of(a.dtype) if a.dtype.is_inexact else burn.float64
        rtol = rcond if isinstance(rcond, Tensor) else burn.asarray(np.asarray(rcond), dtype=rdt, device=a.device)
        return _pinv_per_matrix(a, rtol, bool(hermitian))
    return O.pinv_op(a, rcond=float(rcond), hermitian=bool(hermitian))


def _pinv_per_matrix(a, rtol, hermitian) -> Tensor:
    """pinv with one relative cutoff per matrix of the stack (``rtol`` broadcast against
    ``a.shape[:-2]``, as numpy does), composed from the reduced SVD (``eigh`` of the lower
    triangle when ``hermitian``, as numpy) because the op's ``rcond`` attribute is one float
    for the whole stack; it differentiates wherever those decompositions do."""
    if a.ndim < 2:
        raise ShapeError(f"linalg::pinv: needs a (..., M, N) input, got shape {a.shape}")
    if rtol.ndim == 0:
        return O.pinv_op(a, rcond=float(rtol.item()), hermitian=hermitian)
    try:
        batch = tuple(np.broadcast_shapes(tuple(a.shape[:-2]), tuple(rtol.shape)))
    except ValueError:
        raise ShapeError(f"linalg::pinv: rtol of shape {rtol.shape} does not broadcast against the stack "
                         f"shape {a.shape[:-2]} of the input {a.shape}") from None
    O._floating("pinv", a)
    m, n = a.shape[-2:]
    if 0 in batch or m == 0 or n == 0:   # an empty stack or empty matrices: the pseudo-inverse is all zeros
        return burn.zeros(batch + (n, m), dtype=a.dtype, device=a.device)
    if hermitian:
        w, v = O.eigh_op(a, UPLO="L")
        s, left, right = burn.abs(w), v, O._H(v)
    else:
        u, s, vh = O.svd_op(a, full_matrices=False)
        w, left, right = s, O._H(vh), O._H(u)
    cutoff = burn.expand_dims(rtol.astype(s.dtype), axis=-1) * burn.max(s, axis=-1, keepdims=True)
    keep = s > cutoff
    winv = burn.where(keep, 1 / burn.where(keep, w, burn.ones_like(w)), burn.zeros_like(w)).astype(a.dtype)
    return burn.matmul(left * burn.expand_dims(winv, axis=-2), right)


def eig(a, /) -> EigResult:
    """Eigenvalues and right eigenvectors (columns, unit norm) of general square matrices (..., N, N),
    ``a @ v[..., :, i] = w[..., i] * v[..., :, i]`` (numpy.linalg.eig, unordered). Both are complex
    (complex64 for float32 input, complex128 for float64), also when every eigenvalue is real,
    as the Array API says (numpy returns real arrays then). LAPACK's geev on every backend: wgpu
    and cuda run it on the host (``burn info`` lists it). Differentiable as PyTorch's
    ``torch.linalg.eig``: for losses that do not depend on each vector's phase, and where the
    eigenvalues are distinct (use :func:`eigh` for symmetric/Hermitian matrices).

    Example:
        >>> import burn, numpy as np
        >>> w, v = burn.linalg.eig(burn.tensor([[0.0, -1.0], [1.0, 0.0]], dtype=burn.float64))
        >>> assert w.dtype is burn.complex128 and np.allclose(sorted(w.numpy(), key=np.imag), [-1j, 1j])
    """
    return EigResult(*O.eig_op(_t(a)))


def eigvals(a, /) -> Tensor:
    """Eigenvalues of general square matrices (..., N, N), complex as in :func:`eig`
    (numpy.linalg.eigvals). Differentiable where the eigenvalues are distinct (PyTorch's rule).

    Example:
        >>> import burn, numpy as np
        >>> w = burn.linalg.eigvals(burn.tensor([[2.0, 1.0], [0.0, 3.0]]))
        >>> assert w.dtype is burn.complex64 and np.allclose(sorted(w.numpy().real), [2.0, 3.0])
    """
    return O.eigvals_op(_t(a))


def lstsq(a, b, /, rcond=None) -> LstsqResult:
    """Least-squares solution of ``a @ x ~ b`` (minimum norm when rank-deficient), numpy's
    ``(x, residuals, rank, s)``; batched over leading axes (numpy's lstsq is 2-D only).

    ``rcond=None`` means ``eps * max(M, N)``. ``residuals`` are the squared residual norms per
    column, shape (..., K) (numpy: (1,) for a vector ``b``) when M > N and empty otherwise;
    unlike numpy they are also returned when ``a`` is rank-deficient. ``rank`` and ``s``
    describe ``a`` alone, so they have ``a``'s batch shape.

    Example:
        >>> import burn, numpy as np
        >>> a = burn.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]); b = burn.tensor([1.0, 1.0, 3.0])
        >>> x, res, rank, s = burn.linalg.lstsq(a, b)
        >>> assert np.allclose(x.numpy(), [4 / 3, 4 / 3]) and rank.item() == 2
    """
    a = _t(a)
    b0 = _t(b, a)
    if a.ndim < 2:
        raise ShapeError(f"linalg::lstsq: a must have at least 2 dimensions (..., M, N), got shape={a.shape}")
    if b0.ndim == 1:
        if b0.shape[0] != a.shape[-2]:
            raise ShapeError(f"linalg::lstsq: b of shape {b0.shape} does not match a of shape {a.shape}: "
                             f"a vector b needs {a.shape[-2]} entries")
        b, vec = b0[:, None], True
    else:
        b, vec = b0, False
    m, n = a.shape[-2:]
    if rcond is None:
        rcond = _float_eps(a.dtype) * max(m, n)
    x = O.lstsq_op(a, b, rcond=float(rcond))
    s = O.svdvals_op(a)
    with burn.no_grad():
        tol = burn.max(s, axis=-1, keepdims=True) * float(rcond) if min(m, n) else s
        rank = burn.sum((s > tol).astype(burn.int64), axis=-1)
    if m > n:
        r = b - a @ x
        res = burn.sum(_abs2(r), axis=-2)      # real |r|^2, also for complex a and b
    else:
        res = burn.zeros(tuple(x.shape[:-2]) + (0,), dtype=x.dtype, device=x.device)
    if vec:
        x = x[..., 0]
    return LstsqResult(x, res, rank, s)


# -- LU --------------------------------------------------------------------------------------------------

def lu(a, /, permute_l=False):
    """LU decomposition with partial pivoting as scipy.linalg.lu: ``(P, L, U)`` with
    ``a = P @ L @ U``, P (..., M, M), L (..., M, K) unit lower, U (..., K, N);
    ``permute_l=True`` -> ``(P @ L, U)``. Gradients for square ``a``.

    Example:
        >>> import burn, numpy as np
        >>> a = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> p, l, u = burn.linalg.lu(a)
        >>> assert np.allclose((p @ l @ u).numpy(), a.numpy())
    """
    return O.lu_op(_t(a), permute_l=bool(permute_l))


def lu_factor(a, /):
    """Packed LU factorization of square (..., N, N) as scipy.linalg.lu_factor: ``(lu, piv)``
    with ``piv`` int32 (LAPACK row interchanges, 0-based); for :func:`lu_solve`.

    Example:
        >>> import burn
        >>> lu_, piv = burn.linalg.lu_factor(burn.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> assert piv.tolist() == [1, 1] and lu_.shape == (2, 2)
    """
    return O.lu_factor_op(_t(a))


def _trans(op, trans, a) -> int:
    t = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2}.get(trans)
    if t is None:
        raise burn.BurnError(f"linalg::{op}: trans must be 0/'N', 1/'T' or 2/'C', got {trans!r}")
    # the conjugate transpose of a real matrix is its transpose: one kernel path
    return 1 if t == 2 and not a.dtype.is_complex else t


def lu_solve(lu_and_piv, b, /, trans=0) -> Tensor:
    """Solve ``a @ x = b`` (``trans=1``: ``a.T @ x = b``) from ``lu_factor(a)``, as
    scipy.linalg.lu_solve. Differentiable in ``lu`` and ``b``.

    Example:
        >>> import burn, numpy as np
        >>> a = burn.tensor([[3.0, 1.0], [1.0, 2.0]])
        >>> x = burn.linalg.lu_solve(burn.linalg.lu_factor(a), burn.tensor([9.0, 8.0]))
        >>> assert np.allclose(x.numpy(), [2.0, 3.0])
    """
    lu_, piv = lu_and_piv
    lu_ = _t(lu_)
    b, vec = _vector_rhs("lu_solve", lu_, _t(b, lu_))
    x = O.lu_solve_op(lu_, _t(piv), b, trans=_trans("lu_solve", trans, lu_))
    return x[..., 0] if vec else x


def solve_triangular(a, b, /, trans=0, lower=False, unit_diagonal=False) -> Tensor:
    """Solve ``a @ x = b`` for triangular ``a`` as scipy.linalg.solve_triangular (default
    upper); only the ``lower``/upper triangle is read, ``unit_diagonal`` assumes ones on the
    diagonal, ``trans=1`` solves ``a.T @ x = b``. Batch dimensions broadcast.

    Example:
        >>> import burn, numpy as np
        >>> a = burn.tensor([[2.0, 0.0], [1.0, 1.0]])
        >>> x = burn.linalg.solve_triangular(a, burn.tensor([2.0, 3.0]), lower=True)
        >>> assert np.allclose(x.numpy(), [1.0, 2.0])
    """
    a = _t(a)
    b, vec = _vector_rhs("solve_triangular", a, _t(b, a))
    x = O.solve_triangular_op(a, b, trans=_trans("solve_triangular", trans, a), lower=bool(lower),
                              unit_diagonal=bool(unit_diagonal))
    return x[..., 0] if vec else x


# -- norms ------------------------------------------------------------------------------------------------

def _abs2(x):
    """|x|^2, real for complex x (x * x would be complex)."""
    return burn.real(x * burn.conj(x)) if x.dtype.is_complex else x * x


def _check_float(op, x):
    if not x.dtype.is_inexact:
        raise DTypeError(f"linalg::{op}: needs a floating tensor, got shape={x.shape} dtype={x.dtype}; "
                         f"cast it with x.astype(burn.float32)")


def _vnorm(x, ord, axis, keepdims):
    if ord is None or ord == 2:
        return burn.sqrt(burn.sum(_abs2(x), axis=axis, keepdims=keepdims))
    if ord == float("inf"):
        return burn.max(burn.abs(x), axis=axis, keepdims=keepdims)
    if ord == float("-inf"):
        return burn.min(burn.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return burn.sum((x != 0).astype(real_of(x.dtype)), axis=axis, keepdims=keepdims)
    if ord == 1:
        return burn.sum(burn.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise burn.BurnError(f"linalg::norm: invalid norm order {ord!r} for vectors")
    p = float(ord)
    return burn.sum(burn.abs(x) ** p, axis=axis, keepdims=keepdims) ** (1.0 / p)


def _mnorm(x, ord, r, c, keepdims):
    # core's moveaxis takes one axis: permute (r, c) to the end
    y = burn.permute_dims(x, tuple(a for a in range(x.ndim) if a not in (r, c)) + (r, c))
    if ord in (None, "fro"):
        out = burn.sqrt(burn.sum(_abs2(y), axis=(-2, -1)))
    elif ord == "nuc":
        out = burn.sum(O.svdvals_op(y), axis=-1)
    elif ord in (2, -2):
        s = O.svdvals_op(y)
        out = burn.max(s, axis=-1) if ord == 2 else burn.min(s, axis=-1)
    elif ord in (1, -1):
        cols = burn.sum(burn.abs(y), axis=-2)
        out = burn.max(cols, axis=-1) if ord == 1 else burn.min(cols, axis=-1)
    elif ord in (float("inf"), float("-inf")):
        rows = burn.sum(burn.abs(y), axis=-1)
        out = burn.max(rows, axis=-1) if ord > 0 else burn.min(rows, axis=-1)
    else:
        raise burn.BurnError(f"linalg::norm: invalid norm order {ord!r} for matrices; use 'fro', 'nuc', "
                             f"1, -1, 2, -2, inf or -inf")
    if keepdims:
        shape = list(out.shape)
        for ax in sorted((r, c)):
            shape.insert(ax, 1)
        out = out.reshape(tuple(shape))
    return out


def norm(x, ord=None, axis=None, keepdims=False) -> Tensor:
    """Vector or matrix norm, as numpy.linalg.norm.

    ``axis=None``: the 2-norm of the flattened tensor if ``ord`` is None, else a vector norm
    (1-D) or matrix norm (2-D). An int ``axis`` gives vector norms (ord None/2, 1, inf, -inf,
    0 = count of non-zeros, any p), a pair gives matrix norms ('fro', 'nuc', 1, -1, 2, -2,
    inf, -inf).

    Example:
        >>> import burn
        >>> x = burn.tensor([[3.0, -4.0], [0.0, 0.0]])
        >>> assert burn.linalg.norm(x).item() == 5.0
        >>> assert burn.linalg.norm(x, ord=1, axis=1).tolist() == [7.0, 0.0]
        >>> assert burn.linalg.norm(x, ord=burn.inf).item() == 7.0
    """
    x = _t(x)
    _check_float("norm", x)
    nd = x.ndim
    if axis is None:
        if ord is None:
            out = burn.sqrt(burn.sum(_abs2(x)))
            return out.reshape((1,) * nd) if keepdims else out
        if nd == 1:
            axis = (0,)
        elif nd == 2:
            axis = (0, 1)
        else:
            raise ShapeError(f"linalg::norm: ord={ord!r} with axis=None needs a 1-D or 2-D tensor, got "
                             f"shape={x.shape}; pass axis=")
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    axis = tuple(int(a) for a in axis)
    for a in axis:
        if not -nd <= a < nd:
            raise ShapeError(f"linalg::norm: axis {a} is out of range for shape={x.shape}")
    axis = tuple(a % nd for a in axis)
    if len(axis) == 1:
        return _vnorm(x, ord, axis, keepdims)
    if len(axis) == 2:
        if axis[0] == axis[1]:
            raise ShapeError(f"linalg::norm: duplicate axes {axis}")
        return _mnorm(x, ord, axis[0], axis[1], keepdims)
    raise ShapeError(f"linalg::norm: axis must be an int or a pair, got {axis}")


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2) -> Tensor:
    """Array API ``vector_norm``: ``axis=None`` flattens.

    Example:
        >>> import burn
        >>> assert burn.linalg.vector_norm(burn.tensor([[3.0], [-4.0]])).item() == 5.0
    """
    x = _t(x)
    _check_float("vector_norm", x)
    if axis is None:
        out = _vnorm(x.reshape((-1,)), ord, (0,), False)
        return out.reshape((1,) * x.ndim) if keepdims else out
    axis = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    return _vnorm(x, ord, tuple(int(a) % x.ndim for a in axis), keepdims)


def matrix_norm(x, /, *, keepdims=False, ord="fro") -> Tensor:
    """Array API ``matrix_norm`` over the last two axes.

    Example:
        >>> import burn
        >>> assert burn.linalg.matrix_norm(burn.tensor([[3.0, 0.0], [0.0, -4.0]]), ord=2).item() == 4.0
    """
    x = _t(x)
    _check_float("matrix_norm", x)
    if x.ndim < 2:
        raise ShapeError(f"linalg::matrix_norm: needs at least 2 dimensions, got shape={x.shape}")
    return _mnorm(x, ord, x.ndim - 2, x.ndim - 1, keepdims)


def matrix_rank(A, tol=None, hermitian=False, *, rtol=None) -> Tensor:
    """Rank of matrices: the number of singular values above ``tol`` (default
    ``max(S) * max(M, N) * eps``, or ``max(S) * rtol``), as an int64 tensor.

    Example:
        >>> import burn
        >>> assert burn.linalg.matrix_rank(burn.tensor([[1.0, 2.0], [2.0, 4.0]])).item() == 1
    """
    A = _t(A)
    _check_float("matrix_rank", A)
    if A.ndim < 2:
        return burn.any(A != 0).astype(burn.int64)
    with burn.no_grad():
        s = O.svdvals_op(A.detach())
        if tol is None:
            if rtol is None:
                rtol = max(A.shape[-2:]) * _float_eps(A.dtype)
            thr = burn.max(s, axis=-1, keepdims=True) * float(rtol)
        else:
            thr = _t(tol, s)
            thr = thr[..., None] if thr.ndim else thr
        return burn.sum((s > thr).astype(burn.int64), axis=-1)


def matrix_power(a, n, /) -> Tensor:
    """``a`` (..., M, M) to the integer power ``n`` by repeated squaring; ``n < 0`` inverts
    first, ``n == 0`` gives identities. Differentiable through matmul and inv.

    Example:
        >>> import burn
        >>> a = burn.tensor([[1.0, 1.0], [0.0, 1.0]])
        >>> assert burn.linalg.matrix_power(a, 3).tolist() == [[1.0, 3.0], [0.0, 1.0]]
    """
    a = _t(a)
    if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
        raise ShapeError(f"linalg::matrix_power: a must be square (..., M, M), got shape={a.shape}")
    if not isinstance(n, (int, np.integer)) or isinstance(n, bool):
        raise burn.BurnError(f"linalg::matrix_power: n must be an integer, got {n!r}")
    n = int(n)
    if n == 0:
        return burn.zeros_like(a) + O._eye(a.shape[-1], a)
    if n < 0:
        a, n = inv(a), -n
    result, base = None, a
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result


# -- diagonals and products ---------------------------------------------------------------------------------

def diagonal(x, /, *, offset=0) -> Tensor:
    """The ``offset`` diagonal of the last two axes, shape (..., K).

    Example:
        >>> import burn
        >>> x = burn.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        >>> assert burn.linalg.diagonal(x).tolist() == [1.0, 5.0]
        >>> assert burn.linalg.diagonal(x, offset=1).tolist() == [2.0, 6.0]
    """
    return O.diagonal_op(_t(x), offset=int(offset))


def trace(x, /, *, offset=0, dtype=None) -> Tensor:
    """Sum of the ``offset`` diagonal of the last two axes (Array API ``linalg.trace``).

    Example:
        >>> import burn
        >>> assert burn.linalg.trace(burn.tensor([[1.0, 2.0], [3.0, 4.0]])).item() == 5.0
    """
    x = _t(x)
    if dtype is not None:
        x = x.astype(dtype)
    return burn.sum(diagonal(x, offset=offset), axis=-1)


def outer(x1, x2, /) -> Tensor:
    """Outer product of two vectors.

    Example:
        >>> import burn
        >>> assert burn.linalg.outer(burn.tensor([1.0, 2.0]), burn.tensor([3.0, 4.0])).tolist() == [[3.0, 4.0], [6.0, 8.0]]
    """
    x1, x2 = _t(x1), _t(x2)
    if x1.ndim != 1 or x2.ndim != 1:
        raise ShapeError(f"linalg::outer: needs two 1-D tensors, got shapes {x1.shape} and {x2.shape}")
    return burn.outer(x1, x2)


def matvec(x1, x2, /) -> Tensor:
    """Matrix-vector products (numpy.matvec): (..., M, N) and (..., N) -> (..., M), batches broadcast.

    Example:
        >>> import burn
        >>> assert burn.linalg.matvec(burn.eye(2) * 2, burn.tensor([1.0, 3.0])).tolist() == [2.0, 6.0]
    """
    x1, x2 = _t(x1), _t(x2)
    if x1.ndim < 2 or x2.ndim < 1 or x1.shape[-1] != x2.shape[-1]:
        raise ShapeError(f"linalg::matvec: needs (..., M, N) and (..., N), got shapes {x1.shape} and {x2.shape}")
    return burn.matmul(x1, x2[..., None])[..., 0]


def vecdot(x1, x2, /, *, axis=-1) -> Tensor:
    """Dot products of vectors along ``axis`` (Array API).

    Example:
        >>> import burn
        >>> assert burn.linalg.vecdot(burn.tensor([1.0, 2.0]), burn.tensor([3.0, 4.0])).item() == 11.0
    """
    return burn.vecdot(_t(x1), _t(x2), axis=axis)


def cross(x1, x2, /, *, axis=-1) -> Tensor:
    """Cross products of 3-vectors along ``axis`` (Array API ``linalg.cross``), batches broadcast.

    Example:
        >>> import burn
        >>> assert burn.linalg.cross(burn.tensor([1.0, 0.0, 0.0]), burn.tensor([0.0, 1.0, 0.0])).tolist() == [0.0, 0.0, 1.0]
    """
    x1, x2 = _t(x1), _t(x2)
    for x in (x1, x2):
        if x.ndim == 0 or not -x.ndim <= axis < x.ndim or x.shape[axis] != 3:
            raise ShapeError(f"linalg::cross: both operands need size 3 along axis {axis}, got shapes "
                             f"{x1.shape} and {x2.shape}")
    a, b = burn.broadcast_arrays(x1, x2)
    ax = axis % a.ndim
    a, b = burn.moveaxis(a, ax, -1), burn.moveaxis(b, ax, -1)
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    c = burn.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)
    return burn.moveaxis(c, -1, ax)


def cosine_similarity(x1, x2, /, *, axis=-1, eps=1e-8) -> Tensor:
    """Cosine of the angle between vectors along ``axis`` (torch's cosine_similarity:
    ``x1 . x2 / max(|x1| |x2|, eps)``), batches broadcast.

    Example:
        >>> import burn
        >>> c = burn.linalg.cosine_similarity(burn.tensor([1.0, 0.0]), burn.tensor([1.0, 1.0]))
        >>> assert abs(c.item() - 0.5 ** 0.5) < 1e-6
    """
    x1, x2 = _t(x1), _t(x2)
    _check_float("cosine_similarity", x1)
    dot = burn.sum(x1 * x2, axis=axis)
    n = burn.sqrt(burn.sum(x1 * x1, axis=axis) * burn.sum(x2 * x2, axis=axis))
    return dot / burn.maximum(n, burn.full_like(n, eps))


# Array API linalg extension members that are core ops
matmul = burn.matmul
matrix_transpose = burn.matrix_transpose
tensordot = burn.tensordot
