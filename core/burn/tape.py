"""The autodiff tape: grad mode and the records ops leave for the reverse pass.

The layer below :mod:`burn.tensor`: recording an op (``burn.tensor.apply``)
reads the grad mode and creates a :class:`GradNode`; the reverse pass that
consumes them (:mod:`burn.autodiff`) sits above the ops, because seeding and
accumulating gradients are tensor ops themselves.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager

__all__ = ["no_grad", "enable_grad", "is_grad_enabled", "GradNode", "autocast_dtype", "autocast_mode"]

_state = threading.local()

# The in-place clock: ``Tensor.assign_`` (and so ``+=``, ``x[k] = v``, optimizer steps)
# ticks it and stamps the tensor with the new time (``_mutated``); a GradNode remembers
# the time it was recorded. An input stamped later than its node was changed after the
# op saved it (PyTorch's version counter, one global int instead of one per tensor, so
# recording an op costs one attribute store).
_clock = [0]


def is_grad_enabled() -> bool:
    """False inside ``with burn.no_grad():``.

    Use it in code that should skip work only needed for gradients.

    Example:
        >>> import burn
        >>> with burn.no_grad():
        ...     inside = burn.is_grad_enabled()
        >>> assert burn.is_grad_enabled() and not inside
    """
    return getattr(_state, "enabled", True)


@contextmanager
def no_grad():
    """Record no gradient history inside the block.

    Example:
        >>> import burn
        >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
        >>> with burn.no_grad():
        ...     y = w * 2
        >>> assert not y.requires_grad
    """
    prev = is_grad_enabled()
    _state.enabled = False
    try:
        yield
    finally:
        _state.enabled = prev


@contextmanager
def enable_grad():
    """Re-enable gradient recording inside a ``no_grad`` block.

    Example:
        >>> import burn
        >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
        >>> with burn.no_grad():
        ...     with burn.enable_grad():
        ...         y = w * 2
        >>> assert y.requires_grad
    """
    prev = is_grad_enabled()
    _state.enabled = True
    try:
        yield
    finally:
        _state.enabled = prev


# Autocast (burn.amp.autocast): per thread, the low dtype the ops of its lower list run in
# (None: off). ``_autocast_on`` counts the enabled regions open in any thread, so ops outside
# every region pay one list read, not a thread-local lookup.
_autocast_on = [0]


def autocast_dtype():
    """The dtype ``burn.autocast`` lowers matmuls to in this thread, or None outside it.

    Example:
        >>> import burn
        >>> with burn.autocast(burn.bfloat16):
        ...     inside = autocast_dtype()
        >>> assert inside is burn.bfloat16 and autocast_dtype() is None
    """
    return _state.__dict__.get("autocast") if _autocast_on[0] else None


@contextmanager
def autocast_mode(dtype):
    """Set this thread's autocast dtype (None turns it off) inside the block; burn.amp.autocast
    is the public face, and the reverse pass runs with it off (a backward op runs in the dtype
    its forward op ran in, as in torch).

    Example:
        >>> import burn
        >>> with autocast_mode(burn.float16):
        ...     with autocast_mode(None):
        ...         off = autocast_dtype()
        ...     on = autocast_dtype()
        >>> assert off is None and on is burn.float16
    """
    prev = _state.__dict__.get("autocast")
    if prev is None and dtype is None:
        yield
        return
    _state.autocast = dtype
    _autocast_on[0] += 1
    try:
        yield
    finally:
        _state.autocast = prev
        _autocast_on[0] -= 1


class GradNode:
    """The backward record of one op application.

    Core creates one per recorded op; a result tensor points at it. You only
    meet it when debugging autodiff.

    Example:
        >>> import burn
        >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
        >>> node, _ = (w * 2)._grad
        >>> assert node.prim.name == "mul" and node.inputs[0] is w
    """

    __slots__ = ("prim", "inputs", "attrs", "out_handles", "saved", "backward_fn", "time", "__weakref__")

    def __init__(self, prim, inputs, attrs, out_handles, backward_fn):
        self.prim = prim
        self.inputs = inputs          # the forward input Tensors
        self.attrs = attrs
        self.out_handles = out_handles
        self.saved = None
        self.backward_fn = backward_fn
        self.time = _clock[0]         # see _clock: inputs changed in place later are caught
