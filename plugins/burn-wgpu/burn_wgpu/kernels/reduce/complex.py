"""Reductions and scans of complex64 / complex128 tensors on wgpu.

The per-dtype library (``cl/reduce.cl``) computes in the storage type;
a complex value is a ``float2`` / ``double2`` whose vector ``*`` is
component-wise, so complex tensors get these kernels instead: sums with Kahan
compensation per part, products with the complex product, numpy's lexicographic order (NaN
first) for max/min/argmax/argmin, any/all testing both parts (each with a work-group per row,
or split over several, when rows are few and long: :func:`parallel_source`), cumulative
sums/products, and a matmul (any strides). The complex64 matmul runs ONE real matmul of the
library (tuned per device; PoCL does not vectorize float2 code): A read as real [M, 2K], B
expanded to the real [2K, 2N] matrix of 2x2 blocks [[br, bi], [-bi, br]], the real [M, 2N]
result read as C (:func:`_matmul_real`: the 4-multiplication products of numpy / BLAS);
complex128 runs ``tiled``, faster while the library's float64 matmul is slow on PoCL
(:func:`matmul_method`). ``BURN_WGPU_COMPLEX_MATMUL`` picks one for comparison: ``gauss`` (3
real products, 25% fewer flops, loses the smaller part of C), ``tiled`` (local-memory tiles of
A and B, ``matmul_tiled``) or ``simple`` (one work-item per element of C, ``matmul``). The
complex product and the constructor come from :mod:`burn.codegen.complex`, as in the
element-wise kernels.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.codegen import OPENCL
from burn.codegen.complex import helper_source
from burn.codegen.reduce import kahan_step

from ...native import empty, numel
from ..movement import contiguous, permute
from .generated import choose, local_size


@lru_cache(maxsize=None)
def complex_source(dtype: str) -> str:
    """The OpenCL program of the complex kernels of ``dtype`` (complex64 / complex128).

    >>> assert "__kernel void reduce_sum" in complex_source("complex64")
    """
    T = OPENCL.ctype(dtype)
    mk = lambda re_, im: OPENCL.make(dtype, re_, im)  # noqa: E731
    mul = f"burn_cmul_{dtype}"
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "complex128" else ""
    nz = "(v.x != 0 || v.y != 0)"
    # numpy's argmax/argmin of complex: strict lexicographic order, the first NaN wins
    nan = "(isnan({0}.x) || isnan({0}.y))"
    out = [pre + helper_source("cmul", dtype, OPENCL), f"""
__kernel void reduce_sum(int M, int R, __global {T}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} s = {mk('0', '0')}, c = {mk('0', '0')};
  for (int r = 0; r < R; ++r) {kahan_step(T, "s", "c", "p[r]", vector=True)}
  out[m] = s;
}}
__kernel void reduce_prod(int M, int R, __global {T}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} s = {mk('1', '0')}; for (int r = 0; r < R; ++r) s = {mul}(s, p[r]); out[m] = s;
}}
__kernel void reduce_any(int M, int R, __global uchar* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  uchar s = 0; for (int r = 0; r < R; ++r) {{ {T} v = p[r]; if {nz} {{ s = 1; break; }} }} out[m] = s;
}}
__kernel void reduce_all(int M, int R, __global uchar* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  uchar s = 1; for (int r = 0; r < R; ++r) {{ {T} v = p[r]; if (!{nz}) {{ s = 0; break; }} }} out[m] = s;
}}"""]
    for name, cmp in (("max", ">"), ("min", "<")):
        better = f"(v.x {cmp} b.x || (v.x == b.x && v.y {cmp} b.y) || {nan.format('v')})"
        out.append(f"""
__kernel void reduce_arg{name}(int M, int R, __global long* out, __global {T}* best, __global const {T}* in,
                            int off, int write_best) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} b = p[0]; long bi = 0;
  if (!{nan.format('b')}) for (int r = 1; r < R; ++r) {{
    {T} v = p[r];
    if {better} {{ b = v; bi = r; if {nan.format('b')} break; }}
  }}
  if (write_best) best[m] = b; else out[m] = bi;
}}""")
    for name, init, upd in (("cumsum", mk("0", "0"), "s = s + p[r]"), ("cumprod", mk("1", "0"), f"s = {mul}(s, p[r])")):
        out.append(f"""
