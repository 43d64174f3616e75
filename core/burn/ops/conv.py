"""Convolution and pooling over NCHW tensors (PyTorch/Burn layout).

Each forward op and each of its gradients is a primitive, so a backend runs
the gradient of a convolution as one kernel (im2col + GEMM on flex) rather
than as a chain of slices. Weights are ``[C_out, C_in / groups, kH, kW]``.
Padding is stored as ``(top, bottom, left, right)`` so ``padding="same"``
with an even kernel (extra row/column at the end, as in PyTorch) needs no
special case in the kernels. Bias is a broadcast add in :func:`conv2d`.
"""
from __future__ import annotations

import numpy as np

from .. import dtypes as dt
from ..errors import DTypeError, ShapeError, describe
from ..primitives import OPAQUE, TensorMeta, primitive
from ..tensor import Tensor, apply
from . import creation as C, movement as M
from .reduction import argmax
from .autocast import lower

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "max_pool1d", "max_pool2d", "avg_pool1d", "avg_pool2d"]


# -- argument normalization -------------------------------------------------------

def _pair(op, name, v, minimum):
    if isinstance(v, (int, np.integer)):
        v = (int(v), int(v))
    v = tuple(int(a) for a in v)
    if len(v) != 2 or any(a < minimum for a in v):
        raise ValueError(f"{op}: {name} must be an int or a pair of ints >= {minimum}, got {v}")
    return v


def _conv_padding(op, padding, kernel, stride, dilation):
    """padding -> (top, bottom, left, right)."""
    if isinstance(padding, str):
        if padding == "valid":
            return (0, 0, 0, 0)
        if padding == "same":
            if stride != (1, 1):
                raise ValueError(f"{op}: padding='same' needs stride 1, got stride={stride}")
            out = []
            for k, d in zip(kernel, dilation):
                total = d * (k - 1)
                out += [total // 2, total - total // 2]
            return tuple(out)
        raise ValueError(f"{op}: padding must be an int, a pair, 'valid' or 'same', got {padding!r}")
    ph, pw = _pair(op, "padding", padding, 0)
    return (ph, ph, pw, pw)


def _out_size(size, pad_lo, pad_hi, k, s, d):
    return (size + pad_lo + pad_hi - d * (k - 1) - 1) // s + 1


def _check_float(op, *ts):
    x = ts[0]
    if not x.dtype.is_floating or any(t.dtype is not x.dtype for t in ts[1:]):
        raise DTypeError(f"{op}: operands need one floating dtype, got "
                         + ", ".join(describe(t) for t in ts)
                         + "; cast them with .astype(burn.float32)")


def _spatial_out(op, x, kernel, stride, padding, dilation, what):
    pt, pb, pl, pr = padding
    H, W = x.shape[-2:]
    kh, kw = kernel
    eh, ew = dilation[0] * (kh - 1) + 1, dilation[1] * (kw - 1) + 1
    if eh > H + pt + pb or ew > W + pl + pr:
        raise ShapeError(f"{op}: {what} ({kh}x{kw}, dilation {dilation}, extent {eh}x{ew}) is larger than "
                         f"the padded input ({H + pt + pb}x{W + pl + pr}) of {describe(x)}; "
                         f"pad the input or use a smaller kernel")
    return (_out_size(H, pt, pb, kh, stride[0], dilation[0]), _out_size(W, pl, pr, kw, stride[1], dilation[1]))


# -- conv2d ---------------------------------------------------------------------------

def _conv_meta(x, w, *, stride, padding, dilation, groups):
    op = "conv2d"
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"{op}: expected input [N, C_in, H, W] and weight [C_out, C_in/groups, kH, kW], "
                         f"got input {describe(x)}, weight {describe(w)}")
    _check_float(op, x, w)
    c_in, c_out = x.shape[1], w.shape[0]
    if c_out < 1:
        raise ShapeError(f"{op}: the weight {describe(w)} has no output channels; a convolution needs at "
                         f"least one (weight [C_out >= 1, C_in/groups, kH, kW], as in PyTorch)")
    if c_in % groups or c_out % groups:
        raise ShapeError(f"{op}: groups={groups} must divide both the input channels ({c_in}, input "
                         f"{describe(x)}) and the output channels ({c_out}, weight {describe(w)})")
    if w.shape[1] * groups != c_in:
        raise ShapeError(f"{op}: channel mismatch: input {describe(x)} has {c_in} channels but weight "
                         f"{describe(w)} with groups={groups} expects {w.shape[1] * groups} "
                         f"(weight.shape[1] * groups)")
    oh, ow = _spatial_out(op, x, w.shape[2:], stride, padding, dilation, "kernel")
    return TensorMeta((x.shape[0], c_out, oh, ow), x.dtype)


