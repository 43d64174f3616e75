"""cuda kernels of the sorting primitives through CuPy: ``argsort`` (thrust's stable sort, NaNs
last) and ``searchsorted``."""
from __future__ import annotations

import numpy as np

from .elementwise import _cp
from .reduce import _wide


def _orderable(x):
    """``x`` in a dtype CuPy's thrust sort takes: bool as uint8, bfloat16 as float32 (both keep the order).

    >>> assert _orderable(np.array([True, False])).dtype == np.uint8
    """
    return x.view(np.uint8) if x.dtype == np.bool_ else _wide(x)


def argsort(x, *, axis):
    """Stable positions (int64) that sort ``x`` along ``axis``: CuPy's argsort, always thrust's
    stable sort, NaNs last as numpy's.

    >>> from burn_cuda.kernels import all_kernels
    >>> assert all_kernels()["argsort"].__name__ == "cuda_argsort"
    """
    return _cp().argsort(_orderable(x), axis=axis).astype(np.int64, copy=False)


def searchsorted(a, v, *, side):
    """Insertion positions (int64) of ``v`` in the sorted 1-D ``a``: CuPy's searchsorted (NaNs last).

    >>> from burn_cuda.kernels import all_kernels
    >>> assert all_kernels()["searchsorted"].__name__ == "cuda_searchsorted"
    """
    return _cp().searchsorted(_orderable(a), _orderable(v), side=side).astype(np.int64, copy=False)
