"""Sorting, searching and set functions of the Array API 2024.12.

Two primitives carry them: ``argsort`` (a stable sort of the positions along one axis, NaNs
last as numpy) and ``searchsorted`` (a binary search in a sorted 1-D tensor). Everything else
composes: ``sort`` gathers with the permutation (so its backward scatters the gradient back
through it), a descending sort is the ascending sort of the flipped axis flipped back (which
keeps equal elements in their order, as the standard asks; NaNs come first then, as in
numpy's Array API namespace), and ``nonzero`` / ``unique_*`` compose sorts, comparisons and a
count that they read back.

Data-dependent shapes: ``nonzero`` and ``unique_*`` return tensors whose length depends on the
values, so they flush the pending work their input needs and read one count back to the host
before returning (everything else here stays lazy).
"""
from __future__ import annotations

from typing import NamedTuple

from .. import dtypes as dt
from ..errors import AutodiffError, DTypeError, ShapeError, describe
from ..primitives import OPAQUE, TensorMeta, primitive
from ..tensor import Tensor, apply
from ._util import normalize_axis
from . import elementwise as E
from .creation import full, tensor, zeros
from .movement import concat, flip, reshape, take, take_along_axis
from .reduction import count_nonzero, cumsum

__all__ = ["sort", "argsort", "topk", "searchsorted", "nonzero", "unique_values", "unique_counts",
           "unique_inverse", "unique_all"]


# the Array API's result tuples: fields by the standard's names, and they unpack as tuples
class UniqueAllResult(NamedTuple):
    """``unique_all``'s result: ``values``, ``indices``, ``inverse_indices``, ``counts``."""
    values: Tensor
    indices: Tensor
    inverse_indices: Tensor
    counts: Tensor


class TopkResult(NamedTuple):
    """``topk``'s result: ``values``, ``indices`` (as torch's)."""
    values: Tensor
    indices: Tensor


class UniqueCountsResult(NamedTuple):
    """``unique_counts``'s result: ``values``, ``counts``."""
    values: Tensor
    counts: Tensor


class UniqueInverseResult(NamedTuple):
    """``unique_inverse``'s result: ``values``, ``inverse_indices``."""
    values: Tensor
    inverse_indices: Tensor


def _real(op, x):
    if x.dtype.is_complex:
        raise DTypeError(f"{op}: complex values have no order; got {describe(x)} (sort the real part, or abs)")


def _argsort_meta(x, *, axis):
    _real("argsort", x)
    return TensorMeta(x.shape, dt.int64)


def _searchsorted_meta(x1, x2, *, side):
    _real("searchsorted", x1)
    _real("searchsorted", x2)
    if x1.ndim != 1:
        raise ShapeError(f"searchsorted: x1 must be one-dimensional, got {describe(x1)}")
    if x1.dtype != x2.dtype:
        raise DTypeError(f"searchsorted: x1 and x2 must share a dtype here ({describe(x1)} vs {describe(x2)})")
    return TensorMeta(x2.shape, dt.int64)


# integer results: nothing to differentiate (sort's gradient flows through its gather instead)
argsort_p = primitive("argsort", OPAQUE, _argsort_meta, differentiable=False)
searchsorted_p = primitive("searchsorted", OPAQUE, _searchsorted_meta, differentiable=False)


def _axis(op, x, axis):
    if x.ndim == 0 and axis not in (0, -1):
        raise ShapeError(f"{op}: axis {axis} is out of range for a 0-d tensor {describe(x)}")
    return normalize_axis(op, int(axis), x.ndim) if x.ndim else 0


def argsort(x, /, *, axis=-1, descending=False, stable=True) -> Tensor:
    """The indices (int64) that sort ``x`` along ``axis``; always stable, NaNs last.

    ``descending=True`` keeps equal elements in their original order too (NaNs come first
    then, as numpy's Array API namespace does). Not differentiable (its result is integer).

    Example:
        >>> import burn
        >>> x = burn.tensor([3.0, 1.0, float("nan"), 1.0])
        >>> assert burn.argsort(x).tolist() == [1, 3, 0, 2]
        >>> assert burn.argsort(burn.tensor([1, 2, 1]), descending=True).tolist() == [1, 0, 2]
    """
    ax = _axis("argsort", x, axis)
    if x.ndim == 0:      # one element: sorted as a 1-element row
        return reshape(argsort(reshape(x, (1,))), ())
    if not descending:
        return apply(argsort_p, (x,), {"axis": ax})
    r = apply(argsort_p, (flip(x, axis=ax),), {"axis": ax})
    return (x.shape[ax] - 1) - flip(r, axis=ax)


