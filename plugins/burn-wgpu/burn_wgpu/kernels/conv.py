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
from burn.codegen.sources import with_defines
from burn.ops.conv import conv_out_hw

from ..native import empty
from .linear import matmul
from .movement import _slice_view, contiguous, copy_into, permute, reshape
from .source import cl_source


@lru_cache(maxsize=None)
def _source(dtype: str, fp64: bool) -> str:
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""
    return pre + with_defines(cl_source("im2col.cl"), dict(T=OPENCL.ctype(dtype)))


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
    isf = dtype.startswith("float")
    low = "-INFINITY" if isf else {"int8": "CHAR_MIN", "uint8": "0", "int32": "INT_MIN",
                                    "int64": "LONG_MIN"}.get(dtype, "0")
    pre = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if fp64 else ""
    if dtype == "float16":
        pre += "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n"
    return pre + with_defines(cl_source("pool.cl"), dict(
        T=OPENCL.ctype(dtype), A="double" if dtype == "float64" else "float", LOW=low, IS_FLOAT=isf))


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
