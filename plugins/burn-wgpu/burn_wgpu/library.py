"""OpenCL C of the kernels that are not element-wise, one program per dtype.

Each dtype's program holds its reductions, scans, matmul, creation kernels
and the strided write used by slicing gradients, padding and concatenation;
sizes, strides and offsets are run-time arguments, so a program is compiled
once per dtype and device (then loaded from the disk cache).
"""
from __future__ import annotations

import os
from functools import lru_cache

from burn.codegen import MAX_DIMS, OPENCL, param_words
from burn.codegen.reduce import kahan_step

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
  for (int r = 0; r < R; ++r) {kahan_step(T, "s", "c", "p[r]")}
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


def vector_width(t: str) -> int:
    """Columns of C per work-item of the CPU matmul kernels for OpenCL/burn type ``t``: ``VW``,
    or 8 for 8-byte types (an RM x 16 block of doubles spills PoCL's registers: float64
    512x1024x1024 ran 780 ms with 16, 168 ms with 8).

    >>> assert vector_width("float") == vector_width("float32") == 16 and vector_width("double") == 8
    """
    return 8 if t in ("double", "long", "float64", "int64") else VW


def _matmul_rows_src(T, is_float):
    """CPU-friendly matmul (PoCL): no local memory or barriers; each work-item keeps a
    RM x VW block of C in vector registers, reading rows of B as vectors (B's rows must
    be contiguous) and A as broadcast scalars. ~4x the tiled kernel on a CPU device."""
    VW = vector_width(T)
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
    VW = vector_width(T)
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


ROW_VEC_MIN = 256           # row_ kernels without exp: compensated vector loops on rows this long
ROW_CHAINS = 4              # independent Kahan chains of a compensated scalar loop


