"""Reductions and scans on cuda: the one reduction path, with its variants inside it.

Plain reductions and scans run CuPy's (CUB) kernels, accumulating integers in int64 and
half types in float32 (:func:`sum_` ... :func:`cumprod`). Reduce groups of the fuser run
as generated kernels (:class:`FusedReduce`): one launch, or two per pass for a split.

A reduce group (an element-wise prologue, reductions over the same axes, row-level ops
between and after them: ``mean``'s scale, ``var``'s second pass, logsumexp) runs as the CUDA
rendering of :func:`burn.codegen.reduce.render_reduce`, the kernels burn-wgpu runs in OpenCL,
instead of a prologue kernel followed by CuPy's (CUB) reduction and epilogue kernels: the
prologue's values are never written, a second pass re-reads the input instead of a
temporary, and the whole group is one launch (two per pass for a split).

What runs is planned by :mod:`burn.codegen.reduce_run` (shared with burn-wgpu): the
variant, the index struct, the argument list and the launch geometry. This module adds
CUDA's part: NVRTC modules through the device's :class:`~burn_cuda.runtime.DeviceContext`,
CuPy's calling convention (the index struct as a size-one structured array, 32-bit int
scalars, float16/bfloat16 parameters as float32) and burn's pool and stream.

The variant (:data:`burn.codegen.reduce_run.CUDA_TUNING`, SM count from the device):

* **row**, one thread per row: short rows (< 32), or many rows (>= 256 per SM) that are
  shorter than 256 or whose reduced axis is not the contiguous one (a warp's loads then
  cover adjacent rows);
* **group**, one 256-thread block per row (strided loads, a shared-memory tree): many long
  rows along the contiguous axis, or fewer rows than 8 blocks per SM;
* **split**, S blocks per row writing partials, then a block per row combining them: fewer
  rows than 8 blocks per SM, each of >= 16384 elements (a full ``x.sum()``).

float16/bfloat16 are loaded into float and accumulated in float32 (Kahan sums); their
reduced values are rounded to the dtype once, as an op-by-op run sees them. Complex values
are not rendered: their groups run op by op. Deterministic: no atomics.

Example (no GPU needed to render):
    >>> from burn.fusion import FusedGroup
    >>> import burn
    >>> g = FusedGroup("reduce", [("exp", {}, [("in", 0)]), ("sum", {"axis": (1,), "keepdims": False}, [("op", 0)])],
    ...                [burn.TensorMeta((8, 4096), burn.float16)], [1], [burn.TensorMeta((8,), burn.float16)])
    >>> b = source(g, [(8, 4096)], ["float16"])
    >>> assert "__half" in b.src and "float acc0 = 0, comp0 = 0;" in b.src
"""
from __future__ import annotations

import os

from burn.codegen import CUDA
from burn.codegen.reduce_run import CUDA_TUNING, ReduceRunner, build

import numpy as np

from ..native import dtype_name, numpy_dtype
from .elementwise import _broadcast_strides, _cp, _dc_of, scalar_args, struct_dtype

# "row", "group" or "split" pins the variant (tests, benchmarks); unset: chosen by shape
FORCE = os.environ.get("BURN_CUDA_REDUCE") or None
L = 256             # threads per block of the group/split kernels (and of the row kernel)
LAST_VARIANT = [None]
_UNITS: dict = {}


def source(group, shapes, dtypes):
    """The :class:`burn.codegen.reduce_run.Built` (analysis and CUDA source) that burn-cuda
    runs ``group`` with for these input shapes/dtypes, or None when the kernels cannot take
    it. What a GPU compiles, and what tests/test_cuda_reduce_fused.py compiles with nvcc.
    (Example in the module docstring.)"""
    return build(group, [tuple(s) for s in shapes], list(dtypes), CUDA, L)


def sm_count(dc) -> int:
    """The device's multiprocessor count (the ``units`` of the variant choice).

    Example (on a GPU)::

        assert sm_count(burn_cuda.runtime.context(0)) == 132      # an H200
    """
    n = _UNITS.get(dc.index)
    if n is None:
        props = dc.cp.cuda.runtime.getDeviceProperties(dc.index)
        n = _UNITS[dc.index] = int(props["multiProcessorCount"]) or 1
    return n


