"""Export rules of the reduction, scan, sorting, matmul, convolution, pooling and creation
primitives.

Example:
    >>> from burn_onnx.export.registry import RULES
    >>> assert RULES["conv2d"].onnx == "Conv" and RULES["sum"].onnx == "ReduceSum"
"""
from __future__ import annotations

import numpy as np

import burn

from .context import Sym, make_tensor, _to_numpy_dtype
from .registry import export_rule, no_onnx_form

__all__: list = []


def _axes(node, x):
    axis = node.attrs.get("axis")
    if axis is None:
        return list(range(x.ndim))
    axis = (axis,) if isinstance(axis, int) else tuple(axis)
    return [a % max(x.ndim, 1) for a in axis]


def _reduce(name, onnx_op):
    @export_rule(name, onnx=onnx_op)
    def rule(ctx, node):
        x = node.inputs[0]
        out_dtype = node.outputs[0][1]
        xin = x.name if x.dtype is out_dtype else ctx.cast(x.name, out_dtype)
        axes = _axes(node, x)
        if not axes:
            return ctx.op("Identity", xin)
        return ctx.op(onnx_op, xin, ctx.ints(axes), keepdims=int(bool(node.attrs.get("keepdims"))))


for _n, _o in {"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}.items():
    _reduce(_n, _o)


def _bool_reduce(name, onnx_op):
    @export_rule(name, onnx=f"Cast, {onnx_op}, Cast")
    def rule(ctx, node):
        x = node.inputs[0]
        nz = x.name if x.dtype.is_bool else ctx.op("Not", ctx.op("Equal", x.name, ctx.scalar(0, x.dtype)))
        axes = _axes(node, x)
        i = ctx.cast(nz, burn.int32)
        if axes:
            i = ctx.op(onnx_op, i, ctx.ints(axes), keepdims=int(bool(node.attrs.get("keepdims"))))
        return ctx.cast(i, burn.bool_)


_bool_reduce("any", "ReduceMax")
_bool_reduce("all", "ReduceMin")


def _arg(name, onnx_op):
    @export_rule(name, onnx=onnx_op, note="first index of ties, as numpy")
    def rule(ctx, node):
        x = node.inputs[0]
        axis, keep = node.attrs.get("axis"), int(bool(node.attrs.get("keepdims")))
        xin = x.name
        if x.dtype.is_bool:
            xin = ctx.cast(xin, burn.int32)
        if axis is None:
            flat = ctx.op("Reshape", xin, ctx.ints([-1]))
            r = ctx.op(onnx_op, flat, axis=0, keepdims=0)
            return ctx.op("Reshape", r, ctx.ints([1] * x.ndim)) if keep else r
        return ctx.op(onnx_op, xin, axis=axis % x.ndim, keepdims=keep)


_arg("argmax", "ArgMax")
_arg("argmin", "ArgMin")


@export_rule("cumsum", onnx="CumSum")
def _cumsum(ctx, node):
    x = node.inputs[0]
    out_dtype = node.outputs[0][1]
    xin = x.name if x.dtype is out_dtype else ctx.cast(x.name, out_dtype)
    return ctx.op("CumSum", xin, ctx.scalar(node.attrs["axis"] % x.ndim, burn.int64))


@export_rule("cumprod", onnx="Unsqueeze, Where, ReduceProd", note="O(n^2) along the axis (ONNX has no CumProd)")
def _cumprod(ctx, node):
    x = node.inputs[0]
    if x.dynamic:
        raise ctx.fail(f"the input {x} has a size that follows a dynamic axis; cumprod is exported with a "
                       f"fixed-size triangle mask")
    out_dtype = node.outputs[0][1]
    xin = x.name if x.dtype is out_dtype else ctx.cast(x.name, out_dtype)
    ax = node.attrs["axis"] % x.ndim
    n = x.shape[ax]
    # element [.., i, j, ..] = x_j for j <= i else 1; the product over j is the prefix product
    xu = ctx.op("Unsqueeze", xin, ctx.ints([ax]))                 # [.., 1, n(j), ..]
    mask = np.tril(np.ones((n, n), bool)).reshape((n, n) + (1,) * (x.ndim - ax - 1))
    full = ctx.op("Where", ctx.const(mask), xu, ctx.scalar(1, out_dtype))
    return ctx.op("ReduceProd", full, ctx.ints([ax + 1]), keepdims=0)


@export_rule("argsort", onnx="TopK (largest=0)", note="ties in an unspecified order (TopK is not stable)")
def _argsort(ctx, node):
    x = node.inputs[0]
    ax = node.attrs["axis"] % x.ndim
    k = ctx.ints([x.dims[ax]])
    _, idx = ctx.op("TopK", x.name, k, axis=ax, largest=0, sorted=1, outputs=2)
    return idx


@export_rule("searchsorted", onnx="Unsqueeze, Less/LessOrEqual, Cast, ReduceSum")
def _searchsorted(ctx, node):
    a, v = node.inputs
    side = node.attrs.get("side", "left")
    vu = ctx.op("Unsqueeze", v.name, ctx.ints([v.ndim]))          # [..., 1] against a [n]
    cmp = ctx.op("Less" if side == "left" else "LessOrEqual", a.name, vu)
    return ctx.op("ReduceSum", ctx.cast(cmp, burn.int64), ctx.ints([v.ndim]), keepdims=0)


@export_rule("matmul", onnx="MatMul")
def _matmul(ctx, node):
    a, b = node.inputs
    if a.dtype.is_bool:
        raise ctx.fail(f"matmul of bool tensors ({a}, {b}) has no ONNX form; cast them first")
    return ctx.op("MatMul", a.name, b.name)


def _pads(padding):
    pt, pb, pl, pr = padding
    return [pt, pl, pb, pr]


@export_rule("conv2d", onnx="Conv")
def _conv2d(ctx, node):
    x, w = node.inputs
    a = node.attrs
    return ctx.op("Conv", x.name, w.name, strides=list(a["stride"]), pads=_pads(a["padding"]),
                  dilations=list(a["dilation"]), group=a["groups"], kernel_shape=list(w.shape[2:]))


@export_rule("conv2d_grad_input", onnx="ConvTranspose", note="what conv_transpose2d records")
def _conv2d_grad_input(ctx, node):
    g, w = node.inputs
    a = node.attrs
    kh, kw = w.shape[2:]
    sh, sw = a["stride"]
    dh, dw = a["dilation"]
    pt, pb, pl, pr = a["padding"]
    ih, iw = a["input_hw"]
    oh, ow = g.shape[2:]
    # ConvTranspose's size without output_padding; the rest is output_padding
    base_h = sh * (oh - 1) + dh * (kh - 1) + 1 - pt - pb
    base_w = sw * (ow - 1) + dw * (kw - 1) + 1 - pl - pr
    return ctx.op("ConvTranspose", g.name, w.name, strides=[sh, sw], pads=[pt, pl, pb, pr], dilations=[dh, dw],
                  group=a["groups"], kernel_shape=[kh, kw], output_padding=[ih - base_h, iw - base_w])


no_onnx_form("conv2d_grad_weight", "it is the weight gradient of a convolution (a backward op); export traces "
                                   "inference, under burn.no_grad()")
no_onnx_form("max_pool2d_grad", "it is the gradient of max_pool2d (a backward op); export traces inference")
no_onnx_form("avg_pool2d_grad", "it is the gradient of avg_pool2d (a backward op); export traces inference")


@export_rule("max_pool2d", onnx="MaxPool")
def _max_pool2d(ctx, node):
    x = node.inputs[0]
    a = node.attrs
    return ctx.op("MaxPool", x.name, kernel_shape=list(a["kernel"]), strides=list(a["stride"]),
                  pads=_pads(a["padding"]), dilations=list(a.get("dilation", (1, 1))))


@export_rule("avg_pool2d", onnx="AveragePool")
def _avg_pool2d(ctx, node):
    x = node.inputs[0]
    a = node.attrs
    return ctx.op("AveragePool", x.name, kernel_shape=list(a["kernel"]), strides=list(a["stride"]),
                  pads=_pads(a["padding"]), count_include_pad=int(bool(a.get("count_include_pad", True))))


# -- creation ---------------------------------------------------------------------------

def _value_tensor(value, dtype):
    return make_tensor(_to_numpy_dtype(np.asarray([value]), dtype), "value", dtype)


@export_rule("full", onnx="ConstantOfShape")
def _full(ctx, node):
    shape, dtype = node.dyn("shape"), node.attrs["dtype"]
    value = node.attrs["value"]
    if isinstance(value, complex) or dtype.is_complex:
        raise ctx.fail("a complex fill value has no ONNX form onnxruntime runs")
    return ctx.op("ConstantOfShape", ctx.ints(list(shape)), value=_value_tensor(value, dtype))


@export_rule("arange", onnx="Range")
def _arange(ctx, node):
    dtype = node.attrs["dtype"]
    start, stop, step = (node.dyn(k) for k in ("start", "stop", "step"))

    def one(v):
        if isinstance(v, Sym):
            r = ctx.op("Squeeze", ctx.sym(v), ctx.ints([0]))
            return r if dtype.name == "int64" else ctx.cast(r, dtype)
        return ctx.scalar(v, dtype)
    return ctx.op("Range", one(start), one(stop), one(step))


@export_rule("linspace", onnx="constant initializer")
def _linspace(ctx, node):
    a = node.attrs
    arr = np.linspace(a["start"], a["stop"], a["num"], endpoint=a.get("endpoint", True))
    return ctx.op("Identity", ctx.const(arr, dtype=a["dtype"]))


@export_rule("eye", onnx="ConstantOfShape, EyeLike")
def _eye(ctx, node):
    a = node.attrs
    dtype = a["dtype"]
    z = ctx.op("ConstantOfShape", ctx.ints([a["n"], a["m"] if a.get("m") is not None else a["n"]]),
               value=_value_tensor(0, dtype))
    return ctx.op("EyeLike", z, k=int(a.get("k", 0)))


def _rand_args(node):
    a = node.attrs
    return list(node.dyn("shape")), a["dtype"]


@export_rule("rand_uniform", onnx="RandomUniform", note="fresh numbers per run, from onnxruntime's generator")
def _rand_uniform(ctx, node):
    shape, dtype = _rand_args(node)
    a = node.attrs
    return _random(ctx, "RandomUniformLike", shape, dtype, low=float(a.get("low", 0.0)), high=float(a.get("high", 1.0)))


@export_rule("rand_normal", onnx="RandomNormal", note="fresh numbers per run, from onnxruntime's generator")
def _rand_normal(ctx, node):
    shape, dtype = _rand_args(node)
    a = node.attrs
    return _random(ctx, "RandomNormalLike", shape, dtype, mean=float(a.get("mean", 0.0)),
                   scale=float(a.get("std", a.get("scale", 1.0))))


@export_rule("rand_int", onnx="RandomUniform, Floor, Cast", note="fresh numbers per run")
def _rand_int(ctx, node):
    shape, dtype = _rand_args(node)
    a = node.attrs
    lo, hi = int(a["low"]), int(a["high"])
    u = _random(ctx, "RandomUniformLike", shape, burn.float64, low=float(lo), high=float(hi))
    return ctx.cast(ctx.op("Floor", u), dtype)


def _random(ctx, op, shape, dtype, **attrs):
    # the *Like form takes its shape from a tensor, so a dynamic shape works too
    like = ctx.op("ConstantOfShape", ctx.ints(shape), value=_value_tensor(0, burn.float32))
    from .context import onnx_dtype
    return ctx.op(op, like, dtype=onnx_dtype(dtype), **attrs)
