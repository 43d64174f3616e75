"""The index struct of a generated element-wise kernel, computed without a device.

A backend decides each input's mode (0 contiguous, 1 broadcast scalar, 2 strided)
and its element strides; :func:`index_words` merges the dimensions every
strided input walks contiguously and lays the words out as the kernels read them
(see :func:`burn.codegen.param_words`).
"""
from __future__ import annotations

import numpy as np

from ..errors import BurnError
from .elementwise import MAX_DIMS, param_words


def merge_dims(dims, strides):
    """Merge neighbouring dims that every strided input walks contiguously; drop size-1 dims.

    ``strides`` holds one stride list per input, None for inputs needing none. Returns
    ``(merged dims, merged strides)`` in the same layout.

    >>> assert merge_dims([2, 1, 3], [[3, 0, 1], None]) == ([6], [[1], None])
    """
    gen = [s for s in strides if s is not None]
    mdims, mstr = [], [[] for _ in gen]
    for d in (d for d in range(len(dims)) if dims[d] != 1):
        if mdims and all(st[d] * dims[d] == ms[-1] for st, ms in zip(gen, mstr)):
            mdims[-1] *= dims[d]
            for st, ms in zip(gen, mstr):
                ms[-1] = st[d]
        else:
            mdims.append(dims[d])
            for st, ms in zip(gen, mstr):
                ms.append(st[d])
    it = iter(mstr)
    return mdims, [next(it) if s is not None else None for s in strides]


def index_words(backend, shape, n, modes, strides, offsets=None) -> np.ndarray:
    """``[n, nd, dims..., per input (offset, mode, strides...)]`` as int32 words.

    ``modes`` / ``strides`` per input (mode 2 needs strides); without a strided input
    nd is 0 (no index arithmetic). ``backend`` names the backend in the error raised when
    the merged shape has more than ``MAX_DIMS`` dims.

    >>> w = index_words("x", (2, 3), 6, [0, 2], [None, [3, 1]], [0, 5])
    >>> assert list(w[:3]) == [6, 1, 6] and w[2 + MAX_DIMS + 2 + MAX_DIMS] == 5
    """
    dims = list(shape)
    if 2 in modes:
        dims, strides = merge_dims(dims, strides)
        if len(dims) > MAX_DIMS:
            raise BurnError(f"{backend}: an element-wise kernel over shape {tuple(shape)} with strided inputs "
                            f"needs {len(dims)} dimensions after merging; at most {MAX_DIMS} are supported")
    else:
        dims = []
    v = np.zeros(param_words(len(modes)), np.int32)
    v[0] = n
    v[1] = len(dims)
    v[2:2 + len(dims)] = dims
    for k, (m, st) in enumerate(zip(modes, strides)):
        b = 2 + MAX_DIMS + k * (2 + MAX_DIMS)
        if offsets is not None:
            v[b] = offsets[k]
        v[b + 1] = m
        if st is not None:
            v[b + 2:b + 2 + len(st)] = st
    return v
