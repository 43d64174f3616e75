"""wgpu kernels of burn.linalg: every op natively in OpenCL; complex inputs on the host except eigh.

One OpenCL program per dtype (float32, float64), sizes as run-time arguments, so
PoCL compiles it once and the disk cache keeps it. The factorizations run one
work-group per matrix (batched over the leading dimensions), which suits the
small matrices (N <= 256) these ops mostly see:

- ``cholesky``, ``solve_triangular``; LU with partial pivoting (rectangular
  too; the first largest pivot, as LAPACK's idamax) behind ``lu_factor``,
  ``lu_solve``, ``solve``, ``inv``, ``det``, ``slogdet`` and ``lu`` (P, L, U
  or P @ L built on the device from the pivots: scipy.linalg.lu's exactly).
- ``qr``: Householder with LAPACK's reflectors (dlarfg), so Q and R carry
  numpy's signs; run on A^T (A's columns contiguous), Q accumulated one
  work-item per column.
- ``eigh`` / ``eigvalsh``: from N = ``_EIGH_TRIDIAG_MIN`` (10) LAPACK's route,
  Householder reduction to tridiagonal form, implicit QL with Wilkinson shifts,
  the rotations applied to the formed Q (dsytrd + dorgtr + dsteqr, all in one
  kernel; ~5x fewer flops than Jacobi at N = 128); below it cyclic two-sided
  Jacobi, N / 2 disjoint rotations per round (round-robin ordering), which is
  faster there. Only the ``UPLO`` triangle is read; eigenvalues ascending (as
  LAPACK). Eigenvectors are unique only up to sign: each one's
  largest-magnitude component (the first of equal ones) is made positive, so
  the result is deterministic (LAPACK's may differ in sign).
  Complex Hermitian (complex64 / complex128, every N <= 2 * ``_MAXP``): ``htridiag_ql``,
  Hermitian Householder reflectors to a Hermitian tridiagonal T, a diagonal unitary D making
  D^H T D real (so the same QL runs unchanged), vectors Q D Z; each eigenvector's
  largest-magnitude component (the first of equal ones) is made real positive.
- ``svd`` / ``svdvals``: one-sided (Hestenes) Jacobi on the rows of A^T, from
  min(M, N) = ``_SVD_PRECOND_MIN`` (16) started from V^T A^T with V the
  eigenvectors (``eigh`` above) of the Gram matrix A^T A (2-3x fewer sweeps);
  a tall A is first reduced by the QR above (Jacobi then works on R, U = Q
  U_R, and ``full_matrices=True`` takes its extra columns from the complete
  Q); a wide A is the transpose of a tall one. Singular values descending.
  Signs: each column of U has its largest-magnitude component positive (Vh's
  row flips with it). U's columns for zero singular values are completed to
  an orthonormal basis by Gram-Schmidt on the device.
- ``pinv`` from that SVD (numpy's cutoff: singular values > rcond * max kept)
  or, ``hermitian=True``, from ``eigh`` of the lower triangle (as numpy);
  ``lstsq`` = pinv(A) @ B, gelsd's minimum-norm solution.
- ``diagonal``: a strided gather, bit for bit, for every dtype.

Layout matters more than parallelism on PoCL (CPU): a work-item streaming
along contiguous memory with several partial sums (``dot4``) beats
work-items striding down columns or dividing indices per element, so the
kernels hold A^T for QR, X^T for the plain triangular / LU solves, and give
one work-item a whole row (or pair of rows) where they can.

The Jacobi rotations use relative tests, |a_pq| > eps sqrt(|a_pp a_qq|) for
eigh (Demmel & Veselic) and |x_p . x_q| > sqrt(L) eps ||x_p|| ||x_q|| for svd
(LAPACK's dgesvj), so small eigen/singular values keep relative accuracy
(tests/test_linalg_wgpu_eigh.py checks a graded svd against mpmath).
Factorization failures (not positive definite, singular) are flagged per
matrix on the device; the flags are read back (a sync) so the error is
raised as flex raises it.

Complex (but Hermitian eigh / eigvalsh), float16 and empty inputs (and eigh with N > 2 * _MAXP) run as host
fallbacks at run time: the inputs are copied to the host, the flex (LAPACK)
kernel runs, the results are copied back, and the copies are counted in the
device's ``stats()`` (``host_transfers``, ``host_transfer_bytes``).

This module is imported only when the wgpu backend is registered;
PyOpenCL and burn_wgpu are imported inside the kernels.
"""
from __future__ import annotations

import numpy as np

from . import _flex
from ._errors import LinAlgError

_WG = 64        # work-group size of the one-group-per-matrix kernels
_MAXP = 512     # the Jacobi kernels keep a round's rotations in local memory: N <= 2 * _MAXP
_SWEEPS = 60    # a cap only: Jacobi converges quadratically, 6-12 sweeps at float64 for N = 128
_QLR = 4         # rows of Z per work-item in tridiag_ql's rotations (independent chains)
_SVD_PRECOND_MIN = 16   # svd: Jacobi preconditioned by eigh of the Gram matrix from this min(M, N)
_EIGH_TRIDIAG_MIN = 10  # eigh / eigvalsh: Jacobi below this N, Householder + QL from it (crossover 8-12 on PoCL)


def _ql_sweeps(rows: str) -> str:
    """tridiag_ql's step (3), shared with htridiag_ql: implicit QL on the local (d, e), the rotations
    applied to the ``rows`` rows (length N, contiguous, at ``a``) of Z; Z <- Z G (real G)."""
    return """  // (3) implicit QL; work-item 0 keeps the state (l, iter) and computes one sweep's rotations
  // (c, s of plane (i, i + 1) in lv[i], lw[i]) per pass, the group applies them
  int l = 0, iter = 0;
  for (;;) {
    if (lid == 0) {
      int go = 0;
      while (!go && l < N) {
        int m = l;
        for (; m < N - 1; ++m) {
          T em = e[m];
          if (em * em <= (EPS * EPS * fabs(d[m])) * fabs(d[m + 1]) + TINY) break;
        }
        if (m == l || iter >= 60) { ++l; iter = 0; continue; }       // (a cap only: 1-2 sweeps per value)
        ++iter;
        T g = (d[l + 1] - d[l]) / (2 * e[l]);
        T r = hypot(g, (T)1);
        g = d[m] - d[l] + e[l] / (g + copysign(r, g));
        T s = 1, c = 1, p = 0;
        int i = m - 1, split = 0;
        for (; i >= l; --i) {
          T f = s * e[i], bb = c * e[i];
          // sqrt of the sum of squares (the scaling keeps it from overflowing; hypot, 3x slower on
          // PoCL, only where it underflows)
          r = sqrt(f * f + g * g);
          if (r < SQRT_TINY) r = hypot(f, g);
          e[i + 1] = r;
          if (r == 0) { d[i + 1] -= p; e[m] = 0; split = 1; break; }
          T ir = 1 / r;
          s = f * ir; c = g * ir; g = d[i + 1] - p; r = (d[i] - g) * s + 2 * c * bb; p = s * r;
          d[i + 1] = g + p; g = c * r - bb;
          lv[i] = c; lw[i] = s;
        }
        if (!split) { d[l] -= p; e[l] = g; e[m] = 0; }
        sh_lo = split ? i + 1 : l; sh_hi = m - 1;
        go = 1;
      }
      sh_go = go;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!sh_go) break;
    if (want_v) {
      int lo = sh_lo, hi = sh_hi;
      // QLR rows per work-item at once: a row's walk is one chain of dependent multiply-adds
      // (x carries from plane to plane); independent chains overlap (3x on PoCL)
      for (int r = QLR * lid; r < NROWS; r += QLR * WG) {
        if (r + QLR <= NROWS) {
          __global T* z = a + r * N;
          T x[QLR];
          #pragma unroll
          for (int k = 0; k < QLR; ++k) x[k] = z[k * N + hi + 1];
          for (int i = hi; i >= lo; --i) {
            T c = lv[i], s = lw[i];
            #pragma unroll
            for (int k = 0; k < QLR; ++k) {
              T g = z[k * N + i];
              z[k * N + i + 1] = s * g + c * x[k]; x[k] = c * g - s * x[k];
            }
          }
          #pragma unroll
          for (int k = 0; k < QLR; ++k) z[k * N + lo] = x[k];
        } else for (int rr = r; rr < NROWS; ++rr) {
          __global T* z = a + rr * N;
          T x = z[hi + 1];
          for (int i = hi; i >= lo; --i) {
            T g = z[i], c = lv[i], s = lw[i];
            z[i + 1] = s * g + c * x;
            x = c * g - s * x;
          }
          z[lo] = x;
        }
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
""".replace("NROWS", rows)


def _dot4(name: str, y_space: str) -> str:
    """OpenCL C of ``T name(__global const T* x, <y_space> const T* y, int n)``: x . y with four
    partial sums. OpenCL 1.2 has no generic address space, so each space of y is its own copy.

    >>> assert "T dot4l(__global const T* x, __local const T* y, int n)" in _dot4("dot4l", "__local")
    """
    return (f"T {name}(__global const T* x, {y_space} const T* y, int n) {{\n"
            "  T s0 = 0, s1 = 0, s2 = 0, s3 = 0;\n"
            "  int i = 0;\n"
            "  for (; i + 3 < n; i += 4) {\n"
            "    s0 += x[i] * y[i]; s1 += x[i + 1] * y[i + 1]; s2 += x[i + 2] * y[i + 2]; s3 += x[i + 3] * y[i + 3];\n"
            "  }\n"
            "  for (; i < n; ++i) s0 += x[i] * y[i];\n"
            "  return (s0 + s1) + (s2 + s3);\n"
            "}")


