"""Creating tensors: from data, filled, ranges, random; and moving them between devices."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..bridge import TRACE, Handle
from ..device import Device
from ..dlpack import guard
from ..errors import BurnError, DTypeError, ShapeError
from ..graph import graph_for
from ..primitives import CREATION, ELEMENTWISE, TensorMeta, primitive
from ..tensor import Tensor, apply_creation
from ._util import scalar_dtype

__all__ = ["tensor", "asarray", "from_numpy", "from_dlpack", "zeros", "ones", "full", "empty",
           "arange", "linspace", "eye", "rand", "randn", "randint", "zeros_like", "ones_like",
           "full_like", "empty_like", "rand_like", "randn_like"]


def _device(device):
    if device is None:
        return _default_device()
    return device if isinstance(device, Device) else Device(device)


_DEFAULT = []


def _default_device():
    if not _DEFAULT:
        _DEFAULT.append(Device.default())
    return _DEFAULT[0]


def _shape(op, shape):
    if isinstance(shape, (int, np.integer)):
        shape = (int(shape),)
    try:
        shape = tuple(int(s) for s in shape)
    except TypeError:
        raise ShapeError(f"{op}: shape must be an int or a tuple of ints, got {shape!r}") from None
    if any(s < 0 for s in shape):
        raise ShapeError(f"{op}: negative dimension in shape {shape}")
    return shape


def _infer_dtype(arr: np.ndarray):
    k = arr.dtype.kind
    if k == "f":
        return dt.float32 if arr.dtype.itemsize > 2 or arr.dtype == np.float64 else dt.as_dtype(arr.dtype)
    if k in "iu":
        return dt.int64 if k == "i" and arr.dtype.itemsize == 8 else dt.as_dtype(arr.dtype)
    if k == "b":
        return dt.bool_
    if k == "c":
        return dt.complex64
    try:
        return dt.as_dtype(arr.dtype)
    except DTypeError:
        raise DTypeError(f"tensor: cannot make a tensor from numpy dtype {arr.dtype}") from None


def _from_host(arr: np.ndarray, dtype, device: Device, op: str = "tensor") -> Tensor:
    graph = graph_for(device)
    graph.check_dtype(dtype, op)
    data = graph.backend.from_numpy(arr, dtype, device.index)
    return Tensor._wrap(Handle(tuple(arr.shape), dtype, graph, data), device)


def tensor(data, *, dtype=None, device=None) -> Tensor:
    """A new tensor holding a copy of ``data`` (nested lists, scalars, arrays, tensors).

    Python floats become float32 and ints int64 unless ``dtype`` says otherwise;
    a numpy array keeps its dtype.

    Example:
        >>> import burn
        >>> x = burn.tensor([[1, 2], [3, 4]])
        >>> assert x.dtype is burn.int64 and x.shape == (2, 2)
        >>> assert burn.tensor([1.5], dtype=burn.float64).dtype is burn.float64
    """
    device = _device(device)
    if isinstance(data, Tensor):
        d = dt.as_dtype(dtype) if dtype is not None else data.dtype
        out = _from_host(np.array(data.numpy(), copy=True), data.dtype, device)
        return out if d is data.dtype else out.astype(d)
    arr = np.asarray(data)
    if arr.dtype == object:
        raise BurnError(f"tensor: cannot convert {type(data).__name__} with ragged or non-numeric "
                        f"entries to a tensor")
    if dtype is not None:
        d = dt.as_dtype(dtype)
    elif isinstance(data, (np.ndarray, np.generic)) or hasattr(data, "__array_interface__"):
        d = dt.as_dtype(arr.dtype)      # an array says what it holds: keep it
    else:
        d = _infer_dtype(arr)           # Python numbers: float32 / int64 defaults
    return _from_host(np.array(arr, copy=True), d, device)


def asarray(obj, /, *, dtype=None, device=None, copy=None) -> Tensor:
    """Array API ``asarray``: like :func:`tensor`, but returns a tensor unchanged
    when it already has the dtype and device asked for.

    Example:
        >>> import burn
        >>> x = burn.ones((2,))
        >>> assert burn.asarray(x) is x
    """
    if isinstance(obj, Tensor) and (dtype is None or dt.as_dtype(dtype) is obj.dtype) \
            and (device is None or _device(device) == obj.device) and not copy:
        return obj
    return tensor(obj, dtype=dtype, device=device if device is not None else
                  (obj.device if isinstance(obj, Tensor) else None))


def from_numpy(array: np.ndarray, *, device=None) -> Tensor:
    """A tensor from a numpy array, keeping its dtype; may share memory on flex.

    When it shares, the array must not be written while the tensor is in use:
    pending work may read either value. ``burn.tensor(array)`` always copies.

    Example:
        >>> import burn, numpy as np
        >>> assert burn.from_numpy(np.ones(3, dtype=np.float64)).dtype is burn.float64
    """
    device = _device(device)
    arr = np.asarray(array)
    return _from_host(arr, dt.as_dtype(arr.dtype), device, "from_numpy")


_DL_CPU = 1     # DLPack's kDLCPU device type


def _host_pointer(obj):
    """The address of a CPU DLPack object's first element (None for empty ones)."""
    arr = np.from_dlpack(obj)
    return arr.__array_interface__["data"][0] if arr.size else None


