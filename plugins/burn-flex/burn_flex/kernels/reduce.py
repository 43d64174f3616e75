"""Reductions and scans on flex: numpy's, signed integers and bool accumulating in int64,
unsigned integers in uint64 (numpy's rule and the standard's). Fused reduce groups run their element-wise prologue blocked and the reduction as one
numpy call (:mod:`burn_flex.fused`)."""
from __future__ import annotations

import numpy as np


def _acc_dtype(x):
    return np.uint64 if x.dtype.kind == "u" else np.int64 if x.dtype.kind in "bi" else None


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
