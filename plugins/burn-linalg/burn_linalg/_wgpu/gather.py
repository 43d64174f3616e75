"""wgpu kernel of burn.linalg's diagonal (``kernels/gather.cl``): a strided gather straight from
the input's strides, copying elements bit for bit, so one program per element size serves
every dtype."""
from __future__ import annotations

import functools

import numpy as np
from burn_wgpu import api as wgpu

from .common import cl_text, fallback, launch

# the unsigned OpenCL type of each element size
_BITS = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong", 16: "ulong2"}


@functools.lru_cache(maxsize=None)
def _program(dc, element):
    # one lookup per (device, element type), not the api's per-launch one by source text
    return wgpu.program(cl_text("gather.cl"), defines={"E": element}, device=dc)


def _batch_stride(x):
    """One stride walking ``x``'s batch dims in order, or None when they do not collapse."""
    dims = [(n, st) for n, st in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    for (_, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * n1:
            return None
    return dims[-1][1] if dims else 0


def diagonal(x, *, offset=0):
    """A gather straight from ``x``'s strides (transposed and sliced views need no copy).

    >>> import burn, burn_linalg
    >>> x = burn.tensor([[1, 2, 3], [4, 5, 6]], dtype=burn.int32, device=burn.Device.wgpu())
    >>> burn_linalg.diagonal(x.mT, offset=-1).numpy().tolist()
    [2, 6]
    """
    if not wgpu.is_native(x) or wgpu.numpy_dtype(x.dtype).itemsize not in _BITS:
        return fallback("diagonal")(x, offset=offset)
    dc = wgpu.device_of(x)
    m, n = x.shape[-2:]
    r0, c0 = max(0, -offset), max(0, offset)
    K = max(0, min(m - r0, n - c0))
    out = wgpu.empty(tuple(x.shape[:-2]) + (K,), x.dtype, dc)
    if out.size == 0:
        return out
    sb = _batch_stride(x)
    if sb is None:
        x = wgpu.contiguous(x)
        sb = m * n
    sr, sc = x.strides[-2:]
    launch(dc, _program(dc, _BITS[wgpu.numpy_dtype(x.dtype).itemsize]).diag, out.size, (np.int64(out.size), K, np.int64(sb), np.int64(sr), np.int64(sc),
                                     np.int64(x.offset + r0 * sr + c0 * sc), wgpu.buffer(x), out))
    return out
