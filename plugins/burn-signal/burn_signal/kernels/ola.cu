// istft's overlap-add in CUDA C (after rounding.cuh), gather form: one thread per output sample
// sums the scaled, windowed segments covering it in ascending order (scipy's order; no atomics, so
// the result is deterministic) and divides by the summed squared window where it exceeds 1e-10.

template <typename T>
__device__ void ola_rows(long long total, long long m, int nper, int step, int nseg, int nfft, int p0,
                         int cplx, const T* xs, const T* w, const T* sc, T* y) {
  long long g = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (g >= total) return;
  long long b = g / m;
  long long p = g - b * m + p0;
  // segment s covers p when s step <= p < s step + nper
  long long s_lo = p >= nper ? (p - nper) / step + 1 : 0;
  long long s_hi = p / step;
  if (s_hi > nseg - 1) s_hi = nseg - 1;
  const T scl = sc[0];
  T re = 0, im = 0, nrm = 0;
  for (long long s = s_lo; s <= s_hi; ++s) {
    const long long t = p - s * step;
    const T wt = w[t];
    const long long e = (b * nfft + t) * nseg + s;
    // (x * scale) * w, as the segments are scaled then windowed
    if (cplx) {
      re = add_(re, mul_(mul_(xs[2 * e], scl), wt));
      im = add_(im, mul_(mul_(xs[2 * e + 1], scl), wt));
    } else {
      re = add_(re, mul_(mul_(xs[e], scl), wt));
    }
    nrm = add_(nrm, mul_(wt, wt));
  }
  if (nrm > (T)1e-10) {
    re = div_(re, nrm);
    im = div_(im, nrm);
  }
  if (cplx) {
    y[2 * g] = re;
    y[2 * g + 1] = im;
  } else {
    y[g] = re;
  }
}

// the entry points, one per dtype
extern "C" __global__ void burn_signal_ola_f32(const long long total, const long long m, const int nper,
    const int step, const int nseg, const int nfft, const int p0, const int cplx, const float* xs,
    const float* w, const float* sc, float* y) {
  ola_rows<float>(total, m, nper, step, nseg, nfft, p0, cplx, xs, w, sc, y);
}
extern "C" __global__ void burn_signal_ola_f64(const long long total, const long long m, const int nper,
    const int step, const int nseg, const int nfft, const int p0, const int cplx, const double* xs,
    const double* w, const double* sc, double* y) {
  ola_rows<double>(total, m, nper, step, nseg, nfft, p0, cplx, xs, w, sc, y);
}
