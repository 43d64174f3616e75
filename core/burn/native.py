"""Crossing between burn tensors and a backend's native arrays (for the backends' kernel APIs).

``burn_flex.api``, ``burn_wgpu.api`` and ``burn_cuda.api`` each expose ``native(tensor)`` and
``from_native(array, device)``; both are these two functions with the backend's kind.
"""
from __future__ import annotations

from .bridge import Handle
from .device import Device
from .errors import DeviceMismatch
from .graph import graph_for
from .tensor import Tensor

__all__ = ["native_of", "wrap_native"]


def native_of(tensor: Tensor, kind: str):
    """The native array of ``tensor`` on a ``kind`` device, after running its pending work.

    Example:
        >>> import burn, numpy as np
        >>> from burn.native import native_of
        >>> a = native_of(burn.tensor([1.0, 2.0], device="flex") * 2, "flex")
        >>> assert isinstance(a, np.ndarray) and a.tolist() == [2.0, 4.0]
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"{kind} api: native() takes a burn.Tensor, got {type(tensor).__name__}")
    if tensor.device.kind != kind:
        raise DeviceMismatch(f"{kind} api: native() of a tensor on {tensor.device} (shape {tensor.shape}, "
                             f"dtype {tensor.dtype}); move it first: t.to_device('{kind}')")
    return tensor._h.value()


def wrap_native(array, kind: str, index: int, device=None) -> Tensor:
    """A burn Tensor holding the native ``array`` (no copy) on ``device`` (default: ``kind:index``).

    ``device`` may be a :class:`burn.Device`, a string such as ``"wgpu:1"`` or an index.

    Example:
        >>> import burn, numpy as np
        >>> from burn.native import wrap_native
        >>> t = wrap_native(np.arange(3, dtype=np.int32), "flex", 0)
        >>> assert t.dtype is burn.int32 and t.device == burn.Device.flex() and t.tolist() == [0, 1, 2]
    """
    if device is None:
        device = Device(kind, index)
    elif isinstance(device, int):
        device = Device(kind, device)
    elif not isinstance(device, Device):
        device = Device(device)
    if device.kind != kind:
        raise DeviceMismatch(f"{kind} api: from_native() of a {kind} array onto device {device}")
    if device.index != index:
        raise DeviceMismatch(f"{kind} api: from_native() of an array of {kind}:{index} onto {device}; "
                             f"copy it with to_device first")
    graph = graph_for(device)
    shape, dtype = graph.backend.native_meta(array)
    return Tensor._wrap(Handle(tuple(shape), dtype, graph, array), device)
