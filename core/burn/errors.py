"""Error types of burn.

Every error a user can trigger is a :class:`BurnError`, raised at the call
that caused it (never at a later flush of the lazy graph), and its message
names the op, the operands (shape, dtype, device) and, where there is one,
the fix.
"""
from __future__ import annotations

import os
import sys

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
    """Operands' shapes do not fit the op (broadcasting, matmul, reshape...).

    Also a ``ValueError``, so code written for numpy keeps catching it.

    Example:
        >>> import burn
        >>> try:
        ...     burn.zeros((2, 3)) + burn.zeros((4,))
        ... except burn.ShapeError as e:
        ...     err = e
        >>> assert isinstance(err, ValueError) and "broadcast" in str(err)
    """


class DTypeError(BurnError, TypeError):
    """An operand's dtype is not accepted by the op or the backend.

    Also a ``TypeError``.

    Example:
        >>> import burn
        >>> x = burn.arange(3, device=burn.Device.flex().autodiff())
        >>> try:
        ...     x.require_grad()        # integers have no gradient
        ... except burn.DTypeError as e:
        ...     err = e
        >>> assert isinstance(err, TypeError) and "int64" in str(err)
    """


class DeviceMismatch(BurnError, ValueError):
    """Operands live on different devices, or mix autodiff and plain devices.

    Burn never moves data implicitly: use ``t.to_device(...)`` or ``.detach()``.

    Example:
        >>> import burn
        >>> a = burn.ones((2,))
        >>> b = burn.ones((2,), device=burn.Device.flex().autodiff())
        >>> try:
        ...     a + b
        ... except burn.DeviceMismatch as e:
        ...     err = e
        >>> assert "autodiff" in str(err)
    """


class BackendUnavailable(BurnError, RuntimeError):
    """A device's backend is not installed or cannot run on this machine.

    Raised when the device is first used, with the package to install.

    Example:
        >>> import burn
        >>> try:
        ...     burn.zeros((1,), device="nosuch:0")
        ... except burn.BackendUnavailable as e:
        ...     err = e
        >>> assert "nosuch" in str(err)
    """


class PluginError(BurnError, RuntimeError):
    """A plugin failed to load or registered something inconsistent.

    Example:
        >>> from burn import PluginError
        >>> from burn.dispatch import Registry
        >>> r = Registry()
        >>> r.register_backend("mine", object, plugin="a")
        >>> try:
        ...     r.register_backend("mine", object, plugin="b")
        ... except PluginError as e:
        ...     err = e
        >>> assert "'a'" in str(err) and "'b'" in str(err)
    """


class AutodiffError(BurnError, RuntimeError):
    """Misuse of autodiff: require_grad on a non-leaf, backward of a non-scalar...

    Example:
        >>> import burn
        >>> try:
        ...     burn.ones((2,)).require_grad()      # not an autodiff device
        ... except burn.AutodiffError as e:
        ...     err = e
        >>> assert "autodiff()" in str(err)
    """


class OutOfMemory(BurnError, MemoryError):
    """A device cannot hold a requested buffer; the message names the sizes, what is in use and
    reserved, and what to do. A ``MemoryError`` too, as CuPy's and PyTorch's out-of-memory errors are.

    Example:
        >>> from burn.errors import OutOfMemory
        >>> assert issubclass(OutOfMemory, MemoryError)
    """


def describe(t) -> str:
    """One operand as `shape=(2, 3) dtype=float32 device=flex:0` for messages."""
    shape = getattr(t, "shape", None)
    if shape is None:
        return f"scalar {t!r}"
    return f"shape={tuple(shape)} dtype={t.dtype} device={t.device}"


# Which distribution provides each first-party backend, for error messages.
KNOWN_BACKEND_PACKAGES = {
    "flex": "burn-flex",
    "wgpu": "burn-wgpu",
    "cuda": "burn-cuda[cuda12]",
}


def backend_unavailable(kind: str, reason: str | None = None) -> BackendUnavailable:
    """The error for a device whose backend cannot be used: why, or which package to install.

    Example:
        >>> from burn.errors import backend_unavailable
        >>> assert "pip install burn-wgpu" in str(backend_unavailable("wgpu"))
    """
    pkg = KNOWN_BACKEND_PACKAGES.get(kind)
    if reason:
        return BackendUnavailable(f"device kind '{kind}' cannot run here: {reason}")
    if pkg:
        return BackendUnavailable(
            f"device kind '{kind}' needs its backend package: pip install {pkg}")
    return BackendUnavailable(
        f"no installed plugin provides a backend named '{kind}'; install the package that "
        f"provides it (its entry point must be in group 'burn.plugins'); `burn info` lists what is installed")


# files under this directory are burn's own; the first frame outside it is the user's line
_BURN_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def user_frame(depth: int = 1):
    """The innermost caller frame outside the burn package (the user's line), or None.

    Costs one frame walk; used only where an error or warning must name the user's line.

    Example:
        >>> from burn.errors import user_frame
        >>> f = user_frame()
        >>> assert f is not None and "burn" not in f.f_code.co_filename.split("/")[-2:-1]
    """
    f = sys._getframe(depth)
    while f is not None and f.f_code.co_filename.startswith(_BURN_DIR):
        f = f.f_back
    return f


def user_stacklevel() -> int:
    """The ``stacklevel`` that makes ``warnings.warn``, called from burn code, point at the user's line.

    Example:
        >>> import warnings
        >>> from burn.errors import user_stacklevel
        >>> assert user_stacklevel() >= 1
    """
    f = sys._getframe(1)
    level = 1
    while f is not None and f.f_code.co_filename.startswith(_BURN_DIR):
        f = f.f_back
        level += 1
    return level
