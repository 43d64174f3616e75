// conv2d's column matrix and its adjoint, one dtype. Defines: T (the element type).
// cols[n, (c, kh, kw), (oh, ow)] holds the input pixel each kernel tap reads (zero in the
// padding); col2im gathers, for each input pixel, every tap that read it (no atomics: the
// sums are deterministic).
#define GEO const int C, const int H, const int W, const int KH, const int KW, const int OH, const int OW, \
            const int sh, const int sw, const int pt, const int pl, const int dh, const int dw

__kernel void im2col(const int total, __global T* cols, __global const T* x, const int xoff, GEO) {
  int i = get_global_id(0); if (i >= total) return;
  int ow = i % OW; int r = i / OW; int oh = r % OH; r /= OH;
  int kw = r % KW; r /= KW; int kh = r % KH; r /= KH; int c = r % C; int n = r / C;
  int ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
  cols[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[xoff + ((n * C + c) * H + ih) * W + iw] : (T)0;
}

__kernel void col2im(const int total, __global T* x, __global const T* cols, const int coff, GEO) {
  int i = get_global_id(0); if (i >= total) return;
  int iw = i % W; int r = i / W; int ih = r % H; r /= H; int c = r % C; int n = r / C;
  T s = 0;
  for (int kh = 0; kh < KH; ++kh) {
    int th = ih + pt - kh * dh;
    if (th < 0 || th % sh) continue;
    int oh = th / sh; if (oh >= OH) continue;
    for (int kw = 0; kw < KW; ++kw) {
      int tw = iw + pl - kw * dw;
      if (tw < 0 || tw % sw) continue;
      int ow = tw / sw; if (ow >= OW) continue;
      s += cols[coff + ((((long)n * C + c) * KH + kh) * KW + kw) * OH * OW + oh * OW + ow];
    }
  }
  x[i] = s;
}
