// burn-linalg on wgpu, symmetric / Hermitian eigenproblems: cyclic Jacobi (small N), Householder
// tridiagonalization + implicit QL (real and complex Hermitian). Compiled after common.cl (T, WG,
// MAXP, group_max, eig_store, rr_pair, dot4l, ql_sweeps).

// Cyclic two-sided Jacobi for symmetric A, one work-group per matrix (A: work copy, read from the
// UPLO triangle, and A2 its double buffer; V: rotations accumulated, transposed). Each round
// rotates N/2 disjoint pairs at once: C = J^T A J in one pass into the other buffer, a work-item
// per pair writing its two rows of C from the same two rows of A (A J's column j is
// cc[j] a_j + ss[j] a_pj[j]); the rotated 2 x 2 blocks get their closed-form diagonal and an
// exact zero. A pair is rotated while |a_pq| > EPS sqrt(|a_pp a_qq|) (the relative test of Demmel
// & Veselic: small eigenvalues keep their relative accuracy); the sweeps stop when a sweep
// rotated nothing.
__kernel void jacobi_eigh(int N, int lower, int want_v, int maxsweeps, __global T* A, __global T* A2,
                          __global T* V, __global T* W, __global T* VO) {
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * N * N;
  __global T* a2 = A2 + (long)b * N * N;
  __global T* v = V + (long)b * N * N;
  __local T lc[MAXP], lsn[MAXP], ldp[MAXP], ldq[MAXP], cc[2 * MAXP], ss[2 * MAXP];
  __local int lp[MAXP], lq[MAXP], pj[2 * MAXP];
  __local int rot, rflag[2];
  for (int e = lid; e < N * N; e += WG) {
    int i = e / N, j = e % N;
    if (lower ? (j > i) : (j < i)) a[e] = a[j * N + i];
    if (want_v) v[e] = (i == j) ? 1 : 0;
  }
  if (lid == 0) { rflag[0] = 0; rflag[1] = 0; }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  int n2 = N + (N & 1), np = n2 / 2, gr = 0;
  for (int sweep = 0; sweep < maxsweeps; ++sweep) {
    if (lid == 0) rot = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int r = 0; r < n2 - 1; ++r, ++gr) {
      for (int k = lid; k < np; k += WG) {
        int p, q; rr_pair(r, k, n2, &p, &q);
        T c = 1, sn = 0;
        if (q < N) {
          T apq = a[p * N + q], app = a[p * N + p], aqq = a[q * N + q];
          if (fabs(apq) > EPS * sqrt(fabs(app)) * sqrt(fabs(aqq)) && fabs(apq) > TINY) {
            T tau = (aqq - app) / (2 * apq);
            T t = (tau >= 0 ? 1 : -1) / (fabs(tau) + hypot((T)1, tau));
            c = 1 / hypot((T)1, t); sn = t * c;
            ldp[k] = app - t * apq; ldq[k] = aqq + t * apq;
            rot = 1; rflag[gr & 1] = 1;
          }
          pj[q] = p; cc[q] = c; ss[q] = sn;
        } else q = p;       // the odd index's partner is padding: a no-op pair
        pj[p] = q; cc[p] = c; ss[p] = -sn;
        lc[k] = c; lsn[k] = sn; lp[k] = p; lq[k] = q;
      }
      barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
      // (flags alternate by round: this round's is read here while the next one's is cleared)
      int busy = rflag[gr & 1];
      if (lid == 0) rflag[(gr + 1) & 1] = 0;
      if (busy) {
        for (int k = lid; k < np; k += WG) {
          int p = lp[k], q = lq[k];
          T c = lc[k], sn = lsn[k];
          __global const T* rp = a + p * N; __global const T* rq = a + q * N;
          __global T* op = a2 + p * N; __global T* oq = a2 + q * N;
          for (int j = 0; j < N; ++j) {
            int m = pj[j];
            T cj = cc[j], sj = ss[j];
            T x = cj * rp[j] + sj * rp[m], y = cj * rq[j] + sj * rq[m];
            op[j] = c * x - sn * y; oq[j] = sn * x + c * y;
          }
          if (sn != 0) {
            op[p] = ldp[k]; op[q] = 0; oq[p] = 0; oq[q] = ldq[k];
            if (want_v) {
              __global T* vp = v + p * N; __global T* vq = v + q * N;
              for (int j = 0; j < N; ++j) { T x = vp[j], y = vq[j]; vp[j] = c * x - sn * y; vq[j] = sn * x + c * y; }
            }
          }
        }
        __global T* t = a; a = a2; a2 = t;
      }
      barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
    }
    int any = rot;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!any) break;
  }
  // ascending order (ties by index, so stable); each eigenvector's largest-magnitude component
  // (the first of equal ones) is made positive
  for (int i = lid; i < N; i += WG) {
    T wi = a[i * N + i];
    int rank = 0;
    for (int j = 0; j < N; ++j) { T wj = a[j * N + j]; rank += (wj < wi || (wj == wi && j < i)); }
    W[(long)b * N + rank] = wi;
    if (want_v) {
      T big = 0, sg = 1;
      for (int j = 0; j < N; ++j) { T x = v[i * N + j]; if (fabs(x) > big) { big = fabs(x); sg = x < 0 ? -1 : 1; } }
      for (int j = 0; j < N; ++j) VO[((long)b * N + j) * N + rank] = sg * v[i * N + j];
    }
  }
}

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
                         __local T* lw) {
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * N * N;
  __global T* qt = V + (long)b * N * N;
  __local T red[WG];
  __local T sh_tau, sh_sc;
  __local int sh[3];                 // ql_sweeps' state
  T mx = 0;
  for (int i = lid; i < N; i += WG) {
    __global T* ri = a + i * N;
    for (int j = 0; j < N; ++j) {
      if (lower ? (j > i) : (j < i)) ri[j] = a[j * N + i];
      mx = fmax(mx, fabs(ri[j]));
    }
  }
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int i = lid; i < N; i += WG) {
    __global T* ri = a + i * N;
    for (int j = 0; j < N; ++j) ri[j] = ldexp(ri[j], -ex);
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // (1) tridiagonalization; the barriers stay outside data-dependent branches (see qrt)
  for (int k = 0; k < N - 2; ++k) {
    __global T* rk = a + k * N;
    int m = N - k - 1;
    T ss = 0;
    for (int j = k + 2 + lid; j < N; j += WG) ss += rk[j] * rk[j];
    ss = group_sum(ss, red);
    if (lid == 0) {
      T xn = sqrt(ss), alpha = rk[k + 1], t = 0, sc = 0, beta = alpha;
      if (xn != 0) {
        beta = hypot(alpha, xn);
        if (alpha >= 0) beta = -beta;
        t = (beta - alpha) / beta;
        sc = 1 / (alpha - beta);
      }
      d[k] = rk[k]; e[k] = beta; tau[k] = t; sh_tau = t; sh_sc = sc;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T t = sh_tau, sc = sh_sc;
    for (int j = lid; j < m; j += WG) {
      T x = j ? rk[k + 1 + j] * sc : 1;
      lv[j] = x;
      if (j) rk[k + 1 + j] = x;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    // p = t A22 v (a work-item per row) and the partial sums of p . v
    T pv = 0;
    for (int i = lid; i < m; i += WG) {
      T p = t * dot4l(a + (k + 1 + i) * N + k + 1, lv, m);
      lw[i] = p; pv += p * lv[i];
    }
    red[lid] = pv;
    barrier(CLK_LOCAL_MEM_FENCE);
    T al = 0;
    for (int s = 0; s < WG; ++s) al += red[s];
    al *= -t / 2;
    for (int i = lid; i < m; i += WG) lw[i] += al * lv[i];       // w = p - (t / 2)(p . v) v
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < m; i += WG) {
      __global T* ri = a + (k + 1 + i) * N + k + 1;
      T vi = lv[i], wi = lw[i];
      for (int j = 0; j < m; ++j) ri[j] -= vi * lw[j] + wi * lv[j];
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
  if (lid == 0) {
    if (N >= 2) { d[N - 2] = a[(N - 2) * N + N - 2]; e[N - 2] = a[(N - 1) * N + N - 2]; }
    d[N - 1] = a[(N - 1) * N + N - 1]; e[N - 1] = 0;
  }
  // (2) Qt (reflector j: v = (1, row j past j + 1), tau[j]); H_j leaves e_c alone when j >= c
  if (want_v) for (int c = lid; c < N; c += WG) {
    __global T* q = qt + (long)c * N;
    for (int i = 0; i < N; ++i) q[i] = (i == c) ? 1 : 0;
    for (int j = min(N - 3, c - 1); j >= 0; --j) {
      T tj = tau[j];
      if (tj == 0) continue;
      __global const T* v = a + j * N;
      T s = (q[j + 1] + dot4(v + j + 2, q + j + 2, N - j - 2)) * tj;
      q[j + 1] -= s;
      for (int i = j + 2; i < N; ++i) q[i] -= v[i] * s;
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  // Z = Q row-major into A (the reflectors are spent): a rotation of Z's columns (i, i + 1) then
  // walks each row contiguously (on Qt's rows it strode down columns: 2x slower on PoCL)
  if (want_v) for (int i = lid; i < N; i += WG) {
    __global T* zi = a + i * N;
    for (int j = 0; j < N; ++j) zi[j] = qt[(long)j * N + i];
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  ql_sweeps(N, N, want_v, a, d, e, lv, lw, sh);
  // ascending order (ties by index) and the sign convention, as jacobi_eigh
  T scale = ldexp((T)1, ex);
  for (int i = lid; i < N; i += WG) {
    int rank = eig_store(W, b, N, d, i, scale);
    if (want_v) {
      __global const T* z = a + i;        // column i of Z
      T big = 0, sg = 1;
      for (int j = 0; j < N; ++j) { T x = z[j * N]; if (fabs(x) > big) { big = fabs(x); sg = x < 0 ? -1 : 1; } }
      for (int j = 0; j < N; ++j) VO[((long)b * N + j) * N + rank] = sg * z[j * N];
    }
  }
}

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
                          __local T* lw, __local T* ec) {
  int b = get_group_id(0), lid = get_local_id(0);
  __global T* a = A + (long)b * 2 * N * N;
  __global T* qt = V + (long)b * 2 * N * N;
  __local T red[WG];
  __local T sh_tau, sh_sr, sh_si;
  __local int sh[3];                 // ql_sweeps' state
  T mx = 0;
  for (int i = lid; i < N; i += WG) {
    __global T* ri = a + 2 * i * N;
    for (int j = 0; j < N; ++j) {
      if (lower ? (j > i) : (j < i)) { ri[2 * j] = a[2 * (j * N + i)]; ri[2 * j + 1] = -a[2 * (j * N + i) + 1]; }
      if (j == i) ri[2 * j + 1] = 0;
      mx = fmax(mx, fmax(fabs(ri[2 * j]), fabs(ri[2 * j + 1])));
    }
  }
  mx = group_max(mx, red);
  int ex = (mx > 0 && isfinite(mx)) ? ilogb(mx) : 0;
  for (int i = lid; i < N; i += WG) {
    __global T* ri = a + 2 * i * N;
    for (int j = 0; j < 2 * N; ++j) ri[j] = ldexp(ri[j], -ex);
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // (1) tridiagonalization; x = column k below the diagonal = conj(row k past it), x_0 = alpha
  for (int k = 0; k < N - 2; ++k) {
    __global T* rk = a + 2 * k * N;
    int m = N - k - 1;
    T ss = 0;
    for (int j = k + 2 + lid; j < N; j += WG) ss += rk[2 * j] * rk[2 * j] + rk[2 * j + 1] * rk[2 * j + 1];
    ss = group_sum(ss, red);
    if (lid == 0) {
      T ar = rk[2 * (k + 1)], ai = -rk[2 * (k + 1) + 1], xn = sqrt(ss), t = 0, sr = 0, si = 0;
      T br = ar, bi = ai;
      if (xn != 0) {
        T aa = hypot(ar, ai), nrm = hypot(aa, xn);
        T pr = aa != 0 ? ar / aa : 1, pi = aa != 0 ? ai / aa : 0;      // alpha's phase (1 at alpha = 0)
        br = -pr * nrm; bi = -pi * nrm;                                // H x = beta e_0, |beta| = ||x||
        t = (aa + nrm) / nrm;                                          // 2 / (v^H v), in [1, 2]
        T iu = 1 / (aa + nrm);
        sr = pr * iu; si = -pi * iu;                                   // 1 / u_0 = conj(phase) / (|alpha| + ||x||)
      }
      d[k] = rk[2 * k]; ec[2 * k] = br; ec[2 * k + 1] = bi; tau[k] = t; sh_tau = t; sh_sr = sr; sh_si = si;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    T t = sh_tau, sr = sh_sr, si = sh_si;
    for (int j = lid; j < m; j += WG) {
      T xr = 1, xi = 0;
      if (j) {
        T yr = rk[2 * (k + 1 + j)], yi = -rk[2 * (k + 1 + j) + 1];
        xr = yr * sr - yi * si; xi = yr * si + yi * sr;
        rk[2 * (k + 1 + j)] = xr; rk[2 * (k + 1 + j) + 1] = xi;     // v kept in row k (no later step reads it)
      }
      lv[2 * j] = xr; lv[2 * j + 1] = xi;
    }
    barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
    // p = t A22 v (a work-item per row, two partial sums) and the partial sums of Re(v^H p)
    T pv = 0;
    for (int i = lid; i < m; i += WG) {
      __global const T* ri = a + 2 * ((k + 1 + i) * N + k + 1);
      T s0r = 0, s0i = 0, s1r = 0, s1i = 0;
      int j = 0;
      for (; j + 1 < m; j += 2) {
        T ur = ri[2 * j], ui = ri[2 * j + 1], vr = lv[2 * j], vi = lv[2 * j + 1];
        T ur1 = ri[2 * j + 2], ui1 = ri[2 * j + 3], vr1 = lv[2 * j + 2], vi1 = lv[2 * j + 3];
        s0r += ur * vr - ui * vi; s0i += ur * vi + ui * vr;
        s1r += ur1 * vr1 - ui1 * vi1; s1i += ur1 * vi1 + ui1 * vr1;
      }
      if (j < m) {
        T ur = ri[2 * j], ui = ri[2 * j + 1], vr = lv[2 * j], vi = lv[2 * j + 1];
        s0r += ur * vr - ui * vi; s0i += ur * vi + ui * vr;
      }
      T pr = t * (s0r + s1r), pi = t * (s0i + s1i);
      lw[2 * i] = pr; lw[2 * i + 1] = pi;
      pv += lv[2 * i] * pr + lv[2 * i + 1] * pi;
    }
    red[lid] = pv;
    barrier(CLK_LOCAL_MEM_FENCE);
    T al = 0;
    for (int s = 0; s < WG; ++s) al += red[s];
    al *= -t / 2;
    for (int i = lid; i < m; i += WG) { lw[2 * i] += al * lv[2 * i]; lw[2 * i + 1] += al * lv[2 * i + 1]; }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int i = lid; i < m; i += WG) {
      __global T* ri = a + 2 * ((k + 1 + i) * N + k + 1);
      T vr = lv[2 * i], vi = lv[2 * i + 1], wr = lw[2 * i], wi = lw[2 * i + 1];
      for (int j = 0; j < m; ++j) {        // v_i conj(w_j) + w_i conj(v_j)
        T xr = lv[2 * j], xi = lv[2 * j + 1], yr = lw[2 * j], yi = lw[2 * j + 1];
        ri[2 * j] -= vr * yr + vi * yi + wr * xr + wi * xi;
        ri[2 * j + 1] -= vi * yr - vr * yi + wi * xr - wr * xi;
      }
    }
    barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  }
  // (2) the last 2 x 2 block, then D (delta in lv until Z is formed) and the real subdiagonal |e_k|
  if (lid == 0) {
    if (N >= 2) {
      d[N - 2] = a[2 * ((N - 2) * N + N - 2)];
      ec[2 * (N - 2)] = a[2 * ((N - 1) * N + N - 2)]; ec[2 * (N - 2) + 1] = a[2 * ((N - 1) * N + N - 2) + 1];
    }
    d[N - 1] = a[2 * ((N - 1) * N + N - 1)]; e[N - 1] = 0;
    T cr = 1, ci = 0;
    lv[0] = 1; lv[1] = 0;
    for (int k = 0; k < N - 1; ++k) {
      T er = ec[2 * k], ei = ec[2 * k + 1], r = hypot(er, ei);
      e[k] = r;
      if (r != 0) {
        T ur = er / r, ui = ei / r, nr = cr * ur - ci * ui, ni = cr * ui + ci * ur, h = hypot(nr, ni);
        cr = nr / h; ci = ni / h;          // renormalized: |delta| = 1 does not drift over N products
      }
      lv[2 * (k + 1)] = cr; lv[2 * (k + 1) + 1] = ci;
    }
  }
  barrier(CLK_LOCAL_MEM_FENCE | CLK_GLOBAL_MEM_FENCE);
  // Qt (row c = Q e_c = H_0 ... H_(N-3) e_c; H_j leaves e_c alone when j >= c), complex
  if (want_v) for (int c = lid; c < N; c += WG) {
    __global T* q = qt + 2 * (long)c * N;
    for (int i = 0; i < 2 * N; ++i) q[i] = (i == 2 * c) ? 1 : 0;
    for (int j = min(N - 3, c - 1); j >= 0; --j) {
      T tj = tau[j];
      if (tj == 0) continue;
      __global const T* v = a + 2 * j * N;
      T sr = q[2 * (j + 1)], si = q[2 * (j + 1) + 1];
      for (int i = j + 2; i < N; ++i) {      // v^H q
        T vr = v[2 * i], vi = v[2 * i + 1], xr = q[2 * i], xi = q[2 * i + 1];
        sr += vr * xr + vi * xi; si += vr * xi - vi * xr;
      }
      sr *= tj; si *= tj;
      q[2 * (j + 1)] -= sr; q[2 * (j + 1) + 1] -= si;
      for (int i = j + 2; i < N; ++i) {
        T vr = v[2 * i], vi = v[2 * i + 1];
        q[2 * i] -= vr * sr - vi * si; q[2 * i + 1] -= vr * si + vi * sr;
      }
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  // Z = Q D planar into A (the reflectors are spent): Re row i at a + i N, Im row i at a + (N + i) N
  if (want_v) for (int i = lid; i < N; i += WG) {
    __global T* zr = a + (long)i * N;
    __global T* zi = a + (long)(N + i) * N;
    for (int c = 0; c < N; ++c) {
      T qr = qt[2 * ((long)c * N + i)], qi = qt[2 * ((long)c * N + i) + 1], dr = lv[2 * c], di = lv[2 * c + 1];
      zr[c] = qr * dr - qi * di; zi[c] = qr * di + qi * dr;
    }
  }
  barrier(CLK_GLOBAL_MEM_FENCE | CLK_LOCAL_MEM_FENCE);
  ql_sweeps(N, 2 * N, want_v, a, d, e, lv, lw, sh);
  // ascending order (ties by index) and the phase convention
  T scale = ldexp((T)1, ex);
  for (int i = lid; i < N; i += WG) {
    int rank = eig_store(W, b, N, d, i, scale);
    if (want_v) {
      __global const T* zr = a + i;                    // column i of Z: Re at zr[j N], Im at zi[j N]
      __global const T* zi = a + (long)N * N + i;
      T big = -1, pr = 1, pi = 0;
      int jb = 0;
      for (int j = 0; j < N; ++j) {
        T xr = zr[(long)j * N], xi = zi[(long)j * N], m2 = xr * xr + xi * xi;
        if (m2 > big) { big = m2; pr = xr; pi = xi; jb = j; }
      }
      T mg = hypot(pr, pi);
      if (mg > 0) { pr /= mg; pi = -pi / mg; } else { pr = 1; pi = 0; }     // conj(z_big) / |z_big|
      __global T* vo = VO + 2 * ((long)b * N * N + rank);
      for (int j = 0; j < N; ++j) {
        T xr = zr[(long)j * N], xi = zi[(long)j * N];
        vo[2 * (long)j * N] = xr * pr - xi * pi; vo[2 * (long)j * N + 1] = xr * pi + xi * pr;
      }
      vo[2 * (long)jb * N] = mg; vo[2 * (long)jb * N + 1] = 0;       // exactly real positive
    }
  }
}
