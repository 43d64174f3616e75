"""OpenCL C of the kernels that are not element-wise, one program per dtype.

Each dtype's program holds its reductions, scans, matmul, creation kernels
and the strided write used by slicing gradients, padding and concatenation;
sizes, strides and offsets are run-time arguments, so a program is compiled
once per dtype and device (then loaded from the disk cache).
"""
from __future__ import annotations

from functools import lru_cache

from burn.codegen import MAX_DIMS, OPENCL, param_words

TILE = 64          # matmul tile (rows and columns of C per work-group)
TK = 16            # matmul depth per tile
WPT = 4            # matmul: each work-item computes WPT x WPT values of C


def _k(dtype):
    return "f" if dtype.startswith("float") else "b" if dtype == "bool" else "u" if dtype == "uint8" else "i"


def _reduce_src(T, t, fp64):
    k = _k(t)
    acc_int = "long"
    out = []
    # sum / prod: integers and bool accumulate in int64 (numpy's rule); floats in their own
    # type with Kahan compensation, so long rows stay within float32 tolerance
    if k == "f":
        out.append(f"""
__kernel void reduce_sum(int M, int R, __global {T}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} s = 0, c = 0;
  for (int r = 0; r < R; ++r) {{ {T} y = p[r] - c; {T} t = s + y; c = (t - s) - y; s = t; }}
  out[m] = s;
}}
__kernel void reduce_prod(int M, int R, __global {T}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} s = 1; for (int r = 0; r < R; ++r) s *= p[r]; out[m] = s;
}}""")
    else:
        out.append(f"""
__kernel void reduce_sum(int M, int R, __global long* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {acc_int} s = 0; for (int r = 0; r < R; ++r) s += p[r]; out[m] = s;
}}
__kernel void reduce_prod(int M, int R, __global long* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {acc_int} s = 1; for (int r = 0; r < R; ++r) s *= p[r]; out[m] = s;
}}""")
    nan = (lambda v: f"isnan({v})") if k == "f" else (lambda v: "0")
    for name, cmp in (("max", ">"), ("min", "<")):
        out.append(f"""
__kernel void reduce_{name}(int M, int R, __global {T}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} b = p[0];
  for (int r = 1; r < R; ++r) {{ {T} v = p[r]; if (!({nan('b')}) && ({nan('v')} || v {cmp} b)) b = v; }}
  out[m] = b;
}}
__kernel void reduce_arg{name}(int M, int R, __global long* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  {T} b = p[0]; long bi = 0;
  for (int r = 1; r < R; ++r) {{ {T} v = p[r]; if (!({nan('b')}) && ({nan('v')} || v {cmp} b)) {{ b = v; bi = r; }} }}
  out[m] = bi;
}}""")
    out.append(f"""
__kernel void reduce_any(int M, int R, __global uchar* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  uchar s = 0; for (int r = 0; r < R; ++r) if (p[r] != 0) {{ s = 1; break; }} out[m] = s;
}}
__kernel void reduce_all(int M, int R, __global uchar* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * R;
  uchar s = 1; for (int r = 0; r < R; ++r) if (p[r] == 0) {{ s = 0; break; }} out[m] = s;
}}""")
    A = T if k == "f" else "long"
    for name, init, opx in (("cumsum", "0", "s += p[r]"), ("cumprod", "1", "s *= p[r]")):
        out.append(f"""
__kernel void scan_{name}(int M, int L, __global {A}* out, __global const {T}* in, int off) {{
  int m = get_global_id(0); if (m >= M) return;
  __global const {T}* p = in + off + (long)m * L;
  __global {A}* q = out + (long)m * L;
  {A} s = {init}; for (int r = 0; r < L; ++r) {{ {opx}; q[r] = s; }}
}}""")
    return "\n".join(out)


