"""Parameter initializers (Burn/PyTorch conventions), drawn from the device's seeded stream."""
from __future__ import annotations

import math

from ..ops.creation import rand, randn, zeros

__all__ = ["kaiming_uniform", "kaiming_normal", "xavier_uniform", "xavier_normal", "uniform", "zeros"]


def uniform(shape, bound: float, *, device=None, dtype=None):
    """Uniform values in ``[-bound, bound)``.

    Example:
        >>> import burn
        >>> w = burn.nn.init.uniform((100,), 0.1)
        >>> assert w.abs().max().item() <= 0.1
    """
    return rand(shape, low=-bound, high=bound, device=device, dtype=dtype)


def kaiming_uniform(shape, fan_in: int, *, gain: float = math.sqrt(2.0), device=None, dtype=None):
    """He-uniform: bound ``gain * sqrt(3 / fan_in)``.

    Example:
        >>> import burn
        >>> assert burn.nn.init.kaiming_uniform((4, 3), fan_in=4).shape == (4, 3)
    """
    return uniform(shape, gain * math.sqrt(3.0 / fan_in), device=device, dtype=dtype)


def kaiming_normal(shape, fan_in: int, *, gain: float = math.sqrt(2.0), device=None, dtype=None):
    """He-normal: std ``gain / sqrt(fan_in)``.

    Example:
        >>> import burn
        >>> assert burn.nn.init.kaiming_normal((4, 3), fan_in=4).shape == (4, 3)
    """
    return randn(shape, std=gain / math.sqrt(fan_in), device=device, dtype=dtype)


def xavier_uniform(shape, fan_in: int, fan_out: int, *, gain: float = 1.0, device=None, dtype=None):
    """Glorot-uniform: bound ``gain * sqrt(6 / (fan_in + fan_out))``.

    Example:
        >>> import burn
        >>> assert burn.nn.init.xavier_uniform((4, 3), 4, 3).shape == (4, 3)
    """
    return uniform(shape, gain * math.sqrt(6.0 / (fan_in + fan_out)), device=device, dtype=dtype)


def xavier_normal(shape, fan_in: int, fan_out: int, *, gain: float = 1.0, device=None, dtype=None):
    """Glorot-normal: std ``gain * sqrt(2 / (fan_in + fan_out))``.

    Example:
        >>> import burn
        >>> assert burn.nn.init.xavier_normal((4, 3), 4, 3).shape == (4, 3)
    """
    return randn(shape, std=gain * math.sqrt(2.0 / (fan_in + fan_out)), device=device, dtype=dtype)
