"""Array API functions composed of other burn ops: ``broadcast_shapes``, ``meshgrid``,
``diff``, ``cumulative_sum`` / ``cumulative_prod``, the bit shifts and ``isin``.

Each is exact in terms of the ops it uses (no approximation), and differentiable
wherever those ops are.
"""
from __future__ import annotations

import builtins

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..tensor import Tensor
from . import elementwise as E
from . import reduction as R
from .creation import full, tensor
from .movement import _broadcast, concat, reshape, take
from ._util import normalize_axis

__all__ = ["broadcast_shapes", "meshgrid", "diff", "cumulative_sum", "cumulative_prod",
           "bitwise_left_shift", "bitwise_right_shift", "isin"]


def broadcast_shapes(*shapes) -> tuple:
    """The shape numpy broadcasting gives operands of these shapes.

    Example:
        >>> import burn
        >>> assert burn.broadcast_shapes((2, 1), (3,), ()) == (2, 3)
    """
    nd = builtins.max((len(s) for s in shapes), default=0)
    out = []
    for i in range(nd):
        d = 1
        for s in shapes:
            k = len(s) - nd + i
            v = s[k] if k >= 0 else 1
            if v != 1:
                if d != 1 and d != v:
                    raise ShapeError(f"broadcast_shapes: shapes {', '.join(map(str, shapes))} cannot be "
                                     f"broadcast together (dimension {i - nd} is {d} in one and {v} in another)")
                d = v
        out.append(d)
    return tuple(out)