def _src(T: str) -> str:
    ext = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if T == "double" else ""
    return ext + f"""
#define T {T}
#define WG {_WG}
#define EPS {"DBL_EPSILON" if T == "double" else "FLT_EPSILON"}
#define TINY {"DBL_MIN" if T == "double" else "FLT_MIN"}
#define SQRT_TINY {"1.4916681462400413e-154" if T == "double" else "1.0842022e-19f"}
#define MAXP {_MAXP}
#define QLR {_QLR}

// Dot products inside one work-item: OpenCL may not reassociate a sum, so a single accumulator is
// one long dependent chain of adds; four partial sums let the CPU overlap them (2-3x on PoCL).
{_dot4("dot4", "__global")}

// The work-group's largest v (every item calls it, in uniform control flow; red holds WG
// values). The first barrier also fences global memory: callers scale what they just wrote.
T group_max(T v, __local T* red) {{
  int lid = get_local_id(0);
  red[lid] = v;
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  for (int s = WG / 2; s > 0; s >>= 1) {{
    if (lid < s) red[lid] = fmax(red[lid], red[lid + s]);
    barrier(CLK_LOCAL_MEM_FENCE);
  }}
  T r = red[0];
  barrier(CLK_LOCAL_MEM_FENCE);       // everyone has read red[0] before red is reused
  return r;
}}

// stores eigenvalue d[i] (times scale) of matrix b at its place in ascending order (ties by
// index), the tridiagonal kernels' output order as jacobi_eigh's, and returns that place
int eig_store(__global T* W, int b, int N, __local const T* d, int i, T scale) {{
  T wi = d[i];
  int rank = 0;
  for (int j = 0; j < N; ++j) {{ T wj = d[j]; rank += (wj < wi || (wj == wi && j < i)); }}
  W[(long)b * N + rank] = wi * scale;
  return rank;
}}

// x.x, y.y and x.y in one pass, two partial sums each
void dot3(__global const T* x, __global const T* y, int n, T* xx, T* yy, T* xy) {{
  T a0 = 0, a1 = 0, b0 = 0, b1 = 0, c0 = 0, c1 = 0;
  int i = 0;
  for (; i + 1 < n; i += 2) {{
    T u0 = x[i], w0 = y[i], u1 = x[i + 1], w1 = y[i + 1];
    a0 += u0 * u0; b0 += w0 * w0; c0 += u0 * w0; a1 += u1 * u1; b1 += w1 * w1; c1 += u1 * w1;
  }}
  if (i < n) {{ T u = x[i], w = y[i]; a0 += u * u; b0 += w * w; c0 += u * w; }}
  *xx = a0 + a1; *yy = b0 + b1; *xy = c0 + c1;
}}
// A: batch of N x N matrices, contiguous, factorized in place (lower triangle read).
__kernel void chol(int N, __global T* A, __global int* info) {{
  int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  __global T* a = A + (long)b * N * N;
  __local int bad;
  if (lid == 0) bad = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = 0; j < N; ++j) {{
    if (lid == 0) {{
      T d = a[j * N + j] - dot4(a + j * N, a + j * N, j);
      if (!(d > 0)) {{ bad = 1; d = NAN; }}
      a[j * N + j] = sqrt(d);
    }}
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    T djj = a[j * N + j];
    for (int i = j + 1 + lid; i < N; i += ls) {{
      a[i * N + j] = (a[i * N + j] - dot4(a + i * N, a + j * N, j)) / djj;
    }}
    barrier(CLK_GLOBAL_MEM_FENCE);
  }}
  for (int e = lid; e < N * N; e += ls) if (e % N > e / N) a[e] = 0;
  if (lid == 0) info[b] = bad;
}}

// Solve op(A) X = B; A: (N, N) with batch stride sa and offset oa; B: X in place, (N, K) per
// matrix with element (i, c) at i * rs + c * cs. One work-item per right-hand-side column; with
// rs == 1 (B held transposed) and no transpose of A, rows of A and X stream through dot4.
__kernel void trsm(int N, int K, int nb, int lower, int trans, int unit,
                   __global const T* A, int oa, long sa, __global T* B, __global int* info, int rs, int cs) {{
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  int b = g / K, c = g % K;
  __global const T* a = A + oa + b * sa;
  __global T* x = B + (long)b * N * K + (long)c * cs;
  int low = lower ^ trans;
  int bad = 0;
  for (int t = 0; t < N; ++t) {{
    int i = low ? t : N - 1 - t;
    T s = x[(long)i * rs];
    if (rs == 1 && !trans) s -= low ? dot4(a + i * N, x, i) : dot4(a + i * N + i + 1, x + i + 1, N - i - 1);
    else if (low) {{ for (int k = 0; k < i; ++k) s -= (trans ? a[k * N + i] : a[i * N + k]) * x[(long)k * rs]; }}
    else {{ for (int k = i + 1; k < N; ++k) s -= (trans ? a[k * N + i] : a[i * N + k]) * x[(long)k * rs]; }}
    if (!unit) {{ T d = a[i * N + i]; if (d == 0) bad = 1; s /= d; }}
    x[(long)i * rs] = s;
  }}
  if (bad) info[b] = 1;
}}

// LU with partial pivoting in place of an M x N matrix (LAPACK getrf layout, rectangular too);
// piv[k], k < min(M, N): the row swapped with row k (0-based). The first largest |pivot| wins, as idamax.
__kernel void lu(int M, int N, __global T* A, __global int* piv, __global int* info) {{
  int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  int K = min(M, N);
  __global T* a = A + (long)b * M * N;
  __global int* pv = piv + (long)b * K;
  __local int p;
  __local int bad;
  if (lid == 0) bad = 0;
  for (int k = 0; k < K; ++k) {{
    if (lid == 0) {{
      int best = k; T bv = fabs(a[k * N + k]);
      for (int i = k + 1; i < M; ++i) {{ T v = fabs(a[i * N + k]); if (v > bv) {{ bv = v; best = i; }} }}
      p = best; pv[k] = best;
      if (bv == 0) bad = 1;
    }}
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    int pk = p;
    if (pk != k) for (int j = lid; j < N; j += ls) {{ T t = a[k * N + j]; a[k * N + j] = a[pk * N + j]; a[pk * N + j] = t; }}
    barrier(CLK_GLOBAL_MEM_FENCE);
    // a work-item per row below the pivot: its multiplier, then its row of the trailing update,
    // streaming (no per-element index division, which dominated on PoCL)
    T d = a[k * N + k];
    __global const T* pr = a + k * N;
    for (int i = k + 1 + lid; i < M; i += ls) {{
      __global T* ri = a + i * N;
      T l = ri[k];
      if (d != 0) {{ l /= d; ri[k] = l; }}
      for (int j = k + 1; j < N; ++j) ri[j] -= l * pr[j];
    }}
    barrier(CLK_GLOBAL_MEM_FENCE);
  }}
  if (lid == 0) info[b] = bad;
}}

// The row permutation of getrf's interchanges: (L U)[i] = A[perm[i]]; one work-item per matrix.
__kernel void lu_perm(int M, int K, int nb, __global const int* piv, __global int* perm) {{
  int b = get_global_id(0); if (b >= nb) return;
  __global int* pm = perm + (long)b * M;
  for (int i = 0; i < M; ++i) pm[i] = i;
  for (int k = 0; k < K; ++k) {{ int q = piv[(long)b * K + k]; int t = pm[k]; pm[k] = pm[q]; pm[q] = t; }}
}}

// P (M x M) with A = P L U: P[perm[i], i] = 1
__kernel void perm_matrix(int M, long total, __global const int* perm, __global T* P) {{
  long g = get_global_id(0); if (g >= total) return;
  int c = g % M; long r = g / M; int i = r % M; long b = r / M;
  P[g] = (perm[b * M + c] == i) ? 1 : 0;
}}

// L (M x K): unit lower trapezoid of the factors; scatter != 0 stores row i at row perm[i] (P @ L)
__kernel void lu_lower(int M, int N, int K, int scatter, long total, __global const T* F,
                       __global const int* perm, __global T* Lo) {{
  long g = get_global_id(0); if (g >= total) return;
  int j = g % K; long r = g / K; int i = r % M; long b = r / M;
  T v = (i > j) ? F[(b * M + i) * N + j] : (i == j) ? 1 : 0;
  int row = scatter ? perm[b * M + i] : i;
  Lo[(b * M + row) * K + j] = v;
}}

// X = A^-1 B (trans: A^-T B) from the LU factors (batch strides sl, sp; offsets ol, op);
// B: X in place, (N, K) per matrix with element (i, c) at i * rs + c * cs; eye: B starts as the
// identity. With rs == 1 (B held transposed) the plain solve streams through rows of LU and X.
__kernel void lus(int N, int K, int nb, int eye, int trans, __global const T* LU, long ol, long sl,
                  __global const int* piv, long op, long sp, __global T* B, int rs, int cs) {{
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  int b = g / K, c = g % K;
  __global const T* a = LU + ol + b * sl;
  __global const int* pv = piv + op + b * sp;
  __global T* x = B + (long)b * N * K + (long)c * cs;
  if (eye) for (int i = 0; i < N; ++i) x[(long)i * rs] = (i == c) ? 1 : 0;
  if (!trans) {{
    for (int k = 0; k < N; ++k) {{ int q = pv[k]; if (q != k) {{ T t = x[(long)k * rs]; x[(long)k * rs] = x[(long)q * rs]; x[(long)q * rs] = t; }} }}
    if (rs == 1) {{
      for (int i = 1; i < N; ++i) x[i] -= dot4(a + i * N, x, i);
      for (int i = N - 1; i >= 0; --i) x[i] = (x[i] - dot4(a + i * N + i + 1, x + i + 1, N - i - 1)) / a[i * N + i];
    }} else {{
      for (int i = 0; i < N; ++i) {{ T s = x[(long)i * rs]; for (int k = 0; k < i; ++k) s -= a[i * N + k] * x[(long)k * rs]; x[(long)i * rs] = s; }}
      for (int i = N - 1; i >= 0; --i) {{
        T s = x[(long)i * rs]; for (int k = i + 1; k < N; ++k) s -= a[i * N + k] * x[(long)k * rs];
        x[(long)i * rs] = s / a[i * N + i];
      }}
    }}
  }} else {{
    // A = P L U: solve U^T, then L^T (unit), then undo the row interchanges in reverse order
    for (int i = 0; i < N; ++i) {{
      T s = x[(long)i * rs]; for (int k = 0; k < i; ++k) s -= a[k * N + i] * x[(long)k * rs];
      x[(long)i * rs] = s / a[i * N + i];
    }}
    for (int i = N - 1; i >= 0; --i) {{ T s = x[(long)i * rs]; for (int k = i + 1; k < N; ++k) s -= a[k * N + i] * x[(long)k * rs]; x[(long)i * rs] = s; }}
    for (int k = N - 1; k >= 0; --k) {{ int q = pv[k]; if (q != k) {{ T t = x[(long)k * rs]; x[(long)k * rs] = x[(long)q * rs]; x[(long)q * rs] = t; }} }}
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

// Householder QR of A (M x N) held transposed, At (N x M) row-major: A's columns are contiguous
// rows, so every loop below streams through memory inside one work-item (on PoCL this was 3x
// faster than work-items striding down columns). LAPACK's geqrf layout, transposed: R's column j
// on and before At[j, j], reflector j's vector after it (v_j = 1 implied), tau[j] per reflector.
// The reflectors are LAPACK's dlarfg (beta = -sign(alpha) ||(alpha, x)||, tau = 0 when x = 0),
// so Q and R carry numpy's signs.
__kernel void qrt(int M, int N, __global T* At, __global T* tau) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = At + (long)b * M * N;
  int K = min(M, N);
  __local T red[WG];
  __local T sh_tau, sh_scale;
  for (int j = 0; j < K; ++j) {{
    __global T* col = a + (long)j * M;
    // the column's norm below the diagonal, scaled by its largest magnitude (no overflow in float32)
    T mx = 0;
    for (int i = j + 1 + lid; i < M; i += WG) mx = fmax(mx, fabs(col[i]));
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {{ if (lid < s) red[lid] = fmax(red[lid], red[lid + s]); barrier(CLK_LOCAL_MEM_FENCE); }}
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    T ss = 0;
    if (mx > 0) for (int i = j + 1 + lid; i < M; i += WG) {{ T v = col[i] / mx; ss += v * v; }}
    red[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {{ if (lid < s) red[lid] += red[lid + s]; barrier(CLK_LOCAL_MEM_FENCE); }}
    if (lid == 0) {{
      T xnorm = mx * sqrt(red[0]), alpha = col[j], t = 0, sc = 0;
      if (xnorm != 0) {{
        T beta = hypot(alpha, xnorm);
        if (alpha >= 0) beta = -beta;
        t = (beta - alpha) / beta;
        sc = 1 / (alpha - beta);
        col[j] = beta;
      }}
      sh_tau = t; sh_scale = sc; tau[(long)b * K + j] = t;
    }}
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    T t = sh_tau, sc = sh_scale;
    if (t != 0) for (int i = j + 1 + lid; i < M; i += WG) col[i] *= sc;
    // barriers stay outside the t != 0 branches: with one inside (uniform as it is) PoCL
    // produced wrong results and crashed on matrices larger than the work-group
    barrier(CLK_GLOBAL_MEM_FENCE);
    // H = I - t v v^T applied to the trailing columns: one work-item per column
    if (t != 0) {{
      for (int c = j + 1 + lid; c < N; c += WG) {{
        __global T* x = a + (long)c * M;
        T s = (x[j] + dot4(col + j + 1, x + j + 1, M - j - 1)) * t;
        x[j] -= s;
        for (int i = j + 1; i < M; ++i) x[i] -= col[i] * s;
      }}
    }}
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }}
}}

// Q's first QN columns from the reflectors (LAPACK's orgqr), written transposed (Qt: QN x M):
// column c is H_0 ... H_(K-1) e_c. Columns are independent: one work-item each; H_j with j > c
// leaves e_c alone, so start at min(K-1, c).
__kernel void orgqt(int M, int N, int K, int QN, long nb, __global const T* At, __global const T* tau,
                    __global T* Qt) {{
  long g = get_global_id(0); if (g >= nb * QN) return;
  long b = g / QN; int c = g % QN;
  __global const T* a = At + b * M * N;
  __global const T* tb = tau + b * K;
  __global T* q = Qt + g * M;
  for (int i = 0; i < M; ++i) q[i] = (i == c) ? 1 : 0;
  for (int j = min(K - 1, c); j >= 0; --j) {{
    T t = tb[j];
    if (t == 0) continue;
    __global const T* v = a + (long)j * M;
    T s = (q[j] + dot4(v + j + 1, q + j + 1, M - j - 1)) * t;
    q[j] -= s;
    for (int i = j + 1; i < M; ++i) q[i] -= v[i] * s;
  }}
}}

// R (RM x N) from the transposed factors: R[i, c] = At[c, i] on and above the diagonal
__kernel void triu_rows_t(int M, int N, int RM, long total, __global const T* At, __global T* R) {{
  long g = get_global_id(0); if (g >= total) return;
  int c = g % N; long r = g / N; int i = r % RM; long b = r / RM;
  R[g] = (c >= i && i < M) ? At[(b * N + c) * M + i] : 0;
}}

// R: the first RM rows of the factored A's upper triangle (rows past min(M, N) are zero)
__kernel void triu_rows(int M, int N, int RM, long total, __global const T* A, __global T* R) {{
  long g = get_global_id(0); if (g >= total) return;
  int j = g % N; long r = g / N; int i = r % RM; long b = r / RM;
  R[g] = (j >= i) ? A[(b * M + i) * N + j] : 0;
}}

// Round r (of n2 - 1) of the round-robin ("circle") ordering of n2 indices: pair k of n2 / 2.
// Every pair of indices meets exactly once per sweep and a round's pairs are disjoint.
void rr_pair(int r, int k, int n2, int* p, int* q) {{
  int x, y;
  if (k == 0) {{ x = r; y = n2 - 1; }}
  else {{ x = (r + k) % (n2 - 1); y = (r - k + n2 - 1) % (n2 - 1); }}
  *p = min(x, y); *q = max(x, y);
}}

// Cyclic two-sided Jacobi for symmetric A, one work-group per matrix (A: work copy, read from the
// UPLO triangle, and A2 its double buffer; V: rotations accumulated, transposed). Each round
// rotates N/2 disjoint pairs at once: C = J^T A J in one pass into the other buffer, a work-item
// per pair writing its two rows of C from the same two rows of A (A J's column j is
// cc[j] a_j + ss[j] a_pj[j]); the rotated 2 x 2 blocks get their closed-form diagonal and an
// exact zero. A pair is rotated while |a_pq| > EPS sqrt(|a_pp a_qq|) (the relative test of Demmel
// & Veselic: small eigenvalues keep their relative accuracy); the sweeps stop when a sweep
// rotated nothing.
__kernel void jacobi_eigh(int N, int lower, int want_v, int maxsweeps, __global T* A, __global T* A2,
                          __global T* V, __global T* W, __global T* VO) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * N * N;
  __global T* a2 = A2 + (long)b * N * N;
  __global T* v = V + (long)b * N * N;
  __local T lc[MAXP], lsn[MAXP], ldp[MAXP], ldq[MAXP], cc[2 * MAXP], ss[2 * MAXP];
  __local int lp[MAXP], lq[MAXP], pj[2 * MAXP];
  __local int rot, rflag[2];
  for (int e = lid; e < N * N; e += WG) {{
    int i = e / N, j = e % N;
    if (lower ? (j > i) : (j < i)) a[e] = a[j * N + i];
    if (want_v) v[e] = (i == j) ? 1 : 0;
  }}
  if (lid == 0) {{ rflag[0] = 0; rflag[1] = 0; }}
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  int n2 = N + (N & 1), np = n2 / 2, gr = 0;
  for (int sweep = 0; sweep < maxsweeps; ++sweep) {{
    if (lid == 0) rot = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < n2 - 1; ++r, ++gr) {{
      for (int k = lid; k < np; k += WG) {{
        int p, q; rr_pair(r, k, n2, &p, &q);
        T c = 1, sn = 0;
        if (q < N) {{
          T apq = a[p * N + q], app = a[p * N + p], aqq = a[q * N + q];
          if (fabs(apq) > EPS * sqrt(fabs(app)) * sqrt(fabs(aqq)) && fabs(apq) > TINY) {{
            T tau = (aqq - app) / (2 * apq);
            T t = (tau >= 0 ? 1 : -1) / (fabs(tau) + hypot((T)1, tau));
            c = 1 / hypot((T)1, t); sn = t * c;
            ldp[k] = app - t * apq; ldq[k] = aqq + t * apq;
            rot = 1; rflag[gr & 1] = 1;
          }}
          pj[q] = p; cc[q] = c; ss[q] = sn;
        }} else q = p;       // the odd index's partner is padding: a no-op pair
        pj[p] = q; cc[p] = c; ss[p] = -sn;
        lc[k] = c; lsn[k] = sn; lp[k] = p; lq[k] = q;
      }}
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
      // (flags alternate by round: this round's is read here while the next one's is cleared)
      int busy = rflag[gr & 1];
      if (lid == 0) rflag[(gr + 1) & 1] = 0;
      if (busy) {{
        for (int k = lid; k < np; k += WG) {{
          int p = lp[k], q = lq[k];
          T c = lc[k], sn = lsn[k];
          __global const T* rp = a + p * N; __global const T* rq = a + q * N;
          __global T* op = a2 + p * N; __global T* oq = a2 + q * N;
          for (int j = 0; j < N; ++j) {{
            int m = pj[j];
            T cj = cc[j], sj = ss[j];
            T x = cj * rp[j] + sj * rp[m], y = cj * rq[j] + sj * rq[m];
            op[j] = c * x - sn * y; oq[j] = sn * x + c * y;
          }}
          if (sn != 0) {{
            op[p] = ldp[k]; op[q] = 0; oq[p] = 0; oq[q] = ldq[k];
            if (want_v) {{
              __global T* vp = v + p * N; __global T* vq = v + q * N;
              for (int j = 0; j < N; ++j) {{ T x = vp[j], y = vq[j]; vp[j] = c * x - sn * y; vq[j] = sn * x + c * y; }}
            }}
          }}
        }}
        __global T* t = a; a = a2; a2 = t;
      }}
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }}
    int any = rot;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!any) break;
  }}
  // ascending order (ties by index, so stable); each eigenvector's largest-magnitude component
  // (the first of equal ones) is made positive
  for (int i = lid; i < N; i += WG) {{
    T wi = a[i * N + i];
    int rank = 0;
    for (int j = 0; j < N; ++j) {{ T wj = a[j * N + j]; rank += (wj < wi || (wj == wi && j < i)); }}
    W[(long)b * N + rank] = wi;
    if (want_v) {{
      T big = 0, sg = 1;
      for (int j = 0; j < N; ++j) {{ T x = v[i * N + j]; if (fabs(x) > big) {{ big = fabs(x); sg = x < 0 ? -1 : 1; }} }}
      for (int j = 0; j < N; ++j) VO[((long)b * N + j) * N + rank] = sg * v[i * N + j];
    }}
  }}
}}

// x . y with y in local memory, four partial sums (as dot4)
{_dot4("dot4l", "__local")}

// LAPACK's route for symmetric A (dsytrd + dorgtr + dsteqr), one work-group per matrix:
// (1) Householder reduction to tridiagonal form Q^T A Q = tridiag(d, e), unblocked (dsytd2 on the
// full symmetric matrix: rows stay contiguous, so p = tau A22 v and the rank-2 update
// A22 -= v w^T + w v^T run one work-item per row, streaming); reflector k is LAPACK's dlarfg of
// row k past the diagonal, its vector kept in that row (no later step reads it); (2) Q formed
// transposed (Qt's row c is Q's column c = H_0 ... H_(N-3) e_c, one work-item per row, as
// orgqt); (3) implicit QL with Wilkinson shifts on (d, e) (tql2 / dsteqr's QL), one work-item
// computing each sweep's rotations, the work-group applying them to Z = Q (Z <- Z G, a work-item
// per row), so Z ends holding the eigenvectors as columns. ~(8/3 + 3) N^3 flops
// against Jacobi's ~ 8 N^3 per sweep. A is first scaled by a power of 2 (exact) bringing its
// largest |entry| to [1, 2): the sums of squares neither overflow nor underflow; the eigenvalues
// are scaled back. Off-diagonal e_m counts as zero when e_m^2 <= EPS^2 |d_m d_m+1| + TINY
// (dsteqr's test). A: the work copy (UPLO triangle read), V: Qt (N x N per matrix, want_v only);
// d, e, tau, lv, lw: local scratch of N elements each.
__kernel void tridiag_ql(int N, int lower, int want_v, __global T* A, __global T* V, __global T* W,
                         __global T* VO, __local T* d, __local T* e, __local T* tau, __local T* lv,
                         __local T* lw) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * N * N;
  __global T* qt = V + (long)b * N * N;
  __local T red[WG];
  __local T sh_tau, sh_sc;
  __local int sh_lo, sh_hi, sh_go;
  T mx = 0;
  for (int i = lid; i < N; i += WG) {{
    __global T* ri = a + i * N;
    for (int j = 0; j < N; ++j) {{
      if (lower ? (j > i) : (j < i)) ri[j] = a[j * N + i];
      mx = fmax(mx, fabs(ri[j]));
    }}
  }}
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int i = lid; i < N; i += WG) {{
    __global T* ri = a + i * N;
    for (int j = 0; j < N; ++j) ri[j] = ldexp(ri[j], -ex);
  }}
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // (1) tridiagonalization; the barriers stay outside data-dependent branches (see qrt)
  for (int k = 0; k < N - 2; ++k) {{
    __global T* rk = a + k * N;
    int m = N - k - 1;
    T ss = 0;
    for (int j = k + 2 + lid; j < N; j += WG) ss += rk[j] * rk[j];
    red[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {{
      if (lid < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) {{
      T xn = sqrt(red[0]), alpha = rk[k + 1], t = 0, sc = 0, beta = alpha;
      if (xn != 0) {{
        beta = hypot(alpha, xn);
        if (alpha >= 0) beta = -beta;
        t = (beta - alpha) / beta;
        sc = 1 / (alpha - beta);
      }}
      d[k] = rk[k]; e[k] = beta; tau[k] = t; sh_tau = t; sh_sc = sc;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    T t = sh_tau, sc = sh_sc;
    for (int j = lid; j < m; j += WG) {{
      T x = j ? rk[k + 1 + j] * sc : 1;
      lv[j] = x;
      if (j) rk[k + 1 + j] = x;
    }}
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    // p = t A22 v (a work-item per row) and the partial sums of p . v
    T pv = 0;
    for (int i = lid; i < m; i += WG) {{
      T p = t * dot4l(a + (k + 1 + i) * N + k + 1, lv, m);
      lw[i] = p; pv += p * lv[i];
    }}
    red[lid] = pv;
    barrier(CLK_LOCAL_MEM_FENCE);
    T al = 0;
    for (int s = 0; s < WG; ++s) al += red[s];
    al *= -t / 2;
    for (int i = lid; i < m; i += WG) lw[i] += al * lv[i];       // w = p - (t / 2)(p . v) v
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < m; i += WG) {{
      __global T* ri = a + (k + 1 + i) * N + k + 1;
      T vi = lv[i], wi = lw[i];
      for (int j = 0; j < m; ++j) ri[j] -= vi * lw[j] + wi * lv[j];
    }}
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }}
  if (lid == 0) {{
    if (N >= 2) {{ d[N - 2] = a[(N - 2) * N + N - 2]; e[N - 2] = a[(N - 1) * N + N - 2]; }}
    d[N - 1] = a[(N - 1) * N + N - 1]; e[N - 1] = 0;
  }}
  // (2) Qt (reflector j: v = (1, row j past j + 1), tau[j]); H_j leaves e_c alone when j >= c
  if (want_v) for (int c = lid; c < N; c += WG) {{
    __global T* q = qt + (long)c * N;
    for (int i = 0; i < N; ++i) q[i] = (i == c) ? 1 : 0;
    for (int j = min(N - 3, c - 1); j >= 0; --j) {{
      T tj = tau[j];
      if (tj == 0) continue;
      __global const T* v = a + j * N;
      T s = (q[j + 1] + dot4(v + j + 2, q + j + 2, N - j - 2)) * tj;
      q[j + 1] -= s;
      for (int i = j + 2; i < N; ++i) q[i] -= v[i] * s;
    }}
  }}
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  // Z = Q row-major into A (the reflectors are spent): a rotation of Z's columns (i, i + 1) then
  // walks each row contiguously (on Qt's rows it strode down columns: 2x slower on PoCL)
  if (want_v) for (int i = lid; i < N; i += WG) {{
    __global T* zi = a + i * N;
    for (int j = 0; j < N; ++j) zi[j] = qt[(long)j * N + i];
  }}
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
{_ql_sweeps("N")}  // ascending order (ties by index) and the sign convention, as jacobi_eigh
  T scale = ldexp((T)1, ex);
  for (int i = lid; i < N; i += WG) {{
    int rank = eig_store(W, b, N, d, i, scale);
    if (want_v) {{
      __global const T* z = a + i;        // column i of Z
      T big = 0, sg = 1;
      for (int j = 0; j < N; ++j) {{ T x = z[j * N]; if (fabs(x) > big) {{ big = fabs(x); sg = x < 0 ? -1 : 1; }} }}
      for (int j = 0; j < N; ++j) VO[((long)b * N + j) * N + rank] = sg * z[j * N];
    }}
  }}
}}

// Complex Hermitian eigh (complex64 / complex128 as interleaved (re, im) pairs of T), tridiag_ql's route:
// (1) Hermitian Householder reflectors H_k = I - tau_k v_k v_k^H (tau_k real, v_k's first entry 1, x + e^(i
// arg x_0) ||x|| e_0 scaled) reduce A to a Hermitian tridiagonal T = Q^H A Q, Q = H_0 ... H_(N-3): as H_k is
// its own adjoint, H_k A22 H_k is the rank-2 update A22 -= v w^H + w v^H, w = p - (tau / 2)(v^H p) v,
// p = tau A22 v, with rows contiguous as in tridiag_ql; T's subdiagonal e_k is complex. (2) D = diag(delta),
// delta_0 = 1, delta_(k+1) = delta_k e_k / |e_k|, makes D^H T D real symmetric with subdiagonal |e_k|, so
// tridiag_ql's real QL applies unchanged. (3) V = Q D Z with Z real: Q D is stored planar in A (real parts
// in rows 0..N-1, imaginary parts in rows N..2N-1, N reals each), so the real rotations walk 2N
// contiguous rows. Each eigenvector is then multiplied by the unit phase making its largest-|.| component
// (the first of equal ones) real positive. The diagonal's imaginary parts are ignored (LAPACK's zheevd).
// A: the work copy (2 N^2 reals per matrix), V: Q^T (complex, want_v only), W: eigenvalues (real),
// VO: eigenvectors (complex). d, e, tau: local scratch of N reals; lv, lw, ec: 2N (N complex).
__kernel void htridiag_ql(int N, int lower, int want_v, __global T* A, __global T* V, __global T* W,
                          __global T* VO, __local T* d, __local T* e, __local T* tau, __local T* lv,
                          __local T* lw, __local T* ec) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * 2 * N * N;
  __global T* qt = V + (long)b * 2 * N * N;
  __local T red[WG];
  __local T sh_tau, sh_sr, sh_si;
  __local int sh_lo, sh_hi, sh_go;
  T mx = 0;
  for (int i = lid; i < N; i += WG) {{
    __global T* ri = a + 2 * i * N;
    for (int j = 0; j < N; ++j) {{
      if (lower ? (j > i) : (j < i)) {{ ri[2 * j] = a[2 * (j * N + i)]; ri[2 * j + 1] = -a[2 * (j * N + i) + 1]; }}
      if (j == i) ri[2 * j + 1] = 0;
      mx = fmax(mx, fmax(fabs(ri[2 * j]), fabs(ri[2 * j + 1])));
    }}
  }}
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int i = lid; i < N; i += WG) {{
    __global T* ri = a + 2 * i * N;
    for (int j = 0; j < 2 * N; ++j) ri[j] = ldexp(ri[j], -ex);
  }}
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // (1) tridiagonalization; x = column k below the diagonal = conj(row k past it), x_0 = alpha
  for (int k = 0; k < N - 2; ++k) {{
    __global T* rk = a + 2 * k * N;
    int m = N - k - 1;
    T ss = 0;
    for (int j = k + 2 + lid; j < N; j += WG) ss += rk[2 * j] * rk[2 * j] + rk[2 * j + 1] * rk[2 * j + 1];
    red[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) {{
      if (lid < s) red[lid] += red[lid + s];
      barrier(CLK_LOCAL_MEM_FENCE);
    }}
    if (lid == 0) {{
      T ar = rk[2 * (k + 1)], ai = -rk[2 * (k + 1) + 1], xn = sqrt(red[0]), t = 0, sr = 0, si = 0;
      T br = ar, bi = ai;
      if (xn != 0) {{
        T aa = hypot(ar, ai), nrm = hypot(aa, xn);
        T pr = aa != 0 ? ar / aa : 1, pi = aa != 0 ? ai / aa : 0;      // alpha's phase (1 at alpha = 0)
        br = -pr * nrm; bi = -pi * nrm;                                // H x = beta e_0, |beta| = ||x||
        t = (aa + nrm) / nrm;                                          // 2 / (v^H v), in [1, 2]
        T iu = 1 / (aa + nrm);
        sr = pr * iu; si = -pi * iu;                                   // 1 / u_0 = conj(phase) / (|alpha| + ||x||)
      }}
      d[k] = rk[2 * k]; ec[2 * k] = br; ec[2 * k + 1] = bi; tau[k] = t; sh_tau = t; sh_sr = sr; sh_si = si;
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    T t = sh_tau, sr = sh_sr, si = sh_si;
    for (int j = lid; j < m; j += WG) {{
      T xr = 1, xi = 0;
      if (j) {{
        T yr = rk[2 * (k + 1 + j)], yi = -rk[2 * (k + 1 + j) + 1];
        xr = yr * sr - yi * si; xi = yr * si + yi * sr;
        rk[2 * (k + 1 + j)] = xr; rk[2 * (k + 1 + j) + 1] = xi;     // v kept in row k (no later step reads it)
      }}
      lv[2 * j] = xr; lv[2 * j + 1] = xi;
    }}
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    // p = t A22 v (a work-item per row, two partial sums) and the partial sums of Re(v^H p)
    T pv = 0;
    for (int i = lid; i < m; i += WG) {{
      __global const T* ri = a + 2 * ((k + 1 + i) * N + k + 1);
      T s0r = 0, s0i = 0, s1r = 0, s1i = 0;
      int j = 0;
      for (; j + 1 < m; j += 2) {{
        T ur = ri[2 * j], ui = ri[2 * j + 1], vr = lv[2 * j], vi = lv[2 * j + 1];
        T ur1 = ri[2 * j + 2], ui1 = ri[2 * j + 3], vr1 = lv[2 * j + 2], vi1 = lv[2 * j + 3];
        s0r += ur * vr - ui * vi; s0i += ur * vi + ui * vr;
        s1r += ur1 * vr1 - ui1 * vi1; s1i += ur1 * vi1 + ui1 * vr1;
      }}
      if (j < m) {{
        T ur = ri[2 * j], ui = ri[2 * j + 1], vr = lv[2 * j], vi = lv[2 * j + 1];
        s0r += ur * vr - ui * vi; s0i += ur * vi + ui * vr;
      }}
      T pr = t * (s0r + s1r), pi = t * (s0i + s1i);
      lw[2 * i] = pr; lw[2 * i + 1] = pi;
      pv += lv[2 * i] * pr + lv[2 * i + 1] * pi;
    }}
    red[lid] = pv;
    barrier(CLK_LOCAL_MEM_FENCE);
    T al = 0;
    for (int s = 0; s < WG; ++s) al += red[s];
    al *= -t / 2;
    for (int i = lid; i < m; i += WG) {{ lw[2 * i] += al * lv[2 * i]; lw[2 * i + 1] += al * lv[2 * i + 1]; }}
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < m; i += WG) {{
      __global T* ri = a + 2 * ((k + 1 + i) * N + k + 1);
      T vr = lv[2 * i], vi = lv[2 * i + 1], wr = lw[2 * i], wi = lw[2 * i + 1];
      for (int j = 0; j < m; ++j) {{        // v_i conj(w_j) + w_i conj(v_j)
        T xr = lv[2 * j], xi = lv[2 * j + 1], yr = lw[2 * j], yi = lw[2 * j + 1];
        ri[2 * j] -= vr * yr + vi * yi + wr * xr + wi * xi;
        ri[2 * j + 1] -= vi * yr - vr * yi + wi * xr - wr * xi;
      }}
    }}
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }}
  // (2) the last 2 x 2 block, then D (delta in lv until Z is formed) and the real subdiagonal |e_k|
  if (lid == 0) {{
    if (N >= 2) {{
      d[N - 2] = a[2 * ((N - 2) * N + N - 2)];
      ec[2 * (N - 2)] = a[2 * ((N - 1) * N + N - 2)]; ec[2 * (N - 2) + 1] = a[2 * ((N - 1) * N + N - 2) + 1];
    }}
    d[N - 1] = a[2 * ((N - 1) * N + N - 1)]; e[N - 1] = 0;
    T cr = 1, ci = 0;
    lv[0] = 1; lv[1] = 0;
    for (int k = 0; k < N - 1; ++k) {{
      T er = ec[2 * k], ei = ec[2 * k + 1], r = hypot(er, ei);
      e[k] = r;
      if (r != 0) {{
        T ur = er / r, ui = ei / r, nr = cr * ur - ci * ui, ni = cr * ui + ci * ur, h = hypot(nr, ni);
        cr = nr / h; ci = ni / h;          // renormalized: |delta| = 1 does not drift over N products
      }}
      lv[2 * (k + 1)] = cr; lv[2 * (k + 1) + 1] = ci;
    }}
  }}
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // Qt (row c = Q e_c = H_0 ... H_(N-3) e_c; H_j leaves e_c alone when j >= c), complex
  if (want_v) for (int c = lid; c < N; c += WG) {{
    __global T* q = qt + 2 * (long)c * N;
    for (int i = 0; i < 2 * N; ++i) q[i] = (i == 2 * c) ? 1 : 0;
    for (int j = min(N - 3, c - 1); j >= 0; --j) {{
      T tj = tau[j];
      if (tj == 0) continue;
      __global const T* v = a + 2 * j * N;
      T sr = q[2 * (j + 1)], si = q[2 * (j + 1) + 1];
      for (int i = j + 2; i < N; ++i) {{      // v^H q
        T vr = v[2 * i], vi = v[2 * i + 1], xr = q[2 * i], xi = q[2 * i + 1];
        sr += vr * xr + vi * xi; si += vr * xi - vi * xr;
      }}
      sr *= tj; si *= tj;
      q[2 * (j + 1)] -= sr; q[2 * (j + 1) + 1] -= si;
      for (int i = j + 2; i < N; ++i) {{
        T vr = v[2 * i], vi = v[2 * i + 1];
        q[2 * i] -= vr * sr - vi * si; q[2 * i + 1] -= vr * si + vi * sr;
      }}
    }}
  }}
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  // Z = Q D planar into A (the reflectors are spent): Re row i at a + i N, Im row i at a + (N + i) N
  if (want_v) for (int i = lid; i < N; i += WG) {{
    __global T* zr = a + (long)i * N;
    __global T* zi = a + (long)(N + i) * N;
    for (int c = 0; c < N; ++c) {{
      T qr = qt[2 * ((long)c * N + i)], qi = qt[2 * ((long)c * N + i) + 1], dr = lv[2 * c], di = lv[2 * c + 1];
      zr[c] = qr * dr - qi * di; zi[c] = qr * di + qi * dr;
    }}
  }}
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
{_ql_sweeps("2 * N")}  // ascending order (ties by index) and the phase convention
  T scale = ldexp((T)1, ex);
  for (int i = lid; i < N; i += WG) {{
    int rank = eig_store(W, b, N, d, i, scale);
    if (want_v) {{
      __global const T* zr = a + i;                    // column i of Z: Re at zr[j N], Im at zi[j N]
      __global const T* zi = a + (long)N * N + i;
      T big = -1, pr = 1, pi = 0;
      int jb = 0;
      for (int j = 0; j < N; ++j) {{
        T xr = zr[(long)j * N], xi = zi[(long)j * N], m2 = xr * xr + xi * xi;
        if (m2 > big) {{ big = m2; pr = xr; pi = xi; jb = j; }}
      }}
      T mg = hypot(pr, pi);
      if (mg > 0) {{ pr /= mg; pi = -pi / mg; }} else {{ pr = 1; pi = 0; }}     // conj(z_big) / |z_big|
      __global T* vo = VO + 2 * ((long)b * N * N + rank);
      for (int j = 0; j < N; ++j) {{
        T xr = zr[(long)j * N], xi = zi[(long)j * N];
        vo[2 * (long)j * N] = xr * pr - xi * pi; vo[2 * (long)j * N + 1] = xr * pi + xi * pr;
      }}
      vo[2 * (long)jb * N] = mg; vo[2 * (long)jb * N + 1] = 0;       // exactly real positive
    }}
  }}
}}

// One-sided (Hestenes) Jacobi SVD, one work-group per matrix: the K rows of X (K x L, K <= L) are
// made mutually orthogonal by plane rotations X <- G^T X, accumulated in Y (K x K, from I), so that
// X_in = Y^T X_out. A round's pairs are disjoint rows: one work-item per pair, one barrier per round.
// A pair is rotated while |x_p . x_q| > sqrt(L) EPS ||x_p|| ||x_q|| (LAPACK dgesvj's test): at the end
// every pair is orthogonal to working precision relative to its own norms.
// X is first scaled by a power of 2 (exact) bringing its largest |entry| to [1, 2): the sums of
// squares neither overflow nor underflow (float32 entries of 1e25 or 1e-25); SC[b] undoes it.
// pre != 0: X and Y come preconditioned (svd_gram + eigh: X = V^T X_in 2^-e, Y = V^T) and SC[b]
// holds 2^e; the sweeps start from there.
__kernel void hestenes(int K, int Lw, int maxsweeps, int pre, __global T* X, __global T* Y, __global T* SC,
                       __global T* NRM) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* x = X + (long)b * K * Lw;
  __global T* y = Y + (long)b * K * K;
  __local int rot;
  __local T red[WG];
  T mx = 0;
  for (int e = lid; e < K * Lw; e += WG) mx = fmax(mx, fabs(x[e]));
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int e = lid; e < K * Lw; e += WG) x[e] = ldexp(x[e], -ex);
  if (lid == 0) SC[b] = ldexp(pre ? SC[b] : (T)1, ex);
  if (!pre) for (int e = lid; e < K * K; e += WG) y[e] = (e / K == e % K) ? 1 : 0;
  barrier(CLK_GLOBAL_MEM_FENCE);
  int n2 = K + (K & 1), np = n2 / 2;
  T tol = EPS * sqrt((T)Lw);        // dgesvj's sqrt(M) eps: EPS alone sits under the dot products'
                                    // rounding, and pairs kept rotating for 20-50 sweeps
  for (int sweep = 0; sweep < maxsweeps; ++sweep) {{
    if (lid == 0) rot = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < n2 - 1; ++r) {{
      for (int k = lid; k < np; k += WG) {{
        int p, q; rr_pair(r, k, n2, &p, &q);
        if (q < K) {{
          __global T* xp = x + (long)p * Lw; __global T* xq = x + (long)q * Lw;
          T al, be, ga;
          dot3(xp, xq, Lw, &al, &be, &ga);
          if (fabs(ga) > tol * sqrt(al) * sqrt(be) && fabs(ga) > TINY) {{
            T zeta = (be - al) / (2 * ga);
            T t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + hypot((T)1, zeta));
            T c = 1 / hypot((T)1, t), sn = t * c;
            for (int j = 0; j < Lw; ++j) {{ T u = xp[j], w = xq[j]; xp[j] = c * u - sn * w; xq[j] = sn * u + c * w; }}
            __global T* yp = y + (long)p * K; __global T* yq = y + (long)q * K;
            for (int j = 0; j < K; ++j) {{ T u = yp[j], w = yq[j]; yp[j] = c * u - sn * w; yq[j] = sn * u + c * w; }}
            rot = 1;
          }}
        }}
      }}
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }}
    int any = rot;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!any) break;
  }}
  for (int i = lid; i < K; i += WG) NRM[(long)b * K + i] = sqrt(dot4(x + (long)i * Lw, x + (long)i * Lw, Lw));
}}

// The preconditioner of the one-sided Jacobi SVD: X (K x Lw) scaled in place by a power of 2
// bringing its largest |entry| to [1, 2) (SC[b] = the factor undone), then G = X X^T (K x K), whose
// eigenvectors V make V^T X's rows nearly orthogonal: Jacobi then needs 2-4 sweeps, not 8-10.
__kernel void svd_gram(int K, int Lw, __global T* X, __global T* G, __global T* SC) {{
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* x = X + (long)b * K * Lw;
  __global T* g = G + (long)b * K * K;
  __local T red[WG];
  T mx = 0;
  for (int e = lid; e < K * Lw; e += WG) mx = fmax(mx, fabs(x[e]));
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int e = lid; e < K * Lw; e += WG) x[e] = ldexp(x[e], -ex);
  if (lid == 0) SC[b] = ldexp((T)1, ex);
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int i = lid; i < K; i += WG)
    for (int j = 0; j <= i; ++j) {{
      T v = dot4(x + (long)i * Lw, x + (long)j * Lw, Lw);
      g[i * K + j] = v; g[j * K + i] = v;
    }}
}}

// Singular values (NRM: ||x_i||, sorted descending, ties by index) and the vectors, one work-item
// per (matrix, i). X's normalized rows go to Z (element j of vector r at r * zr + j * zj, matrix
// stride zb), Y's rows to Q likewise (qr, qj; K x K). A zero row leaves a zero vector:
// svd_complete fills it in.
__kernel void svd_out(int K, int Lw, int nb, int want_vecs, __global const T* X, __global const T* Y,
                      __global const T* SC, __global const T* NRM, __global T* S, __global T* Z, long zb, int zr,
                      int zj, __global T* Q, int qr, int qj) {{
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  long b = g / K; int i = g % K;
  __global const T* x = X + b * K * Lw;
  __global const T* nrm = NRM + b * K;
  T si = nrm[i];
  int rank = 0;
  for (int m = 0; m < K; ++m) rank += (nrm[m] > si || (nrm[m] == si && m < i));
  S[b * K + rank] = si * SC[b];
  if (!want_vecs) return;
  T inv = si > TINY ? 1 / si : 0;
  __global T* z = Z + b * zb + (long)rank * zr;
  for (int j = 0; j < Lw; ++j) z[(long)j * zj] = x[(long)i * Lw + j] * inv;
  __global T* q = Q + b * K * K + (long)rank * qr;
  for (int j = 0; j < K; ++j) q[(long)j * qj] = Y[b * K * K + (long)i * K + j];
}}

// The sign convention: each pair (u_i, v_i), i < K, is flipped so that u_i's largest-magnitude
// component (the first of equal ones) is positive. U: M x UC, Vh: VR x N per matrix.
__kernel void svd_flip(int M, int UC, int VR, int N, int K, int nb, __global T* U, __global T* Vh) {{
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  long b = g / K; int i = g % K;
  __global T* u = U + b * M * UC + i;
  T big = 0, sg = 1;
  for (int j = 0; j < M; ++j) {{ T e = u[(long)j * UC]; if (fabs(e) > big) {{ big = fabs(e); sg = e < 0 ? -1 : 1; }} }}
  if (sg > 0) return;
  for (int j = 0; j < M; ++j) u[(long)j * UC] = -u[(long)j * UC];
  __global T* v = Vh + (b * VR + i) * N;
  for (int j = 0; j < N; ++j) v[j] = -v[j];
}}

// Orthonormal vectors for Z's vectors r >= nvalid and those of a zero singular value (sorted last):
// Gram-Schmidt (twice) of unit vectors e_c against the vectors before r; the first e_c keeping
// a component > 1/sqrt(2 Lw) is taken (one exists: the components sum to Lw - r >= 1 in square).
__kernel void svd_complete(int nvec, int nvalid, int Lw, int nb, __global const T* S, __global T* Z,
                           long zb, int zr, int zj) {{
  int b = get_global_id(0); if (b >= nb) return;
  __global T* z = Z + (long)b * zb;
  int cur = 0;
  for (int r = 0; r < nvec; ++r) {{
    if (r < nvalid && S[(long)b * nvalid + r] > TINY) continue;
    __global T* zv = z + (long)r * zr;
    for (int tries = 0; tries < Lw; ++tries, cur = (cur + 1) % Lw) {{
      for (int j = 0; j < Lw; ++j) zv[(long)j * zj] = (j == cur) ? 1 : 0;
      for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < r; ++i) {{
          __global T* zi = z + (long)i * zr;
          T d = 0;
          for (int j = 0; j < Lw; ++j) d += zi[(long)j * zj] * zv[(long)j * zj];
          for (int j = 0; j < Lw; ++j) zv[(long)j * zj] -= d * zi[(long)j * zj];
        }}
      T nn = 0;
      for (int j = 0; j < Lw; ++j) nn += zv[(long)j * zj] * zv[(long)j * zj];
      if (nn * 2 * Lw > 1) {{
        T inv = 1 / sqrt(nn);
        for (int j = 0; j < Lw; ++j) zv[(long)j * zj] *= inv;
        cur = (cur + 1) % Lw;
        break;
      }}
    }}
  }}
}}

// P = V diag(g) U^T (pinv): g_r = 1 / d_r where |d_r| > rcond * max|d|, else 0 (numpy's cutoff).
// svd: U (M x k), D = S, V^T = Vh (k x N); herm: U = V (N x N), D = eigenvalues, V^T from U.
__kernel void pinv_form(int M, int N, int k, int herm, T rcond, long total, __global const T* U,
                        __global const T* D, __global const T* Vh, __global T* P) {{
  long g = get_global_id(0); if (g >= total) return;
  int i = g % M; long rr = g / M; int j = rr % N; long b = rr / N;
  __global const T* d = D + b * k;
  __global const T* u = U + b * M * k;
  T mx = 0;
  for (int r = 0; r < k; ++r) mx = fmax(mx, fabs(d[r]));
  T cut = rcond * mx, acc = 0;
  for (int r = 0; r < k; ++r) {{
    T dr = d[r];
    if (fabs(dr) > cut) {{
      T vt = herm ? u[(long)j * k + r] : Vh[(b * k + r) * N + j];
      acc += vt * u[(long)i * k + r] / dr;
    }}
  }}
  P[g] = acc;
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


def _trsm(dc, a, rhs, nb, *, lower, trans, unit, name, a_shape):
    """X (nb, N, K) contiguous solving op(a) X = rhs; ``a`` contiguous per matrix (batch stride may
    be 0); ``rhs`` (nb, N, K), any strides. Without a transpose the kernel runs on X^T (contiguous rows)."""
    from burn_wgpu import kernels as wk
    N, K = rhs.shape[-2], rhs.shape[-1]
    sa = a.strides[0] if len(a.shape) > 2 else 0
    xt = not trans
    x = _copy(wk.permute(rhs, axes=(0, 2, 1))) if xt else _copy(rhs)
    rs, cs = (1, N) if xt else (K, 1)
    info = _zeros_i32(dc, nb)
    dc.launch(_k(dc, a.dtype, "trsm"), nb * K,
              (_i32(N), _i32(K), _i32(nb), _i32(lower), _i32(trans), _i32(unit), a.buf, _i32(a.offset),
               np.int64(sa), x.buf, info.buf, _i32(rs), _i32(cs)))
    if not unit:
        _raise_if(name, info, a_shape, a.dtype, nb)
    return _copy(wk.permute(x, axes=(0, 2, 1))) if xt else x


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
    x = _trsm(a.dc, af, _flat_batch(b, batch), nb, lower=int(bool(lower)), trans=int(trans in (1, 2, "T", "C")),
              unit=int(bool(unit_diagonal)), name="solve_triangular", a_shape=a.shape)
    return wk.reshape(x, shape=batch + b.shape[-2:])


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
    _launch_groups(dc, _k(dc, a.dtype, "lu"), nb, (_i32(N), _i32(N), lu_.buf, piv.buf, info.buf))
    if name:
        _raise_if(name, info, a.shape, a.dtype, nb)
    return lu_, piv, nb


def lu_factor(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["lu_factor"](a)
    from burn_wgpu import kernels as wk
    lu_, piv, _ = _lu(a, None)     # scipy warns (does not raise) on a singular matrix: so do we not raise
    return wk.reshape(lu_, shape=a.shape), wk.reshape(piv, shape=a.shape[:-1])


def _lus(dc, lu_, piv, rhs, nb, eye, trans=0):
    """X (nb, N, K) contiguous = A^-1 rhs (A^-T rhs with trans) from ``lu_`` (nb, N, N) and ``piv``
    (nb, N) with per-matrix contiguous rows (batch stride may be 0); ``rhs``: (nb, N, K), any
    strides, or None for the identity (``eye``). The plain solve runs on X^T (contiguous rows)."""
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    N = lu_.shape[-1]
    K = N if rhs is None else rhs.shape[-1]
    xt = not trans
    if rhs is None:
        x = empty(dc, (nb, K, N) if xt else (nb, N, K), lu_.dtype)
    else:
        x = _copy(wk.permute(rhs, axes=(0, 2, 1))) if xt else _copy(rhs)
    rs, cs = (1, N) if xt else (K, 1)
    dc.launch(_k(dc, lu_.dtype, "lus"), nb * K,
              (_i32(N), _i32(K), _i32(nb), _i32(eye), _i32(trans), lu_.buf, np.int64(lu_.offset),
               np.int64(lu_.strides[0]), piv.buf, np.int64(piv.offset), np.int64(piv.strides[0]), x.buf,
               _i32(rs), _i32(cs)))
    return _copy(wk.permute(x, axes=(0, 2, 1))) if xt else x


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
    x = _lus(lu_.dc, lf, pf, _flat_batch(b, batch), nb, 0, int(trans not in (0, "N")))
    return wk.reshape(x, shape=batch + b.shape[-2:])


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
    x = _lus(a.dc, lu_, piv, _flat_batch(b, batch), nb, 0)
    return wk.reshape(x, shape=batch + b.shape[-2:])


def inv(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["inv"](a)
    from burn_wgpu import kernels as wk
    lu_, piv, nb = _lu(a, "inv")
    return wk.reshape(_lus(a.dc, lu_, piv, None, nb, 1), shape=a.shape)


def det(a):
    if not _native_ok(a) or a.size == 0:
        return _fallback["det"](a)
    from burn_wgpu.tensor import empty
    lu_, piv, nb = _lu(a, None)     # a singular matrix has determinant 0: no error
    out = empty(a.dc, a.shape[:-2], a.dtype)
    a.dc.launch(_k(a.dc, a.dtype, "ludet"), nb, (_i32(a.shape[-1]), _i32(nb), lu_.buf, piv.buf, out.buf))
    return out


def qr(a, *, mode="reduced"):
    """Batched Householder QR on A^T, one work-group per matrix; Q formed by accumulating the reflectors."""
    if not _native_ok(a) or a.size == 0 or mode not in ("reduced", "complete", "r"):
        return _fallback["qr"](a, mode=mode)
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, (M, N) = a.dc, a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb, nd = _nb(batch), len(a.shape)
    f = _copy(wk.permute(a, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2)))       # (..., N, M)
    tau = empty(dc, (nb, K), a.dtype)
    _launch_groups(dc, _k(dc, a.dtype, "qrt"), nb, (_i32(M), _i32(N), f.buf, tau.buf))
    rm = M if mode == "complete" else K
    r = empty(dc, batch + (rm, N), a.dtype)
    dc.launch(_k(dc, a.dtype, "triu_rows_t"), r.size, (_i32(M), _i32(N), _i32(rm), np.int64(r.size), f.buf, r.buf))
    if mode == "r":
        return r
    qn = M if mode == "complete" else K
    qt = empty(dc, batch + (qn, M), a.dtype)
    dc.launch(_k(dc, a.dtype, "orgqt"), nb * qn,
              (_i32(M), _i32(N), _i32(K), _i32(qn), np.int64(nb), f.buf, tau.buf, qt.buf))
    return _copy(wk.permute(qt, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2))), r


# -- diagonal and lu ------------------------------------------------------------------------------

# diagonal copies elements bit for bit: one program per element size serves every dtype
_BITS = {1: "uchar", 2: "ushort", 4: "uint", 8: "ulong", 16: "ulong2"}


def _gather_src(E: str) -> str:
    return f"""
