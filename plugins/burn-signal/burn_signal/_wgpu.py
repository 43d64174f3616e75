"""wgpu kernels of burn.signal: an OpenCL FFT, convolutions, IIR filters, the STFT and resampling.

Native: ``fft``, ``ifft``, ``rfft``, ``irfft`` and their n-D forms
(``fftn``... as 1-D transforms along each axis), complex64 (complex128 where
the device has fp64), batched over every other axis, inputs read through
their strides. Lengths whose prime factors are all <= 13 run mixed-radix
Stockham passes of up to 16 points each (2^19 = 16^4 * 8: five passes; one
launch per pass, ping-pong buffers, no digit reversal, twiddles from a cached
table, each pass's small DFT generated as straight-line code); every other
length runs Bluestein's chirp-z algorithm on top of them (a power-of-two
convolution of length >= 2n - 1, its chirp and filter spectrum cached). A
C-contiguous input is read in place by the first pass (cropped or zero-padded
on the fly), and a complex output of scale 1 is the last pass's buffer: no
copies before or after the passes. An even-length ``rfft`` is one half-length
complex FFT of the samples packed in pairs plus a split step; an even-length
``irfft`` is the mirror image (a merge step in the load, one half-length
inverse FFT). Index math is 32-bit (tensors hold < 2^31 elements): 64-bit
divisions per element cost as much as the FFT arithmetic on a CPU device.

On top of them, float32/float64: ``convolve`` and ``correlate`` (up to 4
dims, every mode) are a direct convolution kernel; ``fftconvolve`` zero-pads
to a power of two, multiplies the rfftn spectra in place (an operand with a
batch of 1 is not broadcast) and crops the irfftn for the mode; ``lfilter``
(direct form II transposed, scipy's order of operations, ``zi``) and
``sosfilt`` (cascaded biquads, ``zi``/``zf``) run one work-item per signal;
``stft`` writes windowed, scaled segments straight into FFT rows and the
FFT's last step writes the (..., freq, segment) layout; ``istft`` is the
inverse FFT of each segment and one overlap-add kernel; ``resample`` is an
rfft, the kept bins weighted in place and an irfft. ``lfilter`` reads
its ``a`` back (a sync of a few bytes) to raise on ``a[0] == 0`` as flex
does. One OpenCL program per dtype holds every kernel; lengths, batch and
strides are run-time arguments, so it compiles once per device (then the
disk cache).

So every op is native (``HOST_FALLBACK`` is empty). What the kernels do not
cover falls back to the host at run time: more than 4 batch dims (after
merging contiguous ones), empty inputs, float16, and complex convolution,
filtering or resampling. The inputs are copied to the host, the flex
(scipy) kernel runs, the results are copied back, and the copies are counted
in the device's ``stats()`` (``host_transfers``, ``host_transfer_bytes``).

This module is imported only when the wgpu backend is registered;
PyOpenCL and burn_wgpu are imported inside the kernels.
"""
from __future__ import annotations

import math

import numpy as np

from . import _flex

_MAX_BATCH_DIMS = 4


# helpers both OpenCL programs use (they need the T and C macros): the batch offset of a row and
# the windowed stft samples that the frames kernel and the stft's first FFT pass load
_ROW_HELPERS = """
inline long row_base(uint r, uint d1, uint d2, uint d3, long s0, long s1, long s2, long s3) {
  long base = 0;
  if (d3 > 1) { uint t = r / d3; base += (r - t * d3) * s3; r = t; }
  if (d2 > 1) { uint t = r / d2; base += (r - t * d2) * s2; r = t; }
  if (d1 > 1) { uint t = r / d1; base += (r - t * d1) * s1; r = t; }
  return base + r * s0;
}

// value e of an stft row: sample t = e (2e, 2e + 1 packed in pairs) of a segment starting at i0,
// windowed and scaled, zero outside the signal and past nper
inline C frame(int e, int n, int nper, int pk, int cplx, long i0, __global const T* x, long base, long sx,
               __global const T* w, long ow, long sw, T sc) {
  int t = pk ? 2 * e : e;
  long i = i0 + t;
  C v = (C)(0, 0);
  if (t < nper && i >= 0 && i < n) {
    T ws = w[ow + t * sw] * sc;
    if (cplx) { long el = 2 * (base + i * sx); v = (C)(x[el] * ws, x[el + 1] * ws); }
    else v.x = x[base + i * sx] * ws;
  }
  if (pk && t + 1 < nper && i + 1 >= 0 && i + 1 < n) v.y = x[base + (i + 1) * sx] * w[ow + (t + 1) * sw] * sc;
  return v;
}
"""


