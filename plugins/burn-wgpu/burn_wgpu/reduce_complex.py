"""Reductions, scans and matmul of complex64 / complex128 tensors on wgpu.

The per-dtype library (:mod:`burn_wgpu.library`) computes in the storage type;
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

import os
from functools import lru_cache

import numpy as np

from burn.codegen import OPENCL
from burn.codegen.complex import PART, helper_source
from burn.codegen.reduce import kahan_step
from burn.errors import BurnError

from .tensor import WTensor, empty, numel


@lru_cache(maxsize=None)
def complex_source(dtype: str) -> str:
    """The OpenCL program of the complex kernels of ``dtype`` (complex64 / complex128).

    >>> assert "__kernel void reduce_sum" in complex_source("complex64")
    """
    T, R = OPENCL.ctype(dtype), OPENCL.ctype(PART[dtype])
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
    out.append(f"""
__kernel void matmul(const int M, const int N, const int K, const int NB,
                     __global const {T}* A, const int offA, const int sam, const int sak, const int sab,
                     __global const {T}* B, const int offB, const int sbk, const int sbn, const int sbb,
                     __global {T}* C) {{
  int i = get_global_id(0); if (i >= M * N * NB) return;
  int n = i % N, m = (i / N) % M, b = i / (M * N);
  __global const {T}* a = A + offA + (long)b * sab + (long)m * sam;
  __global const {T}* q = B + offB + (long)b * sbb + (long)n * sbn;
  {R} re = 0, im = 0;
  for (int k = 0; k < K; ++k) {{
    {T} x = a[(long)k * sak], y = q[(long)k * sbk];
    re += x.x * y.x - x.y * y.y; im += x.x * y.y + x.y * y.x;
  }}
  C[i] = {mk('re', 'im')};
}}""")
    out.append(_tiled_matmul_source(T, R, mk))
    out.append(_real_matmul_source(T, R, mk))
    return "\n".join(out)


# the tiled complex matmul: each work-group computes a CT x CT tile of C from CT x CTK tiles of
# A and B staged in local memory (every element of A and B is read from global memory CT / CW
# times less often than by the one-work-item-per-output kernel); tiles are stored as separate
# real and imaginary planes and each work-item keeps CW x CW accumulators per part, so the
# inner loop is plain real arithmetic PoCL vectorizes across work-items. 64/4/16 measured best
# on PoCL (512³: 32/4/16 ~1.6x slower, 64/4/8 ~3x slower, 128/8/16 ~2.5x slower)
CT = 64
CW = 4
CTK = 16


def _tiled_matmul_source(T, R, mk):
    L = CT // CW
    return f"""
