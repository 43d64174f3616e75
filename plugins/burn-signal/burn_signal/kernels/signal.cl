// burn.signal's OpenCL program (one per dtype, after common.cl): the FFT's loads, stores and
// helper steps, Bluestein's chirp-z steps, the direct convolution, lfilter / sosfilt, the stft's
// framing and scale, istft's overlap-add and resample's bin weights. Lengths, batch and strides are
// run-time arguments, so the program compiles once per device and dtype.

// The work-item of element j of transform row b (nb rows of m) and its index d in the output
// (outer, m, inner), b = outer * inner + i. inner == 1: a 1-D launch over nb * m; else a 3-D launch
// (i, j, outer) in 16 x 16 tiles, so a work-group reads and writes whole cache lines both ways
// (the transposed write of a (segment, freq) -> (freq, segment) stft). False: past the end.
inline bool out_item(uint nb, int m, uint inner, uint* b, int* j, size_t* d) {
  if (inner > 1) {
    uint i = get_global_id(0), o = get_global_id(2); *j = get_global_id(1);
    if (i >= inner || *j >= m) return false;
    *b = o * inner + i; *d = ((size_t)o * m + *j) * inner + i;
  } else {
    uint g = get_global_id(0); if (g >= nb * m) return false;
    *b = g / m; *j = g - *b * m; *d = g;
  }
  return true;
}

// (nb, n) complex rows from any strided input (batch: up to 4 dims, d0 implied).
// mode 0: real input, 1: complex input (both cropped / zero-padded to n),
// mode 2: one-sided complex spectrum of m bins -> full Hermitian spectrum of length n (irfft),
// mode 3: real input packed in pairs (x[2j], x[2j+1]) into n complex values (rfft of length 2n).
// Index math of the FFT's loads and stores in 32 bits (tensors hold < 2^31 elements): 64-bit
// divisions are slow on CPUs, and merged batch dims of size 1 cost no division at all.
__kernel void load(int mode, int m, int n, uint total, __global const T* in, long off, long sj,
                   uint d1, uint d2, uint d3, long s0, long s1, long s2, long s3, __global C* out,
                   __global const C* tw) {
  uint g = get_global_id(0); if (g >= total) return;
  uint r = g / n; int j = g - r * n;
  long base = off + row_base(r, d1, d2, d3, s0, s1, s2, s3);
  C v = (C)(0, 0);
  if (mode == 0) { if (j < m) v.x = in[base + j * sj]; }
  else if (mode == 3) {
    if (2 * j < m) v.x = in[base + 2 * j * sj];
    if (2 * j + 1 < m) v.y = in[base + (2 * j + 1) * sj];
  }
  else if (mode == 1) { if (j < m) { long e = 2 * (base + j * sj); v = (C)(in[e], in[e + 1]); } }
  else if (mode == 4) {
    // irfft of even length 2n as one n-point inverse FFT: z = x[2t] + i x[2t+1] has the spectrum
    // Z_j = (X_j + X_(j+n)) + i W^-j (X_j - X_(j+n)), X_(j+n) = conj X_(n-j); X_0, X_n taken real (scipy)
    C xa = (C)(0, 0), xb = (C)(0, 0);
    if (j < m) { long e = 2 * (base + j * sj); xa = (C)(in[e], j == 0 ? 0 : in[e + 1]); }
    int k = n - j;
    if (k < m) { long e = 2 * (base + k * sj); xb = (C)(in[e], k == n ? 0 : -in[e + 1]); }
    C w = tw[j]; w.y = -w.y;             // W^-j = exp(i pi j / n) from the table of length 2n (sincos
    C d = cmul(w, xa - xb);               // per element costs ~5x a table read on a CPU device)
    v = xa + xb + (C)(-d.y, d.x);
  }
  else {
    int k = j <= n / 2 ? j : n - j;
    if (k < m) { long e = 2 * (base + k * sj); v = (C)(in[e], j <= n / 2 ? in[e + 1] : -in[e + 1]); }
  }
  out[g] = v;
}

// the twiddle table of length n: tw[j] = exp(-2 pi i j / n)
__kernel void twiddles(int n, __global C* tw) {
  int j = get_global_id(0); if (j >= n) return;
  tw[j] = cis(-2 * (long)j, n);
}

