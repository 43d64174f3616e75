"""wgpu kernels of burn.linalg: OpenCL for Cholesky, triangular solves, LU and QR; host fallbacks for the rest.

Native (one OpenCL program per dtype, sizes as run-time arguments, so PoCL
compiles it once and the disk cache keeps it): ``cholesky``,
``solve_triangular``, ``lu_factor``, ``lu_solve``, ``solve``, ``inv``, ``det``,
``slogdet`` and ``qr`` (Householder, every mode, M >= N and M < N; the
reflectors are LAPACK's, so Q and R carry numpy's signs). They run one
work-group per matrix (batched over the leading dimensions), which suits the
small matrices (N <= 256) these ops mostly see; QR's Q is then formed by one
work-item per column accumulating the reflectors. Factorization failures
(not positive definite, singular) are flagged per matrix on the device; the
flags are read back (a sync) so the error is raised as flex raises it.

Everything else (svd, eigh, lstsq, pinv, lu, diagonal, ...), empty inputs
and float16 inputs run as declared host fallbacks: the inputs are copied to
the host, the flex (LAPACK) kernel runs, the results are copied back. They
are registered with ``host_fallback=True`` (``burn info`` lists them) and
the copies are counted in the device's ``stats()`` (``host_transfers``,
``host_transfer_bytes``).

This module is imported only when the wgpu backend is registered;
PyOpenCL and burn_wgpu are imported inside the kernels.
"""
from __future__ import annotations

import numpy as np

from . import _flex
from ._errors import LinAlgError

_WG = 64        # work-group size of the one-group-per-matrix kernels


