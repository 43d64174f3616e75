"""Movement ops on flex: numpy views (reshape, permute, broadcast, slices), copies where a
result needs its own memory (slicing gradients, padding, concatenation)."""
from __future__ import annotations

import numpy as np


def reshape(x, *, shape):
    return np.reshape(x, shape)


def permute(x, *, axes):
    return np.transpose(x, axes)


def broadcast_to(x, *, shape):
    return np.broadcast_to(x, shape)


def _slices(starts, stops, steps):
    # slice.indices() gives stop=-1 for a reversed slice reaching index 0;
    # in numpy that would mean "the last element", so use None instead
    return tuple(slice(a, None if b < 0 else b, c) for a, b, c in zip(starts, stops, steps))


def slice_(x, *, starts, stops, steps):
    return x[_slices(starts, stops, steps)]


def slice_grad(g, *, shape, starts, stops, steps):
    z = np.zeros(shape, dtype=g.dtype)
    z[_slices(starts, stops, steps)] = g
    return z


def pad(x, *, pad_width, value):
    return np.pad(x, pad_width, constant_values=value)


def concat(*xs, axis):
    return np.concatenate(xs, axis=axis)
