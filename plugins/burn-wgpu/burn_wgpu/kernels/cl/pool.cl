// max / avg pool2d and their gradients, one dtype. Defines: T (the element type), A (the
// accumulator of averages), LOW (the value padding reads as in a max), IS_FLOAT.
// Gradients gather from every window that covers their pixel instead of scattering into it
// (no atomics, sums in a fixed order); max-pool routes a window's gradient to its first
// maximum in row-major order, as flex and PyTorch do.
#if IS_FLOAT
#define ISNAN(v) isnan(v)
#else
#define ISNAN(v) 0
#endif
#define GEO const int H, const int W, const int KH, const int KW, const int OH, const int OW, \
            const int sh, const int sw, const int pt, const int pl, const int dh, const int dw

inline T px(__global const T* x, int ih, int iw, GEO) {
  return (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[ih * W + iw] : (T)LOW;
}
__kernel void max_pool(const int total, __global T* out, __global const T* x, GEO) {
  int i = get_global_id(0); if (i >= total) return;
  int ow = i % OW; int r = i / OW; int oh = r % OH; int nc = r / OH;
  __global const T* xp = x + (long)nc * H * W;
  T m = (T)LOW;
  for (int a = 0; a < KH; ++a) for (int b = 0; b < KW; ++b) {
    T v = px(xp, oh * sh - pt + a * dh, ow * sw - pl + b * dw, H, W, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw);
    if (v > m || ISNAN(v)) m = v;
  }
  out[i] = m;
}
__kernel void max_pool_grad(const int total, __global T* gx, __global const T* x, __global const T* out,
                            __global const T* g, GEO) {
  int i = get_global_id(0); if (i >= total) return;
  int iw = i % W; int r = i / W; int ih = r % H; int nc = r / H;
  __global const T* xp = x + (long)nc * H * W;
  __global const T* op = out + (long)nc * OH * OW;
  __global const T* gp = g + (long)nc * OH * OW;
  T s = 0;
  for (int a = 0; a < KH; ++a) {
    int th = ih + pt - a * dh;
    if (th < 0 || th % sh) continue;
    int oh = th / sh; if (oh >= OH) continue;
    for (int b = 0; b < KW; ++b) {
      int tw = iw + pl - b * dw;
      if (tw < 0 || tw % sw) continue;
      int ow = tw / sw; if (ow >= OW) continue;
      T m = op[oh * OW + ow];
      int first = -1;
      for (int q = 0; q < KH * KW && first < 0; ++q) {
        T v = px(xp, oh * sh - pt + (q / KW) * dh, ow * sw - pl + (q % KW) * dw, H, W, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw);
        if (v == m) first = q;
      }
      if (first == a * KW + b) s += gp[oh * OW + ow];
    }
  }
  gx[i] = s;
}
inline A avg_div(int oh, int ow, int inc, int H, int W, int KH, int KW, int sh, int sw, int pt, int pl) {
  if (inc) return (A)(KH * KW);
  int h0 = oh * sh - pt, w0 = ow * sw - pl;
  int nh = min(h0 + KH, H) - max(h0, 0), nw = min(w0 + KW, W) - max(w0, 0);
  return (A)(max(nh, 0) * max(nw, 0));
}
__kernel void avg_pool(const int total, __global T* out, __global const T* x, const int inc, GEO) {
  int i = get_global_id(0); if (i >= total) return;
  int ow = i % OW; int r = i / OW; int oh = r % OH; int nc = r / OH;
  __global const T* xp = x + (long)nc * H * W;
  A s = 0;
  for (int a = 0; a < KH; ++a) for (int b = 0; b < KW; ++b) {
    int ih = oh * sh - pt + a, iw = ow * sw - pl + b;
    if (ih >= 0 && ih < H && iw >= 0 && iw < W) s += (A)xp[ih * W + iw];
  }
  out[i] = (T)(s / avg_div(oh, ow, inc, H, W, KH, KW, sh, sw, pt, pl));
}
__kernel void avg_pool_grad(const int total, __global T* gx, __global const T* g, const int inc, GEO) {
  int i = get_global_id(0); if (i >= total) return;
  int iw = i % W; int r = i / W; int ih = r % H; int nc = r / H;
  __global const T* gp = g + (long)nc * OH * OW;
  A s = 0;
  for (int a = 0; a < KH; ++a) {
    int th = ih + pt - a;
    if (th < 0 || th % sh) continue;
    int oh = th / sh; if (oh >= OH) continue;
    for (int b = 0; b < KW; ++b) {
      int tw = iw + pl - b;
      if (tw < 0 || tw % sw) continue;
      int ow = tw / sw; if (ow >= OW) continue;
      s += (A)gp[oh * OW + ow] / avg_div(oh, ow, inc, H, W, KH, KW, sh, sw, pt, pl);
    }
  }
  gx[i] = (T)s;
}