def _rows_src(T):
    """Row-wise reduce-then-broadcast kernels of burn::softmax(_grad), burn::log_softmax(_grad) and
    burn::layer_norm(_grad).

    softmax rows are the ``L`` elements ``base + k * I`` of a contiguous [O, L, I] tensor (any
    axis, no transpose; neighbouring work-items read neighbouring ``i``); layer_norm rows are
    contiguous [R, D]. One work-item per row: three passes over a row that stays in cache.

    Row sums are Kahan-compensated, as in the ``grp_`` twins: one plain float32 chain over a
    row of 700 values spanning a large range drops the small terms (softmax of [0, -17, -17,
    ...]: 2e-5 off; layer_norm rows around 3000: 1e-3 of the spread off). A compensated step is
    four adds where a plain one is one; to pay for it, contiguous rows (``I == 1``, layer_norm)
    run ``GV`` lanes at a time (vload, vector exp, GV Kahan chains folded with TwoSum, keeping
    the compensation): softmax / log_softmax / log_softmax_grad got ~4x faster on PoCL, not
    slower. Strided rows (softmax over a leading axis) run ``ROW_CHAINS`` scalar Kahan chains.
    softmax_grad and layer_norm(_grad) rows shorter than ``ROW_VEC_MIN`` keep plain sums (see
    there), layer_norm's mean over ``x - x[0]``. Special values as torch: a +inf, a NaN or only
    -inf in a row give NaN everywhere (log_softmax shifts only an all -inf row by 0)."""
    V, IV = f"{T}{GV}", ("long" if T == "double" else "int") + str(GV)

    def kahan(s, val):
        return f"{{ {T} y_ = ({val}) - {s}c_; {T} t_ = {s} + y_; {s}c_ = (t_ - {s}) - y_; {s} = t_; }}"

    def vkahan(s, val):
        return f"{{ {V} y_ = ({val}) - {s}vc_; {V} t_ = {s}v_ + y_; {s}vc_ = (t_ - {s}v_) - y_; {s}v_ = t_; }}"

    def vfold(a):
        """The GV lanes of ``a``'s chains (sums ``a##v_``, compensations ``a##vc_``) into
        ``a`` / ``a##c_`` without losing the compensation: halves added pairwise, each add's
        rounding error (Knuth's TwoSum, exact) moved into the compensation."""
        out, s, c, w = [], f"{a}v_", f"{a}vc_", GV
        while w > 1:
            w //= 2
            t = T if w == 1 else f"{T}{w}"
            out.append(f"{t} t{w}_ = {s}.lo + {s}.hi, b{w}_ = t{w}_ - {s}.lo; "
                       f"{t} e{w}_ = ({s}.lo - (t{w}_ - b{w}_)) + ({s}.hi - b{w}_); "
                       f"{t} c{w}_ = ({c}.lo + {c}.hi) - e{w}_;")
            s, c = f"t{w}_", f"c{w}_"
        return "{ " + " ".join(out) + f" {a} = t1_; {a}c_ = c1_; }}"

    def ksum(n, cond, sums, vpre=lambda k: "", spre=lambda k: "", ru=1, plain=False):
        """Compensated sums over k in [0, n): ``sums`` is [(acc, vector val(k), scalar val(k))]
        (``vpre`` / ``spre``: statements before them, e.g. softmax's exp and store); the sum of
        ``acc`` is ``acc - acc##c_``. Under ``cond`` (contiguous rows) GV lanes at a time, each
        lane its own Kahan chain, folded by :func:`vfold` (softmax_grad reuses the compensation);
        the rest (all of a strided or short row) one by one in ``ru`` independent chains
        (elements k, k+1, ... round robin: a core overlaps them), folded with Kahan steps, or
        with ``plain`` in one plain chain (see ROW_VEC_MIN)."""
        decl = " ".join(f"{T} {a} = 0, {a}c_ = 0;" for a, _, _ in sums)
        vdecl = " ".join(f"{V} {a}v_ = 0, {a}vc_ = 0;" for a, _, _ in sums)
        vstep = " ".join(vkahan(a, vv("k")) for a, vv, _ in sums)
        fold = " ".join(vfold(a) for a, _, _ in sums)
        chain = [[a if j == 0 else f"{a}_{j}" for j in range(ru)] for a, _, _ in sums]
        cdecl = " ".join(f"{T} {c} = 0, {c}c_ = 0;" for cs in chain for c in cs[1:])

        def sstep(k, j):
            return "{ " + f"const int k_ = {k}; {spre('k_')} " + " ".join(
                f"{cs[j]} += {sv('k_')};" if plain else kahan(cs[j], sv("k_"))
                for cs, (_, _, sv) in zip(chain, sums)) + " }"
        ru = 1 if plain else ru
        chains = ""
        if ru > 1:
            body = " ".join(sstep(f"k + {j}", j) for j in range(ru))
            cfold = " ".join(kahan(cs[0], cs[j]) + " " + kahan(cs[0], f"-{cs[j]}c_") for cs in chain
                             for j in range(1, ru))
            chains = f"    {{ {cdecl}\n      for (; k + {ru} <= {n}; k += {ru}) {{ {body} }}\n      {cfold} }}\n"
        # the vector loop's remainder (< GV elements) always compensated: a plain add there
        # would drop what the compensated lanes kept (4 tiny terms: 5e-3 of softmax_grad's dx)
        rest = "{ " + f"const int k_ = k; {spre('k_')} " + " ".join(
            kahan(a, sv("k_")) for a, _, sv in sums) + " }"
        return (f"{decl}\n  {{ int k = 0;\n    if ({cond}) {{ {vdecl}\n"
                f"      for (; k + {GV} <= {n}; k += {GV}) {{ {vpre('k')} {vstep} }}\n      {fold}\n"
                f"      for (; k < {n}; ++k) {rest} }}\n"
                f"{chains}    for (; k < {n}; ++k) {sstep('k', 0)}\n  }}")

    def vmax(ptr, n, cond, at):
        """``mx``: the row's max, NaN first (any NaN wins), -inf for an all -inf row."""
        fold = " ".join(f"{{ {T} v = mv_.s{j:x}; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}"
                        for j in range(GV))
        return (f"{T} mx = -INFINITY;\n  {{ int k = 0;\n    if ({cond}) {{ {V} mv_ = -INFINITY;\n"
                f"      for (; k + {GV} <= {n}; k += {GV}) {{ {V} v = vload{GV}(0, {ptr} + k);\n"
                f"        {IV} tk_ = (isnan(v) | (v > mv_)) & ~isnan(mv_); mv_ = select(mv_, v, tk_); }}\n"
                f"      {fold} }}\n"
                f"    for (; k < {n}; ++k) {{ {T} v = {at('k')}; "
                "if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }\n  }")

    def each(n, cond, vstmt, sstmt):
        """An element-wise pass: GV lanes at a time under ``cond``, then one by one."""
        return (f"{{ int k = 0;\n    if ({cond}) for (; k + {GV} <= {n}; k += {GV}) {{ {vstmt('k')} }}\n"
                f"    for (; k < {n}; ++k) {{ {sstmt('k')} }}\n  }}")

    def ld(ptr, k):
        return f"vload{GV}(0, {ptr} + {k})"

    def at(ptr):
        return lambda k: f"{ptr}[(long){k} * I]"
    # softmax rows: contiguous when I == 1. Kernels without exp take the vector loops only on
    # rows of ROW_VEC_MIN or more: on shorter rows PoCL runs the scalar loop over a row 8 rows a
    # vector (across work-items), which explicit vectors forgo, and compensation is not free
    # there (4 adds where a plain sum has 1; measured [16384, 64]: layer_norm 1.3x, softmax_grad
    # 1.2x in compensated vectors or chains; [4096, 256]: 0.93x). Shorter rows sum plainly (n
    # < 256 terms: n * eps bounds the error), layer_norm's mean shifted by the row's first value
    # (the error that matters there: a plain sum of values around 3000 drifts by 1e-3)
    c1 = "I == 1"
    cv = f"I == 1 && L >= {ROW_VEC_MIN}"
    cd = f"D >= {ROW_VEC_MIN}"
    return f"""
__kernel void row_softmax(const int O, const int L, const int I, __global {T}* out,
                          __global const {T}* x, const int offx) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
  {vmax("p", "L", c1, at("p"))}
  /* a +inf max makes every exp(x - mx) 0 or NaN (+inf - +inf), an all -inf row NaN: as torch */
  {ksum("L", c1, [("s", lambda k: "e_", lambda k: "e_")],
        lambda k: f"{V} e_ = exp({ld('p', k)} - mx); vstore{GV}(e_, 0, q + {k});",
        lambda k: f"{T} e_ = exp(p[(long){k} * I] - mx); q[(long){k} * I] = e_;", ru=ROW_CHAINS)}
  {T} r = ({T})1 / (s - sc_);
  {each("L", c1, lambda k: f"vstore{GV}({ld('q', k)} * r, 0, q + {k});", lambda k: f"q[(long){k} * I] *= r;")}
}}
__kernel void row_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                               __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
  __global {T}* q = out + base;
  {ksum("L", cv, [("s", lambda k: f"{ld('py', k)} * {ld('pg', k)}",
                   lambda k: f"py[(long){k} * I] * pg[(long){k} * I]")],
        plain=True)}
  /* g - (s - sc_) as (g - s) + sc_: where y ~ 1 and g ~ s, g - s cancels exactly and the
     compensation keeps the low bits a float32 s would round away */
  {each("L", cv, lambda k: f"vstore{GV}({ld('py', k)} * (({ld('pg', k)} - s) + sc_), 0, q + {k});",
        lambda k: f"q[(long){k} * I] = py[(long){k} * I] * ((pg[(long){k} * I] - s) + sc_);")}
}}
__kernel void row_log_softmax(const int O, const int L, const int I, __global {T}* out,
                              __global const {T}* x, const int offx) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
  {vmax("p", "L", c1, at("p"))}
  /* an all -inf row shifts by 0 (then -inf - log(0) is NaN, as torch); a +inf max stays: every
     x - mx is then -inf or NaN and the sum NaN, so the whole row is NaN wherever the +inf sits */
  if (mx == -INFINITY) mx = 0;
  {ksum("L", c1, [("s", lambda k: f"exp({ld('p', k)} - mx)", lambda k: f"exp(p[(long){k} * I] - mx)")], ru=ROW_CHAINS)}
  {T} ls = log(s - sc_);
  {each("L", c1, lambda k: f"vstore{GV}(({ld('p', k)} - mx) - ls, 0, q + {k});",
        lambda k: f"q[(long){k} * I] = (p[(long){k} * I] - mx) - ls;")}
}}
__kernel void row_log_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                                   __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
  int m = get_global_id(0); if (m >= O * I) return;
  long base = (long)(m / I) * L * I + m % I;
  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
  __global {T}* q = out + base;
  {ksum("L", c1, [("s", lambda k: ld("pg", k), lambda k: f"pg[(long){k} * I]")], ru=ROW_CHAINS)}
  s -= sc_;
  {each("L", c1, lambda k: f"vstore{GV}({ld('pg', k)} - exp({ld('py', k)}) * s, 0, q + {k});",
        lambda k: f"q[(long){k} * I] = pg[(long){k} * I] - exp(py[(long){k} * I]) * s;")}
}}
__kernel void row_layer_norm(const int R, const int D, __global {T}* out, __global const {T}* x, const int offx,
                             __global const {T}* w, const int offw, __global const {T}* b, const int offb,
                             const {T} eps) {{
  int m = get_global_id(0); if (m >= R) return;
  __global const {T}* p = x + offx + (long)m * D;
  __global {T}* q = out + (long)m * D;
  __global const {T}* pw = w + offw;
  __global const {T}* pb = b + offb;
  {T} p0 = p[0];
  {ksum("D", cd, [("s", lambda k: f"({ld('p', k)} - p0)", lambda k: f"(p[{k}] - p0)")], plain=True)}
  {T} mean = p0 + (s - sc_) / D;
  {ksum("D", cd, [("v", lambda k: "d_ * d_", lambda k: "d_ * d_")],
        lambda k: f"{V} d_ = {ld('p', k)} - mean;", lambda k: f"{T} d_ = p[{k}] - mean;", plain=True)}
  {T} r = ({T})1 / sqrt((v - vc_) / D + eps);
  {each("D", cd, lambda k: f"vstore{GV}(({ld('p', k)} - mean) * r * {ld('pw', k)} + {ld('pb', k)}, 0, q + {k});",
        lambda k: f"q[{k}] = (p[{k}] - mean) * r * pw[{k}] + pb[{k}];")}
}}
__kernel void row_layer_norm_grad(const int R, const int D, __global {T}* dx, __global {T}* stats,
                                  __global const {T}* x, const int offx, __global const {T}* w, const int offw,
                                  __global const {T}* g, const int offg, const {T} eps) {{
  int m = get_global_id(0); if (m >= R) return;
  __global const {T}* p = x + offx + (long)m * D;
  __global const {T}* pg = g + offg + (long)m * D;
  __global const {T}* pw = w + offw;
  __global {T}* q = dx + (long)m * D;
  {T} p0 = p[0];
  {ksum("D", cd, [("s", lambda k: f"({ld('p', k)} - p0)", lambda k: f"(p[{k}] - p0)")], plain=True)}
  {T} mean = p0 + (s - sc_) / D;
  {ksum("D", cd, [("v", lambda k: "d_ * d_", lambda k: "d_ * d_")],
        lambda k: f"{V} d_ = {ld('p', k)} - mean;", lambda k: f"{T} d_ = p[{k}] - mean;", plain=True)}
  {T} r = ({T})1 / sqrt((v - vc_) / D + eps);
  {ksum("D", cd, [("sgh", lambda k: "gh_", lambda k: "gh_"), ("sghx", lambda k: f"gh_ * ({ld('p', k)} - mean) * r",
                                                                lambda k: f"gh_ * (p[{k}] - mean) * r")],
        lambda k: f"{V} gh_ = {ld('pg', k)} * {ld('pw', k)};", lambda k: f"{T} gh_ = pg[{k}] * pw[{k}];",
        plain=True)}
  sgh = (sgh - sghc_) / D; sghx = (sghx - sghxc_) / D;
  {each("D", cd, lambda k: f"vstore{GV}(r * ({ld('pg', k)} * {ld('pw', k)} - sgh - ({ld('p', k)} - mean) * r * sghx), "
                           f"0, q + {k});",
        lambda k: f"q[{k}] = r * (pg[{k}] * pw[{k}] - sgh - (p[{k}] - mean) * r * sghx);")}
  stats[2 * m] = mean; stats[2 * m + 1] = r;
}}
__kernel void col_layer_norm_grad(const int R, const int D, __global {T}* dw, __global {T}* db,
                                  __global const {T}* stats, __global const {T}* x, const int offx,
                                  __global const {T}* g, const int offg) {{
  /* one item per column, a serial sum over all R rows (R may be 1e5): compensated as the rows */
  int k = get_global_id(0); if (k >= D) return;
  {T} sw = 0, swc_ = 0, sb = 0, sbc_ = 0;
  for (int m = 0; m < R; ++m) {{
    {T} gv = g[offg + (long)m * D + k];
    {kahan("sw", "gv * (x[offx + (long)m * D + k] - stats[2 * m]) * stats[2 * m + 1]")}
    {kahan("sb", "gv")}
  }}
  dw[k] = sw - swc_; db[k] = sb - sbc_;
}}"""