def _bw_conv(c, g):
    x, w = c.inputs
    gx = gw = None
    if x.requires_grad:
        gx = apply(conv2d_grad_input_p, (g, w), {**c.attrs, "input_hw": x.shape[2:]})
    if w.requires_grad:
        gw = apply(conv2d_grad_weight_p, (x, g), {**c.attrs, "kernel_hw": w.shape[2:]})
    return gx, gw


conv2d_p = primitive("conv2d", OPAQUE, _conv_meta)
conv2d_p.backward = _bw_conv


def _conv_grad_input_meta(g, w, *, stride, padding, dilation, groups, input_hw):
    _check_float("conv2d_grad_input", g, w)
    return TensorMeta((g.shape[0], w.shape[1] * groups) + tuple(input_hw), g.dtype)


def _bw_conv_grad_input(c, gg):
    # grad_input is linear in (g, w): its adjoints are a conv and a weight gradient
    g, w = c.inputs
    attrs = {k: v for k, v in c.attrs.items() if k != "input_hw"}
    return (apply(conv2d_p, (gg, w), attrs),
            apply(conv2d_grad_weight_p, (gg, g), {**attrs, "kernel_hw": w.shape[2:]}))


conv2d_grad_input_p = primitive("conv2d_grad_input", OPAQUE, _conv_grad_input_meta)
conv2d_grad_input_p.backward = _bw_conv_grad_input


