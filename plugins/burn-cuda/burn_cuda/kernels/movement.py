"""Movement ops on cuda: CuPy views (reshape, permute, broadcast, slices share memory), and
copies where a result needs its own memory (slicing gradients, padding, concatenation)."""
from __future__ import annotations

from .elementwise import _cp


def reshape(x, *, shape):
    return x.reshape(tuple(shape))


def permute(x, *, axes):
    return x.transpose(tuple(axes))


def broadcast_to(x, *, shape):
    return _cp().broadcast_to(x, tuple(shape))


def _slices(starts, stops, steps):
    # slice.indices() gives stop=-1 for a reversed slice reaching index 0 (see flex)
    return tuple(slice(a, None if b < 0 else b, c) for a, b, c in zip(starts, stops, steps))


def slice_(x, *, starts, stops, steps):
    return x[_slices(starts, stops, steps)]


def slice_grad(g, *, shape, starts, stops, steps):
    z = _cp().zeros(tuple(shape), dtype=g.dtype)
    z[_slices(starts, stops, steps)] = g
    return z


def pad(x, *, pad_width, value):
    return _cp().pad(x, [tuple(p) for p in pad_width], mode="constant", constant_values=value)


def concat(*xs, axis):
    return _cp().concatenate(xs, axis=axis)
