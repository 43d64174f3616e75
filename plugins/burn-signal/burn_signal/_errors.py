"""Errors of burn.signal."""
from __future__ import annotations

import burn

__all__ = ["SignalError"]


class SignalError(burn.BurnError, ValueError):
    """An argument burn.signal cannot use: an unknown ``norm``, ``mode`` or
    window name, ``noverlap >= nperseg``, a filter whose ``a[0]`` is zero.

    Raised at the call where the arguments show it, else when the value is
    computed. It is a ``burn.BurnError`` and also a ``ValueError``, as SciPy
    raises for the same arguments.

    Example:
        >>> import burn
        >>> try:
        ...     burn.signal.fft(burn.ones((4,)), norm="unit")
        ... except burn.BurnError as e:
        ...     assert isinstance(e, ValueError) and "signal::fft" in str(e)
    """