def _conv_grad_weight_meta(x, g, *, stride, padding, dilation, groups, kernel_hw):
    _check_float("conv2d_grad_weight", x, g)
    return TensorMeta((g.shape[1], x.shape[1] // groups) + tuple(kernel_hw), x.dtype)


def _bw_conv_grad_weight(c, gw):
    x, g = c.inputs
    attrs = {k: v for k, v in c.attrs.items() if k != "kernel_hw"}
    return (apply(conv2d_grad_input_p, (g, gw), {**attrs, "input_hw": x.shape[2:]}),
            apply(conv2d_p, (x, gw), attrs))


conv2d_grad_weight_p = primitive("conv2d_grad_weight", OPAQUE, _conv_grad_weight_meta)
conv2d_grad_weight_p.backward = _bw_conv_grad_weight


def _add_bias(y, bias, op, c_out):
    if bias is None:
        return y
    if bias.shape != (c_out,):
        raise ShapeError(f"{op}: bias must have shape ({c_out},) (one per output channel), got {describe(bias)}")
    return y + M.reshape(bias, (1, c_out) + (1,) * (y.ndim - 2))


def conv2d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """2-D cross-correlation of ``x`` [N, C_in, H, W] with ``weight`` [C_out, C_in/groups, kH, kW].

    ``stride``, ``padding`` (zeros; an int, a pair, ``"valid"`` or ``"same"``) and
    ``dilation`` take an int or a (height, width) pair; ``groups`` splits the
    channels into independent convolutions (``groups == C_in`` is depthwise).
    Matches ``torch.nn.functional.conv2d``. A 3-D ``x`` [C_in, H, W] is one image.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.conv2d(burn.ones((1, 2, 5, 5)), burn.ones((3, 2, 3, 3)), padding=1)
        >>> assert y.shape == (1, 3, 5, 5) and y[0, 0, 2, 2].item() == 18.0 and y[0, 0, 0, 0].item() == 8.0
    """
    x, weight, bias = lower(x, weight, bias, op="conv2d")   # burn.autocast: convolutions run in the low dtype
    if x.ndim == 3:
        return _unbatched(conv2d, x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                          groups=groups)
    if weight.ndim != 4:
        raise ShapeError(f"conv2d: weight must be [C_out, C_in/groups, kH, kW], got {describe(weight)}")
    stride = _pair("conv2d", "stride", stride, 1)
    dilation = _pair("conv2d", "dilation", dilation, 1)
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"conv2d: groups must be a positive int, got {groups!r}")
    pad = _conv_padding("conv2d", padding, weight.shape[2:], stride, dilation)
    y = apply(conv2d_p, (x, weight), {"stride": stride, "padding": pad, "dilation": dilation,
                                      "groups": int(groups)})
    return _add_bias(y, bias, "conv2d", weight.shape[0])


def _unbatched(fn, x, *args, **kw):
    y = fn(M.reshape(x, (1,) + x.shape), *args, **kw)
    return M.reshape(y, y.shape[1:])


def conv1d(x, weight, bias=None, *, stride=1, padding=0, dilation=1, groups=1) -> Tensor:
    """1-D cross-correlation of ``x`` [N, C_in, L] with ``weight`` [C_out, C_in/groups, K].

    Same options as :func:`conv2d` (ints instead of pairs); runs as a conv2d of
    height one. Matches ``torch.nn.functional.conv1d``.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.conv1d(burn.ones((2, 1, 6)), burn.ones((4, 1, 3)), stride=2)
        >>> assert y.shape == (2, 4, 2) and y[1, 3, 0].item() == 3.0
    """
    x, weight, bias = lower(x, weight, bias, op="conv1d")
    if x.ndim == 2:
        return _unbatched(conv1d, x, weight, bias, stride=stride, padding=padding, dilation=dilation,
                          groups=groups)
    if x.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"conv1d: expected input [N, C_in, L] and weight [C_out, C_in/groups, K], "
                         f"got input {describe(x)}, weight {describe(weight)}")
    pad = padding if isinstance(padding, str) else (0, _single("conv1d", "padding", padding, 0))
    y = conv2d(M.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2])),
               M.reshape(weight, (weight.shape[0], weight.shape[1], 1, weight.shape[2])), None,
               stride=(1, _single("conv1d", "stride", stride, 1)), padding=pad,
               dilation=(1, _single("conv1d", "dilation", dilation, 1)), groups=groups)
    y = M.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    return _add_bias(y, bias, "conv1d", weight.shape[0])


def _single(op, name, v, minimum):
    if isinstance(v, (tuple, list)) and len(v) == 1:
        v = v[0]
    if not isinstance(v, (int, np.integer)) or v < minimum:
        raise ValueError(f"{op}: {name} must be an int >= {minimum}, got {v!r}")
    return int(v)


# -- transposed convolution ------------------------------------------------------------
# A transposed convolution is the input gradient of a convolution: it runs as the
# primitive conv2d_grad_input, whose backward rules (a conv2d and a conv2d weight
# gradient) give the gradients of input and weight, on every backend.

def _transpose_layout(op, size, k, s, p, d, op_pad):
    """Padding (lo, hi) of the underlying convolution and zero rows to append for one
    spatial axis: output padding first uses up the high-side padding (so the conv of the
    result has exactly the input's length); past it, the extra rows lie beyond every
    window and are zeros."""
    full = (size - 1) * s + d * (k - 1) + 1
    out = full - 2 * p + op_pad
    if out < 1:
        raise ShapeError(f"{op}: the output would have size {out} along an axis of input size {size} "
                         f"(kernel {k}, stride {s}, padding {p}, dilation {d}, output_padding {op_pad}); "
                         f"use less padding")
    hi = p - op_pad if op_pad <= p else 0
    return (p, hi), max(op_pad - p, 0), out


