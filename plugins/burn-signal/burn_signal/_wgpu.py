"""wgpu kernels of burn.signal: an OpenCL FFT and direct convolution; host fallbacks for the rest.

Native: ``fft``, ``ifft``, ``rfft``, ``irfft`` and their n-D forms
(``fftn``... as 1-D transforms along each axis), complex64 (complex128 where
the device has fp64), batched over every other axis, inputs read through
their strides. Power-of-two lengths run radix-4 Stockham passes (plus one
radix-2 pass for odd powers; one launch per pass, ping-pong buffers, no bit
reversal, twiddles from a cached table); every other length runs Bluestein's
chirp-z algorithm on top of them (a power-of-two convolution of length
>= 2n - 1). An even-length ``rfft`` is one half-length complex FFT of the
samples packed in pairs plus a split step. ``convolve`` and ``correlate``
(float32/float64, up to 4 dims, every mode) are a direct convolution kernel.
One OpenCL program per dtype holds every kernel; lengths, batch and strides
are run-time arguments, so it compiles once per device (then the disk cache).

Everything else (fftconvolve, lfilter, sosfilt, stft, istft, resample),
more than 4 batch dims, and float16 or complex convolution run as declared
host fallbacks: the inputs are copied to the host, the flex (scipy) kernel
runs, the results are copied back; they are registered with
``host_fallback=True`` (``burn info`` lists them) and the copies are counted
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
    # rfft of even length: one n/2-point complex FFT of the samples packed in pairs, then a split step
    half = kind == "rfft" and n % 2 == 0 and n >= 4
    if kind == "irfft":
        mode, m = 2, m_in
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

KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, scipy, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
