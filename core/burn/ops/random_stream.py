"""The reference random stream: what rand/randn/randint produce for a key.

Random ops carry a ``(seed, counter)`` key drawn at call time (see
``burn.ops.creation``). Every backend that generates on the host calls these
functions, so a seeded program draws the same numbers on flex, wgpu and cuda;
a backend with its own device generator must document that its stream differs.
Results are float32/float64/int64 numpy arrays; the backend casts them to its
native dtype.
"""
from __future__ import annotations

import numpy as np

__all__ = ["uniform", "normal", "integers"]


def _rng(key):
    return np.random.default_rng(list(key))


def _float(dtype):
    # float64 draws for float64 tensors; float32 draws for every narrower float
    return np.float64 if getattr(dtype, "name", dtype) == "float64" else np.float32


def uniform(*, shape, dtype, low, high, _key) -> np.ndarray:
    """Uniform values in ``[low, high)`` for key ``_key``.

    Example:
        >>> import burn
        >>> a = uniform(shape=(3,), dtype=burn.float32, low=0.0, high=1.0, _key=(1, 1))
        >>> b = uniform(shape=(3,), dtype=burn.float32, low=0.0, high=1.0, _key=(1, 1))
        >>> assert a.dtype == "float32" and (a == b).all() and ((0 <= a) & (a < 1)).all()
    """
    r = _rng(_key).random(shape, dtype=_float(dtype))
    if low != 0.0 or high != 1.0:
        r = r * (high - low) + low
    return r


def normal(*, shape, dtype, mean, std, _key) -> np.ndarray:
    """Normal values with ``mean`` and ``std`` for key ``_key``.

    Example:
        >>> import burn
        >>> r = normal(shape=(4000,), dtype=burn.float64, mean=2.0, std=1.0, _key=(0, 1))
        >>> assert r.dtype == "float64" and abs(r.mean() - 2.0) < 0.1
    """
    r = _rng(_key).standard_normal(shape, dtype=_float(dtype))
    if mean != 0.0 or std != 1.0:
        r = r * std + mean
    return r


def integers(*, shape, dtype, low, high, _key) -> np.ndarray:
    """Integers in ``[low, high)`` for key ``_key`` (int64).

    Example:
        >>> import burn
        >>> r = integers(shape=(100,), dtype=burn.int64, low=0, high=3, _key=(0, 1))
        >>> assert r.min() >= 0 and r.max() < 3
    """
    return _rng(_key).integers(low, high, size=shape)