def _transpose_args(op, x, weight, stride, padding, output_padding, groups, dilation):
    if x.ndim != 4 or weight.ndim != 4:
        raise ShapeError(f"{op}: expected input [N, C_in, H, W] and weight [C_in, C_out/groups, kH, kW], "
                         f"got input {describe(x)}, weight {describe(weight)}")
    _check_float(op, x, weight)
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"{op}: groups must be a positive int, got {groups!r}")
    c_in = x.shape[1]
    if weight.shape[0] != c_in:
        raise ShapeError(f"{op}: channel mismatch: input {describe(x)} has {c_in} channels but weight "
                         f"{describe(weight)} expects {weight.shape[0]} (weight.shape[0], the input channels)")
    if c_in % groups:
        raise ShapeError(f"{op}: groups={groups} must divide the input channels ({c_in}, input {describe(x)})")
    stride = _pair(op, "stride", stride, 1)
    dilation = _pair(op, "dilation", dilation, 1)
    if isinstance(padding, str):
        raise ValueError(f"{op}: padding must be an int or a pair of ints (no {padding!r}, as in PyTorch)")
    pad = _pair(op, "padding", padding, 0)
    out_pad = _pair(op, "output_padding", output_padding, 0)
    for o, s, d in zip(out_pad, stride, dilation):
        if o >= s and o >= d:
            raise ValueError(f"{op}: output_padding {out_pad} must be smaller than either stride {stride} or "
                             f"dilation {dilation} in each dimension, as in PyTorch")
    return stride, pad, out_pad, dilation


def conv_transpose2d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """2-D transposed convolution of ``x`` [N, C_in, H, W] with ``weight`` [C_in, C_out/groups, kH, kW].

    The adjoint of :func:`conv2d` (its input gradient), often called a deconvolution:
    the output has size ``(H - 1) * stride - 2 * padding + dilation * (kH - 1) +
    output_padding + 1`` per axis. ``output_padding`` (smaller than stride or dilation)
    adds rows and columns at the bottom/right. Arguments and weight layout as
    ``torch.nn.functional.conv_transpose2d``. A 3-D ``x`` [C_in, H, W] is one image.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.conv_transpose2d(burn.ones((1, 2, 3, 3)), burn.ones((2, 4, 2, 2)), stride=2)
        >>> assert y.shape == (1, 4, 6, 6) and y[0, 1, 0, 0].item() == 2.0
    """
    if x.ndim == 3:
        return _unbatched(conv_transpose2d, x, weight, bias, stride, padding, output_padding, groups, dilation)
    op = "conv_transpose2d"
    stride, pad, out_pad, dilation = _transpose_args(op, x, weight, stride, padding, output_padding, groups,
                                                     dilation)
    (pt, pb), eh, oh = _transpose_layout(op, x.shape[2], weight.shape[2], stride[0], pad[0], dilation[0],
                                         out_pad[0])
    (pl, pr), ew, ow = _transpose_layout(op, x.shape[3], weight.shape[3], stride[1], pad[1], dilation[1],
                                         out_pad[1])
    y = apply(conv2d_grad_input_p, (x, weight), {"stride": stride, "padding": (pt, pb, pl, pr),
                                                 "dilation": dilation, "groups": int(groups),
                                                 "input_hw": (oh - eh, ow - ew)})
    if eh or ew:
        y = M.pad(y, ((0, 0), (0, 0), (0, eh), (0, ew)))
    return _add_bias(y, bias, op, weight.shape[1] * int(groups))