def sort(x, /, *, axis=-1, descending=False, stable=True) -> Tensor:
    """``x`` sorted along ``axis`` (stable, NaNs last; ``descending=True`` reverses the order).

    Differentiable: the gradient goes back through the permutation to where each value came from.

    Example:
        >>> import burn
        >>> assert burn.sort(burn.tensor([[3, 1, 2]])).tolist() == [[1, 2, 3]]
        >>> assert burn.sort(burn.tensor([1.0, 3.0, 2.0]), descending=True).tolist() == [3.0, 2.0, 1.0]
    """
    ax = _axis("sort", x, axis)
    if x.ndim == 0:      # a new tensor (gathered), never ``x`` itself
        return reshape(sort(reshape(x, (1,))), ())
    return take_along_axis(x, argsort(x, axis=ax, descending=descending), axis=ax)


def topk(x, k, /, axis=-1, largest=True, sorted=True) -> TopkResult:  # noqa: A002 (torch's name)
    """The ``k`` largest (``largest=False``: smallest) entries of ``x`` along ``axis``, as
    ``(values, indices)``; ``values`` is differentiable (the gradient goes back to where each
    value came from), ``indices`` are int64.

    The result is always sorted (largest first, or smallest first), so ``sorted=False`` gives the
    same order (torch leaves it unspecified). Equal values keep their original order; NaNs count
    as the largest values, as in torch.

    Example:
        >>> import burn
        >>> v, i = burn.topk(burn.tensor([[1.0, 5.0, 3.0, 4.0]]), 2)
        >>> assert v.tolist() == [[5.0, 4.0]] and i.tolist() == [[1, 3]]
        >>> assert burn.topk(burn.tensor([3, 1, 2]), 1, largest=False).values.tolist() == [1]
    """
    if x.ndim == 0:
        raise ShapeError(f"topk: needs at least one axis, got {describe(x)}")
    ax = _axis("topk", x, axis)
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= x.shape[ax]:
        raise ShapeError(f"topk: k={k!r} must be an int in [0, {x.shape[ax]}] for axis {ax} of {describe(x)}")
    order = argsort(x, axis=ax, descending=bool(largest))
    idx = order[(slice(None),) * ax + (slice(0, k),)]
    return TopkResult(take_along_axis(x, idx, axis=ax), idx)


