"""Advanced indexing on the device: ``index`` (x[key]), ``index_add`` (its gradient: zeros
with ``+=`` at x[key], duplicates accumulate) and ``index_put`` (x with x[key] = v).

A key (the core's spec: ints, slices, None, Ellipsis, integer index tensors) splits the
selection into *basic* dims (slices, new axes: a strided view of x) and the *advanced*
block B (the broadcast shape of the index tensors). The index tensors become one int64
tensor ``off`` of shape B: the element offset each advanced position adds (negative
indices wrapped, out-of-range ones flagged and reported as a ``burn.IndexOutOfRange``). Then

- gather: ``sel[b, basic] = x[view(basic) + off[b]]``, one work-item per element;
- scatter (add or put): one work-item per basic position loops over B in order, so
  duplicate indices accumulate (``index_add``) or the last write wins (``index_put``, as
  numpy) without atomics, and distinct work-items never touch the same element.

The selection is computed as ``[B..., basic...]`` and permuted (a view) into numpy's order:
B where the advanced indices stand if they are adjacent, else in front.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.codegen import MAX_DIMS, OPENCL, param_words
from burn.errors import IndexOutOfRange
from burn.ops.movement import strided_index_plan

from .elementwise import _bshape, elementwise
from .movement import _filled, broadcast_to, contiguous, copy_into, download, permute
from ..native import broadcast_strides as _broadcast_strides
from ..native import empty, index_struct, numel
from .source import register
from .source import library_kernel as _lib


@lru_cache(maxsize=None)
def _source(dtype: str, fp64: bool) -> str:
    T = OPENCL.ctype(dtype)
    W1, W2 = param_words(1), param_words(2)
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""
    if dtype == "float16":
        pre += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    structs = f"typedef struct {{ int v[{W1}]; }} burn_idx{W1};\n"
    if W2 != W1:
        structs += f"typedef struct {{ int v[{W2}]; }} burn_idx{W2};\n"
    return pre + structs + f"""
