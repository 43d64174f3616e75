// Creation kernels of one dtype. Defines: T (the element type), F (the float type of the
// start / step arithmetic: double where the device has fp64, else float).

__kernel void arange_i(int n, __global T* out, long start, long step) {
  int i = get_global_id(0); if (i < n) out[i] = (T)(start + (long)i * step);
}

__kernel void arange_f(int n, __global T* out, F start, F step) {
  int i = get_global_id(0); if (i < n) out[i] = (T)(start + (F)i * step);
}

// numpy's formula: i * step + start, the last value exactly stop when endpoint is set
__kernel void linspace(int n, __global T* out, F start, F step, F stop, int endpoint) {
  int i = get_global_id(0); if (i >= n) return;
  F v = (F)i * step + start;
  if (endpoint && n > 1 && i == n - 1) v = stop;
  out[i] = (T)v;
}

__kernel void eye(int n, __global T* out, int m, int k) {
  int i = get_global_id(0); if (i >= n) return;
  int r = i / m, c = i % m;
  out[i] = (c - r == k) ? (T)1 : (T)0;
}
