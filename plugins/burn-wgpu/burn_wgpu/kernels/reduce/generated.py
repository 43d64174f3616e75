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
import re

import numpy as np

from burn.codegen import (ELEMENTWISE_OPS, MAX_DIMS, OPENCL, op_params, out_dtype, program_source, render_group,
                          sum_dtype)
from burn.codegen.reduce import REDUCTIONS, kahan_step, reduce_axes
from burn.codegen.segments import LARGE, fuse_after, struct_key as _struct_key
from burn.codegen.reduce import analyze as _analyze
from burn.codegen.reduce_run import OPENCL_TUNING, ReduceRunner
from burn.codegen.reduce_run import choose as _choose

from ...native import broadcast_strides as _broadcast_strides
from ...native import scalar_args as _scalar_args
from ...native import empty, numel
from ..elementwise import _bshape, _name


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


# -- reduction with its element-wise prologue: ONE kernel -------------------------------------
# fused_reduction hands these groups to FusedMultiReduce first (row / work-group / split
# variants); this one-work-item-per-row kernel (FusedReduce) runs the groups its analysis declines.
# Each work-item owns one output element: it walks the reduced coordinates, reads every
# prologue input through its own strides (broadcast = stride 0, transposed views as they are),
# evaluates the chain in registers and folds the value into the accumulator. The prologue's
# values are never written to memory (one launch instead of prologue kernel + reduction).

FUSED_REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")


_BODY = re.compile(r"^  \S+ v\d+ = .*;$")


def _red_words(n_in):
    # [nk, na, kshape[MAX_DIMS], ashape[MAX_DIMS], per input (off, kstrides[MAX_DIMS], astrides[MAX_DIMS])]
    return 2 + 2 * MAX_DIMS + n_in * (1 + 2 * MAX_DIMS)


