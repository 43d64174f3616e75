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

from burn.codegen import OPENCL, param_words
from burn.errors import IndexOutOfRange
from burn.ops.movement import strided_index_plan

from .kernels import (_as_int64, _bshape, _filled, broadcast_to, contiguous, elementwise,
                      index_struct, permute)
from .library import _coords
from .tensor import empty, numel


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
        flag = np.zeros(1, np.int32)
        dc.download(bad.buf, 0, flag)          # one small read: an out-of-range index must not write astray
        if flag[0]:
            _raise_out_of_range(op, adv, axis)
    return off


def _raise_out_of_range(op, adv, axis):
    """numpy's message for the first bad index (the error path: the index arrays are read back)."""
    from .kernels import download
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
            from .kernels import copy_into
            copy_into(view, elementwise("add")(view, src))
        else:
            from .kernels import copy_into
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
