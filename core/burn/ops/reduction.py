"""Reductions (axis as int or tuple, keepdims) and scans."""
from __future__ import annotations

import builtins

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..tape import no_grad
from ..primitives import OPAQUE, REDUCE, TensorMeta, primitive
from ..tensor import Tensor, apply
from ._util import normalize_axes, normalize_axis, reduced_shape
from . import elementwise as E
from .movement import _broadcast, flip
from ..tape import _autocast_on
from .autocast import to_float32

__all__ = ["sum", "prod", "max", "min", "argmax", "argmin", "any", "all", "mean", "var", "std",
           "logsumexp", "cumsum", "cumprod", "count_nonzero"]


def _expand_back(g, x_shape, axes, keepdims):
    """Broadcast a reduced gradient back over the reduced axes."""
    if not keepdims:
        g = g.reshape(reduced_shape(x_shape, axes, True))
    return _broadcast(g, x_shape)


def _reduce_meta(name, rule):
    def meta(x, *, axis, keepdims):
        return TensorMeta(reduced_shape(x.shape, axis, keepdims), rule(x.dtype, name, x))
    return meta


def _sum_dtype(d, name, x):
    # the standard's (and numpy's) accumulators: signed and bool in int64, unsigned in uint64
    if d.is_bool or (d.is_integer and d.itemsize < 8):
        return dt.uint64 if d.kind == "u" else dt.int64
    return d


def _keep(d, name, x):
    return d


def _to_bool(d, name, x):
    return dt.bool_


def _reduction(name, rule, backward, doc, *, with_dtype=False):
    p = primitive(name, REDUCE, _reduce_meta(name, rule), differentiable=backward is not None)
    p.backward = backward

    def fn(x, /, *, axis=None, keepdims=False):
        axes = normalize_axes(name, axis, x.ndim)
        if name in ("max", "min"):
            for a in axes:
                if x.shape[a] == 0:
                    raise ShapeError(f"{name}: zero-size axis {a} in {describe(x)} has no {name}imum")
        return apply(p, (x,), {"axis": axes, "keepdims": bool(keepdims)})

    if with_dtype:
        plain = fn

        def fn(x, /, *, axis=None, dtype=None, keepdims=False):   # sum/prod: no max/min check
            if _autocast_on[0]:       # burn.autocast: sums and products accumulate in float32
                (x,) = to_float32(x)
            if dtype is not None:
                return _with_dtype(plain, x, dtype, axis=axis, keepdims=keepdims)
            return apply(p, (x,), {"axis": normalize_axes(name, axis, x.ndim), "keepdims": bool(keepdims)})
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc
    fn.prim = p
    return fn


def _with_dtype(reduce, x, dtype, **kw):
    """``reduce`` computed in ``dtype`` (the Array API's ``dtype=``): the input is cast
    first; small integers accumulate in int64 and wrap back to ``dtype`` after, which is
    the same modular result as accumulating in ``dtype`` itself."""
    d = dt.as_dtype(dtype)
    if x.dtype is not d:
        x = E.astype(x, d)
    out = reduce(x, **kw)
    return out if out.dtype is d else E.astype(out, d)


def _bw_sum(c, g):
    x = c.inputs[0]
    return (_expand_back(g, x.shape, c.attrs["axis"], c.attrs["keepdims"]),)


def _bw_prod(c, g):
    x = c.inputs[0]
    axes, keep = c.attrs["axis"], c.attrs["keepdims"]
    out = _expand_back(c.out, x.shape, axes, keep)
    gg = _expand_back(g, x.shape, axes, keep)
    # exact where x != 0; a lone zero gets the product of the others, and where
    # two or more zeros meet every gradient is zero
    is0 = x == 0
    nz = E.where(is0, 1, x)
    lone = _expand_back(sum(is0.astype(dt.int32), axis=axes, keepdims=keep) == 1, x.shape, axes, keep)
    others = E.where(lone, _expand_back(prod(nz, axis=axes, keepdims=keep), x.shape, axes, keep), 0)
    return (E.where(is0, others, out / nz) * gg,)


def _bw_extreme(c, g):
    x = c.inputs[0]
    axes, keep = c.attrs["axis"], c.attrs["keepdims"]
    out = _expand_back(c.out, x.shape, axes, keep)
    mask = (x == out).astype(g.dtype)
    count = _expand_back(sum(mask, axis=axes, keepdims=keep), x.shape, axes, keep)
    return (_expand_back(g, x.shape, axes, keep) * mask / count,)


