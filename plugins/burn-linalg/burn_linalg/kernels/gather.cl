// burn-linalg's diagonal on wgpu: a strided gather copying elements bit for bit, so one program per
// element size serves every dtype. Defines set by the host: E, an unsigned type of the element's size.
// out[b, j] = x[off + b * sb + (j + r0) * sr + (j + c0) * sc]
__kernel void diag(long total, int K, long sb, long sr, long sc, long off, __global const E* x,
                   __global E* out) {
  long g = get_global_id(0); if (g >= total) return;
  long b = g / K, j = g % K;
  out[g] = x[off + b * sb + j * (sr + sc)];
}
