"""Reduce kernels for fused reduce groups, in three parallel shapes (OpenCL and CUDA).

A reduce group (element-wise prologue, one or more reductions over the same axes, row-level
ops between and after them: ``mean``, ``var``, ``x.sum()``) is rendered by :func:`render_reduce`
as one program holding every *variant* the launcher may pick:

* ``fmred`` (**row**): one work-item per output row walks the reduced coordinates. Right for
  many short rows: no barriers, no local memory.
* ``fmred_grp`` (**group**): one work-group per row. Each work-item folds a share of the row
  (a strided share on GPUs, so loads coalesce; a contiguous block on CPU devices, so one item
  streams its own cache lines), then a local-memory tree combines the items in log2(L) steps.
  Every barrier sits in uniform control flow (PoCL miscompiles a barrier inside a
  data-dependent ``if``): the tree loop's bound is a constant and only its body is guarded.
  Row-level values (a mean for var's second pass) are read back by every item.
* ``fmred_part<p>`` + ``fmred_comb<p>`` per pass p (**split**): S work-groups per row each
  reduce a chunk to a partial (value, and index for arg/max/min), then a launch combines the S
  partials of a row with the same tree. The last pass's combine runs the row-level epilogue and
  writes the outputs; earlier ones store the row's reduced value, from which the next pass's
  kernels re-evaluate the row-level ops (var: the mean). Not for groups with a loop-level pass
  after their last reduction.
  Deterministic: no atomics, the same order for the same sizes.

Semantics match the one-item kernel: Kahan-compensated float sums per item (then a pairwise
tree, more accurate than a serial sum), int64 accumulation of integer sums, NaN propagation
(the first NaN wins), first-index ties for argmax/argmin (partials carry their index, and the
combine prefers the lower one), any/all as bytes.

Example:
    >>> from burn.codegen import OPENCL, CUDA
    >>> sp = type("S", (), {"reds": [0], "level": {0: "row"}, "types": {0: "float32"}, "use": {0: "loop"},
    ...                     "n_in": 1})()
    >>> src = render_reduce([("sum", {"axis": None}, [("in", 0)])], [0], sp, ["float32"], OPENCL, L=64)[0]
    >>> assert all(f"void {k}(" in src for k in ("fmred", "fmred_grp", "fmred_part0", "fmred_comb0"))
    >>> assert "__syncthreads();" in render_reduce([("sum", {}, [("in", 0)])], [0], sp, ["float32"], CUDA)[0]
"""
from __future__ import annotations

import re

import numpy as np

from .dialect import CUDA, DTYPE_INFO, OPENCL, Dialect, sum_dtype
from .elementwise import MAX_DIMS, out_dtype, program_source, render_group
from .segments import dtype_name as _name
from .segments import numel

__all__ = ["REDUCTIONS", "Spec", "analyze", "render_reduce", "index_words", "reduce_axes", "kahan_step"]

REDUCTIONS = ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all")
UNROLL = 4          # accumulators per work-item in blocked (CPU) loops
_LINE = re.compile(r"^  .+? v(\d+) = .*;$")

# what differs per target beyond burn.codegen.dialect: work-group ids, local memory, barriers
_PAR = {
    "opencl": {"gid": OPENCL.global_id, "grp": OPENCL.group_id, "lid": OPENCL.local_id,
               "bar": "barrier(CLK_LOCAL_MEM_FENCE);", "shared": "__local", "min": "min"},
    "cuda": {"gid": CUDA.global_id, "grp": CUDA.group_id, "lid": CUDA.local_id,
             "bar": "__syncthreads();", "shared": "__shared__", "min": "min"},
}