def conv_transpose1d(x, weight, bias=None, stride=1, padding=0, output_padding=0, groups=1,
                     dilation=1) -> Tensor:
    """1-D transposed convolution of ``x`` [N, C_in, L] with ``weight`` [C_in, C_out/groups, K].

    Same options as :func:`conv_transpose2d` (ints instead of pairs); runs as one of
    height one. Matches ``torch.nn.functional.conv_transpose1d``.

    Example:
        >>> import burn
        >>> y = burn.nn.functional.conv_transpose1d(burn.ones((1, 1, 3)), burn.ones((1, 2, 3)))
        >>> assert y.shape == (1, 2, 5) and y[0, 0].tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]
    """
    if x.ndim == 2:
        return _unbatched(conv_transpose1d, x, weight, bias, stride, padding, output_padding, groups, dilation)
    op = "conv_transpose1d"
    if x.ndim != 3 or weight.ndim != 3:
        raise ShapeError(f"{op}: expected input [N, C_in, L] and weight [C_in, C_out/groups, K], "
                         f"got input {describe(x)}, weight {describe(weight)}")
    args = [(1, _single(op, name, v, low)) for name, v, low in
            (("stride", stride, 1), ("padding", padding, 0), ("output_padding", output_padding, 0),
             ("dilation", dilation, 1))]
    args[1], args[2] = (0, args[1][1]), (0, args[2][1])
    y = conv_transpose2d(M.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2])),
                         M.reshape(weight, weight.shape[:2] + (1, weight.shape[2])), None,
                         args[0], args[1], args[2], groups, args[3])
    y = M.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))
    return _add_bias(y, bias, op, weight.shape[1] * int(groups))


# -- pooling ----------------------------------------------------------------------------

def _pool_meta(op, floating_only):
    def meta(x, *, kernel, stride, padding, dilation=(1, 1), count_include_pad=True):
        if x.ndim != 4:
            raise ShapeError(f"{op}: expected input [N, C, H, W], got {describe(x)}")
        if x.dtype.is_bool or x.dtype.is_complex or (floating_only and not x.dtype.is_floating):
            raise DTypeError(f"{op}: not defined for {describe(x)}; cast it with .astype(burn.float32)")
        for p, k in zip(padding[::2], kernel):
            if 2 * p > k:
                raise ShapeError(f"{op}: padding {padding[::2]} must be at most half of the kernel size "
                                 f"{kernel}, as in PyTorch")
        oh, ow = _spatial_out(op, x, kernel, stride, padding, dilation, "pooling window")
        return TensorMeta(x.shape[:2] + (oh, ow), x.dtype)
    return meta


def _bw_max_pool(c, g):
    x = c.inputs[0]
    return (apply(max_pool2d_grad_p, (x, c.out, g), c.attrs),)


# plan_attrs: flex folds a 2 x 2 / stride 2 pooling into the convolution before it (burn_flex.conv_epilogue),
# and other pooling attributes can give the same output shapes (3 x 3 / stride 2 / padding 1)
max_pool2d_p = primitive("max_pool2d", OPAQUE, _pool_meta("max_pool2d", False), plan_attrs=True)
max_pool2d_p.backward = _bw_max_pool
# the gradient of a max pool routes ``g`` to the first maximum of each window
max_pool2d_grad_p = primitive("max_pool2d_grad", OPAQUE, lambda x, out, g, **a: TensorMeta(x.shape, x.dtype))


