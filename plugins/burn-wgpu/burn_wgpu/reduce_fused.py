"""Reduce groups (and plain reductions) as generated kernels on wgpu: one launch, or two for a split.

``burn.mean`` is ``sum(x) * (1/n)`` and ``burn.var`` is ``sum((x - mean(x)) ** 2) * (1/(n - c))``
in core; a planner that lets a reduction keep an element-wise epilogue (ops on the reduced
value) and a second pass (ops over the reduced input that use the reduced value, closed by
another reduction over the same axes) hands such a group to the backend whole. This module
runs it as one launch (the kernels are :func:`burn.codegen.reduce.render_reduce`'s): each
output row is owned by one work-item, or by one work-group whose items share the row and
combine in a local-memory tree (few long rows), or by several work-groups writing partials
that a second launch combines (very few very long rows; two launches per pass): :func:`choose`
picks by rows, row length and the device's compute units. The row's owner

* evaluates the *row-level* ops (reduced values, scalars) in registers between passes;
* walks the reduced coordinates once per pass, evaluating that pass's *loop-level* ops
  (recomputing earlier passes' loop values instead of storing them) and folding the value
  into the pass's accumulator (Kahan-compensated float sums, as the plain reduction).

var therefore runs the two-pass algorithm inside the kernel (the mean first, then the sum of
squared deviations): sound for data with a large mean, unlike ``E[x²] - E[x]²``.
Plain reductions (``burn_wgpu.kernels.reduction``) run here too, as one-op groups read
through their strides. Groups it cannot take (float16/complex values, different axes per
reduction, a reduced value that would broadcast along the reduced axes without keepdims, ...)
return None from the analysis (:func:`burn.codegen.reduce.analyze`) and keep the segmented
path (one kernel per run of ops).
"""
from __future__ import annotations

import os

import numpy as np

from burn.codegen import ELEMENTWISE_OPS, OPENCL
from burn.codegen.reduce import REDUCTIONS
from burn.codegen.reduce import analyze as _analyze
from burn.codegen.reduce_run import OPENCL_TUNING, ReduceRunner
from burn.codegen.reduce_run import choose as _choose

from .kernels import _broadcast_strides, _scalar_args
from .tensor import empty


def is_multi_reduce(group) -> bool:
    """True for a reduce group this module is for: its reduction is not its last op, or it has
    several reductions, or a reduction reads a group input directly (no prologue).

    >>> g = type("G", (), {"kind": "reduce", "ops": [("sum", {"axis": None, "keepdims": False}, [("in", 0)]),
    ...                                              ("mul", {}, [("op", 0), ("in", 1)])]})()
    >>> assert is_multi_reduce(g)
    """
    ops = group.ops
    if group.kind != "reduce" or not ops:
        return False
    reds = [j for j, (op, _, _) in enumerate(ops) if op in REDUCTIONS]
    if not reds or any(op not in REDUCTIONS and op not in ELEMENTWISE_OPS for op, _, _ in ops):
        return False
    return len(reds) > 1 or reds[-1] != len(ops) - 1 or ops[reds[0]][2][0][0] == "in"


# -- which kernel shape runs a reduction -----------------------------------------------------
# burn.codegen.reduce_run.choose with OPENCL_TUNING: one work-item per row for many rows, a
# work-group per row for few long rows, several work-groups per row (partials, then a small
# combine launch) for very few very long rows. ``FORCE`` (or BURN_WGPU_REDUCE) pins a
# variant, for tests and benchmarks.

FORCE = os.environ.get("BURN_WGPU_REDUCE") or None     # "row", "group" or "split"
LAST_VARIANT = [None]        # the latest launch's (variant, S), for benchmarks and tests
BLOCKED = os.environ.get("BURN_WGPU_REDUCE_BLOCKED", "1") == "1"


def local_size(dc) -> int:
    """Work-group size of the parallel variants: 64 on CPU devices (a work-group is one core's
    loop; more items only lengthen the tree), the device's size (<= 256) on GPUs."""
    ls = 64 if dc.is_cpu else min(256, dc.local_size)
    return 1 << (max(ls, 1).bit_length() - 1)


def choose(M: int, R: int, units: int, is_cpu: bool, can_split: bool = True, force=None):
    """``(variant, S)`` for M rows of length R on a device with ``units`` compute units
    (:func:`burn.codegen.reduce_run.choose` with wgpu's thresholds; ``FORCE`` when ``force``
    is None). ``is_cpu`` is part of the signature for callers; the thresholds serve both.

    >>> assert choose(16384, 512, 2, True) == ("row", 1)          # many short rows
    >>> assert choose(8, 1 << 20, 2, True) == ("group", 1)        # few long rows
    >>> v, s = choose(1, 1 << 24, 2, True)
    >>> assert v == "split" and s > 1                              # a full reduction
    >>> assert choose(1, 1 << 24, 2, True, can_split=False) == ("group", 1)
    """
    return _choose(M, R, units, can_split, force or FORCE, OPENCL_TUNING)


class FusedMultiReduce(ReduceRunner):
    """Runs a reduce group with epilogues and further passes as one kernel (see the module doc)."""

    dialect = OPENCL
    tuning = OPENCL_TUNING
    fuse_after_var = "BURN_WGPU_FUSE_AFTER"
    name = "wgpu_fused_multi_reduce"

    def force(self):
        return FORCE

    def analyze(self, group, shapes, dtypes, d):
        return _analyze(group, shapes, dtypes)     # the module's name: tests replace it

    def note(self, plan):
        LAST_VARIANT[0] = (plan.variant, plan.S)

    def context_of(self, inputs):
        return inputs[0].dc

    def dtype_of(self, x):
        return x.dtype

    def local_size(self, dc):
        return local_size(dc)

    def row_block(self, dc):
        return dc.local_size

    def blocked(self, dc):
        return bool(dc.is_cpu) and BLOCKED

    def units(self, dc):
        return getattr(dc.device, "max_compute_units", 1) or 1

    def layout(self, x, shape):
        return x.offset, _broadcast_strides(x, shape)

    def empty(self, dc, shape, dtype):
        return empty(dc, shape, dtype)

    def struct_arg(self, words):
        return words.view(np.dtype((np.void, words.nbytes)))[0]

    def buf(self, x):
        return x.buf

    def scalar_args(self, params):
        return _scalar_args(params)

    def launch(self, dc, src, step, args):
        dc.launch(dc.kernel(src, step.kernel), step.grid * step.block, args, local=step.block)
