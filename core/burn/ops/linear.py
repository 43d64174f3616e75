"""Matrix multiplication (batched, broadcasting) and its relatives."""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..primitives import MATMUL, TensorMeta, primitive
from ..tensor import Tensor, apply
from . import elementwise as E
from . import movement as M
from .reduction import sum as _sum
from ..tape import _autocast_on
from .autocast import lower

__all__ = ["matmul", "tensordot", "vecdot", "outer", "inner", "dot"]


def _matmul_meta(a, b):
    if a.dtype.is_bool:
        raise DTypeError(f"matmul: not defined for bool tensors ({describe(a)}, {describe(b)})")
    if a.shape[-1] != b.shape[-2]:
        raise ShapeError(f"matmul: inner dimensions differ: {describe(a)} @ {describe(b)} "
                         f"({a.shape[-1]} != {b.shape[-2]})")
    ba, bb = a.shape[:-2], b.shape[:-2]
    nd = max(len(ba), len(bb))
    batch = []
    for i in range(nd):
        x = ba[i - nd + len(ba)] if i - nd + len(ba) >= 0 else 1
        y = bb[i - nd + len(bb)] if i - nd + len(bb) >= 0 else 1
        if x != y and x != 1 and y != 1:
            raise ShapeError(f"matmul: batch dimensions cannot be broadcast: {describe(a)} @ {describe(b)}")
        batch.append(max(x, y))
    return TensorMeta(tuple(batch) + (a.shape[-2], b.shape[-1]), a.dtype)


def _transpose2(x):
    # matrix_transpose of a real 2-D tensor, recorded directly (a backward rule's hot path)
    h = x._h
    if len(h.shape) == 2 and h.dtype.kind != "c":
        return apply(M.permute_p, (x,), {"axes": (1, 0)}, (TensorMeta((h.shape[1], h.shape[0]), h.dtype),))
    return M.matrix_transpose(E.conj(x) if x.dtype.is_complex else x)


def _bw_matmul(c, g):
    a, b = c.inputs
    ga = gb = None
    if a.requires_grad:
        ga = E._unbroadcast(matmul(g, _transpose2(b)), a.shape)
    if b.requires_grad:
        gb = E._unbroadcast(matmul(_transpose2(a), g), b.shape)
    return ga, gb


matmul_p = primitive("matmul", MATMUL, _matmul_meta)
matmul_p.backward = _bw_matmul


def matmul(x1, x2, /) -> Tensor:
    """Matrix product with numpy semantics (1-D operands promoted, batches broadcast).

    Example:
        >>> import burn
        >>> a = burn.ones((4, 2, 3)); b = burn.ones((3, 5))
        >>> assert (a @ b).shape == (4, 2, 5) and burn.matmul(b.T, burn.ones((3,))).shape == (5,)
    """
    if _autocast_on[0]:           # burn.autocast: a matmul runs in the low dtype
        x1, x2 = lower(x1, x2, op="matmul")
    if isinstance(x1, Tensor) and isinstance(x2, Tensor):
        h1, h2 = x1._h, x2._h
        if h1.dtype is h2.dtype and len(h1.shape) >= 2 and len(h2.shape) >= 2:   # the common case
            return apply(matmul_p, (x1, x2))
    a, b = E._operands("matmul", x1, x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ShapeError(f"matmul: operands must have at least one dimension ({describe(a)}, {describe(b)})")
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = M.reshape(a, (1, a.shape[0]))
    if squeeze_b:
        b = M.reshape(b, (b.shape[0], 1))
    out = apply(matmul_p, (a, b))
    if squeeze_a or squeeze_b:
        shape = out.shape
        if squeeze_a:
            shape = shape[:-2] + shape[-1:]
        if squeeze_b:
            shape = shape[:-1]
        out = M.reshape(out, shape)
    return out


def tensordot(x1, x2, /, *, axes=2) -> Tensor:
    """Sum products over the given axes (numpy ``tensordot``), via one matmul.

    Example:
        >>> import burn
        >>> assert burn.tensordot(burn.ones((2, 3)), burn.ones((3, 4)), axes=1).shape == (2, 4)
    """
    if isinstance(axes, int):
        ax_a = list(range(x1.ndim - axes, x1.ndim))
        ax_b = list(range(axes))
    else:
        ax_a, ax_b = ([axes[0]] if isinstance(axes[0], int) else list(axes[0]),
                      [axes[1]] if isinstance(axes[1], int) else list(axes[1]))
    ax_a = [a % x1.ndim for a in ax_a]
    ax_b = [b % x2.ndim for b in ax_b]
    for i, j in zip(ax_a, ax_b):
        if x1.shape[i] != x2.shape[j]:
            raise ShapeError(f"tensordot: axis {i} of {describe(x1)} and axis {j} of {describe(x2)} differ")
    free_a = [i for i in range(x1.ndim) if i not in ax_a]
    free_b = [j for j in range(x2.ndim) if j not in ax_b]
    k = 1
    for i in ax_a:
        k *= x1.shape[i]
    a = M.reshape(M.permute_dims(x1, free_a + ax_a), (-1, k))
    b = M.reshape(M.permute_dims(x2, ax_b + free_b), (k, -1))
    return M.reshape(matmul(a, b), tuple(x1.shape[i] for i in free_a) + tuple(x2.shape[j] for j in free_b))


def vecdot(x1, x2, /, *, axis=-1) -> Tensor:
    """Dot product of vectors along ``axis`` (conjugating ``x1``), broadcasting the rest.

    The result has the promoted dtype of the inputs, integers included (uint8 stays uint8 and wraps,
    as numpy's ``vecdot`` and the Array API say), unlike :func:`sum`, which widens integers to int64.

    Example:
        >>> import burn
        >>> assert burn.vecdot(burn.ones((2, 3)), burn.ones((3,))).tolist() == [3.0, 3.0]
        >>> u = burn.tensor([200, 100], dtype=burn.uint8)
        >>> assert burn.vecdot(u, burn.tensor([1, 1], dtype=burn.uint8)).item() == 44
    """
    a = E.conj(x1) if x1.dtype.is_complex else x1
    p = a * x2
    return _sum(p, axis=axis, dtype=p.dtype if p.dtype.is_integer else None)


def outer(x1, x2, /) -> Tensor:
    """Outer product of two vectors.

    Example:
        >>> import burn
        >>> assert burn.outer(burn.ones((2,)), burn.ones((3,))).shape == (2, 3)
    """
    return M.reshape(x1, (-1, 1)) * M.reshape(x2, (1, -1))


def inner(x1, x2, /) -> Tensor:
    """Inner product over the last axes.

    Example:
        >>> import burn
        >>> assert burn.inner(burn.ones((3,)), burn.ones((3,))).item() == 3.0
    """
    return tensordot(x1, x2, axes=([-1], [-1]))


def dot(x1, x2, /) -> Tensor:
    """numpy ``dot`` for 1-D and 2-D operands (matmul).

    Example:
        >>> import burn
        >>> assert burn.dot(burn.ones((3,)), burn.ones((3,))).item() == 3.0
    """
    return matmul(x1, x2)