def _bw_max_pool_grad(c, gg):
    # linear in g (x and out only choose the positions, a piecewise-constant choice): the
    # adjoint of "scatter g to each window's first maximum" gathers gg from those positions,
    # with windows unfolded by a constant index table (padding points at a -inf / 0 slot)
    x, out, _ = c.inputs
    n, ch, h, w = x.shape
    oh, ow = out.shape[2:]
    (kh, kw), (sh, sw), (pt, _, pl, _), (dh, dw) = (c.attrs["kernel"], c.attrs["stride"], c.attrs["padding"],
                                                     c.attrs.get("dilation", (1, 1)))
    r = (np.arange(oh)[:, None] * sh - pt + np.arange(kh)[None, :] * dh)[:, None, :, None]
    q = (np.arange(ow)[:, None] * sw - pl + np.arange(kw)[None, :] * dw)[None, :, None, :]
    flat = np.where((r >= 0) & (r < h) & (q >= 0) & (q < w), r * w + q, h * w).reshape(oh * ow, kh * kw)
    idx = C.tensor(flat, dtype=dt.int64, device=x.device)

    def windows(t, pad):
        t = M.concat([M.reshape(t, (n, ch, h * w)), C.full((n, ch, 1), pad, dtype=t.dtype, device=t.device)],
                     axis=2)
        return M.take(t, idx, axis=2)               # [n, ch, oh*ow, kh*kw]
    first = argmax(windows(x.detach(), -np.inf), axis=-1, keepdims=True)
    picked = M.take_along_axis(windows(gg, 0.0), first, axis=-1)
    return None, None, M.reshape(picked, (n, ch, oh, ow))


max_pool2d_grad_p.backward = _bw_max_pool_grad

avg_pool2d_p = primitive("avg_pool2d", OPAQUE, _pool_meta("avg_pool2d", True))
avg_pool2d_p.backward = lambda c, g: (apply(avg_pool2d_grad_p, (g,), {**c.attrs,
                                                                        "input_hw": c.inputs[0].shape[2:]}),)
avg_pool2d_grad_p = primitive("avg_pool2d_grad", OPAQUE,
                              lambda g, *, input_hw, **a: TensorMeta(g.shape[:2] + tuple(input_hw), g.dtype))
avg_pool2d_grad_p.backward = lambda c, gg: (apply(avg_pool2d_p, (gg,), {k: v for k, v in c.attrs.items()
                                                                          if k != "input_hw"}),)


