"""Import rules of the element-wise operators: unary math, activations, arithmetic and
comparisons with numpy broadcasting, Where, Clip, Cast (one line per op where it can be).

A constant operand of one element that broadcasting would not enlarge is bound as a python
number, so ``x * 0.5`` runs as burn's scalar op (fusable) rather than a broadcast tensor.

Example:
    >>> from burn_onnx.importer.registry import OPS
    >>> assert {"Add", "Erf", "Where", "Cast"} <= set(OPS)
"""
from __future__ import annotations

import math

import numpy as np

import burn

from .registry import rule

__all__: list = []


def _as_scalar(v, other):
    """``v`` as a python number if it is a one-element constant that broadcasting against the
    tensor ``other`` would not enlarge and whose kind (bool / integer / float) is ``other``'s,
    else None."""
    if not isinstance(v, np.ndarray) or v.size != 1 or not isinstance(other, burn.Tensor) or v.ndim > other.ndim:
        return None
    if other.dtype is burn.bool:
        same_kind = v.dtype.kind == "b"
    elif other.dtype.is_inexact:
        same_kind = v.dtype.kind == "f"
    else:
        same_kind = v.dtype.kind in "iu"
    return v.reshape(()).item() if same_kind else None


_UNARY = {
    "Abs": burn.abs, "Neg": burn.neg, "Exp": burn.exp, "Log": burn.log, "Sqrt": burn.sqrt,
    "Reciprocal": burn.reciprocal, "Sigmoid": burn.sigmoid, "Tanh": burn.tanh, "Relu": burn.relu,
    "Erf": burn.erf, "Floor": burn.floor, "Ceil": burn.ceil, "Round": burn.round, "Sin": burn.sin,
    "Cos": burn.cos, "Tan": burn.tan, "Asin": burn.asin, "Acos": burn.acos, "Atan": burn.atan,
    "Sinh": burn.sinh, "Cosh": burn.cosh, "Asinh": burn.asinh, "Acosh": burn.acosh, "Atanh": burn.atanh,
    "Sign": burn.sign, "Not": burn.logical_not, "IsNaN": burn.isnan, "Softplus": burn.softplus,
    "BitwiseNot": burn.bitwise_invert,
}


@rule(*_UNARY)
def _unary(node, x):
    return _UNARY[node.op]


@rule("Identity")
def _identity(node, x):
    return lambda x: x


@rule("Dropout", static=(1, 2), note="identity (inference semantics); a mask output is all true")
def _dropout(node, x, ratio=None, training=None):
    if training is not None and bool(np.asarray(training).reshape(())):
        raise node.fail("training_mode=True dropout is not supported (the imported graph runs "
                        "inference semantics; use burn.nn.Dropout in a wrapper Module)")
    if len(node.outputs) > 1 and node.outputs[1]:
        return lambda x, *_: (x, burn.ones(x.shape, dtype=burn.bool, device=x.device))
    return lambda x, *_: x


@rule("IsInf")
def _isinf(node, x):
    pos, neg = node.attr("detect_positive", 1), node.attr("detect_negative", 1)
    if pos and neg:
        return burn.isinf
    if pos:
        return lambda x: burn.logical_and(burn.isinf(x), x > 0)
    return lambda x: burn.logical_and(burn.isinf(x), x < 0)


@rule("LeakyRelu")
def _leaky_relu(node, x):
    a = float(node.attr("alpha", 0.01))
    return lambda x: burn.where(x >= 0, x, x * a)


@rule("Elu")
def _elu(node, x):
    a = float(node.attr("alpha", 1.0))
    return lambda x: burn.where(x > 0, x, burn.expm1(x) * a)


@rule("Selu")
def _selu(node, x):
    a, g = float(node.attr("alpha", 1.67326319217681884765625)), float(node.attr("gamma", 1.05070102214813232421875))
    return lambda x: burn.where(x > 0, x, burn.expm1(x) * a) * g


@rule("HardSigmoid")
def _hard_sigmoid(node, x):
    a, b = float(node.attr("alpha", 0.2)), float(node.attr("beta", 0.5))
    return lambda x: burn.clip(x * a + b, 0.0, 1.0)


