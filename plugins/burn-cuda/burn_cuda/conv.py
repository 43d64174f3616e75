"""conv2d and pooling on cuda: im2col + cuBLAS, and strided slices of the padded input.

flex's algorithms in their plain form (flex's ``conv.py`` adds CPU cache
blocking): a convolution copies the window view of the padded input into
columns ``[N, G, C/G*kH*kW, OH*OW]`` once and runs one batched cuBLAS GEMM; its
input gradient is the GEMM with the transposed weight plus one strided add per
window offset (col2im); pooling is one element-wise max/add per window offset.
float16 and bfloat16 compute in float32 (cuBLAS and the accumulations), like flex.
"""
from __future__ import annotations

import numpy as np

from burn.ops.conv import avg_divisor as _avg_divisor
from burn.ops.conv import compute_dtype as _ct
from burn.ops.conv import conv_out_hw as _out_hw
from burn.ops.conv import pad_nchw
from burn.ops.conv import window_offsets as _offsets

from .kernels import _cp, on_device


def _pad(x, padding, value=0):
    return pad_nchw(x, padding, value, _cp().full)


def _crop(xp, padding, hw):
    pt, _, pl, _ = padding
    if xp.shape[2:] == tuple(hw):
        return xp
    return _cp().ascontiguousarray(xp[:, :, pt:pt + hw[0], pl:pl + hw[1]])


def _im2col(x, kernel, stride, padding, dilation, groups, out_hw):
    cp = _cp()
    xp = cp.ascontiguousarray(_pad(x, padding))
    s0, s1, s2, s3 = xp.strides
    v = cp.lib.stride_tricks.as_strided(
        xp, xp.shape[:2] + tuple(kernel) + tuple(out_hw),
        (s0, s1, s2 * dilation[0], s3 * dilation[1], s2 * stride[0], s3 * stride[1]))
    return cp.ascontiguousarray(v).reshape(x.shape[0], groups, -1, out_hw[0] * out_hw[1])


def conv2d(x, w, *, stride, padding, dilation, groups):
    dt = x.dtype
    ct = _ct(dt)
    x, w = x.astype(ct, copy=False), w.astype(ct, copy=False)
    c_out, kernel = w.shape[0], w.shape[2:]
    out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    cols = _im2col(x, kernel, stride, padding, dilation, groups, out_hw)
    y = _cp().matmul(w.reshape(groups, c_out // groups, -1), cols)
    return y.reshape((x.shape[0], c_out) + tuple(out_hw)).astype(dt, copy=False)


def conv2d_grad_weight(x, g, *, stride, padding, dilation, groups, kernel_hw):
    dt = x.dtype
    ct = _ct(dt)
    x, g = x.astype(ct, copy=False), g.astype(ct, copy=False)
    c, c_out, out_hw = x.shape[1], g.shape[1], g.shape[2:]
    cols = _im2col(x, kernel_hw, stride, padding, dilation, groups, out_hw)
    gr = g.reshape(x.shape[0], groups, c_out // groups, -1)
    gw = _cp().matmul(gr, cols.transpose(0, 1, 3, 2)).sum(axis=0)      # [G, C_out/G, C/G*kH*kW]
    return gw.reshape((c_out, c // groups) + tuple(kernel_hw)).astype(dt, copy=False)


def conv2d_grad_input(g, w, *, stride, padding, dilation, groups, input_hw):
    cp = _cp()
    dt = g.dtype
    ct = _ct(dt)
    g, w = g.astype(ct, copy=False), w.astype(ct, copy=False)
    n, c_out, oh, ow = g.shape
    c = w.shape[1] * groups
    kernel = w.shape[2:]
    h, wd = input_hw
    pt, pb, pl, pr = padding
    wt = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)     # [G, C/G*kH*kW, C_out/G]
    cols = cp.matmul(wt, g.reshape(n, groups, c_out // groups, oh * ow))
    cols = cols.reshape((n, c) + tuple(kernel) + (oh, ow))
    gxp = cp.zeros((n, c, h + pt + pb, wd + pl + pr), dtype=ct)
    for i, j, rs, cs in _offsets(kernel, stride, dilation, (oh, ow)):
        gxp[:, :, rs, cs] += cols[:, :, i, j]
    return _crop(gxp, padding, input_hw).astype(dt, copy=False)


def _lowest(dt):
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


def max_pool2d(x, *, kernel, stride, padding, dilation):
    cp = _cp()
    xp = _pad(x, padding, _lowest(x.dtype))
    out = None
    for _, _, rs, cs in _offsets(kernel, stride, dilation, _out_hw(x.shape, kernel, stride, padding, dilation)):
        s = xp[:, :, rs, cs]
        out = s.copy() if out is None else cp.maximum(out, s, out=out)
    return out


def max_pool2d_grad(x, out, g, *, kernel, stride, padding, dilation):
    cp = _cp()
    xp = _pad(x, padding, _lowest(x.dtype))
    gxp = cp.zeros(xp.shape, dtype=g.dtype)
    taken = None
    for _, _, rs, cs in _offsets(kernel, stride, dilation, out.shape[2:]):
        hit = xp[:, :, rs, cs] == out
        # PyTorch (and flex) route each window's gradient to its first maximum (row-major)
        if taken is None:
            taken = hit.copy()
        else:
            hit &= ~taken
            taken |= hit
        gxp[:, :, rs, cs] += hit * g
    return _crop(gxp, padding, x.shape[2:])


def avg_pool2d(x, *, kernel, stride, padding, count_include_pad, dilation=(1, 1)):
    cp = _cp()
    dt = x.dtype
    ct = _ct(dt)
    xp = _pad(x.astype(ct, copy=False), padding)
    out_hw = _out_hw(x.shape, kernel, stride, padding, (1, 1))
    out = cp.zeros(x.shape[:2] + out_hw, dtype=ct)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        out += xp[:, :, rs, cs]
    out /= cp.asarray(_avg_divisor(x.shape[2:], kernel, stride, padding, count_include_pad, out_hw, ct))
    return out.astype(dt, copy=False)


def avg_pool2d_grad(g, *, kernel, stride, padding, count_include_pad, input_hw, dilation=(1, 1)):
    cp = _cp()
    dt = g.dtype
    ct = _ct(dt)
    out_hw = g.shape[2:]
    gs = g.astype(ct) / cp.asarray(_avg_divisor(input_hw, kernel, stride, padding, count_include_pad, out_hw, ct))
    h, w = input_hw
    pt, pb, pl, pr = padding
    gxp = cp.zeros(g.shape[:2] + (h + pt + pb, w + pl + pr), dtype=ct)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        gxp[:, :, rs, cs] += gs
    return _crop(gxp, padding, input_hw).astype(dt, copy=False)


def conv_kernels() -> dict:
    """Op name -> cuda kernel, for registration."""
    return {name: on_device(fn) for name, fn in (
        ("conv2d", conv2d), ("conv2d_grad_input", conv2d_grad_input), ("conv2d_grad_weight", conv2d_grad_weight),
        ("max_pool2d", max_pool2d), ("max_pool2d_grad", max_pool2d_grad),
        ("avg_pool2d", avg_pool2d), ("avg_pool2d_grad", avg_pool2d_grad))}