// rfft of even length n from the n/2-point FFT z of the packed pairs (x[2j], x[2j+1]):
// X_k = (Z_k + conj Z_(h-k)) / 2 - i/2 W^k (Z_k - conj Z_(h-k)), k = 0..m-1 (m <= h + 1)
__kernel void rpost(int n, int m, uint nb, uint inner, T scale, __global const C* z,
                    __global T* y, __global const C* tw) {
  uint b; int k; size_t g;
  if (!out_item(nb, m, inner, &b, &k, &g)) return;
  int h = n >> 1;
  size_t zb = (size_t)b * h;
  C zk = z[zb + (k == h ? 0 : k)], zc = z[zb + (k == 0 ? 0 : h - k)];
  zc.y = -zc.y;
  C e = (zk + zc) * (T)0.5, o = zk - zc;
  o = (C)(o.y, -o.x) * (T)0.5;        // -i/2 (zk - zc)
  C v = (e + cmul(tw[k], o)) * scale;
  y[2 * g] = v.x; y[2 * g + 1] = v.y;
}

// Bluestein's chirp w_k = exp(sign * i pi k^2 / n), k < n (a cached table)
__kernel void chirp_table(int n, int sign, __global C* w) {
  int k = get_global_id(0); if (k >= n) return;
  w[k] = cis(sign * (long)k * k, n);
}

// a = x * w zero-padded to m
__kernel void chirp_in(int n, int m, uint nb, __global const C* w, __global const C* x, __global C* a) {
  uint g = get_global_id(0); if (g >= nb * m) return;
  uint b = g / m; int k = g - b * m;
  C v = (C)(0, 0);
  if (k < n) v = cmul(x[(size_t)b * n + k], w[k]);
  a[g] = v;
}

// the chirp filter conj(w) laid out circularly over m
__kernel void chirp_filter(int n, int m, int sign, __global C* f) {
  int j = get_global_id(0); if (j >= m) return;
  int k = j < n ? j : (j > m - n ? m - j : -1);
  f[j] = k < 0 ? (C)(0, 0) : cis(-sign * (long)k * k, n);
}

__kernel void cmul_rows(uint m, uint nb, __global C* a, __global const C* f) {
  uint g = get_global_id(0); if (g >= nb * m) return;
  a[g] = cmul(a[g], f[g % m]);
}

// X_k = w_k * c_k * scale (scale includes the 1/m of the inverse transform)
__kernel void chirp_out(int n, int m, uint nb, T scale, __global const C* w, __global const C* c, __global C* y) {
  uint g = get_global_id(0); if (g >= nb * n) return;
  uint b = g / n; int k = g - b * n;
  y[g] = cmul(c[(size_t)b * m + k], w[k]) * scale;
}

// direct N-D convolution (up to 4 dims, leading dims of size 1): y[o] = sum_k a[o + st - k] b[k];
// st: where the output starts inside the full result (mode), b read through its (maybe negative) strides
__kernel void conv(long total, __global const T* a, long oa, __global const T* b, long ob, __global T* y,
                   int4 O, int4 A, int4 B, int4 S, long sa0, long sa1, long sa2, long sa3,
                   long sb0, long sb1, long sb2, long sb3) {
  long g = get_global_id(0); if (g >= total) return;
  long r = g;
  int o3 = r % O.w; r /= O.w; int o2 = r % O.z; r /= O.z; int o1 = r % O.y; int o0 = r / O.y;
  int f0 = o0 + S.x, f1 = o1 + S.y, f2 = o2 + S.z, f3 = o3 + S.w;
  T acc = 0;
  for (int k0 = max(0, f0 - A.x + 1); k0 <= min(B.x - 1, f0); ++k0)
  for (int k1 = max(0, f1 - A.y + 1); k1 <= min(B.y - 1, f1); ++k1)
  for (int k2 = max(0, f2 - A.z + 1); k2 <= min(B.z - 1, f2); ++k2) {
    long pa = oa + (f0 - k0) * sa0 + (f1 - k1) * sa1 + (f2 - k2) * sa2;
    long pb = ob + k0 * sb0 + k1 * sb1 + k2 * sb2;
    int lo = max(0, f3 - A.w + 1), hi = min(B.w - 1, f3);
    for (int k3 = lo; k3 <= hi; ++k3) acc += a[pa + (f3 - k3) * sa3] * b[pb + k3 * sb3];
  }
  y[g] = acc;
}

// the even-length irfft's output from z (nb, h): y[2t] = Re z_t, y[2t+1] = Im z_t, scaled, axis in place
__kernel void irpost(int h, uint nb, uint inner, T scale, __global const C* z, __global T* y) {
  uint b; int t; size_t g;
  if (!out_item(nb, h, inner, &b, &t, &g)) return;
  C v = z[(size_t)b * h + t] * scale;
  size_t d = (g - g % inner) * 2 + g % inner;     // (outer, 2 t, inner) of (outer, 2 h, inner)
  y[d] = v.x; y[d + inner] = v.y;
}

