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

from burn.codegen import ELEMENTWISE_OPS, MAX_DIMS, OPENCL, op_params
from burn.codegen.reduce import REDUCTIONS, index_words, render_reduce
from burn.codegen.reduce import analyze as _analyze
from burn.codegen.segments import struct_key

from .kernels import _broadcast_strides, _scalar_args
from .tensor import empty, numel

_SRC: dict = {}


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
# One work-item per row is right for many rows (every item has a row, no barriers); few long
# rows get a work-group each (a local-memory tree), and very few very long rows several
# work-groups each (partials, then a small combine launch). ``FORCE`` (or BURN_WGPU_REDUCE)
# pins a variant, for tests and benchmarks.

FORCE = os.environ.get("BURN_WGPU_REDUCE") or None     # "row", "group" or "split"
LAST_VARIANT = [None]        # the latest launch's (variant, S), for benchmarks and tests
SPLIT_MIN = 1 << 16          # elements per work-group below which a split costs more than it saves
BLOCKED = os.environ.get("BURN_WGPU_REDUCE_BLOCKED", "1") == "1"


def local_size(dc) -> int:
    """Work-group size of the parallel variants: 64 on CPU devices (a work-group is one core's
    loop; more items only lengthen the tree), the device's size (<= 256) on GPUs."""
    ls = 64 if dc.is_cpu else min(256, dc.local_size)
    return 1 << (max(ls, 1).bit_length() - 1)