// out[b, j] = x[off + b * sb + (j + r0) * sr + (j + c0) * sc]
__kernel void diag(long total, int K, long sb, long sr, long sc, long off, __global const {E}* x,
                   __global {E}* out) {{
  long g = get_global_id(0); if (g >= total) return;
  long b = g / K, j = g % K;
  out[g] = x[off + b * sb + j * (sr + sc)];
}}
"""


def _batch_stride(x):
    """One stride walking ``x``'s batch dims in order, or None when they do not collapse."""
    dims = [(n, st) for n, st in zip(x.shape[:-2], x.strides[:-2]) if n != 1]
    for (_, s0), (n1, s1) in zip(dims, dims[1:]):
        if s0 != s1 * n1:
            return None
    return dims[-1][1] if dims else 0


def diagonal(x, *, offset=0):
    """A gather straight from ``x``'s strides (transposed and sliced views need no copy)."""
    from burn_wgpu.tensor import WTensor, empty
    if not isinstance(x, WTensor) or x.itemsize not in _BITS:
        return _fallback["diagonal"](x, offset=offset)
    m, n = x.shape[-2:]
    r0, c0 = max(0, -offset), max(0, offset)
    K = max(0, min(m - r0, n - c0))
    out = empty(x.dc, tuple(x.shape[:-2]) + (K,), x.dtype)
    if out.size == 0:
        return out
    sb = _batch_stride(x)
    if sb is None:
        from burn_wgpu import kernels as wk
        x = wk.contiguous(x)
        sb = m * n
    sr, sc = x.strides[-2:]
    x.dc.launch(x.dc.kernel(_gather_src(_BITS[x.itemsize]), "diag"), out.size,
                (np.int64(out.size), _i32(K), np.int64(sb), np.int64(sr), np.int64(sc),
                 np.int64(x.offset + r0 * sr + c0 * sc), x.buf, out.buf))
    return out


