"""What the wgpu kernel modules of burn.signal share: dtypes, the OpenCL program, launches,
the batch layout of strided operands and the host fallbacks.

Everything of burn-wgpu goes through its public kernel API, :mod:`burn_wgpu.api`
(imported as ``wgpu``; it imports PyOpenCL only when a kernel runs). Native
arrays are passed to the kernels as their buffer (:func:`buf`) and their
offset and strides in elements.
"""
from __future__ import annotations

import functools

import numpy as np
from burn_wgpu import api as wgpu

from .. import _flex, _sources

#: batch dims a kernel indexes (after merging contiguous ones); more run on the host
MAX_BATCH_DIMS = 4

REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
CPLX = {"float32": "complex64", "float64": "complex128"}
CT = {"float32": "float", "float64": "double"}


def defines(T: str) -> dict:
    """The ``#define``s of a program in OpenCL type ``T`` (``float`` or ``double``).

    >>> defines("double")
    {'T': 'double', 'FP64': 1}
    """
    return {"T": T, "FP64": 1} if T == "double" else {"T": T}


#: the files of the program of every kernel but the FFT passes (its #defines: :func:`defines`)
PROGRAM_FILES = ("common.cl", "signal.cl")


@functools.lru_cache(maxsize=None)
def _program(dc, real):
    # one Program per device and dtype: its kernels are looked up once
    return wgpu.program(_sources.concat(PROGRAM_FILES), defines=defines(CT[real]), device=dc)


def kernel(dc, real, name):
    """Kernel ``name`` of the program in dtype ``real`` on device context ``dc`` (compiled once).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> assert kernel(wgpu.device_of(), "float32", "lfilt").function_name == "lfilt"
    """
    return _program(dc, real).kernel(name)


def launch(dc, kern, global_size, args, local_size=None):
    """Enqueue ``kern`` on ``dc``'s queue over ``global_size`` work items (rounded up to whole
    work-groups; the kernels check their bounds).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> dc = wgpu.device_of()
    >>> t = wgpu.empty((4,), "complex64", dc)
    >>> launch(dc, kernel(dc, "float32", "twiddles"), 4, (i32(4), buf(t)))
    >>> assert np.allclose(wgpu.to_host(t), [1, -1j, -1, 1j], atol=1e-6)
    """
    wgpu.launch(kern, global_size, args, local_size=local_size, device=dc)


#: the OpenCL buffer under a native array (kernels take its offset and strides themselves)
buf = wgpu.buffer


def i32(v):
    """``v`` as a kernel's ``int`` argument (``i64``: ``long``, ``u32``: ``uint``).

    >>> i32(3), i64(3), u32(3)
    (np.int32(3), np.int64(3), np.uint32(3))
    """
    return np.int32(v)


def i64(v):
    """``v`` as a kernel's ``long`` argument.

    >>> i64(-1)
    np.int64(-1)
    """
    return np.int64(v)


def u32(v):
    """``v`` as a kernel's ``uint`` argument.

    >>> u32(7)
    np.uint32(7)
    """
    return np.uint32(v)


def scalar(real, v):
    """``v`` as a kernel argument of type T.

    >>> scalar("float64", 0.5).dtype, scalar("float32", 0.5).dtype
    (dtype('float64'), dtype('float32'))
    """
    return np.float64(v) if real == "float64" else np.float32(v)


def empty(dc, shape, dtype):
    """A new contiguous native array from ``dc``'s pool.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> x = empty(wgpu.device_of(), (2, 3), "float32")
    >>> assert x.shape == (2, 3) and x.strides == (3, 1)
    """
    return wgpu.empty(shape, dtype, dc)


#: the device context of a native array (``index``, ``fp64``, ``stats``...)
device = wgpu.device_of