def _dlpack_dtype(x, on_cpu: bool):
    """The burn dtype of a DLPack producer, known without a copy (None if unknown)."""
    try:
        return dt.as_dtype(x.dtype)
    except (AttributeError, TypeError, DTypeError):
        pass
    if on_cpu:
        try:
            return dt.as_dtype(np.from_dlpack(x).dtype)     # a view: no copy
        except (BufferError, TypeError, DTypeError):
            pass
    return None


def from_dlpack(x, /, *, device=None, copy=None) -> Tensor:
    """A tensor from a DLPack-capable object (Array API ``from_dlpack``), with the same
    meaning on every backend (see :mod:`burn.dlpack`):

    - ``copy=True`` always copies, at the call;
    - ``copy=None`` copies foreign memory (its owner may write it later, and burn's values
      are immutable) and shares a burn tensor's value on the same device;
    - ``copy=False`` shares the memory (flex with CPU arrays, cuda with CUDA arrays) or raises
      ``BufferError`` where it cannot (a CPU array into a wgpu device). It promises not to write
      the array while the tensor is in use; burn checks a checksum at each read and raises
      :class:`burn.SharedMemoryWritten` after the owner wrote it.

    Example:
        >>> import burn, numpy as np
        >>> a = np.arange(3.0)
        >>> b = burn.from_dlpack(a); a[0] = 9.0            # copy=None: a copy
        >>> assert b.tolist() == [0.0, 1.0, 2.0]
        >>> s = burn.from_dlpack(a, copy=False)            # shared, checked at each read
        >>> assert s.tolist() == [9.0, 1.0, 2.0]
    """
    device = _device(device)
    if isinstance(x, Tensor):
        return _from_tensor(x, device, copy)
    if TRACE[0] is not None:      # burn.capture: another library's memory is no graph input
        TRACE[0].on_import("from_dlpack", x)
    graph = graph_for(device)
    backend = graph.backend
    on_cpu = getattr(x, "__dlpack_device__", None) is not None and x.__dlpack_device__()[0] == _DL_CPU
    dl_dtype = _dlpack_dtype(x, on_cpu)
    if dl_dtype is not None:
        graph.check_dtype(dl_dtype, "from_dlpack")     # before the backend's own import error
    shares = backend.dlpack_import_shares(x, device.index)
    if copy is False and not shares:
        raise BufferError(f"from_dlpack: copy=False, but {device} cannot share the memory of a "
                          f"{type(x).__name__} ({'CPU' if on_cpu else 'device'} memory): it must copy; "
                          f"pass copy=None to allow a copy")
    if (copy or copy is None and shares) and on_cpu:
        arr = np.from_dlpack(x, copy=True)
        native = backend.from_numpy(arr, dt.as_dtype(arr.dtype), device.index)
    else:
        native = backend.from_dlpack(x, device.index)
        if copy or copy is None and shares:
            # a device producer: copy through the host (no backend API copies device to device)
            host = np.array(backend.to_numpy(native, device.index), copy=True)
            native = backend.from_numpy(host, dt.as_dtype(host.dtype), device.index)
        elif copy is False:
            if on_cpu:
                src = backend.to_dlpack_source(native, device.index)
                if src.__dlpack_device__()[0] != _DL_CPU or _host_pointer(src) != _host_pointer(x):
                    raise BufferError(f"from_dlpack: copy=False, but {device} did not share the memory of "
                                      f"the {type(x).__name__}; pass copy=None to allow a copy")
            guard(native, x, backend, device.index)
    shape, d = backend.native_meta(native)      # no download: the native array knows
    graph.check_dtype(d, "from_dlpack")
    return Tensor._wrap(Handle(shape, d, graph, native), device)