def lu(a, *, permute_l=False):
    """scipy.linalg.lu from the native (rectangular) getrf: the pivots become P on the device."""
    if not _native_ok(a) or a.size == 0:
        return _fallback["lu"](a, permute_l=permute_l)
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, (M, N) = a.dc, a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb = _nb(batch)
    f = wk.reshape(_copy(a), shape=(nb, M, N))
    piv = empty(dc, (nb, K), "int32")
    info = _zeros_i32(dc, nb)
    _launch_groups(dc, _k(dc, a.dtype, "lu"), nb, (_i32(M), _i32(N), f.buf, piv.buf, info.buf))
    perm = empty(dc, (nb, M), "int32")
    dc.launch(_k(dc, a.dtype, "lu_perm"), nb, (_i32(M), _i32(K), _i32(nb), piv.buf, perm.buf))
    lo = empty(dc, batch + (M, K), a.dtype)
    dc.launch(_k(dc, a.dtype, "lu_lower"), lo.size, (_i32(M), _i32(N), _i32(K), _i32(bool(permute_l)),
                                                      np.int64(lo.size), f.buf, perm.buf, lo.buf))
    up = empty(dc, batch + (K, N), a.dtype)
    dc.launch(_k(dc, a.dtype, "triu_rows"), up.size, (_i32(M), _i32(N), _i32(K), np.int64(up.size), f.buf, up.buf))
    if permute_l:
        return lo, up
    p = empty(dc, batch + (M, M), a.dtype)
    dc.launch(_k(dc, a.dtype, "perm_matrix"), p.size, (_i32(M), np.int64(p.size), perm.buf, p.buf))
    return p, lo, up