# -- row kernels, one work-group per row ------------------------------------------------------
# The one-work-item kernels above leave a CPU device idle on few long rows (8 rows of 1M: 8
# items, one core). ``grp_*`` give each row a work-group of RL items: every item takes a
# contiguous block of the row (on a CPU device one item streams its own cache lines, and the
# elementwise pass rereads what the same item wrote, so no global barrier is needed), then a
# local-memory tree combines the items' max / sums. Barriers sit in uniform control flow only
# (PoCL miscompiles a barrier inside a data-dependent ``if``): the global size is exactly
# rows * RL, so no item returns early, and the tree loop's bound is a constant.

GV = 8                      # grp_ kernels: vector width of the reductions over contiguous rows
LONG_ROW = 768              # rows at least this long get a work-group whatever their number:
                            # measured on PoCL, [4096, 768] is even, [8192, 512] mixed, 1000 2x
# ... except the exp kernels: since their one-item kernels sum GV lanes at a time, a row of up
# to ~4K runs faster (or even) there as long as the rows fill the units (PoCL, [2048, 1000]
# softmax 5.0 vs 9.6 ms; fwd + bwd [2048, 1024] 21 vs 27 ms, log_softmax 22 vs 38 ms)
LONG_ROW_BY_KERNEL = {"softmax": 4096, "softmax_grad": 4096, "log_softmax": 4096, "log_softmax_grad": 4096}
RL = 64                     # work-group size of the grp_ kernels (reduce_fused.local_size on a CPU)
ROWS_FORCE = os.environ.get("BURN_WGPU_ROWS") or None      # "row" or "group": pin a variant
# each item a contiguous block (CPU devices: one item streams its cache lines, and contiguous
# rows reduce in vectors) or "0": a strided share (coalesced loads on a GPU; ~10x slower on
# PoCL). Read once: the program source is cached per process.
GRP_BLOCKED = os.environ.get("BURN_WGPU_ROWS_BLOCKED", "1") == "1"
LAST_ROWS = [None]          # the latest row launch's variant, for tests and benchmarks