__kernel __attribute__((reqd_work_group_size({L}, {L}, 1)))
void matmul_tiled(const int M, const int N, const int K,
                  __global const {T}* A, const int offA, const int sam, const int sak, const int sab,
                  __global const {T}* B, const int offB, const int sbk, const int sbn, const int sbb,
                  __global {T}* C) {{
  int tx = get_local_id(0), ty = get_local_id(1);
  int bn = get_group_id(0) * {CT}, bm = get_group_id(1) * {CT};
  int b = get_global_id(2);
  __local {R} Ar[{CTK}][{CT}], Ai[{CTK}][{CT}];
  __local {R} Br[{CTK}][{CT}], Bi[{CTK}][{CT}];
  {R} re[{CW}][{CW}], im[{CW}][{CW}];
  for (int i = 0; i < {CW}; ++i) for (int j = 0; j < {CW}; ++j) {{ re[i][j] = 0; im[i][j] = 0; }}
  A += offA + (long)b * sab;
  B += offB + (long)b * sbb;
  int t = ty * {L} + tx;
  for (int k0 = 0; k0 < K; k0 += {CTK}) {{
    for (int l = 0; l < {CT * CTK // (L * L)}; ++l) {{
      int e = t + l * {L * L};
      int mm = e / {CTK}, kk = e % {CTK};
      int gm = bm + mm, gk = k0 + kk;
      {T} va = (gm < M && gk < K) ? A[(long)gm * sam + (long)gk * sak] : {mk('0', '0')};
      Ar[kk][mm] = va.x; Ai[kk][mm] = va.y;
      int kb = e / {CT}, nn = e % {CT};
      int gn = bn + nn, gkb = k0 + kb;
      {T} vb = (gn < N && gkb < K) ? B[(long)gkb * sbk + (long)gn * sbn] : {mk('0', '0')};
      Br[kb][nn] = vb.x; Bi[kb][nn] = vb.y;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < {CTK}; ++kk) {{
      {R} ar[{CW}], ai[{CW}], cr[{CW}], ci[{CW}];
      for (int i = 0; i < {CW}; ++i) {{ ar[i] = Ar[kk][ty + {L} * i]; ai[i] = Ai[kk][ty + {L} * i]; }}
      for (int j = 0; j < {CW}; ++j) {{ cr[j] = Br[kk][tx + {L} * j]; ci[j] = Bi[kk][tx + {L} * j]; }}
      for (int i = 0; i < {CW}; ++i) for (int j = 0; j < {CW}; ++j) {{
        re[i][j] += ar[i] * cr[j] - ai[i] * ci[j];
        im[i][j] += ar[i] * ci[j] + ai[i] * cr[j];
      }}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  for (int i = 0; i < {CW}; ++i) for (int j = 0; j < {CW}; ++j) {{
    int gm = bm + ty + {L} * i, gn = bn + tx + {L} * j;
    if (gm < M && gn < N) C[((long)b * M + gm) * N + gn] = {mk('re[i][j]', 'im[i][j]')};
  }}
}}"""


def _real_matmul_source(T, R, mk):
    """Helpers of the complex matmuls that run the real library kernel (``MATMUL`` "real" and
    "gauss"): ``matmul_expand_b`` writes B [K, N] (any strides) as the real [2K, 2N] matrix
    of 2x2 blocks [[br, bi], [-bi, br]]; ``matmul_split`` writes X [R, C] (any strides) as
    three real planes re, im, re + im; ``matmul_gauss`` combines the three real products."""
    return f"""
__kernel void matmul_expand_b(const int K, const int N, const int NB,
                              __global const {T}* B, const int offB, const int sbk, const int sbn, const int sbb,
                              __global {T}* P) {{
  int i = get_global_id(0); if (i >= NB * K * N) return;
  int n = i % N, k = (i / N) % K, b = i / (K * N);
  {T} v = B[offB + (long)b * sbb + (long)k * sbk + (long)n * sbn];
  /* P as [NB][2K][N] complex = [NB][2K][2N] real: row 2k (br, bi), row 2k + 1 (-bi, br) */
  __global {T}* p = P + ((long)b * 2 * K + 2 * k) * N + n;
  p[0] = v;
  p[N] = {mk('-v.y', 'v.x')};
}}
__kernel void matmul_split(const int Rn, const int Cn, const int NB,
                           __global const {T}* X, const int off, const int sr, const int sc, const int sb,
                           __global {R}* P) {{
  int i = get_global_id(0); long n = (long)NB * Rn * Cn; if (i >= n) return;
  int c = i % Cn, r = (i / Cn) % Rn, b = i / (Rn * Cn);
  {T} v = X[off + (long)b * sb + (long)r * sr + (long)c * sc];
  P[i] = v.x; P[n + i] = v.y; P[2 * n + i] = v.x + v.y;
}}
__kernel void matmul_gauss(const int n, __global const {R}* t, __global {T}* C) {{
  int i = get_global_id(0); if (i >= n) return;
  {R} t1 = t[i], t2 = t[n + i], t3 = t[2 * n + i];
  C[i] = {mk('t1 - t2', 't3 - t1 - t2')};
}}"""


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
    it (:func:`burn_wgpu.reduce_fused.choose`, as the real reductions); False when one work-item
    per row is the choice. A split's second launch reduces the S partials of each row with the
    same kernel (arg ops: the partial values and their indices; any/all: the partial flags)."""
    from .reduce_fused import choose, local_size
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
    from .kernels import contiguous, permute
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


def matmul(a, b, batch, sa, sb):
    """C = a @ b of complex a [..., M, K] and b [..., K, N], batch dims walked by ``sa`` / ``sb``
    (in complex elements; 0 where an operand is shared by every batch). ``MATMUL`` picks the
    method (:func:`matmul_method`): "real" runs the real library matmul once, "gauss" three
    times (3 real products), "tiled" / "simple" the complex kernels of :func:`complex_source`.

    >>> import burn, numpy as np
    >>> dev = burn.Device.wgpu()
    >>> a = np.full((2, 3), 1 + 2j, np.complex64)
    >>> c = (burn.tensor(a, device=dev) @ burn.tensor(a.T.copy(), device=dev)).numpy()
    >>> assert np.allclose(c, a @ a.T)
    """
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    nb = numel(batch)
    shape = tuple(batch) + (M, N)
    method = matmul_method(a.dtype)
    if method not in ("real", "gauss", "tiled", "simple"):
        raise BurnError(f"wgpu: complex matmul of {a.shape} @ {b.shape} ({a.dtype}): unknown method "
                        f"BURN_WGPU_COMPLEX_MATMUL={MATMUL!r}; use auto, real, gauss, tiled or simple")
    if method == "real":
        return _matmul_real(a, b, nb, sa, sb, shape)
    if method == "gauss" and K and numel(shape):
        return _matmul_gauss(a, b, nb, sa, sb, shape)
    out = empty(a.dc, shape, a.dtype)
    if not out.size:
        return out
    i32 = np.int32
    args = [i32(M), i32(N), i32(K), a.buf, i32(a.offset), i32(a.strides[-2]), i32(a.strides[-1]), i32(sa),
            b.buf, i32(b.offset), i32(b.strides[-2]), i32(b.strides[-1]), i32(sb), out.buf]
    if method == "tiled":
        L = CT // CW
        a.dc.launch2d(_kernel(a.dc, a.dtype, "matmul_tiled"), (-(-N // CT) * L, -(-M // CT) * L, nb), (L, L, 1), args)
    else:
        a.dc.launch(_kernel(a.dc, a.dtype, "matmul"), out.size, args[:3] + [i32(nb)] + args[3:])
    return out


def _matmul_real(a, b, nb, sa, sb, shape):
    """The complex product as ONE real matmul of the library (tuned per device; PoCL does not
    vectorize the float2 arithmetic of the complex kernels): A [M, K] complex is, in memory,
    the real [M, 2K] matrix (re, im interleaved) and the real [M, 2N] result is C [M, N]
    complex, if B becomes the real [2K, 2N] matrix of blocks [[br, bi], [-bi, br]]:
    C[m, 2n] = sum ar br - ai bi, C[m, 2n + 1] = sum ar bi + ai br, the 4-multiplication
    products numpy / BLAS compute (the 3-multiplication "gauss" form loses the smaller part
    when one part is much smaller than the other). Costs beyond the 8MKN flops: one pass
    writing the expanded B (4KN reals, O(KN) against O(MKN)), and a contiguous copy of A
    when A is not contiguous along K (a transposed view)."""
    from .kernels import contiguous
    from .kernels import matmul as real_matmul
    dc = a.dc
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    part = PART[a.dtype]
    if not numel(shape):
        return empty(dc, shape, a.dtype)
    na, nbb = (nb if sa else 1), (nb if sb else 1)
    av = a.view((na, M, K), (sa, a.strides[-2], a.strides[-1]), a.offset)
    if K > 1 and a.strides[-1] != 1:
        # complex element k must be reals 2k, 2k + 1 of the row: copy (O(MK))
        av = contiguous(av)
    if 2 * (av.offset + sum((s - 1) * abs(st) for s, st in zip(av.shape, av.strides)) + 1) >= 2 ** 31:
        # the real kernel indexes A's reals with 32-bit offsets and strides
        raise BurnError(f"wgpu: complex matmul {a.shape} @ {b.shape} ({a.dtype}): A spans 2**30 or more "
                        f"complex elements of its buffer, which the real matmul cannot index; split the "
                        f"matmul along M or the batch, or set BURN_WGPU_COMPLEX_MATMUL=tiled")
    af = WTensor(dc, av.block, (nb, M, 2 * K), part, (2 * av.strides[0] if na > 1 else 0, 2 * av.strides[1], 1),
                 2 * av.offset)
    P = empty(dc, (nbb, 2 * K, 2 * N), part)        # in reals: empty() checks the real kernel's limit
    i32 = np.int32
    dc.launch(_kernel(dc, a.dtype, "matmul_expand_b"), nbb * K * N,
              [i32(K), i32(N), i32(nbb), b.buf, i32(b.offset), i32(b.strides[-2]), i32(b.strides[-1]), i32(sb),
               P.buf])
    bf = WTensor(dc, P.block, (nb, 2 * K, 2 * N), part, (4 * K * N if nbb > 1 else 0, 2 * N, 1), 0)
    cf = real_matmul(af, bf)
    assert cf.is_contiguous and cf.offset % 2 == 0, cf
    return WTensor(dc, cf.block, shape, a.dtype, None, cf.offset // 2)


def _matmul_gauss(a, b, nb, sa, sb, shape):
    """The complex product as 3 real products (Gauss / Karatsuba): t1 = Ar Br, t2 = Ai Bi,
    t3 = (Ar + Ai)(Br + Bi), C = (t1 - t2) + i (t3 - t1 - t2), run as one batched real matmul
    of the three planes of A and B. 6MKN flops against 8MKN, but the imaginary part is a
    difference of the (larger) t3 and t1 + t2: it loses accuracy when it is small against the
    real part (and the real part when |Ar Br| ~ |Ai Bi| both large). For comparison
    (``BURN_WGPU_COMPLEX_MATMUL=gauss``), not the default."""
    from .kernels import matmul as real_matmul
    dc = a.dc
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    part = PART[a.dtype]
    na, nbb = (nb if sa else 1), (nb if sb else 1)
    i32 = np.int32
    split = _kernel(dc, a.dtype, "matmul_split")
    pa = empty(dc, (3, na, M, K), part)
    dc.launch(split, na * M * K, [i32(M), i32(K), i32(na), a.buf, i32(a.offset), i32(a.strides[-2]),
                                  i32(a.strides[-1]), i32(sa), pa.buf])
    pb = empty(dc, (3, nbb, K, N), part)
    dc.launch(split, nbb * K * N, [i32(K), i32(N), i32(nbb), b.buf, i32(b.offset), i32(b.strides[-2]),
                                   i32(b.strides[-1]), i32(sb), pb.buf])
    va = pa.view((3, nb, M, K), (na * M * K, M * K if na > 1 else 0, K, 1), 0)
    vb = pb.view((3, nb, K, N), (nbb * K * N, K * N if nbb > 1 else 0, N, 1), 0)
    t = real_matmul(va, vb)
    assert t.is_contiguous, t
    out = empty(dc, shape, a.dtype)
    n = nb * M * N
    dc.launch(_kernel(dc, a.dtype, "matmul_gauss"), n, [i32(n), t.buf, out.buf])
    return out


# "auto" (the default: matmul_method), "real" (one real library matmul), "gauss" (three),
# "tiled" (local-memory complex tiles) or "simple" (one work-item per element of C); the
# benchmark and the tests switch it to compare
MATMUL = os.environ.get("BURN_WGPU_COMPLEX_MATMUL", "auto")


def matmul_method(dtype: str) -> str:
    """The complex matmul method of ``dtype``: ``MATMUL``, or for "auto" the one measured
    fastest on PoCL at 512³: "real" for complex64 (47 ms against 72 ms tiled, numpy 8 ms),
    "tiled" for complex128 (with 16 doubles per work-item the library's float64 matmul ran ~18x
    slower than its float32 one and the real path took 600 ms against 128 ms tiled; with 8 it
    runs ~5x faster and the two paths are even, 104-131 ms against 83-104 ms, so tiled stays).

    >>> assert matmul_method("complex64") == ("real" if MATMUL == "auto" else MATMUL)
    """
    if MATMUL != "auto":
        return MATMUL
    return "real" if dtype == "complex64" else "tiled"
