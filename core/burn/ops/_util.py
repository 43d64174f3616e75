"""Shared helpers of the op modules: broadcasting, axes, scalar operands."""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import BurnError, ShapeError, describe
from ..primitives import TensorMeta


def broadcast_shapes(op, *tensors):
    """numpy broadcasting of the operands' shapes, or a ShapeError naming them."""
    shapes = [t.shape for t in tensors]
    first = shapes[0]
    if all(s == first for s in shapes):
        return first
    nd = max(len(s) for s in shapes)
    out = []
    for i in range(nd):
        d = 1
        for s in shapes:
            k = len(s) - nd + i
            if k < 0:
                continue
            v = s[k]
            if v != 1:
                if d != 1 and d != v:
                    ops = ", ".join(describe(t) for t in tensors)
                    raise ShapeError(f"{op}: shapes cannot be broadcast together ({ops}); "
                                     f"dimension {i - nd} is {d} in one and {v} in another")
                d = v
        out.append(d)
    return tuple(out)


def normalize_axis(op, axis, ndim):
    if axis < -ndim or axis >= max(ndim, 1) and not (ndim == 0 and axis in (0, -1)):
        raise ShapeError(f"{op}: axis {axis} is out of range for a tensor with {ndim} dimensions")
    return axis % ndim if ndim else 0


def normalize_axes(op, axis, ndim):
    """axis=None|int|tuple -> sorted tuple of non-negative axes."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (int(axis),)
    out = tuple(sorted(normalize_axis(op, int(a), ndim) for a in axis))
    if len(set(out)) != len(out):
        raise ShapeError(f"{op}: repeated axis in {axis}")
    return out


def reduced_shape(shape, axes, keepdims):
    if keepdims:
        return tuple(1 if i in axes else s for i, s in enumerate(shape))
    return tuple(s for i, s in enumerate(shape) if i not in axes)


def scalar_dtype(value, like):
    """The dtype a Python scalar takes beside a tensor of dtype ``like``."""
    if isinstance(value, (bool, np.bool_)):
        return like
    if isinstance(value, (int, np.integer)):
        return like if not like.is_bool else dt.default_int
    if isinstance(value, (float, np.floating)):
        return like if like.is_inexact else dt.default_float
    if isinstance(value, (complex, np.complexfloating)):
        return like if like.is_complex else dt.complex_of(like if like.is_floating else dt.default_float)
    raise BurnError(f"unsupported scalar operand {value!r} of type {type(value).__name__}")


def meta(shape, dtype):
    return TensorMeta(tuple(shape), dtype)
