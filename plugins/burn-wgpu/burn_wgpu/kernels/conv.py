"""conv2d and its gradients on the device: im2col / col2im kernels around the matmul kernels.

``cols[n, (c, kh, kw), (oh, ow)]`` holds the input pixel each kernel tap reads
(zero in the padding), so a convolution is one (batched) matmul per group;
the input gradient is the transposed matmul followed by ``col2im``, which
gathers (never scatters: no atomics, deterministic sums) every tap that read
each input pixel.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.codegen import OPENCL
from burn.ops.conv import conv_out_hw

from ..native import empty
from .linear import matmul
from .movement import _slice_view, contiguous, copy_into, permute, reshape


@lru_cache(maxsize=None)
def _source(dtype: str, fp64: bool) -> str:
    T = OPENCL.ctype(dtype)
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""
    geo = ("const int C, const int H, const int W, const int KH, const int KW, const int OH, const int OW, "
           "const int sh, const int sw, const int pt, const int pl, const int dh, const int dw")
    return pre + f"""
__kernel void im2col(const int total, __global {T}* cols, __global const {T}* x, const int xoff, {geo}) {{
  int i = get_global_id(0); if (i >= total) return;
  int ow = i % OW; int r = i / OW; int oh = r % OH; r /= OH;
  int kw = r % KW; r /= KW; int kh = r % KH; r /= KH; int c = r % C; int n = r / C;
  int ih = oh * sh - pt + kh * dh, iw = ow * sw - pl + kw * dw;
  cols[i] = (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[xoff + ((n * C + c) * H + ih) * W + iw] : ({T})0;
}}
__kernel void col2im(const int total, __global {T}* x, __global const {T}* cols, const int coff, {geo}) {{
  int i = get_global_id(0); if (i >= total) return;
  int iw = i % W; int r = i / W; int ih = r % H; r /= H; int c = r % C; int n = r / C;
  {T} s = 0;
  for (int kh = 0; kh < KH; ++kh) {{
    int th = ih + pt - kh * dh;
    if (th < 0 || th % sh) continue;
    int oh = th / sh; if (oh >= OH) continue;
    for (int kw = 0; kw < KW; ++kw) {{
      int tw = iw + pl - kw * dw;
      if (tw < 0 || tw % sw) continue;
      int ow = tw / sw; if (ow >= OW) continue;
      s += cols[coff + ((((long)n * C + c) * KH + kh) * KW + kw) * OH * OW + oh * OW + ow];
    }}
  }}
  x[i] = s;
}}"""


def _geo(C, H, W, KH, KW, OH, OW, stride, padding, dilation):
    i32 = np.int32
    return [i32(C), i32(H), i32(W), i32(KH), i32(KW), i32(OH), i32(OW), i32(stride[0]), i32(stride[1]),
            i32(padding[0]), i32(padding[2]), i32(dilation[0]), i32(dilation[1])]


def _out_hw(H, W, kernel, stride, padding, dilation):
    return conv_out_hw((0, 0, H, W), kernel, stride, padding, dilation)


def _im2col(x, kernel, stride, padding, dilation, out_hw):
    dc = x.dc
    x = contiguous(x)
    N, C, H, W = x.shape
    (KH, KW), (OH, OW) = kernel, out_hw
    cols = empty(dc, (N, C * KH * KW, OH * OW), x.dtype)
    total = cols.size
    if total:
        k = dc.kernel(_source(x.dtype, dc.fp64), "im2col")
        dc.launch(k, total, [np.int32(total), cols.buf, x.buf, np.int32(x.offset)]
                  + _geo(C, H, W, KH, KW, OH, OW, stride, padding, dilation))
    return cols


def _group_views(t, axis, groups):
    """``groups`` views of ``t`` split evenly along ``axis``."""
    n = t.shape[axis] // groups
    out = []
    for g in range(groups):
        starts = [0] * t.ndim
        stops = list(t.shape)
        starts[axis], stops[axis] = g * n, (g + 1) * n
        out.append(_slice_view(t, starts, stops, [1] * t.ndim))
    return out


def _per_group(groups, fn, out, axis, *parts):
    """Run ``fn`` per group and write each result into its slice of ``out``."""
    if groups == 1:
        return fn(*[p[0] for p in parts])
    for g, view in enumerate(_group_views(out, axis, groups)):
        copy_into(view, fn(*[p[g] for p in parts]))
    return out


def conv2d(x, w, *, stride, padding, dilation, groups):
    N, C, H, W = x.shape
    Cout, Cg, KH, KW = w.shape
    OH, OW = _out_hw(H, W, (KH, KW), stride, padding, dilation)
    cols = _im2col(x, (KH, KW), stride, padding, dilation, (OH, OW))      # [N, C*KH*KW, P]
    wm = reshape(w, shape=(Cout, Cg * KH * KW))
    out = empty(x.dc, (N, Cout, OH * OW), x.dtype)
    y = _per_group(groups, lambda wg, cg: matmul(wg, cg), out, 1,
                   _group_views(wm, 0, groups), _group_views(cols, 1, groups))
    return reshape(y, shape=(N, Cout, OH, OW))


def conv2d_grad_weight(x, g, *, stride, padding, dilation, groups, kernel_hw):
    N, C, H, W = x.shape
    Cout, OH, OW = g.shape[1], g.shape[2], g.shape[3]
    KH, KW = kernel_hw
    cols = _im2col(x, (KH, KW), stride, padding, dilation, (OH, OW))      # [N, C*KH*KW, P]
    # sum over images inside one matmul: [Cout, N*P] @ [N*P, C*KH*KW]
    gm = reshape(contiguous(permute(reshape(g, shape=(N, Cout, OH * OW)), axes=(1, 0, 2))),
                 shape=(Cout, N * OH * OW))
    ct = reshape(contiguous(permute(cols, axes=(0, 2, 1))), shape=(N * OH * OW, C * KH * KW))
    Cg = C // groups
    out = empty(x.dc, (Cout, Cg * KH * KW), x.dtype)
    gw = _per_group(groups, lambda a, b: matmul(a, b), out, 0,
                    _group_views(gm, 0, groups), _group_views(ct, 1, groups))
    return reshape(gw, shape=(Cout, Cg, KH, KW))


def conv2d_grad_input(g, w, *, stride, padding, dilation, groups, input_hw):
    N, Cout, OH, OW = g.shape
    _, Cg, KH, KW = w.shape
    H, W = input_hw
    C = Cg * groups
    dc = g.dc
    wt = permute(reshape(w, shape=(Cout, Cg * KH * KW)), axes=(1, 0))     # [Cg*KH*KW, Cout]
    gm = reshape(g, shape=(N, Cout, OH * OW))
    out = empty(dc, (N, C * KH * KW, OH * OW), g.dtype)
    cols = _per_group(groups, lambda a, b: matmul(a, b), out, 1,
                      _group_views(wt, 1, groups), _group_views(gm, 1, groups))
    cols = contiguous(cols)
    gx = empty(dc, (N, C, H, W), g.dtype)
    total = gx.size
    if total:
        k = dc.kernel(_source(g.dtype, dc.fp64), "col2im")
        dc.launch(k, total, [np.int32(total), gx.buf, cols.buf, np.int32(cols.offset)]
                  + _geo(C, H, W, KH, KW, OH, OW, stride, padding, dilation))
    return gx


def conv_kernels() -> dict:
    return {"conv2d": conv2d, "conv2d_grad_weight": conv2d_grad_weight, "conv2d_grad_input": conv2d_grad_input}


# -- pooling -------------------------------------------------------------------------------------
# One work-item per output (forward) or per input element (gradients): the gradients gather
# from every window that covers their pixel instead of scattering into it (no atomics, sums in
# a fixed order). Max-pool routes a window's gradient to its first maximum in row-major
# order, as flex and PyTorch do.

@lru_cache(maxsize=None)
def _pool_source(dtype: str, fp64: bool) -> str:
    T = OPENCL.ctype(dtype)
    isf = dtype.startswith("float")
    A = "double" if dtype == "float64" else "float"        # accumulator of the average
    low = "-INFINITY" if isf else {"int8": "CHAR_MIN", "uint8": "0", "int32": "INT_MIN",
                                    "int64": "LONG_MIN"}.get(dtype, "0")
    nan = "isnan" if isf else "(int)"
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""
    if dtype == "float16":
        pre += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    geo = ("const int H, const int W, const int KH, const int KW, const int OH, const int OW, "
           "const int sh, const int sw, const int pt, const int pl, const int dh, const int dw")
    isnan_v = "isnan(v)" if isf else "0"
    return pre + f"""
inline {T} px(__global const {T}* x, int ih, int iw, {geo}) {{
  return (ih >= 0 && ih < H && iw >= 0 && iw < W) ? x[ih * W + iw] : ({T}){low};
}}
__kernel void max_pool(const int total, __global {T}* out, __global const {T}* x, {geo}) {{
  int i = get_global_id(0); if (i >= total) return;
  int ow = i % OW; int r = i / OW; int oh = r % OH; int nc = r / OH;
  __global const {T}* xp = x + (long)nc * H * W;
  {T} m = ({T}){low};
  for (int a = 0; a < KH; ++a) for (int b = 0; b < KW; ++b) {{
    {T} v = px(xp, oh * sh - pt + a * dh, ow * sw - pl + b * dw, H, W, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw);
    if (v > m || {isnan_v}) m = v;
  }}
  out[i] = m;
}}
__kernel void max_pool_grad(const int total, __global {T}* gx, __global const {T}* x, __global const {T}* out,
                            __global const {T}* g, {geo}) {{
  int i = get_global_id(0); if (i >= total) return;
  int iw = i % W; int r = i / W; int ih = r % H; int nc = r / H;
  __global const {T}* xp = x + (long)nc * H * W;
  __global const {T}* op = out + (long)nc * OH * OW;
  __global const {T}* gp = g + (long)nc * OH * OW;
  {T} s = 0;
  for (int a = 0; a < KH; ++a) {{
    int th = ih + pt - a * dh;
    if (th < 0 || th % sh) continue;
    int oh = th / sh; if (oh >= OH) continue;
    for (int b = 0; b < KW; ++b) {{
      int tw = iw + pl - b * dw;
      if (tw < 0 || tw % sw) continue;
      int ow = tw / sw; if (ow >= OW) continue;
      {T} m = op[oh * OW + ow];
      int first = -1;
      for (int q = 0; q < KH * KW && first < 0; ++q) {{
        {T} v = px(xp, oh * sh - pt + (q / KW) * dh, ow * sw - pl + (q % KW) * dw, H, W, KH, KW, OH, OW, sh, sw, pt, pl, dh, dw);
        if (v == m) first = q;
      }}
      if (first == a * KW + b) s += gp[oh * OW + ow];
    }}
  }}
  gx[i] = s;
}}
inline {A} avg_div(int oh, int ow, int inc, int H, int W, int KH, int KW, int sh, int sw, int pt, int pl) {{
  if (inc) return ({A})(KH * KW);
  int h0 = oh * sh - pt, w0 = ow * sw - pl;
  int nh = min(h0 + KH, H) - max(h0, 0), nw = min(w0 + KW, W) - max(w0, 0);
  return ({A})(max(nh, 0) * max(nw, 0));
}}
__kernel void avg_pool(const int total, __global {T}* out, __global const {T}* x, const int inc, {geo}) {{
  int i = get_global_id(0); if (i >= total) return;
  int ow = i % OW; int r = i / OW; int oh = r % OH; int nc = r / OH;
  __global const {T}* xp = x + (long)nc * H * W;
  {A} s = 0;
  for (int a = 0; a < KH; ++a) for (int b = 0; b < KW; ++b) {{
    int ih = oh * sh - pt + a, iw = ow * sw - pl + b;
    if (ih >= 0 && ih < H && iw >= 0 && iw < W) s += ({A})xp[ih * W + iw];
  }}
  out[i] = ({T})(s / avg_div(oh, ow, inc, H, W, KH, KW, sh, sw, pt, pl));
}}
__kernel void avg_pool_grad(const int total, __global {T}* gx, __global const {T}* g, const int inc, {geo}) {{
  int i = get_global_id(0); if (i >= total) return;
  int iw = i % W; int r = i / W; int ih = r % H; int nc = r / H;
  __global const {T}* gp = g + (long)nc * OH * OW;
  {A} s = 0;
  for (int a = 0; a < KH; ++a) {{
    int th = ih + pt - a;
    if (th < 0 || th % sh) continue;
    int oh = th / sh; if (oh >= OH) continue;
    for (int b = 0; b < KW; ++b) {{
      int tw = iw + pl - b;
      if (tw < 0 || tw % sw) continue;
      int ow = tw / sw; if (ow >= OW) continue;
      s += ({A})gp[oh * OW + ow] / avg_div(oh, ow, inc, H, W, KH, KW, sh, sw, pt, pl);
    }}
  }}
  gx[i] = ({T})s;
}}"""


def _pool_geo(H, W, kernel, out_hw, stride, padding, dilation):
    i32 = np.int32
    return [i32(H), i32(W), i32(kernel[0]), i32(kernel[1]), i32(out_hw[0]), i32(out_hw[1]), i32(stride[0]),
            i32(stride[1]), i32(padding[0]), i32(padding[2]), i32(dilation[0]), i32(dilation[1])]


def _pool_launch(dc, dtype, name, out, args):
    if out.size:
        dc.launch(dc.kernel(_pool_source(dtype, dc.fp64), name), out.size, [np.int32(out.size), out.buf] + args)
    return out


def max_pool2d(x, *, kernel, stride, padding, dilation):
    x = contiguous(x)
    N, C, H, W = x.shape
    ohw = _out_hw(H, W, kernel, stride, padding, dilation)
    out = empty(x.dc, (N, C) + ohw, x.dtype)
    return _pool_launch(x.dc, x.dtype, "max_pool", out,
                        [x.buf] + _pool_geo(H, W, kernel, ohw, stride, padding, dilation))


def max_pool2d_grad(x, out, g, *, kernel, stride, padding, dilation):
    x, out, g = contiguous(x), contiguous(out), contiguous(g)
    N, C, H, W = x.shape
    gx = empty(x.dc, x.shape, g.dtype)
    return _pool_launch(x.dc, x.dtype, "max_pool_grad", gx,
                        [x.buf, out.buf, g.buf] + _pool_geo(H, W, kernel, out.shape[2:], stride, padding, dilation))


def avg_pool2d(x, *, kernel, stride, padding, count_include_pad, dilation=(1, 1)):
    x = contiguous(x)
    N, C, H, W = x.shape
    ohw = _out_hw(H, W, kernel, stride, padding, (1, 1))
    out = empty(x.dc, (N, C) + ohw, x.dtype)
    return _pool_launch(x.dc, x.dtype, "avg_pool", out, [x.buf, np.int32(bool(count_include_pad))]
                        + _pool_geo(H, W, kernel, ohw, stride, padding, (1, 1)))


def avg_pool2d_grad(g, *, kernel, stride, padding, count_include_pad, input_hw, dilation=(1, 1)):
    g = contiguous(g)
    N, C = g.shape[:2]
    H, W = input_hw
    gx = empty(g.dc, (N, C, H, W), g.dtype)
    return _pool_launch(g.dc, g.dtype, "avg_pool_grad", gx, [g.buf, np.int32(bool(count_include_pad))]
                        + _pool_geo(H, W, kernel, g.shape[2:], stride, padding, (1, 1)))


def pool_kernels() -> dict:
    return {"max_pool2d": max_pool2d, "max_pool2d_grad": max_pool2d_grad,
            "avg_pool2d": avg_pool2d, "avg_pool2d_grad": avg_pool2d_grad}
