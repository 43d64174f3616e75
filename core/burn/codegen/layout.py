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


def broadcast_strides(xshape, xstrides, shape) -> list:
    """The element strides of a view (``xshape``, ``xstrides``) read as if broadcast to
    ``shape``: 0 for the leading dims it lacks and where it has size 1 and ``shape`` does not.

    >>> assert broadcast_strides((3, 1), (1, 1), (2, 3, 4)) == [0, 1, 0]
    """
    lead = len(shape) - len(xshape)
    st = [0] * lead
    for s, xs, o in zip(xshape, xstrides, shape[lead:]):
        st.append(0 if (s == 1 and o != 1) else xs)
    return st


def view_modes(shape, views, strided=()):
    """``(modes, strides)`` for :func:`index_words`: how a generated kernel reads each view.

    ``views`` holds one ``(shape, strides, contiguous)`` per input (element strides); a view
    of one element is a broadcast scalar (mode 1), one of ``shape`` in C order is contiguous
    (mode 0), any other reads through its broadcast strides (mode 2), as do those at the
    positions in ``strided`` (kernels relying on zero strides).

    >>> m, s = view_modes((2, 3), [((2, 3), (3, 1), True), ((1,), (1,), True), ((3,), (1,), True)])
    >>> assert m == [0, 1, 2] and s == [None, None, [0, 1]]
    """
    shape = tuple(shape)
    modes, strides = [], []
    for q, (vshape, vstrides, contiguous) in enumerate(views):
        if q not in strided:
            if all(d == 1 for d in vshape):
                modes.append(1)
                strides.append(None)
                continue
            if tuple(vshape) == shape and contiguous:
                modes.append(0)
                strides.append(None)
                continue
        modes.append(2)
        strides.append(broadcast_strides(vshape, vstrides, shape))
    return modes, strides


def layout_pattern(shape, views):
    """None if some view needs index arithmetic, else the bit pattern of broadcast scalars
    (the ``_c<pattern>`` kernel variants of :func:`burn.codegen.render_group`).

    ``views`` holds one ``(shape, contiguous)`` per input.

    >>> assert layout_pattern((2, 3), [((2, 3), True), ((), True)]) == 2
    >>> assert layout_pattern((2, 3), [((3,), True)]) is None
    """
    shape = tuple(shape)
    pat = 0
    for k, (vshape, contiguous) in enumerate(views):
        if all(d == 1 for d in vshape):
            pat |= 1 << k
        elif tuple(vshape) != shape or not contiguous:
            return None
    return pat