def _src(T: str) -> str:
    ext = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if T == "double" else ""
    return ext + f"""
#define T {T}
#define WG {_WG}
// A: batch of N x N matrices, contiguous, factorized in place (lower triangle read).
__kernel void chol(int N, __global T* A, __global int* info) {{
  int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  __global T* a = A + (long)b * N * N;
  __local int bad;
  if (lid == 0) bad = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = 0; j < N; ++j) {{
    if (lid == 0) {{
      T d = a[j * N + j];
      for (int k = 0; k < j; ++k) d -= a[j * N + k] * a[j * N + k];
      if (!(d > 0)) {{ bad = 1; d = NAN; }}
      a[j * N + j] = sqrt(d);
    }}
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    T djj = a[j * N + j];
    for (int i = j + 1 + lid; i < N; i += ls) {{
      T s = a[i * N + j];
      for (int k = 0; k < j; ++k) s -= a[i * N + k] * a[j * N + k];
      a[i * N + j] = s / djj;
    }}
    barrier(CLK_GLOBAL_MEM_FENCE);
  }}
  for (int e = lid; e < N * N; e += ls) if (e % N > e / N) a[e] = 0;
  if (lid == 0) info[b] = bad;
}}

// Solve op(A) X = B; A: (N, N) with batch stride sa and offset oa; B: X in place (N, K) contiguous.
// One work-item per right-hand-side column.
__kernel void trsm(int N, int K, int nb, int lower, int trans, int unit,
                   __global const T* A, int oa, long sa, __global T* B, __global int* info) {{
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  int b = g / K, c = g % K;
  __global const T* a = A + oa + b * sa;
  __global T* x = B + (long)b * N * K + c;
  int low = lower ^ trans;
  int bad = 0;
  for (int t = 0; t < N; ++t) {{
    int i = low ? t : N - 1 - t;
    T s = x[(long)i * K];
    if (low) {{ for (int k = 0; k < i; ++k) s -= (trans ? a[k * N + i] : a[i * N + k]) * x[(long)k * K]; }}
    else {{ for (int k = i + 1; k < N; ++k) s -= (trans ? a[k * N + i] : a[i * N + k]) * x[(long)k * K]; }}
    if (!unit) {{ T d = a[i * N + i]; if (d == 0) bad = 1; s /= d; }}
    x[(long)i * K] = s;
  }}
  if (bad) info[b] = 1;
}}

// LU with partial pivoting in place (LAPACK getrf layout); piv[k]: row swapped with row k (0-based).
__kernel void lu(int N, __global T* A, __global int* piv, __global int* info) {{
  int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  __global T* a = A + (long)b * N * N;
  __global int* pv = piv + (long)b * N;
  __local int p;
  __local int bad;
  if (lid == 0) bad = 0;
  for (int k = 0; k < N; ++k) {{
    if (lid == 0) {{
      int best = k; T bv = fabs(a[k * N + k]);
      for (int i = k + 1; i < N; ++i) {{ T v = fabs(a[i * N + k]); if (v > bv) {{ bv = v; best = i; }} }}
      p = best; pv[k] = best;
      if (bv == 0) bad = 1;
    }}
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    int pk = p;
    if (pk != k) for (int j = lid; j < N; j += ls) {{ T t = a[k * N + j]; a[k * N + j] = a[pk * N + j]; a[pk * N + j] = t; }}
    barrier(CLK_GLOBAL_MEM_FENCE);
    T d = a[k * N + k];
    if (d != 0) for (int i = k + 1 + lid; i < N; i += ls) a[i * N + k] /= d;
    barrier(CLK_GLOBAL_MEM_FENCE);
    int m = N - k - 1;
    for (int e = lid; e < m * m; e += ls) {{
      int i = k + 1 + e / m, j = k + 1 + e % m;
      a[i * N + j] -= a[i * N + k] * a[k * N + j];
    }}
    barrier(CLK_GLOBAL_MEM_FENCE);
  }}
  if (lid == 0) info[b] = bad;
}}

// X = A^-1 B (trans: A^-T B) from the LU factors (batch strides sl, sp; offsets ol, op);
// B: X in place (N, K) contiguous; eye: B starts as the identity.
__kernel void lus(int N, int K, int nb, int eye, int trans, __global const T* LU, long ol, long sl,
                  __global const int* piv, long op, long sp, __global T* B) {{
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  int b = g / K, c = g % K;
  __global const T* a = LU + ol + b * sl;
  __global const int* pv = piv + op + b * sp;
  __global T* x = B + (long)b * N * K + c;
  if (eye) for (int i = 0; i < N; ++i) x[(long)i * K] = (i == c) ? 1 : 0;
  if (!trans) {{
    for (int k = 0; k < N; ++k) {{ int q = pv[k]; if (q != k) {{ T t = x[(long)k * K]; x[(long)k * K] = x[(long)q * K]; x[(long)q * K] = t; }} }}
    for (int i = 0; i < N; ++i) {{ T s = x[(long)i * K]; for (int k = 0; k < i; ++k) s -= a[i * N + k] * x[(long)k * K]; x[(long)i * K] = s; }}
    for (int i = N - 1; i >= 0; --i) {{
      T s = x[(long)i * K]; for (int k = i + 1; k < N; ++k) s -= a[i * N + k] * x[(long)k * K];
      x[(long)i * K] = s / a[i * N + i];
    }}
  }} else {{
    // A = P L U: solve U^T, then L^T (unit), then undo the row interchanges in reverse order
    for (int i = 0; i < N; ++i) {{
      T s = x[(long)i * K]; for (int k = 0; k < i; ++k) s -= a[k * N + i] * x[(long)k * K];
      x[(long)i * K] = s / a[i * N + i];
    }}
    for (int i = N - 1; i >= 0; --i) {{ T s = x[(long)i * K]; for (int k = i + 1; k < N; ++k) s -= a[k * N + i] * x[(long)k * K]; x[(long)i * K] = s; }}
    for (int k = N - 1; k >= 0; --k) {{ int q = pv[k]; if (q != k) {{ T t = x[(long)k * K]; x[(long)k * K] = x[(long)q * K]; x[(long)q * K] = t; }} }}
  }}
}}

// sign and log|det| from the LU factors (numpy's slogdet: sign 0 and -inf when singular)
__kernel void luslogdet(int N, int nb, __global const T* LU, __global const int* piv,
                        __global T* sgn, __global T* logabs) {{
  int b = get_global_id(0); if (b >= nb) return;
  __global const T* a = LU + (long)b * N * N;
  T s = 1, l = 0;
  for (int k = 0; k < N; ++k) {{
    T d = a[k * N + k];
    if (d < 0) s = -s;
    if (piv[(long)b * N + k] != k) s = -s;
    l += log(fabs(d));
  }}
  for (int k = 0; k < N; ++k) if (a[k * N + k] == 0) {{ s = 0; l = -INFINITY; }}
  sgn[b] = s; logabs[b] = l;
}}

__kernel void diagzero(int N, int nb, __global const T* LU, long ol, long sl, __global int* info) {{
  int b = get_global_id(0); if (b >= nb) return;
  __global const T* a = LU + ol + b * sl;
  for (int k = 0; k < N; ++k) if (a[k * N + k] == 0) info[b] = 1;
}}

// Householder QR in place, LAPACK's geqrf layout: R on and above the diagonal, reflector j's
// vector below it (v_j = 1 implied), tau[j] per reflector. The reflectors are LAPACK's dlarfg
// (beta = -sign(alpha) ||(alpha, x)||, tau = 0 when x = 0), so Q and R carry numpy's signs.
__kernel void qr(int M, int N, __global T* A, __global T* tau) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * M * N;
  int K = min(M, N);
  __local T red[WG];
  __local T sh_tau, sh_scale;
  for (int j = 0; j < K; ++j) {{
    // the column's norm below the diagonal, scaled by its largest magnitude (no overflow in float32)
    T mx = 0;
    for (int i = j + 1 + lid; i < M; i += WG) mx = fmax(mx, fabs(a[i * N + j]));
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {{ if (lid < s) red[lid] = fmax(red[lid], red[lid + s]); barrier(CLK_LOCAL_MEM_FENCE); }}
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    T ss = 0;
    if (mx > 0) for (int i = j + 1 + lid; i < M; i += WG) {{ T v = a[i * N + j] / mx; ss += v * v; }}
    red[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {{ if (lid < s) red[lid] += red[lid + s]; barrier(CLK_LOCAL_MEM_FENCE); }}
    if (lid == 0) {{
      T xnorm = mx * sqrt(red[0]), alpha = a[j * N + j], t = 0, sc = 0;
      if (xnorm != 0) {{
        T beta = hypot(alpha, xnorm);
        if (alpha >= 0) beta = -beta;
        t = (beta - alpha) / beta;
        sc = 1 / (alpha - beta);
        a[j * N + j] = beta;
      }}
      sh_tau = t; sh_scale = sc; tau[(long)b * K + j] = t;
    }}
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    T t = sh_tau, sc = sh_scale;
    if (t != 0) for (int i = j + 1 + lid; i < M; i += WG) a[i * N + j] *= sc;
    // barriers stay outside the t != 0 branches: with one inside (uniform as it is) PoCL
    // produced wrong results and crashed on matrices larger than the work-group
    barrier(CLK_GLOBAL_MEM_FENCE);
    // H = I - t v v^T applied to the trailing columns: one work-item per column
    if (t != 0) {{
      for (int c = j + 1 + lid; c < N; c += WG) {{
        T s = a[j * N + c];
        for (int i = j + 1; i < M; ++i) s += a[i * N + j] * a[i * N + c];
        s *= t;
        a[j * N + c] -= s;
        for (int i = j + 1; i < M; ++i) a[i * N + c] -= a[i * N + j] * s;
      }}
    }}
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }}
}}

// Q's first QN columns from the reflectors (LAPACK's orgqr): column c is H_0 ... H_(K-1) e_c.
// Columns are independent: one work-item each; H_j with j > c leaves e_c alone, so start at min(K-1, c).
__kernel void orgq(int M, int N, int K, int QN, long nb, __global const T* A, __global const T* tau,
                   __global T* Q) {{
  long g = get_global_id(0); if (g >= nb * QN) return;
  long b = g / QN; int c = g % QN;
  __global const T* a = A + b * M * N;
  __global const T* tb = tau + b * K;
  __global T* q = Q + b * M * QN + c;
  for (int i = 0; i < M; ++i) q[(long)i * QN] = (i == c) ? 1 : 0;
  for (int j = min(K - 1, c); j >= 0; --j) {{
    T t = tb[j];
    if (t == 0) continue;
    T s = q[(long)j * QN];
    for (int i = j + 1; i < M; ++i) s += a[i * N + j] * q[(long)i * QN];
    s *= t;
    q[(long)j * QN] -= s;
    for (int i = j + 1; i < M; ++i) q[(long)i * QN] -= a[i * N + j] * s;
  }}
}}

// R: the first RM rows of the factored A's upper triangle (rows past min(M, N) are zero)
__kernel void triu_rows(int M, int N, int RM, long total, __global const T* A, __global T* R) {{
  long g = get_global_id(0); if (g >= total) return;
  int j = g % N; long r = g / N; int i = r % RM; long b = r / RM;
  R[g] = (j >= i) ? A[(b * M + i) * N + j] : 0;
}}

__kernel void ludet(int N, int nb, __global const T* LU, __global const int* piv, __global T* out) {{
  int b = get_global_id(0); if (b >= nb) return;
  __global const T* a = LU + (long)b * N * N;
  T d = 1;
  for (int k = 0; k < N; ++k) {{ d *= a[k * N + k]; if (piv[(long)b * N + k] != k) d = -d; }}
  out[b] = d;
}}
"""