// the offset of row r over up to 4 merged batch dims (d0 implied), as the loads above compute it
inline long row_off(long r, int d1, int d2, int d3, long s0, long s1, long s2, long s3) {
  long i3 = r % d3; r /= d3; long i2 = r % d2; r /= d2; long i1 = r % d1; r /= d1;
  return r * s0 + i1 * s1 + i2 * s2 + i3 * s3;
}

// lfilter's coefficients as scipy uses them: b and a (strided) divided by a[0], zero-padded to K + 1
__kernel void lfcoef(int K, int nbc, int nac, __global const T* bc, long obc, long sbc,
                     __global const T* ac, long oac, long sac, __global T* out) {
  int i = get_global_id(0); if (i > K) return;
  T a0 = ac[oac];
  out[i] = i < nbc ? bc[obc + i * sbc] / a0 : 0;
  out[K + 1 + i] = i < nac ? ac[oac + i * sac] / a0 : 0;
}

// scipy.signal.lfilter's y: direct form II transposed (scipy's order of operations), one work-item
// per signal; co: b' then a' (K + 1 each); the state (K per row) lives in zs[i * nb + r] (coalesced)
__kernel void lfilt(int n, int K, long nb, __global const T* co, __global const T* x, long ox, long sx,
                    __global const T* zi, long oz, long sz, int has_zi, int d1, int d2, int d3,
                    long xs0, long xs1, long xs2, long xs3, long zs0, long zs1, long zs2, long zs3,
                    __global T* y, long inner, __global T* zs) {
  long r = get_global_id(0); if (r >= nb) return;
  long bx = ox + row_off(r, d1, d2, d3, xs0, xs1, xs2, xs3);
  long bz = oz + row_off(r, d1, d2, d3, zs0, zs1, zs2, zs3);
  __global T* z = zs + r;
  for (int i = 0; i < K; ++i) z[i * nb] = has_zi ? zi[bz + i * sz] : 0;
  __global const T* ca = co + K + 1;
  long yb = (r / inner) * n * inner + r % inner;
  T b0 = co[0];
  for (int t = 0; t < n; ++t) {
    T xv = x[bx + t * sx];
    T yv = K > 0 ? z[0] + b0 * xv : b0 * xv;
    for (int i = 0; i + 1 < K; ++i) z[i * nb] = z[(i + 1) * nb] + xv * co[i + 1] - yv * ca[i + 1];
    if (K > 0) z[(K - 1) * nb] = xv * co[K] - yv * ca[K];
    y[yb + t * inner] = yv;
  }
}

// sos rows normalized by their a0 (exact when a0 == 1, scipy's convention)
__kernel void sosnorm(int ns, __global const T* sos, long o, long s0, long s1, __global T* out) {
  int g = get_global_id(0); if (g >= ns * 6) return;
  int r = g / 6, c = g % 6;
  out[g] = sos[o + r * s0 + c * s1] / sos[o + r * s0 + 3 * s1];
}

// scipy.signal.sosfilt: cascaded biquads (scipy's order of operations), one work-item per signal;
// the state (2 per section) lives in zs[(2 s + i) * nb + r]; zf (ns, x's shape with 2 at the axis)
__kernel void sosf(int n, int ns, long nb, __global const T* so, __global const T* x, long ox, long sx,
                   __global const T* zi, long oz, long sz, long szs, int has_zi, int d1, int d2, int d3,
                   long xs0, long xs1, long xs2, long xs3, long zs0, long zs1, long zs2, long zs3,
                   __global T* y, long inner, __global T* zs, __global T* zf) {
  long r = get_global_id(0); if (r >= nb) return;
  long bx = ox + row_off(r, d1, d2, d3, xs0, xs1, xs2, xs3);
  long bz = oz + row_off(r, d1, d2, d3, zs0, zs1, zs2, zs3);
  __global T* z = zs + r;
  for (int s = 0; s < ns; ++s) for (int i = 0; i < 2; ++i)
    z[(2 * s + i) * nb] = has_zi ? zi[bz + s * szs + i * sz] : 0;
  long yb = (r / inner) * n * inner + r % inner;
  for (int t = 0; t < n; ++t) {
    T v = x[bx + t * sx];
    for (int s = 0; s < ns; ++s) {
      __global const T* c = so + 6 * s;
      T yv = c[0] * v + z[2 * s * nb];
      z[2 * s * nb] = c[1] * v - c[4] * yv + z[(2 * s + 1) * nb];
      z[(2 * s + 1) * nb] = c[2] * v - c[5] * yv;
      v = yv;
    }
    y[yb + t * inner] = v;
  }
  if (has_zi) {
    long fb = (r / inner) * 2 * inner + r % inner;
    for (int s = 0; s < ns; ++s) for (int i = 0; i < 2; ++i)
      zf[s * nb * 2 + fb + i * inner] = z[(2 * s + i) * nb];
  }
}

