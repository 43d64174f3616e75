"""Export rules of the element-wise primitives (casts, unary and binary math, comparisons,
logic, ``where``, ``clip``). Binary primitives get operands of one dtype with numpy
broadcasting, which is ONNX's multidirectional broadcasting, so most map to one node.

Example:
    >>> from burn_onnx.export.registry import RULES
    >>> assert RULES["add"].onnx == "Add" and RULES["rsqrt"].onnx == "Sqrt, Reciprocal"
"""
from __future__ import annotations

import math

import numpy as np

from .context import onnx_dtype
from .registry import export_rule, no_onnx_form

__all__ = ["atan2"]

_DIRECT_UNARY = {
    "neg": "Neg", "positive": "Identity", "abs": "Abs", "sign": "Sign", "exp": "Exp", "log": "Log",
    "sqrt": "Sqrt", "sin": "Sin", "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan",
    "sinh": "Sinh", "cosh": "Cosh", "asinh": "Asinh", "acosh": "Acosh", "atanh": "Atanh", "tanh": "Tanh",
    "sigmoid": "Sigmoid", "relu": "Relu", "erf": "Erf", "softplus": "Softplus", "floor": "Floor",
    "ceil": "Ceil", "round": "Round", "reciprocal": "Reciprocal", "isnan": "IsNaN", "isinf": "IsInf",
    "logical_not": "Not",
}
_DIRECT_BINARY = {
    "add": "Add", "sub": "Sub", "mul": "Mul", "pow": "Pow", "maximum": "Max", "minimum": "Min",
    "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual",
    "logical_and": "And", "logical_or": "Or", "logical_xor": "Xor",
}


def _unary(name, onnx_op):
    @export_rule(name, onnx=onnx_op)
    def rule(ctx, node):
        x = node.inputs[0]
        if x.dtype.is_bool and onnx_op not in ("Not", "Identity", "IsNaN", "IsInf"):
            raise ctx.fail(f"not defined for bool input {x}")
        if onnx_op in ("IsNaN", "IsInf") and not x.dtype.is_floating:
            return _falses(ctx, x)
        return ctx.op(onnx_op, x.name)


def _falses(ctx, x):
    """An all-False bool tensor of x's shape (isnan/isinf of an integer tensor)."""
    eq = ctx.op("Equal", x.name, x.name)
    return ctx.op("Not", eq)


def _binary(name, onnx_op):
    @export_rule(name, onnx=onnx_op)
    def rule(ctx, node):
        a, b = node.inputs
        return ctx.op(onnx_op, a.name, b.name)


for _n, _o in _DIRECT_UNARY.items():
    _unary(_n, _o)
for _n, _o in _DIRECT_BINARY.items():
    _binary(_n, _o)


def _half(ctx, x, value=0.5):
    return ctx.scalar(value, x.dtype)


@export_rule("cast", onnx="Cast")
def _cast(ctx, node):
    x = node.inputs[0]
    out_dtype = node.outputs[0][1]
    onnx_dtype(x.dtype, f"the input of cast ({x})")
    if out_dtype.is_bool and x.dtype.is_floating:      # NaN is truthy in numpy: x != 0
        return ctx.op("Not", ctx.op("Equal", x.name, ctx.scalar(0, x.dtype)))
    return ctx.cast(x.name, out_dtype)


@export_rule("expm1", onnx="Exp, Sub", note="Exp(x) - 1: loses relative accuracy for |x| << 1")
def _expm1(ctx, node):
    x = node.inputs[0]
    return ctx.op("Sub", ctx.op("Exp", x.name), ctx.scalar(1, x.dtype))


@export_rule("log1p", onnx="Add, Log", note="Log(1 + x): loses relative accuracy for |x| << 1")
def _log1p(ctx, node):
    x = node.inputs[0]
    return ctx.op("Log", ctx.op("Add", x.name, ctx.scalar(1, x.dtype)))


def _log_base(name, base):
    @export_rule(name, onnx="Log, Mul")
    def rule(ctx, node):
        x = node.inputs[0]
        return ctx.op("Mul", ctx.op("Log", x.name), ctx.scalar(1.0 / math.log(base), x.dtype))


_log_base("log2", 2.0)
_log_base("log10", 10.0)


@export_rule("rsqrt", onnx="Sqrt, Reciprocal")
def _rsqrt(ctx, node):
    return ctx.op("Reciprocal", ctx.op("Sqrt", node.inputs[0].name))


@export_rule("square", onnx="Mul")
def _square(ctx, node):
    x = node.inputs[0].name
    return ctx.op("Mul", x, x)