_CT = {"float32": "float", "float64": "double"}


def _k(dc, dtype, name):
    return dc.kernel(_src(_CT[dtype]), name)


def _native_ok(*xs) -> bool:
    from burn_wgpu.tensor import WTensor
    return all(isinstance(x, WTensor) and x.dtype in _CT for x in xs)


def _copy(x, shape=None):
    """A fresh contiguous device copy of ``x`` (broadcast to ``shape``): kernels work in place."""
    from burn_wgpu import kernels as wk
    if shape is not None and tuple(shape) != x.shape:
        x = wk.broadcast_to(x, shape=shape)
    return wk.elementwise("positive")(x)


def _nb(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _i32(v):
    return np.int32(v)


def _zeros_i32(dc, n):
    from burn_wgpu.tensor import empty
    import pyopencl as cl
    t = empty(dc, (max(n, 1),), "int32")
    cl.enqueue_fill_buffer(dc.queue, t.buf, np.int32(0), 0, max(n, 1) * 4)
    return t


def _raise_if(name, info, a_shape, dtype, nb):
    # a per-matrix status flag read back (a sync, a few bytes): the error comes at the call, as on flex
    flags = np.empty(max(nb, 1), np.int32)
    info.dc.download(info.buf, 0, flags)
    if nb and flags[:nb].any():
        raise LinAlgError(f"linalg::{name}: {'not positive definite' if name == 'cholesky' else 'singular matrix'} "
                          f"(input shape={tuple(a_shape)} dtype={dtype}, matrix {int(np.argmax(flags))} of the batch);"
                          f" {_flex._FIX.get(name, '')}".rstrip("; "))


def _launch_groups(dc, kern, nb, args):
    dc.launch(kern, nb * _WG, args, local=_WG)


# -- native kernels -------------------------------------------------------------------------------

def cholesky(a, *, upper=False):
    if not _native_ok(a) or a.size == 0:
        return _fallback["cholesky"](a, upper=upper)
    from burn_wgpu import kernels as wk
    dc, N = a.dc, a.shape[-1]
    nb = _nb(a.shape[:-2])
    out = _copy(a)
    info = _zeros_i32(dc, nb)
    _launch_groups(dc, _k(dc, a.dtype, "chol"), nb, (_i32(N), out.buf, info.buf))
    _raise_if("cholesky", info, a.shape, a.dtype, nb)
    if upper:
        nd = len(a.shape)
        out = _copy(wk.permute(out, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2)))
    return out


