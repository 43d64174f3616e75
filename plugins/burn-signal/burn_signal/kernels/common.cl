// What both of burn.signal's OpenCL programs (signal.cl and fft_pass.cl) start with.
// The host defines T (float or double) and FP64 when T is double; C is T's complex pair.
#ifdef FP64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif
#define PAIR_(t) t##2
#define PAIR(t) PAIR_(t)
#define C PAIR(T)

inline C cmul(C a, C b) { return (C)(a.x * b.x - a.y * b.y, a.x * b.y + a.y * b.x); }
// exp(i * pi * num / den), argument reduced exactly in integers first
inline C cis(long num, long den) {
  long r = num % (2 * den); if (r < 0) r += 2 * den;
  T t = (T)r / (T)den;
  return (C)(cospi(t), sinpi(t));
}

// the batch offset of row r over up to 4 merged batch dims (d0 implied), 32-bit index math
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
