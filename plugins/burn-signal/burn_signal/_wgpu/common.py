"""What the wgpu kernel modules of burn.signal share: dtypes, the OpenCL program, launch
arguments, the batch layout of strided operands and the host fallbacks.

burn_wgpu is imported inside the functions: it imports PyOpenCL, which this
package must not cost before a wgpu kernel runs.
"""
from __future__ import annotations

import functools

import numpy as np

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


@functools.lru_cache(maxsize=None)
def program_source(real: str) -> str:
    """The OpenCL program of every non-pass kernel in dtype ``real`` (one str object per dtype:
    the device's program cache hashes it once).

    >>> assert "__kernel void lfilt(" in program_source("float32")
    """
    return _sources.render(("common.cl", "signal.cl"), defines(CT[real]))


def kernel(dc, real, name):
    """Kernel ``name`` of the program in dtype ``real`` on device context ``dc`` (compiled once)."""
    return dc.kernel(program_source(real), name)


def i32(v):
    return np.int32(v)


def i64(v):
    return np.int64(v)


def u32(v):
    return np.uint32(v)


def scalar(real, v):
    """``v`` as a kernel argument of type T."""
    return np.float64(v) if real == "float64" else np.float32(v)


def numel(shape) -> int:
    """The number of elements of ``shape`` (1 for ``()``).

    >>> numel((2, 3)), numel(())
    (6, 1)
    """
    n = 1
    for s in shape:
        n *= s
    return n


def wtensor():
    """burn_wgpu's native array class (imported on first use)."""
    from burn_wgpu.tensor import WTensor
    return WTensor


def empty(dc, shape, dtype):
    """A new native array from ``dc``'s pool."""
    from burn_wgpu.tensor import empty as _empty
    return _empty(dc, shape, dtype)


def is_native(x) -> bool:
    """A wgpu array of a dtype the FFT computes natively (float64/complex128 need fp64)."""
    return isinstance(x, wtensor()) and x.dtype in REAL and (x.dtype in ("float32", "complex64") or x.dc.fp64)


def launch_rows(dc, kern, nb, m, inner, args):
    """Launch a kernel that writes (nb, m) rows as (outer, m, inner) (see ``out_item`` in signal.cl)."""
    if inner == 1:
        dc.launch(kern, nb * m, args)
    else:
        dc.launch2d(kern, (-(-inner // 16) * 16, -(-m // 16) * 16, nb // inner), (16, 16, 1), args)


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


def movement():
    """burn_wgpu's view and copy kernels (permute, broadcast_to, slice_, contiguous, download)."""
    from burn_wgpu import kernels
    return kernels


def download(x) -> np.ndarray:
    """A few values read back to the host (a sync): filter coefficients checked as flex checks them."""
    return movement().download(x)


@functools.lru_cache(maxsize=None)
def _host_kernel(name):
    from burn_wgpu.interop import host_fallback
    return host_fallback(_flex.KERNELS[name], f"signal_{name}")


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
