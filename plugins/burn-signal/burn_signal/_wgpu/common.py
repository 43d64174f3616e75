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
    """Kernel ``name`` of the program in dtype ``real`` on device context ``dc`` (compiled once)."""
    return _program(dc, real).kernel(name)


def launch(dc, kern, global_size, args, local_size=None):
    """Enqueue ``kern`` on ``dc``'s queue over ``global_size`` work items (rounded up to whole
    work-groups; the kernels check their bounds)."""
    wgpu.launch(kern, global_size, args, local_size=local_size, device=dc)


#: the OpenCL buffer under a native array (kernels take its offset and strides themselves)
buf = wgpu.buffer


def i32(v):
    return np.int32(v)


def i64(v):
    return np.int64(v)


def u32(v):
    return np.uint32(v)


def scalar(real, v):
    """``v`` as a kernel argument of type T."""
    return np.float64(v) if real == "float64" else np.float32(v)


def empty(dc, shape, dtype):
    """A new contiguous native array from ``dc``'s pool."""
    return wgpu.empty(shape, dtype, dc)


#: the device context of a native array (``index``, ``fp64``, ``stats``...)
device = wgpu.device_of


def is_contiguous(x) -> bool:
    """C-contiguous (dims of size 1 aside): ``x``'s memory is its rows back to back."""
    if x.size <= 1:
        return True
    acc = 1
    for s, st in zip(reversed(x.shape), reversed(x.strides)):
        if s != 1 and st != acc:
            return False
        acc *= s
    return True


def is_native(x) -> bool:
    """A wgpu array of a dtype the FFT computes natively (float64/complex128 need fp64)."""
    return (wgpu.is_native(x) and x.dtype in REAL
            and (x.dtype in ("float32", "complex64") or wgpu.device_of(x).fp64))


def launch_rows(dc, kern, nb, m, inner, args):
    """Launch a kernel that writes (nb, m) rows as (outer, m, inner) (see ``out_item`` in signal.cl)."""
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
    coefficients checked as flex checks them."""
    return wgpu.to_host(x, count=False)


@functools.lru_cache(maxsize=None)
def _host_kernel(name):
    return wgpu.host_fallback(_flex.KERNELS[name], f"signal_{name}")


def fallback(name, *args, **kw):
    """Run op ``name``'s flex (scipy) kernel on the host: inputs downloaded, results uploaded, both
    counted in the device's ``stats()``; for what the OpenCL kernels do not cover."""
    return _host_kernel(name)(*args, **kw)


def fallback_kernel(name):
    """The wgpu kernel of an op with no OpenCL kernel: always the host fallback."""
    def k(*xs, **kw):
        return fallback(name, *xs, **kw)
    k.__name__ = f"wgpu_host_signal_{name}"
    return k