def rows_variant(M: int, R: int, units: int, force=None, kernel: str | None = None) -> str:
    """"row" (one work-item per row) or "group" (one work-group per row) for ``M`` rows of
    length ``R`` on a device with ``units`` compute units: the rule of
    :func:`burn_wgpu.reduce_fused.choose` without its split (a row kernel writes the whole row,
    partials would need a second pass over it), and a work-group for any number of rows of at
    least ``LONG_ROW`` (the group kernels' vector loops; ``LONG_ROW_BY_KERNEL`` for ``kernel``,
    e.g. "softmax").

    >>> assert rows_variant(16384, 512, 2) == "row" and rows_variant(8, 1 << 20, 2) == "group"
    >>> assert rows_variant(16384, 1000, 2) == "group" and rows_variant(8, 32, 2) == "row"
    >>> assert rows_variant(16384, 1000, 2, kernel="softmax") == "row"
    >>> assert rows_variant(8, 1 << 20, 2, force="row") == "row"
    """
    force = force or ROWS_FORCE
    if force in ("row", "group"):
        return force
    if force is not None:
        raise ValueError(f"BURN_WGPU_ROWS={force!r}: expected 'row' or 'group'")
    if R < RL:
        return "row"
    # a work-group reduces GV lanes at a time where one item runs a serial chain: long rows
    # gain even when there are rows enough for every unit (PoCL, [2048, 1000]: 2x softmax)
    if R >= LONG_ROW_BY_KERNEL.get(kernel, LONG_ROW):
        return "group"
    # a full work-group of rows per unit keeps every unit busy with one item per row
    return "row" if M >= units * 256 else "group"


