"""Creation ops on cuda: arange / linspace / eye compute numpy's formulas on the device;
random numbers come from core's reference stream (:mod:`burn.ops.random_stream`, drawn on
the host and uploaded), so a seeded program draws the same values on every backend."""
from __future__ import annotations

import numpy as np

from ..native import numpy_dtype
from .elementwise import _cp, _name, on_device


def _upload(arr):
    return _cp().asarray(np.ascontiguousarray(arr))


def _all_int(*vs):
    return all(isinstance(v, (int, np.integer)) for v in vs)


def arange(*, start, stop, step, dtype):
    """numpy's arange (the values flex gives): integers exactly; floats as numpy fills them, in float64
    ``start + i * ((start + step) - start)`` (numpy's fill extends its first two values)."""
    cp = _cp()
    nd = numpy_dtype(_name(dtype))
    if _all_int(start, stop, step):
        return cp.arange(int(start), int(stop), int(step), dtype=np.int64).astype(nd, copy=False)
    start, stop, step = float(start), float(stop), float(step)
    if step == 0:
        raise ZeroDivisionError("arange: step must not be zero")
    q = (stop - start) / step
    n = max(int(np.ceil(q)), 0)
    if q == 0 and stop != start:       # numpy: an underflowed quotient still holds one value
        n = 0 if np.signbit(q) else 1
    r = cp.arange(n, dtype=np.float64) * np.float64((start + step) - start) + np.float64(start)
    return r.astype(nd, copy=False)


def linspace(*, start, stop, num, endpoint, dtype):
    """numpy's linspace (the values flex gives): float64 ``i * step + start`` (``i / div * delta`` when
    the step underflows to zero), the last value ``stop`` exactly when ``endpoint``."""
    cp = _cp()
    nd = numpy_dtype(_name(dtype))
    num = int(num)
    div = (num - 1) if endpoint else num
    start, stop = np.float64(start), np.float64(stop)
    delta = stop - start
    y = cp.arange(num, dtype=np.float64)
    if div > 0:
        step = delta / div
        y = y / div * delta if step == 0 else y * step
    else:
        y = y * delta
    y += start
    if endpoint and num > 1:
        y[-1] = stop
    return y.astype(nd, copy=False)


def eye(*, n, m, k, dtype):
    return _cp().eye(n, m, k, dtype=numpy_dtype(_name(dtype)))


def _random(name):
    """A random op: core's reference stream on the host (the same numbers as flex and wgpu
    for a seed), uploaded in the tensor's dtype."""
    def k(**attrs):
        from burn.ops import random_stream
        arr = getattr(random_stream, name)(**attrs)
        return _upload(arr.astype(numpy_dtype(_name(attrs["dtype"])), copy=False))
    k.__name__ = name
    return on_device(k)
