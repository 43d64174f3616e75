"""Conformance cases: Element-wise ops: unary, binary, operators, complex, promotion and Python scalars."""
from __future__ import annotations

import math

import numpy as np

import burn

from .._table import ALL_DTYPES, COMPLEX, FLOATS, INTS, NUMERIC, Arg, _add
from ._common import _family, _float_out, _erf, _sigmoid


# -- element-wise -----------------------------------------------------------------------

def _unary():
    F = burn
    X = (Arg((2, 3)),)
    float_ops = [  # name, fn, ref, low, high, kind
        ("exp", F.exp, np.exp, -2, 2, "real"),
        ("expm1", F.expm1, np.expm1, -2, 2, "real"),
        ("log", F.log, np.log, 0.2, 3, "real"),
        ("log1p", F.log1p, np.log1p, -0.5, 3, "real"),
        ("log2", F.log2, np.log2, 0.2, 3, "real"),
        ("log10", F.log10, np.log10, 0.2, 3, "real"),
        ("sqrt", F.sqrt, np.sqrt, 0.2, 3, "real"),
        ("rsqrt", F.rsqrt, lambda x: 1 / np.sqrt(x), 0.2, 3, "real"),
        ("sin", F.sin, np.sin, -3, 3, "real"),
        ("cos", F.cos, np.cos, -3, 3, "real"),
        ("tan", F.tan, np.tan, -1.2, 1.2, "real"),
        ("asin", F.asin, np.arcsin, -0.9, 0.9, "real"),
        ("acos", F.acos, np.arccos, -0.9, 0.9, "real"),
        ("atan", F.atan, np.arctan, -3, 3, "real"),
        ("sinh", F.sinh, np.sinh, -2, 2, "real"),
        ("cosh", F.cosh, np.cosh, -2, 2, "real"),
        ("tanh", F.tanh, np.tanh, -2, 2, "real"),
        ("asinh", F.asinh, np.arcsinh, -3, 3, "real"),
        ("acosh", F.acosh, np.arccosh, 1.2, 3, "real"),
        ("atanh", F.atanh, np.arctanh, -0.9, 0.9, "real"),
        ("sigmoid", F.sigmoid, _sigmoid, -4, 4, "real"),
        ("gelu", F.gelu, lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))), -3, 3, "real"),
        ("silu", F.silu, lambda x: x * _sigmoid(x), -3, 3, "real"),
        ("softplus", F.softplus, lambda x: np.logaddexp(0, x), -3, 3, "real"),
        ("erf", F.erf, _erf, -2, 2, "real"),
        ("reciprocal", F.reciprocal, lambda x: 1 / x, -2, 2, "nonzero"),
    ]
    for name, fn, ref, lo, hi, kind in float_ops:
        args = (Arg((2, 3), low=lo, high=hi, kind=kind),)
        _family(name, fn, ref, args, FLOATS, out=_float_out)
        # integers are promoted to the default float
        _add(f"{name}[int32]", name, "forward", fn,
             (Arg((2, 3), "int32", max(math.ceil(lo), -2) if kind != "nonzero" else -3,
                  max(math.floor(hi), math.ceil(lo)), kind),), ref, out=_float_out)
    same_ops = [  # name, fn, ref, dtypes, differentiable, kind
        ("neg", F.neg, np.negative, FLOATS + ("int8", "int32", "int64"), True, "real"),
        ("positive", F.positive, np.positive, NUMERIC, True, "real"),
        ("abs", F.abs, np.abs, NUMERIC, True, "nonzero"),
        ("sign", F.sign, np.sign, NUMERIC, False, "real"),
        ("square", F.square, np.square, NUMERIC, True, "real"),
        ("relu", F.relu, lambda x: np.maximum(x, 0), NUMERIC, True, "nonzero"),
        ("floor", F.floor, np.floor, NUMERIC, False, "real"),
        ("ceil", F.ceil, np.ceil, NUMERIC, False, "real"),
        ("trunc", F.trunc, np.trunc, NUMERIC, False, "real"),
        ("round", F.round, np.round, NUMERIC, False, "real"),
    ]
    for name, fn, ref, dtypes, diff, kind in same_ops:
        args = (Arg((2, 3), low=-3, high=3, kind=kind),)
        _family(name, fn, ref, args, dtypes, grad=diff, tol16=2.0)
    _family("round", F.round, np.round, (Arg((2, 4), kind="halves"),), FLOATS, grad=False,
            variant="half-even")
    for name, fn, ref in [("isnan", F.isnan, np.isnan), ("isinf", F.isinf, np.isinf),
                          ("isfinite", F.isfinite, np.isfinite), ("signbit", F.signbit, np.signbit)]:
        _family(name, fn, ref, (Arg((2, 4), kind="special"),), FLOATS, grad=False, out="bool")
        _add(f"{name}[int32]", name, "forward", fn, (Arg((2, 3), "int32", -3, 3),), ref, out="bool")
    _family("logical_not", F.logical_not, np.logical_not, (Arg((2, 3), "bool"),), ("bool",), grad=False,
            out="bool")
    _add("logical_not[float32]", "logical_not", "forward", F.logical_not, (Arg((2, 3), low=-1, high=1,
                                                                               kind="index"),),
         np.logical_not, out="bool")
    _family("bitwise_invert", F.bitwise_invert, np.invert, (Arg((2, 3), low=-5, high=5),), INTS + ("bool",),
            grad=False)
    _add("__invert__[bool]", "bitwise_invert", "forward", lambda x: ~x, (Arg((2, 3), "bool"),), np.invert)
    _add("__invert__[int32]", "bitwise_invert", "forward", lambda x: ~x, (Arg((2, 3), "int32", -5, 5),),
         np.invert)
    _add("__neg__[float32]", "neg", "forward", lambda x: -x, X, np.negative)
    _add("__abs__[int64]", "abs", "forward", lambda x: abs(x), (Arg((2, 3), "int64", -4, 4),), np.abs)
    for d in ("float16", "int32", "bool"):
        _add(f"astype[{d}->float64]", "astype", "forward", lambda x: x.astype(burn.float64),
             (Arg((2, 3), d, -3, 3),), lambda x: x.astype(np.float64), out="float64")
    for d in FLOATS + INTS + ("bool",):
        # float -> integer truncates toward zero, as numpy and C do
        _add(f"astype[float32->{d}]", "astype", "forward", lambda x, d=d: x.astype(d),
             (Arg((2, 3), "float32", 0, 4),), lambda x, d=d: x.astype(np.float64) if d in FLOATS
             else x.astype(np.dtype(d)), out=d)
    _add("astype[grad]", "astype", "grad", lambda x: x.astype(burn.float32).astype(burn.float64) * x,
         (Arg((2, 3), "float64"),), tol=100.0)
    _add("nan_to_num[float32]", "nan_to_num", "forward", lambda x: burn.nan_to_num(x, nan=0.5),
         (Arg((2, 4), kind="special"),),
         lambda x: np.nan_to_num(x.astype(np.float32), nan=0.5).astype(np.float64))



