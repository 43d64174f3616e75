"""The public kernel API of burn-wgpu: what a kernel library or plugin may use (DESIGN §11).

A wgpu kernel receives and returns the backend's native arrays: strided views of pooled
OpenCL buffers (``x.shape``, ``x.strides`` and ``x.offset`` in elements, ``x.dtype`` a burn
dtype name, ``x.size``). This module allocates them from the device's pool, makes views
and copies, moves data to and from the host (counted in the device's ``stats``), compiles
OpenCL C once per process (memory cache) and machine (disk cache of driver binaries, see
:mod:`burn_wgpu.runtime`) and launches kernels on the device's in-order queue.
``burn_cuda.api`` and ``burn_flex.api`` have the same names.

Importing this module does not import PyOpenCL: the first call that needs a device does.

Example (a kernel scaling by a ``#define``)::

    from burn_wgpu import api as wgpu
    SOURCE = "__kernel void scale(__global const float* x, __global float* y, int n) {" \\
             " int i = get_global_id(0); if (i < n) y[i] = SCALE * x[i]; }"

    @my_op.kernel("wgpu")
    def _(x):
        x = wgpu.contiguous(x)
        out = wgpu.empty(x.shape, x.dtype)
        prog = wgpu.program(SOURCE, defines={"SCALE": 2})       # compiled once, cached
        wgpu.launch(prog.scale, x.size, (x, out, x.size))
        return out

Launch arguments: native arrays are passed as their buffer (a view must start at its
buffer's first element: use :func:`contiguous`, or pass :func:`buffer` and ``x.offset``
yourself), Python ints as ``int`` (int32), floats as ``float``, numpy scalars as they are,
:func:`local_memory` as ``__local`` scratch.
"""
from __future__ import annotations

import numpy as np

from burn.codegen.sources import Program, kernel_args, launch_shape, load_source, with_defines
from burn.dtypes import as_dtype
from burn.errors import BurnError, ShapeError
from burn.native import (check_broadcast, check_concat, check_matmul, check_permute, check_reshape, check_slice,
                         device_index, native_of, wrap_native)

# the internals this module wraps (kept here, in one place, so they are easy to repoint)
from . import interop as _interop
from . import kernels as _kernels
from .native import NUMPY, WTensor, reshape_view
from .native import empty as _empty

__all__ = ["native", "from_native", "device_of", "empty", "zeros", "copy", "contiguous", "reshape",
           "permute", "broadcast_to", "slice", "concat", "matmul", "to_host", "to_device", "host_fallback",
           "program", "launch", "local_memory", "buffer", "as_strided", "sync", "load_source", "is_native", "numpy_dtype", "dtype_name"]

_KIND = "wgpu"
_PROGRAMS: dict = {}


def _runtime():
    from . import runtime       # PyOpenCL is imported with it: on first use, never at import
    return runtime


def _cl():
    import pyopencl
    return pyopencl


def _dc(device):
    """The DeviceContext of ``device``: None (the running device), an index, a burn.Device or
    its string, or a DeviceContext."""
    rt = _runtime()
    if isinstance(device, rt.DeviceContext):
        return device
    index = device_index(_KIND, device)
    return device_of() if index is None else rt.context(index)


def _dtype(dtype) -> str:
    return as_dtype(dtype).name


def _check(x, what):
    if not isinstance(x, WTensor):
        raise TypeError(f"wgpu api: {what} takes a wgpu native array (WTensor), got {type(x).__name__}")


def numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype of a burn dtype (a DType or its name) on wgpu: what :func:`to_host` returns.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> assert wgpu.numpy_dtype("complex64") == np.complex64
    """
    return np.dtype(NUMPY[_dtype(dtype)])


def dtype_name(x) -> str:
    """The burn dtype name of a native array (wgpu arrays keep it as ``x.dtype``).

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> assert wgpu.dtype_name(wgpu.empty((1,), "int8")) == "int8"
    """
    _check(x, "dtype_name")
    return x.dtype


def is_native(x) -> bool:
    """True for a wgpu native array (a ``WTensor``: a strided view of a pooled OpenCL buffer).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> assert wgpu.is_native(wgpu.empty((2,), "float32")) and not wgpu.is_native(np.zeros(2))
    """
    return isinstance(x, WTensor)


def native(tensor):
    """The native array (a ``WTensor``) of a burn Tensor on a wgpu device, after its pending work ran.

    Example:
        >>> import burn
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.native(burn.arange(4, dtype=burn.float32, device="wgpu") + 1)
        >>> assert x.shape == (4,) and x.dtype == "float32" and wgpu.to_host(x).tolist() == [1, 2, 3, 4]
    """
    return native_of(tensor, _KIND)


def from_native(array, device=None):
    """A burn Tensor holding the native ``array`` (no copy), on its own device by default.

    Example:
        >>> import burn, numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> t = wgpu.from_native(wgpu.to_device(np.ones(3, np.float32)))
        >>> assert t.device == burn.Device.wgpu(0) and (t * 2).tolist() == [2.0, 2.0, 2.0]
    """
    _check(array, "from_native")
    return wrap_native(array, _KIND, array.dc.index, device)


def device_of(*arrays):
    """The device context of the first native array among ``arrays``; without one, the device
    whose work is running (:func:`burn.backend.current_device_index`).

    The context has ``index``, ``device`` (the ``pyopencl.Device``: ``local_mem_size``,
    ``max_work_group_size``...), ``fp64`` / ``fp16`` flags and ``stats``.

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.empty((2,), "float32")
        >>> assert wgpu.device_of(1.0, x) is wgpu.device_of() and wgpu.device_of(x).index == 0
    """
    return _interop.device_of(*arrays)


def empty(shape, dtype, device=None):
    """An uninitialised contiguous native array from the device's pool (``dtype``: a burn DType
    or its name; ``device``: None for the running device, an index, a burn.Device or a context).

    Example:
        >>> import burn
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.empty((2, 3), burn.int32)
        >>> assert x.shape == (2, 3) and x.dtype == "int32" and x.strides == (3, 1)
    """
    return _empty(_dc(device), tuple(int(s) for s in shape), _dtype(dtype))


def zeros(shape, dtype, device=None):
    """A contiguous native array of zeros from the device's pool (a fill on the queue).

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> assert wgpu.to_host(wgpu.zeros((2, 2), "int64")).tolist() == [[0, 0], [0, 0]]
    """
    out = empty(shape, dtype, device)
    out.dc.fill_zero(out.buf, out.size * out.itemsize)
    return out


def copy(x):
    """A fresh contiguous copy of ``x`` (any view) at offset 0 of its own buffer.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.permute(wgpu.to_device(np.arange(6, dtype=np.float32).reshape(2, 3)), (1, 0))
        >>> y = wgpu.copy(x)
        >>> assert y.strides == (2, 1) and wgpu.to_host(y).tolist() == [[0, 3], [1, 4], [2, 5]]
    """
    _check(x, "copy")
    out = _empty(x.dc, x.shape, x.dtype)
    _kernels.copy_into(out, x)
    return out


def contiguous(x):
    """``x`` itself when it is contiguous and starts at its buffer's first element (what
    :func:`launch` passes), else :func:`copy` of it.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.to_device(np.arange(4, dtype=np.float32))
        >>> assert wgpu.contiguous(x) is x
        >>> y = wgpu.contiguous(wgpu.slice(x, [1], [4]))
        >>> assert y.offset == 0 and wgpu.to_host(y).tolist() == [1, 2, 3]
    """
    _check(x, "contiguous")
    return x if x.is_contiguous and x.offset == 0 else copy(x)


def reshape(x, shape):
    """``x`` with ``shape``: a view where the strides allow it, else a reshaped copy.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.to_device(np.arange(6, dtype=np.float32))
        >>> y = wgpu.reshape(x, (2, 3))
        >>> assert y.buf is x.buf and wgpu.to_host(y).tolist() == [[0, 1, 2], [3, 4, 5]]
    """
    _check(x, "reshape")
    shape = check_reshape(_KIND, x.shape, shape)
    v = reshape_view(x, shape)
    return v if v is not None else reshape_view(copy(x), shape)


def permute(x, axes):
    """A view of ``x`` with its axes reordered (``axes``: a permutation of ``range(x.ndim)``).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.empty((2, 3, 4), "float32")
        >>> assert wgpu.permute(x, (2, 0, 1)).shape == (4, 2, 3)
    """
    _check(x, "permute")
    return _kernels.permute(x, axes=check_permute(_KIND, x.shape, axes))


def broadcast_to(x, shape):
    """A view of ``x`` broadcast to ``shape`` (stride 0 along the broadcast axes), numpy's rules.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.broadcast_to(wgpu.to_device(np.arange(3, dtype=np.int32)), (2, 3))
        >>> assert x.strides == (0, 1) and wgpu.to_host(x).tolist() == [[0, 1, 2], [0, 1, 2]]
    """
    _check(x, "broadcast_to")
    return _kernels.broadcast_to(x, shape=check_broadcast(_KIND, x.shape, shape))


def slice(x, starts, stops, steps=None):     # noqa: A001 (the same name in every backend's api)
    """A strided view of ``x``: per axis ``range(start, stop, step)`` (non-negative indices, as
    ``builtins.slice(...).indices(n)`` gives them: a stop of -1 with a negative step reaches 0).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.to_device(np.arange(10, dtype=np.float32))
        >>> assert wgpu.to_host(wgpu.slice(x, [8], [-1], [-3])).tolist() == [8.0, 5.0, 2.0]
    """
    _check(x, "slice")
    starts, stops, steps = check_slice(_KIND, x.shape, starts, stops, steps)
    return _kernels.slice_(x, starts=starts, stops=stops, steps=steps)


def concat(xs, axis):
    """A new contiguous array: ``xs`` (one dtype, equal shapes but along ``axis``) joined along ``axis``.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> a, b = wgpu.to_device(np.zeros((1, 2), np.float32)), wgpu.to_device(np.ones((2, 2), np.float32))
        >>> assert wgpu.to_host(wgpu.concat([a, b], axis=0)).tolist() == [[0, 0], [1, 1], [1, 1]]
    """
    xs = list(xs)
    for x in xs:
        _check(x, "concat")
    axis = check_concat(_KIND, [x.shape for x in xs], [x.dtype for x in xs], axis)
    return _kernels.concat(*xs, axis=axis)


def matmul(a, b):
    """``a @ b`` on the device (numpy's matmul rules: batched, broadcast batch dims).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> a = wgpu.to_device(np.eye(2, dtype=np.float32) * 3)
        >>> b = wgpu.to_device(np.arange(4, dtype=np.float32).reshape(2, 2))
        >>> assert wgpu.to_host(wgpu.matmul(a, b)).tolist() == [[0, 3], [6, 9]]
    """
    _check(a, "matmul")
    _check(b, "matmul")
    check_matmul(_KIND, a.shape, a.dtype, b.shape, b.dtype)
    return _kernels.matmul(a, b)


def to_host(x, *, count: bool = True) -> np.ndarray:
    """A numpy copy of the native array ``x`` (waits for its kernels), counted as a host transfer
    in the device's ``stats`` (``burn.Device.wgpu(i).backend.stats(i)``). ``count=False`` is for
    the few bytes of status a native kernel reads back to raise its error at the call (a
    sync, not data going through the host).

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> stats = wgpu.device_of().stats
        >>> before = stats.get("host_transfers", 0)
        >>> assert wgpu.to_host(wgpu.zeros((3,), "float32")).tolist() == [0.0, 0.0, 0.0]
        >>> assert wgpu.to_host(wgpu.zeros((1,), "int32"), count=False).tolist() == [0]
        >>> assert stats["host_transfers"] == before + 1
    """
    _check(x, "to_host")
    return _interop.to_host(x) if count else _kernels.download(x)


def to_device(array, device=None, dtype=None):
    """A new native array with the values of ``array`` (a numpy array or anything numpy reads),
    converted to ``dtype`` if given (counted as a host transfer).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.to_device([1, 2], dtype="float32")
        >>> assert x.dtype == "float32" and wgpu.to_host(x).tolist() == [1.0, 2.0]
    """
    arr = np.asarray(array)
    name = _dtype(dtype) if dtype is not None else as_dtype(arr.dtype).name
    return _interop.to_device(_dc(device), arr, name)


def host_fallback(fn, name: str):
    """Wrap the numpy kernel ``fn`` as a wgpu kernel: its native arrays downloaded, ``fn`` run,
    the result(s) uploaded (every copy counted in the device's ``stats``; ``burn info`` lists the op as a host fallback).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> k = wgpu.host_fallback(lambda a, *, k: np.sort(a)[::-1][:k], "top")
        >>> assert wgpu.to_host(k(wgpu.to_device(np.float32([2, 9, 4])), k=2)).tolist() == [9, 4]
    """
    return _interop.host_fallback(fn, name)


def program(source: str, defines: dict | None = None, options=None, device=None):
    """Compile OpenCL C ``source`` for a device, once: ``defines`` become ``#define NAME VALUE``
    lines before it and ``options`` (a string or a list of strings) extra build options, both
    part of the cache key (memory, then the disk cache of driver binaries). The result's
    attributes are its kernels (``prog.scale``). A compile error raises a BurnError with the
    driver's log and the source.

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> src = "__kernel void fill(__global int* y, int n) { int i = get_global_id(0); if (i < n) y[i] = V; }"
        >>> prog = wgpu.program(src, defines={"V": 7})
        >>> assert wgpu.program(src, defines={"V": 7}) is prog        # cached
        >>> y = wgpu.empty((5,), "int32")
        >>> wgpu.launch(prog.fill, y.size, (y, y.size))
        >>> assert wgpu.to_host(y).tolist() == [7] * 5
    """
    dc = _dc(device)
    src = with_defines(source, defines)
    opts = options if isinstance(options, str) else " ".join(options or ())
    key = (dc, src, opts)      # the context itself: a new context (a reset device) compiles anew
    prog = _PROGRAMS.get(key)
    if prog is None:
        dc.program(src, opts)       # compile (or load) now: errors come from program(), not later
        first = src.lstrip().splitlines()[0][:60] if src.strip() else ""
        prog = _PROGRAMS[key] = Program(lambda name: dc.kernel(src, name, opts), _KIND,
                                        f"on wgpu:{dc.index} (source starting {first!r})")
    return prog


def _arg(a):
    if isinstance(a, WTensor):
        if a.offset:
            raise BurnError(f"wgpu api: launch got a view starting at element {a.offset} of its buffer "
                            f"({a!r}); pass wgpu.contiguous(x), or wgpu.buffer(x) and x.offset")
        return a.buf
    return a


def launch(kernel, global_size, args, local_size=None, device=None) -> None:
    """Enqueue ``kernel`` on the device's in-order queue over ``global_size`` work items (an int,
    or 2 or 3 ints), rounded up to whole work-groups of ``local_size`` (default: the device's
    1-D work-group size, 16 x 16 in 2-D, 8 x 8 x 4 in 3-D); kernels check their bounds. The
    device is ``device``, else that of the first native array in ``args``, else the running one.
    Arguments are converted as the module docstring says.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> src = ("__kernel void add(__global float* y, int rows, int cols) { int c = get_global_id(0),"
        ...        " r = get_global_id(1); if (r < rows && c < cols) y[r * cols + c] += r; }")
        >>> y = wgpu.zeros((3, 5), "float32")
        >>> wgpu.launch(wgpu.program(src).add, (5, 3), (y, 3, 5))
        >>> assert wgpu.to_host(y)[:, 0].tolist() == [0, 1, 2]
    """
    dc = _dc(device) if device is not None else device_of(*args)
    gsize, lsize = launch_shape(global_size, local_size, dc.local_size)
    if 0 in gsize:
        return
    dc.launch2d(kernel, gsize, lsize, kernel_args(args, _arg))


def local_memory(nbytes: int):
    """``__local`` scratch of ``nbytes`` bytes per work-group, as a launch argument.

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> src = ("__kernel void rev(__global int* y, __local int* t) { int i = get_local_id(0);"
        ...        " t[i] = y[i]; barrier(CLK_LOCAL_MEM_FENCE); y[i] = t[3 - i]; }")
        >>> y = wgpu.to_device([1, 2, 3, 4], dtype="int32")
        >>> wgpu.launch(wgpu.program(src).rev, 4, (y, wgpu.local_memory(16)), local_size=4)
        >>> assert wgpu.to_host(y).tolist() == [4, 3, 2, 1]
    """
    return _cl().LocalMemory(int(nbytes))


def buffer(x):
    """The whole OpenCL buffer under the view ``x``, for a kernel that takes ``x.offset`` and
    ``x.strides`` itself (read at launch time: the pool may move a block between launches).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.slice(wgpu.to_device(np.arange(4, dtype=np.float32)), [2], [4])
        >>> assert x.offset == 2 and wgpu.buffer(x).size >= 16
    """
    _check(x, "buffer")
    return x.buf


def as_strided(x, shape, strides, offset: int, dtype=None):
    """A view of the buffer under ``x`` with ``shape``, ``strides`` and ``offset`` in elements of
    ``dtype`` (default ``x.dtype``; e.g. a float32 buffer read as complex64 pairs), sharing its
    memory. Every element the view reaches must lie inside the buffer (ShapeError otherwise).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import api as wgpu
        >>> x = wgpu.to_device(np.arange(6, dtype=np.float32))
        >>> assert wgpu.to_host(wgpu.as_strided(x, (3,), (-2,), 4)).tolist() == [4, 2, 0]
        >>> z = wgpu.as_strided(x, (3,), (1,), 0, dtype="complex64")
        >>> assert wgpu.to_host(z).tolist() == [1j, 2 + 3j, 4 + 5j]
    """
    _check(x, "as_strided")
    name = x.dtype if dtype is None else _dtype(dtype)
    shape, strides, offset = tuple(int(s) for s in shape), tuple(int(s) for s in strides), int(offset)
    size = np.dtype(NUMPY[name]).itemsize
    reach = [offset + sum((n - 1) * st for n, st in zip(shape, strides) if st * sgn > 0) for sgn in (-1, 1)]
    if len(strides) != len(shape) or (0 not in shape and (reach[0] < 0 or (reach[1] + 1) * size > x.buf.size)):
        raise ShapeError(f"wgpu api: as_strided shape={shape} strides={strides} offset={offset} ({name}) reaches "
                         f"outside the {x.buf.size}-byte buffer of {x!r}")
    return WTensor(x.dc, x.block, shape, name, strides, offset)


def sync(device=None) -> None:
    """Wait until every kernel queued on ``device`` (default: the running device) has finished.

    Example:
        >>> from burn_wgpu import api as wgpu
        >>> wgpu.sync(); wgpu.sync(0)
    """
    _dc(device).finish()