def _src(T: str) -> str:
    ext = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if T == "double" else ""
    return ext + f"""
#define T {T}
#define C {T}2
inline C cmul(C a, C b) {{ return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }}
// exp(i * pi * num / den), argument reduced exactly in integers first
inline C cis(long num, long den) {{
  long r = num % (2 * den); if (r < 0) r += 2 * den;
  T t = (T)r / (T)den;
  return (C)(cospi(t), sinpi(t));
}}

// (nb, n) complex rows from any strided input (batch: up to 4 dims, d0 implied).
// mode 0: real input, 1: complex input (both cropped / zero-padded to n),
// mode 2: one-sided complex spectrum of m bins -> full Hermitian spectrum of length n (irfft),
// mode 3: real input packed in pairs (x[2j], x[2j+1]) into n complex values (rfft of length 2n).
// Index math of the FFT's loads and stores in 32 bits (tensors hold < 2^31 elements): 64-bit
// divisions are slow on CPUs, and merged batch dims of size 1 cost no division at all.
{_ROW_HELPERS}
// The work-item of element j of transform row b (nb rows of m) and its index d in the output
// (outer, m, inner), b = outer * inner + i. inner == 1: a 1-D launch over nb * m; else a 3-D launch
// (i, j, outer) in 16 x 16 tiles, so a work-group reads and writes whole cache lines both ways
// (the transposed write of a (segment, freq) -> (freq, segment) stft). False: past the end.
inline bool out_item(uint nb, int m, uint inner, uint* b, int* j, size_t* d) {{
  if (inner > 1) {{
    uint i = get_global_id(0), o = get_global_id(2); *j = get_global_id(1);
    if (i >= inner || *j >= m) return false;
    *b = o * inner + i; *d = ((size_t)o * m + *j) * inner + i;
  }} else {{
    uint g = get_global_id(0); if (g >= nb * m) return false;
    *b = g / m; *j = g - *b * m; *d = g;
  }}
  return true;
}}

__kernel void load(int mode, int m, int n, uint total, __global const T* in, long off, long sj,
                   uint d1, uint d2, uint d3, long s0, long s1, long s2, long s3, __global C* out,
                   __global const C* tw) {{
  uint g = get_global_id(0); if (g >= total) return;
  uint r = g / n; int j = g - r * n;
  long base = off + row_base(r, d1, d2, d3, s0, s1, s2, s3);
  C v = (C)(0, 0);
  if (mode == 0) {{ if (j < m) v.x = in[base + j * sj]; }}
  else if (mode == 3) {{
    if (2 * j < m) v.x = in[base + 2 * j * sj];
    if (2 * j + 1 < m) v.y = in[base + (2 * j + 1) * sj];
  }}
  else if (mode == 1) {{ if (j < m) {{ long e = 2 * (base + j * sj); v = (C)(in[e], in[e + 1]); }} }}
  else if (mode == 4) {{
    // irfft of even length 2n as one n-point inverse FFT: z = x[2t] + i x[2t+1] has the spectrum
    // Z_j = (X_j + X_(j+n)) + i W^-j (X_j - X_(j+n)), X_(j+n) = conj X_(n-j); X_0, X_n taken real (scipy)
    C xa = (C)(0, 0), xb = (C)(0, 0);
    if (j < m) {{ long e = 2 * (base + j * sj); xa = (C)(in[e], j == 0 ? 0 : in[e + 1]); }}
    int k = n - j;
    if (k < m) {{ long e = 2 * (base + k * sj); xb = (C)(in[e], k == n ? 0 : -in[e + 1]); }}
    C w = tw[j]; w.y = -w.y;             // W^-j = exp(i pi j / n) from the table of length 2n (sincos
    C d = cmul(w, xa - xb);               // per element costs ~5x a table read on a CPU device)
    v = xa + xb + (C)(-d.y, d.x);
  }}
  else {{
    int k = j <= n / 2 ? j : n - j;
    if (k < m) {{ long e = 2 * (base + k * sj); v = (C)(in[e], j <= n / 2 ? in[e + 1] : -in[e + 1]); }}
  }}
  out[g] = v;
}}

// the twiddle table of length n: tw[j] = exp(-2 pi i j / n)
__kernel void twiddles(int n, __global C* tw) {{
  int j = get_global_id(0); if (j >= n) return;
  tw[j] = cis(-2 * (long)j, n);
}}

// rfft of even length n from the n/2-point FFT z of the packed pairs (x[2j], x[2j+1]):
// X_k = (Z_k + conj Z_(h-k)) / 2 - i/2 W^k (Z_k - conj Z_(h-k)), k = 0..m-1 (m <= h + 1)
__kernel void rpost(int n, int m, uint nb, uint inner, T scale, __global const C* z,
                    __global T* y, __global const C* tw) {{
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
}}

// Bluestein's chirp w_k = exp(sign * i pi k^2 / n), k < n (a cached table)
__kernel void chirp_table(int n, int sign, __global C* w) {{
  int k = get_global_id(0); if (k >= n) return;
  w[k] = cis(sign * (long)k * k, n);
}}

// a = x * w zero-padded to m
__kernel void chirp_in(int n, int m, uint nb, __global const C* w, __global const C* x, __global C* a) {{
  uint g = get_global_id(0); if (g >= nb * m) return;
  uint b = g / m; int k = g - b * m;
  C v = (C)(0, 0);
  if (k < n) v = cmul(x[(size_t)b * n + k], w[k]);
  a[g] = v;
}}

// the chirp filter conj(w) laid out circularly over m
__kernel void chirp_filter(int n, int m, int sign, __global C* f) {{
  int j = get_global_id(0); if (j >= m) return;
  int k = j < n ? j : (j > m - n ? m - j : -1);
  f[j] = k < 0 ? (C)(0, 0) : cis(-sign * (long)k * k, n);
}}

__kernel void cmul_rows(uint m, uint nb, __global C* a, __global const C* f) {{
  uint g = get_global_id(0); if (g >= nb * m) return;
  a[g] = cmul(a[g], f[g % m]);
}}

// X_k = w_k * c_k * scale (scale includes the 1/m of the inverse transform)
__kernel void chirp_out(int n, int m, uint nb, T scale, __global const C* w, __global const C* c, __global C* y) {{
  uint g = get_global_id(0); if (g >= nb * n) return;
  uint b = g / n; int k = g - b * n;
  y[g] = cmul(c[(size_t)b * m + k], w[k]) * scale;
}}

// direct N-D convolution (up to 4 dims, leading dims of size 1): y[o] = sum_k a[o + st - k] b[k];
// st: where the output starts inside the full result (mode), b read through its (maybe negative) strides
__kernel void conv(long total, __global const T* a, long oa, __global const T* b, long ob, __global T* y,
                   int4 O, int4 A, int4 B, int4 S, long sa0, long sa1, long sa2, long sa3,
                   long sb0, long sb1, long sb2, long sb3) {{
  long g = get_global_id(0); if (g >= total) return;
  long r = g;
  int o3 = r % O.w; r /= O.w; int o2 = r % O.z; r /= O.z; int o1 = r % O.y; int o0 = r / O.y;
  int f0 = o0 + S.x, f1 = o1 + S.y, f2 = o2 + S.z, f3 = o3 + S.w;
  T acc = 0;
  for (int k0 = max(0, f0 - A.x + 1); k0 <= min(B.x - 1, f0); ++k0)
  for (int k1 = max(0, f1 - A.y + 1); k1 <= min(B.y - 1, f1); ++k1)
  for (int k2 = max(0, f2 - A.z + 1); k2 <= min(B.z - 1, f2); ++k2) {{
    long pa = oa + (f0 - k0) * sa0 + (f1 - k1) * sa1 + (f2 - k2) * sa2;
    long pb = ob + k0 * sb0 + k1 * sb1 + k2 * sb2;
    int lo = max(0, f3 - A.w + 1), hi = min(B.w - 1, f3);
    for (int k3 = lo; k3 <= hi; ++k3) acc += a[pa + (f3 - k3) * sa3] * b[pb + k3 * sb3];
  }}
  y[g] = acc;
}}

// the even-length irfft's output from z (nb, h): y[2t] = Re z_t, y[2t+1] = Im z_t, scaled, axis in place
__kernel void irpost(int h, uint nb, uint inner, T scale, __global const C* z, __global T* y) {{
  uint b; int t; size_t g;
  if (!out_item(nb, h, inner, &b, &t, &g)) return;
  C v = z[(size_t)b * h + t] * scale;
  size_t d = (g - g % inner) * 2 + g % inner;     // (outer, 2 t, inner) of (outer, 2 h, inner)
  y[d] = v.x; y[d + inner] = v.y;
}}

// the offset of row r over up to 4 merged batch dims (d0 implied), as the loads above compute it
inline long row_off(long r, int d1, int d2, int d3, long s0, long s1, long s2, long s3) {{
  long i3 = r % d3; r /= d3; long i2 = r % d2; r /= d2; long i1 = r % d1; r /= d1;
  return r * s0 + i1 * s1 + i2 * s2 + i3 * s3;
}}

// lfilter's coefficients as scipy uses them: b and a (strided) divided by a[0], zero-padded to K + 1
__kernel void lfcoef(int K, int nbc, int nac, __global const T* bc, long obc, long sbc,
                     __global const T* ac, long oac, long sac, __global T* out) {{
  int i = get_global_id(0); if (i > K) return;
  T a0 = ac[oac];
  out[i] = i < nbc ? bc[obc + i * sbc] / a0 : 0;
  out[K + 1 + i] = i < nac ? ac[oac + i * sac] / a0 : 0;
}}

// scipy.signal.lfilter's y: direct form II transposed (scipy's order of operations), one work-item
// per signal; co: b' then a' (K + 1 each); the state (K per row) lives in zs[i * nb + r] (coalesced)
__kernel void lfilt(int n, int K, long nb, __global const T* co, __global const T* x, long ox, long sx,
                    __global const T* zi, long oz, long sz, int has_zi, int d1, int d2, int d3,
                    long xs0, long xs1, long xs2, long xs3, long zs0, long zs1, long zs2, long zs3,
                    __global T* y, long inner, __global T* zs) {{
  long r = get_global_id(0); if (r >= nb) return;
  long bx = ox + row_off(r, d1, d2, d3, xs0, xs1, xs2, xs3);
  long bz = oz + row_off(r, d1, d2, d3, zs0, zs1, zs2, zs3);
  __global T* z = zs + r;
  for (int i = 0; i < K; ++i) z[i * nb] = has_zi ? zi[bz + i * sz] : 0;
  __global const T* ca = co + K + 1;
  long yb = (r / inner) * n * inner + r % inner;
  T b0 = co[0];
  for (int t = 0; t < n; ++t) {{
    T xv = x[bx + t * sx];
    T yv = K > 0 ? z[0] + b0 * xv : b0 * xv;
    for (int i = 0; i + 1 < K; ++i) z[i * nb] = z[(i + 1) * nb] + xv * co[i + 1] - yv * ca[i + 1];
    if (K > 0) z[(K - 1) * nb] = xv * co[K] - yv * ca[K];
    y[yb + t * inner] = yv;
  }}
}}

// sos rows normalized by their a0 (exact when a0 == 1, scipy's convention)
__kernel void sosnorm(int ns, __global const T* sos, long o, long s0, long s1, __global T* out) {{
  int g = get_global_id(0); if (g >= ns * 6) return;
  int r = g / 6, c = g % 6;
  out[g] = sos[o + r * s0 + c * s1] / sos[o + r * s0 + 3 * s1];
}}

// scipy.signal.sosfilt: cascaded biquads (scipy's order of operations), one work-item per signal;
// the state (2 per section) lives in zs[(2 s + i) * nb + r]; zf (ns, x's shape with 2 at the axis)
__kernel void sosf(int n, int ns, long nb, __global const T* so, __global const T* x, long ox, long sx,
                   __global const T* zi, long oz, long sz, long szs, int has_zi, int d1, int d2, int d3,
                   long xs0, long xs1, long xs2, long xs3, long zs0, long zs1, long zs2, long zs3,
                   __global T* y, long inner, __global T* zs, __global T* zf) {{
  long r = get_global_id(0); if (r >= nb) return;
  long bx = ox + row_off(r, d1, d2, d3, xs0, xs1, xs2, xs3);
  long bz = oz + row_off(r, d1, d2, d3, zs0, zs1, zs2, zs3);
  __global T* z = zs + r;
  for (int s = 0; s < ns; ++s) for (int i = 0; i < 2; ++i)
    z[(2 * s + i) * nb] = has_zi ? zi[bz + s * szs + i * sz] : 0;
  long yb = (r / inner) * n * inner + r % inner;
  for (int t = 0; t < n; ++t) {{
    T v = x[bx + t * sx];
    for (int s = 0; s < ns; ++s) {{
      __global const T* c = so + 6 * s;
      T yv = c[0] * v + z[2 * s * nb];
      z[2 * s * nb] = c[1] * v - c[4] * yv + z[(2 * s + 1) * nb];
      z[(2 * s + 1) * nb] = c[2] * v - c[5] * yv;
      v = yv;
    }}
    y[yb + t * inner] = v;
  }}
  if (has_zi) {{
    long fb = (r / inner) * 2 * inner + r % inner;
    for (int s = 0; s < ns; ++s) for (int i = 0; i < 2; ++i)
      zf[s * nb * 2 + fb + i * inner] = z[(2 * s + i) * nb];
  }}
}}

// the stft's scale: sum(win) ('spectrum') or sqrt(fs sum(win^2)) ('psd'), out = (1 / scale, scale);
// one work-item (a short sum)
__kernel void winscale(int np_, __global const T* w, long ow, long sw, int psd, T fs, __global T* out) {{
  if (get_global_id(0) != 0) return;
  T s = 0;
  for (int j = 0; j < np_; ++j) {{ T v = w[ow + j * sw]; s += psd ? v * v : v; }}
  T sc = psd ? sqrt(s * fs) : s;
  out[0] = 1 / sc; out[1] = sc;
}}

// istft's overlap-add, one work-item per output sample: segments xs (nb, nfft, nseg) (real, or
// complex when cplx) scaled and windowed, summed where they overlap, divided by the summed squared
// window where that exceeds 1e-10 (scipy); p0 skips the boundary padding
__kernel void ola(int nper, int step, int nseg, int nfft, int p0, int m, long nb, int cplx,
                  __global const T* xs, __global const T* w, long ow, long sw, __global const T* sc,
                  __global T* y) {{
  long g = get_global_id(0); if (g >= nb * m) return;
  long b = g / m; int p = g % m + p0;
  T scl = sc[1];
  C acc = (C)(0, 0);
  T nrm = 0;
  int s_lo = p >= nper ? (p - nper) / step + 1 : 0, s_hi = min(nseg - 1, p / step);
  for (int s = s_lo; s <= s_hi; ++s) {{
    int t = p - s * step;
    T wt = w[ow + t * sw];
    long e = (b * nfft + t) * nseg + s;
    if (cplx) acc += (C)(xs[2 * e] * scl * wt, xs[2 * e + 1] * scl * wt);
    else acc.x += xs[e] * scl * wt;
    nrm += wt * wt;
  }}
  if (nrm > (T)1e-10) acc /= nrm;
  if (cplx) {{ y[2 * g] = acc.x; y[2 * g + 1] = acc.y; }} else y[g] = acc.x;
}}

// stft segments as FFT rows, row = (signal, segment): windowed and scaled, zero past nper (up to nfft);
// pk: real samples packed in pairs for the half-length rfft (L = nfft / 2), else L = nfft values
// (cplx: complex input). Sample t of segment sg is x[sg * step + t - pl]: zeros outside the signal
// stand for the boundary and end padding.
__kernel void frames(int n, int nper, int step, int pl, int nseg, int L, int pk, int cplx, uint nrows,
                     __global const T* x, long ox, long sx, uint d1, uint d2, uint d3,
                     long s0, long s1, long s2, long s3, __global const T* w, long ow, long sw,
                     __global const T* isc, __global C* out) {{
  // a 2-D launch (j, row): no division per element but the row's signal and segment
  int j = get_global_id(0); uint row = get_global_id(1);
  if (j >= L) return;
  uint b = row / nseg; int sg = row - b * nseg;
  long base = ox + row_base(b, d1, d2, d3, s0, s1, s2, s3);
  out[(size_t)row * L + j] = frame(j, n, nper, pk, cplx, (long)sg * step - pl, x, base, sx, w, ow, sw, isc[0]);
}}

// resample's spectrum weights, in place on X (outer, mx, inner) complex: bins k < m2 times c,
// bin kh (when >= 0) times cf instead (scipy's unpaired Nyquist bin)
__kernel void binscale(int mx, int m2, long total, long inner, T c, int kh, T cf, __global T* X) {{
  long g = get_global_id(0); if (g >= total) return;
  long o = g / (m2 * inner), r = g % (m2 * inner);
  int k = r / inner;
  long e = (o * mx + k) * inner + r % inner;
  T s = k == kh ? cf : c;
  X[2 * e] *= s; X[2 * e + 1] *= s;
}}

// keep the first m of n values of each row, scaled, written with the transformed axis back in
// place (inner: elements after it); real_out: the real parts only
__kernel void store(int n, int m, uint nb, uint inner, T scale, int real_out, __global const C* x,
                    __global T* y) {{
  uint b; int j; size_t d;
  if (!out_item(nb, m, inner, &b, &j, &d)) return;
  C v = x[(size_t)b * n + j] * scale;
  if (real_out) y[d] = v.x; else {{ y[2 * d] = v.x; y[2 * d + 1] = v.y; }}
}}
"""


