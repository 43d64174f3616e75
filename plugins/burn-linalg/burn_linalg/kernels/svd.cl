// burn-linalg on wgpu, the SVD: one-sided (Hestenes) Jacobi, its Gram-matrix preconditioner, the
// outputs (sorted values, vectors, sign convention, completed bases) and pinv. Compiled after
// common.cl (T, WG, dot3, dot4, group_max, rr_pair).

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
                       __global T* NRM) {
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* x = X + (long)b * K * Lw;
  __global T* y = Y + (long)b * K * K;
  __local int rot;
  __local T red[WG];
  int ex = group_scale_pow2(x, K * Lw, red);
  if (lid == 0) SC[b] = ldexp(pre ? SC[b] : (T)1, ex);
  if (!pre) for (int e = lid; e < K * K; e += WG) y[e] = (e / K == e % K) ? 1 : 0;
  barrier(CLK_GLOBAL_MEM_FENCE);
  int n2 = K + (K & 1), np = n2 / 2;
  T tol = EPS * sqrt((T)Lw);        // dgesvj's sqrt(M) eps: EPS alone sits under the dot products'
                                    // rounding, and pairs kept rotating for 20-50 sweeps
  for (int sweep = 0; sweep < maxsweeps; ++sweep) {
    if (lid == 0) rot = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < n2 - 1; ++r) {
      for (int k = lid; k < np; k += WG) {
        int p, q; rr_pair(r, k, n2, &p, &q);
        if (q < K) {
          __global T* xp = x + (long)p * Lw; __global T* xq = x + (long)q * Lw;
          T al, be, ga;
          dot3(xp, xq, Lw, &al, &be, &ga);
          if (fabs(ga) > tol * sqrt(al) * sqrt(be) && fabs(ga) > TINY) {
            T zeta = (be - al) / (2 * ga);
            T t = (zeta >= 0 ? 1 : -1) / (fabs(zeta) + hypot((T)1, zeta));
            T c = 1 / hypot((T)1, t), sn = t * c;
            for (int j = 0; j < Lw; ++j) { T u = xp[j], w = xq[j]; xp[j] = c * u - sn * w; xq[j] = sn * u + c * w; }
            __global T* yp = y + (long)p * K; __global T* yq = y + (long)q * K;
            for (int j = 0; j < K; ++j) { T u = yp[j], w = yq[j]; yp[j] = c * u - sn * w; yq[j] = sn * u + c * w; }
            rot = 1;
          }
        }
      }
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }
    int any = rot;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!any) break;
  }
  for (int i = lid; i < K; i += WG) NRM[(long)b * K + i] = sqrt(dot4(x + (long)i * Lw, x + (long)i * Lw, Lw));
}

// The preconditioner of the one-sided Jacobi SVD: X (K x Lw) scaled in place by a power of 2
// bringing its largest |entry| to [1, 2) (SC[b] = the factor undone), then G = X X^T (K x K), whose
// eigenvectors V make V^T X's rows nearly orthogonal: Jacobi then needs 2-4 sweeps, not 8-10.
__kernel void svd_gram(int K, int Lw, __global T* X, __global T* G, __global T* SC) {
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* x = X + (long)b * K * Lw;
  __global T* g = G + (long)b * K * K;
  __local T red[WG];
  int ex = group_scale_pow2(x, K * Lw, red);
  if (lid == 0) SC[b] = ldexp((T)1, ex);
  barrier(CLK_GLOBAL_MEM_FENCE);
  for (int i = lid; i < K; i += WG)
    for (int j = 0; j <= i; ++j) {
      T v = dot4(x + (long)i * Lw, x + (long)j * Lw, Lw);
      g[i * K + j] = v; g[j * K + i] = v;
    }
}

// Singular values (NRM: ||x_i||, sorted descending, ties by index) and the vectors, one work-item
// per (matrix, i). X's normalized rows go to Z (element j of vector r at r * zr + j * zj, matrix
// stride zb), Y's rows to Q likewise (qr, qj; K x K). A zero row leaves a zero vector:
// svd_complete fills it in.
__kernel void svd_out(int K, int Lw, int nb, int want_vecs, __global const T* X, __global const T* Y,
                      __global const T* SC, __global const T* NRM, __global T* S, __global T* Z, long zb, int zr,
                      int zj, __global T* Q, int qr, int qj) {
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
}

