"""The public kernel API of burn-cuda: what a kernel library or plugin may use (DESIGN §11).

A cuda kernel receives and returns CuPy arrays (``cupy.ndarray``: views keep CuPy's byte
strides). This module allocates them from burn's pool on the device's stream, makes views
and copies, moves data to and from the host (counted in the device's ``stats``), compiles
CUDA C once per process (CuPy also keeps the binary in its disk cache,
``~/.cupy/kernel_cache``) and launches kernels on burn's stream of the device.
``burn_wgpu.api`` and ``burn_flex.api`` have the same names; CuPy code of a kernel runs on
the right device, stream and pool inside :func:`scope` (or a kernel wrapped by
:func:`on_device`).

Importing this module does not import CuPy: :func:`cupy` and the first call that needs a
device do (a missing CuPy or GPU is a :class:`burn.BackendUnavailable` saying what to install).

Example (needs a GPU): ``out = 2 x + y`` with the CUDA C shipped in a package's ``kernels.cu``,
``extern "C" __global__ void axpy(const float* x, float* y, int n)`` scaling by ``ALPHA``::

    from burn_cuda import api as cuda
    SOURCE = cuda.load_source("my_package", "kernels.cu")

    @my_op.kernel("cuda")
    def _(x, y):
        out = cuda.copy(y)                                           # from burn's pool
        prog = cuda.program(SOURCE, defines={"ALPHA": "2.0f"})      # compiled once, cached
        cuda.launch(prog.axpy, out.size, (cuda.contiguous(x), out, out.size))
        return out

Launch arguments: CuPy arrays are passed as the address of their first element, Python
ints as ``int`` (int32), floats as ``float``, numpy scalars as they are and size-one numpy
structured arrays by value (structs), as CuPy passes them. ``global_size`` counts threads
(as OpenCL's global size does): the grid is ``global_size / local_size`` rounded up.
"""
from __future__ import annotations

import numpy as np

from burn.backend import current_device_index
from burn.codegen.sources import Program, kernel_args, launch_shape, load_source, with_defines
from burn.dtypes import as_dtype
from burn.native import (check_broadcast, check_concat, check_matmul, check_permute, check_reshape, check_slice,
                         device_index, host_kernel, native_of, wrap_native)

# the internals this module wraps (kept here, in one place, so they are easy to repoint)
from . import kernels as _kernels
from . import runtime as _runtime
from .native import dtype_name
from .native import numpy_dtype as _numpy_dtype

__all__ = ["native", "from_native", "device_of", "empty", "zeros", "copy", "contiguous", "reshape",
           "permute", "broadcast_to", "slice", "concat", "matmul", "to_host", "to_device", "host_fallback",
           "program", "launch", "sync", "load_source", "cupy", "scope", "on_device", "dtype_name", "numpy_dtype", "is_native"]

_KIND = "cuda"
_PROGRAMS: dict = {}
_MODULES: dict = {}


def cupy():
    """The CuPy module, imported on first use (BackendUnavailable if CuPy or a GPU is missing).

    Example::

        cp = cuda.cupy()
        with cuda.scope():
            y = cp.arange(4.0)          # burn's pool and stream of the running device
    """
    return _runtime.load_cupy()


def _dc(device):
    """The DeviceContext of ``device``: None (the running device), an index, a burn.Device or its
    string, or a DeviceContext."""
    if isinstance(device, _runtime.DeviceContext):
        return device
    index = device_index(_KIND, device)
    return device_of() if index is None else _runtime.context(index)


def is_native(x) -> bool:
    """True for a cuda native array (a ``cupy.ndarray``), without importing CuPy.

    Example:
        >>> import numpy as np
        >>> from burn_cuda import api as cuda
        >>> assert not cuda.is_native(np.zeros(2)) and not cuda.is_native(3.0)
    """
    # a cupy.ndarray's ``device`` is a cupy.cuda.Device (numpy 2's arrays say "cpu")
    return hasattr(getattr(x, "device", None), "id")


def _check(x, what):
    if not is_native(x):
        raise TypeError(f"cuda api: {what} takes a CuPy array, got {type(x).__name__}")


