"""Error types of burn.

Every error a user can trigger is a :class:`BurnError`, raised at the call
that caused it (never at a later flush of the lazy graph), and its message
names the op, the operands (shape, dtype, device) and, where there is one,
the fix. The exception is an error that depends on values (an index out of
range, :class:`IndexOutOfRange`): it is found when the graph runs and raised
at the read of a tensor that depends on it, naming the user's line.
"""
from __future__ import annotations

import os
import sys

__all__ = [
    "require_same_dtype",
    "BurnError", "ShapeError", "DTypeError", "DeviceMismatch",
    "BackendUnavailable", "PluginError", "AutodiffError", "IndexOutOfRange", "ReadOnlyError", "CaptureError",
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


class ReadOnlyError(BurnError, ValueError):
    """An in-place update of a read-only view (one made by ``broadcast_to``, as numpy's);
    also a ``ValueError``, as numpy's "assignment destination is read-only".

    Example:
        >>> import burn
        >>> b = burn.broadcast_to(burn.zeros((3,)), (2, 3))
        >>> try:
        ...     b[0] = 1.0
        ... except burn.ReadOnlyError as e:
        ...     err = e
        >>> assert isinstance(err, ValueError) and "broadcast_to" in str(err)
    """


class IndexOutOfRange(ShapeError, IndexError):
    """An index held by a tensor lies outside its axis (a gather, scatter, ``take``, indexed
    assignment, ``embedding``, or a class target of ``cross_entropy``/``nll_loss``).

    Such an error depends on values, so it is found when the lazy graph runs; it is raised
    at the read of any tensor that depends on the bad op (``backward()`` of a loss built
    from it included), never at the read of an unrelated tensor, and it names the op, the
    bad index and the bound, and the user's line where the op was recorded. Also an
    ``IndexError`` (as numpy's and PyTorch's), and a :class:`ShapeError`, which backends
    raised for it before (as numpy's ``AxisError`` is both a ``ValueError`` and an ``IndexError``).

    Example:
        >>> import burn
        >>> y = burn.take(burn.zeros((3,)), burn.tensor([0, 5]))
        >>> other = burn.ones((2,)) + 1
        >>> assert other.tolist() == [2.0, 2.0]          # an unrelated read is unaffected
        >>> try:
        ...     y.tolist()
        ... except burn.IndexOutOfRange as e:
        ...     err = e
        >>> assert isinstance(err, IndexError) and "take" in str(err) and "5" in str(err)
    """


class FailedValue:
    """The value of a tensor whose computation raised a data-dependent error in a flush:
    reading it raises ``error`` (see :meth:`burn.bridge.Handle.value`); ops that use it fail too.

    Example:
        >>> from burn.errors import FailedValue, IndexOutOfRange
        >>> assert isinstance(FailedValue(IndexOutOfRange("x")).error, IndexError)
    """

    __slots__ = ("error",)

    def __init__(self, error: BaseException):
        self.error = error


def deferred_index_error(cause: BaseException, node) -> IndexOutOfRange:
    """The IndexOutOfRange for a kernel's IndexError at ``node`` (None for a fused group),
    naming the op the user called and the line where it was recorded (``node.site``).

    Example:
        >>> from burn.errors import deferred_index_error
        >>> e = deferred_index_error(IndexError("index 5 is out of bounds for axis 0 with size 3"), None)
        >>> assert "index 5" in str(e) and "size 3" in str(e)
    """
    site = getattr(node, "site", None) if node is not None else None
    op = node.prim.name if node is not None else "a fused kernel"
    msg = str(cause)
    if not msg.partition(": ")[1]:          # the kernel's message does not name the op
        msg = f"{op}: {msg}"
    if site is not None:
        api, filename, lineno = site
        msg += f" (in {api}, recorded at {filename}:{lineno})"
    err = IndexOutOfRange(msg)
    err.__cause__ = cause
    return err


class CaptureError(BurnError, RuntimeError):
    """A function cannot be captured as written (``burn.capture``): it reads a value inside
    the trace (``item``, ``numpy``, ``bool(t)``, an op whose output shape depends on values),
    returns a Python number, keeps a tensor computed inside it, or its signature changed
    past the cache bound. The message names the op and says why and what to do.

    Example:
        >>> import burn
        >>> try:
        ...     burn.capture.trace(lambda x: float(x.sum()), burn.ones((2,)))
        ... except burn.CaptureError as e:
        ...     err = e
        >>> assert "float(t)" in str(err) and "sum" in str(err)
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


def require_same_dtype(op: str, *operands) -> None:
    """Raise :class:`DTypeError` naming ``op`` and both operands unless every operand (a tensor
    or a :class:`burn.TensorMeta`) has the first one's dtype. For ``.meta`` rules of ops that
    take no mixed dtypes (kernels see one dtype, as core's own ops do).

    Example:
        >>> import burn
        >>> from burn.errors import require_same_dtype
        >>> a, b = burn.TensorMeta((2,), burn.float32), burn.TensorMeta((2,), burn.float64)
        >>> try:
        ...     require_same_dtype("doc::op", a, b)
        ... except burn.DTypeError as e:
        ...     assert "doc::op: operands have different dtypes" in str(e)
    """
    for m in operands[1:]:
        if m.dtype is not operands[0].dtype:
            raise DTypeError(f"{op}: operands have different dtypes (shape={tuple(operands[0].shape)} "
                             f"dtype={operands[0].dtype}, shape={tuple(m.shape)} dtype={m.dtype}); cast one "
                             f"with .astype(...)")


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


def record_site(out):
    """Note on the node computing ``out`` where the user recorded it, for a data-dependent
    error raised when the graph runs (:func:`deferred_index_error`). Returns ``out``.

    Only ops whose validity depends on values call it (it walks the stack: ~1 us).
    The op named is the burn function the user called (a module's class for ``module(x)``).

    Example:
        >>> import burn
        >>> from burn.errors import record_site
        >>> y = record_site(burn.ones((2,)) * 2)
        >>> assert y._h.node.site[0] == "record_site" and y._h.node.site[2] > 0
    """
    h = getattr(out, "_h", None)
    node = getattr(h, "node", None)
    if node is None:
        return out
    inner = sys._getframe(0)
    f = inner.f_back
    while f is not None and f.f_code.co_filename.startswith(_BURN_DIR):
        inner = f
        f = f.f_back
    if f is None:
        return out
    api = inner.f_code.co_name
    if api in ("__call__", "forward"):
        owner = inner.f_locals.get("self")
        api = type(owner).__name__ if owner is not None else api
    node.site = (api, f.f_code.co_filename, f.f_lineno)
    h.graph.checked += 1
    return out


def stale_input(n):
    """The error for a node whose input was lost in a failed flush."""
    return BurnError(f"'{n.prim.name}' reads a value whose computation failed in an earlier flush "
                     f"(a kernel raised); recompute that input")