def _matmul_src(T):
    return f"""
__kernel __attribute__((reqd_work_group_size({TILE // WPT}, {TILE // WPT}, 1)))
void matmul(const int M, const int N, const int K,
            __global const {T}* A, const int offA, const int sam, const int sak, const int sab,
            __global const {T}* B, const int offB, const int sbk, const int sbn, const int sbb,
            __global {T}* C) {{
  const int L = {TILE // WPT};
  int tx = get_local_id(0), ty = get_local_id(1);
  int bn = get_group_id(0) * {TILE}, bm = get_group_id(1) * {TILE};
  int b = get_global_id(2);
  __local {T} As[{TK}][{TILE}];
  __local {T} Bs[{TK}][{TILE}];
  {T} acc[{WPT}][{WPT}];
  for (int i = 0; i < {WPT}; ++i) for (int j = 0; j < {WPT}; ++j) acc[i][j] = 0;
  A += offA + (long)b * sab;
  B += offB + (long)b * sbb;
  int t = ty * L + tx;
  for (int k0 = 0; k0 < K; k0 += {TK}) {{
    for (int l = 0; l < {TILE * TK} / (L * L); ++l) {{
      int e = t + l * L * L;
      int mm = e / {TK}, kk = e % {TK};
      int gm = bm + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < K) ? A[(long)gm * sam + (long)gk * sak] : ({T})0;
      int kb = e / {TILE}, nn = e % {TILE};
      int gn = bn + nn, gkb = k0 + kb;
      Bs[kb][nn] = (gn < N && gkb < K) ? B[(long)gkb * sbk + (long)gn * sbn] : ({T})0;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < {TK}; ++kk) {{
      {T} a[{WPT}], c[{WPT}];
      for (int i = 0; i < {WPT}; ++i) a[i] = As[kk][ty + L * i];
      for (int j = 0; j < {WPT}; ++j) c[j] = Bs[kk][tx + L * j];
      for (int i = 0; i < {WPT}; ++i) for (int j = 0; j < {WPT}; ++j) acc[i][j] += a[i] * c[j];
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  for (int i = 0; i < {WPT}; ++i) for (int j = 0; j < {WPT}; ++j) {{
    int gm = bm + ty + L * i, gn = bn + tx + L * j;
    if (gm < M && gn < N) C[((long)b * M + gm) * N + gn] = acc[i][j];
  }}
}}"""


VW = 16           # matmul_rows: columns of C per work-item (one vector)
RM = 4            # matmul_rows: rows of C per work-item


def _matmul_rows_src(T, is_float):
    """CPU-friendly matmul (PoCL): no local memory or barriers; each work-item keeps a
    RM x VW block of C in vector registers, reading rows of B as vectors (B's rows must
    be contiguous) and A as broadcast scalars. ~4x the tiled kernel on a CPU device."""
    V = f"{T}{VW}"
    rows = range(RM)
    ptrs = "\n".join(f"  __global const {T}* a{i} = A + (long)min(m0 + {i}, M - 1) * sam;" for i in rows)
    if is_float:
        upd = "\n".join(f"      acc{i} = fma(({V})(a{i}[ka]), bv, acc{i});" for i in rows)
    else:
        upd = "\n".join(f"      acc{i} += ({V})(a{i}[ka]) * bv;" for i in rows)
    init = " ".join(f"{V} acc{i} = ({V})(0);" for i in rows)
    store = "\n".join(f"    if (m0 + {i} < M) vstore{VW}(acc{i}, 0, Cb + (long)(m0 + {i}) * N + n0);" for i in rows)
    return f"""
__kernel void matmul_rows(const int M, const int N, const int K,
            __global const {T}* A, const int offA, const int sam, const int sak, const int sab,
            __global const {T}* B, const int offB, const int sbk, const int sbb,
            __global {T}* C) {{
  int n0 = get_global_id(0) * {VW}, m0 = get_global_id(1) * {RM}, b = get_global_id(2);
  if (n0 >= N || m0 >= M) return;
  A += offA + (long)b * sab;
  B += offB + (long)b * sbb;
  __global {T}* Cb = C + (long)b * M * N;
{ptrs}
  if (n0 + {VW} <= N) {{
    {init}
    __global const {T}* bp = B + n0;
    for (int k = 0; k < K; ++k) {{
      {V} bv = vload{VW}(0, bp);
      bp += sbk;
      int ka = k * sak;
{upd}
    }}
{store}
  }} else {{
    __global const {T}* ar[{RM}] = {{{", ".join(f"a{i}" for i in rows)}}};
    for (int j = n0; j < N; ++j) {{
      {T} acc[{RM}];
      for (int i = 0; i < {RM}; ++i) acc[i] = 0;
      for (int k = 0; k < K; ++k) {{
        {T} bv = B[(long)k * sbk + j];
        for (int i = 0; i < {RM}; ++i) acc[i] += ar[i][k * sak] * bv;
      }}
      for (int i = 0; i < {RM}; ++i) if (m0 + i < M) Cb[(long)(m0 + i) * N + j] = acc[i];
    }}
  }}
}}"""