def _reduce_source(op, sub_ops, in_dtypes, red_arg, vt, od, pouts=(), pout_dtypes=()):
    """OpenCL C of kernel ``fred`` reducing op ``red_arg`` of the chain ``sub_ops`` with ``op``;
    the values of ops ``pouts`` (prologue results used elsewhere) are written out too."""
    rk = render_group("fred_chain", sub_ops, list(in_dtypes), [red_arg], OPENCL)
    body = [ln for ln in rk.source.splitlines() if _BODY.match(ln)]
    n_in = len(in_dtypes)
    n_v = n_in + len(pouts)          # views: the inputs, then the written prologue values
    W = _red_words(n_v)
    c = OPENCL.ctype
    V, O = c(vt), c(od)
    isf = vt.startswith("float")
    nan = (lambda v: f"isnan({v})") if isf else (lambda v: "0")
    base = 2 + 2 * MAX_DIMS
    params = [f"burn_red{W} p", "const int M", "const int R", f"__global {O}* out"]
    params += [f"__global {c(t)}* pout{q}" for q, t in enumerate(pout_dtypes)]
    params += [f"__global const {c(t)}* in{k}" for k, t in enumerate(in_dtypes)]
    params += [f"const {c(d)} p{i}" for i, d in enumerate(rk.param_dtypes)]
    L = [f"typedef struct {{ int v[{W}]; }} burn_red{W};",
         f"__kernel void fred({', '.join(params)}) {{",
         "  int m = get_global_id(0); if (m >= M) return;",
         "  int nk = p.v[0], na = p.v[1];"]
    for k in range(n_v):
        L.append(f"  int b{k} = p.v[{base + k * (1 + 2 * MAX_DIMS)}];")
    L += ["  int r = m;", f"  for (int d = {MAX_DIMS - 1}; d >= 0; --d) if (d < nk) {{",
          "    int s = p.v[2 + d]; int cc = r % s; r /= s;"]
    for k in range(n_v):
        L.append(f"    b{k} += cc * p.v[{base + k * (1 + 2 * MAX_DIMS) + 1} + d];")
    L.append("  }")
    if op in ("sum", "prod"):
        A = V if isf else "long"
        L.append(f"  {A} acc = {'0' if op == 'sum' else '1'}, comp = 0;")
    elif op in ("any", "all"):
        L.append(f"  uchar acc = {'0' if op == 'any' else '1'};")
    else:
        L.append(f"  {V} best = 0; long bi = 0;")
    L += ["  for (int q = 0; q < R; ++q) {"]
    L += [f"    int j{k} = b{k};" for k in range(n_v)]
    L += ["    if (na == 1) {"]
    L += [f"      j{k} += q * p.v[{base + k * (1 + 2 * MAX_DIMS) + 1 + MAX_DIMS}];" for k in range(n_v)]
    L += ["    } else {", "      int r2 = q;",
          f"      for (int d = {MAX_DIMS - 1}; d >= 0; --d) if (d < na) {{",
          f"        int s = p.v[{2 + MAX_DIMS} + d]; int cc = r2 % s; r2 /= s;"]
    L += [f"        j{k} += cc * p.v[{base + k * (1 + 2 * MAX_DIMS) + 1 + MAX_DIMS} + d];" for k in range(n_v)]
    L += ["      }", "    }"]
    L += [f"    {c(t)} x{k} = in{k}[j{k}];" for k, t in enumerate(in_dtypes)]
    L += ["  " + ln for ln in body]
    L += [f"    pout{q}[j{n_in + q}] = v{j};" for q, j in enumerate(pouts)]
    v = f"v{red_arg}"
    if op == "sum" and isf:      # Kahan, as the plain reduction: long rows stay within tolerance
        L.append("    " + kahan_step(V, "acc", "comp", v))
    elif op == "sum":
        L.append(f"    acc += {v};")
    elif op == "prod":
        L.append(f"    acc *= {v};")
    elif op == "any":
        L.append(f"    if ({v} != 0) acc = 1;")
    elif op == "all":
        L.append(f"    if ({v} == 0) acc = 0;")
    else:
        cmp = ">" if op.endswith("max") else "<"
        L.append(f"    if (q == 0 || (!({nan('best')}) && ({nan(v)} || {v} {cmp} best))) {{ best = {v}; bi = q; }}")
    L.append("  }")
    if op in ("sum", "prod", "any", "all"):
        L.append(f"  out[m] = ({O})acc;")
    elif op.startswith("arg"):
        L.append("  out[m] = bi;")
    else:
        L.append("  out[m] = best;")
    L.append("}")
    return program_source([rk], OPENCL, extra="").replace(rk.source, "") + "\n" + "\n".join(L)


_RED_SRC: dict = {}