@export_rule("gelu", onnx="Gelu (opset 20+) or Div, Erf, Add, Mul", note="exact (erf) form")
def _gelu(ctx, node):
    x = node.inputs[0]
    if ctx.opset >= 20:
        return ctx.op("Gelu", x.name)
    e = ctx.op("Erf", ctx.op("Mul", x.name, ctx.scalar(math.sqrt(0.5), x.dtype)))
    return ctx.op("Mul", ctx.op("Mul", x.name, _half(ctx, x)), ctx.op("Add", e, ctx.scalar(1, x.dtype)))


@export_rule("silu", onnx="Sigmoid, Mul")
def _silu(ctx, node):
    x = node.inputs[0].name
    return ctx.op("Mul", x, ctx.op("Sigmoid", x))


@export_rule("trunc", onnx="Abs, Floor, Sign, Mul")
def _trunc(ctx, node):
    x = node.inputs[0].name
    return ctx.op("Mul", ctx.op("Sign", x), ctx.op("Floor", ctx.op("Abs", x)))


@export_rule("isfinite", onnx="IsNaN, IsInf, Or, Not")
def _isfinite(ctx, node):
    x = node.inputs[0]
    if not x.dtype.is_floating:
        return ctx.op("Equal", x.name, x.name)
    return ctx.op("Not", ctx.op("Or", ctx.op("IsNaN", x.name), ctx.op("IsInf", x.name)))


def _signbit(ctx, x):
    """x < 0, or x == -0.0 (1/x is -inf): the sign bit for every value but a negative NaN."""
    zero = ctx.scalar(0, x.dtype)
    neg = ctx.op("Less", x.name, zero)
    negzero = ctx.op("And", ctx.op("Equal", x.name, zero), ctx.op("Less", ctx.op("Reciprocal", x.name), zero))
    return ctx.op("Or", neg, negzero)


@export_rule("signbit", onnx="Less, Equal, Reciprocal, And, Or", note="the sign bit of a NaN is not read")
def _signbit_rule(ctx, node):
    x = node.inputs[0]
    if not x.dtype.is_floating:
        return ctx.op("Less", x.name, ctx.scalar(0, x.dtype))
    return _signbit(ctx, x)


@export_rule("bitwise_invert", onnx="BitwiseNot (Not for bool)")
def _bitwise_invert(ctx, node):
    x = node.inputs[0]
    return ctx.op("Not" if x.dtype.is_bool else "BitwiseNot", x.name)


def _bitwise(name, onnx_op, bool_op):
    @export_rule(name, onnx=f"{onnx_op} ({bool_op} for bool)")
    def rule(ctx, node):
        a, b = node.inputs
        return ctx.op(bool_op if a.dtype.is_bool else onnx_op, a.name, b.name)


_bitwise("bitwise_and", "BitwiseAnd", "And")
_bitwise("bitwise_or", "BitwiseOr", "Or")
_bitwise("bitwise_xor", "BitwiseXor", "Xor")


def _real_only(name, how):
    @export_rule(name, onnx=how)
    def rule(ctx, node):
        x = node.inputs[0]
        onnx_dtype(x.dtype, f"the input of {name} ({x})")
        if name in ("real", "conj"):
            return ctx.op("Identity", x.name)
        if name == "imag":
            return ctx.op("Mul", x.name, ctx.scalar(0, x.dtype))
        # angle of a real number: pi where negative, else 0 (NaN stays NaN)
        zero = ctx.scalar(0, node.outputs[0][1])
        xf = x.name if x.dtype is node.outputs[0][1] else ctx.cast(x.name, node.outputs[0][1])
        pi = ctx.op("Mul", ctx.op("Add", xf, zero), zero)
        return ctx.op("Where", ctx.op("Less", xf, zero), ctx.scalar(math.pi, node.outputs[0][1]), pi)


_real_only("real", "Identity (real inputs)")
_real_only("conj", "Identity (real inputs)")
_real_only("imag", "Mul by 0 (real inputs)")
_real_only("angle", "Less, Where (real inputs)")


@export_rule("div", onnx="Div")
def _div(ctx, node):
    a, b = node.inputs
    if not a.dtype.is_floating:
        raise ctx.fail(f"integer true division of {a} and {b}; burn casts integer operands to float first, "
                       f"so this graph is not burn's")
    return ctx.op("Div", a.name, b.name)


@export_rule("ne", onnx="Equal, Not")
def _ne(ctx, node):
    a, b = node.inputs
    return ctx.op("Not", ctx.op("Equal", a.name, b.name))


def _floor_div_float(ctx, a, b):
    return ctx.op("Floor", ctx.op("Div", a, b))