// the stft's scale: sum(win) ('spectrum') or sqrt(fs sum(win^2)) ('psd'), out = (1 / scale, scale);
// one work-item (a short sum)
__kernel void winscale(int np_, __global const T* w, long ow, long sw, int psd, T fs, __global T* out) {
  if (get_global_id(0) != 0) return;
  T s = 0;
  for (int j = 0; j < np_; ++j) { T v = w[ow + j * sw]; s += psd ? v * v : v; }
  T sc = psd ? sqrt(s * fs) : s;
  out[0] = 1 / sc; out[1] = sc;
}

// istft's overlap-add, one work-item per output sample: segments xs (nb, nfft, nseg) (real, or
// complex when cplx) scaled and windowed, summed where they overlap, divided by the summed squared
// window where that exceeds 1e-10 (scipy); p0 skips the boundary padding
__kernel void ola(int nper, int step, int nseg, int nfft, int p0, int m, long nb, int cplx,
                  __global const T* xs, __global const T* w, long ow, long sw, __global const T* sc,
                  __global T* y) {
  long g = get_global_id(0); if (g >= nb * m) return;
  long b = g / m; int p = g % m + p0;
  T scl = sc[1];
  C acc = (C)(0, 0);
  T nrm = 0;
  int s_lo = p >= nper ? (p - nper) / step + 1 : 0, s_hi = min(nseg - 1, p / step);
  for (int s = s_lo; s <= s_hi; ++s) {
    int t = p - s * step;
    T wt = w[ow + t * sw];
    long e = (b * nfft + t) * nseg + s;
    if (cplx) acc += (C)(xs[2 * e] * scl * wt, xs[2 * e + 1] * scl * wt);
    else acc.x += xs[e] * scl * wt;
    nrm += wt * wt;
  }
  if (nrm > (T)1e-10) acc /= nrm;
  if (cplx) { y[2 * g] = acc.x; y[2 * g + 1] = acc.y; } else y[g] = acc.x;
}

// stft segments as FFT rows, row = (signal, segment): windowed and scaled, zero past nper (up to nfft);
// pk: real samples packed in pairs for the half-length rfft (L = nfft / 2), else L = nfft values
// (cplx: complex input). Sample t of segment sg is x[sg * step + t - pl]: zeros outside the signal
// stand for the boundary and end padding.
__kernel void frames(int n, int nper, int step, int pl, int nseg, int L, int pk, int cplx, uint nrows,
                     __global const T* x, long ox, long sx, uint d1, uint d2, uint d3,
                     long s0, long s1, long s2, long s3, __global const T* w, long ow, long sw,
                     __global const T* isc, __global C* out) {
  // a 2-D launch (j, row): no division per element but the row's signal and segment
  int j = get_global_id(0); uint row = get_global_id(1);
  if (j >= L) return;
  uint b = row / nseg; int sg = row - b * nseg;
  long base = ox + row_base(b, d1, d2, d3, s0, s1, s2, s3);
  out[(size_t)row * L + j] = frame(j, n, nper, pk, cplx, (long)sg * step - pl, x, base, sx, w, ow, sw, isc[0]);
}

// resample's spectrum weights, in place on X (outer, mx, inner) complex: bins k < m2 times c,
// bin kh (when >= 0) times cf instead (scipy's unpaired Nyquist bin)
__kernel void binscale(int mx, int m2, long total, long inner, T c, int kh, T cf, __global T* X) {
  long g = get_global_id(0); if (g >= total) return;
  long o = g / (m2 * inner), r = g % (m2 * inner);
  int k = r / inner;
  long e = (o * mx + k) * inner + r % inner;
  T s = k == kh ? cf : c;
  X[2 * e] *= s; X[2 * e + 1] *= s;
}

// keep the first m of n values of each row, scaled, written with the transformed axis back in
// place (inner: elements after it); real_out: the real parts only
__kernel void store(int n, int m, uint nb, uint inner, T scale, int real_out, __global const C* x,
                    __global T* y) {
  uint b; int j; size_t d;
  if (!out_item(nb, m, inner, &b, &j, &d)) return;
  C v = x[(size_t)b * n + j] * scale;
  if (real_out) y[d] = v.x; else { y[2 * d] = v.x; y[2 * d + 1] = v.y; }
}