def searchsorted(x1, x2, /, *, side="left", sorter=None) -> Tensor:
    """Insertion indices (int64) of ``x2``'s values into the sorted 1-D ``x1``.

    ``side="left"`` gives the first suitable position, ``"right"`` the last; ``sorter`` is a
    permutation that sorts ``x1`` (``argsort(x1)``). NaNs sort last, as numpy's. The dtypes are
    promoted to a common one first. Not differentiable (its result is integer).

    Example:
        >>> import burn
        >>> a = burn.tensor([1.0, 2.0, 2.0, 5.0])
        >>> assert burn.searchsorted(a, burn.tensor([2.0, 6.0])).tolist() == [1, 4]
        >>> assert burn.searchsorted(a, burn.tensor([2.0]), side="right").tolist() == [3]
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    if not isinstance(x2, Tensor):
        # its own dtype, then promoted: 2.5 into an int x1 must not become 2
        x2 = tensor(x2, device=x1.device)
    if x1.ndim != 1:
        raise ShapeError(f"searchsorted: x1 must be one-dimensional, got {describe(x1)}")
    if sorter is not None:
        if not isinstance(sorter, Tensor):
            sorter = tensor(sorter, device=x1.device)
        if not sorter.dtype.is_integer or sorter.shape != x1.shape:
            raise ShapeError(f"searchsorted: sorter must be integer indices of x1's shape, "
                             f"got {describe(sorter)} for x1 {describe(x1)}")
        x1 = take(x1, sorter)
    if x1.dtype != x2.dtype:
        common = dt.result_type(x1.dtype, x2.dtype)
        x1, x2 = E.astype(x1, common), E.astype(x2, common)
    return apply(searchsorted_p, (x1, x2), {"side": side})


def _flat_true(mask) -> Tensor:
    """Flat positions (int64, ascending) where the 1-D bool ``mask`` holds; reads their count."""
    n = int(count_nonzero(mask).item())           # the data-dependent length: a flush
    # a stable sort of "is false" puts the true positions first, in their order
    order = argsort(E.logical_not(mask).astype(dt.uint8))
    return order[:n]


def nonzero(x, /) -> tuple:
    """The indices of the non-zero elements, one int64 tensor per axis (row-major order).

    Data-dependent shape: flushes the work ``x`` needs and reads the count of non-zero
    elements back to the host. Not differentiable (its results are integer).

    Example:
        >>> import burn
        >>> r, c = burn.nonzero(burn.tensor([[0, 1], [2, 0]]))
        >>> assert r.tolist() == [0, 1] and c.tolist() == [1, 0]
    """
    if x.ndim == 0:
        raise ShapeError(f"nonzero: a 0-d tensor has no axes to index, got {describe(x)} (use x[None])")
    flat = reshape(x, (-1,))
    idx = _flat_true(flat if flat.dtype.is_bool else flat != 0)
    out = []
    stride = x.size
    for s in x.shape:
        stride //= s if s else 1
        out.append((idx // stride) % s if s else idx)
    return tuple(out)


def _no_grad_path(op, x):
    if x.requires_grad:
        raise AutodiffError(f"{op}: not differentiable (its output's shape depends on the values), but "
                            f"{describe(x)} requires a gradient; call it on x.detach()")


def _unique(op, x, *, inverse=False):
    """Sorted distinct values of ``x`` (each NaN distinct, as numpy's ``unique_values``) and, in
    a dict, their first flat index, counts and (``inverse``) the inverse indices."""
    _no_grad_path(op, x)
    _real(op, x)
    flat = reshape(x, (-1,))
    n = flat.shape[0]
    perm = argsort(flat)
    s = take(flat, perm)
    # a value starts a group where it differs from the one before (NaN != NaN: each its own)
    start = concat([full((1,), True, dtype=dt.bool_, device=x.device), s[1:] != s[:-1]]) if n else \
        zeros((0,), dtype=dt.bool_, device=x.device)
    first = _flat_true(start)
    out = {"values": take(s, first), "indices": take(perm, first)}
    ends = concat([first[1:], full((1,), n, dtype=dt.int64, device=x.device)]) if n else first
    out["counts"] = ends - first
    if inverse:
        group = cumsum(start.astype(dt.int64)) - 1          # group of each sorted element
        out["inverse"] = reshape(take(group, argsort(perm)), x.shape) if n else \
            zeros(x.shape, dtype=dt.int64, device=x.device)
    return out


def unique_values(x, /) -> Tensor:
    """The distinct values of ``x``, sorted, as a 1-D tensor (each NaN counts as distinct).

    Data-dependent shape: flushes the work ``x`` needs and reads the number of distinct
    values back. Not differentiable: raises AutodiffError if ``x`` requires a gradient.

    Example:
        >>> import burn
        >>> assert burn.unique_values(burn.tensor([[3, 1], [3, 2]])).tolist() == [1, 2, 3]
    """
    return _unique("unique_values", x)["values"]


def unique_counts(x, /) -> tuple:
    """``(values, counts)`` (a named tuple): the distinct values of ``x`` (sorted) and how often each occurs.

    Data-dependent shape: flushes and reads one count back (see :func:`unique_values`).
    Not differentiable: raises AutodiffError if ``x`` requires a gradient.

    Example:
        >>> import burn
        >>> v, c = burn.unique_counts(burn.tensor([2, 1, 2]))
        >>> assert v.tolist() == [1, 2] and c.tolist() == [1, 2]
        >>> assert burn.unique_counts(burn.tensor([7, 7])).counts.tolist() == [2]
    """
    u = _unique("unique_counts", x)
    return UniqueCountsResult(u["values"], u["counts"])


def unique_inverse(x, /) -> tuple:
    """``(values, inverse_indices)`` (a named tuple): the distinct values and, with ``x``'s shape, the position
    of each element of ``x`` among them (``values[inverse_indices] == x``).

    Data-dependent shape: flushes and reads one count back (see :func:`unique_values`).
    Not differentiable: raises AutodiffError if ``x`` requires a gradient.

    Example:
        >>> import burn
        >>> v, inv = burn.unique_inverse(burn.tensor([[5, 3], [5, 7]]))
        >>> assert v.tolist() == [3, 5, 7] and inv.tolist() == [[1, 0], [1, 2]]
    """
    u = _unique("unique_inverse", x, inverse=True)
    return UniqueInverseResult(u["values"], u["inverse"])


def unique_all(x, /) -> tuple:
    """``(values, indices, inverse_indices, counts)`` (a named tuple): the distinct values, the flat index of
    each one's first occurrence in ``x``, the inverse indices (``x``'s shape) and the counts.

    Data-dependent shape: flushes and reads one count back (see :func:`unique_values`).
    Not differentiable: raises AutodiffError if ``x`` requires a gradient.

    Example:
        >>> import burn
        >>> v, i, inv, c = burn.unique_all(burn.tensor([4, 2, 4, 4]))
        >>> assert (v.tolist(), i.tolist(), inv.tolist(), c.tolist()) == ([2, 4], [1, 0], [1, 0, 1, 1], [1, 3])
    """
    u = _unique("unique_all", x, inverse=True)
    return UniqueAllResult(u["values"], u["indices"], u["inverse"], u["counts"])