def _matmul_packed_src(T, is_float):
    """CPU-friendly matmul with B packed (PoCL): ``pack_b`` copies B (any strides) into
    column panels ``P[batch][N / VW][K][VW]``, so the matmul walks contiguous memory along K
    (row-major B of 1024 columns otherwise touches a new page every step of k: TLB-bound);
    each work-item keeps an RM x VW block of C in vector registers (A as broadcast scalars,
    fma). No local memory or barriers: a CPU device has neither fast."""
    V = f"{T}{VW}"
    rows = range(RM)
    ptrs = "\n".join(f"  __global const {T}* a{i} = A + (long)min(m0 + {i}, M - 1) * sam;" for i in rows)
    if is_float:
        upd = "\n".join(f"    acc{i} = fma(({V})(a{i}[ka]), bv, acc{i});" for i in rows)
    else:
        upd = "\n".join(f"    acc{i} += ({V})(a{i}[ka]) * bv;" for i in rows)
    init = " ".join(f"{V} acc{i} = ({V})(0);" for i in rows)
    full = "\n".join(f"    if (m0 + {i} < M) vstore{VW}(acc{i}, 0, Cb + (long)(m0 + {i}) * N + n0);" for i in rows)
    part = "\n".join(f"    if (m0 + {i} < M) {{ vstore{VW}(acc{i}, 0, t); for (int j = 0; j < N - n0; ++j) "
                     f"Cb[(long)(m0 + {i}) * N + n0 + j] = t[j]; }}" for i in rows)
    return f"""
__kernel void pack_b(const int K, const int N, const int NB, __global const {T}* B, const int offB,
                     const int sbk, const int sbn, const int sbb, __global {T}* P) {{
  int i = get_global_id(0), nb = get_global_id(1), b = get_global_id(2);
  if (i >= K * {VW}) return;
  int k = i / {VW}, n = nb * {VW} + i % {VW};
  P[((long)b * NB + nb) * K * {VW} + i] = n < N ? B[offB + (long)b * sbb + (long)k * sbk + (long)n * sbn] : ({T})0;
}}
__kernel void matmul_packed(const int M, const int N, const int K,
            __global const {T}* A, const int offA, const int sam, const int sak, const int sab,
            __global const {T}* P, const int NB, const int spb, __global {T}* C) {{
  int nb = get_global_id(0), m0 = get_global_id(1) * {RM}, b = get_global_id(2);
  int n0 = nb * {VW};
  if (nb >= NB || m0 >= M) return;
  A += offA + (long)b * sab;
  __global const {T}* bp = P + (long)b * spb + (long)nb * K * {VW};
  __global {T}* Cb = C + (long)b * M * N;
{ptrs}
  {init}
  for (int k = 0; k < K; ++k) {{
    {V} bv = vload{VW}(k, bp);
    int ka = k * sak;
{upd}
  }}
  if (n0 + {VW} <= N) {{
{full}
  }} else {{
    {T} t[{VW}];
{part}
  }}
}}"""


