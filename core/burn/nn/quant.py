"""4-bit NormalFloat (NF4) weights with double-quantized blockwise scales, as in QLoRA.

Storage of a weight ``W`` (any shape, flattened row-major, ``n`` elements):

- ``codes`` (uint8, ``ceil(n / block_size) * block_size / 2``): one 4-bit index
  into :data:`NF4_CODE` per element, two per byte, the first of a pair in the
  high nibble (bitsandbytes' order). The tail of the last block is padding
  (code of 0.0).
- per block of ``block_size`` (64) elements the absmax ``a_i``, itself
  quantized (double quantization, QLoRA §3): ``offset`` = mean of all ``a_i``
  (one float32), and per group of ``scale_block`` (256) blocks a float32 step
  ``s_j = max|a_i - offset| / 127`` with int8 ``scale_codes`` =
  ``round((a_i - offset) / s_j)``. So ``a_i' = scale_codes_i * s_j + offset``.
- the value of element ``k`` of block ``i`` is ``NF4_CODE[code_k] * a_i'``.

Codes are chosen against the exact absmax (as bitsandbytes does), so
``|w - deq(w)| <= a_i * max_gap / 2 + |a_i - a_i'|`` with ``max_gap`` the
largest distance between adjacent NF4 levels (0.3038, between -1 and
-0.6962) and ``|a_i - a_i'| <= s_j / 2`` (plus float32 rounding).
Memory: ``0.5 + 1 / block_size + 4 / (block_size * scale_block)`` bytes per
element (0.516 for 64/256) plus 4 bytes of offset per tensor.

Quantizing runs once, on the host (numpy), when a model is converted.
Dequantizing runs on the device inside two backend extensions,
``burn::nf4_dequantize`` and ``burn::nf4_matmul`` (``x @ deq(W)``, defined in
:mod:`burn.fused.linear` and re-exported here): their reference definitions are
burn ops, so every backend runs them; flex registers native kernels (``burn_flex.kernels.quant``). Only ``x`` of
``nf4_matmul`` is differentiable: the quantized weight is frozen.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..errors import BurnError, DTypeError, describe
from ..fused.linear import NF4_CODE, _MIDPOINTS, _check_block, _layout, nf4_dequantize, nf4_matmul  # noqa: F401
from ..ops.creation import tensor
from ..tensor import Tensor

__all__ = ["NF4_CODE", "NF4Tensor", "quantize_nf4", "nf4_dequantize", "nf4_matmul", "nf4_nbytes"]


def nf4_nbytes(n: int, block_size: int = 64, scale_block: int = 256) -> int:
    """Bytes of an ``n``-element NF4 tensor: codes, int8 scales, float32 steps and the offset.

    Example:
        >>> from burn.nn.quant import nf4_nbytes
        >>> assert nf4_nbytes(64 * 256) == 64 * 256 // 2 + 256 + 4 + 4
        >>> assert nf4_nbytes(1 << 20) / (1 << 20) < 0.52
    """
    nb, ns = _layout(n, block_size, scale_block)
    return nb * block_size // 2 + nb + 4 * ns + 4


def _quantize_host(w: np.ndarray, block_size: int, scale_block: int):
    """numpy arrays (codes, scale_codes, steps, offset) of float array ``w``."""
    flat = np.asarray(w, dtype=np.float32).reshape(-1)
    n = flat.size
    nb, ns = _layout(n, block_size, scale_block)
    blocks = np.zeros(nb * block_size, np.float32)
    blocks[:n] = flat
    blocks = blocks.reshape(nb, block_size)
    absmax = np.abs(blocks).max(axis=1)
    safe = np.where(absmax > 0, absmax, 1.0).astype(np.float32)
    normed = blocks / safe[:, None]
    # nearest level: levels are sorted, so the index is the number of midpoints below
    idx = np.searchsorted(_MIDPOINTS, normed.reshape(-1), side="left").astype(np.uint8)
    codes = (idx[0::2] << 4) | idx[1::2]
    offset = np.float32(absmax.mean()) if nb else np.float32(0)
    centered = np.zeros(ns * scale_block, np.float32)
    centered[:nb] = absmax - offset
    centered = centered.reshape(ns, scale_block)
    steps = (np.abs(centered).max(axis=1) / 127).astype(np.float32)
    q = np.rint(centered / np.where(steps > 0, steps, 1)[:, None])
    scale_codes = np.clip(q, -127, 127).astype(np.int8).reshape(-1)[:nb]
    return codes.astype(np.uint8), scale_codes, steps, np.asarray([offset], np.float32)


class NF4Tensor:
    """A weight stored as NF4 codes with double-quantized blockwise absmax scales.

    Build one with :func:`quantize_nf4`; :meth:`dequantize` gives the float32
    weight back on the device, :attr:`nbytes` the storage size.

    Example:
        >>> import burn
        >>> w = burn.randn((128, 64))
        >>> q = burn.nn.quant.quantize_nf4(w)
        >>> assert q.shape == (128, 64) and q.bytes_per_element < 0.52
        >>> err = (q.dequantize() - w).abs().max().item()
        >>> assert err <= w.abs().max().item() * 0.16
    """

    __slots__ = ("codes", "scale_codes", "steps", "offset", "shape", "block_size", "scale_block")

    def __init__(self, codes, scale_codes, steps, offset, shape, block_size=64, scale_block=256):
        self.codes, self.scale_codes, self.steps, self.offset = codes, scale_codes, steps, offset
        self.shape, self.block_size, self.scale_block = tuple(shape), block_size, scale_block

    @property
    def size(self) -> int:
        """The number of weight elements (not of stored codes).

        Example:
            >>> import burn
            >>> assert burn.nn.quant.quantize_nf4(burn.randn((128, 64))).size == 128 * 64
        """
        return math.prod(self.shape)

    @property
    def tensors(self) -> tuple:
        """The four storage tensors, in the order the extension ops take them.

        Example:
            >>> import burn
            >>> codes, scale_codes, steps, offset = burn.nn.quant.quantize_nf4(burn.randn((128, 64))).tensors
            >>> assert codes.dtype is burn.uint8 and scale_codes.dtype is burn.int8
        """
        return self.codes, self.scale_codes, self.steps, self.offset

    @property
    def attrs(self) -> dict:
        """The non-tensor arguments of the NF4 extension ops (shape and block sizes).

        Example:
            >>> import burn
            >>> q = burn.nn.quant.quantize_nf4(burn.randn((128, 64)))
            >>> assert q.attrs == {"shape": (128, 64), "block_size": 64, "scale_block": 256}
        """
        return {"shape": self.shape, "block_size": self.block_size, "scale_block": self.scale_block}

    @property
    def nbytes(self) -> int:
        """Bytes actually stored (codes + int8 scales + float32 steps + offset).

        Example:
            >>> import burn
            >>> q = burn.nn.quant.quantize_nf4(burn.randn((128, 64)))
            >>> assert q.nbytes == sum(t.size * t.dtype.itemsize for t in q.tensors) < 128 * 64
        """
        return sum(t.size * t.dtype.itemsize for t in self.tensors)

    @property
    def bytes_per_element(self) -> float:
        """Stored bytes per weight element: about 0.52 (float32 is 4).

        Example:
            >>> import burn
            >>> assert 0.5 < burn.nn.quant.quantize_nf4(burn.randn((128, 64))).bytes_per_element < 0.52
        """
        return self.nbytes / max(self.size, 1)

    def dequantize(self, dtype=None) -> Tensor:
        """The weight as a float tensor (float32 unless ``dtype``) on the storage device.

        Example:
            >>> import burn
            >>> q = burn.nn.quant.quantize_nf4(burn.full((2, 32), -3.0))
            >>> assert q.dequantize(burn.float64).tolist() == [[-3.0] * 32] * 2
        """
        w = nf4_dequantize(*self.tensors, **self.attrs)
        return w if dtype is None or dt.as_dtype(dtype) is w.dtype else w.astype(dtype)

    def to_device(self, device) -> "NF4Tensor":
        """The same storage on ``device`` (e.g. ``device.autodiff()``, to meet autodiff inputs).

        Example:
            >>> import burn
            >>> ad = burn.Device.flex().autodiff()
            >>> assert burn.nn.quant.quantize_nf4(burn.ones((4, 4))).to_device(ad).codes.device == ad
        """
        return NF4Tensor(*(t.detach().to_device(device) for t in self.tensors), **self.attrs)

    def __repr__(self):
        return (f"NF4Tensor(shape={self.shape}, block_size={self.block_size}, scale_block={self.scale_block}, "
                f"{self.nbytes} bytes)")


def quantize_nf4(w, *, block_size: int = 64, scale_block: int = 256) -> NF4Tensor:
    """Quantize a float tensor to NF4 (see the module docstring for the format).

    Runs on the host once; the storage tensors land on ``w``'s device (on an
    autodiff device too, where they are constants that get no gradient).

    Example:
        >>> import burn
        >>> q = burn.nn.quant.quantize_nf4(burn.tensor([[1.0, -1.0], [0.0, 0.5]]))
        >>> assert q.codes.dtype == burn.uint8 and q.codes.shape == (32,)
        >>> assert abs(q.dequantize()[1, 1].item() - 0.4407098) < 1e-6   # nearest NF4 level to 0.5
    """
    _check_block(block_size, scale_block)
    if not isinstance(w, Tensor):
        w = tensor(w, dtype=dt.float32)
    if not w.dtype.is_floating:
        raise DTypeError(f"quantize_nf4: expected a floating tensor, got {describe(w)}")
    host = w.detach().numpy()
    if not np.isfinite(host).all():
        raise BurnError(f"quantize_nf4: {describe(w)} holds NaN or infinite values, which NF4 cannot store")
    arrays = _quantize_host(host, block_size, scale_block)
    return NF4Tensor(*(tensor(a, device=w.device) for a in arrays), shape=w.shape, block_size=block_size,
                     scale_block=scale_block)
