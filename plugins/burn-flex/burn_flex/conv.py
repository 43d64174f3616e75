"""numpy kernels of convolution and pooling (the primitives of ``burn.ops.conv``).

Convolutions are im2col + one batched BLAS GEMM over the groups. The column
matrix is laid out [groups, C/groups * kH * kW, N * OH * OW], so the forward
pass and the weight gradient are each a single GEMM per group with no
per-image loop. Inverse scatters (col2im, pooling gradients) loop over the
kH * kW window offsets, each step one vectorized add into a strided slice;
no Python loop ever runs over pixels or images.
"""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import as_strided

__all__ = ["conv_kernels"]


def _compute_dtype(dt):
    # BLAS serves float32/float64 only; halves (and ml_dtypes' bfloat16) go through float32
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float32)


def _pad(x, padding, value=0):
    pt, pb, pl, pr = padding
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = np.full((n, c, h + pt + pb, w + pl + pr), value, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def _out_hw(shape, kernel, stride, padding, dilation):
    hp = shape[2] + padding[0] + padding[1]
    wp = shape[3] + padding[2] + padding[3]
    return ((hp - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1,
            (wp - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1)


def _windows(xp, kernel, stride, dilation, out_hw):
    """Read-only view [N, C, kH, kW, OH, OW] of the padded input."""
    s0, s1, s2, s3 = xp.strides
    return as_strided(xp, xp.shape[:2] + tuple(kernel) + tuple(out_hw),
                      (s0, s1, s2 * dilation[0], s3 * dilation[1], s2 * stride[0], s3 * stride[1]),
                      writeable=False)


def _offsets(kernel, stride, dilation, out_hw):
    """For each window offset (i, j), the slices of the padded input it reads."""
    oh, ow = out_hw
    for i in range(kernel[0]):
        r = i * dilation[0]
        rs = slice(r, r + stride[0] * (oh - 1) + 1, stride[0])
        for j in range(kernel[1]):
            c = j * dilation[1]
            yield i, j, rs, slice(c, c + stride[1] * (ow - 1) + 1, stride[1])


def _im2col(x, kernel, stride, padding, dilation, groups, out_hw):
    """Columns [G, C/G * kH * kW, N * OH * OW] (one copy of the windows)."""
    n, c = x.shape[:2]
    v = _windows(_pad(x, padding), kernel, stride, dilation, out_hw)
    cols = np.ascontiguousarray(v.transpose(1, 2, 3, 0, 4, 5))
    return cols.reshape(groups, (c // groups) * kernel[0] * kernel[1], n * out_hw[0] * out_hw[1])


def conv2d(x, w, *, stride, padding, dilation, groups):
    dt = x.dtype
    ct = _compute_dtype(dt)
    x, w = x.astype(ct, copy=False), w.astype(ct, copy=False)
    n = x.shape[0]
    c_out, kernel = w.shape[0], w.shape[2:]
    out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    cols = _im2col(x, kernel, stride, padding, dilation, groups, out_hw)
    y = np.matmul(w.reshape(groups, c_out // groups, -1), cols)        # [G, C_out/G, N*P]
    y = y.reshape(c_out, n, out_hw[0], out_hw[1]).transpose(1, 0, 2, 3)
    return np.ascontiguousarray(y, dtype=dt)


def _grad_rows(g, groups):
    """The output gradient as [G, C_out/G, N * OH * OW]."""
    n, c_out = g.shape[:2]
    return np.ascontiguousarray(g.transpose(1, 0, 2, 3)).reshape(groups, c_out // groups, -1)


def conv2d_grad_weight(x, g, *, stride, padding, dilation, groups, kernel_hw):
    dt = x.dtype
    ct = _compute_dtype(dt)
    x, g = x.astype(ct, copy=False), g.astype(ct, copy=False)
    cols = _im2col(x, kernel_hw, stride, padding, dilation, groups, g.shape[2:])
    gw = np.matmul(_grad_rows(g, groups), cols.transpose(0, 2, 1))     # [G, C_out/G, C/G*kH*kW]
    return gw.reshape((g.shape[1], x.shape[1] // groups) + tuple(kernel_hw)).astype(dt, copy=False)


def conv2d_grad_input(g, w, *, stride, padding, dilation, groups, input_hw):
    dt = g.dtype
    ct = _compute_dtype(dt)
    g, w = g.astype(ct, copy=False), w.astype(ct, copy=False)
    n, c_out, oh, ow = g.shape
    c = w.shape[1] * groups
    kernel = w.shape[2:]
    wg = w.reshape(groups, c_out // groups, -1).transpose(0, 2, 1)     # [G, C/G*kH*kW, C_out/G]
    cols = np.matmul(wg, _grad_rows(g, groups)).reshape((c,) + tuple(kernel) + (n, oh, ow))
    h, wd = input_hw
    pt, pb, pl, pr = padding
    gxp = np.zeros((c, n, h + pt + pb, wd + pl + pr), dtype=ct)         # channel-major: cols' layout
    for i, j, rs, cs in _offsets(kernel, stride, dilation, (oh, ow)):
        gxp[:, :, rs, cs] += cols[:, i, j]
    gx = gxp[:, :, pt:pt + h, pl:pl + wd].transpose(1, 0, 2, 3)
    return np.ascontiguousarray(gx, dtype=dt)


def _lowest(dt):
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


def max_pool2d(x, *, kernel, stride, padding, dilation):
    xp = _pad(x, padding, _lowest(x.dtype))
    out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
    out = None
    for _, _, rs, cs in _offsets(kernel, stride, dilation, out_hw):
        s = xp[:, :, rs, cs]
        if out is None:
            out = s.copy()
        else:
            np.maximum(out, s, out=out)
    return out


def max_pool2d_grad(x, out, g, *, kernel, stride, padding, dilation):
    xp = _pad(x, padding, _lowest(x.dtype))
    gxp = np.zeros(xp.shape, dtype=g.dtype)
    # PyTorch routes each window's gradient to its first maximum (row-major)
    taken = np.zeros(out.shape, dtype=bool)
    zero = np.zeros((), g.dtype)
    disjoint = all(s >= d * (k - 1) + 1 for k, s, d in zip(kernel, stride, dilation))
    for _, _, rs, cs in _offsets(kernel, stride, dilation, out.shape[2:]):
        hit = xp[:, :, rs, cs] == out
        hit &= ~taken
        taken |= hit
        if disjoint:
            gxp[:, :, rs, cs] = np.where(hit, g, zero)
        else:
            gxp[:, :, rs, cs] += np.where(hit, g, zero)
    pt, _, pl, _ = padding
    return np.ascontiguousarray(gxp[:, :, pt:pt + x.shape[2], pl:pl + x.shape[3]])


def _avg_divisor(shape_hw, kernel, stride, padding, count_include_pad, out_hw, dt):
    if count_include_pad:
        return np.asarray(kernel[0] * kernel[1], dtype=dt)
    pt, pb, pl, pr = padding
    h, w = shape_hw
    ones = np.zeros((h + pt + pb, w + pl + pr), dtype=dt)
    ones[pt:pt + h, pl:pl + w] = 1
    cnt = np.zeros(out_hw, dtype=dt)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        cnt += ones[rs, cs]
    return cnt


def avg_pool2d(x, *, kernel, stride, padding, count_include_pad, dilation=(1, 1)):
    dt = x.dtype
    ct = _compute_dtype(dt)
    xp = _pad(x.astype(ct, copy=False), padding)
    out_hw = _out_hw(x.shape, kernel, stride, padding, (1, 1))
    out = np.zeros(x.shape[:2] + out_hw, dtype=ct)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        out += xp[:, :, rs, cs]
    out /= _avg_divisor(x.shape[2:], kernel, stride, padding, count_include_pad, out_hw, ct)
    return out.astype(dt, copy=False)


def avg_pool2d_grad(g, *, kernel, stride, padding, count_include_pad, input_hw, dilation=(1, 1)):
    dt = g.dtype
    ct = _compute_dtype(dt)
    out_hw = g.shape[2:]
    gs = g.astype(ct) / _avg_divisor(input_hw, kernel, stride, padding, count_include_pad, out_hw, ct)
    h, w = input_hw
    pt, pb, pl, pr = padding
    gxp = np.zeros(g.shape[:2] + (h + pt + pb, w + pl + pr), dtype=ct)
    for _, _, rs, cs in _offsets(kernel, stride, (1, 1), out_hw):
        gxp[:, :, rs, cs] += gs
    return np.ascontiguousarray(gxp[:, :, pt:pt + h, pl:pl + w], dtype=dt)


def conv_kernels():
    """Op name -> flex kernel, for ``burn_register_kernels``."""
    return {"conv2d": conv2d, "conv2d_grad_input": conv2d_grad_input, "conv2d_grad_weight": conv2d_grad_weight,
            "max_pool2d": max_pool2d, "max_pool2d_grad": max_pool2d_grad,
            "avg_pool2d": avg_pool2d, "avg_pool2d_grad": avg_pool2d_grad}
