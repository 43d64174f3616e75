"""Sorting on wgpu: ``argsort`` (a stable bottom-up merge sort of contiguous rows: blocks of
:data:`SORT_BLOCK` keys sorted in local memory by one launch, then one launch per doubling of
the run width; each element places itself by a binary search in its partner run) and ``searchsorted`` (one binary search per value); OpenCL C in ``cl/sorting.cl``.
"""
from __future__ import annotations

import numpy as np
from burn.codegen import OPENCL
from burn.codegen.sources import with_defines

from ..native import empty
from .movement import contiguous, permute
from .source import cl_source, register
from .source import library_kernel as _lib


def _library(dtype, fp64):
    return with_defines(cl_source("sorting.cl"), dict(T=OPENCL.ctype(dtype), IS_FLOAT=dtype.startswith("float")))


register("sorting", ("sort_",), _library)

#: the keys one work-group sorts in local memory (``SORT_BLOCK`` in cl/sorting.cl)
SORT_BLOCK = 256


def argsort(x, *, axis):
    """Stable positions (int64) that sort ``x`` along ``axis``, NaNs last.

    >>> import numpy as np
    >>> from burn_wgpu import runtime
    >>> from burn_wgpu.kernels.movement import download, upload
    >>> dc = runtime.context(0)
    >>> r = argsort(upload(dc, np.array([[3.0, 1.0, np.nan, 1.0]], np.float32), "float32"), axis=1)
    >>> assert download(r).tolist() == [[1, 3, 0, 2]]
    """
    dc = x.dc
    order = [d for d in range(x.ndim) if d != axis] + [axis]
    src = contiguous(permute(x, axes=tuple(order)))
    L = x.shape[axis]
    M = x.size // L if L else 0
    keys = [empty(dc, src.shape, x.dtype) for _ in range(2)]
    idx = [empty(dc, src.shape, "int64") for _ in range(2)]
    if M:
        kin, koff, w, p = src.buf, src.offset, 1, 0
        if L > SORT_BLOCK // 4:
            # runs of SORT_BLOCK sorted in local memory by one launch (shorter rows would leave
            # most of each work-group idle: they take the global passes from width 1)
            dc.launch(_lib(dc, x.dtype, "sort_block"), M * -(-L // SORT_BLOCK) * SORT_BLOCK,
                      [np.int32(M), np.int32(L), keys[0].buf, idx[0].buf, kin, np.int32(koff)], local=SORT_BLOCK)
            kin, koff, w, p = keys[0].buf, 0, SORT_BLOCK, 1
        k = _lib(dc, x.dtype, "sort_merge")
        while w < L or (w == 1 and p == 0):      # a row of one element still gets its position 0
            dc.launch(k, M * L, [np.int32(M), np.int32(L), np.int32(w), np.int32(w == 1), keys[p].buf, idx[p].buf,
                                 kin, np.int32(koff), idx[1 - p].buf])
            kin, koff, w, p = keys[p].buf, 0, w * 2, 1 - p
        out = idx[1 - p]
    else:
        out = idx[0]
    return permute(out, axes=tuple(int(i) for i in np.argsort(order)))


def searchsorted(a, v, *, side):
    """Insertion positions (int64) of ``v``'s values in the sorted 1-D ``a`` (NaNs sort last).

    >>> import numpy as np
    >>> from burn_wgpu import runtime
    >>> from burn_wgpu.kernels.movement import download, upload
    >>> dc = runtime.context(0)
    >>> a, v = upload(dc, np.array([1, 3, 3]), "int32"), upload(dc, np.array([3, 4]), "int32")
    >>> assert download(searchsorted(a, v, side="right")).tolist() == [3, 3]
    """
    dc = a.dc
    a, v = contiguous(a), contiguous(v)
    out = empty(dc, v.shape, "int64")
    dc.launch(_lib(dc, a.dtype, "sort_search"), v.size,
              [np.int32(v.size), np.int32(a.size), np.int32(side == "right"), out.buf, a.buf, np.int32(a.offset),
               v.buf, np.int32(v.offset)])
    return out
