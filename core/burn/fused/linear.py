"""Fused linear ops: ``burn::linear_relu`` (``relu(x @ W + b)``, one kernel with a bias
and relu epilogue) and the NF4 weight ops ``burn::nf4_dequantize`` and
``burn::nf4_matmul`` (``x @ deq(W)``; the storage format is described in
:mod:`burn.nn.quant`, which quantizes and wraps the storage in ``NF4Tensor``).
Their reference definitions are burn ops, so every backend runs them; backends
register kernels for these names.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..errors import BurnError, DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops import elementwise as E, reduction as R, movement as M, linear as L
from ..ops.creation import arange, tensor
from ..primitives import TensorMeta

__all__ = ["linear_relu", "NF4_CODE", "nf4_dequantize", "nf4_matmul"]


@backend_extension("burn::linear_relu", autocast="lower")
def linear_relu(x, weight, bias):
    """Fused ``relu(x @ weight + bias)`` (weight [d_in, d_out], bias [d_out]).

    A backend extension: backends register one fused kernel (flex: BLAS
    matmul with an in-place bias + relu epilogue); elsewhere this reference
    definition runs. Autodiff differentiates through the reference.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.linear_relu(burn.ones((2, 3)), -burn.ones((3, 4)), burn.ones((4,)))
        >>> assert y.tolist() == [[0.0] * 4] * 2
    """
    return E.relu(L.matmul(x, weight) + bias)


@linear_relu.backward
def _linear_relu_backward(ctx, g):
    # analytic: the output's sign is the relu mask, so nothing is recomputed
    x, weight, bias = ctx.inputs
    gz = E.where(ctx.out > 0.0, g, 0.0)
    gz2 = gz if gz.ndim == 2 else M.reshape(gz, (-1, gz.shape[-1]))
    x2 = x if x.ndim == 2 else M.reshape(x, (-1, x.shape[-1]))
    gx = L.matmul(gz, L._transpose2(weight)) if x.requires_grad else None
    gw = L.matmul(L._transpose2(x2), gz2) if weight.requires_grad else None
    gb = R.sum(gz2, axis=0) if bias.requires_grad else None
    return gx, gw, gb


@linear_relu.meta
def _linear_relu_meta(x, weight, bias):
    if x.ndim < 1 or weight.ndim != 2 or bias.shape != (weight.shape[1],) or x.shape[-1] != weight.shape[0]:
        raise ShapeError(f"linear_relu: expected x [..., d_in], weight [d_in, d_out], bias [d_out]; got "
                         f"{describe(x)}, {describe(weight)}, {describe(bias)}")
    if not (x.dtype is weight.dtype is bias.dtype) or not x.dtype.is_floating:
        raise DTypeError(f"linear_relu: x, weight and bias need one floating dtype; got "
                         f"{describe(x)}, {describe(weight)}, {describe(bias)}")
    return TensorMeta(tuple(x.shape[:-1]) + (weight.shape[1],), x.dtype)


# The 16 NF4 levels of QLoRA (Dettmers et al. 2023, appendix E) as bitsandbytes stores them:
# quantiles of N(0, 1) normalized to [-1, 1], with an exact 0 and asymmetric halves
# (8 positive levels, 7 negative).
NF4_CODE = (
    -1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
    -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
    0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
    0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
)


_TABLE = np.asarray(NF4_CODE, dtype=np.float32)
_MIDPOINTS = (_TABLE[1:] + _TABLE[:-1]) / 2


def _layout(n: int, block_size: int, scale_block: int) -> tuple[int, int]:
    """(number of blocks, number of scale groups) of an ``n``-element tensor."""
    nb = -(-n // block_size)
    return nb, -(-nb // scale_block)


def _check_block(block_size, scale_block):
    if not isinstance(block_size, int) or block_size < 2 or block_size % 2:
        raise BurnError(f"NF4: block_size must be an even int >= 2 (two codes per byte), got {block_size!r}")
    if not isinstance(scale_block, int) or scale_block < 1:
        raise BurnError(f"NF4: scale_block must be a positive int, got {scale_block!r}")


def _storage_meta(op, codes, scale_codes, steps, offset, shape, block_size, scale_block):
    _check_block(block_size, scale_block)
    if not (isinstance(shape, tuple) and all(isinstance(s, int) and s >= 0 for s in shape)):
        raise ShapeError(f"{op}: shape must be a tuple of ints, got {shape!r}")
    expect = [("codes", codes, dt.uint8), ("scale_codes", scale_codes, dt.int8),
              ("steps", steps, dt.float32), ("offset", offset, dt.float32)]
    bad = [f"{name}: {describe(t)} (needs {d.name})" for name, t, d in expect if t.dtype is not d]
    if bad:
        raise DTypeError(f"{op}: wrong storage dtypes: " + "; ".join(bad) + " (build them with quantize_nf4)")
    nb, ns = _layout(math.prod(shape), block_size, scale_block)
    want = {"codes": (nb * block_size // 2,), "scale_codes": (nb,), "steps": (ns,), "offset": (1,)}
    got = {"codes": codes.shape, "scale_codes": scale_codes.shape, "steps": steps.shape, "offset": offset.shape}
    bad = [f"{k} {tuple(got[k])} (expected {want[k]})" for k in want if tuple(got[k]) != want[k]]
    if bad:
        raise ShapeError(f"{op}: storage does not match shape={shape}, block_size={block_size}, "
                         f"scale_block={scale_block}: " + "; ".join(bad))


def _dequantize_ref(codes, scale_codes, steps, offset, shape, block_size, scale_block):
    dev = codes.device
    c = codes.astype(dt.int32)   # int32: what GPU backends index with natively
    idx = M.reshape(M.stack([E.floor_divide(c, 16), E.remainder(c, 16)], axis=1), (-1,))
    levels = M.take(tensor(_TABLE, device=dev), idx, axis=0)
    nb = scale_codes.shape[0]
    group = E.floor_divide(arange(nb, device=dev), scale_block)
    absmax = scale_codes.astype(dt.float32) * M.take(steps, group, axis=0) + offset
    w = M.reshape(levels, (nb, block_size)) * M.reshape(absmax, (nb, 1))
    n = math.prod(shape)
    return M.reshape(M.reshape(w, (-1,))[:n], shape)


@backend_extension("burn::nf4_dequantize")
def nf4_dequantize(codes, scale_codes, steps, offset, *, shape, block_size=64, scale_block=256):
    """The float32 weight of NF4 storage (see :mod:`burn.nn.quant`); a backend extension.

    Example:
        >>> import burn
        >>> from burn.nn.quant import quantize_nf4, nf4_dequantize
        >>> q = quantize_nf4(burn.ones((4, 16)))
        >>> assert nf4_dequantize(*q.tensors, **q.attrs).tolist() == [[1.0] * 16] * 4
    """
    return _dequantize_ref(codes, scale_codes, steps, offset, shape, block_size, scale_block)


@nf4_dequantize.meta
def _nf4_dequantize_meta(codes, scale_codes, steps, offset, *, shape, block_size=64, scale_block=256):
    _storage_meta("burn::nf4_dequantize", codes, scale_codes, steps, offset, shape, block_size, scale_block)
    return TensorMeta(shape, dt.float32)


@backend_extension("burn::nf4_matmul")
def nf4_matmul(x, codes, scale_codes, steps, offset, *, shape, block_size=64, scale_block=256):
    """``x @ W`` with ``W`` [d_in, d_out] stored as NF4 (see :mod:`burn.nn.quant`).

    A backend extension: flex unpacks, dequantizes and multiplies in one
    kernel; elsewhere this reference definition runs. The gradient flows to
    ``x`` only (``g @ W.T``): the weight is a frozen constant.

    Example:
        >>> import burn
        >>> from burn.nn.quant import quantize_nf4, nf4_matmul
        >>> q = quantize_nf4(burn.randn((16, 8)))
        >>> x = burn.randn((3, 16))
        >>> y = nf4_matmul(x, *q.tensors, **q.attrs)
        >>> assert (y - x @ q.dequantize()).abs().max().item() < 1e-4
    """
    w = _dequantize_ref(codes, scale_codes, steps, offset, shape, block_size, scale_block)
    return L.matmul(x, w.astype(x.dtype))


@nf4_matmul.meta
def _nf4_matmul_meta(x, codes, scale_codes, steps, offset, *, shape, block_size=64, scale_block=256):
    _storage_meta("burn::nf4_matmul", codes, scale_codes, steps, offset, shape, block_size, scale_block)
    if len(shape) != 2:
        raise ShapeError(f"burn::nf4_matmul: the weight must be 2-D [d_in, d_out], got shape={shape}")
    if not x.dtype.is_floating:
        raise DTypeError(f"burn::nf4_matmul: x must be floating, got {describe(x)}")
    if x.ndim < 1 or x.shape[-1] != shape[0]:
        raise ShapeError(f"burn::nf4_matmul: x {describe(x)} does not fit the weight [d_in={shape[0]}, "
                         f"d_out={shape[1]}]: the last axis of x must be d_in")
    return TensorMeta(tuple(x.shape[:-1]) + (shape[1],), x.dtype)


@nf4_matmul.backward
def _nf4_matmul_backward(ctx, grad):
    x, codes, scale_codes, steps, offset = ctx.inputs
    w = nf4_dequantize(codes, scale_codes, steps, offset, **ctx.kwargs)
    return L.matmul(grad, M.matrix_transpose(w.astype(grad.dtype))), None, None, None, None
