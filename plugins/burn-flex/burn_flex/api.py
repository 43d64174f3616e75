"""The public kernel API of burn-flex: what a kernel library or plugin may use (DESIGN §11).

A flex kernel receives and returns numpy arrays, so most of this module is numpy under the
names that ``burn_wgpu.api`` and ``burn_cuda.api`` also have: a kernel library writes its
three kernels against one vocabulary. On flex the host *is* the device: :func:`to_host` and
:func:`to_device` are plain copies (not counted), :func:`host_fallback` runs the numpy
kernel as it is, and there is no ``program`` / ``launch`` / ``sync`` (nothing to compile:
a flex kernel is Python over numpy).

Example::

    from burn_flex import api as flex

    @my_op.kernel("flex")
    def _(x):                        # x: a numpy array
        return flex.contiguous(x) * 2
"""
from __future__ import annotations

import builtins

import numpy as np

from burn.codegen.sources import load_source
from burn.device import Device
from burn.dtypes import as_dtype
from burn.errors import DeviceMismatch
from burn.native import (check_broadcast, check_concat, check_matmul, check_permute, check_reshape, check_slice,
                         device_index, native_of, wrap_native)

# the internals this module wraps (kept here, in one place, so they are easy to repoint)
from .native import native as _native_dtype

__all__ = ["native", "from_native", "device_of", "empty", "zeros", "copy", "contiguous", "reshape",
           "permute", "broadcast_to", "slice", "concat", "matmul", "to_host", "to_device", "host_fallback",
           "load_source", "numpy_dtype", "dtype_name", "is_native"]

_KIND = "flex"


def _check_device(device):
    if device_index(_KIND, device) not in (None, 0):
        raise DeviceMismatch(f"flex api: there is one flex device (flex:0), got {device!r}")


def numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype flex stores a burn dtype (a DType or its name) in.

    Example:
        >>> import burn, numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.numpy_dtype("float16") == np.float16 and flex.numpy_dtype(burn.bool_) == np.bool_
    """
    return _native_dtype(as_dtype(dtype))


def dtype_name(x) -> str:
    """The burn dtype name of a native array.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.dtype_name(np.zeros(1, np.bool_)) == "bool"
    """
    return as_dtype(x.dtype).name


def is_native(x) -> bool:
    """True for a flex native array (a numpy array).

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.is_native(np.zeros(2)) and not flex.is_native([0.0, 0.0])
    """
    return isinstance(x, np.ndarray)


def native(tensor) -> np.ndarray:
    """The numpy array of a burn Tensor on flex, after its pending work ran (no copy).

    Example:
        >>> import burn
        >>> from burn_flex import api as flex
        >>> assert flex.native(burn.arange(3, device="flex") * 2).tolist() == [0, 2, 4]
    """
    return native_of(tensor, _KIND)


def from_native(array, device=None):
    """A burn Tensor on flex holding the numpy ``array`` (no copy).

    Example:
        >>> import burn, numpy as np
        >>> from burn_flex import api as flex
        >>> t = flex.from_native(np.ones((2,), np.float32))
        >>> assert t.device == burn.Device.flex() and (t + 1).tolist() == [2.0, 2.0]
    """
    if not is_native(array):
        raise TypeError(f"flex api: from_native takes a numpy array, got {type(array).__name__}")
    return wrap_native(array, _KIND, 0, device)


def device_of(*arrays) -> Device:
    """The flex device (there is one: numpy arrays all live on the host).

    Example:
        >>> import burn, numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.device_of(np.zeros(2)) == burn.Device.flex()
    """
    return Device(_KIND, 0)


def empty(shape, dtype, device=None) -> np.ndarray:
    """An uninitialised C-contiguous array (``dtype``: a burn DType or its name).

    Example:
        >>> from burn_flex import api as flex
        >>> x = flex.empty((2, 3), "int32")
        >>> assert x.shape == (2, 3) and x.dtype == "int32"
    """
    _check_device(device)
    return np.empty(tuple(int(s) for s in shape), numpy_dtype(dtype))


def zeros(shape, dtype, device=None) -> np.ndarray:
    """A C-contiguous array of zeros.

    Example:
        >>> from burn_flex import api as flex
        >>> assert flex.zeros((2,), "float64").tolist() == [0.0, 0.0]
    """
    _check_device(device)
    return np.zeros(tuple(int(s) for s in shape), numpy_dtype(dtype))


def copy(x) -> np.ndarray:
    """A fresh C-contiguous copy of ``x``.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> x = np.arange(4)
        >>> assert flex.copy(x) is not x and flex.copy(x[::2]).flags.c_contiguous
    """
    return np.array(x, order="C", copy=True)


def contiguous(x) -> np.ndarray:
    """``x`` itself if C-contiguous, else a contiguous copy.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> x = np.arange(6).reshape(2, 3)
        >>> assert flex.contiguous(x) is x and flex.contiguous(x.T).flags.c_contiguous
    """
    return np.ascontiguousarray(x) if x.ndim else x     # ascontiguousarray makes a 0-d array 1-d


def reshape(x, shape) -> np.ndarray:
    """``x`` with ``shape``: a view where the strides allow it, else a copy.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.reshape(np.arange(6), (2, 3)).tolist() == [[0, 1, 2], [3, 4, 5]]
    """
    return np.reshape(x, check_reshape(_KIND, x.shape, shape))


def permute(x, axes) -> np.ndarray:
    """A view of ``x`` with its axes reordered.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.permute(np.zeros((2, 3, 4)), (2, 0, 1)).shape == (4, 2, 3)
    """
    return np.transpose(x, check_permute(_KIND, x.shape, axes))


def broadcast_to(x, shape) -> np.ndarray:
    """A read-only view of ``x`` broadcast to ``shape``.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.broadcast_to(np.arange(3), (2, 3)).strides[0] == 0
    """
    return np.broadcast_to(x, check_broadcast(_KIND, x.shape, shape))


def slice(x, starts, stops, steps=None) -> np.ndarray:     # noqa: A001 (the same name in every api)
    """A strided view of ``x``: per axis ``range(start, stop, step)`` (non-negative indices, as
    ``builtins.slice(...).indices(n)`` gives them: a stop of -1 with a negative step reaches 0).

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.slice(np.arange(10), [8], [-1], [-3]).tolist() == [8, 5, 2]
    """
    starts, stops, steps = check_slice(_KIND, x.shape, starts, stops, steps)
    return x[tuple(builtins.slice(a, None if b < 0 else b, c) for a, b, c in zip(starts, stops, steps))]


def concat(xs, axis) -> np.ndarray:
    """A new array: ``xs`` (one dtype, equal shapes but along ``axis``) joined along ``axis``.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.concat([np.zeros((1, 2)), np.ones((1, 2))], axis=0).tolist() == [[0, 0], [1, 1]]
    """
    xs = list(xs)
    return np.concatenate(xs, axis=check_concat(_KIND, [x.shape for x in xs], [x.dtype for x in xs], axis))


def matmul(a, b) -> np.ndarray:
    """``a @ b`` (numpy's matmul; the result keeps the operands' dtype, bfloat16 included).

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> assert flex.matmul(np.eye(2, dtype=np.float32), np.ones((2, 1), np.float32)).tolist() == [[1], [1]]
    """
    check_matmul(_KIND, a.shape, a.dtype, b.shape, b.dtype)
    r = np.matmul(a, b)
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def to_host(x, *, count: bool = True) -> np.ndarray:
    """A numpy copy of ``x`` (on flex a plain copy: nothing is counted, ``count`` is accepted for
    the same signature as wgpu and cuda).

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> x = np.arange(3)
        >>> assert flex.to_host(x) is not x and flex.to_host(x).tolist() == [0, 1, 2]
    """
    return np.array(x, copy=True)


def to_device(array, device=None, dtype=None) -> np.ndarray:
    """A new numpy array with the values of ``array``, converted to ``dtype`` if given (a copy).

    Example:
        >>> from burn_flex import api as flex
        >>> x = flex.to_device([1, 2], dtype="float32")
        >>> assert x.dtype == "float32" and x.tolist() == [1.0, 2.0]
    """
    _check_device(device)
    arr = np.asarray(array)
    return np.array(arr, dtype=numpy_dtype(dtype) if dtype is not None else arr.dtype, copy=True)


def host_fallback(fn, name: str):
    """``fn`` as a flex kernel named ``flex_host_<name>``: on flex the numpy kernel is the kernel
    (nothing to move), so it runs as it is.

    Example:
        >>> import numpy as np
        >>> from burn_flex import api as flex
        >>> k = flex.host_fallback(lambda a: a * 2, "twice")
        >>> assert k.__name__ == "flex_host_twice" and k(np.ones(2)).tolist() == [2.0, 2.0]
    """
    def kernel(*xs, **attrs):
        return fn(*xs, **attrs)
    kernel.__name__ = f"flex_host_{name}"
    return kernel