def is_contiguous(x) -> bool:
    """C-contiguous (dims of size 1 aside): ``x``'s memory is its rows back to back.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> x = wgpu.empty((2, 1, 3), "float32")
    >>> assert is_contiguous(x) and not is_contiguous(wgpu.permute(x, (2, 1, 0)))
    """
    if x.size <= 1:
        return True
    acc = 1
    for s, st in zip(reversed(x.shape), reversed(x.strides)):
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def is_native(x) -> bool:
    """A wgpu array of a dtype the FFT computes natively (float64/complex128 need fp64).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> assert is_native(wgpu.empty((2,), "complex64")) and not is_native(wgpu.empty((2,), "int32"))
    >>> assert not is_native(np.zeros(2, np.float32))
    """
    return (wgpu.is_native(x) and x.dtype in REAL
            and (x.dtype in ("float32", "complex64") or wgpu.device_of(x).fp64))


def launch_rows(dc, kern, nb, m, inner, args):
    """Launch a kernel that writes (nb, m) rows as (outer, m, inner) (see ``out_item`` in signal.cl).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> dc = wgpu.device_of()
    >>> x = wgpu.to_device(np.arange(6, dtype=np.complex64).reshape(2, 3))
    >>> y = wgpu.empty((2, 2), "complex64")
    >>> launch_rows(dc, kernel(dc, "float32", "store"), 2, 2, 1,
    ...             (i32(3), i32(2), u32(2), u32(1), scalar("float32", 2), i32(0), buf(x), buf(y)))
    >>> assert wgpu.to_host(y).tolist() == [[0, 2], [6, 8]]
    """
    if inner == 1:
        launch(dc, kern, nb * m, args)
    else:
        launch(dc, kern, (inner, m, nb // inner), args, (16, 16, 1))


def batch_layout(axis, shape, *strides):
    """Merge the dims other than ``axis`` (jointly for every operand's strides) into at most 4:
    ``(d1, d2, d3)`` and each operand's ``(s0, s1, s2, s3)``, or None if more dims remain.

    >>> dims, (xs,) = batch_layout(2, (2, 3, 5), (15, 5, 1))
    >>> [int(d) for d in dims], [int(s) for s in xs]
    ([1, 1, 6], [0, 0, 0, 5])
    """
    merged = []     # (size, [stride per operand])
    for d, size in enumerate(shape):
        if d == axis or size == 1:
            continue
        st = [s[d] for s in strides]
        if merged and all(m == x * size for m, x in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * size, st)
        else:
            merged.append((size, st))
    if len(merged) > MAX_BATCH_DIMS:
        return None
    merged = [(1, [0] * len(strides))] * (MAX_BATCH_DIMS - len(merged)) + merged
    dims = tuple(i32(m[0]) for m in merged[1:])
    return dims, [tuple(i64(m[1][k]) for m in merged) for k in range(len(strides))]


def download(x) -> np.ndarray:
    """A few values read back to the host (a sync, not counted as a host transfer): filter
    coefficients checked as flex checks them.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> stats = wgpu.device_of().stats
    >>> before = stats.get("host_transfers", 0)
    >>> assert download(wgpu.to_device(np.float32([1, -0.5]))).tolist() == [1, -0.5]
    >>> assert stats["host_transfers"] == before + 1        # the upload only
    """
    return wgpu.to_host(x, count=False)


@functools.lru_cache(maxsize=None)
def _host_kernel(name):
    return wgpu.host_fallback(_flex.KERNELS[name], f"signal_{name}")


def fallback(name, *args, **kw):
    """Run op ``name``'s flex (scipy) kernel on the host: inputs downloaded, results uploaded, both
    counted in the device's ``stats()``; for what the OpenCL kernels do not cover.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> y = fallback("resample", wgpu.to_device(np.ones(8, np.float32)), num=4, axis=0)
    >>> assert np.allclose(wgpu.to_host(y), 1)
    """
    return _host_kernel(name)(*args, **kw)


def fallback_kernel(name):
    """The wgpu kernel of an op with no OpenCL kernel: always the host fallback.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> k = fallback_kernel("resample")
    >>> assert k.__name__ == "wgpu_host_signal_resample"
    >>> assert wgpu.to_host(k(wgpu.to_device(np.ones(6, np.float32)), num=3, axis=0)).shape == (3,)
    """
    def k(*xs, **kw):
        return fallback(name, *xs, **kw)
    k.__name__ = f"wgpu_host_signal_{name}"
    return k