// The sign convention: each pair (u_i, v_i), i < K, is flipped so that u_i's largest-magnitude
// component (the first of equal ones) is positive. U: M x UC, Vh: VR x N per matrix.
__kernel void svd_flip(int M, int UC, int VR, int N, int K, int nb, __global T* U, __global T* Vh) {
  long g = get_global_id(0); if (g >= (long)nb * K) return;
  long b = g / K; int i = g % K;
  __global T* u = U + b * M * UC + i;
  T big = 0, sg = 1;
  for (int j = 0; j < M; ++j) { T e = u[(long)j * UC]; if (fabs(e) > big) { big = fabs(e); sg = e < 0 ? -1 : 1; } }
  if (sg > 0) return;
  for (int j = 0; j < M; ++j) u[(long)j * UC] = -u[(long)j * UC];
  __global T* v = Vh + (b * VR + i) * N;
  for (int j = 0; j < N; ++j) v[j] = -v[j];
}

// Orthonormal vectors for Z's vectors r >= nvalid and those of a zero singular value (sorted last):
// Gram-Schmidt (twice) of unit vectors e_c against the vectors before r; the first e_c keeping
// a component > 1/sqrt(2 Lw) is taken (one exists: the components sum to Lw - r >= 1 in square).
__kernel void svd_complete(int nvec, int nvalid, int Lw, int nb, __global const T* S, __global T* Z,
                           long zb, int zr, int zj) {
  int b = get_global_id(0); if (b >= nb) return;
  __global T* z = Z + (long)b * zb;
  int cur = 0;
  for (int r = 0; r < nvec; ++r) {
    if (r < nvalid && S[(long)b * nvalid + r] > TINY) continue;
    __global T* zv = z + (long)r * zr;
    for (int tries = 0; tries < Lw; ++tries, cur = (cur + 1) % Lw) {
      for (int j = 0; j < Lw; ++j) zv[(long)j * zj] = (j == cur) ? 1 : 0;
      for (int pass = 0; pass < 2; ++pass)
        for (int i = 0; i < r; ++i) {
          __global T* zi = z + (long)i * zr;
          T d = 0;
          for (int j = 0; j < Lw; ++j) d += zi[(long)j * zj] * zv[(long)j * zj];
          for (int j = 0; j < Lw; ++j) zv[(long)j * zj] -= d * zi[(long)j * zj];
        }
      T nn = 0;
      for (int j = 0; j < Lw; ++j) nn += zv[(long)j * zj] * zv[(long)j * zj];
      if (nn * 2 * Lw > 1) {
        T inv = 1 / sqrt(nn);
        for (int j = 0; j < Lw; ++j) zv[(long)j * zj] *= inv;
        cur = (cur + 1) % Lw;
        break;
      }
    }
  }
}

// P = V diag(g) U^T (pinv): g_r = 1 / d_r where |d_r| > rcond * max|d|, else 0 (numpy's cutoff).
// svd: U (M x k), D = S, V^T = Vh (k x N); herm: U = V (N x N), D = eigenvalues, V^T from U.
__kernel void pinv_form(int M, int N, int k, int herm, T rcond, long total, __global const T* U,
                        __global const T* D, __global const T* Vh, __global T* P) {
  long g = get_global_id(0); if (g >= total) return;
  int i = g % M; long rr = g / M; int j = rr % N; long b = rr / N;
  __global const T* d = D + b * k;
  __global const T* u = U + b * M * k;
  T mx = 0;
  for (int r = 0; r < k; ++r) mx = fmax(mx, fabs(d[r]));
  T cut = rcond * mx, acc = 0;
  for (int r = 0; r < k; ++r) {
    T dr = d[r];
    if (fabs(dr) > cut) {
      T vt = herm ? u[(long)j * k + r] : Vh[(b * k + r) * N + j];
      acc += vt * u[(long)i * k + r] / dr;
    }
  }
  P[g] = acc;
}