# -- eigh / eigvalsh ------------------------------------------------------------------------------

def _eigh(a, UPLO, want_v):
    from burn_wgpu.tensor import empty
    dc, N, batch = a.dc, a.shape[-1], tuple(a.shape[:-2])
    nb = _nb(batch)
    work = _copy(a)
    w = empty(dc, batch + (N,), a.dtype)
    if N >= _EIGH_TRIDIAG_MIN:
        import pyopencl as cl
        v = empty(dc, (nb, N, N) if want_v else (1,), a.dtype)
        vo = empty(dc, batch + (N, N), a.dtype) if want_v else v
        loc = [cl.LocalMemory(N * np.dtype(a.dtype).itemsize) for _ in range(5)]
        _launch_groups(dc, _k(dc, a.dtype, "tridiag_ql"), nb, (_i32(N), _i32(UPLO == "L"), _i32(want_v), work.buf,
                                                               v.buf, w.buf, vo.buf, *loc))
        return w, vo
    work2 = empty(dc, (nb, N, N), a.dtype)
    v = empty(dc, (nb, N, N) if want_v else (1,), a.dtype)
    vo = empty(dc, batch + (N, N), a.dtype) if want_v else v
    _launch_groups(dc, _k(dc, a.dtype, "jacobi_eigh"), nb, (_i32(N), _i32(UPLO == "L"), _i32(want_v), _i32(_SWEEPS),
                                                            work.buf, work2.buf, v.buf, w.buf, vo.buf))
    return w, vo


