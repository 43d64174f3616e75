// Plain reductions and scans of one dtype: one work-item per contiguous row of R (or L) values.
// Defines: T (the element type), IS_FLOAT (1 for floating types). Sums and products of
// integers and bool accumulate in int64 (numpy's rule); floats in their own type, sums with
// Kahan compensation so long rows stay within float32 tolerance.
#if IS_FLOAT
#define ACC T
#define ISNAN(v) isnan(v)
#else
#define ACC long
#define ISNAN(v) 0
#endif

__kernel void reduce_sum(int M, int R, __global ACC* out, __global const T* in, int off) {
  int m = get_global_id(0); if (m >= M) return;
  __global const T* p = in + off + (long)m * R;
#if IS_FLOAT
  T s = 0, c = 0;
  for (int r = 0; r < R; ++r) { T y = p[r] - c; T t = s + y; c = isfinite(t) ? (t - s) - y : (T)0; s = t; }
#else
  ACC s = 0; for (int r = 0; r < R; ++r) s += p[r];
#endif
  out[m] = s;
}

__kernel void reduce_prod(int M, int R, __global ACC* out, __global const T* in, int off) {
  int m = get_global_id(0); if (m >= M) return;
  __global const T* p = in + off + (long)m * R;
  ACC s = 1; for (int r = 0; r < R; ++r) s *= p[r]; out[m] = s;
}

// max / min and their arg versions: NaN wins (numpy), the first of equal values is kept
#define SELECT(NAME, CMP) \
__kernel void reduce_##NAME(int M, int R, __global T* out, __global const T* in, int off) { \
  int m = get_global_id(0); if (m >= M) return; \
  __global const T* p = in + off + (long)m * R; \
  T b = p[0]; \
  for (int r = 1; r < R; ++r) { T v = p[r]; if (!(ISNAN(b)) && (ISNAN(v) || v CMP b)) b = v; } \
  out[m] = b; \
} \
__kernel void reduce_arg##NAME(int M, int R, __global long* out, __global const T* in, int off) { \
  int m = get_global_id(0); if (m >= M) return; \
  __global const T* p = in + off + (long)m * R; \
  T b = p[0]; long bi = 0; \
  for (int r = 1; r < R; ++r) { T v = p[r]; if (!(ISNAN(b)) && (ISNAN(v) || v CMP b)) { b = v; bi = r; } } \
  out[m] = bi; \
}
SELECT(max, >)
SELECT(min, <)

__kernel void reduce_any(int M, int R, __global uchar* out, __global const T* in, int off) {
  int m = get_global_id(0); if (m >= M) return;
  __global const T* p = in + off + (long)m * R;
  uchar s = 0; for (int r = 0; r < R; ++r) if (p[r] != 0) { s = 1; break; } out[m] = s;
}

__kernel void reduce_all(int M, int R, __global uchar* out, __global const T* in, int off) {
  int m = get_global_id(0); if (m >= M) return;
  __global const T* p = in + off + (long)m * R;
  uchar s = 1; for (int r = 0; r < R; ++r) if (p[r] == 0) { s = 0; break; } out[m] = s;
}

#define SCAN(NAME, INIT, OP) \
__kernel void scan_##NAME(int M, int L, __global ACC* out, __global const T* in, int off) { \
  int m = get_global_id(0); if (m >= M) return; \
  __global const T* p = in + off + (long)m * L; \
  __global ACC* q = out + (long)m * L; \
  ACC s = INIT; for (int r = 0; r < L; ++r) { s OP p[r]; q[r] = s; } \
}
SCAN(cumsum, 0, +=)
SCAN(cumprod, 1, *=)