__kernel void add_offsets(burn_idx{W1} p, __global long* off, __global const long* idx, const int n,
                          const long stride, const int first, __global int* bad) {{
  int i = get_global_id(0); if (i >= p.v[0]) return;
{_coords(1)}
  long k = idx[j0];
  if (k < -n || k >= n) {{ bad[0] = 1; k = 0; }}
  if (k < 0) k += n;
  off[i] = (first ? 0 : off[i]) + k * stride;
}}
__kernel void gather_sel(burn_idx{W1} p, __global {T}* out, __global const {T}* x, __global const long* off,
                         const int nbasic, const int total) {{
  int t = get_global_id(0); if (t >= total) return;
  int b = t / nbasic;
  int i = t % nbasic;
{_coords(1)}
  out[(long)b * nbasic + i] = x[j0 + off[b]];
}}
__kernel void scatter_sel(burn_idx{W1} p, __global {T}* out, __global const long* off, __global const {T}* src,
                          const int nB, const int nbasic, const int accumulate) {{
  int i = get_global_id(0); if (i >= p.v[0]) return;
{_coords(1)}
  for (int b = 0; b < nB; ++b) {{
    long t = j0 + off[b];
    {T} v = src[(long)b * nbasic + i];
    if (accumulate) out[t] += v; else out[t] = v;
  }}
}}"""


def _plan(x, idx, spec):
    """The selection of ``x[key]``: (basic view dims, advanced (index, dim size, stride) list,
    base offset, B shape, position of B in numpy's order)."""
    base, basic, adv, where = strided_index_plan(spec, x.shape, x.strides, x.offset)
    adv = [(idx[k], size, st) for k, _, size, st in adv]
    return basic, adv, base, _bshape([t.shape for t, _, _ in adv]), where


def _offsets(dc, adv, B, op="index", axis=None):
    off = empty(dc, B, "int64")
    bad = _filled(dc, (1,), "int32", 0)
    n = numel(B)
    if n:
        for q, (t, size, st) in enumerate(adv):
            t = broadcast_to(_as_int64(t), shape=B)
            k = dc.kernel(_source("int64", dc.fp64), "add_offsets")
            dc.launch(k, n, [index_struct(B, [t], strided=(0,)), off.buf, t.buf, np.int32(size), np.int64(st),
                             np.int32(q == 0), bad.buf])
        if dc.flag_set(bad.buf):               # one small read: an out-of-range index must not write astray
            _raise_out_of_range(op, adv, axis)
    return off


def _raise_out_of_range(op, adv, axis):
    """numpy's message for the first bad index (the error path: the index arrays are read back)."""
    for t, size, _ in adv:
        h = download(t).reshape(-1)
        bad = h[(h < -size) | (h >= size)]
        if bad.size:
            where = f"axis {axis}" if axis is not None else "an axis"
            raise IndexOutOfRange(f"{op}: index {int(bad[0])} is out of bounds for {where} with size {size}")
    raise IndexOutOfRange(f"{op}: an index array holds values out of bounds")


def check_index_range(op, idx, size, axis):
    """Raise IndexOutOfRange (numpy's message) if ``idx`` holds a value outside [-size, size):
    one small kernel and a one-word read, so take_along_axis and scatter_add never read or
    write astray and the flush fails only what depends on them."""
    if idx.size:
        _offsets(idx.dc, [(idx, size, 0)], idx.shape, op, axis)


def _basic_view(x, basic, base):
    shape = tuple(n for n, _, _ in basic)
    return x.view(shape, tuple(st for _, st, _ in basic), base)


def _order(nb, nbasic, where):
    """Axes taking the computed [B..., basic...] layout to numpy's order (B at ``where``)."""
    bdims = list(range(nb))
    sdims = list(range(nb, nb + nbasic))
    return tuple(sdims[:where] + bdims + sdims[where:])


def index(x, *idx, spec):
    dc = x.dc
    basic, adv, base, B, where = _plan(x, idx, spec)
    view = _basic_view(x, basic, base)
    if not adv:
        return contiguous(view) if view.size else empty(dc, view.shape, x.dtype)
    off = _offsets(dc, adv, B)
    nbasic = view.size
    sel = empty(dc, tuple(B) + view.shape, x.dtype)
    if sel.size:
        dc.launch(dc.kernel(_source(x.dtype, dc.fp64), "gather_sel"), sel.size,
                  [index_struct(view.shape, [view], strided=(0,)), sel.buf, x.buf, off.buf,
                   np.int32(max(nbasic, 1)), np.int32(sel.size)])
    return permute(sel, axes=_order(len(B), view.ndim, where))


def _scatter(out, src, idx, spec, accumulate):
    """Write (or add) ``src`` (broadcast to the selection) into ``out[key]`` in place."""
    dc = out.dc
    basic, adv, base, B, where = _plan(out, idx, spec)
    view = _basic_view(out, basic, base)
    sel_shape = _sel_shape(B, view.shape, where)
    if src.dtype != out.dtype:
        src = elementwise("cast")(src, dtype=out.dtype)
    src = broadcast_to(src, shape=sel_shape)
    if not adv:
        if accumulate:
            copy_into(view, elementwise("add")(view, src))
        else:
            copy_into(view, src)
        return out
    off = _offsets(dc, adv, B, "index_put" if not accumulate else "index_add")
    # the values in [B..., basic...] order, contiguous
    inv = np.argsort(_order(len(B), view.ndim, where))
    vals = contiguous(permute(src, axes=tuple(int(a) for a in inv)))
    nB, nbasic = numel(B), view.size
    if nB and nbasic:
        dc.launch(dc.kernel(_source(out.dtype, dc.fp64), "scatter_sel"), nbasic,
                  [index_struct(view.shape, [view], strided=(0,)), out.buf, off.buf, vals.buf, np.int32(nB), np.int32(nbasic), np.int32(bool(accumulate))])
    return out


def _sel_shape(B, basic_shape, where):
    basic_shape = tuple(basic_shape)
    return basic_shape[:where] + tuple(B) + basic_shape[where:]


def index_add(g, *idx, spec, shape):
    out = _filled(g.dc, tuple(shape), g.dtype, 0)
    return _scatter(out, g, idx, spec, True)


def index_put(x, v, *idx, spec):
    out = elementwise("positive")(x)           # a fresh contiguous copy to write into
    return _scatter(out, v, idx, spec, False)


def index_kernels() -> dict:
    return {"index": index, "index_add": index_add, "index_put": index_put}


def _as_int64(idx):
    return idx if idx.dtype == "int64" else elementwise("cast")(idx, dtype="int64")


def take_along_axis(x, idx, *, axis):
    dc = x.dc
    axis = axis % x.ndim
    shape = tuple(b if d == axis else max(a, b) for d, (a, b) in enumerate(zip(x.shape, idx.shape)))
    idx = _as_int64(idx)
    check_index_range("take_along_axis", idx, x.shape[axis], axis)
    # x read with its axis stride zeroed (the kernel adds index * stride), broadcast elsewhere
    st = list(_broadcast_strides(x.view(tuple(1 if d == axis else s for d, s in enumerate(x.shape)),
                                        x.strides, x.offset), shape))
    xv = x.view(shape, tuple(st), x.offset)
    iv = broadcast_to(idx, shape=shape)
    out = empty(dc, shape, x.dtype)
    n = numel(shape)
    if n:
        dc.launch(_lib(dc, x.dtype, "take_along"), n,
                  [index_struct(shape, [xv, iv], strided=(0,)), out.buf, x.buf, idx.buf,
                   np.int32(x.shape[axis]), np.int32(x.strides[axis])])
    return out


def scatter_add(x, idx, src, *, axis):
    dc = x.dc
    axis = axis % x.ndim
    out = elementwise("positive")(x)         # a fresh contiguous copy to add into
    idx = _as_int64(idx)
    check_index_range("scatter_add", idx, x.shape[axis], axis)
    lines = tuple(1 if d == axis else s for d, s in enumerate(idx.shape))
    n = numel(lines)
    L = idx.shape[axis]
    if n and L:
        ov = out.view(lines, tuple(0 if d == axis else st for d, st in enumerate(out.strides)), out.offset)
        iv = idx.view(lines, idx.strides, idx.offset)
        sv = src.view(lines, src.strides, src.offset)
        dc.launch(_lib(dc, x.dtype, "scatter_add"), n,
                  [index_struct(lines, [ov, iv, sv], strided=(0, 1, 2)), out.buf, idx.buf, src.buf,
                   np.int32(L), np.int32(x.shape[axis]), np.int32(out.strides[axis]),
                   np.int32(idx.strides[axis]), np.int32(src.strides[axis])])
    return out


def _coords(n_views):
    """C statements: coordinates ``c`` of item ``i`` and offsets ``j0..`` of ``n_views`` views
    (the index struct of burn.codegen.param_words(n_views))."""
    lines = ["  int nd = p.v[1];", f"  int c[{MAX_DIMS}];", "  int r = i;",
             f"  for (int d = {MAX_DIMS - 1}; d >= 0; --d) {{",
             "    if (d < nd) { int s = p.v[2 + d]; c[d] = r % s; r /= s; } else c[d] = 0;", "  }"]
    for k in range(n_views):
        b = 2 + MAX_DIMS + k * (2 + MAX_DIMS)
        lines.append(f"  int j{k} = p.v[{b}];")
        lines.append(f"  if (p.v[{b + 1}] == 0) j{k} += i; else if (p.v[{b + 1}] == 2) "
                     f"for (int d = 0; d < nd; ++d) j{k} += c[d] * p.v[{b + 2} + d];")
    return "\n".join(lines)


def _gather_src(T):
    """take_along_axis: view 0 is x with its axis stride zeroed, view 1 the indices (int64);
    scatter_add: one work-item per line along the axis (no atomics: deterministic sums)."""
    W2, W3 = param_words(2), param_words(3)
    return f"""
typedef struct {{ int v[{W3}]; }} burn_idx{W3};
__kernel void take_along(burn_idx{W2} p, __global {T}* out, __global const {T}* x, __global const long* idx,
                         const int n_axis, const int st_axis) {{
  int i = get_global_id(0); if (i >= p.v[0]) return;
{_coords(2)}
  long k = idx[j1]; if (k < 0) k += n_axis;
  out[i] = x[j0 + (int)k * st_axis];
}}
__kernel void scatter_add(burn_idx{W3} p, __global {T}* out, __global const long* idx, __global const {T}* src,
                          const int L, const int n_axis, const int so, const int si, const int ss) {{
  int i = get_global_id(0); if (i >= p.v[0]) return;
{_coords(3)}
  for (int l = 0; l < L; ++l) {{
    long k = idx[j1 + l * si]; if (k < 0) k += n_axis;
    out[j0 + (int)k * so] += src[j2 + l * ss];
  }}
}}"""


register("gather", ("take_along", "scatter_add"), lambda dtype, fp64: _gather_src(OPENCL.ctype(dtype)))