def _jacobi_ok(a):
    return _native_ok(a) and a.size and a.shape[-1] <= 2 * _MAXP


_CPART = {"complex64": "float32", "complex128": "float64"}


def _heigh_ok(a):
    from burn_wgpu.tensor import WTensor
    if not (isinstance(a, WTensor) and a.dtype in _CPART and a.size and a.shape[-1] <= 2 * _MAXP):
        return False
    # htridiag_ql's local scratch (9 N reals + the reduction's WG) must fit the device's local memory
    isz = np.dtype(_CPART[a.dtype]).itemsize
    return (9 * a.shape[-1] + _WG + 4) * isz <= a.dc.device.local_mem_size


def _heigh(a, UPLO, want_v):
    """Complex Hermitian eigh on the device (``htridiag_ql``): eigenvalues real (float32 / float64),
    eigenvectors complex, each one's largest-|.| component real positive."""
    import pyopencl as cl
    from burn_wgpu.tensor import empty
    dc, N, batch = a.dc, a.shape[-1], tuple(a.shape[:-2])
    nb, part = _nb(batch), _CPART[a.dtype]
    work = _copy(a)
    w = empty(dc, batch + (N,), part)
    v = empty(dc, (nb, N, N) if want_v else (1,), a.dtype)
    vo = empty(dc, batch + (N, N), a.dtype) if want_v else v
    isz = np.dtype(part).itemsize
    loc = [cl.LocalMemory(n * N * isz) for n in (1, 1, 1, 2, 2, 2)]
    _launch_groups(dc, _k(dc, part, "htridiag_ql"), nb, (_i32(N), _i32(UPLO == "L"), _i32(want_v), work.buf,
                                                         v.buf, w.buf, vo.buf, *loc))
    return w, vo


