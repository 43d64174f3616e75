"""wgpu kernels of burn.signal: an OpenCL FFT, convolutions, IIR filters, the STFT and resampling.

Native: ``fft``, ``ifft``, ``rfft``, ``irfft`` and their n-D forms
(``fftn``... as 1-D transforms along each axis), complex64 (complex128 where
the device has fp64), batched over every other axis, inputs read through
their strides. Power-of-two lengths run radix-4 Stockham passes (plus one
radix-2 pass for odd powers; one launch per pass, ping-pong buffers, no bit
reversal, twiddles from a cached table); every other length runs Bluestein's
chirp-z algorithm on top of them (a power-of-two convolution of length
>= 2n - 1). An even-length ``rfft`` is one half-length complex FFT of the
samples packed in pairs plus a split step; an even-length ``irfft`` is the
mirror image (a merge step in the load, one half-length inverse FFT).

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
__kernel void load(int mode, int m, int n, long nb, __global const T* in, long off, long sj,
                   int d1, int d2, int d3, long s0, long s1, long s2, long s3, __global C* out) {{
  long g = get_global_id(0); if (g >= nb * n) return;
  long b = g / n; int j = g % n;
  long r = b;
  long i3 = r % d3; r /= d3; long i2 = r % d2; r /= d2; long i1 = r % d1; r /= d1;
  long base = off + r * s0 + i1 * s1 + i2 * s2 + i3 * s3;
  C v = (C)(0, 0);
  if (mode == 0) {{ if (j < m) v.x = in[base + j * sj]; }}
  else if (mode == 3) {{ if (2 * j < m) v.x = in[base + 2 * j * sj]; if (2 * j + 1 < m) v.y = in[base + (2 * j + 1) * sj]; }}
  else if (mode == 1) {{ if (j < m) {{ long e = 2 * (base + j * sj); v = (C)(in[e], in[e + 1]); }} }}
  else if (mode == 4) {{
    // irfft of even length 2n as one n-point inverse FFT: z = x[2t] + i x[2t+1] has the spectrum
    // Z_j = (X_j + X_(j+n)) + i W^-j (X_j - X_(j+n)), X_(j+n) = conj X_(n-j); X_0, X_n taken real (scipy)
    C xa = (C)(0, 0), xb = (C)(0, 0);
    if (j < m) {{ long e = 2 * (base + j * sj); xa = (C)(in[e], j == 0 ? 0 : in[e + 1]); }}
    int k = n - j;
    if (k < m) {{ long e = 2 * (base + k * sj); xb = (C)(in[e], k == n ? 0 : -in[e + 1]); }}
    C d = cmul(cis(j, n), xa - xb);
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

// one radix-2 Stockham pass over rows of length n (power of two); p = 1, 2, 4, ... n/2.
// Twiddles come from a table of length n * ts (read with stride ts); sign +1 conjugates them.
__kernel void r2(int n, int p, long nb, int sign, __global const C* x, __global C* y,
                 __global const C* tw, int ts) {{
  long g = get_global_id(0); int h = n >> 1; if (g >= nb * h) return;
  long b = g / h; int i = g % h;
  int k = i & (p - 1);
  x += b * n; y += b * n;
  C u0 = x[i], u1 = x[i + h];
  C w = tw[(long)k * (n / (2 * p)) * ts]; if (sign > 0) w.y = -w.y;
  u1 = cmul(u1, w);
  int j = ((i - k) << 1) + k;
  y[j] = u0 + u1; y[j + p] = u0 - u1;
}}

// one radix-4 Stockham pass: p = span done so far (4p <= n)
__kernel void r4(int n, int p, long nb, int sign, __global const C* x, __global C* y,
                 __global const C* tw, int ts) {{
  long g = get_global_id(0); int q = n >> 2; if (g >= nb * q) return;
  long b = g / q; int i = g % q;
  int k = i & (p - 1);
  x += b * n; y += b * n;
  long st = (long)k * (n / (4 * p)) * ts;
  C w1 = tw[st], w2 = tw[2 * st], w3 = tw[3 * st];
  if (sign > 0) {{ w1.y = -w1.y; w2.y = -w2.y; w3.y = -w3.y; }}
  C u0 = x[i], u1 = cmul(x[i + q], w1), u2 = cmul(x[i + 2 * q], w2), u3 = cmul(x[i + 3 * q], w3);
  C a = u0 + u2, bb = u0 - u2, c = u1 + u3, d = u1 - u3;
  C id = (C)(-d.y, d.x) * (T)sign;     // sign * i * d
  int j = ((i - k) << 2) + k;
  y[j] = a + c; y[j + p] = bb + id; y[j + 2 * p] = a - c; y[j + 3 * p] = bb - id;
}}

// rfft of even length n from the n/2-point FFT z of the packed pairs (x[2j], x[2j+1]):
// X_k = (Z_k + conj Z_(h-k)) / 2 - i/2 W^k (Z_k - conj Z_(h-k)), k = 0..m-1 (m <= h + 1)
__kernel void rpost(int n, int m, long nb, long inner, T scale, __global const C* z,
                    __global T* y, __global const C* tw) {{
  long g = get_global_id(0); if (g >= nb * m) return;
  long b = g / m; int k = g % m; int h = n >> 1;
  C zk = z[b * h + (k % h)], zc = z[b * h + ((h - k) % h)];
  zc.y = -zc.y;
  C e = (zk + zc) * (T)0.5, o = zk - zc;
  o = (C)(o.y, -o.x) * (T)0.5;        // -i/2 (zk - zc)
  C v = (e + cmul(tw[k % n], o)) * scale;
  long d = (b / inner) * m * inner + (long)k * inner + b % inner;
  y[2 * d] = v.x; y[2 * d + 1] = v.y;
}}

// Bluestein: a = x * w, w_k = exp(sign * i pi k^2 / n), zero-padded to m
__kernel void chirp_in(int n, int m, long nb, int sign, __global const C* x, __global C* a) {{
  long g = get_global_id(0); if (g >= nb * m) return;
  long b = g / m; int k = g % m;
  C v = (C)(0, 0);
  if (k < n) v = cmul(x[b * n + k], cis(sign * (long)k * k, n));
  a[g] = v;
}}

// the chirp filter conj(w) laid out circularly over m
__kernel void chirp_filter(int n, int m, int sign, __global C* f) {{
  int j = get_global_id(0); if (j >= m) return;
  int k = j < n ? j : (j > m - n ? m - j : -1);
  f[j] = k < 0 ? (C)(0, 0) : cis(-sign * (long)k * k, n);
}}

__kernel void cmul_rows(int m, long nb, __global C* a, __global const C* f) {{
  long g = get_global_id(0); if (g >= nb * m) return;
  a[g] = cmul(a[g], f[g % m]);
}}

// X_k = w_k * c_k * scale (scale includes the 1/m of the inverse transform)
__kernel void chirp_out(int n, int m, long nb, int sign, T scale, __global const C* c, __global C* y) {{
  long g = get_global_id(0); if (g >= nb * n) return;
  long b = g / n; int k = g % n;
  y[g] = cmul(c[b * m + k], cis(sign * (long)k * k, n)) * scale;
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
__kernel void irpost(int h, long nb, long inner, T scale, __global const C* z, __global T* y) {{
  long g = get_global_id(0); if (g >= nb * h) return;
  long b = g / h; int t = g % h;
  C v = z[g] * scale;
  long d = (b / inner) * 2 * h * inner + (long)(2 * t) * inner + b % inner;
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
__kernel void frames(int n, int nper, int step, int pl, int nseg, int L, int pk, int cplx, long total,
                     __global const T* x, long ox, long sx, int d1, int d2, int d3,
                     long s0, long s1, long s2, long s3, __global const T* w, long ow, long sw,
                     __global const T* isc, __global C* out) {{
  long g = get_global_id(0); if (g >= total) return;
  long row = g / L; int j = g % L;
  long b = row / nseg; int sg = row % nseg;
  long base = ox + row_off(b, d1, d2, d3, s0, s1, s2, s3);
  T sc = isc[0];
  C v = (C)(0, 0);
  for (int q = 0; q < (pk ? 2 : 1); ++q) {{
    int t = pk ? 2 * j + q : j;
    long i = (long)sg * step + t - pl;
    if (t < nper && i >= 0 && i < n) {{
      T ws = w[ow + t * sw] * sc;
      if (cplx) {{ long e = 2 * (base + i * sx); v = (C)(x[e] * ws, x[e + 1] * ws); }}
      else if (q == 0) v.x = x[base + i * sx] * ws;
      else v.y = x[base + i * sx] * ws;
    }}
  }}
  out[g] = v;
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
__kernel void store(int n, int m, long nb, long inner, T scale, int real_out, __global const C* x,
                    __global T* y) {{
  long g = get_global_id(0); if (g >= nb * m) return;
  long b = g / m; int j = g % m;
  C v = x[b * n + j] * scale;
  long d = (b / inner) * m * inner + (long)j * inner + b % inner;
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


def _load(x, axis, m, n, mode, real):
    """Rows (nb, n) complex: ``x`` with ``axis`` moved last, cropped/padded to n (or Hermitian-extended)."""
    from burn_wgpu.tensor import empty
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
        return None, bshape
    merged = [(1, 0)] * (_MAX_BATCH_DIMS - len(merged)) + merged
    nb = 1
    for s in bshape:
        nb *= s
    out = empty(dc, (nb, n), _CPLX[real])
    (d0, s0), (d1, s1), (d2, s2), (d3, s3) = merged
    dc.launch(_k(dc, real, "load"), nb * n,
              (_i(mode), _i(m), _i(n), _l(nb), x.buf, _l(x.offset), _l(x.strides[axis]),
               _i(d1), _i(d2), _i(d3), _l(s0), _l(s1), _l(s2), _l(s3), out.buf))
    return out, bshape


def _nb(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _pow2(n):
    return n & (n - 1) == 0


_TW: dict = {}     # (device, dtype, n) -> twiddle table (kept: tables are reused across calls)


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


def _c2c(dc, real, a, n, nb, sign):
    """Unnormalized DFT of the rows of ``a`` (nb, n), sign -1 forward, +1 inverse; may reuse ``a``."""
    from burn_wgpu.tensor import empty
    if n == 1:
        return a
    if _pow2(n):
        tw = _twiddles(dc, real, n)
        tmp = empty(dc, (nb, n), _CPLX[real])
        src, dst = a, tmp
        p = 1
        if n.bit_length() % 2 == 0:      # log2(n) odd: one radix-2 pass, radix-4 for the rest
            dc.launch(_k(dc, real, "r2"), nb * (n // 2), (_i(n), _i(p), _l(nb), _i(sign), src.buf, dst.buf,
                                                          tw.buf, _i(1)))
            src, dst = dst, src
            p = 2
        r4 = _k(dc, real, "r4")
        while p < n:
            dc.launch(r4, nb * (n // 4), (_i(n), _i(p), _l(nb), _i(sign), src.buf, dst.buf, tw.buf, _i(1)))
            src, dst = dst, src
            p *= 4
        return src
    m = 1 << (2 * n - 2).bit_length()
    Tn = np.float64 if real == "float64" else np.float32
    buf = empty(dc, (nb, m), _CPLX[real])
    dc.launch(_k(dc, real, "chirp_in"), nb * m, (_i(n), _i(m), _l(nb), _i(sign), a.buf, buf.buf))
    f = empty(dc, (1, m), _CPLX[real])
    dc.launch(_k(dc, real, "chirp_filter"), m, (_i(n), _i(m), _i(sign), f.buf))
    fa = _c2c(dc, real, buf, m, nb, -1)
    ff = _c2c(dc, real, f, m, 1, -1)
    dc.launch(_k(dc, real, "cmul_rows"), nb * m, (_i(m), _l(nb), fa.buf, ff.buf))
    c = _c2c(dc, real, fa, m, nb, +1)
    out = empty(dc, (nb, n), _CPLX[real])
    dc.launch(_k(dc, real, "chirp_out"), nb * n, (_i(n), _i(m), _l(nb), _i(sign), Tn(1.0 / m), c.buf, out.buf))
    return out


def _scale(norm, n, inverse):
    if norm == "ortho":
        return 1.0 / math.sqrt(n)
    return 1.0 / n if (norm == "forward") != inverse else 1.0


def _fft1(x, n, axis, norm, kind):
    """One 1-D transform on the device; kind: fft, ifft, rfft, irfft. None if it must fall back."""
    from burn_wgpu.tensor import empty
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
    a, bshape = _load(x, axis, m, n // 2 if half else n, mode, real)
    if a is None:
        return None
    nb = a.shape[0]
    inverse = kind in ("ifft", "irfft")
    y = _c2c(dc, real, a, n // 2 if half else n, nb, +1 if inverse else -1)
    m_out = n // 2 + 1 if kind == "rfft" else n
    out_dt = real if kind == "irfft" else _CPLX[real]
    shape = list(x.shape)
    shape[axis] = m_out
    out = empty(dc, tuple(shape), out_dt)
    inner = 1
    for s in x.shape[axis + 1:]:
        inner *= s
    Tn = np.float64 if real == "float64" else np.float32
    if half and kind == "irfft":
        dc.launch(_k(dc, real, "irpost"), nb * (n // 2),
                  (_i(n // 2), _l(nb), _l(inner), Tn(_scale(norm, n, True)), y.buf, out.buf))
        return out
    if half:
        dc.launch(_k(dc, real, "rpost"), nb * m_out,
                  (_i(n), _i(m_out), _l(nb), _l(inner), Tn(_scale(norm, n, False)), y.buf, out.buf,
                   _twiddles(dc, real, n).buf))
        return out
    # contiguous output: element-wise kernels cannot copy complex views yet
    dc.launch(_k(dc, real, "store"), nb * m_out,
              (_i(n), _i(m_out), _l(nb), _l(inner), Tn(_scale(norm, n, inverse)), _i(kind == "irfft"),
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
        a.dc.launch(_k(a.dc, real, "cmul_rows"), fa.size, (_i(fb.size), _l(fa.size // fb.size), fa.buf, fb.buf))
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
    rows = empty(dc, (nrows, L), _CPLX[real])
    (d1, d2, d3), (xs,) = lay
    dc.launch(_k(dc, real, "frames"), nrows * L,
              (_i(n), _i(nper), _i(step), _i(pl), _i(nseg), _i(L), _i(pk), _i(cplx), _l(nrows * L), x.buf,
               _l(x.offset), _l(x.strides[-1]), d1, d2, d3, *xs, win.buf, _l(win.offset), _l(win.strides[0]),
               isc.buf, rows.buf))
    y = _c2c(dc, real, rows, L, nrows, -1)
    nfreq = nfft // 2 + 1 if onesided else nfft
    out = empty(dc, tuple(batch) + (nfreq, nseg), _CPLX[real])
    # rows are (signal, segment): with inner = nseg the last step writes (signal, freq, segment)
    if pk:
        dc.launch(_k(dc, real, "rpost"), nrows * nfreq,
                  (_i(nfft), _i(nfreq), _l(nrows), _l(nseg), Tn(1.0), y.buf, out.buf, _twiddles(dc, real, nfft).buf))
    else:
        dc.launch(_k(dc, real, "store"), nrows * nfreq,
                  (_i(nfft), _i(nfreq), _l(nrows), _l(nseg), Tn(1.0), _i(0), y.buf, out.buf))
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