class FusedReduce:
    """A reduce group (element-wise prologue, then one reduction) as one kernel."""

    def __init__(self, group, fallback):
        self.group = group
        self.fallback = fallback
        self.calls = 0
        self.built = None
        self.__name__ = "wgpu_fused_reduce"

    def __call__(self, *inputs):
        g = self.group
        self.calls += 1
        op, attrs, args = g.ops[-1]
        pro = g.ops[:-1]
        shape = _bshape([x.shape for x in inputs] + [tuple(a["shape"]) for o, a, _ in pro if o == "full"])
        if self.calls <= fuse_after("BURN_WGPU_FUSE_AFTER") and numel(shape) < LARGE:
            return self.fallback(*inputs)
        if self.built is None:
            self.built = self._build(inputs)
        if self.built is False:
            return self.fallback(*inputs)
        src, od, param_ops, pouts, pdts = self.built
        xs = list(inputs)
        dc = xs[0].dc
        nd = len(shape)
        axes = reduce_axes(attrs.get("axis"), nd)
        keep = [d for d in range(nd) if d not in axes]
        kshape = [shape[d] for d in keep if shape[d] != 1]
        ashape = [shape[d] for d in axes if shape[d] != 1]
        if len(kshape) > MAX_DIMS or len(ashape) > MAX_DIMS:
            return self.fallback(*inputs)
        M, R = numel([shape[d] for d in keep]), numel([shape[d] for d in axes])
        if attrs.get("keepdims"):
            oshape = tuple(1 if d in axes else s for d, s in enumerate(shape))
        else:
            oshape = tuple(shape[d] for d in keep)
        out = empty(dc, oshape, od)
        pvals = [empty(dc, shape, t) for t in pdts]
        res = {len(g.ops) - 1: out}
        res.update(zip(pouts, pvals))
        result = tuple(res[j] for j in g.outputs)
        if M == 0 or R == 0:
            return self.fallback(*inputs) if not numel(oshape) == 0 else result
        v = np.zeros(_red_words(len(xs) + len(pvals)), np.int32)
        v[0], v[1] = len(kshape), len(ashape)
        v[2:2 + len(kshape)] = kshape
        v[2 + MAX_DIMS:2 + MAX_DIMS + len(ashape)] = ashape
        base = 2 + 2 * MAX_DIMS
        for k, x in enumerate(xs + pvals):
            st = _broadcast_strides(x, shape)
            b = base + k * (1 + 2 * MAX_DIMS)
            v[b] = x.offset
            ks = [st[d] for d in keep if shape[d] != 1]
            as_ = [st[d] for d in axes if shape[d] != 1]
            v[b + 1:b + 1 + len(ks)] = ks
            v[b + 1 + MAX_DIMS:b + 1 + MAX_DIMS + len(as_)] = as_
        params = []
        for j, o in param_ops:
            params += op_params(g.ops[j][0], g.ops[j][1], o)
        dc.launch(dc.kernel(src, "fred"), M, [v.view(np.dtype((np.void, v.nbytes)))[0], np.int32(M), np.int32(R),
                                              out.buf] + [o.buf for o in pvals] + [x.buf for x in xs]
                  + _scalar_args(params))
        return result

    def _build(self, inputs):
        g = self.group
        op, attrs, args = g.ops[-1]
        types, param_ops = [x.dtype for x in inputs], []
        for j, (o, a, ar) in enumerate(g.ops[:-1]):
            ins = [types[k if s == "in" else len(inputs) + k] for s, k in ar]
            out = _name(out_dtype(o, ins, a))
            types.append(out)
            param_ops.append((j, out))
        src_kind, red_arg = args[0]
        vt = types[red_arg if src_kind == "in" else len(inputs) + red_arg]
        if src_kind != "op" or vt in ("float16", "complex64", "complex128") or any(t == "float16" for t in types):
            return False        # a complex sum: prologue kernel + burn_wgpu.kernels.reduce.complex (two launches)
        if op in ("sum", "prod"):
            od = sum_dtype(vt)
        elif op in ("any", "all"):
            od = "bool"
        elif op.startswith("arg"):
            od = "int64"
        else:
            od = vt
        dc = inputs[0].dc
        n = len(g.ops) - 1
        pouts = [j for j in g.outputs if j != n]
        pdts = [types[len(inputs) + j] for j in pouts]
        key = (dc.index, op, _struct_key(g.ops[:-1], types[:len(inputs)], [red_arg] + pouts))
        src = _RED_SRC.get(key)
        if src is None:
            try:
                src = _RED_SRC[key] = _reduce_source(op, g.ops[:-1], types[:len(inputs)], red_arg, vt, od,
                                                     pouts, pdts)
            except KeyError:
                return False
        return src, od, param_ops, pouts, pdts


def one_launch_group(group):
    """A one-launch runner of a reduce group, or None (its fallback keeps two launches)."""
    if group.kind != "reduce" or len(group.ops) < 2:
        return None
    op, attrs, args = group.ops[-1]
    n = len(group.ops) - 1
    if op not in FUSED_REDUCTIONS or n not in group.outputs or len(args) != 1 or args[0][0] != "op":
        return None
    if not group.input_metas or any(o not in ELEMENTWISE_OPS for o, _, _ in group.ops[:-1]):
        return None
    return group
