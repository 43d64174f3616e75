"""Reductions and scans on wgpu: the one reduction path, with its variants inside it.

Every reduction (a plain ``sum``, a fused group's reduction with its element-wise prologue,
epilogue and second pass) reaches the device through this package:

* :mod:`.generated` renders the kernel with :func:`burn.codegen.reduce.render_reduce` and picks
  the row / work-group / split variant by shape (``FusedMultiReduce``); groups its analysis
  declines run its one-work-item-per-row prologue kernel (``FusedReduce``);
* the per-dtype library (``cl/reduce.cl``: one work-item per contiguous row) takes what the
  generated kernels do not (float16, empty rows), the scans, and ``BURN_WGPU_REDUCE_LIBRARY=1``;
* :mod:`.complex` runs complex64 / complex128 reductions and scans (lexicographic order,
  per-part Kahan sums).
"""
from __future__ import annotations

import os

import numpy as np

from burn.codegen import OPENCL, sum_dtype
from burn.codegen.sources import with_defines
from burn.codegen.reduce import reduce_axes

from ...native import empty, is_complex, numel
from ..movement import contiguous, permute, reshape
from ..source import cl_source, register
from ..source import library_kernel as _lib
from . import complex as _complex
from .generated import FusedMultiReduce, FusedReduce, is_multi_reduce, one_launch_group


_REDUCE_OUT = {"sum": None, "prod": None, "max": "same", "min": "same", "argmax": "int64", "argmin": "int64",
               "any": "bool", "all": "bool"}



# True: plain reductions run the library's one-work-item-per-row kernels (after a contiguous
# copy) as before the generated variants; the benchmark flips it to compare
REDUCE_LIBRARY = os.environ.get("BURN_WGPU_REDUCE_LIBRARY") == "1"


class _ReduceGroup:
    """A plain reduction seen as a one-op reduce group: the generated kernels of
    :mod:`.generated` read it through its strides (no copy) and pick a row,
    work-group or split variant for its shape."""
    kind = "reduce"
    outputs = [0]

    def __init__(self, op, axes, keepdims):
        self.ops = [(op, {"axis": axes, "keepdims": keepdims}, [("in", 0)])]


_PLAIN: dict = {}


def _plain_reduce(op, axes, keepdims, fallback):
    key = (op, axes, bool(keepdims))
    r = _PLAIN.get(key)
    if r is None:
        r = _PLAIN[key] = FusedMultiReduce(_ReduceGroup(op, axes, bool(keepdims)), fallback)
        r.calls = 1 << 30           # no op-by-op warm-up: it is one op
    return r


def reduction(op):
    def k(x, *, axis, keepdims):
        axes = reduce_axes(axis, x.ndim)
        if is_complex(x.dtype):
            return _complex.reduce(op, x, axes, keepdims)
        if not REDUCE_LIBRARY and x.size and all(x.shape[d] for d in axes):
            return _plain_reduce(op, axes, keepdims,
                                 lambda x: (library_reduce(x, axes=axes, keepdims=keepdims),))(x)[0]
        return library_reduce(x, axes=axes, keepdims=keepdims)

    def library_reduce(x, *, axes, keepdims):
        # empty reductions and dtypes the generated kernels do not take (float16)
        dc = x.dc
        keep = [d for d in range(x.ndim) if d not in axes]
        moved = permute(x, axes=tuple(keep) + axes)
        src = contiguous(moved)
        M = numel([x.shape[d] for d in keep])
        R = numel([x.shape[d] for d in axes])
        od = _REDUCE_OUT[op]
        if od is None:
            od = sum_dtype(x.dtype)
        elif od == "same":
            od = x.dtype
        if keepdims:
            shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape))
        else:
            shape = tuple(x.shape[d] for d in keep)
        out = empty(dc, shape, od)
        dc.launch(_lib(dc, x.dtype, f"reduce_{op}"), M, [np.int32(M), np.int32(R), out.buf, src.buf,
                                                          np.int32(src.offset)])
        return out
    k.__name__ = f"wgpu_{op}"
    return k


def scan(op):
    def k(x, *, axis):
        dc = x.dc
        if axis is None:
            x = reshape(x, shape=(x.size,))
            axis = 0
        axis = int(axis) % max(x.ndim, 1)
        order = [d for d in range(x.ndim) if d != axis] + [axis]
        src = contiguous(permute(x, axes=tuple(order)))
        L = x.shape[axis] if x.ndim else 1
        M = x.size // max(L, 1) if L else 0
        if is_complex(x.dtype):
            out = _complex.scan(op, src, M, L)
        else:
            od = sum_dtype(x.dtype)
            out = empty(dc, src.shape, od)
            dc.launch(_lib(dc, x.dtype, f"scan_{op}"), M, [np.int32(M), np.int32(L), out.buf, src.buf,
                                                           np.int32(src.offset)])
        inv = tuple(int(i) for i in np.argsort(order))
        return permute(out, axes=inv)
    k.__name__ = f"wgpu_{op}"
    return k


def _library(dtype, fp64):
    # float16 reductions run the generated kernels (burn_wgpu.kernels.reduce.generated)
    if dtype == "float16":
        return ""
    return with_defines(cl_source("reduce.cl"), dict(T=OPENCL.ctype(dtype), IS_FLOAT=dtype.startswith("float")))


register("reduce", ("reduce_", "scan_"), _library)


def fused_reduction(group, fallback):
    """The runner of a fused reduce group (prologue, reduction, epilogue, second passes) as
    one launch, or None where ``fallback`` (``burn.codegen.segments``: a prologue kernel then
    the reduction) must run it."""
    if one_launch_group(group) is not None:
        # the generated reduce kernels (row / work-group / split variants by shape); groups
        # their analysis declines keep the one-work-item-per-row prologue kernel
        return FusedMultiReduce(group, FusedReduce(group, fallback))
    if is_multi_reduce(group):      # epilogues, second passes (mean, var, std)
        return FusedMultiReduce(group, fallback)
    return None