def _rows_src(T):
    """Row-wise reduce-then-broadcast kernels of burn::softmax(_grad), burn::log_softmax(_grad) and
    burn::layer_norm(_grad).

    softmax rows are the ``L`` elements ``base + k * I`` of a contiguous [O, L, I] tensor (any
    axis, no transpose; neighbouring work-items read neighbouring ``i``); layer_norm rows are
    contiguous [R, D]. One work-item per row: three passes over a row that stays in cache."""
    return f"""
__kernel void row_softmax(const int O, const int L, const int I, __global {T}* out,
                          __global const {T}* x, const int offx) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
  {T} mx = p[0];
  for (int k = 1; k < L; ++k) {{ {T} v = p[(long)k * I]; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}
  {T} s = 0;
  for (int k = 0; k < L; ++k) {{ {T} e = exp(p[(long)k * I] - mx); q[(long)k * I] = e; s += e; }}
  {T} r = ({T})1 / s;
  for (int k = 0; k < L; ++k) q[(long)k * I] *= r;
}}
__kernel void row_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                               __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
  {T} s = 0;
  for (int k = 0; k < L; ++k) s += py[(long)k * I] * pg[(long)k * I];
  for (int k = 0; k < L; ++k) out[base + (long)k * I] = py[(long)k * I] * (pg[(long)k * I] - s);
}}
__kernel void row_log_softmax(const int O, const int L, const int I, __global {T}* out,
                              __global const {T}* x, const int offx) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
  {T} mx = p[0];
  for (int k = 1; k < L; ++k) {{ {T} v = p[(long)k * I]; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}
  if (!isfinite(mx)) mx = 0;    /* as core's logsumexp: an all -inf row gives NaN, not -inf */
  {T} s = 0, c = 0;             /* Kahan: rows of 1e5 float32 values stay within tolerance */
  for (int k = 0; k < L; ++k) {{ {T} y = exp(p[(long)k * I] - mx) - c; {T} t = s + y; c = (t - s) - y; s = t; }}
  {T} ls = log(s);
  for (int k = 0; k < L; ++k) q[(long)k * I] = (p[(long)k * I] - mx) - ls;
}}
__kernel void row_log_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                                   __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
  {T} s = 0, c = 0;
  for (int k = 0; k < L; ++k) {{ {T} v = pg[(long)k * I] - c; {T} t = s + v; c = (t - s) - v; s = t; }}
  for (int k = 0; k < L; ++k) out[base + (long)k * I] = pg[(long)k * I] - exp(py[(long)k * I]) * s;
}}
__kernel void row_layer_norm(const int R, const int D, __global {T}* out, __global const {T}* x, const int offx,
                             __global const {T}* w, const int offw, __global const {T}* b, const int offb,
                             const {T} eps) {{
  int m = get_global_id(0); if (m >= R) return;
  __global const {T}* p = x + offx + (long)m * D;
  __global {T}* q = out + (long)m * D;
  {T} s = 0;
  for (int k = 0; k < D; ++k) s += p[k];
  {T} mean = s / D, v = 0;
  for (int k = 0; k < D; ++k) {{ {T} d = p[k] - mean; v += d * d; }}
  {T} r = ({T})1 / sqrt(v / D + eps);
  for (int k = 0; k < D; ++k) q[k] = (p[k] - mean) * r * w[offw + k] + b[offb + k];
}}
__kernel void row_layer_norm_grad(const int R, const int D, __global {T}* dx, __global {T}* stats,
                                  __global const {T}* x, const int offx, __global const {T}* w, const int offw,
                                  __global const {T}* g, const int offg, const {T} eps) {{
  int m = get_global_id(0); if (m >= R) return;
  __global const {T}* p = x + offx + (long)m * D;
  __global const {T}* pg = g + offg + (long)m * D;
  __global {T}* q = dx + (long)m * D;
  {T} s = 0;
  for (int k = 0; k < D; ++k) s += p[k];
  {T} mean = s / D, v = 0;
  for (int k = 0; k < D; ++k) {{ {T} d = p[k] - mean; v += d * d; }}
  {T} r = ({T})1 / sqrt(v / D + eps);
  {T} sgh = 0, sghx = 0;
  for (int k = 0; k < D; ++k) {{ {T} gh = pg[k] * w[offw + k]; sgh += gh; sghx += gh * (p[k] - mean) * r; }}
  sgh /= D; sghx /= D;
  for (int k = 0; k < D; ++k) q[k] = r * (pg[k] * w[offw + k] - sgh - (p[k] - mean) * r * sghx);
  stats[2 * m] = mean; stats[2 * m + 1] = r;
}}
__kernel void col_layer_norm_grad(const int R, const int D, __global {T}* dw, __global {T}* db,
                                  __global const {T}* stats, __global const {T}* x, const int offx,
                                  __global const {T}* g, const int offg) {{
  int k = get_global_id(0); if (k >= D) return;
  {T} sw = 0, sb = 0;
  for (int m = 0; m < R; ++m) {{
    {T} gv = g[offg + (long)m * D + k];
    sw += gv * (x[offx + (long)m * D + k] - stats[2 * m]) * stats[2 * m + 1];
    sb += gv;
  }}
  dw[k] = sw; db[k] = sb;
}}"""