def _from_tensor(x: Tensor, device: Device, copy) -> Tensor:
    """``from_dlpack`` of a burn tensor: its value is immutable, so it is shared on its own
    device (a new leaf, as ``to_device``); another device or ``copy=True`` copies."""
    same = x.device.kind == device.kind and x.device.index == device.index
    if not same and copy is False:
        raise BufferError(f"from_dlpack: copy=False, but the tensor is on {x.device} and {device} "
                          f"cannot share its memory; pass copy=None to allow a copy")
    out = Tensor._wrap(x._h, device) if same else _transfer(x, device)
    return out.astype(out.dtype, copy=True) if copy and same else out


def _transfer(t: Tensor, device: Device) -> Tensor:
    if device.kind == t.device.kind and device.index == t.device.index:
        # same memory, other autodiff flag: a new leaf sharing the value
        return Tensor._wrap(t._h, device)
    return _from_host(t.numpy(), t.dtype, device, "to_device")


# -- filled / ranges -------------------------------------------------------------

def _full_meta(*, shape, value, dtype):
    return TensorMeta(shape, dtype)


full_p = primitive("full", ELEMENTWISE, _full_meta, differentiable=False)


def full(shape, fill_value, *, dtype=None, device=None) -> Tensor:
    """A tensor of ``shape`` filled with ``fill_value``.

    Example:
        >>> import burn
        >>> assert burn.full((2,), 7).tolist() == [7, 7]
    """
    shape = _shape("full", shape)
    if dtype is None:
        dtype = dt.bool_ if isinstance(fill_value, bool) else \
            dt.default_int if isinstance(fill_value, (int, np.integer)) else \
            dt.complex64 if isinstance(fill_value, complex) else dt.default_float
    return apply_creation(full_p, _device(device), {"shape": shape, "value": fill_value, "dtype": dt.as_dtype(dtype)})