def _ceil_extra(size, pad, k, s, d):
    """Extra high-side padding that makes the floor-mode output size PyTorch's ceil-mode size:
    one more window when the last one starts inside the input or its left padding."""
    ext = d * (k - 1) + 1
    if size + 2 * pad < ext:
        return 0                       # too small either way: the meta rule raises
    out = -(-(size + 2 * pad - ext) // s) + 1
    if (out - 1) * s >= size + pad:    # a window starting in the right padding is dropped
        out -= 1
    return max(0, (out - 1) * s + ext - (size + 2 * pad))


def _pool_args(op, x, kernel_size, stride, padding, dilation, ceil_mode):
    kernel = _pair(op, "kernel_size", kernel_size, 1)
    stride = kernel if stride is None else _pair(op, "stride", stride, 1)
    ph, pw = _pair(op, "padding", padding, 0)
    dil = _pair(op, "dilation", dilation, 1)
    eh = ew = 0
    if ceil_mode and x.ndim == 4:
        # ceil mode is floor mode with more padding at the bottom/right: kernels take
        # (top, bottom, left, right) padding, max pooling reads it as -inf
        eh = _ceil_extra(x.shape[2], ph, kernel[0], stride[0], dil[0])
        ew = _ceil_extra(x.shape[3], pw, kernel[1], stride[1], dil[1])
    return kernel, stride, (ph, ph + eh, pw, pw + ew), dil


def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, *, ceil_mode=False) -> Tensor:
    """Maximum over sliding windows of ``x`` [N, C, H, W] (padding counts as -inf).

    ``stride`` defaults to ``kernel_size``. The gradient goes to the first
    maximum of each window, as in PyTorch. A 3-D ``x`` is one image.
    ``ceil_mode`` rounds the output size up (one more, partial window where the
    last one would start inside the input), as PyTorch.

    Example:
        >>> import burn
        >>> x = burn.arange(16, dtype=burn.float32).reshape((1, 1, 4, 4))
        >>> assert burn.nn.functional.max_pool2d(x, 2).tolist() == [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    if x.ndim == 3:
        return _unbatched(max_pool2d, x, kernel_size, stride, padding, dilation, ceil_mode=ceil_mode)
    kernel, stride, pad, dil = _pool_args("max_pool2d", x, kernel_size, stride, padding, dilation, ceil_mode)
    return apply(max_pool2d_p, (x,), {"kernel": kernel, "stride": stride, "padding": pad, "dilation": dil})


def avg_pool2d(x, kernel_size, stride=None, padding=0, *, ceil_mode=False, count_include_pad=True) -> Tensor:
    """Mean over sliding windows of ``x`` [N, C, H, W] (zero padding).

    ``stride`` defaults to ``kernel_size``; with ``count_include_pad`` (the
    default, as in PyTorch) padded zeros count in each window's divisor.
    ``ceil_mode`` rounds the output size up, as PyTorch: the cells past the
    padding that the last partial window covers do not count in its divisor.

    Example:
        >>> import burn
        >>> x = burn.arange(16, dtype=burn.float32).reshape((1, 1, 4, 4))
        >>> assert burn.nn.functional.avg_pool2d(x, 2).tolist() == [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    if x.ndim == 3:
        return _unbatched(avg_pool2d, x, kernel_size, stride, padding, ceil_mode=ceil_mode,
                          count_include_pad=count_include_pad)
    kernel, stride, pad, _ = _pool_args("avg_pool2d", x, kernel_size, stride, padding, 1, ceil_mode)
    y = apply(avg_pool2d_p, (x,), {"kernel": kernel, "stride": stride, "padding": pad,
                                   "count_include_pad": bool(count_include_pad)})
    if count_include_pad and (pad[1] != pad[0] or pad[3] != pad[2]):
        # PyTorch counts the padding but not the ceil-mode extension: rescale the windows
        # that reach into it from kernel-size divisors to the counted cells
        ph, pw = pad[0], pad[2]
        H, W = x.shape[2:]
        rows = np.minimum(np.arange(y.shape[2]) * stride[0] + kernel[0], H + 2 * ph) - np.arange(y.shape[2]) * stride[0]
        cols = np.minimum(np.arange(y.shape[3]) * stride[1] + kernel[1], W + 2 * pw) - np.arange(y.shape[3]) * stride[1]
        scale = (kernel[0] * kernel[1]) / np.outer(rows, cols)
        y = y * C.tensor(scale, dtype=x.dtype, device=x.device)
    return y


def _pool1d(fn, op, x, kernel_size, stride, padding, **kw):
    if x.ndim == 2:
        return _unbatched(lambda t: _pool1d(fn, op, t, kernel_size, stride, padding, **kw), x)
    if x.ndim != 3:
        raise ShapeError(f"{op}: expected input [N, C, L], got {describe(x)}")
    k = _single(op, "kernel_size", kernel_size, 1)
    s = k if stride is None else _single(op, "stride", stride, 1)
    p = _single(op, "padding", padding, 0)
    y = fn(M.reshape(x, (x.shape[0], x.shape[1], 1, x.shape[2])), (1, k), (1, s), (0, p), **kw)
    return M.reshape(y, (y.shape[0], y.shape[1], y.shape[3]))


def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, *, ceil_mode=False) -> Tensor:
    """Maximum over sliding windows of ``x`` [N, C, L] (see :func:`max_pool2d`).

    Example:
        >>> import burn
        >>> y = burn.nn.functional.max_pool1d(burn.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        >>> assert y.tolist() == [[[3.0, 2.0]]]
    """
    d = _single("max_pool1d", "dilation", dilation, 1)
    return _pool1d(max_pool2d, "max_pool1d", x, kernel_size, stride, padding, dilation=(1, d),
                   ceil_mode=ceil_mode)


