"""matmul on wgpu (and the fused ``burn::linear_relu``): the tiled local-memory kernel real
GPUs run, the register-blocked row / packed kernels CPU devices run, and complex matmuls
(one real matmul of the library for complex64, a tiled complex kernel for complex128)."""
from __future__ import annotations

import os
from functools import lru_cache

import numpy as np

from burn.codegen import OPENCL
from burn.codegen.sources import with_defines
from burn.codegen.complex import PART, helper_source
from burn.errors import BurnError

from ..native import broadcast_strides as _broadcast_strides
from ..native import WTensor, empty, is_complex, numel
from .elementwise import _bshape
from .movement import _filled, broadcast_to, contiguous
from .source import cl_source, register
from .source import library_kernel as _lib


def _batch_stride(x: WTensor, batch):
    """One stride walking x's batch dims (broadcast to ``batch``), or None if they do not collapse."""
    st = _broadcast_strides(x, tuple(batch) + x.shape[-2:])[:len(batch)]
    dims = [(b, s) for b, s in zip(batch, st) if b != 1]
    for (b0, s0), (b1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * b1:
            return None
    return dims[-1][1] if dims else 0


# which matmul a CPU device runs: "packed" (B packed into panels, then register-blocked),
# "rows" (register-blocked straight from row-major B) or "tiled" (the local-memory kernel
# real GPUs run); the benchmark switches it to compare
MATMUL_CPU = os.environ.get("BURN_WGPU_MATMUL_CPU", "packed")


# row-major B with rows shorter than this is read in place (its rows share pages; packing
# would only add a launch and a pass over B)
PACK_ROW_BYTES = 2048


def matmul(a, b, epi=None):
    """C = a @ b (batched, broadcasting batch dims). ``epi`` (a ``burn_wgpu.fused.Epilogue``)
    applies an element-wise epilogue at the store: the kernel comes from its program, its
    arguments follow C, and the result is ``epi``'s outputs."""
    dc = a.dc
    lib = _lib if epi is None else epi.kernel
    extra = []
    batch = _bshape([a.shape[:-2], b.shape[:-2]])
    M, K, N = a.shape[-2], a.shape[-1], b.shape[-1]
    sa, sb = _batch_stride(a, batch), _batch_stride(b, batch)
    if sa is None:
        a = contiguous(broadcast_to(a, shape=tuple(batch) + a.shape[-2:]))
        sa = M * K
    if sb is None:
        b = contiguous(broadcast_to(b, shape=tuple(batch) + b.shape[-2:]))
        sb = K * N
    if is_complex(a.dtype):        # the library computes in the storage type: float2 products are per part
        assert epi is None, "complex matmul epilogue"
        return complex_matmul(a, b, batch, sa, sb)
    nb = numel(batch)
    out = empty(dc, tuple(batch) + (M, N), a.dtype)
    if epi is not None:
        extra = epi.prepare(out)
    if not out.size:
        return out if epi is None else epi.outs
    if K == 0:
        assert epi is None, "matmul epilogue with K == 0"
        return _filled(dc, out.shape, a.dtype, 0)
    ret = out if epi is None else epi.outs
    i32 = np.int32
    rows_ok = b.strides[-1] == 1
    if dc.is_cpu and MATMUL_CPU == "packed" and not (rows_ok and N * b.itemsize < PACK_ROW_BYTES):
        # pack B into contiguous column panels (any strides: transposed B needs no copy), then
        # the register-blocked kernel; a B shared by every batch (stride 0) is packed once
        VW = vector_width(a.dtype)
        NB = -(-N // VW)
        pb = nb if sb else 1
        P = empty(dc, (pb, NB, K, VW), a.dtype)
        dc.launch2d(_lib(dc, a.dtype, "pack_b"), (-(-K * VW // 64) * 64, NB, pb), (64, 1, 1),
                    [i32(K), i32(N), i32(NB), b.buf, i32(b.offset), i32(b.strides[-2]), i32(b.strides[-1]),
                     i32(sb), P.buf])
        dc.launch2d(lib(dc, a.dtype, "matmul_packed"), (-(-NB // 8) * 8, -(-M // RM), nb), (8, 1, 1),
                    [i32(M), i32(N), i32(K), a.buf, i32(a.offset), i32(a.strides[-2]), i32(a.strides[-1]),
                     i32(sa), P.buf, i32(NB), i32(NB * K * VW if sb else 0), out.buf] + extra)
        return ret
    if dc.is_cpu and rows_ok and MATMUL_CPU in ("rows", "packed"):
        gx = -(-N // vector_width(a.dtype))
        gs = (-(-gx // 8) * 8, -(-M // RM), nb)
        dc.launch2d(lib(dc, a.dtype, "matmul_rows"), gs, (8, 1, 1),
                    [i32(M), i32(N), i32(K), a.buf, i32(a.offset), i32(a.strides[-2]), i32(a.strides[-1]),
                     i32(sa), b.buf, i32(b.offset), i32(b.strides[-2]), i32(sb), out.buf] + extra)
        return ret
    L = TILE // WPT
    gs = (-(-N // TILE) * L, -(-M // TILE) * L, nb)
    dc.launch2d(lib(dc, a.dtype, "matmul"), gs, (L, L, 1),
                [i32(M), i32(N), i32(K), a.buf, i32(a.offset), i32(a.strides[-2]), i32(a.strides[-1]), i32(sa),
                 b.buf, i32(b.offset), i32(b.strides[-2]), i32(b.strides[-1]), i32(sb), out.buf] + extra)
    return ret


def linear_relu(x, w, b):
    """burn::linear_relu: one matmul launch with bias + relu applied at its store."""
    from ..fused import linear_relu_fused
    return linear_relu_fused(x, w, b)


def _linear_relu_2(x, w, b):
    return _fused_bias_relu(matmul(x, w), b)


def _fused_bias_relu(y, b):
    from ..fused import render_cached
    ops = [("add", {}, [("in", 0), ("in", 1)]), ("relu", {}, [("op", 0)])]
    kernel_for, rk = render_cached(y.dc, ops, (y.dtype, b.dtype), (1,))
    return y.dc.run_generated(kernel_for, y.shape, [y, b], list(rk.out_dtypes), [])[0]


TILE = 64          # matmul tile (rows and columns of C per work-group)


TK = 16            # matmul depth per tile


WPT = 4            # matmul: each work-item computes WPT x WPT values of C


def _matmul_src(T):
    return with_defines(cl_source("matmul_tiled.cl"), dict(T=T, TILE=TILE, TK=TK, WPT=WPT))

# matmul_rows / matmul_packed: columns of C per work-item (one 256-bit vector of 4-byte values).
# Not 512-bit: PoCL 3.0 picks its AVX-512 builtin library on CPUs that report avx512 flags while
# LLVM's target for the same CPU may lack avx512f, and then LLVM aborts the whole process
# ("Cannot select ... fma", "Do not know how to scalarize") when it generates code for any
# float16/double8 builtin; float8/double4 compile everywhere.
VW = 8


RM = 4            # matmul_rows: rows of C per work-item


def vector_width(t: str) -> int:
    """Columns of C per work-item of the CPU matmul kernels for OpenCL/burn type ``t``: one
    256-bit vector, ``VW`` values of 4 bytes or ``VW // 2`` of 8 bytes (why not 512: see ``VW``).

    >>> assert vector_width("float") == vector_width("float32") == 8 and vector_width("double") == 4
    """
    return VW // 2 if t in ("double", "long", "float64", "int64", "ulong", "uint64") else VW


def _register_block(T, is_float, upd_indent):
    """The pieces both CPU matmul kernels share: each work-item's RM x VW block of C in vector
    registers (accumulators, A's row pointers, the update of one k step, the full-width store).
    Returns ``(VW, vector type, ptrs, upd, init, store)``; ``upd_indent`` is the update's indent."""
    VW = vector_width(T)
    V = f"{T}{VW}"
    rows = range(RM)
    ptrs = "\n".join(f"  __global const {T}* a{i} = A + (long)min(m0 + {i}, M - 1) * sam;" for i in rows)
    if is_float:
        upd = "\n".join(f"{upd_indent}acc{i} = fma(({V})(a{i}[ka]), bv, acc{i});" for i in rows)
    else:
        upd = "\n".join(f"{upd_indent}acc{i} += ({V})(a{i}[ka]) * bv;" for i in rows)
    init = " ".join(f"{V} acc{i} = ({V})(0);" for i in rows)
    store = "\n".join(f"    if (m0 + {i} < M) vstore{VW}(acc{i}, 0, Cb + (long)(m0 + {i}) * N + n0);" for i in rows)
    return VW, V, ptrs, upd, init, store


def _matmul_rows_src(T, is_float):
    """CPU-friendly matmul (PoCL): no local memory or barriers; each work-item keeps a
    RM x VW block of C in vector registers, reading rows of B as vectors (B's rows must
    be contiguous) and A as broadcast scalars. ~4x the tiled kernel on a CPU device."""
    VW, V, ptrs, upd, init, store = _register_block(T, is_float, "      ")
    rows = range(RM)
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
    VW, V, ptrs, upd, init, full = _register_block(T, is_float, "    ")
    rows = range(RM)
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
    """Helpers of the complex matmuls that run the real library kernel (``COMPLEX_MATMUL`` "real" and
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


def complex_matmul(a, b, batch, sa, sb):
    """C = a @ b of complex a [..., M, K] and b [..., K, N], batch dims walked by ``sa`` / ``sb``
    (in complex elements; 0 where an operand is shared by every batch). ``COMPLEX_MATMUL`` picks the
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
                        f"BURN_WGPU_COMPLEX_MATMUL={COMPLEX_MATMUL!r}; use auto, real, gauss, tiled or simple")
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
    cf = matmul(af, bf)
    assert cf.is_contiguous and cf.offset % 2 == 0, cf
    return WTensor(dc, cf.block, shape, a.dtype, None, cf.offset // 2)


def _matmul_gauss(a, b, nb, sa, sb, shape):
    """The complex product as 3 real products (Gauss / Karatsuba): t1 = Ar Br, t2 = Ai Bi,
    t3 = (Ar + Ai)(Br + Bi), C = (t1 - t2) + i (t3 - t1 - t2), run as one batched real matmul
    of the three planes of A and B. 6MKN flops against 8MKN, but the imaginary part is a
    difference of the (larger) t3 and t1 + t2: it loses accuracy when it is small against the
    real part (and the real part when |Ar Br| ~ |Ai Bi| both large). For comparison
    (``BURN_WGPU_COMPLEX_MATMUL=gauss``), not the default."""
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
    t = matmul(va, vb)
    assert t.is_contiguous, t
    out = empty(dc, shape, a.dtype)
    n = nb * M * N
    dc.launch(_kernel(dc, a.dtype, "matmul_gauss"), n, [i32(n), t.buf, out.buf])
    return out


# "auto" (the default: matmul_method), "real" (one real library matmul), "gauss" (three),
# "tiled" (local-memory complex tiles) or "simple" (one work-item per element of C); the
# benchmark and the tests switch it to compare
COMPLEX_MATMUL = os.environ.get("BURN_WGPU_COMPLEX_MATMUL", "auto")


def matmul_method(dtype: str) -> str:
    """The complex matmul method of ``dtype``: ``COMPLEX_MATMUL``, or for "auto" the one measured
    fastest on PoCL at 512³: "real" for complex64 (47 ms against 72 ms tiled, numpy 8 ms),
    "tiled" for complex128 (with 16 doubles per work-item the library's float64 matmul ran ~18x
    slower than its float32 one and the real path took 600 ms against 128 ms tiled; with 8 it
    runs ~5x faster and the two paths are even, 104-131 ms against 83-104 ms, so tiled stays).

    >>> assert matmul_method("complex64") == ("real" if COMPLEX_MATMUL == "auto" else COMPLEX_MATMUL)
    """
    if COMPLEX_MATMUL != "auto":
        return COMPLEX_MATMUL
    return "real" if dtype == "complex64" else "tiled"


@lru_cache(maxsize=None)
def complex_matmul_source(dtype: str) -> str:
    """The OpenCL program of the complex matmul kernels of ``dtype`` (complex64 / complex128).

    >>> assert "void matmul_tiled" in complex_matmul_source("complex64")
    """
    T, R = OPENCL.ctype(dtype), OPENCL.ctype(PART[dtype])
    mk = lambda re_, im: OPENCL.make(dtype, re_, im)  # noqa: E731
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if dtype == "complex128" else ""
    out = [pre + helper_source("cmul", dtype, OPENCL)]
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


def _kernel(dc, dtype, name):
    return dc.kernel(complex_matmul_source(dtype), name)


def _matmul_part(dtype, fp64):
    return "" if dtype == "bool" else _matmul_src(OPENCL.ctype(dtype))


def _matmul_cpu_part(dtype, fp64):
    if dtype == "bool":
        return ""
    T, isf = OPENCL.ctype(dtype), dtype.startswith("float")
    return _matmul_rows_src(T, isf) + "\n" + _matmul_packed_src(T, isf)


register("matmul", ("matmul",), _matmul_part)
register("matmul_cpu", ("matmul_rows", "matmul_packed", "pack_b"), _matmul_cpu_part)