sum = _reduction("sum", _sum_dtype, _bw_sum, """Sum over ``axis`` (all axes if None).

    Signed integers and bools sum to int64, unsigned integers to uint64, as in numpy; ``dtype=`` casts the input to
    that dtype first and gives a result of that dtype.

    Example:
        >>> import burn
        >>> x = burn.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> assert burn.sum(x, axis=0).tolist() == [4.0, 6.0] and x.sum().item() == 10.0
        >>> assert burn.sum(burn.tensor([1, 2]), dtype=burn.float64).dtype is burn.float64
    """, with_dtype=True)
prod = _reduction("prod", _sum_dtype, E._holomorphic(_bw_prod), """Product over ``axis`` (``dtype=`` as in :func:`sum`).

    Example:
        >>> import burn
        >>> assert burn.prod(burn.tensor([2.0, 3.0])).item() == 6.0
        >>> assert burn.prod(burn.tensor([100, 3], dtype=burn.uint8), dtype=burn.uint8).item() == 44
    """, with_dtype=True)
max = _reduction("max", _keep, _bw_extreme, """Maximum over ``axis``; gradient split between ties.

    Example:
        >>> import burn
        >>> assert burn.max(burn.tensor([[1, 5], [7, 2]]), axis=1).tolist() == [5, 7]
    """)
min = _reduction("min", _keep, _bw_extreme, """Minimum over ``axis``.

    Example:
        >>> import burn
        >>> assert burn.min(burn.tensor([3.0, -1.0])).item() == -1.0
    """)
any = _reduction("any", _to_bool, None, """True where any element along ``axis`` is non-zero.

    Example:
        >>> import burn
        >>> assert burn.any(burn.tensor([0, 1])).item() is True
    """)
all = _reduction("all", _to_bool, None, """True where every element along ``axis`` is non-zero.

    Example:
        >>> import burn
        >>> assert burn.all(burn.tensor([0, 1])).item() is False
    """)


def _arg_meta(name):
    def meta(x, *, axis, keepdims):
        if axis is None:
            return TensorMeta((1,) * x.ndim if keepdims else (), dt.int64)
        return TensorMeta(reduced_shape(x.shape, (axis,), keepdims), dt.int64)
    return meta


argmax_p = primitive("argmax", REDUCE, _arg_meta("argmax"), differentiable=False)
argmin_p = primitive("argmin", REDUCE, _arg_meta("argmin"), differentiable=False)


def _arg(p, name, x, axis, keepdims):
    if x.size == 0:
        raise ShapeError(f"{name}: empty tensor ({describe(x)})")
    if axis is not None:
        axis = normalize_axis(name, int(axis), x.ndim)
    return apply(p, (x,), {"axis": axis, "keepdims": bool(keepdims)})


def argmax(x, /, *, axis=None, keepdims=False) -> Tensor:
    """Index of the maximum along ``axis`` (of the flattened tensor if None).

    Example:
        >>> import burn
        >>> assert burn.argmax(burn.tensor([[1, 5], [7, 2]]), axis=1).tolist() == [1, 0]
    """
    return _arg(argmax_p, "argmax", x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims=False) -> Tensor:
    """Index of the minimum along ``axis``.

    Example:
        >>> import burn
        >>> assert burn.argmin(burn.tensor([3.0, -1.0, 2.0])).item() == 1
    """
    return _arg(argmin_p, "argmin", x, axis, keepdims)


