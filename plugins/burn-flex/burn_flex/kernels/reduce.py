"""Reductions and scans on flex: numpy's, integers and bool accumulating in int64 (numpy's
rule). Fused reduce groups run their element-wise prologue blocked and the reduction as one
numpy call (:mod:`burn_flex.fused`)."""
from __future__ import annotations

import numpy as np


def _acc_dtype(x):
    return np.int64 if x.dtype.kind in "biu" else None


def sum_(x, *, axis, keepdims):
    return np.asarray(np.sum(x, axis=axis, keepdims=keepdims, dtype=_acc_dtype(x)))


def prod(x, *, axis, keepdims):
    return np.asarray(np.prod(x, axis=axis, keepdims=keepdims, dtype=_acc_dtype(x)))


def max_(x, *, axis, keepdims):
    return np.asarray(np.max(x, axis=axis, keepdims=keepdims))


def min_(x, *, axis, keepdims):
    return np.asarray(np.min(x, axis=axis, keepdims=keepdims))


def any_(x, *, axis, keepdims):
    return np.asarray(np.any(x, axis=axis, keepdims=keepdims))


def all_(x, *, axis, keepdims):
    return np.asarray(np.all(x, axis=axis, keepdims=keepdims))


def argmax(x, *, axis, keepdims):
    return np.asarray(np.argmax(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)


def argmin(x, *, axis, keepdims):
    return np.asarray(np.argmin(x, axis=axis, keepdims=keepdims)).astype(np.int64, copy=False)


def cumsum(x, *, axis):
    return np.cumsum(x, axis=axis, dtype=_acc_dtype(x))


def cumprod(x, *, axis):
    return np.cumprod(x, axis=axis, dtype=_acc_dtype(x))


def argsort(x, *, axis):
    """Stable positions that sort ``x`` along ``axis`` (NaNs last).

    >>> assert argsort(np.array([2.0, np.nan, 1.0, 2.0]), axis=0).tolist() == [2, 0, 3, 1]
    """
    return np.argsort(x, axis=axis, kind="stable").astype(np.int64, copy=False)


def searchsorted(a, v, *, side):
    """Insertion positions of ``v`` in the sorted 1-D ``a``.

    >>> assert searchsorted(np.array([1, 3]), np.array([3, 0]), side="left").tolist() == [1, 0]
    """
    return np.asarray(np.searchsorted(a, v, side=side)).astype(np.int64, copy=False)
