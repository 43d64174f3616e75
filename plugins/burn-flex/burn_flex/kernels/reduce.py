"""Reductions and scans on flex: numpy's, signed integers and bool accumulating in int64,
unsigned integers in uint64 (numpy's rule and the standard's). Fused reduce groups run their
element-wise prologue blocked and the reduction as one numpy call (:mod:`burn_flex.fused`).

Large reductions run on the flex pool (:mod:`burn_flex.threads`), split over an axis that is
kept: every output element is then reduced by the same numpy loop over the same elements as
in one call, so results do not depend on the thread count. A reduction over every axis is
split over the leading axis and the chunks' partial results combined: exact for max, min,
any, all and integer sums; for floating ``sum`` and ``prod`` the summation order changes
with the thread count (within the accuracy tests' bounds, a few ulp of the result for
sums of like-signed values). argmax/argmin over every axis stay on one thread.
"""
from __future__ import annotations

import numpy as np

from .. import threads

# elements per thread at least: a region costs ~15-20 us of hand-off (docs/benchmarks.md, round 7)
PAR_REDUCE = 1 << 18


def _acc_dtype(x):
    return np.uint64 if x.dtype.kind == "u" else np.int64 if x.dtype.kind in "bi" else None


def _axes(x, axis):
    if axis is None:
        return tuple(range(x.ndim))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(a % x.ndim for a in axis))
    return (axis % x.ndim,)


def _parallel(fn, x, axis, keepdims, combine=None, **kw):
    """``fn(x, axis=axis, keepdims=keepdims, **kw)`` split on the pool where that pays."""
    if x.size < 2 * PAR_REDUCE or x.ndim == 0 or threads.num_threads() < 2:
        return np.asarray(fn(x, axis=axis, keepdims=keepdims, **kw))
    axes = _axes(x, axis)
    kept = [d for d in range(x.ndim) if d not in axes and x.shape[d] > 1]
    if not kept and combine is None:
        return np.asarray(fn(x, axis=axis, keepdims=keepdims, **kw))
    d = kept[0] if kept else 0          # the outermost kept axis: contiguous chunks
    n = x.shape[d]
    if n < 2:
        return np.asarray(fn(x, axis=axis, keepdims=keepdims, **kw))
    parts = {}
    lead = (slice(None),) * d

    def work(a, b):
        parts[a] = np.asarray(fn(x[lead + (slice(a, b),)], axis=axis, keepdims=True, **kw))

    # where the split axis is the only kept one, chunks are at least 2 wide along it: a chunk one
    # element wide leaves no kept axis, and numpy then sums the reduced axis as its inner loop
    # (pairwise) instead of adding row after row as for the whole array: other bits (the sum over
    # axis 0 of a [64, 5] bias gradient)
    threads.parallel_for(n, work, min_chunk=max(2 if len(kept) == 1 else 1, PAR_REDUCE * n // x.size))
    chunks = [parts[a] for a in sorted(parts)]
    if kept:
        r = np.concatenate(chunks, axis=d) if len(chunks) > 1 else chunks[0]
    else:
        r = combine(np.concatenate(chunks, axis=0), axis=0, keepdims=True, **kw)
    if not keepdims:
        r = r.reshape(tuple(s for i, s in enumerate(r.shape) if i not in axes))
    return np.asarray(r)


# A reduction too small to split is one ufunc.reduce call: what np.sum/np.max call, without
# their Python wrapper (~2-3 us, a large share of a small eager flush)
_add_reduce, _mul_reduce, _max_reduce, _min_reduce = np.add.reduce, np.multiply.reduce, np.maximum.reduce, np.minimum.reduce


def _small(x):
    return x.__class__ is np.ndarray and x.size < 2 * PAR_REDUCE


def sum_(x, *, axis, keepdims):
    if _small(x):
        return np.asarray(_add_reduce(x, axis=axis, dtype=_acc_dtype(x), keepdims=keepdims))
    return _parallel(np.sum, x, axis, keepdims, np.sum, dtype=_acc_dtype(x))


def prod(x, *, axis, keepdims):
    if _small(x):
        return np.asarray(_mul_reduce(x, axis=axis, dtype=_acc_dtype(x), keepdims=keepdims))
    return _parallel(np.prod, x, axis, keepdims, np.prod, dtype=_acc_dtype(x))


def max_(x, *, axis, keepdims):
    if _small(x):
        return np.asarray(_max_reduce(x, axis=axis, keepdims=keepdims))
    return _parallel(np.max, x, axis, keepdims, np.max)


def min_(x, *, axis, keepdims):
    if _small(x):
        return np.asarray(_min_reduce(x, axis=axis, keepdims=keepdims))
    return _parallel(np.min, x, axis, keepdims, np.min)


def any_(x, *, axis, keepdims):
    return _parallel(np.any, x, axis, keepdims, np.any)


def all_(x, *, axis, keepdims):
    return _parallel(np.all, x, axis, keepdims, np.all)


def argmax(x, *, axis, keepdims):
    return _parallel(np.argmax, x, axis, keepdims).astype(np.int64, copy=False)


def argmin(x, *, axis, keepdims):
    return _parallel(np.argmin, x, axis, keepdims).astype(np.int64, copy=False)


def _scan(fn, x, axis):
    if x.size < 2 * PAR_REDUCE or x.ndim < 2 or axis is None or threads.num_threads() < 2:
        return fn(x, axis=axis, dtype=_acc_dtype(x))
    ax = axis % x.ndim
    d = 0 if ax != 0 else 1             # split over another axis: each line scanned whole
    n = x.shape[d]
    out = np.empty(x.shape, dtype=fn(x[(slice(0, 1),) * x.ndim], axis=ax, dtype=_acc_dtype(x)).dtype)
    lead = (slice(None),) * d

    def work(a, b):
        sl = lead + (slice(a, b),)
        fn(x[sl], axis=ax, dtype=_acc_dtype(x), out=out[sl])

    threads.parallel_for(n, work, min_chunk=max(1, PAR_REDUCE * n // x.size))
    return out


def cumsum(x, *, axis):
    return _scan(np.cumsum, x, axis)


def cumprod(x, *, axis):
    return _scan(np.cumprod, x, axis)
