"""flex kernels of burn's NF4 extensions (``burn::nf4_dequantize``, ``burn::nf4_matmul``).

The storage format is documented in :mod:`burn.nn.quant`. Both nibbles of a
byte are decoded with one lookup in a 256-entry table of level pairs, and the
weight exists only transiently inside ``nf4_matmul``.
"""
from __future__ import annotations

import math

import numpy as np

_PAIRS = None


def _pairs():
    global _PAIRS
    if _PAIRS is None:
        from burn.fused import NF4_CODE   # the level table of burn::nf4_* (burn.fused.linear)
        table = np.asarray(NF4_CODE, np.float32)
        b = np.arange(256)
        # the first element of a pair sits in the high nibble
        _PAIRS = np.stack([table[b >> 4], table[b & 15]], axis=1)
    return _PAIRS


def nf4_dequantize(codes, scale_codes, steps, offset, *, shape, block_size=64, scale_block=256):
    n = math.prod(shape)
    nb = scale_codes.shape[0]
    absmax = scale_codes.astype(np.float32)
    absmax *= np.repeat(steps, scale_block)[:nb]
    absmax += offset[0]
    w = _pairs()[codes].reshape(nb, block_size)
    w *= absmax[:, None]
    return w.reshape(-1)[:n].reshape(shape)


def nf4_matmul(x, codes, scale_codes, steps, offset, *, shape, block_size=64, scale_block=256):
    w = nf4_dequantize(codes, scale_codes, steps, offset, shape=shape, block_size=block_size,
                       scale_block=scale_block)
    y = np.matmul(x, w.astype(x.dtype, copy=False))
    return y if y.dtype == x.dtype else y.astype(x.dtype)   # bfloat16 matmul gives float32


def quant_kernels() -> dict:
    """Extension op name -> flex kernel, for registration."""
    return {"burn::nf4_dequantize": nf4_dequantize, "burn::nf4_matmul": nf4_matmul}