def _binary():
    F = burn
    # binary ops
    binary = [  # name, fn, ref, dtypes, differentiable, (a arg, b arg)
        ("add", F.add, np.add, NUMERIC, True, None),
        ("subtract", F.subtract, np.subtract, NUMERIC, True, (Arg(low=5, high=9), Arg(low=0, high=4))),
        ("multiply", F.multiply, np.multiply, NUMERIC, True, None),
        ("maximum", F.maximum, np.maximum, NUMERIC, True, (Arg(kind="distinct"), Arg(low=-1.95, high=1.9))),
        ("minimum", F.minimum, np.minimum, NUMERIC, True, (Arg(kind="distinct"), Arg(low=-1.95, high=1.9))),
        ("atan2", F.atan2, np.arctan2, FLOATS, True, (Arg(), Arg(kind="nonzero"))),
        ("hypot", F.hypot, np.hypot, FLOATS, True, (Arg(kind="nonzero"), Arg(kind="nonzero"))),
        ("logaddexp", F.logaddexp, np.logaddexp, FLOATS, True, None),
        ("copysign", F.copysign, np.copysign, FLOATS, False, (Arg(), Arg(kind="nonzero"))),
    ]
    for name, fn, ref, dtypes, diff, ab in binary:
        ab = ab or (Arg(), Arg())
        ab = tuple(Arg((2, 3), a.dtype, a.low, a.high, a.kind) for a in ab)
        _family(name, fn, ref, ab, dtypes, grad=diff, tol16=2.0)
    # integer operands keep their dtype except where the op is true division
    _family("divide", F.divide, np.true_divide, (Arg((2, 3)), Arg((2, 3), kind="nonzero")), FLOATS,
            tol16=2.0)
    _add("div[alias,float32]", "divide", "forward", F.div, (Arg((2, 3)), Arg((2, 3), kind="nonzero")),
         np.true_divide)
    for d in INTS:
        _add(f"divide[{d}]", "divide", "forward", F.divide,
             (Arg((2, 3), d, -6, 6), Arg((2, 3), d, 1, 3, "nonzero")), np.true_divide, out="float32")
    _family("pow", F.pow, np.power, (Arg((2, 3), low=0.3, high=2), Arg((2, 3), low=-2, high=2)), FLOATS,
            tol16=3.0)
    for d in INTS:
        _add(f"pow[{d}]", "pow", "forward", F.pow, (Arg((2, 3), d, 0, 3), Arg((2, 3), d, 0, 3)), np.power)
    for d in ("int8", "int32", "int64"):    # negative integer exponents: PyTorch's (C's) result everywhere
        _add(f"pow[{d},negative-exponent]", "pow", "forward", F.pow,
             (Arg((3, 4), d, -3, 3), Arg((3, 4), d, -3, 3)), _int_pow_torch)
    # remainder and floor_divide follow Python/numpy: the result takes the divisor's sign
    rem_args = (Arg((2, 4), low=-5, high=5), Arg((2, 4), low=-3, high=3, kind="nonzero"))
    _family("remainder", F.remainder, np.remainder, rem_args, FLOATS + ("int8", "int32", "int64"),
            grad=True, tol16=4.0)
    _add("remainder[uint8]", "remainder", "forward", F.remainder,
         (Arg((2, 4), "uint8", 0, 9), Arg((2, 4), "uint8", 1, 4, "nonzero")), np.remainder)
    _family("floor_divide", F.floor_divide, np.floor_divide, rem_args, FLOATS + ("int8", "int32", "int64"),
            grad=False, tol16=4.0)
    for name, fn, ref in [("equal", F.equal, np.equal), ("not_equal", F.not_equal, np.not_equal),
                          ("less", F.less, np.less), ("less_equal", F.less_equal, np.less_equal),
                          ("greater", F.greater, np.greater), ("greater_equal", F.greater_equal,
                                                                np.greater_equal)]:
        # integer values make ties, where the comparisons differ
        for d in NUMERIC:
            lo = 0 if d == "uint8" else -2
            _add(f"{name}[{d}]", name, "forward", fn, (Arg((3, 4), d, lo, 2), Arg((3, 4), d, lo, 2)), ref,
                 out="bool")
        _add(f"{name}[bool]", name, "forward", fn, (Arg((3, 4), "bool"), Arg((3, 4), "bool")), ref, out="bool")
    for name, fn, ref in [("logical_and", F.logical_and, np.logical_and),
                          ("logical_or", F.logical_or, np.logical_or),
                          ("logical_xor", F.logical_xor, np.logical_xor)]:
        _add(f"{name}[bool]", name, "forward", fn, (Arg((2, 4), "bool"), Arg((2, 4), "bool")), ref, out="bool")
        _add(f"{name}[int32]", name, "forward", fn, (Arg((2, 4), "int32", 0, 2), Arg((2, 4), "int32", 0, 2)),
             ref, out="bool")
    for name, fn, ref in [("bitwise_and", F.bitwise_and, np.bitwise_and),
                          ("bitwise_or", F.bitwise_or, np.bitwise_or),
                          ("bitwise_xor", F.bitwise_xor, np.bitwise_xor)]:
        for d in INTS + ("bool",):
            _add(f"{name}[{d}]", name, "forward", fn, (Arg((2, 4), d, 0, 9), Arg((2, 4), d, 0, 9)), ref)
    # operators, including reflected ones and in-place updates
    ops = [("__add__", lambda a, b: a + b, np.add), ("__sub__", lambda a, b: a - b, np.subtract),
           ("__mul__", lambda a, b: a * b, np.multiply), ("__truediv__", lambda a, b: a / b, np.true_divide),
           ("__floordiv__", lambda a, b: a // b, np.floor_divide), ("__mod__", lambda a, b: a % b, np.remainder),
           ("__pow__", lambda a, b: abs(a) ** b, lambda a, b: np.abs(a) ** b),
           ("__lt__", lambda a, b: a < b, np.less), ("__le__", lambda a, b: a <= b, np.less_equal),
           ("__gt__", lambda a, b: a > b, np.greater), ("__ge__", lambda a, b: a >= b, np.greater_equal),
           ("__eq__", lambda a, b: a == b, np.equal), ("__ne__", lambda a, b: a != b, np.not_equal)]
    for name, fn, ref in ops:
        out = "bool" if name in ("__lt__", "__le__", "__gt__", "__ge__", "__eq__", "__ne__") else None
        _add(f"{name}[float32]", name.strip("_"), "forward", fn,
             (Arg((2, 3), kind="nonzero"), Arg((2, 3), kind="nonzero")), ref, out=out, tol=2.0)
    _add("__and__[bool]", "logical_and", "forward", lambda a, b: a & b, (Arg((2, 3), "bool"),) * 2, np.logical_and)
    _add("__or__[bool]", "logical_or", "forward", lambda a, b: a | b, (Arg((2, 3), "bool"),) * 2, np.logical_or)
    _add("__xor__[int64]", "bitwise_xor", "forward", lambda a, b: a ^ b, (Arg((2, 3), "int64", 0, 9),) * 2,
         np.bitwise_xor)

    def iadd(a, b):
        c = a * 1
        c += b
        c -= 0.5
        c *= b
        c /= 2.0
        return c
    _add("__iadd__[float32]", "add", "forward", iadd, (Arg((2, 3)), Arg((2, 3))),
         lambda a, b: (a + b - 0.5) * b / 2.0)
    _add("__iadd__[grad]", "add", "grad", iadd, (Arg((2, 3), "float64"), Arg((2, 3), "float64")))

    # where and clip
    for d in ALL_DTYPES:
        _add(f"where[{d}]", "where", "forward", F.where,
             (Arg((2, 3), "bool"), Arg((2, 3), d, 0, 5), Arg((2, 3), d, 0, 5)), np.where,
             out=lambda ds: burn.result_type(*map(burn.as_dtype, ds[1:])).name)
    _add("where[broadcast,float32]", "where", "forward", F.where,
         (Arg((2, 1), "bool"), Arg((3,)), Arg((2, 3))), np.where, out="float32")
    _add("where[scalar,float32]", "where", "forward", lambda c, x: F.where(c, x, 0.0),
         (Arg((2, 3), "bool"), Arg((2, 3))), lambda c, x: np.where(c, x, 0.0), out="float32")
    _add("where[grad]", "where", "grad", F.where,
         (Arg((2, 1), "bool"), Arg((3,), "float64"), Arg((2, 3), "float64")))
    for d in FLOATS + ("int8", "int32", "int64"):
        _add(f"clip[{d}]", "clip", "forward", lambda x: F.clip(x, -1, 1), (Arg((3, 4), d, -3, 3),),
             lambda x: np.clip(x, -1, 1))
    _add("clip[max-only,float32]", "clip", "forward", lambda x: F.clip(x, max=0.5), (Arg((3, 4)),),
         lambda x: np.minimum(x, 0.5))
    _add("clip[tensor-bounds,float32]", "clip", "forward", lambda x, lo: F.clip(x, lo, 1.0),
         (Arg((3, 4)), Arg((4,), low=-1, high=0)), lambda x, lo: np.minimum(np.maximum(x, lo), 1.0))
    _add("clip[grad]", "clip", "grad", lambda x: F.clip(x, -1, 1), (Arg((3, 4), "float64", -3, 3),))
    _add("clip[tensor-bounds,grad]", "clip", "grad", lambda x, lo: F.clip(x, lo, 1.0),
         (Arg((3, 4), "float64"), Arg((4,), "float64", -1, 0)))

    # broadcasting, forward and the adjoint (sum over broadcast axes) in backward
    for sa, sb in [((2, 3), (3,)), ((2, 1), (1, 3)), ((4, 1, 3), (2, 1)), ((), (2, 3)), ((2, 3), ()),
                   ((1,), (2, 3))]:
        tag = f"{sa}x{sb}".replace(" ", "")
        for name, fn, ref in [("add", F.add, np.add), ("multiply", F.multiply, np.multiply),
                              ("divide", F.divide, np.true_divide), ("maximum", F.maximum, np.maximum)]:
            b_kind = "nonzero" if name == "divide" else "real"
            _add(f"{name}[broadcast{tag},float32]", name, "forward", fn, (Arg(sa), Arg(sb, kind=b_kind)), ref)
            _add(f"{name}[broadcast{tag},grad]", name, "grad", fn,
                 (Arg(sa, "float64"), Arg(sb, "float64", kind=b_kind)))


def _complex():
    F = burn
    Z = (Arg((2, 3), "complex64"),)
    real_of = (lambda ds: "float32" if ds[0] == "complex64" else "float64")
    for name, fn, ref, out in [("real", F.real, np.real, real_of), ("imag", F.imag, np.imag, real_of),
                               ("angle", F.angle, np.angle, real_of), ("abs", F.abs, np.abs, real_of),
                               ("conj", F.conj, np.conj, None), ("exp", F.exp, np.exp, None),
                               ("sqrt", F.sqrt, np.sqrt, None), ("neg", F.neg, np.negative, None),
                               ("square", F.square, np.square, None)]:
        _family(name, fn, ref, Z, COMPLEX, grad=False, variant="complex", out=out)
    for name, fn, ref in [("add", F.add, np.add), ("subtract", F.subtract, np.subtract),
                          ("multiply", F.multiply, np.multiply), ("divide", F.divide, np.true_divide),
                          ("equal", F.equal, np.equal)]:
        _family(name, fn, ref, Z * 2, COMPLEX, grad=False, variant="complex",
                out="bool" if name == "equal" else None)
    _family("matmul", F.matmul, np.matmul, (Arg((2, 3), "complex64"), Arg((3, 2), "complex64")), COMPLEX,
            grad=False, variant="complex", tol=3.0)
    _family("sum", lambda x: F.sum(x, axis=1), lambda x: np.sum(x, axis=1), Z, COMPLEX, grad=False,
            variant="complex", tol=3.0)
    for a, b, r in [("complex64", "float64", "complex128"), ("complex64", "float32", "complex64"),
                    ("complex128", "int64", "complex128")]:
        _add(f"add[promote,{a}+{b}]", "add", "forward", F.add, (Arg((2, 3), a), Arg((2, 3), b)), np.add, out=r)
    _add("astype[float32->complex64]", "astype", "forward", lambda x: x.astype(F.complex64), (Arg(),),
         lambda x: x.astype(np.complex128), out="complex64")
    _add("scalar[x*1j,float32]", "scalar", "forward", lambda x: x * 1j, (Arg(),), lambda x: x * 1j,
         out="complex64")


def _promotion_and_scalars():
    # the promotion rules of burn.dtypes, spelled out (not computed) so a change is visible
    table = [("int8", "int32", "int32"), ("uint8", "int8", "int16"), ("uint8", "int64", "int64"),
             ("int32", "int64", "int64"), ("uint8", "float32", "float32"), ("int32", "float16", "float16"),
             ("int64", "float32", "float32"), ("int64", "bfloat16", "bfloat16"),
             ("float16", "bfloat16", "float32"), ("float16", "float32", "float32"),
             ("bfloat16", "float64", "float64"), ("float32", "float64", "float64"),
             ("bool", "int8", "int8"), ("bool", "uint8", "uint8"), ("bool", "float16", "float16"),
             ("bool", "float32", "float32")]
    for a, b, r in table:
        for name, fn, ref in [("add", burn.add, np.add), ("multiply", burn.multiply, np.multiply)]:
            _add(f"{name}[promote,{a}+{b}]", name, "forward", fn, (Arg((2, 3), a, 0, 3), Arg((2, 3), b, 0, 3)),
                 ref, out=r)
        _add(f"where[promote,{a}+{b}]", "where", "forward", burn.where,
             (Arg((2, 3), "bool"), Arg((2, 3), a, 0, 3), Arg((2, 3), b, 0, 3)), np.where, out=r)
    _add("concat[promote,int32+float16]", "concat", "forward", lambda a, b: burn.concat([a, b]),
         (Arg((2, 3), "int32", 0, 4), Arg((1, 3), "float16")), lambda a, b: np.concatenate([a, b]), out="float16")
    _add("matmul[promote,int32@float32]", "matmul", "forward", burn.matmul,
         (Arg((2, 3), "int32", -2, 2), Arg((3, 2))), np.matmul, out="float32")
    # Python scalars take the tensor's dtype; floats lift integer tensors to float32
    scal = [("x+1", lambda x: x + 1, lambda x: x + 1, None),
            ("1-x", lambda x: 1 - x, lambda x: 1 - x, None),
            ("x*2.5", lambda x: x * 2.5, lambda x: x * 2.5, _float_out),
            ("2.5/x", lambda x: 2.5 / x, lambda x: 2.5 / x, _float_out),
            ("x**2", lambda x: x ** 2, lambda x: x ** 2, None),
            ("2**x", lambda x: 2 ** x, lambda x: 2.0 ** x, None),
            ("x>0.5", lambda x: x > 0.5, lambda x: x > 0.5, "bool"),
            ("x==1", lambda x: x == 1, lambda x: x == 1, "bool"),
            ("max(x,0.5)", lambda x: burn.maximum(x, 0.5), lambda x: np.maximum(x, 0.5), _float_out)]
    for tag, fn, ref, out in scal:
        for d in ("float16", "bfloat16", "float32", "float64", "int8", "int32", "int64", "uint8"):
            lo = 1 if tag == "2.5/x" else 0
            _add(f"scalar[{tag},{d}]", "scalar", "forward", fn, (Arg((2, 3), d, lo, 3, "real" if lo == 0
                                                                         else "nonzero"),), ref, out=out,
                 tol=4.0)
        if out != "bool":
            _add(f"scalar[{tag},grad]", "scalar", "grad", fn, (Arg((2, 3), "float64", 0.5, 2),))
    _add("scalar[bool+1]", "scalar", "forward", lambda x: x + 1, (Arg((2, 3), "bool"),),
         lambda x: x.astype(np.int64) + 1, out="int64")
    _add("scalar[0d-tensor,float16]", "scalar", "forward", lambda x, s: x * s,
         (Arg((2, 3), "float16"), Arg((), "float32")), np.multiply, out="float32")


def _int_pow_torch(a, b):
    """torch's integer power, for negative exponents too: 1 ** -k = 1, (-1) ** -k = (-1) ** k,
    anything else ** -k = 0 (numpy refuses these)."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    pos = np.power(a, np.maximum(b, 0))
    low = np.where(a == 1, 1, np.where(a == -1, np.where(b % 2 == 1, -1, 1), 0))
    return np.where(b < 0, low, pos)