def reduce_axes(axis, ndim) -> tuple:
    """A reduction's ``axis`` attribute as sorted non-negative axes (None: all).

    >>> assert reduce_axes(-1, 3) == (2,) and reduce_axes(None, 2) == (0, 1)
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, (int, np.integer)):
        axis = (axis,)
    return tuple(sorted(int(a) % ndim for a in axis)) if ndim else ()


def _isf(dtype) -> bool:
    """A float dtype (bfloat16 included: its name does not start with "float")."""
    return DTYPE_INFO[dtype][0] == "f"


def _red_dtype(op, vt):
    if op in ("sum", "prod"):
        return sum_dtype(vt)
    return {"any": "bool", "all": "bool", "argmax": "int64", "argmin": "int64"}.get(op, vt)


def _reduced(shape, axes, keepdims):
    return tuple(1 if d in axes else s for d, s in enumerate(shape)) if keepdims else \
        tuple(s for d, s in enumerate(shape) if d not in axes)


class Spec:
    """The analysis of a group for given input shapes/dtypes (see :func:`_analyze`): the reduced
    input's shape ``F``, its reduced ``axes``, rows ``M``, reduction positions ``reds``, and per
    op its ``shape``, ``level`` ("loop" or "row") and dtype (``types``)."""


def analyze(group, shapes, dtypes, d: Dialect | None = None):
    """Classify every op of a reduce group as loop-level (shape of the reduced input, one value per reduced
    coordinate) or row-level (one value per output row), or return None if the group does not
    have this form. With a dialect ``d`` that computes float16/bfloat16 in float (CUDA's
    ``compute_types``) those dtypes are taken too (accumulated in float32).

    >>> g = type("G", (), {"ops": [("sum", {"axis": 1, "keepdims": False}, [("in", 0)]),
    ...                            ("mul", {}, [("op", 0), ("in", 1)])]})()
    >>> sp = analyze(g, [(3, 5), ()], ["float32", "float32"])
    >>> assert sp.M == 3 and sp.level == {0: "row", 1: "row"} and sp.use == {0: "loop"}
    """
    ops, n_in = group.ops, len(shapes)
    ok = _CT.union(d.compute_types) if d is not None else _CT
    if any(t not in ok for t in dtypes):
        return None
    reds = [j for j, (op, _, _) in enumerate(ops) if op in REDUCTIONS]
    r0 = ops[reds[0]]
    F = _first_shape(group, shapes)
    axes = reduce_axes(r0[1].get("axis"), len(F))
    M = numel([s for d, s in enumerate(F) if d not in axes])
    keep_aligned = tuple(1 if d in axes else s for d, s in enumerate(F))
    shape, level, types = {}, {}, {}

    def sh(a):
        return tuple(shapes[a[1]]) if a[0] == "in" else shape[a[1]]

    def lv(a):
        if a[0] == "op":
            return level[a[1]]
        return "row" if numel(shapes[a[1]]) == 1 else "loop"

    def ty(a):
        return dtypes[a[1]] if a[0] == "in" else types[a[1]]

    keep_only = tuple(s for d, s in enumerate(F) if d not in axes)
    use = {}            # non-scalar input -> "loop" or the row shape it is read as

    def mark(k, how):
        if numel(shapes[k]) != 1 and use.setdefault(k, how) != how:
            raise ValueError("an input read both inside the loops and per row")

    for j, (op, attrs, args) in enumerate(ops):
        if op in REDUCTIONS:
            a = args[0]
            if len(args) != 1 or sh(a) != F or lv(a) != "loop" or reduce_axes(attrs.get("axis"), len(F)) != axes:
                return None
            if a[0] == "in":
                mark(a[1], "loop")
            shape[j] = _reduced(F, axes, attrs.get("keepdims", False))
            level[j] = "row"
            types[j] = _red_dtype(op, ty(a))
            continue
        s = tuple(np.broadcast_shapes(*[sh(a) for a in args], *([tuple(attrs["shape"])] if op == "full" else [])))
        shape[j] = s
        types[j] = _name(out_dtype(op, [ty(a) for a in args], attrs))
        if types[j] not in ok:
            return None
        if s == F:
            level[j] = "loop"
            for a in args:
                if a[0] == "in":
                    mark(a[1], "loop")
                # a row value read inside the loop must line up with the kept dims (keepdims layout)
                elif lv(a) == "row" and numel(sh(a)) != 1 and tuple(sh(a)) != keep_aligned:
                    return None
        elif all(lv(a) == "row" or a[0] == "in" for a in args) and (numel(s) == 1 or s in (keep_aligned, keep_only)):
            # one value per row: reduced values, scalars, and inputs read at the row's kept coordinates
            if any(a[0] == "op" and numel(sh(a)) not in (1, numel(s)) for a in args):
                return None
            for a in args:
                if a[0] == "in":
                    mark(a[1], s)
            level[j] = "row"
        else:
            return None
    sp = Spec()
    sp.use = use
    sp.F, sp.axes, sp.M, sp.reds, sp.shape, sp.level, sp.types = F, axes, M, reds, shape, level, types
    sp.n_in, sp.in_shapes = n_in, [tuple(x) for x in shapes]
    return sp


# the dtypes this kernel handles in every dialect (complex values keep the segmented path; float16
# and bfloat16 where the dialect computes them in float, see analyze)
_CT = {"float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool"}


def _first_shape(group, shapes):
    """The shape of what the first reduction reads (every op before it broadcast in order)."""
    shape = {}
    for j, (op, attrs, args) in enumerate(group.ops):
        if op in REDUCTIONS:
            a = args[0]
            return tuple(shapes[a[1]]) if a[0] == "in" else shape[a[1]]
        ss = [tuple(shapes[k]) if s == "in" else shape[k] for s, k in args]
        if op == "full":
            ss.append(tuple(attrs["shape"]))
        shape[j] = tuple(np.broadcast_shapes(*ss))
    return None



def index_words(n_views: int) -> int:
    """Words of the index struct of a reduce kernel reading ``n_views`` strided views:
    ``[nk, na, kshape[MAX_DIMS], ashape[MAX_DIMS], per view (off, kstrides, astrides)]``.

    >>> assert index_words(1) == 2 + 2 * MAX_DIMS + 1 + 2 * MAX_DIMS
    """
    return 2 + 2 * MAX_DIMS + max(n_views, 1) * (1 + 2 * MAX_DIMS)


def _acc_type(op, vt, d: Dialect):
    # d.vtype: float16/bfloat16 accumulate in float (CUDA), as every other value of theirs
    if op in ("sum", "prod"):
        return d.vtype(vt) if _isf(vt) else d.ctype(sum_dtype(vt))
    if op in ("any", "all"):
        return d.ctype("bool")
    return d.vtype(vt)


def _has_index(op):
    return op in ("max", "min", "argmax", "argmin")


def _acc_init(op, r, vt, d: Dialect):
    A = _acc_type(op, vt, d)
    if op == "sum" and _isf(vt):
        return [f"  {A} acc{r} = 0, comp{r} = 0;"]
    if op in ("sum", "prod"):
        return [f"  {A} acc{r} = {'0' if op == 'sum' else '1'};"]
    if op in ("any", "all"):
        return [f"  {A} acc{r} = {'0' if op == 'any' else '1'};"]
    return [f"  {A} best{r} = 0; {d.ctype('int64')} bi{r} = -1;"]


def kahan_step(T: str, acc: str, comp: str, v: str, vector: bool = False) -> str:
    """One Kahan-compensated ``acc += v`` in C (both dialects), with compensation ``comp``;
    ``vector``: ``T`` is an OpenCL vector type (float2 complex values), guarded per component.

    Once the sum is infinite the compensation ``(t - acc) - y`` would be inf - inf = NaN and
    poison every later step (sum([inf, 1]) came out NaN, numpy gives inf): it is zeroed then,
    so infinities and NaNs propagate as in a plain sum.

    >>> assert "isfinite(t)" in kahan_step("float", "s", "c", "x[i]")
    >>> assert "select(" in kahan_step("float2", "s", "c", "p[r]", vector=True)
    """
    e = f"select(({T})(0), (t - {acc}) - y, isfinite(t))" if vector else f"isfinite(t) ? (t - {acc}) - y : ({T})0"
    return f"{{ {T} y = {v} - {comp}; {T} t = {acc} + y; {comp} = {e}; {acc} = t; }}"


def _acc_step(op, r, v, vt, d: Dialect, q="q"):
    """Fold value ``v`` at reduced index ``q`` into pass ``r``'s accumulator (indices increase)."""
    isf = _isf(vt)
    if op == "sum" and isf:      # Kahan, as the library reduction: long rows stay within tolerance
        T = d.vtype(vt)
        return ["    " + kahan_step(T, f"acc{r}", f"comp{r}", v)]
    if op == "sum":
        return [f"    acc{r} += {v};"]
    if op == "prod":
        return [f"    acc{r} *= {v};"]
    if op == "any":
        return [f"    if ({v} != 0) acc{r} = 1;"]
    if op == "all":
        return [f"    if ({v} == 0) acc{r} = 0;"]
    cmp = ">" if op.endswith("max") else "<"
    better = f"(!isnan(best{r}) && (isnan({v}) || {v} {cmp} best{r}))" if isf else f"{v} {cmp} best{r}"
    return [f"    if (bi{r} < 0 || {better}) {{ best{r} = {v}; bi{r} = {q}; }}"]


