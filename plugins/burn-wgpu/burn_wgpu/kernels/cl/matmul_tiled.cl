// The tiled matmul real GPUs run: C[b] = A[b] @ B[b] for any strides, one work-group per
// TILE x TILE block of C, each work-item WPT x WPT values of it, TK-deep slices of A and B
// staged in local memory. Defines: T (the element type), TILE, TK, WPT.
// burn_wgpu.fused rewrites the store of C into an epilogue (EPI): keep its spelling.
__kernel __attribute__((reqd_work_group_size((TILE / WPT), (TILE / WPT), 1)))
void matmul(const int M, const int N, const int K,
            __global const T* A, const int offA, const int sam, const int sak, const int sab,
            __global const T* B, const int offB, const int sbk, const int sbn, const int sbb,
            __global T* C) {
  const int L = (TILE / WPT);
  int tx = get_local_id(0), ty = get_local_id(1);
  int bn = get_group_id(0) * TILE, bm = get_group_id(1) * TILE;
  int b = get_global_id(2);
  __local T As[TK][TILE];
  __local T Bs[TK][TILE];
  T acc[WPT][WPT];
  for (int i = 0; i < WPT; ++i) for (int j = 0; j < WPT; ++j) acc[i][j] = 0;
  A += offA + (long)b * sab;
  B += offB + (long)b * sbb;
  int t = ty * L + tx;
  for (int k0 = 0; k0 < K; k0 += TK) {
    for (int l = 0; l < (TILE * TK) / (L * L); ++l) {
      int e = t + l * L * L;
      int mm = e / TK, kk = e % TK;
      int gm = bm + mm, gk = k0 + kk;
      As[kk][mm] = (gm < M && gk < K) ? A[(long)gm * sam + (long)gk * sak] : (T)0;
      int kb = e / TILE, nn = e % TILE;
      int gn = bn + nn, gkb = k0 + kb;
      Bs[kb][nn] = (gn < N && gkb < K) ? B[(long)gkb * sbk + (long)gn * sbn] : (T)0;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int kk = 0; kk < TK; ++kk) {
      T a[WPT], c[WPT];
      for (int i = 0; i < WPT; ++i) a[i] = As[kk][ty + L * i];
      for (int j = 0; j < WPT; ++j) c[j] = Bs[kk][tx + L * j];
      for (int i = 0; i < WPT; ++i) for (int j = 0; j < WPT; ++j) acc[i][j] += a[i] * c[j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
  }
  for (int i = 0; i < WPT; ++i) for (int j = 0; j < WPT; ++j) {
    int gm = bm + ty + L * i, gn = bn + tx + L * j;
    if (gm < M && gn < N) C[((long)b * M + gm) * N + gn] = acc[i][j];
  }
}