def avg_pool1d(x, kernel_size, stride=None, padding=0, *, ceil_mode=False, count_include_pad=True) -> Tensor:
    """Mean over sliding windows of ``x`` [N, C, L] (see :func:`avg_pool2d`).

    Example:
        >>> import burn
        >>> y = burn.nn.functional.avg_pool1d(burn.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2)
        >>> assert y.tolist() == [[[2.0, 1.0]]]
    """
    return _pool1d(avg_pool2d, "avg_pool1d", x, kernel_size, stride, padding, ceil_mode=ceil_mode,
                   count_include_pad=count_include_pad)


# -- backend-neutral helpers of the conv/pool kernels ----------------------------------------
# Shape arithmetic the backends' kernels share (flex on numpy, cuda on CuPy): pure Python /
# numpy, no device arrays.

def compute_dtype(dt):
    """The dtype a conv/pool kernel computes in: BLAS serves float32/float64 only, so
    halves (and ml_dtypes' bfloat16) go through float32.

    >>> assert compute_dtype(np.dtype(np.float16)) == np.float32
    """
    return dt if dt in (np.float32, np.float64) else np.dtype(np.float32)


def pad_nchw(x, padding, value=0, full=np.full):
    """``x`` (NCHW) padded by ``(top, bottom, left, right)`` with ``value``; ``full`` is
    the array module's ``full`` (``numpy.full``, ``cupy.full``). ``x`` itself without padding.

    >>> assert pad_nchw(np.ones((1, 1, 2, 2)), (1, 0, 0, 2), -1.0).shape == (1, 1, 3, 4)
    """
    pt, pb, pl, pr = padding
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = full((n, c, h + pt + pb, w + pl + pr), value, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def conv_out_hw(shape, kernel, stride, padding, dilation):
    """Output (height, width) of a window op over NCHW ``shape``, padding ``(t, b, l, r)``.

    >>> assert conv_out_hw((1, 1, 5, 6), (3, 3), (1, 2), (1, 1, 0, 0), (1, 1)) == (5, 2)
    """
    hp = shape[2] + padding[0] + padding[1]
    wp = shape[3] + padding[2] + padding[3]
    return ((hp - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1,
            (wp - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1)


def window_offsets(kernel, stride, dilation, out_hw):
    """For each window offset (i, j), the slices of the padded input it reads:
    yields ``(i, j, row slice, column slice)``.

    >>> (i, j, rs, cs), = window_offsets((1, 1), (2, 2), (1, 1), (2, 3))
    >>> assert (i, j, rs, cs) == (0, 0, slice(0, 3, 2), slice(0, 5, 2))
    """
    oh, ow = out_hw
    for i in range(kernel[0]):
        r = i * dilation[0]
        rs = slice(r, r + stride[0] * (oh - 1) + 1, stride[0])
        for j in range(kernel[1]):
            c = j * dilation[1]
            yield i, j, rs, slice(c, c + stride[1] * (ow - 1) + 1, stride[1])


def avg_divisor(shape_hw, kernel, stride, padding, count_include_pad, out_hw, dt):
    """The divisor of average pooling (a numpy array of dtype ``dt``): the window size, or
    per output the count of window cells inside the unpadded input.

    >>> d = avg_divisor((2, 2), (2, 2), (1, 1), (1, 1, 1, 1), False, (3, 3), np.float32)
    >>> assert d[0, 0] == 1 and d[1, 1] == 4
    """
    if count_include_pad:
        return np.asarray(kernel[0] * kernel[1], dtype=dt)
    pt, pb, pl, pr = padding
    h, w = shape_hw
    ones = np.zeros((h + pt + pb, w + pl + pr), dtype=dt)
    ones[pt:pt + h, pl:pl + w] = 1
    cnt = np.zeros(out_hw, dtype=dt)
    for _, _, rs, cs in window_offsets(kernel, stride, (1, 1), out_hw):
        cnt += ones[rs, cs]
    return cnt