def _merge(op, vt, av, ai, bv, bi):
    """C statement merging partial (bv, bi) into (av, ai); partials come in any index order,
    so ties and NaNs are settled by the lower index (an empty partial has index -1)."""
    if op in ("sum", "any"):
        return f"{av} = {av} {'+' if op == 'sum' else '|'} {bv};"
    if op in ("prod", "all"):
        return f"{av} = {av} {'*' if op == 'prod' else '&'} {bv};"
    cmp = ">" if op.endswith("max") else "<"
    if _isf(vt):
        better = f"(!isnan({av}) && (isnan({bv}) || {bv} {cmp} {av}))"
        tie = f"(({bv} == {av} || (isnan({av}) && isnan({bv}))) && {bi} < {ai})"
    else:       # no NaN terms: compilers warn about constant operands
        better = f"{bv} {cmp} {av}"
        tie = f"({bv} == {av} && {bi} < {ai})"
    return f"if ({bi} >= 0 && ({ai} < 0 || {better} || {tie})) {{ {av} = {bv}; {ai} = {bi}; }}"


def _merge_chains(op, r, vt, sfxs):
    """Fold the unrolled accumulators ``<name>{r}{sfx}`` into pass ``r``'s first one."""
    out = []
    for s in sfxs:
        if op == "sum" and _isf(vt):
            out.append(f"  acc{r} = (acc{r} - comp{r}) + (acc{r}{s} - comp{r}{s}); comp{r} = 0;")
        elif _has_index(op):
            out.append("  " + _merge(op, vt, f"best{r}", f"bi{r}", f"best{r}{s}", f"bi{r}{s}"))
        else:
            out.append("  " + _merge(op, vt, f"acc{r}", "", f"acc{r}{s}", ""))
    return out