def meshgrid(*arrays, indexing="xy") -> list:
    """Coordinate grids from 1-D tensors: with ``indexing="ij"`` output ``i`` varies
    along axis ``i``; ``"xy"`` (the default) swaps the first two axes (Cartesian).

    Example:
        >>> import burn
        >>> gx, gy = burn.meshgrid(burn.tensor([1, 2, 3]), burn.tensor([4, 5]))
        >>> assert gx.shape == (2, 3) and gx.tolist() == [[1, 2, 3], [1, 2, 3]]
        >>> gi, _ = burn.meshgrid(burn.tensor([1, 2, 3]), burn.tensor([4, 5]), indexing="ij")
        >>> assert gi.shape == (3, 2)
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    for a in arrays:
        if a.ndim != 1:
            raise ShapeError(f"meshgrid: inputs must be 1-D, got {describe(a)}")
    if len({a.dtype for a in arrays}) > 1:
        raise DTypeError(f"meshgrid: inputs must have one dtype, got {', '.join(describe(a) for a in arrays)}")
    n = len(arrays)
    sizes = [a.shape[0] for a in arrays]
    if indexing == "xy" and n >= 2:
        sizes[0], sizes[1] = sizes[1], sizes[0]
    out = []
    for i, a in enumerate(arrays):
        pos = (1 - i if i < 2 else i) if indexing == "xy" and n >= 2 else i
        shape = [1] * n
        shape[pos] = a.shape[0]
        out.append(_broadcast(reshape(a, tuple(shape)), tuple(sizes)))
    return out


def _along(x, axis, start, stop):
    key = [slice(None)] * x.ndim
    key[axis] = slice(start, stop)
    return x[tuple(key)]


def _end(p, x, axis):
    """A ``prepend``/``append`` operand as a tensor; a scalar fills one slice (numpy)."""
    if p is x:
        return x
    if not isinstance(p, Tensor):
        p = tensor(p, dtype=x.dtype, device=x.device)
    if p.ndim == 0:
        shape = list(x.shape)
        shape[axis] = 1
        p = _broadcast(p, tuple(shape))
    return p


def diff(x, /, *, axis=-1, n=1, prepend=None, append=None) -> Tensor:
    """The ``n``-th forward difference ``x[i + 1] - x[i]`` along ``axis``, after joining
    ``prepend`` and ``append`` (tensors of ``x``'s shape off ``axis``) to its ends.
    Bools differ by ``!=``, as in numpy.

    Example:
        >>> import burn
        >>> x = burn.tensor([1, 4, 9, 16])
        >>> assert burn.diff(x).tolist() == [3, 5, 7] and burn.diff(x, n=2).tolist() == [2, 2]
        >>> assert burn.diff(x, prepend=burn.tensor([0])).tolist() == [1, 3, 5, 7]
    """
    if x.ndim == 0:
        raise ShapeError(f"diff: needs at least one dimension, got {describe(x)}")
    if n < 0:
        raise ValueError(f"diff: order n must be non-negative, got {n}")
    axis = normalize_axis("diff", axis, x.ndim)
    parts = [_end(p, x, axis) for p in (prepend, x, append) if p is not None]
    if len(parts) > 1:
        x = concat(parts, axis=axis)
    for _ in range(n):
        hi, lo = _along(x, axis, 1, None), _along(x, axis, None, -1)
        x = E.not_equal(hi, lo) if x.dtype.is_bool else E.subtract(hi, lo)
    return x


def _cumulative(name, scan, identity, x, axis, dtype, include_initial):
    if x.ndim == 0:
        raise ShapeError(f"{name}: needs at least one dimension, got {describe(x)}")
    if axis is None:
        if x.ndim > 1:
            raise ShapeError(f"{name}: axis is required for a tensor of more than one dimension ({describe(x)})")
        axis = 0
    axis = normalize_axis(name, axis, x.ndim)
    if dtype is not None:
        d = dt.as_dtype(dtype)
        if x.dtype is not d:
            x = E.astype(x, d)
    out = scan(x, axis=axis)
    if dtype is not None and out.dtype is not x.dtype:
        out = E.astype(out, x.dtype)     # small integers scan in int64; wrap back to the dtype asked for
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = concat([full(tuple(shape), identity, dtype=out.dtype, device=x.device), out], axis=axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False) -> Tensor:
    """Running sums along ``axis`` (which may be None only for 1-D ``x``).

    ``dtype`` casts the input first; ``include_initial`` starts with the empty sum 0,
    so that axis grows by one.

    Example:
        >>> import burn
        >>> x = burn.tensor([1, 2, 3])
        >>> assert burn.cumulative_sum(x).tolist() == [1, 3, 6]
        >>> assert burn.cumulative_sum(x, include_initial=True).tolist() == [0, 1, 3, 6]
    """
    return _cumulative("cumulative_sum", R.cumsum, 0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False) -> Tensor:
    """Running products along ``axis`` (arguments as in :func:`cumulative_sum`; the
    initial value is 1).

    Example:
        >>> import burn
        >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> assert burn.cumulative_prod(x, axis=1, include_initial=True).tolist() == [[1, 1, 2], [1, 3, 12]]
    """
    return _cumulative("cumulative_prod", R.cumprod, 1, x, axis, dtype, include_initial)


def _shift_operands(name, x1, x2):
    a, b = E._operands(name, x1, x2)
    if not a.dtype.is_integer:
        raise DTypeError(f"{name}: needs integer tensors, got {describe(a)}, {describe(b)}")
    return a, b


def _powers_of_two(d, device):
    """2**k for k in [0, bits) in dtype ``d``, wrapped as the dtype stores them."""
    bits = d.itemsize * 8
    vals = np.left_shift(np.ones(bits, dtype=d.name), np.arange(bits, dtype=d.name))
    return tensor(vals, dtype=d, device=device), bits


def bitwise_left_shift(x1, x2, /) -> Tensor:
    """``x1 << x2`` for integers: ``x1 * 2**x2`` wrapped to the dtype; a shift by the
    dtype's bit count or more, or by a negative count, gives 0 (numpy's rule).

    Example:
        >>> import burn
        >>> assert burn.bitwise_left_shift(burn.tensor([1, 3]), burn.tensor([2, 1])).tolist() == [4, 6]
        >>> assert (burn.tensor([1], dtype=burn.int8) << 7).tolist() == [-128]
    """
    a, s = _shift_operands("bitwise_left_shift", x1, x2)
    table, bits = _powers_of_two(a.dtype, a.device)
    out_of_range = E.logical_or(E.less(s, 0), E.greater_equal(s, bits))
    scale = take(table, E.clip(s, 0, bits - 1).astype(dt.int64))
    return E.where(out_of_range, 0, E.multiply(a, scale))


def bitwise_right_shift(x1, x2, /) -> Tensor:
    """``x1 >> x2`` for integers: floor division by ``2**x2`` (an arithmetic shift); a
    shift past the sign bit, or by a negative count, gives -1 for negative values and
    0 otherwise (numpy's rule).

    Example:
        >>> import burn
        >>> assert burn.bitwise_right_shift(burn.tensor([8, -8]), 2).tolist() == [2, -2]
        >>> assert (burn.tensor([-1, 5]) >> 70).tolist() == [-1, 0]
    """
    a, s = _shift_operands("bitwise_right_shift", x1, x2)
    d = a.dtype
    table, bits = _powers_of_two(d, a.device)
    # a signed dtype's 2**(bits-1) is negative: shifts from bits-1 on are the sign fill
    limit = bits - 1 if d.kind == "i" else bits
    out_of_range = E.logical_or(E.less(s, 0), E.greater_equal(s, limit))
    divisor = take(table, E.clip(s, 0, limit - 1).astype(dt.int64))
    fill = E.neg(E.astype(E.less(a, 0), d)) if d.kind == "i" else 0     # -1 / 0 in the dtype
    return E.where(out_of_range, fill, E.floor_divide(a, divisor))


_ISIN_CHUNK = 1 << 24     # elements of one broadcast comparison: bounds isin's memory


def isin(x1, x2, /, *, invert=False) -> Tensor:
    """True where an element of ``x1`` equals some element of ``x2`` (of any shape).

    Compares by broadcasting, in chunks of ``x2`` so no intermediate exceeds
    about 16M elements: O(x1.size * x2.size) work, meant for small ``x2``.

    Example:
        >>> import burn
        >>> assert burn.isin(burn.tensor([1, 2, 3, 4]), burn.tensor([[4, 2]])).tolist() == [False, True, False, True]
        >>> assert burn.isin(burn.tensor([1, 2]), burn.tensor([2]), invert=True).tolist() == [True, False]
    """
    if not isinstance(x1, Tensor):
        x1 = tensor(x1, device=x2.device if isinstance(x2, Tensor) else None)
    x2 = x2 if isinstance(x2, Tensor) else tensor(x2, device=x1.device)
    flat = reshape(x2, (-1,))
    m = flat.shape[0]
    if m == 0:
        hit = full(x1.shape, False, dtype=dt.bool_, device=x1.device)
    else:
        step = builtins.max(1, _ISIN_CHUNK // builtins.max(x1.size, 1))
        col = reshape(x1, x1.shape + (1,))
        hit = None
        for start in range(0, m, step):
            part = R.any(E.equal(col, flat[start:start + step]), axis=-1)
            hit = part if hit is None else E.logical_or(hit, part)
    return E.logical_not(hit) if invert else hit