def eigh(a, *, UPLO="L"):
    """Batched Householder tridiagonalization + implicit QL (N >= 10) or cyclic Jacobi (smaller N);
    eigenvalues ascending, each eigenvector's largest |component| positive. Complex Hermitian
    input (any N <= 1024): ``htridiag_ql``, real eigenvalues, that component real positive.

    >>> import burn, burn_linalg
    >>> w, v = burn_linalg.eigh(burn.tensor([[2.0, 1.0], [1.0, 2.0]], device=burn.Device.wgpu()))
    >>> w.numpy().round(6).tolist()
    [1.0, 3.0]
    >>> h = burn.tensor([[2, 1j], [-1j, 2]], dtype=burn.complex64, device=burn.Device.wgpu())
    >>> burn_linalg.eigh(h)[0].numpy().round(6).tolist()
    [1.0, 3.0]
    """
    if _heigh_ok(a):
        return _heigh(a, UPLO, True)
    if not _jacobi_ok(a):
        return _fallback["eigh"](a, UPLO=UPLO)
    return _eigh(a, UPLO, True)


def eigvalsh(a, *, UPLO="L"):
    """eigh's eigenvalues (ascending) without the vectors: the QL sweeps skip the rotations' updates.

    >>> import burn, burn_linalg
    >>> burn_linalg.eigvalsh(burn.tensor([[2.0, 1.0], [1.0, 2.0]], device=burn.Device.wgpu())).numpy().round(6).tolist()
    [1.0, 3.0]
    """
    if _heigh_ok(a):
        return _heigh(a, UPLO, False)[0]
    if not _jacobi_ok(a):
        return _fallback["eigvalsh"](a, UPLO=UPLO)
    return _eigh(a, UPLO, False)[0]