def mean(x, /, *, axis=None, keepdims=False) -> Tensor:
    """Arithmetic mean over ``axis``.

    Example:
        >>> import burn
        >>> assert burn.mean(burn.tensor([1.0, 2.0, 3.0])).item() == 2.0
    """
    if not x.dtype.is_inexact:
        x = E.astype(x, dt.default_float)
    (x,) = to_float32(x)            # burn.autocast's float32 list
    axes = normalize_axes("mean", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    return sum(x, axis=axes, keepdims=keepdims) * (1.0 / n if n else float("nan"))


def var(x, /, *, axis=None, correction=0.0, keepdims=False) -> Tensor:
    """Variance over ``axis`` with ``correction`` degrees of freedom (Array API).

    Example:
        >>> import burn
        >>> assert burn.var(burn.tensor([1.0, 3.0])).item() == 1.0
        >>> assert burn.var(burn.tensor([1j, -1j])).item() == 1.0       # |x - mean|^2 of complex x
    """
    if not x.dtype.is_inexact:
        x = E.astype(x, dt.default_float)
    (x,) = to_float32(x)            # burn.autocast's float32 list
    axes = normalize_axes("var", axis, x.ndim)
    n = 1
    for a in axes:
        n *= x.shape[a]
    d = x - mean(x, axis=axes, keepdims=True)
    sq = E.real(d * E.conj(d)) if x.dtype.is_complex else d * d      # numpy: |x - mean|^2, a real variance
    # numpy divides by max(n - correction, 0): no degrees of freedom left gives inf (0/0: nan)
    scale = 1.0 / (n - correction) if n - correction > 0 else float("inf")
    return sum(sq, axis=axes, keepdims=keepdims) * scale


def std(x, /, *, axis=None, correction=0.0, keepdims=False) -> Tensor:
    """Standard deviation over ``axis``.

    Example:
        >>> import burn
        >>> assert burn.std(burn.tensor([1.0, 3.0])).item() == 1.0
    """
    return E.sqrt(var(x, axis=axis, correction=correction, keepdims=keepdims))


def logsumexp(x, /, *, axis=None, keepdims=False) -> Tensor:
    """``log(sum(exp(x)))`` computed stably (max-shifted).

    Example:
        >>> import burn, math
        >>> assert abs(burn.logsumexp(burn.tensor([0.0, 0.0])).item() - math.log(2)) < 1e-6
    """
    if not x.dtype.is_inexact:
        x = E.astype(x, dt.default_float)
    (x,) = to_float32(x)            # burn.autocast's float32 list
    axes = normalize_axes("logsumexp", axis, x.ndim)
    with no_grad():
        m = max(x, axis=axes, keepdims=True).detach()
        m = E.where(E.isfinite(m), m, 0.0)
    s = E.log(sum(E.exp(x - m), axis=axes, keepdims=True)) + m
    if not keepdims:
        s = s.reshape(reduced_shape(x.shape, axes, False))
    return s


def count_nonzero(x, /, *, axis=None, keepdims=False) -> Tensor:
    """Number of non-zero elements along ``axis``.

    Example:
        >>> import burn
        >>> assert burn.count_nonzero(burn.tensor([0, 2, 3])).item() == 2
    """
    return sum((x != 0).astype(dt.int64), axis=axis, keepdims=keepdims)


def _scan_meta(name):
    def meta(x, *, axis):
        d = x.dtype
        if d.is_bool or (d.is_integer and d.itemsize < 8):
            d = dt.uint64 if d.kind == "u" else dt.int64
        return TensorMeta(x.shape, d)
    return meta


def _bw_cumsum(c, g):
    ax = c.attrs["axis"]
    return (flip(cumsum(flip(g, axis=ax), axis=ax), axis=ax),)


def _bw_cumprod(c, g):
    x = c.inputs[0]
    ax = c.attrs["axis"]
    # d out_j / d x_i = out_j / x_i for j >= i where x_i != 0; the first zero gets
    # the suffix sum of g * (cumprod with that zero taken as 1); later zeros get 0
    def rcumsum(t):
        return flip(cumsum(flip(t, axis=ax), axis=ax), axis=ax)
    is0 = x == 0
    first = E.logical_and(is0, cumsum(is0, axis=ax) == 1)
    fast = rcumsum(g * c.out) / E.where(is0, 1, x)
    at_first = rcumsum(g * cumprod(E.where(first, 1, x), axis=ax))
    return (E.where(first, at_first, E.where(is0, 0, fast)),)


cumsum_p = primitive("cumsum", OPAQUE, _scan_meta("cumsum"))
cumsum_p.backward = _bw_cumsum
cumprod_p = primitive("cumprod", OPAQUE, _scan_meta("cumprod"))
cumprod_p.backward = E._holomorphic(_bw_cumprod)     # complex inputs: conj(f'), as mul


def cumsum(x, /, *, axis=None) -> Tensor:
    """Cumulative sum along ``axis`` (of the flattened tensor if None).

    Example:
        >>> import burn
        >>> assert burn.cumsum(burn.tensor([1, 2, 3])).tolist() == [1, 3, 6]
    """
    if axis is None:
        x = x.reshape((-1,))
        axis = 0
    (x,) = to_float32(x)            # burn.autocast's float32 list
    return apply(cumsum_p, (x,), {"axis": normalize_axis("cumsum", int(axis), x.ndim)})


def cumprod(x, /, *, axis=None) -> Tensor:
    """Cumulative product along ``axis``.

    Example:
        >>> import burn
        >>> assert burn.cumprod(burn.tensor([1, 2, 3])).tolist() == [1, 2, 6]
    """
    if axis is None:
        x = x.reshape((-1,))
        axis = 0
    (x,) = to_float32(x)            # burn.autocast's float32 list
    return apply(cumprod_p, (x,), {"axis": normalize_axis("cumprod", int(axis), x.ndim)})
