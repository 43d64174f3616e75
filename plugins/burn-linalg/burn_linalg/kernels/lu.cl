// burn-linalg on wgpu, the factorizations: Cholesky, triangular solve, LU (getrf) and what is built
// from its factors (P, L, U, solves, inverse, determinants). Compiled after common.cl (T, WG, dot4).

// A: batch of N x N matrices, contiguous, factorized in place (lower triangle read).
__kernel void chol(int N, __global T* A, __global int* info) {
  int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  __global T* a = A + (long)b * N * N;
  __local int bad;
  if (lid == 0) bad = 0;
  barrier(CLK_LOCAL_MEM_FENCE);
  for (int j = 0; j < N; ++j) {
    if (lid == 0) {
      T d = a[j * N + j] - dot4(a + j * N, a + j * N, j);
      if (!(d > 0)) { bad = 1; d = NAN; }
      a[j * N + j] = sqrt(d);
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    T djj = a[j * N + j];
    for (int i = j + 1 + lid; i < N; i += ls) {
      a[i * N + j] = (a[i * N + j] - dot4(a + i * N, a + j * N, j)) / djj;
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  for (int e = lid; e < N * N; e += ls) if (e % N > e / N) a[e] = 0;
  if (lid == 0) info[b] = bad;
}

// Solve op(A) X = B; A: (N, N) with batch stride sa and offset oa; B: X in place, (N, K) per
// matrix with element (i, c) at i * rs + c * cs. One work-item per right-hand-side column; with
// rs == 1 (B held transposed) and no transpose of A, rows of A and X stream through dot4.
__kernel void trsm(int N, int K, int nb, int lower, int trans, int unit,
                   __global const T* A, int oa, long sa, __global T* B, __global int* info, int rs, int cs) {
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  int b = g / K, c = g % K;
  __global const T* a = A + oa + b * sa;
  __global T* x = B + (long)b * N * K + (long)c * cs;
  int low = lower ^ trans;
  int bad = 0;
  for (int t = 0; t < N; ++t) {
    int i = low ? t : N - 1 - t;
    T s = x[(long)i * rs];
    if (rs == 1 && !trans) s -= low ? dot4(a + i * N, x, i) : dot4(a + i * N + i + 1, x + i + 1, N - i - 1);
    else if (low) { for (int k = 0; k < i; ++k) s -= (trans ? a[k * N + i] : a[i * N + k]) * x[(long)k * rs]; }
    else { for (int k = i + 1; k < N; ++k) s -= (trans ? a[k * N + i] : a[i * N + k]) * x[(long)k * rs]; }
    if (!unit) { T d = a[i * N + i]; if (d == 0) bad = 1; s /= d; }
    x[(long)i * rs] = s;
  }
  if (bad) info[b] = 1;
}

// LU with partial pivoting in place of an M x N matrix (LAPACK getrf layout, rectangular too);
// piv[k], k < min(M, N): the row swapped with row k (0-based). The first largest |pivot| wins, as idamax.
__kernel void lu(int M, int N, __global T* A, __global int* piv, __global int* info) {
  int b = get_group_id(0), lid = get_local_id(0), ls = get_local_size(0);
  int K = min(M, N);
  __global T* a = A + (long)b * M * N;
  __global int* pv = piv + (long)b * K;
  __local int p;
  __local int bad;
  if (lid == 0) bad = 0;
  for (int k = 0; k < K; ++k) {
    if (lid == 0) {
      int best = k; T bv = fabs(a[k * N + k]);
      for (int i = k + 1; i < M; ++i) { T v = fabs(a[i * N + k]); if (v > bv) { bv = v; best = i; } }
      p = best; pv[k] = best;
      if (bv == 0) bad = 1;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    int pk = p;
    if (pk != k) for (int j = lid; j < N; j += ls) { T t = a[k * N + j]; a[k * N + j] = a[pk * N + j]; a[pk * N + j] = t; }
    barrier(CLK_GLOBAL_MEM_FENCE);
    // a work-item per row below the pivot: its multiplier, then its row of the trailing update,
    // streaming (no per-element index division, which dominated on PoCL)
    T d = a[k * N + k];
    __global const T* pr = a + k * N;
    for (int i = k + 1 + lid; i < M; i += ls) {
      __global T* ri = a + i * N;
      T l = ri[k];
      if (d != 0) { l /= d; ri[k] = l; }
      for (int j = k + 1; j < N; ++j) ri[j] -= l * pr[j];
    }
    barrier(CLK_GLOBAL_MEM_FENCE);
  }
  if (lid == 0) info[b] = bad;
}

// The row permutation of getrf's interchanges: (L U)[i] = A[perm[i]]; one work-item per matrix.
__kernel void lu_perm(int M, int K, int nb, __global const int* piv, __global int* perm) {
  int b = get_global_id(0); if (b >= nb) return;
  __global int* pm = perm + (long)b * M;
  for (int i = 0; i < M; ++i) pm[i] = i;
  for (int k = 0; k < K; ++k) { int q = piv[(long)b * K + k]; int t = pm[k]; pm[k] = pm[q]; pm[q] = t; }
}

// P (M x M) with A = P L U: P[perm[i], i] = 1
__kernel void perm_matrix(int M, long total, __global const int* perm, __global T* P) {
  long g = get_global_id(0); if (g >= total) return;
  int c = g % M; long r = g / M; int i = r % M; long b = r / M;
  P[g] = (perm[b * M + c] == i) ? 1 : 0;
}

// L (M x K): unit lower trapezoid of the factors; scatter != 0 stores row i at row perm[i] (P @ L)
__kernel void lu_lower(int M, int N, int K, int scatter, long total, __global const T* F,
                       __global const int* perm, __global T* Lo) {
  long g = get_global_id(0); if (g >= total) return;
  int j = g % K; long r = g / K; int i = r % M; long b = r / M;
  T v = (i > j) ? F[(b * M + i) * N + j] : (i == j) ? 1 : 0;
  int row = scatter ? perm[b * M + i] : i;
  Lo[(b * M + row) * K + j] = v;
}

// X = A^-1 B (trans: A^-T B) from the LU factors (batch strides sl, sp; offsets ol, op);
// B: X in place, (N, K) per matrix with element (i, c) at i * rs + c * cs; eye: B starts as the
// identity. With rs == 1 (B held transposed) the plain solve streams through rows of LU and X.
__kernel void lus(int N, int K, int nb, int eye, int trans, __global const T* LU, long ol, long sl,
                  __global const int* piv, long op, long sp, __global T* B, int rs, int cs) {
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  int b = g / K, c = g % K;
  __global const T* a = LU + ol + b * sl;
  __global const int* pv = piv + op + b * sp;
  __global T* x = B + (long)b * N * K + (long)c * cs;
  if (eye) for (int i = 0; i < N; ++i) x[(long)i * rs] = (i == c) ? 1 : 0;
  if (!trans) {
    for (int k = 0; k < N; ++k) { int q = pv[k]; if (q != k) { T t = x[(long)k * rs]; x[(long)k * rs] = x[(long)q * rs]; x[(long)q * rs] = t; } }
    if (rs == 1) {
      for (int i = 1; i < N; ++i) x[i] -= dot4(a + i * N, x, i);
      for (int i = N - 1; i >= 0; --i) x[i] = (x[i] - dot4(a + i * N + i + 1, x + i + 1, N - i - 1)) / a[i * N + i];
    } else {
      for (int i = 0; i < N; ++i) { T s = x[(long)i * rs]; for (int k = 0; k < i; ++k) s -= a[i * N + k] * x[(long)k * rs]; x[(long)i * rs] = s; }
      for (int i = N - 1; i >= 0; --i) {
        T s = x[(long)i * rs]; for (int k = i + 1; k < N; ++k) s -= a[i * N + k] * x[(long)k * rs];
        x[(long)i * rs] = s / a[i * N + i];
      }
    }
  } else {
    // A = P L U: solve U^T, then L^T (unit), then undo the row interchanges in reverse order
    for (int i = 0; i < N; ++i) {
      T s = x[(long)i * rs]; for (int k = 0; k < i; ++k) s -= a[k * N + i] * x[(long)k * rs];
      x[(long)i * rs] = s / a[i * N + i];
    }
    for (int i = N - 1; i >= 0; --i) { T s = x[(long)i * rs]; for (int k = i + 1; k < N; ++k) s -= a[k * N + i] * x[(long)k * rs]; x[(long)i * rs] = s; }
    for (int k = N - 1; k >= 0; --k) { int q = pv[k]; if (q != k) { T t = x[(long)k * rs]; x[(long)k * rs] = x[(long)q * rs]; x[(long)q * rs] = t; } }
  }
}

// sign and log|det| from the LU factors (numpy's slogdet: sign 0 and -inf when singular)
__kernel void luslogdet(int N, int nb, __global const T* LU, __global const int* piv,
                        __global T* sgn, __global T* logabs) {
  int b = get_global_id(0); if (b >= nb) return;
  __global const T* a = LU + (long)b * N * N;
  T s = 1, l = 0;
  for (int k = 0; k < N; ++k) {
    T d = a[k * N + k];
    if (d < 0) s = -s;
    if (piv[(long)b * N + k] != k) s = -s;
    l += log(fabs(d));
  }
  for (int k = 0; k < N; ++k) if (a[k * N + k] == 0) { s = 0; l = -INFINITY; }
  sgn[b] = s; logabs[b] = l;
}

__kernel void diagzero(int N, int nb, __global const T* LU, long ol, long sl, __global int* info) {
  int b = get_global_id(0); if (b >= nb) return;
  __global const T* a = LU + ol + b * sl;
  for (int k = 0; k < N; ++k) if (a[k * N + k] == 0) info[b] = 1;
}

// R: the first RM rows of the factored A's upper triangle (rows past min(M, N) are zero)
__kernel void triu_rows(int M, int N, int RM, long total, __global const T* A, __global T* R) {
  long g = get_global_id(0); if (g >= total) return;
  int j = g % N; long r = g / N; int i = r % RM; long b = r / RM;
  R[g] = (j >= i) ? A[(b * M + i) * N + j] : 0;
}

__kernel void ludet(int N, int nb, __global const T* LU, __global const int* piv, __global T* out) {
  int b = get_global_id(0); if (b >= nb) return;
  __global const T* a = LU + (long)b * N * N;
  T d = 1;
  for (int k = 0; k < N; ++k) { d *= a[k * N + k]; if (piv[(long)b * N + k] != k) d = -d; }
  out[b] = d;
}