def _trsm(dc, a, x, nb, *, lower, trans, unit, name, a_shape):
    """Solve in place into contiguous ``x`` (nb, N, K); ``a`` contiguous per matrix (batch stride may be 0)."""
    N, K = x.shape[-2], x.shape[-1]
    sa = a.strides[0] if len(a.shape) > 2 else 0
    info = _zeros_i32(dc, nb)
    dc.launch(_k(dc, a.dtype, "trsm"), nb * K,
              (_i32(N), _i32(K), _i32(nb), _i32(lower), _i32(trans), _i32(unit), a.buf, _i32(a.offset),
               np.int64(sa), x.buf, info.buf))
    if not unit:
        _raise_if(name, info, a_shape, a.dtype, nb)


def _flat_batch(x, batch):
    """``x`` broadcast to ``batch`` + its matrix dims, as (nb, M, N) with per-matrix contiguous rows."""
    from burn_wgpu import kernels as wk
    shape = tuple(batch) + x.shape[-2:]
    v = wk.broadcast_to(x, shape=shape)
    m = v.shape[-2:]
    st = v.strides[-2:]
    if st != (m[1], 1) and m[0] * m[1] > 1:
        v = _copy(v)
    return wk.reshape(v, shape=(_nb(batch),) + tuple(m))


