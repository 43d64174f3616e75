// Shared by the burn-linalg OpenCL programs (burn_linalg/_wgpu): the element type and its
// constants, dot products and the helpers several kernels call. Defines set by the host:
//   FP64  1: T is double (cl_khr_fp64), 0: float
//   WG    the work-group size of the one-group-per-matrix kernels
//   MAXP  the Jacobi kernels keep a round's rotations in local memory: N <= 2 * MAXP
//   QLR   rows of Z per work-item in ql_sweeps' rotations (independent chains)
#if FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#define T double
#define EPS DBL_EPSILON
#define TINY DBL_MIN
#define SQRT_TINY 1.4916681462400413e-154
#else
#define T float
#define EPS FLT_EPSILON
#define TINY FLT_MIN
#define SQRT_TINY 1.0842022e-19f
#endif

// Dot products inside one work-item: OpenCL may not reassociate a sum, so a single accumulator is
// one long dependent chain of adds; four partial sums let the CPU overlap them (2-3x on PoCL).
// T NAME(__global const T* x, SPACE const T* y, int n): x . y. OpenCL 1.2 has no generic address
// space, so each space of y is its own function.
#define DEFINE_DOT4(NAME, SPACE)                                                                \
  T NAME(__global const T* x, SPACE const T* y, int n) {                                        \
    T s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                           \
    int i = 0;                                                                                  \
    for (; i + 3 < n; i += 4) {                                                                 \
      s0 += x[i] * y[i]; s1 += x[i + 1] * y[i + 1]; s2 += x[i + 2] * y[i + 2]; s3 += x[i + 3] * y[i + 3]; \
    }                                                                                           \
    for (; i < n; ++i) s0 += x[i] * y[i];                                                       \
    return (s0 + s1) + (s2 + s3);                                                               \
  }
DEFINE_DOT4(dot4, __global)
// y in local memory
DEFINE_DOT4(dot4l, __local)

// The work-group's reduction of v with OP (every item calls it, in uniform control flow; red holds
// WG values): a tree, so the order of the operations is fixed. The first barrier also fences global
// memory: callers scale what they just wrote.
#define DEFINE_GROUP_REDUCE(NAME, OP)                                                           \
  T NAME(T v, __local T* red) {                                                                 \
    int lid = get_local_id(0);                                                                  \
    red[lid] = v;                                                                               \
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);                                        \
    for (int s = WG / 2; s > 0; s >>= 1) {                                                      \
      if (lid < s) red[lid] = OP(red[lid], red[lid + s]);                                       \
      barrier(CLK_LOCAL_MEM_FENCE);                                                             \
    }                                                                                           \
    T r = red[0];                                                                               \
    barrier(CLK_LOCAL_MEM_FENCE);       /* everyone has read red[0] before red is reused */     \
    return r;                                                                                   \
  }
#define REDUCE_ADD(x, y) ((x) + (y))
DEFINE_GROUP_REDUCE(group_max, fmax)
DEFINE_GROUP_REDUCE(group_sum, REDUCE_ADD)

// Scales x[0 .. n) in place by the power of 2 (exact) bringing its largest |entry| to [1, 2), so
// sums of squares neither overflow nor underflow; returns the exponent e (x was x * 2^-e). Every
// work-item of the group calls it; no barrier after the scaling.
int group_scale_pow2(__global T* x, int n, __local T* red) {
  int lid = get_local_id(0);
  T mx = 0;
  for (int e = lid; e < n; e += WG) mx = fmax(mx, fabs(x[e]));
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int e = lid; e < n; e += WG) x[e] = ldexp(x[e], -ex);
  return ex;
}

// stores eigenvalue d[i] (times scale) of matrix b at its place in ascending order (ties by
// index), the tridiagonal kernels' output order as jacobi_eigh's, and returns that place
int eig_store(__global T* W, int b, int N, __local const T* d, int i, T scale) {
  T wi = d[i];
  int rank = 0;
  for (int j = 0; j < N; ++j) { T wj = d[j]; rank += (wj < wi || (wj == wi && j < i)); }
  W[(long)b * N + rank] = wi * scale;
  return rank;
}

// x.x, y.y and x.y in one pass, two partial sums each
void dot3(__global const T* x, __global const T* y, int n, T* xx, T* yy, T* xy) {
  T a0 = 0, a1 = 0, b0 = 0, b1 = 0, c0 = 0, c1 = 0;
  int i = 0;
  for (; i + 1 < n; i += 2) {
    T u0 = x[i], w0 = y[i], u1 = x[i + 1], w1 = y[i + 1];
    a0 += u0 * u0; b0 += w0 * w0; c0 += u0 * w0; a1 += u1 * u1; b1 += w1 * w1; c1 += u1 * w1;
  }
  if (i < n) { T u = x[i], w = y[i]; a0 += u * u; b0 += w * w; c0 += u * w; }
  *xx = a0 + a1; *yy = b0 + b1; *xy = c0 + c1;
}

// Round r (of n2 - 1) of the round-robin ("circle") ordering of n2 indices: pair k of n2 / 2.
// Every pair of indices meets exactly once per sweep and a round's pairs are disjoint.
void rr_pair(int r, int k, int n2, int* p, int* q) {
  int x, y;
  if (k == 0) { x = r; y = n2 - 1; }
  else { x = (r + k) % (n2 - 1); y = (r - k + n2 - 1) % (n2 - 1); }
  *p = min(x, y); *q = max(x, y);
}

// tridiag_ql's step (3), shared with htridiag_ql: implicit QL on the local (d, e) of length N, the
// rotations applied to the nrows rows (length N, contiguous, at a) of Z; Z <- Z G (real G). lv, lw:
// local scratch of N; sh: 3 local ints (the sweep's lo, hi, and whether there is one). Every
// work-item of the group calls it (it holds barriers).
void ql_sweeps(int N, int nrows, int want_v, __global T* a, __local T* d, __local T* e, __local T* lv,
               __local T* lw, __local int* sh) {
  int lid = get_local_id(0);
  // (3) implicit QL; work-item 0 keeps the state (l, iter) and computes one sweep's rotations
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
        sh[0] = split ? i + 1 : l; sh[1] = m - 1;
        go = 1;
      }
      sh[2] = go;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!sh[2]) break;
    if (want_v) {
      int lo = sh[0], hi = sh[1];
      // QLR rows per work-item at once: a row's walk is one chain of dependent multiply-adds
      // (x carries from plane to plane); independent chains overlap (3x on PoCL)
      for (int r = QLR * lid; r < nrows; r += QLR * WG) {
        if (r + QLR <= nrows) {
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
        } else for (int rr = r; rr < nrows; ++rr) {
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
}
