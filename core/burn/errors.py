"""Error types of burn.

Every error a user can trigger is a :class:`BurnError`, raised at the call
that caused it (never at a later flush of the lazy graph), and its message
names the op, the operands (shape, dtype, device) and, where there is one,
the fix.
"""
from __future__ import annotations

__all__ = [
    "BurnError", "ShapeError", "DTypeError", "DeviceMismatch",
    "BackendUnavailable", "PluginError", "AutodiffError",
]


class BurnError(Exception):
    """Base class of every error burn raises on purpose.

    Example:
        >>> import burn
        >>> try:
        ...     burn.zeros((2, 3)) + burn.zeros((4,))
        ... except burn.BurnError as e:
        ...     assert "add" in str(e)
    """


class ShapeError(BurnError, ValueError):
    """Operands' shapes do not fit the op (broadcasting, matmul, reshape...)."""


class DTypeError(BurnError, TypeError):
    """An operand's dtype is not accepted by the op or the backend."""


class DeviceMismatch(BurnError, ValueError):
    """Operands live on different devices, or mix autodiff and plain devices."""


class BackendUnavailable(BurnError, RuntimeError):
    """A device's backend is not installed or cannot run on this machine."""


class PluginError(BurnError, RuntimeError):
    """A plugin failed to load or registered something inconsistent."""


class AutodiffError(BurnError, RuntimeError):
    """Misuse of autodiff: require_grad on a non-leaf, backward of a non-scalar..."""


def describe(t) -> str:
    """One operand as `shape=(2, 3) dtype=float32 device=flex:0` for messages."""
    shape = getattr(t, "shape", None)
    if shape is None:
        return f"scalar {t!r}"
    return f"shape={tuple(shape)} dtype={t.dtype} device={t.device}"