def device_of(*arrays):
    """The device context of the first CuPy array among ``arrays``; without one, the device whose
    work is running (:func:`burn.backend.current_device_index`). It has ``index``, ``device``
    (the ``cupy.cuda.Device``), ``stream`` and ``stats``.

    Example::

        dc = cuda.device_of(x, 2.0)          # x's device
        assert dc.index == x.device.id
    """
    for x in arrays:
        if is_native(x):
            return _runtime.context(x.device.id)
    return _runtime.context(current_device_index())


def scope(device=None):
    """A context manager selecting ``device``'s GPU, burn's stream and burn's memory pool for the
    current thread: CuPy calls inside it allocate from burn's pool and run in order with
    burn's kernels. Re-entering it inside itself costs a counter.

    Example::

        with cuda.scope(x.device.id):
            y = cuda.cupy().linalg.qr(x)
    """
    return _dc(device).scope()


def on_device(fn):
    """``fn`` (a kernel over CuPy arrays) run inside :func:`scope` of its arrays' device.

    Example::

        @my_op.kernel("cuda")
        @cuda.on_device
        def _(x):
            return cuda.cupy().fft.fft(x)    # burn's device, stream and pool
    """
    return _kernels.on_device(fn)


def native(tensor):
    """The CuPy array of a burn Tensor on a cuda device, after its pending work ran (no copy).

    Example::

        x = cuda.native(burn.ones((3,), device="cuda") * 2)
        assert x.get().tolist() == [2.0, 2.0, 2.0]
    """
    return native_of(tensor, _KIND)


def from_native(array, device=None):
    """A burn Tensor holding the CuPy ``array`` (no copy), on its own device by default.

    Example::

        t = cuda.from_native(cuda.cupy().arange(3.0))
        assert t.device == burn.Device.cuda(0)
    """
    _check(array, "from_native")
    return wrap_native(array, _KIND, array.device.id, device)


def numpy_dtype(dtype) -> np.dtype:
    """The numpy dtype CuPy arrays of a burn dtype (a DType or its name) have on cuda
    (bfloat16: ``ml_dtypes.bfloat16``, with CuPy >= 14).

    Example:
        >>> import numpy as np
        >>> from burn_cuda import api as cuda
        >>> assert cuda.numpy_dtype("float16") == np.float16
    """
    return _numpy_dtype(as_dtype(dtype).name)


_dtype = numpy_dtype


def empty(shape, dtype, device=None):
    """An uninitialised C-contiguous CuPy array from burn's pool (``dtype``: a burn DType or its name).

    Example::

        x = cuda.empty((2, 3), "float32")
        assert x.shape == (2, 3) and x.flags.c_contiguous
    """
    dc = _dc(device)
    with dc.scope():
        return dc.cp.empty(tuple(int(s) for s in shape), _dtype(dtype))


def zeros(shape, dtype, device=None):
    """A C-contiguous CuPy array of zeros from burn's pool (a memset on burn's stream).

    Example::

        assert cuda.to_host(cuda.zeros((2,), "int64")).tolist() == [0, 0]
    """
    dc = _dc(device)
    with dc.scope():
        return dc.cp.zeros(tuple(int(s) for s in shape), _dtype(dtype))


def copy(x):
    """A fresh C-contiguous copy of ``x`` (any view).

    Example::

        y = cuda.copy(x.T)
        assert y.flags.c_contiguous and y.data.ptr != x.data.ptr
    """
    _check(x, "copy")
    with device_of(x).scope():
        return x.copy(order="C")


def contiguous(x):
    """``x`` itself if C-contiguous, else :func:`copy` of it.

    Example::

        assert cuda.contiguous(x) is x or not x.flags.c_contiguous
    """
    _check(x, "contiguous")
    return x if x.flags.c_contiguous else copy(x)


def reshape(x, shape):
    """``x`` with ``shape``: a view where the strides allow it, else a reshaped copy.

    Example::

        assert cuda.reshape(cuda.zeros((6,), "float32"), (2, 3)).shape == (2, 3)
    """
    _check(x, "reshape")
    shape = check_reshape(_KIND, x.shape, shape)
    with device_of(x).scope():
        return x.reshape(shape)