def launch_rows(dc, dtype: str, name: str, M: int, R: int, args, inner: int = 1) -> None:
    """Launch row kernel ``name`` (``row_softmax``, ...) over ``M`` rows of length ``R``, as the
    one-work-item kernel or its ``grp_`` twin (same arguments), picked by :func:`rows_variant`.
    ``inner``: the stride between a row's elements (1: contiguous rows, which the one-item exp
    kernels sum in vector lanes; strided rows keep the general long-row threshold).

    >>> assert part_of("grp_softmax") == part_of("row_softmax") == "rows"
    """
    units = getattr(dc.device, "max_compute_units", 1) or 1
    variant = LAST_ROWS[0] = rows_variant(M, R, units, kernel=name[len("row_"):] if inner == 1 else None)
    if variant == "group":
        name = "grp_" + name[len("row_"):]
    k = dc.kernel(library_source(dtype, dc.fp64, "rows"), name)
    if variant == "group":
        dc.launch(k, M * RL, args, local=RL)
    else:
        dc.launch(k, M, args)


def _grp_rows_src(T, blocked):
    """The work-group-per-row twins of :func:`_rows_src` (same arguments, same numerics: the
    NaN-first max, -inf rows, Kahan-compensated sums where the one-item kernels use them; each
    item's compensated partial then goes through a pairwise tree). On contiguous rows (softmax's
    ``I == 1``, layer_norm) an item folds its block GV values at a time: GV independent Kahan or
    max chains instead of one latency-bound chain (4-5x on [8, 1M] softmax on PoCL)."""
    def tree(var, comb):
        # every item ends with the row's value; the closing barrier keeps ta[0] intact until
        # all items have read it (the next tree overwrites ta)
        return (f"  ta[lid] = {var}; barrier(CLK_LOCAL_MEM_FENCE);\n"
                f"  for (int w = {RL // 2}; w > 0; w >>= 1) {{\n"
                f"    if (lid < w) {{ {T} a = ta[lid], b = ta[lid + w]; ta[lid] = {comb}; }}\n"
                f"    barrier(CLK_LOCAL_MEM_FENCE);\n  }}\n"
                f"  {var} = ta[0]; barrier(CLK_LOCAL_MEM_FENCE);")
    tmax = tree("mx", "(!isnan(a) && (isnan(b) || b > a)) ? b : a")

    def tsum(v):
        return tree(v, "a + b")

    def kahan(s, c, val):
        return f"{{ {T} y_ = ({val}) - {c}; {T} t_ = {s} + y_; {c} = (t_ - {s}) - y_; {s} = t_; }}"

    def span(n):
        if blocked:
            return f"  int cs_ = ({n} + {RL - 1}) / {RL}; int ka = min({n}, lid * cs_), kb = min({n}, ka + cs_);\n"
        return f"  int ka = lid, kb = {n};\n"
    lp = "for (int k = ka; k < kb; ++k)" if blocked else f"for (int k = ka; k < kb; k += {RL})"
    rest = "for (; k < kb; ++k)" if blocked else f"for (; k < kb; k += {RL})"
    V, IV = f"{T}{GV}", ("long" if T == "double" else "int") + str(GV)
    lanes = [f"d_.s{j:x}" for j in range(GV)]

    def lsum(xs):
        # pairwise over the lanes, as the tree does over the items
        while len(xs) > 1:
            xs = [f"({xs[i]} + {xs[i + 1]})" for i in range(0, len(xs), 2)]
        return xs[0]

    def vsum(s, cond, vpre, vval, spre, sval, comp=True):
        """``s`` (and its compensation ``{s}c_``) = the sum of this item's values: GV lanes at a
        time where ``cond`` holds (contiguous rows; the serial chain of a Kahan sum is
        latency-bound, GV independent chains are not), the rest one by one."""
        c = f"{s}c_"
        vstep = (f"{V} y_ = ({vval}) - cv_; {V} t_ = sv_ + y_; cv_ = (t_ - sv_) - y_; sv_ = t_;" if comp
                 else f"sv_ += {vval};")
        sstep = kahan(s, c, sval) if comp else f"{s} += {sval};"
        vec = "0" if not blocked else cond
        return (f"  {T} {s} = 0, {c} = 0;\n  {{ int k = ka;\n"
                f"    if ({vec}) {{ {V} sv_ = 0, cv_ = 0;\n"
                f"      for (; k + {GV} <= kb; k += {GV}) {{ {vpre} {vstep} }}\n"
                f"      {V} d_ = sv_ - cv_; {s} = {lsum(lanes)}; }}\n"
                f"    {rest} {{ {spre} {sstep} }}\n  }}\n  {s} -= {c};\n")

    def vmax(ptr, cond):
        fold = " ".join(f"{{ {T} v = mv_.s{j:x}; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}"
                        for j in range(GV))
        vec = "0" if not blocked else cond
        return (f"  {T} mx = -INFINITY;\n  {{ int k = ka;\n"
                f"    if ({vec}) {{ {V} mv_ = -INFINITY;\n"
                f"      for (; k + {GV} <= kb; k += {GV}) {{ {V} v = vload{GV}(0, {ptr} + k);\n"
                f"        {IV} tk_ = (isnan(v) | (v > mv_)) & ~isnan(mv_); mv_ = select(mv_, v, tk_); }}\n"
                f"      {fold} }}\n"
                f"    {rest} {{ {T} v = {ptr}[(long)k * I]; if (!isnan(mx) && (isnan(v) || v > mx)) mx = v; }}\n  }}\n")
    head = (f"  __local {T} ta[{RL}];\n"
            "  int m = get_group_id(0), lid = get_local_id(0);\n")
    # softmax rows: L elements base + k * I; this item's block [ka, kb) of k
    srow = (head + "  long base = (long)(m / I) * L * I + m % I;\n"
            + span("L"))
    lrow = head + span("D")
    mx_loop = vmax("p", "I == 1") + tmax
    return f"""
__kernel void grp_softmax(const int O, const int L, const int I, __global {T}* out,
                          __global const {T}* x, const int offx) {{
{srow}  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
{mx_loop}
{vsum("s", "I == 1", f"{V} e_ = exp(vload{GV}(0, p + k) - mx); vstore{GV}(e_, 0, q + k);", "e_",
       f"{T} e = exp(p[(long)k * I] - mx); q[(long)k * I] = e;", "e")}{tsum("s")}
  {T} r = ({T})1 / s;
  {lp} q[(long)k * I] *= r;
}}
__kernel void grp_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                               __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
{srow}  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
{vsum("s", "I == 1", "", f"vload{GV}(0, py + k) * vload{GV}(0, pg + k)", "",
       "py[(long)k * I] * pg[(long)k * I]")}{tsum("s")}
  {lp} out[base + (long)k * I] = py[(long)k * I] * (pg[(long)k * I] - s);
}}
__kernel void grp_log_softmax(const int O, const int L, const int I, __global {T}* out,
                              __global const {T}* x, const int offx) {{
{srow}  __global const {T}* p = x + offx + base;
  __global {T}* q = out + base;
{mx_loop}
  if (mx == -INFINITY) mx = 0;  /* all -inf: NaN (as torch); a +inf max stays: a NaN row, as row_ */
{vsum("s", "I == 1", "", f"exp(vload{GV}(0, p + k) - mx)", "", "exp(p[(long)k * I] - mx)")}{tsum("s")}
  {T} ls = log(s);
  {lp} q[(long)k * I] = (p[(long)k * I] - mx) - ls;
}}
__kernel void grp_log_softmax_grad(const int O, const int L, const int I, __global {T}* out,
                                   __global const {T}* y, const int offy, __global const {T}* g, const int offg) {{
{srow}  __global const {T}* py = y + offy + base;
  __global const {T}* pg = g + offg + base;
{vsum("s", "I == 1", "", f"vload{GV}(0, pg + k)", "", "pg[(long)k * I]")}{tsum("s")}
  {lp} out[base + (long)k * I] = pg[(long)k * I] - exp(py[(long)k * I]) * s;
}}
__kernel void grp_layer_norm(const int R, const int D, __global {T}* out, __global const {T}* x, const int offx,
                             __global const {T}* w, const int offw, __global const {T}* b, const int offb,
                             const {T} eps) {{
{lrow}  __global const {T}* p = x + offx + (long)m * D;
  __global {T}* q = out + (long)m * D;
{vsum("s", "1", "", f"vload{GV}(0, p + k)", "", "p[k]", comp=False)}{tsum("s")}
  {T} mean = s / D;
{vsum("v", "1", f"{V} dv_ = vload{GV}(0, p + k) - mean;", "dv_ * dv_", f"{T} d = p[k] - mean;", "d * d",
      comp=False)}{tsum("v")}
  {T} r = ({T})1 / sqrt(v / D + eps);
  {lp} q[k] = (p[k] - mean) * r * w[offw + k] + b[offb + k];
}}
__kernel void grp_layer_norm_grad(const int R, const int D, __global {T}* dx, __global {T}* stats,
                                  __global const {T}* x, const int offx, __global const {T}* w, const int offw,
                                  __global const {T}* g, const int offg, const {T} eps) {{
{lrow}  __global const {T}* p = x + offx + (long)m * D;
  __global const {T}* pg = g + offg + (long)m * D;
  __global {T}* q = dx + (long)m * D;
{vsum("s", "1", "", f"vload{GV}(0, p + k)", "", "p[k]", comp=False)}{tsum("s")}
  {T} mean = s / D;
{vsum("v", "1", f"{V} dv_ = vload{GV}(0, p + k) - mean;", "dv_ * dv_", f"{T} d = p[k] - mean;", "d * d",
      comp=False)}{tsum("v")}
  {T} r = ({T})1 / sqrt(v / D + eps);
  {T} sgh = 0, sghx = 0;
  {{ int k = ka;
    if ({int(blocked)}) {{ {V} a_ = 0, b_ = 0;
      for (; k + {GV} <= kb; k += {GV}) {{ {V} gh = vload{GV}(0, pg + k) * vload{GV}(0, w + offw + k);
        a_ += gh; b_ += gh * (vload{GV}(0, p + k) - mean) * r; }}
      {V} d_ = a_; sgh = {lsum(lanes)}; d_ = b_; sghx = {lsum(lanes)}; }}
    {rest} {{ {T} gh = pg[k] * w[offw + k]; sgh += gh; sghx += gh * (p[k] - mean) * r; }}
  }}
{tsum("sgh")}
{tsum("sghx")}
  sgh /= D; sghx /= D;
  {lp} q[k] = r * (pg[k] * w[offw + k] - sgh - (p[k] - mean) * r * sghx);
  if (lid == 0) {{ stats[2 * m] = mean; stats[2 * m + 1] = r; }}
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
                   "col_layer_norm_grad", "grp_")}


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
    """The program of one ``part`` (see :func:`part_of`) of the non-element-wise kernels of ``dtype``.

    >>> assert "row_softmax" in library_source("float32", False, "rows")
    """
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
        parts.append(_grp_rows_src(T, GRP_BLOCKED))
    return "\n".join(parts)
