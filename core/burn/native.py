"""Crossing between burn tensors and a backend's native arrays (for the backends' kernel APIs).

``burn_flex.api``, ``burn_wgpu.api`` and ``burn_cuda.api`` each expose ``native(tensor)`` and
``from_native(array, device)``; both are these two functions with the backend's kind. The
``check_*`` functions validate the arguments of the apis' views and ops, so every backend
raises the same ShapeError for the same mistake.
"""
from __future__ import annotations

import numpy as np

from .bridge import Handle
from .device import Device
from .errors import DeviceMismatch, ShapeError
from .graph import graph_for
from .tensor import Tensor

__all__ = ["native_of", "wrap_native", "device_index", "check_reshape", "check_permute", "check_broadcast", "check_slice",
           "check_concat", "check_matmul", "host_kernel"]


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


def device_index(kind: str, device) -> int | None:
    """The index a ``kind`` api call targets: None for ``device=None`` (the device whose work is
    running), else the index of an int, a :class:`burn.Device` or its string, which must be of ``kind``.

    Example:
        >>> from burn.native import device_index
        >>> assert device_index("wgpu", "wgpu:1") == 1 and device_index("wgpu", 2) == 2
        >>> assert device_index("cuda", None) is None
    """
    if device is None:
        return None
    if isinstance(device, (int, np.integer)) and not isinstance(device, bool):
        return int(device)
    d = device if isinstance(device, Device) else Device(device)
    if d.kind != kind:
        raise DeviceMismatch(f"{kind} api: device {d} is not a {kind} device")
    return d.index


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
    graph.check_dtype(dtype, f"{kind} api: from_native()")
    return Tensor._wrap(Handle(tuple(shape), dtype, graph, array), device)


# -- argument checks shared by the backends' apis (one wording of each error everywhere) --------

def check_reshape(kind: str, shape, new_shape) -> tuple:
    """``new_shape`` as a tuple of ints, or ShapeError if it has another number of elements.

    Example:
        >>> from burn.native import check_reshape
        >>> assert check_reshape("flex", (2, 3), [3, 2]) == (3, 2)
    """
    new_shape = tuple(int(s) for s in new_shape)
    if int(np.prod(new_shape, dtype=np.int64)) != int(np.prod(tuple(shape), dtype=np.int64)):
        raise ShapeError(f"{kind} api: reshape of shape {tuple(shape)} to {new_shape}")
    return new_shape


def check_permute(kind: str, shape, axes) -> tuple:
    """``axes`` (negative ones counted from the end) as a tuple, or ShapeError if they are not a
    permutation of ``range(len(shape))``.

    Example:
        >>> from burn.native import check_permute
        >>> assert check_permute("wgpu", (2, 3, 4), (-1, 0, 1)) == (2, 0, 1)
    """
    nd = len(shape)
    axes = tuple(int(a) + nd if int(a) < 0 else int(a) for a in axes)
    if sorted(axes) != list(range(nd)):
        raise ShapeError(f"{kind} api: permute axes {axes} of an array of shape {tuple(shape)}")
    return axes


def check_broadcast(kind: str, shape, new_shape) -> tuple:
    """``new_shape`` as a tuple, or ShapeError if ``shape`` does not broadcast to it (numpy's rules).

    Example:
        >>> from burn.native import check_broadcast
        >>> assert check_broadcast("cuda", (3,), [2, 3]) == (2, 3)
    """
    new_shape = tuple(int(s) for s in new_shape)
    try:
        ok = np.broadcast_shapes(tuple(shape), new_shape) == new_shape
    except ValueError:
        ok = False
    if not ok:
        raise ShapeError(f"{kind} api: cannot broadcast shape {tuple(shape)} to {new_shape}")
    return new_shape


def check_slice(kind: str, shape, starts, stops, steps) -> tuple:
    """``(starts, stops, steps)`` as lists of ints (steps default to 1), or ShapeError unless there
    is one of each per axis and no step is 0.

    Example:
        >>> from burn.native import check_slice
        >>> assert check_slice("flex", (4, 5), (1, 0), (3, 5), None) == ([1, 0], [3, 5], [1, 1])
    """
    steps = [1] * len(shape) if steps is None else [int(s) for s in steps]
    if not len(starts) == len(stops) == len(steps) == len(shape) or 0 in steps:
        raise ShapeError(f"{kind} api: slice needs one start, stop and non-zero step per axis of shape "
                         f"{tuple(shape)}; got starts={list(starts)} stops={list(stops)} steps={steps}")
    return [int(s) for s in starts], [int(s) for s in stops], steps


def check_concat(kind: str, shapes, dtypes, axis) -> int:
    """``axis`` counted from 0, or ShapeError unless the arrays (at least one) have one dtype and
    equal shapes but along ``axis``.

    Example:
        >>> from burn.native import check_concat
        >>> assert check_concat("wgpu", [(1, 2), (3, 2)], ["float32"] * 2, -2) == 0
    """
    shapes = [tuple(s) for s in shapes]
    if not shapes:
        raise ShapeError(f"{kind} api: concat of no arrays")
    nd = len(shapes[0])
    axis = int(axis) + nd if int(axis) < 0 else int(axis)
    rest = {(s[:axis] + s[axis + 1:], len(s), str(d)) for s, d in zip(shapes, dtypes)}
    if not 0 <= axis < max(nd, 1) or len(rest) != 1:
        raise ShapeError(f"{kind} api: concat along axis {axis} of shapes {shapes} dtypes {[str(d) for d in dtypes]}")
    return axis


def check_matmul(kind: str, a_shape, a_dtype, b_shape, b_dtype) -> None:
    """ShapeError unless ``a @ b`` is defined (numpy's matmul rules, one dtype).

    Example:
        >>> from burn.native import check_matmul
        >>> check_matmul("flex", (5, 2, 3), "float32", (3, 4), "float32")
    """
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    ok = len(a_shape) >= 1 and len(b_shape) >= 1 and str(a_dtype) == str(b_dtype) and \
        a_shape[-1] == b_shape[-2 if len(b_shape) > 1 else 0]
    if ok:
        try:
            np.broadcast_shapes(a_shape[:-2], b_shape[:-2])
        except ValueError:
            ok = False
    if not ok:
        raise ShapeError(f"{kind} api: matmul of shapes {a_shape} ({a_dtype}) and {b_shape} ({b_dtype})")


def host_kernel(fn, name: str, kind: str, is_native, to_host, to_device, device_of):
    """Numpy kernel ``fn`` as a ``kind`` kernel: native arguments go through ``to_host``, ``fn``
    runs, each result comes back through ``to_device(array, device)`` on the arguments' device
    (``device_of(*args)``); tuples of results come back as tuples, other arguments pass through.
    The kernel is marked ``host_fallback`` (``burn info`` lists such ops).

    Example:
        >>> import numpy as np
        >>> from burn.native import host_kernel
        >>> k = host_kernel(lambda a: (a + 1, a * 2), "demo", "flex", lambda a: isinstance(a, list),
        ...                 np.array, lambda a, dev: a.tolist(), lambda *xs: None)
        >>> assert k([1, 2]) == ([2, 3], [2, 4]) and k.__name__ == "flex_host_demo" and k.host_fallback
    """
    def kernel(*xs, **attrs):
        dev = device_of(*xs)
        r = fn(*[to_host(x) if is_native(x) else x for x in xs], **attrs)
        if isinstance(r, tuple):
            return tuple(to_device(np.asarray(v), dev) for v in r)
        return to_device(np.asarray(r), dev)
    kernel.__name__ = f"{kind}_host_{name}"
    kernel.host_fallback = True
    return kernel
