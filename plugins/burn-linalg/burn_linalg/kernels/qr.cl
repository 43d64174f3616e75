// burn-linalg on wgpu, QR: Householder on A^T, Q formed from the reflectors, R extracted.
// Compiled after common.cl (T, WG, dot4).

// Householder QR of A (M x N) held transposed, At (N x M) row-major: A's columns are contiguous
// rows, so every loop below streams through memory inside one work-item (on PoCL this was 3x
// faster than work-items striding down columns). LAPACK's geqrf layout, transposed: R's column j
// on and before At[j, j], reflector j's vector after it (v_j = 1 implied), tau[j] per reflector.
// The reflectors are LAPACK's dlarfg (beta = -sign(alpha) ||(alpha, x)||, tau = 0 when x = 0),
// so Q and R carry numpy's signs.
__kernel void qrt(int M, int N, __global T* At, __global T* tau) {
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = At + (long)b * M * N;
  int K = min(M, N);
  __local T red[WG];
  __local T sh_tau, sh_scale;
  for (int j = 0; j < K; ++j) {
    __global T* col = a + (long)j * M;
    // the column's norm below the diagonal, scaled by its largest magnitude (no overflow in float32)
    T mx = 0;
    for (int i = j + 1 + lid; i < M; i += WG) mx = fmax(mx, fabs(col[i]));
    red[lid] = mx;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) { if (lid < s) red[lid] = fmax(red[lid], red[lid + s]); barrier(CLK_LOCAL_MEM_FENCE); }
    mx = red[0];
    barrier(CLK_LOCAL_MEM_FENCE);
    T ss = 0;
    if (mx > 0) for (int i = j + 1 + lid; i < M; i += WG) { T v = col[i] / mx; ss += v * v; }
    red[lid] = ss;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = WG / 2; s > 0; s >>= 1) { if (lid < s) red[lid] += red[lid + s]; barrier(CLK_LOCAL_MEM_FENCE); }
    if (lid == 0) {
      T xnorm = mx * sqrt(red[0]), alpha = col[j], t = 0, sc = 0;
      if (xnorm != 0) {
        T beta = hypot(alpha, xnorm);
        if (alpha >= 0) beta = -beta;
        t = (beta - alpha) / beta;
        sc = 1 / (alpha - beta);
        col[j] = beta;
      }
      sh_tau = t; sh_scale = sc; tau[(long)b * K + j] = t;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    T t = sh_tau, sc = sh_scale;
    if (t != 0) for (int i = j + 1 + lid; i < M; i += WG) col[i] *= sc;
    // barriers stay outside the t != 0 branches: with one inside (uniform as it is) PoCL
    // produced wrong results and crashed on matrices larger than the work-group
    barrier(CLK_GLOBAL_MEM_FENCE);
    // H = I - t v v^T applied to the trailing columns: one work-item per column
    if (t != 0) {
      for (int c = j + 1 + lid; c < N; c += WG) {
        __global T* x = a + (long)c * M;
        T s = (x[j] + dot4(col + j + 1, x + j + 1, M - j - 1)) * t;
        x[j] -= s;
        for (int i = j + 1; i < M; ++i) x[i] -= col[i] * s;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
}

// Q's first QN columns from the reflectors (LAPACK's orgqr), written transposed (Qt: QN x M):
// column c is H_0 ... H_(K-1) e_c. Columns are independent: one work-item each; H_j with j > c
// leaves e_c alone, so start at min(K-1, c).
__kernel void orgqt(int M, int N, int K, int QN, long nb, __global const T* At, __global const T* tau,
                    __global T* Qt) {
  long g = get_global_id(0); if (g >= nb * QN) return;
  long b = g / QN; int c = g % QN;
  __global const T* a = At + b * M * N;
  __global const T* tb = tau + b * K;
  __global T* q = Qt + g * M;
  for (int i = 0; i < M; ++i) q[i] = (i == c) ? 1 : 0;
  for (int j = min(K - 1, c); j >= 0; --j) {
    T t = tb[j];
    if (t == 0) continue;
    __global const T* v = a + (long)j * M;
    T s = (q[j] + dot4(v + j + 1, q + j + 1, M - j - 1)) * t;
    q[j] -= s;
    for (int i = j + 1; i < M; ++i) q[i] -= v[i] * s;
  }
}

// R (RM x N) from the transposed factors: R[i, c] = At[c, i] on and above the diagonal
__kernel void triu_rows_t(int M, int N, int RM, long total, __global const T* At, __global T* R) {
  long g = get_global_id(0); if (g >= total) return;
  int c = g % N; long r = g / N; int i = r % RM; long b = r / RM;
  R[g] = (c >= i && i < M) ? At[(b * N + c) * M + i] : 0;
}