def zeros(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor of zeros (float32 unless ``dtype``).

    Example:
        >>> import burn
        >>> assert burn.zeros((2, 3)).sum().item() == 0.0
    """
    return full(shape, 0, dtype=dtype or dt.default_float, device=device)


def ones(shape, *, dtype=None, device=None) -> Tensor:
    """A tensor of ones (float32 unless ``dtype``).

    Example:
        >>> import burn
        >>> assert burn.ones((2, 3)).sum().item() == 6.0
    """
    return full(shape, 1, dtype=dtype or dt.default_float, device=device)


def empty(shape, *, dtype=None, device=None) -> Tensor:
    """An uninitialised tensor (filled with zeros here, for determinism).

    Example:
        >>> import burn
        >>> assert burn.empty((2,)).shape == (2,)
    """
    return zeros(shape, dtype=dtype, device=device)


def _like(x, dtype, device):
    return (x.shape, dt.as_dtype(dtype) if dtype is not None else x.dtype,
            _device(device) if device is not None else x.device)


def zeros_like(x, /, *, dtype=None, device=None) -> Tensor:
    """Zeros of ``x``'s shape, dtype and device.

    Args:
        x: the tensor to copy the shape (and by default dtype and device) from.
        dtype, device: override ``x``'s.

    Example:
        >>> import burn
        >>> z = burn.zeros_like(burn.arange(3), dtype=burn.float32)
        >>> assert z.tolist() == [0.0, 0.0, 0.0] and z.dtype is burn.float32
    """
    s, d, dev = _like(x, dtype, device)
    return full(s, 0, dtype=d, device=dev)


def ones_like(x, /, *, dtype=None, device=None) -> Tensor:
    """Ones of ``x``'s shape, dtype and device.

    Args:
        x: the tensor to copy the shape (and by default dtype and device) from.
        dtype, device: override ``x``'s.

    Example:
        >>> import burn
        >>> o = burn.ones_like(burn.zeros((2, 1), dtype=burn.int32))
        >>> assert o.tolist() == [[1], [1]] and o.dtype is burn.int32
    """
    s, d, dev = _like(x, dtype, device)
    return full(s, 1, dtype=d, device=dev)


def full_like(x, /, fill_value, *, dtype=None, device=None) -> Tensor:
    """``fill_value`` in ``x``'s shape, dtype and device.

    Args:
        x: the tensor to copy the shape (and by default dtype and device) from.
        fill_value: the value of every element.
        dtype, device: override ``x``'s.

    Example:
        >>> import burn
        >>> assert burn.full_like(burn.zeros((2,)), 7.5).tolist() == [7.5, 7.5]
    """
    s, d, dev = _like(x, dtype, device)
    return full(s, fill_value, dtype=d, device=dev)


def empty_like(x, /, *, dtype=None, device=None) -> Tensor:
    """An uninitialised tensor like ``x`` (Array API name; values are unspecified).

    Example:
        >>> import burn
        >>> e = burn.empty_like(burn.ones((2, 3)))
        >>> assert e.shape == (2, 3) and e.dtype is burn.float32
    """
    return zeros_like(x, dtype=dtype, device=device)


def _arange_meta(*, start, stop, step, dtype):
    n = max(0, math.ceil((stop - start) / step))
    return TensorMeta((n,), dtype)


arange_p = primitive("arange", CREATION, _arange_meta, differentiable=False)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None) -> Tensor:
    """Evenly spaced values in ``[start, stop)`` (numpy semantics).

    Example:
        >>> import burn
        >>> assert burn.arange(1, 7, 2).tolist() == [1, 3, 5]
    """
    if stop is None:
        start, stop = 0, start
    if step == 0:
        raise BurnError("arange: step must not be zero")
    if dtype is None:
        ints = all(isinstance(v, (int, np.integer)) for v in (start, stop, step))
        dtype = dt.default_int if ints else dt.default_float
    return apply_creation(arange_p, _device(device),
                          {"start": start, "stop": stop, "step": step, "dtype": dt.as_dtype(dtype)})


def _linspace_meta(*, start, stop, num, endpoint, dtype):
    return TensorMeta((num,), dtype)


linspace_p = primitive("linspace", CREATION, _linspace_meta, differentiable=False)


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint=True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``.

    Example:
        >>> import burn
        >>> assert burn.linspace(0, 1, 3).tolist() == [0.0, 0.5, 1.0]
        >>> assert burn.linspace(0, 2 + 1j, 3).tolist() == [0j, (1 + 0.5j), (2 + 1j)]
    """
    if num < 0:
        raise BurnError(f"linspace: num must be >= 0, got {num}")
    if isinstance(start, complex) or isinstance(stop, complex) or (dtype is not None and dt.as_dtype(dtype).is_complex):
        # numpy steps a complex range part by part: two real ranges
        start, stop = complex(start), complex(stop)
        cd = dt.as_dtype(dtype) if dtype is not None else dt.complex_of(dt.default_float)
        rd = dt.real_of(cd)
        re_ = linspace(start.real, stop.real, num, dtype=rd, device=device, endpoint=endpoint)
        im = linspace(start.imag, stop.imag, num, dtype=rd, device=device, endpoint=endpoint)
        # elementwise builds on this module: its cast, add and mul are reached as Tensor methods
        return re_.astype(cd) + im.astype(cd) * 1j
    return apply_creation(linspace_p, _device(device),
                          {"start": float(start), "stop": float(stop), "num": int(num),
                           "endpoint": bool(endpoint), "dtype": dt.as_dtype(dtype or dt.default_float)})


def _eye_meta(*, n, m, k, dtype):
    return TensorMeta((n, m), dtype)


eye_p = primitive("eye", CREATION, _eye_meta, differentiable=False)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None) -> Tensor:
    """Identity-like matrix with ones on diagonal ``k``.

    Example:
        >>> import burn
        >>> assert burn.eye(2).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    """
    return apply_creation(eye_p, _device(device),
                          {"n": int(n_rows), "m": int(n_cols if n_cols is not None else n_rows),
                           "k": int(k), "dtype": dt.as_dtype(dtype or dt.default_float)})


# -- random ------------------------------------------------------------------------
# Random ops carry a "_key" attribute (seed, counter) drawn from the device's
# stream at call time: results depend only on device.seed() and call order,
# not on when the graph is flushed, and the key stays out of plan caching.

def _rand_meta(*, shape, dtype, low, high, _key):
    return TensorMeta(shape, dtype)


def _randn_meta(*, shape, dtype, mean, std, _key):
    return TensorMeta(shape, dtype)


def _randint_meta(*, shape, dtype, low, high, _key):
    return TensorMeta(shape, dtype)


rand_p = primitive("rand_uniform", CREATION, _rand_meta, differentiable=False)
randn_p = primitive("rand_normal", CREATION, _randn_meta, differentiable=False)
randint_p = primitive("rand_int", CREATION, _randint_meta, differentiable=False)