def solve_triangular(a, b, *, trans=0, lower=False, unit_diagonal=False):
    if not _native_ok(a, b) or a.dtype != b.dtype or a.size == 0 or b.size == 0:
        return _fallback["solve_triangular"](a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal)
    from burn_wgpu import kernels as wk
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    nb = _nb(batch)
    af = _flat_batch(a, batch)
    x = _copy(b, batch + b.shape[-2:])
    _trsm(a.dc, af, wk.reshape(x, shape=(nb,) + b.shape[-2:]), nb, lower=int(bool(lower)),
          trans=int(trans in (1, 2, "T", "C")), unit=int(bool(unit_diagonal)), name="solve_triangular",
          a_shape=a.shape)
    return x


def _lu(a, name, batch=None):
    """(LU factors (nb, N, N), pivots (nb, N) int32, nb); raises on a singular matrix if name is given."""
    from burn_wgpu import kernels as wk
    dc, N = a.dc, a.shape[-1]
    batch = a.shape[:-2] if batch is None else batch
    nb = _nb(batch)
    lu_ = wk.reshape(_copy(a, tuple(batch) + a.shape[-2:]), shape=(nb, N, N))
    from burn_wgpu.tensor import empty
    piv = empty(dc, (nb, N), "int32")
    info = _zeros_i32(dc, nb)
    _launch_groups(dc, _k(dc, a.dtype, "lu"), nb, (_i32(N), lu_.buf, piv.buf, info.buf))
    if name:
        _raise_if(name, info, a.shape, a.dtype, nb)
    return lu_, piv, nb


