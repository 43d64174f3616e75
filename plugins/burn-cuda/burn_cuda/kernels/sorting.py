"""cuda kernels of the sorting primitives through CuPy: ``argsort`` (thrust's stable sort, NaNs
last) and ``searchsorted``."""
from __future__ import annotations

import numpy as np

from .elementwise import _cp
from .reduce import _wide


def _orderable(x):
    # CuPy's thrust sort takes numeric types; bool orders as uint8 and bfloat16 as float32 (both exact)
    return x.view(np.uint8) if x.dtype == np.bool_ else _wide(x)


def argsort(x, *, axis):
    # CuPy's argsort is always stable (thrust's stable sort), NaNs last as numpy's
    return _cp().argsort(_orderable(x), axis=axis).astype(np.int64, copy=False)


def searchsorted(a, v, *, side):
    return _cp().searchsorted(_orderable(a), _orderable(v), side=side).astype(np.int64, copy=False)