def permute(x, axes):
    """A view of ``x`` with its axes reordered.

    Example::

        assert cuda.permute(cuda.empty((2, 3, 4), "float32"), (2, 0, 1)).shape == (4, 2, 3)
    """
    _check(x, "permute")
    return x.transpose(check_permute(_KIND, x.shape, axes))


def broadcast_to(x, shape):
    """A view of ``x`` broadcast to ``shape`` (stride 0 along the broadcast axes).

    Example::

        assert cuda.broadcast_to(cuda.zeros((3,), "float32"), (2, 3)).strides[0] == 0
    """
    _check(x, "broadcast_to")
    shape = check_broadcast(_KIND, x.shape, shape)
    with device_of(x).scope():
        return cupy().broadcast_to(x, shape)


def slice(x, starts, stops, steps=None):     # noqa: A001 (the same name in every backend's api)
    """A strided view of ``x``: per axis ``range(start, stop, step)`` (non-negative indices, as
    ``builtins.slice(...).indices(n)`` gives them: a stop of -1 with a negative step reaches 0).

    Example::

        x = cuda.to_device(numpy.arange(10, dtype=numpy.float32))
        assert cuda.to_host(cuda.slice(x, [8], [-1], [-3])).tolist() == [8.0, 5.0, 2.0]
    """
    _check(x, "slice")
    starts, stops, steps = check_slice(_KIND, x.shape, starts, stops, steps)
    return _kernels.slice_(x, starts=starts, stops=stops, steps=steps)


def concat(xs, axis):
    """A new C-contiguous array: ``xs`` (one dtype, equal shapes but along ``axis``) joined along ``axis``.

    Example::

        y = cuda.concat([cuda.zeros((1, 2), "float32"), cuda.zeros((2, 2), "float32")], axis=0)
        assert y.shape == (3, 2)
    """
    xs = list(xs)
    for x in xs:
        _check(x, "concat")
    axis = check_concat(_KIND, [x.shape for x in xs], [dtype_name(x) for x in xs], axis)
    with device_of(*xs).scope():
        return _kernels.concat(*xs, axis=axis)


def matmul(a, b):
    """``a @ b`` through cuBLAS (batched; float16 / bfloat16 accumulate in float32), on burn's stream.

    Example::

        y = cuda.matmul(cuda.zeros((4, 2), "float32"), cuda.zeros((2, 3), "float32"))
        assert y.shape == (4, 3)
    """
    _check(a, "matmul")
    _check(b, "matmul")
    check_matmul(_KIND, a.shape, dtype_name(a), b.shape, dtype_name(b))
    with device_of(a).scope():
        return _kernels.matmul(a, b)


def _count(dc, nbytes: int) -> None:
    dc.stats["host_transfers"] = dc.stats.get("host_transfers", 0) + 1
    dc.stats["host_transfer_bytes"] = dc.stats.get("host_transfer_bytes", 0) + int(nbytes)


def to_host(x, *, count: bool = True) -> np.ndarray:
    """A numpy copy of the CuPy array ``x`` (waits for burn's stream), counted as a host transfer
    in the device's ``stats`` (``burn.Device.cuda(i).backend.stats(i)``). ``count=False`` is for
    the few bytes of status a native kernel reads back to raise its error at the call.

    Example::

        before = cuda.device_of(x).stats.get("host_transfers", 0)
        host = cuda.to_host(x)
        assert cuda.device_of(x).stats["host_transfers"] == before + 1
    """
    _check(x, "to_host")
    dc = device_of(x)
    with dc.scope():
        out = x.get(stream=dc.stream)
    if count:
        _count(dc, out.nbytes)
    return out


def to_device(array, device=None, dtype=None):
    """A new CuPy array with the values of ``array`` (a numpy array or anything numpy reads),
    converted to ``dtype`` if given, on ``device`` (default: the running one); counted as a
    host transfer.

    Example::

        x = cuda.to_device([1, 2], dtype="float32")
        assert x.dtype == numpy.float32
    """
    arr = np.asarray(array)
    if dtype is not None:
        arr = arr.astype(_dtype(dtype), copy=False)
    dc = _dc(device)
    with dc.scope():
        out = dc.cp.asarray(arr)
    _count(dc, arr.nbytes)
    return out


