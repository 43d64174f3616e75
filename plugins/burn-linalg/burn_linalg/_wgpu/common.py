"""What every burn-linalg wgpu kernel family uses: the OpenCL program, launches, device copies,
the per-matrix failure flags and the host fallbacks.

The kernels' OpenCL C is package data (``burn_linalg/kernels/*.cl``): one program per dtype
(float32, float64) from ``common.cl`` and the family files in ``_CL_FILES``, parameterised by
``#define``s (``FP64``, ``WG``, ``MAXP``, ``QLR``) with sizes as run-time arguments, so PoCL
compiles it once per dtype and the disk cache keeps it.
"""
from __future__ import annotations

import functools
import importlib.resources

import numpy as np

from .. import _flex
from .._errors import LinAlgError

WG = 64         # work-group size of the one-group-per-matrix kernels
MAXP = 512      # the Jacobi kernels keep a round's rotations in local memory: N <= 2 * MAXP
SWEEPS = 60     # a cap only: Jacobi converges quadratically, 6-12 sweeps at float64 for N = 128
QLR = 4         # rows of Z per work-item in ql_sweeps' rotations (independent chains)

#: the .cl files of the one program per dtype, in compile order (common.cl first: T, dot4, ...)
_CL_FILES = ("common.cl", "lu.cl", "qr.cl", "eigh.cl", "svd.cl")
_FP64 = {"float32": 0, "float64": 1}


def cl_source(filename: str, defines: dict) -> str:
    """``burn_linalg/kernels/<filename>`` with a ``#define NAME VALUE`` line per entry prepended.

    >>> src = cl_source("gather.cl", {"E": "uint"})
    >>> assert src.startswith("#define E uint\\n") and " diag(long total" in src
    """
    return "".join(f"#define {k} {v}\n" for k, v in sorted(defines.items())) + _file_text(filename)


@functools.lru_cache(maxsize=None)
def _file_text(filename: str) -> str:
    # read once per process: the sources are looked up on every launch
    return importlib.resources.files("burn_linalg").joinpath("kernels", filename).read_text(encoding="utf-8")


@functools.lru_cache(maxsize=None)
def program_source(dtype: str) -> str:
    """The OpenCL C of the linalg program for ``dtype`` (float32 / float64).

    >>> src = program_source("float64")
    >>> assert src.startswith("#define FP64 1\\n") and " tridiag_ql(int N" in src
    """
    if dtype not in _FP64:
        raise ValueError(f"linalg wgpu: no OpenCL program for dtype {dtype} (float32, float64)")
    defines = {"FP64": _FP64[dtype], "WG": WG, "MAXP": MAXP, "QLR": QLR}
    return cl_source(_CL_FILES[0], defines) + "".join(cl_source(f, {}) for f in _CL_FILES[1:])


def kernel(dc, dtype, name):
    """The compiled kernel ``name`` of ``dtype``'s program on the device context ``dc``."""
    return dc.kernel(program_source(dtype), name)


def native_ok(*xs) -> bool:
    """Whether every input is a float32 / float64 wgpu tensor (the dtypes with a native kernel)."""
    from burn_wgpu.tensor import WTensor
    return all(isinstance(x, WTensor) and x.dtype in _FP64 for x in xs)


def copy(x, shape=None):
    """A fresh contiguous device copy of ``x`` (broadcast to ``shape``): kernels work in place."""
    from burn_wgpu import kernels as wk
    if shape is not None and tuple(shape) != x.shape:
        x = wk.broadcast_to(x, shape=shape)
    return wk.elementwise("positive")(x)


def nbatch(shape):
    """The number of matrices in a batch of ``shape``.

    >>> nbatch((2, 3)), nbatch(())
    (6, 1)
    """
    n = 1
    for s in shape:
        n *= s
    return n


def i32(v):
    return np.int32(v)


def zeros_i32(dc, n):
    """A device int32 vector of max(n, 1) zeros (per-matrix failure flags)."""
    from burn_wgpu.tensor import empty
    import pyopencl as cl
    t = empty(dc, (max(n, 1),), "int32")
    cl.enqueue_fill_buffer(dc.queue, t.buf, np.int32(0), 0, max(n, 1) * 4)
    return t


def raise_if(name, info, a_shape, dtype, nb):
    """Raise flex's LinAlgError for ``name`` when a matrix's flag in ``info`` is set."""
    # a per-matrix status flag read back (a sync, a few bytes): the error comes at the call, as on flex
    flags = np.empty(max(nb, 1), np.int32)
    info.dc.download(info.buf, 0, flags)
    if nb and flags[:nb].any():
        raise LinAlgError(f"linalg::{name}: {'not positive definite' if name == 'cholesky' else 'singular matrix'} "
                          f"(input shape={tuple(a_shape)} dtype={dtype}, matrix {int(np.argmax(flags))} of the batch);"
                          f" {_flex._FIX.get(name, '')}".rstrip("; "))


def launch_groups(dc, kern, nb, args):
    """Launch ``kern`` with one work-group of WG items per matrix."""
    dc.launch(kern, nb * WG, args, local=WG)


def transposed(x):
    """``x`` with its last two axes swapped (a view)."""
    from burn_wgpu import kernels as wk
    nd = len(x.shape)
    return wk.permute(x, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))


@functools.lru_cache(maxsize=None)
def fallback(name):
    """flex's kernel ``name`` run on host copies (download, LAPACK, upload; counted in the device's
    ``stats()``): what a wgpu kernel calls for inputs it has no native path for.

    >>> assert fallback("qr") is fallback("qr")
    """
    # burn_wgpu is imported on the first fallback, not when this module is imported
    from burn_wgpu.interop import host_fallback
    return host_fallback(_flex.KERNELS[name], f"linalg_{name}")