def _float_dtype(op, dtype):
    d = dt.as_dtype(dtype or dt.default_float)
    if not d.is_floating:
        raise DTypeError(f"{op}: dtype must be a floating dtype, got {d}")
    return d


def rand(shape, *, low=0.0, high=1.0, dtype=None, device=None) -> Tensor:
    """Uniform random values in ``[low, high)`` from the device's seeded stream.

    Example:
        >>> import burn
        >>> burn.Device.flex().seed(0)
        >>> x = burn.rand((1000,))
        >>> assert 0.0 <= x.min().item() and x.max().item() < 1.0
    """
    device = _device(device)
    key = graph_for(device).next_key()
    return apply_creation(rand_p, device, {"shape": _shape("rand", shape), "dtype": _float_dtype("rand", dtype),
                                           "low": float(low), "high": float(high), "_key": key})


def randn(shape, *, mean=0.0, std=1.0, dtype=None, device=None) -> Tensor:
    """Normal random values from the device's seeded stream.

    Example:
        >>> import burn
        >>> x = burn.randn((10000,))
        >>> assert abs(x.mean().item()) < 0.05
    """
    device = _device(device)
    key = graph_for(device).next_key()
    return apply_creation(randn_p, device, {"shape": _shape("randn", shape), "dtype": _float_dtype("randn", dtype),
                                            "mean": float(mean), "std": float(std), "_key": key})


def randint(low, high, shape, *, dtype=None, device=None) -> Tensor:
    """Random integers in ``[low, high)``.

    Example:
        >>> import burn
        >>> x = burn.randint(0, 3, (100,))
        >>> assert x.min().item() >= 0 and x.max().item() < 3
    """
    device = _device(device)
    key = graph_for(device).next_key()
    return apply_creation(randint_p, device, {"shape": _shape("randint", shape),
                                              "dtype": dt.as_dtype(dtype or dt.default_int),
                                              "low": int(low), "high": int(high), "_key": key})


def rand_like(x, /, *, dtype=None, device=None) -> Tensor:
    """Uniform random values in [0, 1) shaped like ``x``.

    Example:
        >>> import burn
        >>> r = burn.rand_like(burn.zeros((100,)))
        >>> assert r.shape == (100,) and 0.0 <= r.min().item() and r.max().item() < 1.0
    """
    s, d, dev = _like(x, dtype, device)
    return rand(s, dtype=d, device=dev)


def randn_like(x, /, *, dtype=None, device=None) -> Tensor:
    """Standard normal random values shaped like ``x``.

    Example:
        >>> import burn
        >>> r = burn.randn_like(burn.zeros((1000,), dtype=burn.float64))
        >>> assert r.dtype is burn.float64 and abs(r.mean().item()) < 0.2
    """
    s, d, dev = _like(x, dtype, device)
    return randn(s, dtype=d, device=dev)


# -- operands ----------------------------------------------------------------------

_SCALARS: dict = {}


def scalar(value, dtype, device) -> Tensor:
    """A 0-d tensor for a Python scalar operand (cached: hot in loops).

    The key tells -0.0 from 0.0 (they compare equal) by the sign bit; NaN never
    equals itself, so it is not cached.
    """
    key = (device, dtype, type(value), value, isinstance(value, float) and math.copysign(1.0, value) < 0)
    try:
        h = _SCALARS.get(key)
    except TypeError:
        h = None
    if h is None:
        graph = graph_for(device)
        graph.check_dtype(dtype, "scalar operand")
        try:
            arr = np.asarray(value, dtype=np.float64 if dtype.is_floating and dtype.itemsize < 4 else None)
        except (TypeError, ValueError):
            raise BurnError(f"unsupported scalar operand {value!r}") from None
        h = Handle((), dtype, graph, graph.backend.from_numpy(arr, dtype, device.index))
        if len(_SCALARS) > 4096:
            _SCALARS.clear()
        if value == value:      # not NaN: a NaN key could never be found again
            try:
                _SCALARS[key] = h
            except TypeError:
                pass
    return Tensor._wrap(h, device)


def as_tensor_like(value, like: Tensor) -> Tensor:
    """``value`` as a tensor on ``like``'s device (scalars take its dtype)."""
    if isinstance(value, Tensor):
        return value
    if isinstance(value, (bool, int, float, complex, np.generic)):
        return scalar(value, scalar_dtype(value, like.dtype), like.device)
    return tensor(value, device=like.device)