def host_fallback(fn, name: str):
    """Wrap the numpy kernel ``fn`` as a cuda kernel: its CuPy arrays downloaded, ``fn`` run, the
    result(s) uploaded to the arguments' device (every copy counted; ``burn info`` lists the op
    as a host fallback).

    Example::

        k = cuda.host_fallback(lambda a: numpy.sort(a), "sort")
        assert cuda.to_host(k(cuda.to_device([3.0, 1.0]))).tolist() == [1.0, 3.0]
    """
    return host_kernel(fn, name, _KIND, is_native, to_host, to_device, device_of)


def _module_kernel(dc, src, opts, name):
    mod = _MODULES.get((dc, src, opts))
    if mod is None:
        with dc.device:
            mod = _MODULES[(dc, src, opts)] = dc.cp.RawModule(code=src, options=_runtime.COMPILE_OPTIONS + opts)
        dc.stats["modules_compiled"] += 1
    with dc.device:
        return mod.get_function(name)


def program(source: str, defines: dict | None = None, options=None, device=None):
    """CUDA C ``source`` for a device, compiled once per process (NVRTC through CuPy, whose disk
    cache keeps the binary across processes): ``defines`` become ``#define NAME VALUE`` lines
    before it and ``options`` (a string or a sequence of strings, after burn's
    ``--std=c++17``) NVRTC options, both part of the cache key. The result's attributes are its
    kernels (``prog.scale``, ``extern "C" __global__`` functions); the module compiles when its
    first kernel is fetched, and a compile error is CuPy's CompileException with the log.

    Example::

        prog = cuda.program(SOURCE, defines={"SCALE": 2})
        assert cuda.program(SOURCE, defines={"SCALE": 2}) is prog     # cached
        cuda.launch(prog.scale, x.size, (x, out, x.size))
    """
    dc = _dc(device)
    src = with_defines(source, defines)
    opts = (options,) if isinstance(options, str) else tuple(options or ())
    key = (dc, src, opts)      # the context itself: a new context (a reset device) compiles anew
    prog = _PROGRAMS.get(key)
    if prog is None:
        # without options: the runtime's module cache, shared with burn-cuda's own kernels
        get = (lambda name: dc.function(src, name)) if not opts else (lambda name: _module_kernel(dc, src, opts, name))
        first = src.lstrip().splitlines()[0][:60] if src.strip() else ""
        prog = _PROGRAMS[key] = Program(get, _KIND, f"on cuda:{dc.index} (source starting {first!r})")
    return prog


def launch(kernel, global_size, args, local_size=None, device=None, shared_mem: int = 0) -> None:
    """Launch ``kernel`` on burn's stream of the device over ``global_size`` threads (an int, or 2
    or 3 ints), in blocks of ``local_size`` (default 256 in 1-D, 16 x 16 in 2-D, 8 x 8 x 4 in
    3-D); the grid is rounded up, so kernels check their bounds. ``shared_mem``: bytes of
    dynamic shared memory per block. The device is ``device``, else that of the first CuPy
    array in ``args``, else the running one.

    Example::

        y = cuda.zeros((3, 5), "float32")
        cuda.launch(prog.add_rows, (5, 3), (y, 3, 5))      # x: columns, y: rows
    """
    dc = _dc(device) if device is not None else device_of(*args)
    gsize, lsize = launch_shape(global_size, local_size, 256)
    if 0 in gsize:
        return
    grid = tuple(g // ls for g, ls in zip(gsize, lsize))
    with dc.scope():
        kernel(grid, lsize, tuple(kernel_args(args, lambda a: a)), shared_mem=int(shared_mem))
    dc.stats["launches"] += 1


def sync(device=None) -> None:
    """Wait until everything queued on burn's stream of ``device`` (default: the running one) ran.

    Example::

        cuda.sync(0)
    """
    _dc(device).synchronize()