__kernel void scan_{name}(int M, int L, __global {T}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * L;
  __global {T}* q = out + (long)m * L;
  {T} s = {init}; for (int r = 0; r < L; ++r) {{ {upd}; q[r] = s; }}
}}""")
    return "\n".join(out)


def _kernel(dc, dtype, name):
    return dc.kernel(complex_source(dtype), name)


@lru_cache(maxsize=None)
def parallel_source(dtype: str, L: int, blocked: bool) -> str:
    """Work-group kernels ``preduce_sum`` / ``preduce_prod`` of complex ``dtype``: work-group g
    reduces chunk ``g % S`` of row ``g / S`` (its items' shares, Kahan per part for sums, then a
    local-memory tree) to ``out[g]``. S = 1 is the work-group-per-row variant; a split runs it
    twice, the second time over the S partials of each row (R = S, S = 1).

    >>> src = parallel_source("complex64", 64, True)
    >>> assert "__kernel void preduce_sum" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src
    """
    T = OPENCL.ctype(dtype)
    mk = lambda re_, im: OPENCL.make(dtype, re_, im)  # noqa: E731
    mul = f"burn_cmul_{dtype}"
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "complex128" else ""
    if blocked:         # CPU devices: one contiguous block per item
        loop = (f"int cs = (hi - lo + {L - 1}) / {L}; int qa = lo + lid * cs; int qb = min(hi, qa + cs);"
                "\n  for (int r = qa; r < qb; ++r)")
    else:               # GPUs: strided shares, coalesced loads
        loop = f"for (int r = lo + lid; r < hi; r += {L})"
    out = [pre + helper_source("cmul", dtype, OPENCL)]
    for op, init, step, comb in (
            ("sum", mk("0", "0"), kahan_step(T, "s", "c", "p[r]", vector=True),
             "ta[lid] = ta[lid] + ta[lid + w];"),
            ("prod", mk("1", "0"), f"s = {mul}(s, p[r]);", f"ta[lid] = {mul}(ta[lid], ta[lid + w]);")):
        out.append(f"""