@export_rule("remainder", onnx="Mod (integers) or Div, Floor, Mul, Sub", note="numpy semantics: the sign of the divisor")
def _remainder(ctx, node):
    a, b = node.inputs
    if a.dtype.is_floating:
        return ctx.op("Sub", a.name, ctx.op("Mul", _floor_div_float(ctx, a.name, b.name), b.name))
    return ctx.op("Mod", a.name, b.name, fmod=0)


@export_rule("floor_divide", onnx="Div, Floor (floats) or Mod, Sub, Div (integers)")
def _floor_divide(ctx, node):
    a, b = node.inputs
    if a.dtype.is_floating:
        return _floor_div_float(ctx, a.name, b.name)
    # exact: a - (a mod b) is a multiple of b, so ONNX's truncating Div is the floor
    return ctx.op("Div", ctx.op("Sub", a.name, ctx.op("Mod", a.name, b.name, fmod=0)), b.name)


@export_rule("atan2", onnx="Div, Atan, Where, Add, Sub")
def _atan2(ctx, node):
    return atan2(ctx, *node.inputs)


def atan2(ctx, y, x):
    """numpy's arctan2 of the Values ``y`` and ``x`` (every quadrant, signed zeros)."""
    d = y.dtype
    zero, pi = ctx.scalar(0, d), ctx.scalar(math.pi, d)
    base = ctx.op("Atan", ctx.op("Div", y.name, x.name))
    ylt = ctx.op("Less", y.name, zero)
    # x < 0: shift by +-pi (the sign of y, with -0.0 counted negative)
    yneg = _signbit(ctx, y)
    shifted = ctx.op("Where", yneg, ctx.op("Sub", base, pi), ctx.op("Add", base, pi))
    xneg = _signbit(ctx, x)
    out = ctx.op("Where", xneg, shifted, base)
    # x == 0 (either sign) and y != 0: +-pi/2
    half = ctx.op("Where", ylt, ctx.scalar(-math.pi / 2, d), ctx.scalar(math.pi / 2, d))
    x0 = ctx.op("And", ctx.op("Equal", x.name, zero), ctx.op("Not", ctx.op("Equal", y.name, zero)))
    return ctx.op("Where", x0, half, out)


@export_rule("hypot", onnx="Mul, Add, Sqrt")
def _hypot(ctx, node):
    a, b = (v.name for v in node.inputs)
    return ctx.op("Sqrt", ctx.op("Add", ctx.op("Mul", a, a), ctx.op("Mul", b, b)))


@export_rule("logaddexp", onnx="Max, Sub, Abs, Neg, Exp, Add, Log")
def _logaddexp(ctx, node):
    a, b = node.inputs
    m = ctx.op("Max", a.name, b.name)
    t = ctx.op("Exp", ctx.op("Neg", ctx.op("Abs", ctx.op("Sub", a.name, b.name))))
    out = ctx.op("Add", m, ctx.op("Log", ctx.op("Add", t, ctx.scalar(1, a.dtype))))
    # both -inf: -inf (the difference is NaN)
    return ctx.op("Where", ctx.op("Equal", a.name, b.name), ctx.op("Add", a.name, ctx.scalar(math.log(2.0), a.dtype)), out)


@export_rule("copysign", onnx="Abs, Where, Neg")
def _copysign(ctx, node):
    a, b = node.inputs
    mag = ctx.op("Abs", a.name)
    return ctx.op("Where", _signbit(ctx, b), ctx.op("Neg", mag), mag)


no_onnx_form("nextafter", "it steps to the adjacent floating-point value, which needs bit-level access ONNX "
                          "does not offer; compute it before export")
no_onnx_form("make_complex", "it makes a complex tensor, and onnxruntime runs no complex ops; export the real "
                             "and imaginary parts as separate outputs")


@export_rule("where", onnx="Where")
def _where(ctx, node):
    c, a, b = node.inputs
    cond = c.name if c.dtype.is_bool else ctx.op("Not", ctx.op("Equal", c.name, ctx.scalar(0, c.dtype)))
    return ctx.op("Where", cond, a.name, b.name)


@export_rule("clip", onnx="Clip")
def _clip(ctx, node):
    x = node.inputs[0]
    lo, hi = node.attrs.get("min"), node.attrs.get("max")
    if x.dtype.is_bool:
        raise ctx.fail(f"not defined for bool input {x}")
    args = [x.name, None if lo is None else ctx.scalar(np.asarray(lo), x.dtype),
            None if hi is None else ctx.scalar(np.asarray(hi), x.dtype)]
    while args[-1] is None:
        args.pop()
    return ctx.op("Clip", *args)