def _creation_src(T, fp64):
    F = "double" if fp64 else "float"
    return f"""
__kernel void arange_i(int n, __global {T}* out, long start, long step) {{
  int i = get_global_id(0); if (i < n) out[i] = ({T})(start + (long)i * step);
}}
__kernel void arange_f(int n, __global {T}* out, {F} start, {F} step) {{
  int i = get_global_id(0); if (i < n) out[i] = ({T})(start + ({F})i * step);
}}
__kernel void linspace(int n, __global {T}* out, {F} start, {F} step, {F} stop, int endpoint) {{
  int i = get_global_id(0); if (i >= n) return;
  {F} v = ({F})i * step + start;
  if (endpoint && n > 1 && i == n - 1) v = stop;
  out[i] = ({T})v;
}}
__kernel void eye(int n, __global {T}* out, int m, int k) {{
  int i = get_global_id(0); if (i >= n) return;
  int r = i / m, c = i % m;
  out[i] = (c - r == k) ? ({T})1 : ({T})0;
}}"""


def _copy_into_src(T):
    """dst (a strided view, input 0 of the index struct) = src (input 1, any layout)."""
    W = param_words(2)
    b0, b1 = 2 + MAX_DIMS, 2 + MAX_DIMS + (2 + MAX_DIMS)
    return f"""
__kernel void copy_into(burn_idx{W} p, __global {T}* dst, __global const {T}* src) {{
  int i = get_global_id(0); if (i >= p.v[0]) return;
  int nd = p.v[1];
  int c[{MAX_DIMS}];
  int r = i;
  for (int d = {MAX_DIMS - 1}; d >= 0; --d) {{
    if (d < nd) {{ int s = p.v[2 + d]; c[d] = r % s; r /= s; }} else c[d] = 0;
  }}
  int j0 = p.v[{b0}], j1 = p.v[{b1}];
  if (p.v[{b0 + 1}] == 0) j0 += i; else if (p.v[{b0 + 1}] == 2) for (int d = 0; d < nd; ++d) j0 += c[d] * p.v[{b0 + 2} + d];
  if (p.v[{b1 + 1}] == 0) j1 += i; else if (p.v[{b1 + 1}] == 2) for (int d = 0; d < nd; ++d) j1 += c[d] * p.v[{b1 + 2} + d];
  dst[j0] = src[j1];
}}"""


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


# kernel name -> the part of the library holding it: each part is its own program, so a
# dtype compiles only what it uses (PoCL takes ~0.3-1 s per program; int8 rarely needs a matmul)
_PARTS = {"reduce": ("reduce_", "scan_"), "matmul": ("matmul",), "matmul_cpu": ("matmul_rows", "matmul_packed",
                                                                                 "pack_b"),
          "create": ("arange_", "linspace", "eye"), "copy": ("copy_into",), "gather": ("take_along", "scatter_add"),
          "rows": ("row_softmax", "row_softmax_grad", "row_log_softmax", "row_log_softmax_grad", "row_layer_norm", "row_layer_norm_grad",
                   "col_layer_norm_grad")}


def part_of(name: str) -> str:
    """The library part holding kernel ``name``.

    >>> assert part_of("reduce_sum") == "reduce" and part_of("matmul_packed") == "matmul_cpu"
    """
    for part in ("matmul_cpu", "reduce", "matmul", "create", "copy", "gather", "rows"):
        if name in _PARTS[part] or any(name.startswith(p) for p in _PARTS[part] if p.endswith("_")):
            return part
    raise KeyError(name)


@lru_cache(maxsize=None)
def library_source(dtype: str, fp64: bool, part: str) -> str:
    """The program of one ``part`` (see :func:`part_of`) of the non-element-wise kernels of ``dtype``."""
    T = OPENCL.ctype(dtype)
    parts = []
    if fp64:
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if dtype == "float16":
        parts.append("#pragma OPENCL EXTENSION cl_khr_fp16 : enable")
    parts.append(f"typedef struct {{ int v[{param_words(2)}]; }} burn_idx{param_words(2)};")
    isf = dtype.startswith("float")
    if part == "reduce" and dtype != "float16":
        parts.append(_reduce_src(T, dtype, fp64))
    elif part == "matmul" and dtype != "bool":
        parts.append(_matmul_src(T))
    elif part == "matmul_cpu" and dtype != "bool":
        parts.append(_matmul_rows_src(T, isf))
        parts.append(_matmul_packed_src(T, isf))
    elif part == "create":
        parts.append(_creation_src(T, fp64))
    elif part == "copy":
        parts.append(_copy_into_src(T))
    elif part == "gather":
        parts.append(_gather_src(T))
    elif part == "rows" and dtype in ("float32", "float64"):
        parts.append(_rows_src(T))
    return "\n".join(parts)
