// burn.signal's lfilter and sosfilt in CUDA C (after rounding.cuh): one thread per signal row r of
// nb = outer * inner rows of a C-contiguous (outer, n, inner) layout, the filter axis in the middle
// (neighbouring threads read neighbouring addresses when inner > 1), the state in zs[j * nb + r]
// (coalesced). mul_/add_/sub_ keep scipy's exact order and rounding.

// this thread's signal row r (false past the last, nb) and its outer and inner index o, i
__device__ __forceinline__ bool signal_row(long long nb, long long inner, long long* r, long long* o, long long* i) {
  *r = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (*r >= nb) return false;
  *o = *r / inner;
  *i = *r - *o * inner;
  return true;
}

// scipy.signal.lfilter's y (direct form II transposed, scipy's _linear_filter): co holds b / a[0]
// then a / a[0], K + 1 each (zero-padded); zi (outer, K, inner) when has_zi
template <typename T>
__device__ void lfilter_rows(long long nb, long long n, long long inner, int K, const T* co,
                             const T* x, const T* zi, int has_zi, T* y, T* zs) {
  long long r, o, i;
  if (!signal_row(nb, inner, &r, &o, &i)) return;
  const T* xr = x + o * n * inner + i;
  T* yr = y + o * n * inner + i;
  T* z = zs + r;
  const T* ca = co + K + 1;
  for (int j = 0; j < K; ++j) z[j * nb] = has_zi ? zi[(o * K + j) * inner + i] : (T)0;
  const T b0 = co[0];
  for (long long t = 0; t < n; ++t) {
    const T xv = xr[t * inner];
    const T yv = K > 0 ? add_(z[0], mul_(b0, xv)) : mul_(xv, b0);
    for (int j = 0; j + 1 < K; ++j)
      z[j * nb] = sub_(add_(z[(j + 1) * nb], mul_(xv, co[j + 1])), mul_(yv, ca[j + 1]));
    if (K > 0) z[(K - 1) * nb] = sub_(mul_(xv, co[K]), mul_(yv, ca[K]));
    yr[t * inner] = yv;
  }
}

// scipy.signal.sosfilt (scipy's _sosfilt): so (ns, 6) rows already divided by their a0;
// zi and zf (ns, outer, 2, inner); the state zs[(2 s + j) * nb + r]
template <typename T>
__device__ void sosfilt_rows(long long nb, long long n, long long inner, int ns, const T* so,
                             const T* x, const T* zi, int has_zi, T* y, T* zs, T* zf) {
  long long r, o, i;
  if (!signal_row(nb, inner, &r, &o, &i)) return;
  const T* xr = x + o * n * inner + i;
  T* yr = y + o * n * inner + i;
  T* z = zs + r;
  for (int s = 0; s < ns; ++s)
    for (int j = 0; j < 2; ++j)
      z[(2 * s + j) * nb] = has_zi ? zi[((long long)s * nb * 2) + (o * 2 + j) * inner + i] : (T)0;
  for (long long t = 0; t < n; ++t) {
    T v = xr[t * inner];
    for (int s = 0; s < ns; ++s) {
      const T* c = so + 6 * s;
      const T yv = add_(mul_(c[0], v), z[2 * s * nb]);
      z[2 * s * nb] = add_(sub_(mul_(c[1], v), mul_(c[4], yv)), z[(2 * s + 1) * nb]);
      z[(2 * s + 1) * nb] = sub_(mul_(c[2], v), mul_(c[5], yv));
      v = yv;
    }
    yr[t * inner] = v;
  }
  if (has_zi)
    for (int s = 0; s < ns; ++s)
      for (int j = 0; j < 2; ++j)
        zf[((long long)s * nb * 2) + (o * 2 + j) * inner + i] = z[(2 * s + j) * nb];
}

// the entry points, one per op and dtype (burn_signal._cuda launches them by name)
extern "C" __global__ void burn_signal_lfilter_f32(const long long nb, const long long n,
    const long long inner, const int K, const float* co, const float* x, const float* zi, const int has_zi,
    float* y, float* zs) {
  lfilter_rows<float>(nb, n, inner, K, co, x, zi, has_zi, y, zs);
}
extern "C" __global__ void burn_signal_sosfilt_f32(const long long nb, const long long n,
    const long long inner, const int ns, const float* so, const float* x, const float* zi,
    const int has_zi, float* y, float* zs, float* zf) {
  sosfilt_rows<float>(nb, n, inner, ns, so, x, zi, has_zi, y, zs, zf);
}
extern "C" __global__ void burn_signal_lfilter_f64(const long long nb, const long long n,
    const long long inner, const int K, const double* co, const double* x, const double* zi,
    const int has_zi, double* y, double* zs) {
  lfilter_rows<double>(nb, n, inner, K, co, x, zi, has_zi, y, zs);
}
extern "C" __global__ void burn_signal_sosfilt_f64(const long long nb, const long long n,
    const long long inner, const int ns, const double* so, const double* x, const double* zi,
    const int has_zi, double* y, double* zs, double* zf) {
  sosfilt_rows<double>(nb, n, inner, ns, so, x, zi, has_zi, y, zs, zf);
}