def _tree(op, r, vt, d: Dialect, L):
    """Combine the work-group's per-item accumulators of pass ``r``; every item ends with the
    row's result in ``ta{r}[0]`` (``ti{r}[0]``). Barriers in uniform control flow only."""
    P = _PAR[d.name]
    val = f"acc{r} - comp{r}" if op == "sum" and _isf(vt) else \
        f"acc{r}" if not _has_index(op) else f"best{r}"
    out = [f"  ta{r}[lid] = {val};"]
    if _has_index(op):
        out.append(f"  ti{r}[lid] = bi{r};")
    out += [f"  {P['bar']}",
            f"  for (int w = {L // 2}; w > 0; w >>= 1) {{",
            f"    if (lid < w) {{ {_merge(op, vt, f'ta{r}[lid]', f'ti{r}[lid]', f'ta{r}[lid + w]', f'ti{r}[lid + w]')}"
            " }",
            f"    {P['bar']}", "  }"]
    return out


def _final(op, r, t, x, d: Dialect, src):
    """Declare ``x{x}``, the reduced value (dtype ``t``) of pass ``r`` (``src``: "acc" registers or
    "tree"). A float16/bfloat16 value is rounded to its dtype and held in float, as an op-by-op
    run (and the split variant, which stores it) sees it."""
    if op.startswith("arg"):
        return [f"  {d.ctype('int64')} x{x} = {f'ti{r}[0]' if src == 'tree' else f'bi{r}'};"]
    O, V = d.ctype(t), d.vtype(t)
    val = f"ta{r}[0]" if src == "tree" else f"acc{r}" if op in ("sum", "prod", "any", "all") else f"best{r}"
    if V != O:
        return [f"  {V} x{x} = ({V})(({O})({val}));"]
    return [f"  {O} x{x} = ({O}){val};"]