__kernel void preduce_{op}(int M, int R, int S, __global {T}* out, __global const {T}* in, int off) {{
  __local {T} ta[{L}];
  int g = get_group_id(0); int m = g / S; int lid = get_local_id(0);
  int ck = (R + S - 1) / S; int lo = (g % S) * ck; int hi = min(R, lo + ck); if (lo > R) lo = R;
  __global const {T}* p = in + off + (long)m * R;
  {T} s = {init}, c = {mk('0', '0')};
  {loop} {step}
  ta[lid] = {'s - c' if op == 'sum' else 's'};
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = {L // 2}; w > 0; w >>= 1) {{
    if (lid < w) {{ {comb} }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (lid == 0) out[g] = ta[0];
}}""")
    out.append(_parallel_select_source(T, L, loop))
    return "\n".join(out)


def _parallel_select_source(T, L, loop):
    """``preduce_arg{max,min}`` and ``preduce_{any,all}[_u8]``: the work-group / split twins of
    ``reduce_arg*`` / ``reduce_any`` / ``reduce_all`` (same arguments as ``preduce_sum`` plus
    their outputs). An arg kernel carries (value, index) pairs: each item scans its share in
    order (the first max, or the first NaN, wins), then a local-memory tree keeps the better
    pair, ties going to the lower index, so any order of shares (blocked or strided) gives
    numpy's answer; index -1 marks an item with an empty share. ``mode``: 0 writes the index,
    1 the value, 2 both (the partials of a split, whose second pass reads them back through
    ``idx`` / ``has_idx``). any/all: each item stops at its first hit, a tree ORs / ANDs."""
    nan = "(isnan({0}.x) || isnan({0}.y))"
    out = []
    for name, cmp in (("max", ">"), ("min", "<")):
        # is (v, vi) preferred over (b, bi)? numpy's lexicographic order, the first NaN winning
        out.append(f"""
inline int burn_better_{name}({T} v, long vi, {T} b, long bi) {{
  if (vi < 0) return 0;
  if (bi < 0) return 1;
  int nv = {nan.format('v')}, nb = {nan.format('b')};
  if (nb) return nv && vi < bi;
  if (nv) return 1;
  if (v.x {cmp} b.x || (v.x == b.x && v.y {cmp} b.y)) return 1;
  return v.x == b.x && v.y == b.y && vi < bi;
}}
__kernel void preduce_arg{name}(int M, int R, int S, __global long* oidx, __global {T}* obest, int mode,
                               __global const {T}* in, int off, __global const long* idx, int has_idx) {{
  __local {T} ta[{L}];
  __local long ti[{L}];
  int g = get_group_id(0); int m = g / S; int lid = get_local_id(0);
  int ck = (R + S - 1) / S; int lo = (g % S) * ck; int hi = min(R, lo + ck); if (lo > R) lo = R;
  __global const {T}* p = in + off + (long)m * R;
  {T} b = p[0]; long bi = -1;
  /* in order within a share (indices grow with r, partials' too): strictly better or the first
     NaN takes over, then the scan stops; the index order matters only in the tree */
  {loop} {{
    long vi = has_idx ? idx[(long)m * R + r] : r;
    {T} v = p[r];
    if (vi >= 0 && (bi < 0 || v.x {cmp} b.x || (v.x == b.x && v.y {cmp} b.y) || {nan.format('v')})) {{
      b = v; bi = vi;
      if ({nan.format('b')}) break;
    }}
  }}
  ta[lid] = b; ti[lid] = bi;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = {L // 2}; w > 0; w >>= 1) {{
    if (lid < w && burn_better_{name}(ta[lid + w], ti[lid + w], ta[lid], ti[lid])) {{
      ta[lid] = ta[lid + w]; ti[lid] = ti[lid + w];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (lid == 0) {{
    if (mode != 1) oidx[g] = ti[0];
    if (mode != 0) obest[g] = ta[0];
  }}
}}""")
    for name, hit, init in (("any", "", "0"), ("all", "!", "1")):
        for suffix, E, test in (("", T, "(v.x != 0 || v.y != 0)"), ("_u8", "uchar", "(v != 0)")):
            out.append(f"""
__kernel void preduce_{name}{suffix}(int M, int R, int S, __global uchar* out, __global const {E}* in, int off) {{
  __local uchar ta[{L}];
  int g = get_group_id(0); int m = g / S; int lid = get_local_id(0);
  int ck = (R + S - 1) / S; int lo = (g % S) * ck; int hi = min(R, lo + ck); if (lo > R) lo = R;
  __global const {E}* p = in + off + (long)m * R;
  uchar s = {init};
  {loop} {{ {E} v = p[r]; if ({hit}{test}) {{ s = !{init}; break; }} }}
  ta[lid] = s;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int w = {L // 2}; w > 0; w >>= 1) {{
    if (lid < w) ta[lid] = {'ta[lid] | ta[lid + w]' if name == 'any' else 'ta[lid] & ta[lid + w]'};
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  if (lid == 0) out[g] = ta[0];
}}""")
    return "\n".join(out)


LAST_VARIANT = [None]        # the latest complex reduction's (variant, S), for tests and benchmarks


def _parallel(op, src, out, M, R):
    """Run complex reduction ``op`` with a work-group per row or split, when the shape calls for
    it (:func:`burn_wgpu.kernels.reduce.generated.choose`, as the real reductions); False when one work-item
    per row is the choice. A split's second launch reduces the S partials of each row with the
    same kernel (arg ops: the partial values and their indices; any/all: the partial flags)."""
    dc = src.dc
    variant, S = choose(M, R, getattr(dc.device, "max_compute_units", 1) or 1, dc.is_cpu)
    LAST_VARIANT[0] = (variant, S)
    if variant == "row":
        return False
    L = local_size(dc)
    prog = parallel_source(src.dtype, L, bool(dc.is_cpu))
    i32 = np.int32
    S = 1 if variant == "group" else S
    head = [i32(M), i32(R), i32(S)]
    if op in ("sum", "prod"):
        k = dc.kernel(prog, f"preduce_{op}")
        if S == 1:
            dc.launch(k, M * L, head + [out.buf, src.buf, i32(src.offset)], local=L)
            return True
        part = empty(dc, (M * S,), src.dtype)
        dc.launch(k, M * S * L, head + [part.buf, src.buf, i32(src.offset)], local=L)
        dc.launch(k, M * L, [i32(M), i32(S), i32(1), out.buf, part.buf, i32(0)], local=L)
    elif op in ("any", "all"):
        k = dc.kernel(prog, f"preduce_{op}")
        if S == 1:
            dc.launch(k, M * L, head + [out.buf, src.buf, i32(src.offset)], local=L)
            return True
        part = empty(dc, (M * S,), "bool")
        dc.launch(k, M * S * L, head + [part.buf, src.buf, i32(src.offset)], local=L)
        dc.launch(dc.kernel(prog, f"preduce_{op}_u8"), M * L, [i32(M), i32(S), i32(1), out.buf, part.buf, i32(0)],
                  local=L)
    else:       # max / min / argmax / argmin
        k = dc.kernel(prog, "preduce_arg" + op[-3:])
        mode = i32(0 if op.startswith("arg") else 1)
        if S == 1:
            # oidx / obest: only the one ``mode`` names is written; idx unread (has_idx 0)
            dc.launch(k, M * L, head + [out.buf, out.buf, mode, src.buf, i32(src.offset), out.buf, i32(0)], local=L)
            return True
        pv, pi = empty(dc, (M * S,), src.dtype), empty(dc, (M * S,), "int64")
        dc.launch(k, M * S * L, head + [pi.buf, pv.buf, i32(2), src.buf, i32(src.offset), pi.buf, i32(0)], local=L)
        dc.launch(k, M * L, [i32(M), i32(S), i32(1), out.buf, out.buf, mode, pv.buf, i32(0), pi.buf, i32(1)],
                  local=L)
    return True


def reduce(op, x, axes, keepdims):
    """``op`` (sum, prod, max, min, argmax, argmin, any, all) of complex ``x`` over ``axes``."""
    dc = x.dc
    keep = [d for d in range(x.ndim) if d not in axes]
    src = contiguous(permute(x, axes=tuple(keep) + tuple(axes)))
    M = numel([x.shape[d] for d in keep])
    R = numel([x.shape[d] for d in axes])
    od = {"argmax": "int64", "argmin": "int64", "any": "bool", "all": "bool"}.get(op, x.dtype)
    shape = tuple(1 if d in axes else s for d, s in enumerate(x.shape)) if keepdims else \
        tuple(x.shape[d] for d in keep)
    out = empty(dc, shape, od)
    i32 = np.int32
    if M and R and _parallel(op, src, out, M, R):
        return out
    if op in ("max", "min", "argmax", "argmin"):
        # one kernel finds both: max/min write the best value, argmax/argmin its index
        dc.launch(_kernel(dc, x.dtype, "reduce_arg" + op[-3:]), M,
                  [i32(M), i32(R), out.buf, out.buf, src.buf, i32(src.offset), i32(not op.startswith("arg"))])
    else:
        dc.launch(_kernel(dc, x.dtype, f"reduce_{op}"), M, [i32(M), i32(R), out.buf, src.buf, i32(src.offset)])
    return out


def scan(op, src, M, L):
    """cumsum / cumprod along the last axis of the contiguous complex ``src`` ([M, L] rows)."""
    out = empty(src.dc, src.shape, src.dtype)
    src.dc.launch(_kernel(src.dc, src.dtype, f"scan_{op}"), M,
                  [np.int32(M), np.int32(L), out.buf, src.buf, np.int32(src.offset)])
    return out