def choose(M: int, R: int, units: int, is_cpu: bool, can_split: bool = True, force=None):
    """``(variant, S)``: "row" (one work-item per row), "group" (one work-group per row) or
    "split" (S work-groups per row, then a combine launch) for M rows of length R on a device
    with ``units`` compute units.

    >>> assert choose(16384, 512, 2, True) == ("row", 1)          # many short rows
    >>> assert choose(8, 1 << 20, 2, True) == ("group", 1)        # few long rows
    >>> v, s = choose(1, 1 << 24, 2, True)
    >>> assert v == "split" and s > 1                              # a full reduction
    >>> assert choose(1, 1 << 24, 2, True, can_split=False) == ("group", 1)
    """
    force = force or FORCE
    if force == "row":
        return "row", 1
    if force in ("group", "split"):
        if force == "split" and can_split:
            return "split", max(2, min(64, -(-R // 64)))
        return "group", 1
    # rows enough for a full work-group of rows per unit: a GPU unit needs a few hundred items
    # in flight, and PoCL runs each work-group (256 rows) on one core, so 32 rows of 1M would
    # all land on one core
    fill = units * 256
    if M >= fill or R < 64:
        return "row", 1
    groups = units * 4
    if M >= groups or not can_split or R < 2 * SPLIT_MIN:
        return "group", 1
    S = min(-(-groups // M), R // SPLIT_MIN)
    return ("split", S) if S > 1 else ("group", 1)


class FusedMultiReduce:
    """Runs a reduce group with epilogues and further passes as one kernel (see the module doc)."""

    def __init__(self, group, fallback):
        self.group = group
        self.fallback = fallback
        self.calls = 0
        self.built = {}
        self.__name__ = "wgpu_fused_multi_reduce"

    def __call__(self, *inputs):
        from burn.codegen.segments import LARGE
        from .fused import _fuse_after
        g = self.group
        self.calls += 1
        shapes = [tuple(x.shape) for x in inputs]
        dtypes = [x.dtype for x in inputs]
        dc = inputs[0].dc
        key = (tuple(shapes), tuple(dtypes), dc.index)
        b = self.built.get(key)
        if b is None:
            b = self.built[key] = self._build(shapes, dtypes, dc)
        if b is False:
            return self.fallback(*inputs)
        sp, src, params, scal, views, rviews, pouts, routs, can_split = b
        if self.calls <= _fuse_after() and numel(sp.F) < LARGE:
            return self.fallback(*inputs)
        F, axes = sp.F, sp.axes
        keep = [d for d in range(len(F)) if d not in axes]
        kshape = [F[d] for d in keep if F[d] != 1]
        ashape = [F[d] for d in axes if F[d] != 1]
        R = numel([F[d] for d in axes])
        if len(kshape) > MAX_DIMS or len(ashape) > MAX_DIMS or R == 0:
            return self.fallback(*inputs)
        res = {j: empty(dc, sp.shape[j], sp.types[j]) for j in routs}
        res.update({j: empty(dc, F, sp.types[j]) for j in pouts})
        result = tuple(res[j] for j in g.outputs)
        if sp.M == 0:
            return result
        vt = [inputs[k] for k in views] + [res[j] for j in pouts] + [inputs[k] for k in rviews]
        v = np.zeros(index_words(len(vt)), np.int32)
        v[0], v[1] = len(kshape), len(ashape)
        v[2:2 + len(kshape)] = kshape
        v[2 + MAX_DIMS:2 + MAX_DIMS + len(ashape)] = ashape
        base = 2 + 2 * MAX_DIMS
        n_full = len(views) + len(pouts)
        for q, x in enumerate(vt):
            o = base + q * (1 + 2 * MAX_DIMS)
            v[o] = x.offset
            if q < n_full:
                st = _broadcast_strides(x, F)
                ks = [st[d] for d in keep if F[d] != 1]
                as_ = [st[d] for d in axes if F[d] != 1]
            else:           # read per row: its strides along the kept dims of its row shape
                rs = sp.use[rviews[q - n_full]]
                st = _broadcast_strides(x, rs)
                kst = [st[d] for d in keep] if len(rs) == len(F) else st
                ks = [t for t, d in zip(kst, keep) if F[d] != 1]
                as_ = []
            v[o + 1:o + 1 + len(ks)] = ks
            v[o + 1 + MAX_DIMS:o + 1 + MAX_DIMS + len(as_)] = as_
        pv = []
        for j, (op, attrs, _) in enumerate(g.ops):
            if op not in REDUCTIONS:
                pv += op_params(op, attrs, sp.types[j])
        units = getattr(dc.device, "max_compute_units", 1) or 1
        variant, S = choose(sp.M, R, units, dc.is_cpu, can_split)
        self.last_variant = LAST_VARIANT[0] = (variant, S)
        M = sp.M
        head = [v.view(np.dtype((np.void, v.nbytes)))[0], np.int32(M), np.int32(R), np.int32(S)]
        rest = [res[j].buf for j in routs] + [res[j].buf for j in pouts] + [x.buf for x in inputs]
        rest += [np.int32(inputs[k].offset) for k in scal] + _scalar_args(pv)
        if variant == "row":
            dc.launch(dc.kernel(src, "fmred"), M, head + rest)
            return result
        L = local_size(dc)
        if variant == "group":
            dc.launch(dc.kernel(src, "fmred_grp"), M * L, head + rest, local=L)
            return result
        # partials of one pass at a time (8 bytes fit every accumulator type), each pass's row
        # results; the tensors stay referenced until every launch is queued (a dropped tensor's
        # buffer goes back to the pool and the next allocation would share it)
        held = [empty(dc, (M * S,), "int64")]
        if any(g.ops[j][0] in ("max", "min", "argmax", "argmin") for j in sp.reds):
            held.append(empty(dc, (M * S,), "int64"))
        held += [empty(dc, (M,), sp.types[j]) for j in sp.reds]
        part = [t.buf for t in held]
        for pp in range(len(sp.reds)):
            dc.launch(dc.kernel(src, f"fmred_part{pp}"), M * S * L, head + part + rest, local=L)
            dc.launch(dc.kernel(src, f"fmred_comb{pp}"), M * L, head + part + rest, local=L)
        del held
        return result

    def _build(self, shapes, dtypes, dc):
        g = self.group
        try:
            sp = _analyze(g, shapes, dtypes)
        except (KeyError, ValueError):       # shapes that do not broadcast, an unknown op
            return False
        if sp is None:
            return False
        # the source depends on the structure, dtypes and where each value lives, not on sizes
        L, blocked = local_size(dc), bool(dc.is_cpu) and BLOCKED
        skey = (struct_key(g.ops, dtypes, g.outputs), tuple(sorted(sp.level.items())),
                tuple(sorted((k, u == "loop") for k, u in sp.use.items())), L, blocked)
        hit = _SRC.get(skey)
        if hit is None:
            try:
                hit = _SRC[skey] = render_reduce(g.ops, g.outputs, sp, dtypes, OPENCL, L=L, blocked=blocked)
            except KeyError:
                return False
        return (sp,) + hit