def render_reduce(ops, outputs, sp, dtypes, d: Dialect, L: int = 256, blocked: bool = False):
    """Source of every variant of a reduce group (see the module doc), and its layout.

    ``sp`` describes the group (``burn_wgpu.kernels.reduce.generated.Spec``: ``reds``, per op ``level``
    "loop"/"row" and dtype ``types``, input ``use``, ``n_in``); ``L`` is the work-group size
    of the parallel variants (a power of two) and ``blocked`` gives each work-item a contiguous
    block of the row (CPU devices) instead of a strided share (GPUs). Returns
    ``(source, params, scal, views, rviews, pouts, routs, split)``: the program, the dtypes of
    its scalar parameters, which inputs are scalars / loop views / per-row views, which ops
    are written per element / per row, and whether the split pair was rendered (groups with
    one reduction pass).

    >>> from burn.codegen import OPENCL
    >>> sp = type("S", (), {"reds": [0], "level": {0: "row"}, "types": {0: "int64"}, "use": {0: "loop"},
    ...                     "n_in": 1})()
    >>> out = render_reduce([("argmax", {}, [("in", 0)])], [0], sp, ["int32"], OPENCL, L=16)
    >>> assert out[-1] and "ti0[lid + w]" in out[0]
    """
    return _ReduceRenderer(ops, outputs, sp, dtypes, d, L, blocked).render()


