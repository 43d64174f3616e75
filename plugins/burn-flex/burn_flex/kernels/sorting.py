"""numpy kernels of the sorting primitives: a stable ``argsort`` (NaNs last) and ``searchsorted``."""
from __future__ import annotations

import numpy as np


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