class FusedReduce(ReduceRunner):
    """A reduce group on cuda as the generated reduce kernels (see the module doc); ``fallback``
    runs the groups (and shapes) they cannot take.

    Example (on a GPU; ``burn_cuda.fused.compile_group`` builds these for the planner)::

        FORCE = "split"                          # pin a variant for a benchmark
        burn.sum(x * 2.0).item()                 # one FusedReduce: two launches
    """

    dialect = CUDA
    tuning = CUDA_TUNING
    fuse_after_var = "BURN_CUDA_FUSE_AFTER"
    name = "cuda_fused_reduce"

    def __call__(self, *inputs):
        with _dc_of(inputs).scope():        # burn's stream and pool for the results and scratch
            return super().__call__(*inputs)

    def force(self):
        return FORCE

    def note(self, plan):
        LAST_VARIANT[0] = (plan.variant, plan.S)

    def context_of(self, inputs):
        return _dc_of(inputs)

    def dtype_of(self, x):
        return dtype_name(x)

    def local_size(self, dc):
        return L

    def row_block(self, dc):
        return L

    def blocked(self, dc):
        return False        # a warp's threads read adjacent elements: strided shares coalesce

    def units(self, dc):
        return sm_count(dc)

    def layout(self, x, shape):
        return 0, _broadcast_strides(x, shape)      # a CuPy array points at its first element

    def empty(self, dc, shape, dtype):
        return dc.cp.empty(tuple(int(s) for s in shape), numpy_dtype(dtype))

    def struct_arg(self, words):        # CuPy passes a size-one numpy array's bytes as a struct
        return words.view(struct_dtype(words.size))

    def buf(self, x):
        return x

    def scalar_args(self, params):
        return scalar_args(params)

    def launch(self, dc, src, step, args):
        dc.launch(dc.function(src, step.kernel), step.grid * step.block, args, block=step.block)


def _acc(x):
    return np.uint64 if x.dtype.kind == "u" else np.int64 if x.dtype.kind in "bi" else None


def _wide(x):
    """bfloat16 reduces in float32 (its 8-bit mantissa would drop most of a long sum);
    float16 is left to CuPy, which accumulates it in float32 already."""
    return x.astype(np.float32) if dtype_name(x) == "bfloat16" else x


def _back(r, x):
    return r.astype(x.dtype) if r.dtype != x.dtype and dtype_name(x) == "bfloat16" else r


def sum_(x, *, axis, keepdims):
    return _back(_cp().sum(_wide(x), axis=axis, keepdims=keepdims, dtype=_acc(x)), x)


def prod(x, *, axis, keepdims):
    return _back(_cp().prod(_wide(x), axis=axis, keepdims=keepdims, dtype=_acc(x)), x)


def max_(x, *, axis, keepdims):
    return _back(_cp().max(_wide(x), axis=axis, keepdims=keepdims), x)


def min_(x, *, axis, keepdims):
    return _back(_cp().min(_wide(x), axis=axis, keepdims=keepdims), x)


def any_(x, *, axis, keepdims):
    return _cp().any(_wide(x), axis=axis, keepdims=keepdims)


def all_(x, *, axis, keepdims):
    return _cp().all(_wide(x), axis=axis, keepdims=keepdims)


def _arg(fn):
    def k(x, *, axis, keepdims):
        r = fn(_wide(x), axis=axis)
        if keepdims:
            r = r.reshape(tuple(1 for _ in x.shape) if axis is None else
                          tuple(1 if d == axis % x.ndim else s for d, s in enumerate(x.shape)))
        return r.astype(np.int64, copy=False)
    k.__name__ = fn.__name__
    return k


def argmax(x, *, axis, keepdims):
    return _arg(_cp().argmax)(x, axis=axis, keepdims=keepdims)


def argmin(x, *, axis, keepdims):
    return _arg(_cp().argmin)(x, axis=axis, keepdims=keepdims)


def cumsum(x, *, axis):
    return _back(_cp().cumsum(_wide(x), axis=axis, dtype=_acc(x)), x)


def cumprod(x, *, axis):
    return _back(_cp().cumprod(_wide(x), axis=axis, dtype=_acc(x)), x)
