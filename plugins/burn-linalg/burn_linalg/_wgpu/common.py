"""What every burn-linalg wgpu kernel family uses: the OpenCL program, launches, device copies,
the per-matrix failure flags and the host fallbacks.

The kernels' OpenCL C is package data (``burn_linalg/kernels/*.cl``): one program per dtype
(float32, float64) from ``common.cl`` and the family files in ``_CL_FILES``, parameterised by
``#define``s (``FP64``, ``WG``, ``MAXP``, ``QLR``) with sizes as run-time arguments, so PoCL
compiles it once per dtype and the disk cache keeps it. Everything of burn-wgpu goes through
its public kernel API, ``burn_wgpu.api`` (which does not import PyOpenCL until a device is used).
"""
from __future__ import annotations

import functools

import numpy as np
from burn_wgpu import api as wgpu

from .. import _flex
from .._errors import LinAlgError

WG = 64         # work-group size of the one-group-per-matrix kernels
MAXP = 512      # the Jacobi kernels keep a round's rotations in local memory: N <= 2 * MAXP
SWEEPS = 60     # a cap only: Jacobi converges quadratically, 6-12 sweeps at float64 for N = 128
QLR = 4         # rows of Z per work-item in ql_sweeps' rotations (independent chains)

#: the .cl files of the one program per dtype, in compile order (common.cl first: T, dot4, ...)
_CL_FILES = ("common.cl", "lu.cl", "qr.cl", "eigh.cl", "svd.cl")
_FP64 = {"float32": 0, "float64": 1}


@functools.lru_cache(maxsize=None)
def cl_text(*filenames: str) -> str:
    """The text of ``burn_linalg/kernels/<filename>`` (package data), the files joined in order;
    read once per process.

    >>> assert " diag(long total" in cl_text("gather.cl")
    """
    return "".join(wgpu.load_source("burn_linalg", f"kernels/{f}") for f in filenames)


def program_defines(dtype: str) -> dict:
    """The ``#define``s of the linalg program for ``dtype`` (float32 / float64).

    >>> program_defines("float64")
    {'FP64': 1, 'WG': 64, 'MAXP': 512, 'QLR': 4}
    """
    if dtype not in _FP64:
        raise ValueError(f"linalg wgpu: no OpenCL program for dtype {dtype} (float32, float64)")
    return {"FP64": _FP64[dtype], "WG": WG, "MAXP": MAXP, "QLR": QLR}


@functools.lru_cache(maxsize=None)
def _program(dc, dtype):
    # the api caches programs too, but by their 49 kB source: looking that up costs ~30 us a launch
    return wgpu.program(cl_text(*_CL_FILES), defines=program_defines(dtype), device=dc)


def kernel(dc, dtype, name):
    """The kernel ``name`` of ``dtype``'s linalg program on the device context ``dc`` (compiled
    once, cached in memory and on disk by the api).

    >>> from burn_wgpu import api as wgpu
    >>> assert kernel(wgpu.device_of(), "float32", "chol") is kernel(wgpu.device_of(), "float32", "chol")
    """
    return _program(dc, dtype).kernel(name)


def launch(dc, kern, n, args):
    """Launch ``kern`` over ``n`` work items on ``dc`` (the device's default work-group size).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> a, dc = wgpu.to_device(np.float32([[4, 0], [0, 9]])), wgpu.device_of()
    >>> out = wgpu.empty((2,), "float32", dc)
    >>> piv = wgpu.to_device([0, 1], dc, "int32")        # no row interchanges
    >>> launch(dc, kernel(dc, "float32", "ludet"), 1, (2, 1, a, piv, out))      # det from LU factors
    >>> assert wgpu.to_host(out)[0] == 36
    """
    wgpu.launch(kern, n, args, device=dc)


def launch_groups(dc, kern, nb, args):
    """Launch ``kern`` with one work-group of WG items per matrix.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> a, dc = wgpu.to_device(np.float32([[4, 0], [0, 9]])), wgpu.device_of()
    >>> launch_groups(dc, kernel(dc, "float32", "chol"), 1, (2, a, zeros_i32(dc, 1)))
    >>> assert wgpu.to_host(a).tolist() == [[2, 0], [0, 3]]
    """
    wgpu.launch(kern, nb * WG, args, local_size=WG, device=dc)


def native_ok(*xs) -> bool:
    """Whether every input is a float32 / float64 wgpu array (the dtypes with a native kernel).

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> assert native_ok(wgpu.zeros((2,), "float64")) and not native_ok(wgpu.zeros((2,), "int32"))
    """
    return all(wgpu.is_native(x) and x.dtype in _FP64 for x in xs)


def copy(x, shape=None):
    """A fresh contiguous device copy of ``x`` (broadcast to ``shape``): kernels work in place.

    >>> import numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> x = copy(wgpu.to_device(np.float32([1, 2])), (2, 2))
    >>> assert x.strides == (2, 1) and wgpu.to_host(x).tolist() == [[1, 2], [1, 2]]
    """
    if shape is not None and tuple(shape) != x.shape:
        x = wgpu.broadcast_to(x, shape)
    return wgpu.copy(x)


def nbatch(shape):
    """The number of matrices in a batch of ``shape``.

    >>> nbatch((2, 3)), nbatch(())
    (6, 1)
    """
    n = 1
    for s in shape:
        n *= s
    return n


def zeros_i32(dc, n):
    """A device int32 vector of max(n, 1) zeros (per-matrix failure flags).

    >>> from burn_wgpu import api as wgpu
    >>> assert wgpu.to_host(zeros_i32(wgpu.device_of(), 0)).tolist() == [0]
    """
    return wgpu.zeros((max(n, 1),), "int32", dc)


def raise_if(name, info, a_shape, dtype, nb):
    """Raise flex's LinAlgError for ``name`` when a matrix's flag in ``info`` is set.

    >>> import pytest
    >>> from burn_wgpu import api as wgpu
    >>> raise_if("inv", zeros_i32(wgpu.device_of(), 2), (2, 3, 3), "float32", 2)      # no flag: no error
    >>> with pytest.raises(LinAlgError, match="linalg::inv: singular matrix"):
    ...     raise_if("inv", wgpu.to_device([0, 1], dtype="int32"), (2, 3, 3), "float32", 2)
    """
    # a per-matrix status flag read back (a sync, a few bytes, not counted as a host transfer):
    # the error comes at the call, as on flex
    flags = wgpu.to_host(info, count=False)
    if nb and flags[:nb].any():
        raise LinAlgError(f"linalg::{name}: {'not positive definite' if name == 'cholesky' else 'singular matrix'} "
                          f"(input shape={tuple(a_shape)} dtype={dtype}, matrix {int(np.argmax(flags))} of the batch);"
                          f" {_flex._FIX.get(name, '')}".rstrip("; "))


def transposed(x):
    """``x`` with its last two axes swapped (a view).

    >>> from burn_wgpu import api as wgpu
    >>> assert transposed(wgpu.empty((4, 2, 3), "float32")).shape == (4, 3, 2)
    """
    nd = len(x.shape)
    return wgpu.permute(x, tuple(range(nd - 2)) + (nd - 1, nd - 2))


@functools.lru_cache(maxsize=None)
def fallback(name):
    """flex's kernel ``name`` run on host copies (download, LAPACK, upload; counted in the device's
    ``stats()``): what a wgpu kernel calls for inputs it has no native path for.

    >>> assert fallback("qr") is fallback("qr")
    """
    return wgpu.host_fallback(_flex.KERNELS[name], f"linalg_{name}")
