"""conv2d and pooling on cuda: im2col + cuBLAS, and strided slices of the padded input.

flex's algorithms in their plain form (flex's ``conv.py`` adds CPU cache
blocking): a convolution copies the window view of the padded input into
columns ``[N, G, C/G*kH*kW, OH*OW]`` once and runs one batched cuBLAS GEMM; its
input gradient is the GEMM with the transposed weight plus one strided add per
window offset (col2im); pooling is one element-wise max/add per window offset.
float16 and bfloat16 compute in float32 (cuBLAS and the accumulations), like flex.

Max pooling (forward and gradient) and the col2im of the input gradient are one generated
kernel each (:func:`window_source`) for float16/bfloat16/float32/float64: the CuPy form
above took ~27 element-wise launches per max-pool gradient and ~19 per col2im, which is
host time per launch in a small training step. Each kernel computes what the CuPy form
computes, in the same order and rounding: a max pool's value is ``maximum`` over the
window offsets in row-major order (NaN propagates); its gradient sends each window's
gradient to the first maximum (row-major), each input summing ``hit * g`` over its windows
in offset order (so a NaN/inf gradient spreads as ``0 * g`` did); col2im sums the columns
in offset order. Other dtypes use the CuPy form.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np

from burn.errors import BurnError
from burn.ops.conv import avg_divisor as _avg_divisor
from burn.ops.conv import compute_dtype as _ct
from burn.ops.conv import conv_out_hw as _out_hw
from burn.ops.conv import pad_nchw
from burn.ops.conv import window_offsets as _offsets

from ..native import dtype_name
from .elementwise import _cp, _dc_of, on_device
from .optim import _T, _cu, _helpers


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
    if dtype_name(cols) in ("float32", "float64"):
        # col2im in one kernel: each input element sums its columns in window-offset order
        cols = cp.ascontiguousarray(cols)
        gx = cp.empty((n, c, h, wd), cols.dtype)
        _launch_window("col2im", dtype_name(cols), gx.size, (cols, gx),
                       _dims("conv2d_grad_input", (h, wd), (oh, ow), kernel, stride, padding, dilation))
        return gx.astype(dt, copy=False)
    gxp = cp.zeros((n, c, h + pt + pb, wd + pl + pr), dtype=ct)
    for i, j, rs, cs in _offsets(kernel, stride, dilation, (oh, ow)):
        gxp[:, :, rs, cs] += cols[:, :, i, j]
    return _crop(gxp, padding, input_hw).astype(dt, copy=False)


def _lowest(dt):
    return np.iinfo(dt).min if dt.kind in "iu" else -np.inf


def max_pool2d(x, *, kernel, stride, padding, dilation):
    cp = _cp()
    dt = dtype_name(x)
    if dt in WINDOW_DTYPES:
        x = cp.ascontiguousarray(x)
        out_hw = _out_hw(x.shape, kernel, stride, padding, dilation)
        out = cp.empty(x.shape[:2] + tuple(out_hw), x.dtype)
        _launch_window("maxpool", dt, out.size, (x, out),
                       _dims("max_pool2d", x.shape[2:], out_hw, kernel, stride, padding, dilation))
        return out
    xp = _pad(x, padding, _lowest(x.dtype))
    out = None
    for _, _, rs, cs in _offsets(kernel, stride, dilation, _out_hw(x.shape, kernel, stride, padding, dilation)):
        s = xp[:, :, rs, cs]
        out = s.copy() if out is None else cp.maximum(out, s, out=out)
    return out


def max_pool2d_grad(x, out, g, *, kernel, stride, padding, dilation):
    cp = _cp()
    dt = dtype_name(x)
    if dt in WINDOW_DTYPES and out.dtype == x.dtype and g.dtype == x.dtype:
        x, out, g = cp.ascontiguousarray(x), cp.ascontiguousarray(out), cp.ascontiguousarray(g)
        gx = cp.empty(x.shape, x.dtype)
        _launch_window("maxpool_grad", dt, gx.size, (x, out, g, gx),
                       _dims("max_pool2d_grad", x.shape[2:], out.shape[2:], kernel, stride, padding, dilation))
        return gx
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



# -- generated window kernels -------------------------------------------------------------------

WINDOW_DTYPES = ("float32", "float64", "float16", "bfloat16")
_DIMS = "int H, int W, int OH, int OW, int KH, int KW, int SH, int SW, int PT, int PL, int DH, int DW"


@lru_cache(maxsize=None)
def window_source(dtype: str) -> str:
    """One CUDA module with ``burn_conv_{maxpool,maxpool_grad,col2im}_<dtype>`` over NCHW
    C-contiguous arrays (``cu/window.cu``; one thread per output element of the pool, per input
    element of the gradients); dims ``H W OH OW KH KW SH SW PT PL DH DW`` as ints after the arrays.

    >>> assert "burn_conv_maxpool_grad_float32(" in window_source("float32")
    """
    T, head, ld, st, _, _, s = _T[dtype]
    low = "(-__longlong_as_double(0x7ff0000000000000LL))" if s == "d" else "(-__int_as_float(0x7f800000))"
    defs = {"T": T, "LD(x)": ld.format("(x)"), "ST(x)": st.format("(x)"), "LOW": low, "DIMS": _DIMS}
    src = "\n".join([head, _helpers(dtype)] + [f"#define {k} {v}" for k, v in defs.items()])
    # kernel names carry the dtype literally (CuPy looks kernels up by name in the source)
    return src + "\n" + _cu("window.cu").replace("_DTYPE(", f"_{dtype}(")

_INT32 = (1 << 31) - 1


def _dims(op, hw, out_hw, kernel, stride, padding, dilation):
    d = (hw[0], hw[1], out_hw[0], out_hw[1], kernel[0], kernel[1], stride[0], stride[1], padding[0], padding[2],
         dilation[0], dilation[1])
    if max(d) > _INT32 or min(d) < 0:
        raise BurnError(f"cuda: {op}: window sizes {d} do not fit the kernel's 32-bit ints")
    return tuple(np.int32(v) for v in d)


def _launch_window(kind, dt, n, arrays, dims):
    dc = _dc_of(arrays)
    if n:
        dc.launch(dc.function(window_source(dt), f"burn_conv_{kind}_{dt}"), n, (np.int64(n), *arrays, *dims))


def conv_kernels() -> dict:
    """Op name -> cuda kernel, for registration."""
    return {name: on_device(fn) for name, fn in (
        ("conv2d", conv2d), ("conv2d_grad_input", conv2d_grad_input), ("conv2d_grad_weight", conv2d_grad_weight),
        ("max_pool2d", max_pool2d), ("max_pool2d_grad", max_pool2d_grad),
        ("avg_pool2d", avg_pool2d), ("avg_pool2d_grad", avg_pool2d_grad))}