def lu_factor(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["lu_factor"](a)
    from burn_wgpu import kernels as wk
    lu_, piv, _ = _lu(a, None)     # scipy warns (does not raise) on a singular matrix: so do we not raise
    return wk.reshape(lu_, shape=a.shape), wk.reshape(piv, shape=a.shape[:-1])


def _lus(dc, lu_, piv, x, nb, eye, trans=0):
    """``lu_`` (nb, N, N) and ``piv`` (nb, N) with per-matrix contiguous rows (batch stride may be 0)."""
    N, K = x.shape[-2], x.shape[-1]
    dc.launch(_k(dc, lu_.dtype, "lus"), nb * K,
              (_i32(N), _i32(K), _i32(nb), _i32(eye), _i32(trans), lu_.buf, np.int64(lu_.offset),
               np.int64(lu_.strides[0]), piv.buf, np.int64(piv.offset), np.int64(piv.strides[0]), x.buf))


def lu_solve(lu_, piv, b, *, trans=0):
    if not (_native_ok(lu_, b) and lu_.dtype == b.dtype and piv.dtype == "int32" and lu_.size and b.size
            and trans in (0, 1, 2, "N", "T", "C")):
        return _fallback["lu_solve"](lu_, piv, b, trans=trans)
    from burn_wgpu import kernels as wk
    batch = tuple(np.broadcast_shapes(lu_.shape[:-2], piv.shape[:-1], b.shape[:-2]))
    nb = _nb(batch)
    lf = _flat_batch(lu_, batch)
    pf = _flat_vec(piv, batch)
    # a zero on U's diagonal: raise as flex does (LAPACK's getrs would divide by it)
    info = _zeros_i32(lu_.dc, nb)
    lu_.dc.launch(_k(lu_.dc, lu_.dtype, "diagzero"), nb, (_i32(lu_.shape[-1]), _i32(nb), lf.buf,
                                                          np.int64(lf.offset), np.int64(lf.strides[0]), info.buf))
    _raise_if("lu_solve", info, lu_.shape, lu_.dtype, nb)
    x = _copy(b, batch + b.shape[-2:])
    _lus(lu_.dc, lf, pf, wk.reshape(x, shape=(nb,) + b.shape[-2:]), nb, 0, int(trans not in (0, "N")))
    return x


def _flat_vec(v, batch):
    from burn_wgpu import kernels as wk
    shape = tuple(batch) + v.shape[-1:]
    w = wk.broadcast_to(v, shape=shape)
    if w.strides[-1] != 1 and w.shape[-1] > 1:
        w = _copy(w)
    return wk.reshape(w, shape=(_nb(batch),) + v.shape[-1:])


def slogdet(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["slogdet"](a)
    from burn_wgpu.tensor import empty
    lu_, piv, nb = _lu(a, None)
    sgn, logabs = empty(a.dc, a.shape[:-2], a.dtype), empty(a.dc, a.shape[:-2], a.dtype)
    a.dc.launch(_k(a.dc, a.dtype, "luslogdet"), nb, (_i32(a.shape[-1]), _i32(nb), lu_.buf, piv.buf,
                                                     sgn.buf, logabs.buf))
    return sgn, logabs


def solve(a, b):
    if not _native_ok(a, b) or a.dtype != b.dtype or a.size == 0 or b.size == 0:
        return _fallback["solve"](a, b)
    from burn_wgpu import kernels as wk
    batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    lu_, piv, nb = _lu(a, "solve", batch)
    x = _copy(b, batch + b.shape[-2:])
    _lus(a.dc, lu_, piv, wk.reshape(x, shape=(nb,) + b.shape[-2:]), nb, 0)
    return x


def inv(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["inv"](a)
    from burn_wgpu.tensor import empty
    lu_, piv, nb = _lu(a, "inv")
    x = empty(a.dc, a.shape, a.dtype)
    _lus(a.dc, lu_, piv, x, nb, 1)
    return x


def det(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["det"](a)
    from burn_wgpu.tensor import empty
    lu_, piv, nb = _lu(a, None)     # a singular matrix has determinant 0: no error
    out = empty(a.dc, a.shape[:-2], a.dtype)
    a.dc.launch(_k(a.dc, a.dtype, "ludet"), nb, (_i32(a.shape[-1]), _i32(nb), lu_.buf, piv.buf, out.buf))
    return out


def qr(a, *, mode="reduced"):
    """Batched Householder QR, one work-group per matrix; Q formed by accumulating the reflectors."""
    if not _native_ok(a) or a.size == 0 or mode not in ("reduced", "complete", "r"):
        return _fallback["qr"](a, mode=mode)
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, (M, N) = a.dc, a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb = _nb(batch)
    f = wk.reshape(_copy(a), shape=(nb, M, N))
    tau = empty(dc, (nb, K), a.dtype)
    _launch_groups(dc, _k(dc, a.dtype, "qr"), nb, (_i32(M), _i32(N), f.buf, tau.buf))
    rm = M if mode == "complete" else K
    r = empty(dc, batch + (rm, N), a.dtype)
    dc.launch(_k(dc, a.dtype, "triu_rows"), r.size, (_i32(M), _i32(N), _i32(rm), np.int64(r.size), f.buf, r.buf))
    if mode == "r":
        return r
    qn = M if mode == "complete" else K
    q = empty(dc, batch + (M, qn), a.dtype)
    dc.launch(_k(dc, a.dtype, "orgq"), nb * qn,
              (_i32(M), _i32(N), _i32(K), _i32(qn), np.int64(nb), f.buf, tau.buf, q.buf))
    return q, r


# -- registration ---------------------------------------------------------------------------------

def _make_fallbacks():
    from burn_wgpu.interop import host_fallback
    return {name: host_fallback(fn, f"linalg_{name}") for name, fn in _flex.KERNELS.items()}


class _Lazy(dict):
    # burn_wgpu is imported on the first fallback call, not when this module is imported
    def __missing__(self, name):
        self.update(_make_fallbacks())
        return dict.__getitem__(self, name)


_fallback = _Lazy()

NATIVE = {"cholesky": cholesky, "solve_triangular": solve_triangular, "lu_factor": lu_factor,
          "lu_solve": lu_solve, "solve": solve, "inv": inv, "det": det, "slogdet": slogdet, "qr": qr}


def _fallback_kernel(name):
    def k(*xs, **kw):
        return _fallback[name](*xs, **kw)
    k.__name__ = f"wgpu_host_linalg_{name}"
    return k


KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, LAPACK, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
