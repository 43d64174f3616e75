"""The casts ``burn.autocast`` inserts: what the ops of its two lists call on their inputs.

Inside ``with burn.autocast(dtype):`` (``burn.amp``) the ops of the *lower* list (matmul,
linear, linear_relu, convolutions, and so attention's matmuls) cast their floating inputs
to the low dtype, and the ops of the *float32* list (reductions that accumulate, softmax,
log_softmax, norms, losses) cast half-precision inputs up to float32. float64 is never
touched and integer inputs pass through, as in torch. The casts are ordinary ``cast`` ops,
so their backward rule returns each gradient in its input's dtype: float32 parameters get
float32 gradients. Outside every autocast region each helper costs one list read.
"""
from __future__ import annotations

from .. import dtypes as dt
from ..errors import DTypeError
from ..tape import _autocast_on, _state
from ..tensor import Tensor
from .elementwise import astype

__all__ = ["lower", "to_float32"]


def lower(*tensors, op="this op"):
    """``tensors`` cast to the autocast dtype where autocast lowers them (floating, not
    float64, not already in it); unchanged outside autocast. Non-tensors pass through.

    Example:
        >>> import burn
        >>> a = burn.ones((2, 2))
        >>> with burn.autocast(burn.bfloat16):
        ...     (b,) = lower(a)
        >>> assert b.dtype is burn.bfloat16 and lower(a)[0] is a
    """
    if not _autocast_on[0]:
        return tensors
    d = _state.__dict__.get("autocast")
    if d is None:
        return tensors
    try:
        return tuple(astype(t, d) if isinstance(t, Tensor) and t.dtype is not d and t.dtype.is_floating
                     and t.dtype is not dt.float64 else t for t in tensors)
    except DTypeError as e:       # the device lacks the autocast dtype: say which op and why it casts
        raise DTypeError(f"{op}: burn.autocast({d}) runs it in {d}, but {e}; use the other autocast dtype "
                         f"or autocast(enabled=False) on this device") from None


def to_float32(*tensors, op=None):
    """``tensors`` with float16/bfloat16 ones cast to float32 inside autocast (the float32
    list's inputs); unchanged outside autocast.

    Example:
        >>> import burn
        >>> h = burn.ones((2,), dtype=burn.bfloat16)
        >>> with burn.autocast(burn.bfloat16):
        ...     (f,) = to_float32(h)
        >>> assert f.dtype is burn.float32 and to_float32(h)[0] is h
    """
    if not _autocast_on[0] or _state.__dict__.get("autocast") is None:
        return tensors
    return tuple(astype(t, dt.float32) if isinstance(t, Tensor) and t.dtype.is_floating and t.dtype.itemsize == 2
                 else t for t in tensors)
