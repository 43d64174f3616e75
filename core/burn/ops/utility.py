"""Copies and closeness tests: ``clone``, ``isclose``, ``allclose`` (numpy's semantics and defaults).

``isclose`` composes element-wise ops (so it stays lazy and fuses); ``allclose`` reduces it and
reads the one boolean back, so it flushes the work its inputs need.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError, describe
from ..tensor import Tensor
from . import elementwise as E
from .creation import as_tensor_like
from .reduction import all as _all

__all__ = ["clone", "isclose", "allclose"]


def clone(x, /) -> Tensor:
    """A copy of ``x`` that shares nothing with it; the gradient flows through to ``x``.

    Writes into ``x`` afterwards (``x[0] = ...``, ``x.assign_``) do not reach the copy.

    Example:
        >>> import burn
        >>> x = burn.tensor([1.0, 2.0])
        >>> y = burn.clone(x)
        >>> x[0] = 5.0
        >>> assert y.tolist() == [1.0, 2.0] and y is not x and x.clone().tolist() == [5.0, 2.0]
    """
    if not isinstance(x, Tensor):
        raise TypeError(f"clone: expected a burn.Tensor, got {type(x).__name__}")
    return E.astype(x, x.dtype, copy=True)    # a new node: the copy has its own storage


def _operand(op, v, like):
    if isinstance(v, Tensor):
        return v
    if isinstance(v, (bool, int, float)):
        return as_tensor_like(v, like)
    raise TypeError(f"{op}: expected a burn.Tensor or a Python number, got {type(v).__name__}")


def isclose(a, b, /, *, rtol=1e-5, atol=1e-8, equal_nan=False) -> Tensor:
    """Element-wise ``|a - b| <= atol + rtol * |b|`` (numpy's rule: not symmetric in ``a``, ``b``).

    Infinities are close only to the same infinity; NaNs are close to nothing unless
    ``equal_nan=True``, then NaN is close to NaN. Broadcasts; returns a bool tensor.

    Example:
        >>> import burn
        >>> a = burn.tensor([1.0, 1e10, float("nan"), float("inf")])
        >>> b = burn.tensor([1.0 + 1e-7, 1.0001e10, float("nan"), float("inf")])
        >>> assert burn.isclose(a, b).tolist() == [True, False, False, True]
        >>> assert burn.isclose(a, b, equal_nan=True).tolist()[2] is True
    """
    if not isinstance(a, Tensor) and not isinstance(b, Tensor):
        raise TypeError(f"isclose: at least one operand must be a burn.Tensor, got "
                        f"{type(a).__name__} and {type(b).__name__}")
    a = _operand("isclose", a, b)
    b = _operand("isclose", b, a)
    for t in (a, b):
        if t.dtype.is_complex:
            raise DTypeError(f"isclose: complex tensors are not supported ({describe(t)}); compare real "
                             f"and imaginary parts")
    if rtol < 0 or atol < 0:
        raise ValueError(f"isclose: rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    if not a.dtype.is_inexact:
        a = a.astype(b.dtype if b.dtype.is_inexact else dt.float64)
    if not b.dtype.is_inexact:
        b = b.astype(a.dtype)
    # the tolerance test on finite pairs only (numpy's "& isfinite(b)"; a non-finite a is never within
    # tolerance of a finite b); the others are zeroed first so inf - inf raises no numpy warning.
    # Equal values (infinities included) are always close.
    fin = E.logical_and(E.isfinite(a), E.isfinite(b))
    af, bf = E.where(fin, a, 0.0), E.where(fin, b, 0.0)
    close = E.logical_or(E.logical_and(fin, E.abs(af - bf) <= atol + rtol * E.abs(bf)), E.equal(a, b))
    if equal_nan:
        close = E.logical_or(close, E.logical_and(E.isnan(a), E.isnan(b)))
    return close


def allclose(a, b, /, *, rtol=1e-5, atol=1e-8, equal_nan=False) -> bool:
    """``True`` when every element of ``isclose(a, b, ...)`` is; reads one boolean back.

    Example:
        >>> import burn
        >>> assert burn.allclose(burn.tensor([1.0, 2.0]), burn.tensor([1.0, 2.0 + 1e-9]))
        >>> assert not burn.allclose(burn.tensor([1.0]), burn.tensor([1.1]))
        >>> assert burn.allclose(burn.tensor([float("nan")]), float("nan"), equal_nan=True)
    """
    return bool(_all(isclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan)).item())