class _ReduceRenderer:
    """What :func:`render_reduce` derives from a group once (its element-wise chain rendered as
    lines, the input and output slots, the passes), and a method per piece of kernel source:
    each variant's kernel, the split variant's combine kernels, and the parts they share."""

    def __init__(self, ops, outputs, sp, dtypes, d, L, blocked):
        if L & (L - 1):
            raise ValueError(f"reduce kernels: work-group size {L} is not a power of two")
        P = _PAR[d.name]
        n_in = sp.n_in
        c = d.ctype          # storage types (pointers)
        V = d.vtype          # register types: CUDA holds float16/bfloat16 values in float
        I64 = c("int64")
        red_index = {j: r for r, j in enumerate(sp.reds)}
        chain, ci = [], {}
        for j, (op, attrs, args) in enumerate(ops):
            if op in REDUCTIONS:
                continue
            new = []
            for s, k in args:
                if s == "in":
                    new.append(("in", k))
                elif k in red_index:
                    new.append(("in", n_in + red_index[k]))
                else:
                    new.append(("op", ci[k]))
            ci[j] = len(chain)
            chain.append((op, attrs, new))
        chain_in = list(dtypes) + [sp.types[j] for j in sp.reds]
        lines, params = {}, ()
        if chain:
            rk = render_group("fmred_chain", chain, chain_in, list(range(len(chain))), d)
            for ln in rk.source.splitlines():
                m = _LINE.match(ln)
                if m:
                    lines[int(m[1])] = ln.strip()
            if len(lines) != len(chain):
                raise KeyError("fused reduce: an op did not render as one line")
            params = rk.param_dtypes
            head = program_source([rk], d, extra="").replace(rk.source, "")
        else:
            head = d.preamble
        scal = [k for k in range(n_in) if k not in sp.use]
        views = [k for k in range(n_in) if sp.use.get(k) == "loop"]
        rviews = [k for k in range(n_in) if k in sp.use and sp.use[k] != "loop"]
        pouts = [j for j in outputs if sp.level[j] == "loop"]
        routs = [j for j in outputs if sp.level[j] == "row"]
        n_v = len(views) + len(pouts) + len(rviews)
        W = index_words(n_v)
        base = 2 + 2 * MAX_DIMS
        passes = len(sp.reds) + (1 if any(sp.level[j] == "loop" for j in range(sp.reds[-1] + 1, len(ops))) else 0)
        # split kernels: every pass has a reduction (no loop-level pass after the last one)
        split = passes == len(sp.reds)
        any_idx = any(_has_index(ops[r][0]) for r in sp.reds)


        vslot = {k: q for q, k in enumerate(views)}
        vslot.update({("p", j): len(views) + q for q, j in enumerate(pouts)})
        vslot.update({k: len(views) + len(pouts) + q for q, k in enumerate(rviews)})
        self._state = (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
                           base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked)

    def vt_of(self, red):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        a = ops[red][2][0]
        return dtypes[a[1]] if a[0] == "in" else sp.types[a[1]]

    def signature(self, name, pp=None):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        G = d.global_ptr
        A = [f"burn_mred{W} p", "const int M", "const int R", "const int S"]
        if pp is not None:      # split kernels of pass pp: its partials, every pass's row results
            red = sp.reds[pp]
            A.append(f"{G}{_acc_type(ops[red][0], self.vt_of(red), d)}* pacc")
            if any_idx:
                A.append(f"{G}{I64}* pidx")
            A += [f"{G}{c(sp.types[r])}* red{k}" for k, r in enumerate(sp.reds)]
        A += [f"{G}{c(sp.types[j])}* rout{q}" for q, j in enumerate(routs)]
        A += [f"{G}{c(sp.types[j])}* pout{q}" for q, j in enumerate(pouts)]
        A += [f"{G}const {c(t)}* in{k}" for k, t in enumerate(dtypes)]
        A += [f"const int soff{k}" for k in scal]
        A += [f"const {d.vtype(t)} p{i}" for i, t in enumerate(params)]
        return d.kernel_decl(name, A) + " {"

    def shared(self, red_list):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        out = []
        for r, red in red_list:
            op = ops[red][0]
            out.append(f"  {P['shared']} {_acc_type(op, self.vt_of(red), d)} ta{r}[{L}];")
            if _has_index(op):
                out.append(f"  {P['shared']} {I64} ti{r}[{L}];")
        return out

    def row_base(self):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        out = [f"  int b{q} = p.v[{base + q * (1 + 2 * MAX_DIMS)}];" for q in range(n_v)]
        out += ["  { int r = m;", f"  for (int dd = {MAX_DIMS - 1}; dd >= 0; --dd) if (dd < nk) {{",
                "    int s = p.v[2 + dd]; int cc = r % s; r /= s;"]
        out += [f"    b{q} += cc * p.v[{base + q * (1 + 2 * MAX_DIMS) + 1} + dd];" for q in range(n_v)]
        out += ["  } }"]
        out += [f"  {V(dtypes[k])} x{k} = in{k}[soff{k}];" for k in scal]
        out += [f"  {V(dtypes[k])} x{k} = in{k}[b{vslot[k]}];" for k in rviews]
        return out

    def row_ops(self, lo, hi, guard):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        # guard None: evaluate only (a split kernel that is not the row's last writes nothing)
        out = []
        for j in range(lo, hi):
            if j in ci and sp.level[j] == "row":
                out.append("  " + lines[ci[j]])
                if j in routs and guard is not None:
                    out.append(f"  {guard}rout{routs.index(j)}[m] = v{ci[j]};")
        return out

    def replay(self, pp, guard):
        """The row-level values before pass ``pp``'s reduction, from the earlier passes' results."""
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        out = self.row_ops(0, sp.reds[0], guard)
        for r in range(pp):
            red = sp.reds[r]
            out.append(f"  {V(sp.types[red])} x{n_in + r} = red{r}[m];")
            if red in routs and guard is not None:
                out.append(f"  {guard}rout{routs.index(red)}[m] = x{n_in + r};")
            out += self.row_ops(red + 1, sp.reds[r + 1] if r + 1 < len(sp.reds) else len(ops), guard)
        return out

    def deps(self, j, acc):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        # loop-level ops (and view inputs) that op j's value needs, in op order
        for s, k in ops[j][2]:
            if s == "in":
                if k in vslot:
                    acc.add(("in", k))
            elif sp.level[k] == "loop" and k not in acc:
                acc.add(k)
                self.deps(k, acc)
        return acc

    def loop_head(self, variant):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        if variant == "row":
            return ["  for (int q = 0; q < R; ++q) {"]
        lo, hi = ("0", "R") if variant == "grp" else ("lo_", "hi_")
        if blocked:
            return [f"  {{ int cs_ = ({hi} - {lo} + {L - 1}) / {L}; int qa_ = {lo} + lid * cs_; "
                    f"int qb_ = {P['min']}({hi}, qa_ + cs_);",
                    "  for (int q = qa_; q < qb_; ++q) {"]
        return [f"  {{ for (int q = {lo} + lid; q < {hi}; q += {L}) {{"]

    def kernel(self, variant, pp=0):
        """variant: "row", "grp" (one group per row, all passes) or "part" (split: pass pp's partials)."""
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        guard = "" if variant == "row" else "if (lid == 0) "
        if variant == "part":
            L_ = [self.signature(f"fmred_part{pp}", pp)]
        else:
            L_ = [self.signature("fmred" if variant == "row" else "fmred_grp")]
        if variant == "row":
            L_ += [f"  int m = {P['gid']}; if (m >= M) return;"]
        else:
            L_ += self.shared([(r, red) for r, red in enumerate(sp.reds)] if variant == "grp" else [(pp, sp.reds[pp])])
            L_ += [f"  int g_ = {P['grp']}; int m = g_ / S; int lid = {P['lid']};"]
            if variant == "part":
                L_ += ["  int ck_ = (R + S - 1) / S; int lo_ = (g_ % S) * ck_; "
                       f"int hi_ = {P['min']}(R, lo_ + ck_); if (lo_ > R) lo_ = R;"]
        L_ += ["  int nk = p.v[0], na = p.v[1];"]
        L_ += self.row_base()
        bounds = [-1] + sp.reds + [len(ops)]
        L_ += self.replay(pp, None) if variant == "part" else self.row_ops(0, sp.reds[0], guard)
        for p_ in range(pp, pp + 1) if variant == "part" else range(passes):
            lo, hi = bounds[p_] + 1, bounds[p_ + 1]
            red = sp.reds[p_] if p_ < len(sp.reds) else None
            here = [j for j in range(lo, min(hi, len(ops))) if sp.level[j] == "loop" and j in pouts]
            need = set()
            for j in here:
                need.add(j)
                self.deps(j, need)
            if red is not None:
                self.deps(red, need)
            vins = sorted(k for s_, k in (n for n in need if isinstance(n, tuple)))
            loop_ops = sorted(n for n in need if not isinstance(n, tuple))
            used = [vslot[k] for k in vins] + [vslot[("p", j)] for j in here]

            def body(sfx, p_=p_, red=red, used=used, vins=vins, loop_ops=loop_ops, here=here):
                out = [f"    int j{v} = b{v};" for v in used]
                if used:
                    out += ["    if (na == 1) {"]
                    out += [f"      j{v} += q * p.v[{base + v * (1 + 2 * MAX_DIMS) + 1 + MAX_DIMS}];" for v in used]
                    out += ["    } else {", "      int r2 = q;",
                            f"      for (int dd = {MAX_DIMS - 1}; dd >= 0; --dd) if (dd < na) {{",
                            f"        int s = p.v[{2 + MAX_DIMS} + dd]; int cc = r2 % s; r2 /= s;"]
                    out += [f"        j{v} += cc * p.v[{base + v * (1 + 2 * MAX_DIMS) + 1 + MAX_DIMS} + dd];"
                            for v in used]
                    out += ["      }", "    }"]
                out += [f"    {V(dtypes[k])} x{k} = in{k}[j{vslot[k]}];" for k in vins]
                out += ["    " + lines[ci[j]] for j in loop_ops]
                out += [f"    pout{pouts.index(j)}[j{vslot[('p', j)]}] = v{ci[j]};" for j in here]
                if red is not None:
                    a = ops[red][2][0]
                    val = f"x{a[1]}" if a[0] == "in" else f"v{ci[a[1]]}"
                    out += _acc_step(ops[red][0], f"{p_}{sfx}", val, self.vt_of(red), d)
                return out

            # a CPU work-item walks its block with UNROLL independent accumulators: one Kahan
            # or compare chain per element is latency-bound, several overlap
            U = UNROLL if blocked and variant != "row" else 1
            sfx = [""] + [f"_{u}" for u in range(1, U)]
            if red is not None:
                for u in range(U):
                    L_ += _acc_init(ops[red][0], f"{p_}{sfx[u]}", self.vt_of(red), d)
            if U == 1:
                L_ += self.loop_head(variant) + body("") + ["  }" if variant == "row" else "  } }"]
            else:
                L_ += self.loop_head(variant)[:1] + ["  int q_ = qa_;", f"  for (; q_ + {U} <= qb_; q_ += {U}) {{"]
                for u in range(U):
                    L_ += [f"   {{ int q = q_ + {u};"] + body(sfx[u]) + ["   }"]
                L_ += ["  }", "  for (int q = q_; q < qb_; ++q) {"] + body("") + ["  }"]
                if red is not None:
                    L_ += _merge_chains(ops[red][0], p_, self.vt_of(red), sfx[1:])
                L_ += ["  }"]
            if red is None:
                continue
            op = ops[red][0]
            if variant != "row":
                L_ += _tree(op, p_, self.vt_of(red), d, L)
            if variant == "part":
                idx = f" pidx[g_] = ti{p_}[0];" if _has_index(op) else ""
                L_ += [f"  if (lid == 0) {{ pacc[g_] = ta{p_}[0];{idx} }}"]
                break
            L_ += _final(op, p_, sp.types[red], n_in + p_, d, "acc" if variant == "row" else "tree")
            if red in routs:
                L_.append(f"  {guard}rout{routs.index(red)}[m] = x{n_in + p_};")
            L_ += self.row_ops(red + 1, bounds[p_ + 2] if p_ + 2 < len(bounds) else len(ops), guard)
        L_.append("}")
        return L_

    def combine(self, pp):
        """Pass pp's partials of row m combined; the last pass's combine writes the row's outputs,
        the others its reduced value for the next passes."""
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        red = sp.reds[pp]
        op, vt = ops[red][0], self.vt_of(red)
        A = _acc_type(op, vt, d)
        last = pp == len(sp.reds) - 1
        guard = "if (lid == 0) " if last else None
        L_ = [self.signature(f"fmred_comb{pp}", pp)]
        L_ += self.shared([(pp, red)])
        L_ += [f"  int m = {P['grp']}; int lid = {P['lid']};", "  int nk = p.v[0];"]
        L_ += self.row_base()
        L_ += self.replay(pp, guard)
        if _has_index(op):
            L_ += [f"  {A} best{pp} = 0; {I64} bi{pp} = -1;",
                   f"  for (int t = lid; t < S; t += {L}) {{ {A} bv = pacc[m * S + t]; {I64} bj = pidx[m * S + t];",
                   f"    {_merge(op, vt, f'best{pp}', f'bi{pp}', 'bv', 'bj')} }}"]
        else:
            init = {"sum": "0", "prod": "1", "any": "0", "all": "1"}[op]
            comp = f", comp{pp} = 0" if op == "sum" and _isf(vt) else ""
            L_ += [f"  {A} acc{pp} = {init}{comp};",
                   f"  for (int t = lid; t < S; t += {L}) {{ {A} bv = pacc[m * S + t]; "
                   f"{_merge(op, vt, f'acc{pp}', '', 'bv', '')} }}"]
        L_ += _tree(op, pp, vt, d, L)
        L_ += _final(op, pp, sp.types[red], n_in + pp, d, "tree")
        if not last:
            L_ += [f"  if (lid == 0) red{pp}[m] = x{n_in + pp};", "}"]
            return L_
        if red in routs:
            L_.append(f"  if (lid == 0) rout{routs.index(red)}[m] = x{n_in + pp};")
        L_ += self.row_ops(red + 1, len(ops), guard)
        L_.append("}")
        return L_


    def render(self):
        (P, n_in, c, V, I64, chain, ci, lines, params, head, scal, views, rviews, pouts, routs, n_v, W,
             base, passes, split, any_idx, vslot, ops, outputs, sp, dtypes, d, L, blocked) = self._state
        body = [f"typedef struct {{ int v[{W}]; }} burn_mred{W};"]
        body += self.kernel("row") + self.kernel("grp")
        if split:
            for pp in range(len(sp.reds)):
                body += self.kernel("part", pp) + self.combine(pp)
        text = "\n".join(body)
        # headers of storage types only the reduce kernels name (a plain float16 sum has no chain)
        head += "".join("\n" + line for marker, line in d.headers if marker in text and line not in head)
        src = head + "\n" + text
        if d.name == "opencl" and "double" in src and "cl_khr_fp64" not in src:
            src = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" + src
        return src, params, scal, views, rviews, pouts, routs, split