# -- svd / svdvals / pinv / lstsq --------------------------------------------------------------------

def _hestenes(a, want_vecs):
    """One-sided Jacobi on the rows of X = A^T (M >= N) or X = A (M < N): S, or for M >= N only
    (U (M x N), S, Vh (N x N)) with zero singular values' U columns completed; signs as they come."""
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import empty
    dc, (M, N), batch = a.dc, a.shape[-2:], tuple(a.shape[:-2])
    nb, tall = _nb(batch), M >= N
    K, Lw = min(M, N), max(M, N)
    nd = len(a.shape)
    x = _copy(wk.permute(a, axes=tuple(range(nd - 2)) + (nd - 1, nd - 2)) if tall else a)
    sc, nrm = empty(dc, (nb,), a.dtype), empty(dc, (nb, K), a.dtype)
    pre = K >= _SVD_PRECOND_MIN
    if pre:
        # X = Y^T X' with Y = V^T, X' = V^T X: G = X X^T = V diag V^T (eigh); X' has nearly orthogonal rows
        x = wk.reshape(x, shape=(nb, K, Lw))
        g = empty(dc, (nb, K, K), a.dtype)
        _launch_groups(dc, _k(dc, a.dtype, "svd_gram"), nb, (_i32(K), _i32(Lw), x.buf, g.buf, sc.buf))
        vt = _copy(wk.permute(_eigh(g, "L", True)[1], axes=(0, 2, 1)))
        x, y = _copy(wk.matmul(vt, x)), vt
    else:
        y = empty(dc, (nb, K, K), a.dtype)
    _launch_groups(dc, _k(dc, a.dtype, "hestenes"), nb,
                   (_i32(K), _i32(Lw), _i32(_SWEEPS), _i32(pre), x.buf, y.buf, sc.buf, nrm.buf))
    s = empty(dc, batch + (K,), a.dtype)
    if not want_vecs:
        dc.launch(_k(dc, a.dtype, "svd_out"), nb * K, (_i32(K), _i32(Lw), _i32(nb), _i32(0), x.buf, y.buf, sc.buf,
                                                        nrm.buf, s.buf, s.buf, np.int64(0), _i32(0), _i32(0), s.buf,
                                                        _i32(0), _i32(0)))
        return s
    assert tall
    # A = Z S Y: X's normalized rows are U's columns, Y's rows are Vh's rows
    u, vh = empty(dc, batch + (M, K), a.dtype), empty(dc, batch + (K, K), a.dtype)
    dc.launch(_k(dc, a.dtype, "svd_out"), nb * K,
              (_i32(K), _i32(Lw), _i32(nb), _i32(1), x.buf, y.buf, sc.buf, nrm.buf, s.buf, u.buf,
               np.int64(M * K), _i32(1), _i32(K), vh.buf, _i32(K), _i32(1)))
    dc.launch(_k(dc, a.dtype, "svd_complete"), nb, (_i32(K), _i32(K), _i32(Lw), _i32(nb), s.buf, u.buf,
                                                     np.int64(M * K), _i32(1), _i32(K)))
    return u, s, vh


def _svd_tall(a, full_matrices):
    """M >= N. A square matrix goes straight to Jacobi; a tall one is first reduced by QR (A = Q R),
    so Jacobi works on N x N and U = Q U_R; full_matrices' extra columns are Q's (complete mode)."""
    from burn_wgpu import kernels as wk
    M, N = a.shape[-2:]
    if M == N:
        return _hestenes(a, True)
    nd, lead = len(a.shape), list(a.shape[:-2])
    q, r = qr(a, mode="complete" if full_matrices else "reduced")
    if full_matrices:
        r = wk.slice_(r, starts=[0] * nd, stops=lead + [N, N], steps=[1] * nd)
    ur, s, vh = _hestenes(r, True)
    q1 = wk.slice_(q, starts=[0] * nd, stops=lead + [M, N], steps=[1] * nd) if full_matrices else q
    u = wk.matmul(q1, ur)
    if full_matrices:
        rest = wk.slice_(q, starts=[0] * (nd - 1) + [N], stops=lead + [M, M], steps=[1] * nd)
        u = wk.concat(u, rest, axis=nd - 1)
    return u, s, vh


def _svd(a, full_matrices):
    """(U, S, Vh) with the sign convention; a wide A is the transpose of a tall one."""
    from burn_wgpu import kernels as wk
    M, N = a.shape[-2:]
    nd = len(a.shape)
    tr = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    if M >= N:
        u, s, vh = _svd_tall(a, full_matrices)
    else:
        u2, s, vh2 = _svd_tall(wk.permute(a, axes=tr), full_matrices)
        u, vh = _copy(wk.permute(vh2, axes=tr)), _copy(wk.permute(u2, axes=tr))
    K = min(M, N)
    a.dc.launch(_k(a.dc, a.dtype, "svd_flip"), _nb(a.shape[:-2]) * K,
                (_i32(M), _i32(u.shape[-1]), _i32(vh.shape[-2]), _i32(N), _i32(K), _i32(_nb(a.shape[:-2])),
                 u.buf, vh.buf))
    return u, s, vh


def _svd_ok(a):
    return _native_ok(a) and a.size


def svd(a, *, full_matrices=True):
    """Batched one-sided Jacobi (after a QR when tall; from min(M, N) >= 16 started from the
    eigenvectors of the Gram matrix); S descending; U's columns have their
    largest-magnitude component positive; zero singular values get orthonormal completions."""
    if not _svd_ok(a):
        return _fallback["svd"](a, full_matrices=full_matrices)
    return _svd(a, full_matrices)


def svdvals(a):
    if not _svd_ok(a):
        return _fallback["svdvals"](a)
    return _hestenes(a, False)


def _pinv(a, rcond, hermitian):
    from burn_wgpu.tensor import empty
    M, N = a.shape[-2:]
    if hermitian:
        d, u = _eigh(a, "L", True)         # numpy's hermitian pinv reads the lower triangle (eigh)
        vh, k = u, N
    else:
        u, d, vh = _svd(a, False)
        k = min(M, N)
    p = empty(a.dc, tuple(a.shape[:-2]) + (N, M), a.dtype)
    T = np.float64 if a.dtype == "float64" else np.float32
    a.dc.launch(_k(a.dc, a.dtype, "pinv_form"), p.size, (_i32(M), _i32(N), _i32(k), _i32(hermitian), T(rcond),
                                                         np.int64(p.size), u.buf, d.buf, vh.buf, p.buf))
    return p


def pinv(a, *, rcond, hermitian=False):
    if not (_svd_ok(a) and (not hermitian or a.shape[-1] == a.shape[-2])):
        return _fallback["pinv"](a, rcond=rcond, hermitian=hermitian)
    return _pinv(a, rcond, bool(hermitian))


def lstsq(a, b, *, rcond):
    """gelsd's minimum-norm solution: X = pinv(A) B, singular values <= rcond * max(S) dropped."""
    if not (_svd_ok(a) and _native_ok(b) and a.dtype == b.dtype and b.size):
        return _fallback["lstsq"](a, b, rcond=rcond)
    from burn_wgpu import kernels as wk
    if rcond < 0:       # LAPACK: a negative rcond means machine precision
        rcond = float(np.finfo(np.float64 if a.dtype == "float64" else np.float32).eps)
    return wk.matmul(_pinv(a, rcond, False), b)


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
          "lu_solve": lu_solve, "solve": solve, "inv": inv, "det": det, "slogdet": slogdet, "qr": qr,
          "diagonal": diagonal, "lu": lu, "eigh": eigh, "eigvalsh": eigvalsh,
          "svd": svd, "svdvals": svdvals, "pinv": pinv, "lstsq": lstsq}


def _fallback_kernel(name):
    def k(*xs, **kw):
        return _fallback[name](*xs, **kw)
    k.__name__ = f"wgpu_host_linalg_{name}"
    return k


KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, LAPACK, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