@rule("HardSwish")
def _hard_swish(node, x):
    return lambda x: x * burn.clip(x * (1.0 / 6.0) + 0.5, 0.0, 1.0)


@rule("Softsign")
def _softsign(node, x):
    return lambda x: x / (burn.abs(x) + 1.0)


@rule("Gelu")
def _gelu(node, x):
    if node.attr("approximate", "none") == "tanh":
        c = math.sqrt(2.0 / math.pi)
        return lambda x: x * (burn.tanh((x + x * x * x * 0.044715) * c) + 1.0) * 0.5
    return burn.gelu


def _binary(fn):
    def build(node, a, b):
        sb, sa = _as_scalar(b, a), _as_scalar(a, b)
        if sb is not None:
            return lambda a, b: fn(a, sb)
        if sa is not None:
            return lambda a, b: fn(sa, b)
        return fn
    return build


def _div(a, b):
    if isinstance(a, burn.Tensor) and not a.dtype.is_inexact:   # ONNX integer Div truncates
        q = burn.astype(a, burn.float64) / b
        return burn.astype(burn.trunc(q), a.dtype)
    return a / b


_BINARY = {
    "Add": lambda a, b: a + b, "Sub": lambda a, b: a - b, "Mul": lambda a, b: a * b, "Div": _div,
    "Pow": lambda a, b: a ** b, "Equal": burn.equal, "Less": burn.less, "LessOrEqual": burn.less_equal,
    "Greater": burn.greater, "GreaterOrEqual": burn.greater_equal, "And": burn.logical_and,
    "Or": burn.logical_or, "Xor": burn.logical_xor, "BitwiseAnd": burn.bitwise_and,
    "BitwiseOr": burn.bitwise_or, "BitwiseXor": burn.bitwise_xor,
}
for _op, _fn in _BINARY.items():
    rule(_op)(_binary(_fn))


@rule("Mod")
def _mod(node, a, b):
    if node.attr("fmod", 0):
        return lambda a, b: a - burn.trunc(a / b) * b
    return burn.remainder


def _variadic(fn, mean=False):
    def build(node, *xs):
        def run(*xs):
            out = xs[0]
            for x in xs[1:]:
                out = fn(out, x)
            return out * (1.0 / len(xs)) if mean else out
        return run
    return build


rule("Max")(_variadic(burn.maximum))
rule("Min")(_variadic(burn.minimum))
rule("Sum")(_variadic(lambda a, b: a + b))
rule("Mean")(_variadic(lambda a, b: a + b, mean=True))


@rule("Where")
def _where(node, c, x, y):
    sx, sy = _as_scalar(x, y), _as_scalar(y, x)
    if sy is not None:
        return lambda c, x, y: burn.where(c, x, sy)
    if sx is not None:
        return lambda c, x, y: burn.where(c, sx, y)
    return burn.where


@rule("Clip")
def _clip(node, x, lo=None, hi=None):
    if node.opset < 11:
        lo_s, hi_s = node.attr("min", None), node.attr("max", None)
        return lambda x: burn.clip(x, lo_s, hi_s)
    lo_s = None if lo is None else _as_scalar(lo, x)
    hi_s = None if hi is None else _as_scalar(hi, x)
    if (lo is None or lo_s is not None) and (hi is None or hi_s is not None):
        return lambda x, *_: burn.clip(x, lo_s, hi_s)

    def run(x, lo=None, hi=None):
        if lo is not None:
            x = burn.maximum(x, lo)
        return x if hi is None else burn.minimum(x, hi)
    return run


def onnx_dtype(node, code):
    """The burn dtype of an ONNX TensorProto type code."""
    from onnx import helper
    try:
        return burn.as_dtype(helper.tensor_dtype_to_np_dtype(int(code)))
    except Exception as e:
        raise node.fail(f"element type {helper.tensor_dtype_to_string(int(code))} has no burn dtype ({e})")


@rule("Cast")
def _cast(node, x):
    to = onnx_dtype(node, node.attr("to"))
    return lambda x: x if x.dtype is to else burn.astype(x, to)


@rule("CastLike")
def _cast_like(node, x, like):
    return lambda x, like: x if x.dtype is like.dtype else burn.astype(x, like.dtype)


@rule("Mish")
def _mish(node, x):
    return lambda x: x * burn.tanh(burn.softplus(x))