_REAL = {"float32": "float32", "float64": "float64", "complex64": "float32", "complex128": "float64"}
_CPLX = {"float32": "complex64", "float64": "complex128"}
_CT = {"float32": "float", "float64": "double"}


def _k(dc, real, name):
    return dc.kernel(_src(_CT[real]), name)


def _native_ok(x) -> bool:
    from burn_wgpu.tensor import WTensor
    return isinstance(x, WTensor) and x.dtype in _REAL and (x.dtype in ("float32", "complex64") or x.dc.fp64)


def _i(v):
    return np.int32(v)


def _l(v):
    return np.int64(v)


def _u(v):
    return np.uint32(v)


def _load(x, axis, m, n, mode, real):
    """Rows (nb, n) complex: ``x`` with ``axis`` moved last, cropped/padded to n (or Hermitian-extended).

    Returns ``(rows, batch shape, view)``. ``view`` is None when ``rows`` is a new buffer; else
    ``rows`` is ``x``'s own memory, read in place by the first pass as ``(offset, row stride, valid
    values)`` in complex elements (a C-contiguous complex input, or a real one of even length to
    pack in pairs, cropped or zero-padded on the fly): the FFT must not write to it."""
    from burn_wgpu.tensor import WTensor, empty
    dc = x.dc
    nd = len(x.shape)
    bdims = [d for d in range(nd) if d != axis]
    bshape = [x.shape[d] for d in bdims]
    bstr = [x.strides[d] for d in bdims]
    # merge batch dims that are contiguous with each other, so any layout fits in 4 dims
    merged = []
    for s, st in zip(bshape, bstr):
        if s == 1:
            continue
        if merged and merged[-1][1] == st * s:
            merged[-1] = (merged[-1][0] * s, st)
        else:
            merged.append((s, st))
    if len(merged) > _MAX_BATCH_DIMS:
        return None, bshape, None
    merged = [(1, 0)] * (_MAX_BATCH_DIMS - len(merged)) + merged
    nb = _nb(bshape)
    view, m_in = None, x.shape[axis]
    if axis == nd - 1 and x.is_contiguous:
        if mode == 1:
            view = (x.offset, m_in, m)
        elif mode == 3 and m_in % 2 == 0 and m % 2 == 0 and x.offset % 2 == 0:
            view = (x.offset // 2, m_in // 2, m // 2)
    # the passes read through a view; Bluestein's chirp only reads plain rows
    if view is not None and (view == (0, n, n) or (n > 1 and _radices(n) is not None)):
        return WTensor(dc, x.block, (nb, n), _CPLX[real]), bshape, view
    out = empty(dc, (nb, n), _CPLX[real])
    (d0, s0), (d1, s1), (d2, s2), (d3, s3) = merged
    tw = _twiddles(dc, real, 2 * n) if mode == 4 else out      # mode 4's W^-j (else unused)
    dc.launch(_k(dc, real, "load"), nb * n,
              (_i(mode), _i(m), _i(n), _u(nb * n), x.buf, _l(x.offset), _l(x.strides[axis]),
               _u(d1), _u(d2), _u(d3), _l(s0), _l(s1), _l(s2), _l(s3), out.buf, tw.buf))
    return out, bshape, None


def _launch_rows(dc, kernel, nb, m, inner, args):
    """Launch a kernel that writes (nb, m) rows as (outer, m, inner) (see ``out_item``)."""
    if inner == 1:
        dc.launch(kernel, nb * m, args)
    else:
        dc.launch2d(kernel, (-(-inner // 16) * 16, -(-m // 16) * 16, nb // inner), (16, 16, 1), args)


def _nb(shape):
    n = 1
    for s in shape:
        n *= s
    return n


# (device, dtype, n) -> twiddle table (kept: tables are reused across calls; memory_cleanup drops them)
_TW: dict = {}


def _twiddles(dc, real, n):
    from burn_wgpu.tensor import empty
    key = (dc.index, real, n)
    t = _TW.get(key)
    if t is None:
        if len(_TW) >= 16:
            _TW.pop(next(iter(_TW)))
        t = _TW[key] = empty(dc, (n,), _CPLX[real])
        dc.launch(_k(dc, real, "twiddles"), n, (_i(n), t.buf))
    return t


# -- the Stockham passes --------------------------------------------------------------------------
# A row of length n = R1 R2 ... runs one pass per radix R (Stockham autosort: ping-pong buffers, no
# digit reversal): with p the span done so far, work-item (row, i < n / R) reads u_j = x[i + j n / R],
# twiddles them by W_(R p)^(j k) (k = i mod p, from a table of length n), takes their R-point DFT in
# registers and writes y[(i - k) R + k + j p]. The R-point DFT is straight-line code generated below
# (constant twiddles, multiplications by 1 and +-i left out): no loops, no barriers. Measured on
# PoCL (CPU), 2^19 points: radix 16 ~1.6x faster than radix 4 (32: no better); work-group-local
# sub-FFTs (radix-8 stages between barriers in local memory) ~1.7x slower than radix-16 global passes;
# twiddles computed with sincos per element ~5.7x slower than table reads, and powers of a few table
# entries no faster. (PoCL does not vectorize float2 code across work-items; a split re/im version
# that it did vectorize ran slower.)
_PMAX = 16              # the largest radix of a pass
_PRIMES = (2, 3, 5, 7, 11, 13)   # a length with another prime factor runs Bluestein


def _radices(n):
    """The radices of the passes of an n-point FFT (product n), or None if n needs Bluestein.

    >>> _radices(1 << 19), _radices(3 << 18), _radices(1_000_003)
    ([16, 16, 16, 16, 8], [16, 16, 16, 16, 12], None)
    """
    fs = []
    for f in _PRIMES:
        while n % f == 0:
            fs.append(f)
            n //= f
    if n != 1:
        return None
    # first-fit decreasing into passes of at most _PMAX points (a prime above it is a pass of its own)
    bins: list = []
    for f in sorted(fs, reverse=True):
        for i, b in enumerate(bins):
            if b * f <= _PMAX:
                bins[i] = b * f
                break
        else:
            bins.append(f)
    return sorted(bins, reverse=True)


def _factors(R):
    out, r = [], R
    for f in _PRIMES:
        while r % f == 0:
            out.append(f)
            r //= f
    return out


def _dft_code(R, fwd):
    """OpenCL C: the R-point DFT (sign -1 if fwd) of u0..u(R-1) into v0..v(R-1), straight-line."""
    sg = -1 if fwd else 1
    lines, cur, tmp = [], [f"u{j}" for j in range(R)], [0]

    def new():
        tmp[0] += 1
        return f"t{tmp[0]}"

    def rot(v, e, den):
        # v * exp(sg 2 pi i e / den), exact for the multiples of a quarter turn
        e %= den
        if e == 0:
            return v
        if 4 * e == den or 4 * e == 3 * den:
            s = sg if 4 * e == den else -sg      # v * (s i)
            t = new()
            lines.append(f"C {t} = (C)({'-' if s > 0 else ''}{v}.y, {'' if s > 0 else '-'}{v}.x);")
            return t
        if 2 * e == den:
            t = new()
            lines.append(f"C {t} = -{v};")
            return t
        ang = sg * 2 * math.pi * e / den
        c, si = repr(math.cos(ang)), repr(math.sin(ang))
        t = new()
        lines.append(f"C {t} = (C)({v}.x * (T){c} - {v}.y * (T){si}, {v}.x * (T){si} + {v}.y * (T){c});")
        return t

    p = 1
    for f in _factors(R):
        nxt = [None] * R
        q = R // f
        for i in range(q):
            k = i % p
            us = [rot(cur[i + j * q], j * k, f * p) for j in range(f)]
            for m in range(f):
                terms = [rot(us[j], j * m, f) if j else us[j] for j in range(f)]
                t = new()
                lines.append(f"C {t} = " + " + ".join(terms) + ";")
                nxt[(i - k) * f + k + m * p] = t
        cur = nxt
        p *= f
    lines += [f"C v{j} = {cur[j]};" for j in range(R)]
    return "".join("  " + ln + "\n" for ln in lines)


_PASS_SRC: dict = {}


def _pass_src(T, R):
    """The program of the radix-R pass: kernels ``pass_f`` (forward), ``pass_i`` (inverse) and
    ``pass_frames`` (an stft's first forward pass)."""
    key = (T, R)
    src = _PASS_SRC.get(key)      # one str object per key: the kernel cache hashes it once
    if src is None:
        ext = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if T == "double" else ""
        out = [ext, f"#define T {T}\n#define C {T}2\n"
                    "inline C cmul(C a, C b) { return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }\n"]
        for fwd in (True, False):
            loads = "".join(f"  C u{j} = i + {j} * q < mv ? x[i + {j} * q] : (C)(0, 0);\n" for j in range(R))
            conj = "" if fwd else "w.y = -w.y; "
            tws = "".join(f"    {{ C w = tw[{j} * ts]; {conj}u{j} = cmul(u{j}, w); }}\n" for j in range(1, R))
            stores = "".join(f"  y[j0 + {j} * p] = v{j};\n" for j in range(R))
            # total = rows * n / R < 2^32 work-items: 32-bit index math (64-bit divisions are slow on CPUs)
            out.append(f"""
// one radix-{R} {'forward' if fwd else 'inverse'} Stockham pass; q = n / {R}, p = span done, tstep = n / ({R} p).
// Source rows start at xoff + b xs and hold mv values (zeros after): the first pass reads a
// contiguous input in place, cropped or zero-padded, without a copy.
__kernel void pass_{'f' if fwd else 'i'}(uint q, uint p, uint total, uint tstep, __global const C* x,
                                         __global C* y, __global const C* tw, ulong xoff, uint xs, uint mv) {{
  uint g = get_global_id(0); if (g >= total) return;
  uint b = g / q, i = g - b * q, k = i % p;
  x += xoff + (size_t)b * xs; y += (size_t)b * q * {R};
{loads}  if (p > 1) {{
    uint ts = k * tstep;
{tws}  }}
{_dft_code(R, fwd)}  uint j0 = (i - k) * {R} + k;
{stores}}}
""")
        loads = "".join(f"  C u{j} = frame(i + {j} * q, n, nper, pk, cplx, i0, x, base, sx, w, ow, sw, sc);\n"
                        for j in range(R))
        stores = "".join(f"  y[i * {R} + {j}] = v{j};\n" for j in range(R))
        out.append(f"""
{_ROW_HELPERS}
// the stft's first forward pass (p = 1, no twiddles), its rows (signal, segment) windowed and scaled
// from the signal as it loads them: no framing pass over memory
__kernel void pass_frames(uint q, uint total, __global const T* x, __global C* y, int n, int nper, int step,
                          int pl, uint nseg, int pk, int cplx, long ox, long sx, uint d1, uint d2, uint d3,
                          long s0, long s1, long s2, long s3, __global const T* w, long ow, long sw,
                          __global const T* isc) {{
  uint g = get_global_id(0); if (g >= total) return;
  uint b = g / q, i = g - b * q;
  uint sgl = b / nseg; int sg = b - sgl * nseg;
  long base = ox + row_base(sgl, d1, d2, d3, s0, s1, s2, s3);
  long i0 = (long)sg * step - pl;
  T sc = isc[0];
  y += (size_t)b * q * {R};
{loads}{_dft_code(R, True)}{stores}}}
""")
        src = _PASS_SRC[key] = "".join(out)
    return src


# (device, dtype, n, m, sign) -> (chirp table, filter spectrum): Bluestein's constants (memory_cleanup drops them)
_CHIRP: dict = {}


def _chirp(dc, real, n, m, sign):
    from burn_wgpu.tensor import empty
    key = (dc.index, real, n, m, sign)
    hit = _CHIRP.get(key)
    if hit is None:
        if len(_CHIRP) >= 8:
            _CHIRP.pop(next(iter(_CHIRP)))
        w = empty(dc, (n,), _CPLX[real])
        dc.launch(_k(dc, real, "chirp_table"), n, (_i(n), _i(sign), w.buf))
        f = empty(dc, (1, m), _CPLX[real])
        dc.launch(_k(dc, real, "chirp_filter"), m, (_i(n), _i(m), _i(sign), f.buf))
        hit = _CHIRP[key] = (w, _c2c(dc, real, f, m, 1, -1))
    return hit


def _c2c(dc, real, a, n, nb, sign, view=None, frames=None):
    """Unnormalized DFT of the rows of ``a`` (nb, n), sign -1 forward, +1 inverse. Without ``view``
    it may write to ``a`` (a ping-pong buffer); with one (see ``_load``) ``a`` is only read, by the
    first pass (Bluestein and n == 1 take only the plain view (0, n, n)). ``frames``: no ``a``, the
    first (forward) pass frames an stft's rows itself (its arguments after the signal, see
    ``stft``); only for n > 1 with a pass plan."""
    from burn_wgpu.tensor import empty
    if n == 1:
        return a
    rad = _radices(n)
    if rad is not None:
        tw = _twiddles(dc, real, n)
        # passes write tmp, then the other buffer, then tmp...: ``a`` itself only if owned
        tmp = empty(dc, (nb, n), _CPLX[real])
        reuse = view is None and frames is None
        other = a if reuse or len(rad) == 1 else empty(dc, (nb, n), _CPLX[real])
        src, p, T = a, 1, _CT[real]
        off, xs, mv = view or (0, n, n)
        for idx, R in enumerate(rad):
            q = n // R
            total = nb * q
            dst = other if idx % 2 else tmp
            if idx == 0 and frames is not None:
                dc.launch(dc.kernel(_pass_src(T, R), "pass_frames"), total, (_u(q), _u(total), *frames[:1],
                                                                            dst.buf, *frames[1:]))
                src, p = dst, R
                continue
            dc.launch(dc.kernel(_pass_src(T, R), "pass_f" if sign < 0 else "pass_i"), total,
                      (_u(q), _u(p), _u(total), _u(n // (R * p)), src.buf, dst.buf, tw.buf,
                       np.uint64(off), _u(xs), _u(mv)))
            off, xs, mv = 0, n, n
            src = dst
            p *= R
        return src
    # Bluestein: a chirp-z convolution of length m >= 2n - 1 (a power of two); its constants cached
    m = 1 << (2 * n - 2).bit_length()
    Tn = np.float64 if real == "float64" else np.float32
    w, ff = _chirp(dc, real, n, m, sign)
    buf = empty(dc, (nb, m), _CPLX[real])
    dc.launch(_k(dc, real, "chirp_in"), nb * m, (_i(n), _i(m), _u(nb), w.buf, a.buf, buf.buf))
    fa = _c2c(dc, real, buf, m, nb, -1)
    dc.launch(_k(dc, real, "cmul_rows"), nb * m, (_u(m), _u(nb), fa.buf, ff.buf))
    c = _c2c(dc, real, fa, m, nb, +1)
    out = empty(dc, (nb, n), _CPLX[real])
    dc.launch(_k(dc, real, "chirp_out"), nb * n, (_i(n), _i(m), _u(nb), Tn(1.0 / m), w.buf, c.buf, out.buf))
    return out


def _scale(norm, n, inverse):
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _fft1(x, n, axis, norm, kind):
    """One 1-D transform on the device; kind: fft, ifft, rfft, irfft. None if it must fall back."""
    from burn_wgpu.tensor import WTensor, empty
    dc, real = x.dc, _REAL[x.dtype]
    cplx_in = x.dtype.startswith("complex")
    m_in = x.shape[axis]
    # rfft / irfft of even length: one n/2-point complex FFT of the samples packed in pairs
    # (and a split step after an rfft, a merge step in the load before an irfft)
    half = kind in ("rfft", "irfft") and n % 2 == 0 and n >= 4
    if kind == "irfft":
        mode, m = (4 if half else 2), m_in
    else:
        mode, m = (3 if half else 1 if cplx_in else 0), min(m_in, n)
    a, bshape, view = _load(x, axis, m, n // 2 if half else n, mode, real)
    if a is None:
        return None
    nb = a.shape[0]
    inverse = kind in ("ifft", "irfft")
    y = _c2c(dc, real, a, n // 2 if half else n, nb, +1 if inverse else -1, view)
    m_out = n // 2 + 1 if kind == "rfft" else n
    out_dt = real if kind == "irfft" else _CPLX[real]
    shape = list(x.shape)
    shape[axis] = m_out
    inner = _nb(x.shape[axis + 1:])
    scale = _scale(norm, n, inverse)
    if kind in ("fft", "ifft") and inner == 1 and scale == 1.0 and y.block is not x.block:
        return WTensor(dc, y.block, tuple(shape), out_dt)    # the last pass wrote the output's layout
    out = empty(dc, tuple(shape), out_dt)
    Tn = np.float64 if real == "float64" else np.float32
    if half and kind == "irfft":
        _launch_rows(dc, _k(dc, real, "irpost"), nb, n // 2, inner,
                     (_i(n // 2), _u(nb), _u(inner), Tn(_scale(norm, n, True)), y.buf, out.buf))
        return out
    if half:
        _launch_rows(dc, _k(dc, real, "rpost"), nb, m_out, inner,
                     (_i(n), _i(m_out), _u(nb), _u(inner), Tn(_scale(norm, n, False)), y.buf, out.buf,
                      _twiddles(dc, real, n).buf))
        return out
    # contiguous output: element-wise kernels cannot copy complex views yet
    _launch_rows(dc, _k(dc, real, "store"), nb, m_out, inner,
                 (_i(n), _i(m_out), _u(nb), _u(inner), Tn(scale), _i(kind == "irfft"),
                  y.buf, out.buf))
    return out


def _one(kind):
    def kernel(x, *, n, axis, norm):
        r = _fft1(x, n, axis, norm, kind) if _native_ok(x) else None
        return r if r is not None else _fallback[kind](x, n=n, axis=axis, norm=norm)
    kernel.__name__ = f"wgpu_{kind}"
    return kernel


def _many(kind):
    # n-D transforms: 1-D transforms along each axis (the norms multiply to the n-D norm)
    def kernel(x, *, s, axes, norm):
        if not _native_ok(x):
            return _fallback[kind](x, s=s, axes=axes, norm=norm)
        y = x
        steps = [("fft" if kind in ("fftn", "rfftn") else "ifft", a, n) for a, n in zip(axes, s)]
        if kind == "rfftn":
            steps = [("rfft", axes[-1], s[-1])] + steps[:-1]
        elif kind == "irfftn":
            steps = steps[:-1] + [("irfft", axes[-1], s[-1])]
        for k, a, n in steps:
            r = _fft1(y, n, a, norm, k)
            if r is None:
                return _fallback[kind](x, s=s, axes=axes, norm=norm)
            y = r
        return y
    kernel.__name__ = f"wgpu_{kind}"
    return kernel


def _conv(kind):
    """Direct convolution / correlation (scipy.signal's modes), float32/float64, up to 4 dims."""
    def kernel(a, b, *, mode="full"):
        from burn_wgpu.tensor import WTensor, empty
        ok = (isinstance(a, WTensor) and isinstance(b, WTensor) and a.dtype == b.dtype and a.dtype in _CT
              and len(a.shape) <= 4 and a.size and b.size)
        if not ok:
            return _fallback[kind](a, b, mode=mode)
        if kind == "correlate":
            # correlate(a, b) = convolve(a, reverse(b)) (real): b reversed as a view, negative strides
            off = b.offset + sum((s - 1) * st for s, st in zip(b.shape, b.strides))
            b = b.view(b.shape, tuple(-st for st in b.strides), off)
        A, B = list(a.shape), list(b.shape)
        if mode == "valid" and all(bs >= as_ for as_, bs in zip(A, B)) and A != B:
            a, b, A, B = b, a, B, A         # convolution commutes: valid mode slides the smaller one
        full = [x + y - 1 for x, y in zip(A, B)]
        O = full if mode == "full" else A if mode == "same" else [x - y + 1 for x, y in zip(A, B)]
        S = [(f - o) // 2 if mode == "same" else (0 if mode == "full" else y - 1)
             for f, o, y in zip(full, O, B)]
        out = empty(a.dc, tuple(O), a.dtype)
        pad = 4 - len(O)

        def v4(xs, fill):
            return np.array([fill] * pad + list(xs), dtype=np.int32).view(_INT4)[0]
        sa = [0] * pad + list(a.strides)
        sb = [0] * pad + list(b.strides)
        a.dc.launch(_k(a.dc, a.dtype, "conv"), out.size,
                    (_l(out.size), a.buf, _l(a.offset), b.buf, _l(b.offset), out.buf,
                     v4(O, 1), v4(A, 1), v4(B, 1), v4(S, 0), *map(_l, sa), *map(_l, sb)))
        return out
    kernel.__name__ = f"wgpu_{kind}"
    return kernel


_INT4 = np.dtype([("x", np.int32), ("y", np.int32), ("z", np.int32), ("w", np.int32)])


class _Fallback(Exception):
    """A layout the native path does not cover (more than 4 batch dims after merging)."""


def _spectrum(x, nf, first):
    """rfftn of ``x`` (real, its convolved axes last, from ``first`` on) zero-padded to ``nf``."""
    nd = len(x.shape)
    y = _fft1(x, nf[-1], nd - 1, "backward", "rfft")
    for i in range(len(nf) - 1):
        if y is None:
            break
        y = _fft1(y, nf[i], first + i, "backward", "fft")
    if y is None:
        raise _Fallback
    return y


def _inverse_spectrum(y, nf, first):
    for i in range(len(nf) - 1):
        y = _fft1(y, nf[i], first + i, "backward", "ifft")
        if y is None:
            raise _Fallback
    y = _fft1(y, nf[-1], len(y.shape) - 1, "backward", "irfft")
    if y is None:
        raise _Fallback
    return y


def _fast_len(n):
    # the native FFT's fast lengths are powers of two (others run Bluestein on a power of two >= 2n - 1)
    return 1 << (n - 1).bit_length()


def fftconvolve(a, b, *, mode="full", axes=None):
    """Zero-pad to a power of two along the convolved axes, rfftn both, multiply, irfftn, crop for ``mode``.

    Convolved axes are moved last (a view: the FFT loads read through strides), so the spectra are
    (batch..., spectrum...) and an operand of batch size 1 multiplies every batch row without
    being broadcast; operands that both broadcast along different axes are broadcast (views) first.
    """
    from burn_wgpu import kernels as wk
    from burn_wgpu.tensor import WTensor
    ok = (isinstance(a, WTensor) and isinstance(b, WTensor) and a.dtype == b.dtype and a.dtype in _CT
          and len(a.shape) == len(b.shape) >= 1 and a.size and b.size)
    if not ok:
        return _fallback["fftconvolve"](a, b, mode=mode, axes=axes)
    nd = len(a.shape)
    conv = tuple(range(nd)) if axes is None else tuple(sorted(int(x) % nd for x in axes))
    bat = [d for d in range(nd) if d not in conv]
    perm = bat + list(conv)
    nb_dims = len(bat)
    bshape = tuple(max(a.shape[d], b.shape[d]) for d in bat)
    full = [a.shape[d] + b.shape[d] - 1 for d in conv]
    nf = [_fast_len(n) for n in full]
    av, bv = wk.permute(a, axes=perm), wk.permute(b, axes=perm)
    a1, b1 = all(a.shape[d] == 1 for d in bat), all(b.shape[d] == 1 for d in bat)
    if b1 or a1:
        big, small = (av, bv) if b1 else (bv, av)
    else:
        big = wk.broadcast_to(av, shape=bshape + av.shape[nb_dims:])
        small = wk.broadcast_to(bv, shape=bshape + bv.shape[nb_dims:])
    try:
        fa = _spectrum(big, nf, nb_dims)
        fb = _spectrum(small, nf, nb_dims)
        # the product, in place: fb repeats every fb.size elements (its batch is 1 or equal to fa's)
        real = _REAL[a.dtype]
        a.dc.launch(_k(a.dc, real, "cmul_rows"), fa.size, (_u(fb.size), _u(fa.size // fb.size), fa.buf, fb.buf))
        y = _inverse_spectrum(fa, nf, nb_dims)
    except _Fallback:
        return _fallback["fftconvolve"](a, b, mode=mode, axes=axes)
    starts, stops = [0] * nb_dims, list(bshape)
    for i, d in enumerate(conv):
        na, nbb = a.shape[d], b.shape[d]
        size = full[i] if mode == "full" else na if mode == "same" else abs(na - nbb) + 1
        start = 0 if mode == "full" else (nbb - 1) // 2 if mode == "same" else min(na, nbb) - 1
        starts.append(start)
        stops.append(start + size)
    y = wk.slice_(y, starts=starts, stops=stops, steps=[1] * nd)
    return wk.contiguous(wk.permute(y, axes=tuple(np.argsort(perm))))


def _rows(axis, shape, *strides):
    """Merge the dims other than ``axis`` (jointly for every operand's strides) into at most 4:
    ``(d1, d2, d3)`` and each operand's ``(s0, s1, s2, s3)``, or None if more dims remain."""
    merged = []     # (size, [stride per operand])
    for d, size in enumerate(shape):
        if d == axis or size == 1:
            continue
        st = [s[d] for s in strides]
        if merged and all(m == x * size for m, x in zip(merged[-1][1], st)):
            merged[-1] = (merged[-1][0] * size, st)
        else:
            merged.append((size, st))
    if len(merged) > _MAX_BATCH_DIMS:
        return None
    merged = [(1, [0] * len(strides))] * (_MAX_BATCH_DIMS - len(merged)) + merged
    dims = tuple(_i(m[0]) for m in merged[1:])
    return dims, [tuple(_l(m[1][k]) for m in merged) for k in range(len(strides))]


def lfilter(b, a, x, zi=None, *, axis):
    """Direct form II transposed, one work-item per signal, strided operands read in place."""
    from burn_wgpu.tensor import WTensor, empty
    ops = (b, a, x) + (() if zi is None else (zi,))
    ok = (all(isinstance(t, WTensor) and t.dtype == x.dtype for t in ops) and x.dtype in _CT and x.size)
    lay = _rows(axis % len(x.shape), x.shape, x.strides, (zi if zi is not None else x).strides) if ok else None
    if lay is None:
        return _fallback["lfilter"](b, a, x, zi, axis=axis)
    from burn_wgpu import kernels as wk
    _flex._a0(wk.download(a))      # a few coefficients read back (a sync): a[0] == 0 raises as on flex
    dc, ax = x.dc, axis % len(x.shape)
    n, K = x.shape[ax], max(a.shape[0], b.shape[0]) - 1
    co = empty(dc, (2 * (K + 1),), x.dtype)
    dc.launch(_k(dc, x.dtype, "lfcoef"), K + 1, (_i(K), _i(b.shape[0]), _i(a.shape[0]), b.buf, _l(b.offset),
                                                 _l(b.strides[0]), a.buf, _l(a.offset), _l(a.strides[0]), co.buf))
    nb = x.size // n
    y = empty(dc, x.shape, x.dtype)
    zs = empty(dc, (max(K, 1) * nb,), x.dtype)
    (d1, d2, d3), (xs, zst) = lay
    z = zi if zi is not None else x
    inner = _nb(x.shape[ax + 1:])
    dc.launch(_k(dc, x.dtype, "lfilt"), nb,
              (_i(n), _i(K), _l(nb), co.buf, x.buf, _l(x.offset), _l(x.strides[ax]), z.buf, _l(z.offset),
               _l(z.strides[ax]), _i(zi is not None), d1, d2, d3, *xs, *zst, y.buf, _l(inner), zs.buf))
    return y


def sosfilt(sos, x, zi=None, *, axis):
    """Cascaded biquads (direct form II transposed), one work-item per signal; zf when zi is given."""
    from burn_wgpu.tensor import WTensor, empty
    ops = (sos, x) + (() if zi is None else (zi,))
    ok = all(isinstance(t, WTensor) and t.dtype == x.dtype for t in ops) and x.dtype in _CT and x.size
    ax = axis % len(x.shape) if ok else 0
    if ok and zi is not None:
        # zi: (ns, x's shape with 2 at the axis): its batch strides are those of dims 1..
        zst = zi.strides[1:]
    else:
        zst = x.strides
    lay = _rows(ax, x.shape, x.strides, zst) if ok else None
    if lay is None:
        return _fallback["sosfilt"](sos, x, zi, axis=axis)
    from burn_wgpu import kernels as wk
    _flex._sos_a0(wk.download(sos))     # 6 coefficients a section read back: a0 == 0 raises as on flex
    dc, ns, n = x.dc, sos.shape[0], x.shape[ax]
    so = empty(dc, (ns, 6), x.dtype)
    dc.launch(_k(dc, x.dtype, "sosnorm"), ns * 6, (_i(ns), sos.buf, _l(sos.offset), _l(sos.strides[0]),
                                                   _l(sos.strides[1]), so.buf))
    nb = x.size // n
    y = empty(dc, x.shape, x.dtype)
    zs = empty(dc, (2 * ns * nb,), x.dtype)
    zshape = (ns,) + tuple(2 if d == ax else s for d, s in enumerate(x.shape))
    zf = empty(dc, zshape, x.dtype) if zi is not None else zs
    z = zi if zi is not None else x
    (d1, d2, d3), (xs, zs_) = lay
    dc.launch(_k(dc, x.dtype, "sosf"), nb,
              (_i(n), _i(ns), _l(nb), so.buf, x.buf, _l(x.offset), _l(x.strides[ax]), z.buf, _l(z.offset),
               _l(zst[ax]), _l(z.strides[0]), _i(zi is not None), d1, d2, d3, *xs, *zs_, y.buf,
               _l(_nb(x.shape[ax + 1:])), zs.buf, zf.buf))
    return y if zi is None else (y, zf)


def stft(x, win, *, fs, noverlap, nfft, boundary, padded, onesided, scaling):
    """Segments windowed and scaled straight into FFT rows, the native FFT, the spectrum written
    transposed to (..., freq, segment) by the FFT's last step (no framing copy, no transpose)."""
    from burn_wgpu.tensor import WTensor, empty
    from ._ops import stft_plan
    real = _REAL.get(x.dtype)
    ok = (isinstance(x, WTensor) and isinstance(win, WTensor) and _native_ok(x) and win.dtype == real
          and x.size and len(x.shape) >= 1)
    nd = len(x.shape) if ok else 0
    lay = _rows(nd - 1, x.shape, x.strides) if ok else None
    if lay is None:
        return _fallback["stft"](x, win, fs=fs, noverlap=noverlap, nfft=nfft, boundary=boundary, padded=padded,
                                 onesided=onesided, scaling=scaling)
    dc, n, nper = x.dc, x.shape[-1], win.shape[0]
    step, _, nseg = stft_plan("stft", n, nper, noverlap, nfft, boundary, padded)
    pl = nper // 2 if boundary == "zeros" else 0
    Tn = np.float64 if real == "float64" else np.float32
    isc = empty(dc, (2,), real)
    dc.launch(_k(dc, real, "winscale"), 1, (_i(nper), win.buf, _l(win.offset), _l(win.strides[0]),
                                            _i(scaling == "psd"), Tn(fs), isc.buf))
    cplx = x.dtype.startswith("complex")
    pk = onesided and not cplx and nfft % 2 == 0 and nfft >= 4
    L = nfft // 2 if pk else nfft
    batch = x.shape[:-1]
    nrows = _nb(batch) * nseg
    (d1, d2, d3), (xs,) = lay
    if L > 1 and _radices(L) is not None:
        # the first FFT pass frames the rows as it loads them
        y = _c2c(dc, real, None, L, nrows, -1, frames=(
            x.buf, _i(n), _i(nper), _i(step), _i(pl), _u(nseg), _i(pk), _i(cplx), _l(x.offset),
            _l(x.strides[-1]), _u(d1), _u(d2), _u(d3), *xs, win.buf, _l(win.offset), _l(win.strides[0]), isc.buf))
    else:
        rows = empty(dc, (nrows, L), _CPLX[real])
        ls = min(256, 1 << (L - 1).bit_length())
        dc.launch2d(_k(dc, real, "frames"), (-(-L // ls) * ls, nrows), (ls, 1),
                    (_i(n), _i(nper), _i(step), _i(pl), _i(nseg), _i(L), _i(pk), _i(cplx), _u(nrows), x.buf,
                     _l(x.offset), _l(x.strides[-1]), _u(d1), _u(d2), _u(d3), *xs, win.buf, _l(win.offset),
                     _l(win.strides[0]), isc.buf, rows.buf))
        y = _c2c(dc, real, rows, L, nrows, -1)
    nfreq = nfft // 2 + 1 if onesided else nfft
    out = empty(dc, tuple(batch) + (nfreq, nseg), _CPLX[real])
    # rows are (signal, segment): with inner = nseg the last step writes (signal, freq, segment)
    if pk:
        _launch_rows(dc, _k(dc, real, "rpost"), nrows, nfreq, nseg,
                     (_i(nfft), _i(nfreq), _u(nrows), _u(nseg), Tn(1.0), y.buf, out.buf,
                      _twiddles(dc, real, nfft).buf))
    else:
        _launch_rows(dc, _k(dc, real, "store"), nrows, nfreq, nseg,
                     (_i(nfft), _i(nfreq), _u(nrows), _u(nseg), Tn(1.0), _i(0), y.buf, out.buf))
    return out


def istft(z, win, *, fs, noverlap, nfft, onesided, boundary, scaling):
    """The native inverse FFT of every segment (along the frequency axis, read through strides),
    then one overlap-add kernel that also windows, scales and normalizes (no framing copies)."""
    from burn_wgpu.tensor import WTensor, empty
    from ._ops import istft_length
    real = _REAL.get(z.dtype)
    ok = (isinstance(z, WTensor) and isinstance(win, WTensor) and _native_ok(z) and win.dtype == real
          and z.size and len(z.shape) >= 2)
    xs = _fft1(z, nfft, len(z.shape) - 2, "backward", "irfft" if onesided else "ifft") if ok else None
    if xs is None:
        return _fallback["istft"](z, win, fs=fs, noverlap=noverlap, nfft=nfft, onesided=onesided, boundary=boundary,
                                  scaling=scaling)
    dc, nper, nseg = z.dc, win.shape[0], z.shape[-1]
    step = nper - noverlap
    m = istft_length(nseg, nper, step, boundary)
    Tn = np.float64 if real == "float64" else np.float32
    sc = empty(dc, (2,), real)
    dc.launch(_k(dc, real, "winscale"), 1, (_i(nper), win.buf, _l(win.offset), _l(win.strides[0]),
                                            _i(scaling == "psd"), Tn(fs), sc.buf))
    batch = z.shape[:-2]
    nb = _nb(batch)
    cplx = not onesided
    y = empty(dc, tuple(batch) + (m,), _CPLX[real] if cplx else real)
    dc.launch(_k(dc, real, "ola"), nb * m,
              (_i(nper), _i(step), _i(nseg), _i(nfft), _i(nper // 2 if boundary else 0), _i(m), _l(nb), _i(cplx),
               xs.buf, win.buf, _l(win.offset), _l(win.strides[0]), sc.buf, y.buf))
    return y


def resample(x, *, num, axis):
    """scipy.signal.resample's FFT method: the native rfft, the kept bins weighted in place, the native
    irfft of a view of them (no copies between the transforms)."""
    from burn_wgpu import kernels as wk
    if not (_native_ok(x) and x.dtype in _CT and x.size):
        return _fallback["resample"](x, num=num, axis=axis)
    ax = axis % len(x.shape)
    nx = x.shape[ax]
    X = _fft1(x, nx, ax, "backward", "rfft")
    if X is None:
        return _fallback["resample"](x, num=num, axis=axis)
    m = min(num, nx)
    m2 = m // 2 + 1
    c = num / nx
    kh = m // 2 if m % 2 == 0 and num != nx else -1
    cf = c * (2 if num < nx else 0.5)
    Tn = np.float64 if x.dtype == "float64" else np.float32
    mx, inner = X.shape[ax], _nb(X.shape[ax + 1:])
    total = _nb(X.shape[:ax]) * m2 * inner
    x.dc.launch(_k(x.dc, x.dtype, "binscale"), total, (_i(mx), _i(m2), _l(total), _l(inner), Tn(c), _i(kh),
                                                      Tn(cf), X.buf))
    Xv = wk.slice_(X, starts=[0] * len(X.shape), stops=[m2 if d == ax else s for d, s in enumerate(X.shape)],
                   steps=[1] * len(X.shape))
    y = _fft1(Xv, num, ax, "backward", "irfft")
    return y if y is not None else _fallback["resample"](x, num=num, axis=axis)


# -- registration ---------------------------------------------------------------------------------

def _make_fallbacks():
    from burn_wgpu.interop import host_fallback
    return {name: host_fallback(fn, f"signal_{name}") for name, fn in _flex.KERNELS.items()}


class _Lazy(dict):
    # burn_wgpu is imported on the first fallback call, not when this module is imported
    def __missing__(self, name):
        self.update(_make_fallbacks())
        return dict.__getitem__(self, name)


_fallback = _Lazy()


def release_caches(index: int) -> None:
    """Drop the FFT caches of wgpu device ``index``: its twiddle tables and Bluestein constants.

    They keep device memory for the life of the process otherwise (up to 16 tables and 8
    Bluestein entries, ~24 MB each at n ~ 1e6). ``Device.memory_cleanup()`` calls this
    (through burn-signal's ``burn_memory_cleanup`` hook) before the pool releases the freed
    pages; the next FFT of a length rebuilds what it needs.

    Example (``burn.Device("wgpu").memory_cleanup()`` does this for device 0):
        >>> from burn_signal import _wgpu
        >>> _wgpu._TW[(99, "float32", 8)] = "a table of device 99"
        >>> _wgpu.release_caches(99)
        >>> assert not [k for k in _wgpu._TW if k[0] == 99]
    """
    for cache in (_TW, _CHIRP):
        for key in [k for k in cache if k[0] == index]:
            del cache[key]



def _fallback_kernel(name):
    def k(*xs, **kw):
        return _fallback[name](*xs, **kw)
    k.__name__ = f"wgpu_host_signal_{name}"
    return k


NATIVE = {k: _one(k) for k in ("fft", "ifft", "rfft", "irfft")}
NATIVE.update({k: _many(k) for k in ("fftn", "ifftn", "rfftn", "irfftn")})
NATIVE.update({k: _conv(k) for k in ("convolve", "correlate")})
NATIVE.update(fftconvolve=fftconvolve, lfilter=lfilter, sosfilt=sosfilt, stft=stft, istft=istft,
              resample=resample)

KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, scipy, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
