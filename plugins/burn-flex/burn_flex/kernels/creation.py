"""Creation ops on flex: numpy's constructors; random numbers from core's reference stream
(:mod:`burn.ops.random_stream`), the numbers every backend draws."""
from __future__ import annotations

import numpy as np

from burn.ops import random_stream

from ..native import native


def full(*, shape, value, dtype):
    return np.full(shape, value, dtype=native(dtype))


def arange(*, start, stop, step, dtype):
    return np.arange(start, stop, step).astype(native(dtype), copy=False)


def linspace(*, start, stop, num, endpoint, dtype):
    return np.linspace(start, stop, num, endpoint=endpoint).astype(native(dtype), copy=False)


def eye(*, n, m, k, dtype):
    return np.eye(n, m, k, dtype=native(dtype))


def rand_uniform(**attrs):
    return random_stream.uniform(**attrs).astype(native(attrs["dtype"]), copy=False)


def rand_normal(**attrs):
    return random_stream.normal(**attrs).astype(native(attrs["dtype"]), copy=False)


def rand_int(**attrs):
    return random_stream.integers(**attrs).astype(native(attrs["dtype"]), copy=False)
