"""The case table of the conformance suite (see :mod:`burn.testing.conformance`).

One builder per area of the ops (element-wise, promotion, reductions,
movement, indexing, linear algebra, creation, convolution, nn.functional,
errors); each case pairs a burn call with an independent numpy reference.
"""
from __future__ import annotations

import math

import numpy as np

import burn

from .conformance import ALL_DTYPES, COMPLEX, FLOATS, INTS, NUMERIC, Arg, _add


def _with(args, dtype):
    return tuple(Arg(a.shape, dtype if a.dtype not in ("bool",) or dtype == "bool" else a.dtype, a.low, a.high,
                     a.kind, a.const, a.autodiff) if a.kind not in ("index", "bool") else a for a in args)


def _float_out(ds):
    r = burn.result_type(*[burn.as_dtype(d) for d in ds])
    return r.name if r.is_inexact else "float32"


def _sum_out(ds):
    d = burn.as_dtype(ds[0])
    return "int64" if d.is_bool or d.is_integer else d.name


def _family(op, fn, ref, args, dtypes, *, grad=True, grad_args=None, variant="", out=None, tol=1.0,
            tol16=None):
    """Forward cases for each dtype, plus one float64 gradient case."""
    v = f"{variant}," if variant else ""
    for d in dtypes:
        t = tol16 if (tol16 is not None and d in ("float16", "bfloat16")) else tol
        _add(f"{op}[{v}{d}]", op, "forward", fn, _with(args, d), ref, out=out, tol=t, differentiable=grad)
    if grad:
        _add(f"{op}[{v}grad]", op, "grad", fn, grad_args or _with(args, "float64"), out=out)


def _vec(f):
    return np.vectorize(f, otypes=[np.float64])


_erf = _vec(math.erf)


def _sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


def _log_softmax(x, axis=-1):
    m = x.max(axis=axis, keepdims=True)
    s = x - m
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def _red(loss, reduction):
    return loss.mean() if reduction == "mean" else loss.sum() if reduction == "sum" else loss


def build_all():
    """Fill the case table of :mod:`burn.testing.conformance` (called once, lazily)."""
    _fusion_and_laziness()
    _conv()
    _elementwise()
    _complex()
    _promotion_and_scalars()
    _reductions()
    _movement()
    _indexing()
    _linear()
    _creation()
    _functional()
    _errors()


# -- fused groups and laziness -------------------------------------------------------------------
# Backends compile groups of the lazy graph: chains large enough to take a
# backend's blocked/compiled path, with broadcast operands, several live outputs,
# casts, and reductions/matmuls with fused element-wise work around them.

def _fusion_and_laziness():
    F = burn
    big, row, col = (520, 512), (512,), (520, 1)    # > 4 blocks of 64K elements, not a multiple of one

    def chain(x, b, c):
        return F.tanh(F.exp(x * 2 + b) * c) - b

    def chain_ref(x, b, c):
        return np.tanh(np.exp(x * 2 + b) * c) - b
    _family("fused", chain, chain_ref, (Arg(big, low=-1, high=1), Arg(row, low=-1, high=1), Arg(col)),
            ("float32",), variant="chain,broadcast,large", grad=False, tol=3.0)
    _add("fused[chain,grad]", "fused", "grad", chain, (Arg((3, 4), "float64", -1, 1), Arg((4,), "float64", -1, 1),
                                                        Arg((3, 1), "float64")))
    _add("fused[two-live-outputs,large,float32]", "fused", "forward",
         lambda x, b: (lambda y: (y, F.sqrt(y + 1) * b))(x * b),
         (Arg(big, low=0, high=2), Arg(row, low=0, high=2)), lambda x, b: (x * b, np.sqrt(x * b + 1) * b), tol=3.0)
    _add("fused[where-compare,large,float32]", "fused", "forward",
         lambda x, b: F.where(x > b, x - b, F.sin(x * b)), (Arg(big), Arg(row)),
         lambda x, b: np.where(x > b, x - b, np.sin(x * b)), tol=3.0)
    _add("fused[cast-chain,large,float32]", "fused", "forward",
         lambda i, x: F.relu(i.astype(F.float32) * 0.5 + x), (Arg(big, "int32", -3, 3), Arg(big)),
         lambda i, x: np.maximum(i * 0.5 + x, 0), out="float32", tol=3.0)
    for tag, fn, ref in [("mean(axis=-1)", lambda x, b: F.mean((x - b) ** 2, axis=-1),
                          lambda x, b: ((x - b) ** 2).mean(axis=-1)),
                         ("sum(axis=0)", lambda x, b: F.sum(F.exp(x) * b, axis=0),
                          lambda x, b: (np.exp(x) * b).sum(axis=0)),
                         ("max(all)", lambda x, b: F.max(F.abs(x - b)), lambda x, b: np.abs(x - b).max())]:
        _add(f"fused[reduce-prologue,{tag},large,float32]", "fused", "forward", fn, (Arg(big), Arg(row)), ref,
             tol=50.0)
    _family("fused", lambda a, w, bias: F.gelu(a @ w + bias) * 2,
            lambda a, w, bias: 0.5 * (a @ w + bias) * (1 + _erf((a @ w + bias) / math.sqrt(2))) * 2,
            (Arg((6, 5)), Arg((5, 7)), Arg((7,))), ("float32", "float64"), variant="matmul-epilogue", tol=5.0)

    # laziness never changes meaning: a pending value is the value when it was asked for
    def read_after_iadd(x):
        y = x * 10
        x += 1
        return y

    def read_after_assign(x):
        y = F.exp(x)
        x.assign_(x * 0)
        return y + x

    def inputs_untouched(x):
        y = F.exp(x * 2 + 1)
        y.numpy()                 # run the group; x must still hold its values
        return x
    for name, fn, ref in [("read-after-iadd", read_after_iadd, lambda x: x * 10),
                          ("read-after-assign", read_after_assign, np.exp),
                          ("inputs-untouched", inputs_untouched, lambda x: x)]:
        _family("laziness", fn, ref, (Arg(big),), ("float32",), variant=name, grad=False, tol=2.0)


# -- element-wise -----------------------------------------------------------------------

def _elementwise():
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

    # binary
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
    table = [("int8", "int32", "int32"), ("uint8", "int8", "int32"), ("uint8", "int64", "int64"),
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


# -- reductions ----------------------------------------------------------------------------

def _reductions():
    F = burn
    shape = (2, 3, 4)
    axes_variants = [("axis=None", None, False), ("axis=1", 1, False), ("axis=-1", -1, False),
                     ("axis=(0, 2)", (0, 2), False), ("axis=(0, 2),keepdims", (0, 2), True),
                     ("axis=None,keepdims", None, True), ("axis=()", (), False)]
    np_red = {"sum": np.sum, "prod": np.prod, "max": np.max, "min": np.min, "mean": np.mean,
              "any": np.any, "all": np.all}
    specs = [  # name, dtypes, kind, differentiable, out
        ("sum", NUMERIC + ("bool",), "real", True, _sum_out),
        ("prod", FLOATS + ("int32", "int64"), "nonzero", True, _sum_out),
        ("max", NUMERIC, "distinct", True, None),
        ("min", NUMERIC, "distinct", True, None),
        ("mean", FLOATS, "real", True, None),
        ("any", ("bool", "float32", "int32"), "index", False, "bool"),
        ("all", ("bool", "float32", "int32"), "index", False, "bool"),
    ]
    for name, dtypes, kind, diff, out in specs:
        fn0 = getattr(F, name)
        for tag, axis, keep in axes_variants:
            fn = (lambda x, fn0=fn0, axis=axis, keep=keep: fn0(x, axis=axis, keepdims=keep))
            ref = (lambda x, n=name, axis=axis, keep=keep: np_red[n](
                x, axis=axis, keepdims=keep, **({"dtype": np.int64} if n in ("sum", "prod") and
                                                 x.dtype.kind in "biu" else {})))
            lo, hi = (0, 2) if kind == "index" else (-1.5, 1.5) if name == "prod" else (-2, 2)
            args = (Arg(shape, low=lo, high=hi, kind=kind),)
            per_dtype = dtypes if tag in ("axis=1", "axis=(0, 2),keepdims") else ("float32",)
            _family(name, fn, ref, args, per_dtype, grad=diff and tag != "axis=()" and tag != "axis=None,keepdims",
                    variant=tag, out=out, tol=3.0, tol16=6.0)
    for name, fnx, refx, cor in [("var", F.var, np.var, 0), ("std", F.std, np.std, 0), ("var", F.var, np.var, 1)]:
        for tag, axis, keep in axes_variants[:5]:
            fn = (lambda x, fnx=fnx, axis=axis, keep=keep, cor=cor: fnx(x, axis=axis, keepdims=keep, correction=cor))
            ref = (lambda x, refx=refx, axis=axis, keep=keep, cor=cor: refx(x, axis=axis, keepdims=keep, ddof=cor))
            dts = FLOATS if tag == "axis=1" else ("float32",)
            _family(name, fn, ref, (Arg(shape),), dts, variant=f"{tag},correction={cor}", tol=3.0, tol16=8.0)
    for tag, axis, keep in axes_variants[:5]:
        fn = (lambda x, axis=axis, keep=keep: F.logsumexp(x, axis=axis, keepdims=keep))

        def ref(x, axis=axis, keep=keep):
            ax = axis if axis is not None else tuple(range(x.ndim))
            m = np.max(x, axis=ax, keepdims=True)
            r = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
            return r if keep else np.squeeze(r, axis=ax)
        _family("logsumexp", fn, ref, (Arg(shape, low=-3, high=3),), FLOATS if tag == "axis=1" else ("float32",),
                variant=tag, tol=3.0, tol16=6.0)
    _add("logsumexp[large,float32]", "logsumexp", "forward", lambda x: F.logsumexp(x * 1000.0, axis=-1),
         (Arg((2, 3)),), lambda x: _lse_ref(x * 1000.0), tol=10.0)
    # a row of -inf has logsumexp -inf (not nan from inf - inf)
    _add("logsumexp[-inf-row,float32]", "logsumexp", "forward",
         lambda x: F.logsumexp(F.concat([x, F.full((1, 3), -math.inf, device=x.device)]), axis=-1),
         (Arg((2, 3)),), lambda x: np.concatenate([_lse_ref(x), [-np.inf]]), tol=2.0)
    # sums meeting infinities: inf, -inf, inf - inf = nan, as numpy (a compensated sum must not
    # turn inf into nan), with a fused prologue and over either axis
    special = [[math.inf, 1.0, 2.0], [1.0, -math.inf, 2.0], [math.inf, -math.inf, 0.0]]
    for tag, axis in [("axis=-1", -1), ("axis=0", 0)]:
        _add(f"sum[inf-rows,{tag},float32]", "sum", "forward",
             lambda x, axis=axis: F.sum(F.concat([x, F.tensor(special, device=x.device)]) * 2.0, axis=axis),
             (Arg((2, 3)),), lambda x, axis=axis: np.sum(np.concatenate([x, special]) * 2.0, axis=axis))
        _add(f"mean[inf-rows,{tag},float32]", "mean", "forward",
             lambda x, axis=axis: F.mean(F.concat([x, F.tensor(special, device=x.device)]), axis=axis),
             (Arg((2, 3)),), lambda x, axis=axis: np.mean(np.concatenate([x, special]), axis=axis))
    _add("count_nonzero[int32]", "count_nonzero", "forward", lambda x: F.count_nonzero(x, axis=1),
         (Arg((3, 4), "int32", -1, 1),), lambda x: np.count_nonzero(x, axis=1), out="int64")
    for name, fn0, ref0 in [("argmax", F.argmax, np.argmax), ("argmin", F.argmin, np.argmin)]:
        for tag, axis, keep in [("axis=None", None, False), ("axis=1", 1, False), ("axis=-1,keepdims", -1, True),
                                ("axis=None,keepdims", None, True)]:
            fn = (lambda x, fn0=fn0, axis=axis, keep=keep: fn0(x, axis=axis, keepdims=keep))
            ref = (lambda x, ref0=ref0, axis=axis, keep=keep: ref0(x, axis=axis, keepdims=keep))
            dts = NUMERIC if tag == "axis=1" else ("float32",)
            _family(name, fn, ref, (Arg(shape, kind="distinct"),), dts, grad=False, variant=tag, out="int64")
        # ties: the first occurrence, as numpy
        _add(f"{name}[ties,int32]", name, "forward", lambda x, fn0=fn0: fn0(x, axis=1),
             (Arg((3, 5), "int32", 0, 2),), lambda x, ref0=ref0: ref0(x, axis=1), out="int64")
    # zeros: the gradient of a product is not out / x there
    _family("prod", lambda x: F.prod(x, axis=1), lambda x: np.prod(x, axis=1), (Arg((4, 3), kind="sparse"),),
            ("float32",), variant="zeros")
    _family("cumprod", lambda x: F.cumprod(x, axis=1), lambda x: np.cumprod(x, axis=1),
            (Arg((4, 4), kind="sparse"),), ("float32",), variant="zeros")
    for name, fn0, ref0 in [("cumsum", F.cumsum, np.cumsum), ("cumprod", F.cumprod, np.cumprod)]:
        for tag, axis in [("axis=None", None), ("axis=0", 0), ("axis=-1", -1)]:
            fn = (lambda x, fn0=fn0, axis=axis: fn0(x, axis=axis))
            ref = (lambda x, ref0=ref0, axis=axis: ref0(x, axis=axis, **(
                {"dtype": np.int64} if x.dtype.kind in "biu" else {})))
            dts = FLOATS + ("int32", "int64", "bool") if tag == "axis=-1" else ("float32",)
            _family(name, fn, ref, (Arg((3, 4), low=0.5, high=1.5, kind="nonzero"),), dts, variant=tag,
                    out=_sum_out, tol=3.0, tol16=8.0)


def _lse_ref(x):
    m = np.max(x, axis=-1, keepdims=True)
    return (np.log(np.sum(np.exp(x - m), axis=-1, keepdims=True)) + m)[..., 0]


# -- movement ------------------------------------------------------------------------------

def _movement():
    F = burn
    S = (2, 3, 4)
    cases = [  # name, fn, ref, shapes, all dtypes?
        ("reshape", lambda x: F.reshape(x, (4, -1)), lambda x: x.reshape(4, -1), (S,), True),
        ("reshape[method]", lambda x: x.reshape(6, 4), lambda x: x.reshape(6, 4), (S,), False),
        ("permute_dims", lambda x: F.permute_dims(x, (2, 0, 1)), lambda x: x.transpose(2, 0, 1), (S,), True),
        ("transpose", lambda x: F.transpose(x), lambda x: x.T, (S,), False),
        ("T", lambda x: x.T, lambda x: x.T, ((2, 3),), False),
        ("mT", lambda x: x.mT, lambda x: np.swapaxes(x, -1, -2), (S,), False),
        ("matrix_transpose", F.matrix_transpose, lambda x: np.swapaxes(x, -1, -2), (S,), False),
        ("concatenate", lambda a, b: F.concatenate([a, b], axis=-1), lambda a, b: np.concatenate([a, b], -1),
         ((2, 3), (2, 1)), False),
        ("swapaxes", lambda x: F.swapaxes(x, 0, 2), lambda x: np.swapaxes(x, 0, 2), (S,), False),
        ("moveaxis", lambda x: F.moveaxis(x, 0, -1), lambda x: np.moveaxis(x, 0, -1), (S,), False),
        ("broadcast_to", lambda x: F.broadcast_to(x, (2, 3, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)),
         ((3, 1),), True),
        ("squeeze", lambda x: F.squeeze(x), lambda x: np.squeeze(x), ((1, 3, 1),), False),
        ("squeeze[axis]", lambda x: F.squeeze(x, axis=0), lambda x: np.squeeze(x, axis=0), ((1, 3, 1),), False),
        ("expand_dims", lambda x: F.expand_dims(x, axis=-1), lambda x: np.expand_dims(x, -1), ((2, 3),), False),
        ("expand_dims[tuple]", lambda x: F.expand_dims(x, axis=(0, 2)), lambda x: np.expand_dims(x, (0, 2)),
         ((2, 3),), False),
        ("flatten", lambda x: F.flatten(x), lambda x: x.reshape(-1), (S,), False),
        ("flatten[1:]", lambda x: F.flatten(x, 1), lambda x: x.reshape(2, -1), (S,), False),
        ("concat", lambda a, b: F.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1),
         ((2, 3), (2, 2)), True),
        ("concat[axis=None]", lambda a, b: F.concat([a, b], axis=None),
         lambda a, b: np.concatenate([a, b], axis=None), ((2, 3), (4,)), False),
        ("stack", lambda a, b: F.stack([a, b], axis=-1), lambda a, b: np.stack([a, b], -1), ((2, 3), (2, 3)),
         True),
        ("stack[axis=0]", lambda a, b: F.stack([a, b]), lambda a, b: np.stack([a, b]), ((2, 3), (2, 3)), False),
        ("flip", lambda x: F.flip(x, axis=1), lambda x: np.flip(x, 1), (S,), True),
        ("flip[all]", lambda x: F.flip(x), lambda x: np.flip(x), (S,), False),
        ("flip[tuple]", lambda x: F.flip(x, axis=(0, 2)), lambda x: np.flip(x, (0, 2)), (S,), False),
        ("pad", lambda x: F.pad(x, ((1, 0), (2, 1))), lambda x: np.pad(x, ((1, 0), (2, 1))), ((2, 3),), True),
        ("pad[value]", lambda x: F.pad(x, ((0, 1), (1, 1)), value=3), lambda x: np.pad(x, ((0, 1), (1, 1)),
                                                                                    constant_values=3),
         ((2, 3),), False),
        ("roll", lambda x: F.roll(x, 2, axis=1), lambda x: np.roll(x, 2, 1), ((2, 5),), False),
        ("roll[flat]", lambda x: F.roll(x, -3), lambda x: np.roll(x, -3), ((2, 5),), False),
        ("tile", lambda x: F.tile(x, (2, 1, 3)), lambda x: np.tile(x, (2, 1, 3)), ((2, 3),), False),
        ("repeat", lambda x: F.repeat(x, 2, axis=1), lambda x: np.repeat(x, 2, 1), ((2, 3),), False),
        ("repeat[flat]", lambda x: F.repeat(x, 3), lambda x: np.repeat(x, 3), ((2, 3),), False),
        ("tril", lambda x: F.tril(x), lambda x: np.tril(x), ((3, 4),), False),
        ("triu[k=1]", lambda x: F.triu(x, k=1), lambda x: np.triu(x, 1), ((2, 3, 4),), False),
        ("split[sections]", lambda x: F.split(x, 2, axis=1), lambda x: np.split(x, 2, 1), ((2, 4),), True),
        ("split[indices]", lambda x: F.split(x, [1, 3]), lambda x: np.split(x, [1, 3]), ((5, 2),), False),
        ("unstack", lambda x: F.unstack(x, axis=1), lambda x: tuple(np.moveaxis(x, 1, 0)), ((2, 3),), False),
        ("broadcast_arrays", lambda a, b: F.broadcast_arrays(a, b), lambda a, b: np.broadcast_arrays(a, b),
         ((3,), (2, 1)), False),
    ]
    for name, fn, ref, shapes, all_dtypes in cases:
        op = name.split("[")[0]
        variant = name[len(op) + 1:-1] if "[" in name else ""
        args = tuple(Arg(s, low=-3, high=3) for s in shapes)
        dts = ALL_DTYPES if all_dtypes else ("float32", "int64")
        multi = op in ("split", "unstack", "broadcast_arrays")
        _family(op, fn, ref, args, dts, grad=not multi, variant=variant)
        if multi:
            # gradients through every piece: weight each one differently, then join them
            def joined(*xs, fn=fn):
                parts = fn(*xs)
                return F.concat([F.reshape(p, (-1,)) * float(i + 1) for i, p in enumerate(parts)])
            _add(f"{op}[{variant + ',' if variant else ''}grad]", op, "grad", joined,
                 tuple(Arg(s, "float64") for s in shapes))
    # basic slicing (views in numpy) including negative steps and empty results
    sl = [("x[1]", lambda x: x[1]), ("x[-1, ::2]", lambda x: x[-1, ::2]), ("x[::-1]", lambda x: x[::-1]),
          ("x[:, 1:3]", lambda x: x[:, 1:3]), ("x[..., 0]", lambda x: x[..., 0]),
          ("x[None, :, None]", lambda x: x[None, :, None]), ("x[1:, None, 2]", lambda x: x[1:, None, 2]),
          ("x[::-2, ::-3]", lambda x: x[::-2, ::-3]), ("x[2:2]", lambda x: x[2:2]), ("x[-3:-1]", lambda x: x[-3:-1]),
          ("x[0, 0, 0]", lambda x: x[0, 0, 0]), ("x[5:, 1]", lambda x: x[5:, 1])]
    for tag, fn in sl:
        _family("getitem", fn, fn, (Arg((3, 4, 5)),), ALL_DTYPES if tag == "x[-1, ::2]" else ("float32",),
                grad=tag not in ("x[2:2]", "x[5:, 1]"), variant=tag)


def _indexing():
    F = burn
    I3 = Arg((2,), "int64", 0, 3, "index")
    adv = [  # tag, fn, ref, args
        ("x[1:, None, idx]", lambda x, i: x[1:, None, i], lambda x, i: x[1:, None, i], (Arg((3, 4)), I3)),
        ("x[idx]", lambda x, i: x[i], lambda x, i: x[i], (Arg((3, 4)), Arg((5,), "int64", 0, 3, "index"))),
        ("x[idx2d]", lambda x, i: x[i], lambda x, i: x[i], (Arg((3, 4)), Arg((2, 2), "int64", 0, 3, "index"))),
        ("x[:, idx, :]", lambda x, i: x[:, i, :], lambda x, i: x[:, i, :], (Arg((2, 3, 4)), I3)),
        ("x[idx, idx]", lambda x, i: x[i, i], lambda x, i: x[i, i], (Arg((3, 3)), Arg((4,), "int64", 0, 3, "index"))),
        ("x[-idx]", lambda x, i: x[-i - 1], lambda x, i: x[-i - 1], (Arg((3, 4)), I3)),
        ("x[list]", lambda x: x[[2, 0, 2]], lambda x: x[[2, 0, 2]], (Arg((3, 4)),)),
        ("x[mask]", lambda x, m: x[m], lambda x, m: x[m], (Arg((3, 4)), Arg((3, 4), "bool"))),
        ("x[row-mask]", lambda x, m: x[m], lambda x, m: x[m], (Arg((3, 4)), Arg((3,), "bool"))),
        ("x[idx, 1:]", lambda x, i: x[i, 1:], lambda x, i: x[i, 1:], (Arg((3, 4)), I3)),
    ]
    for tag, fn, ref, args in adv:
        _family("getitem", fn, ref, args, ALL_DTYPES if tag == "x[1:, None, idx]" else ("float32", "int64"),
                variant=tag, out=lambda ds: ds[0])
    # repeated indices accumulate in the gradient
    _add("getitem[x[repeated idx],grad]", "getitem", "grad", lambda x, i: x[i],
         (Arg((3, 2), "float64"), Arg((6,), "int64", 0, 2, "index")))
    for tag, axis in [("axis=0", 0), ("axis=1", 1), ("axis=None", None)]:
        _family("take", lambda x, i, axis=axis: F.take(x, i, axis=axis),
                lambda x, i, axis=axis: np.take(x, i, axis=axis),
                (Arg((3, 4)), Arg((5,), "int64", 0, 3, "index")), ALL_DTYPES if tag == "axis=1" else ("float32",),
                variant=tag, out=lambda ds: ds[0])
    for tag, ishape, axis in [("axis=1", (3, 2), 1), ("axis=0", (2, 4), 0), ("broadcast", (3, 1), 1)]:
        _family("take_along_axis", lambda x, i, axis=axis: F.take_along_axis(x, i, axis=axis),
                lambda x, i, axis=axis: np.take_along_axis(x, i, axis=axis),
                (Arg((3, 4)), Arg(ishape, "int64", 0, 3, "index")),
                ALL_DTYPES if tag == "axis=1" else ("float32",), variant=tag, out=lambda ds: ds[0])
    _family("gather", lambda x, i: F.gather(x, i, axis=0), lambda x, i: np.take_along_axis(x, i, axis=0),
            (Arg((4,)), Arg((6,), "int64", 0, 4, "index")), ("float32",), out=lambda ds: ds[0])

    def scatter_ref(x, i, s, axis):
        out = x.copy()
        grid = list(np.indices(i.shape, sparse=True))
        grid[axis] = i
        np.add.at(out, tuple(grid), s)
        return out
    for tag, xs, ishape, axis in [("axis=1", (3, 4), (3, 5), 1), ("axis=0", (3, 4), (4, 4), 0)]:
        _family("scatter_add", lambda x, i, s, axis=axis: F.scatter_add(x, i, s, axis=axis),
                lambda x, i, s, axis=axis: scatter_ref(x, i, s, axis),
                (Arg(xs), Arg(ishape, "int64", 0, 3, "index"), Arg(ishape)),
                FLOATS + ("int32", "int64") if tag == "axis=1" else ("float32",), variant=tag, tol16=3.0,
                out=lambda ds: ds[0])

    # setitem is functional: the tensor is rebound, earlier readers keep the old value
    def setitem(x, v):
        y = x * 1
        y[0, 1:] = v
        y[:, 0] = 7
        return y

    def setitem_ref(x, v):
        y = x.copy()
        y[0, 1:] = v
        y[:, 0] = 7
        return y
    _family("setitem", setitem, setitem_ref, (Arg((3, 4)), Arg((3,))), ("float32", "int64", "float16"))

    def setitem_adv(x, i):
        y = x * 1
        y[i] = -1
        return y

    def setitem_adv_ref(x, i):
        y = x.copy()
        y[i] = -1
        return y
    _family("setitem", setitem_adv, setitem_adv_ref, (Arg((3, 4)), I3), ("float32", "int32"), variant="idx",
            out=lambda ds: ds[0])
    _add("setitem[mask,float32]", "setitem", "forward", lambda x: _setmask(x), (Arg((3, 4)),),
         lambda x: np.where(x > 0, 0.0, x))


def _setmask(x):
    y = x * 1
    y[y > 0] = 0.0
    return y


# -- linear algebra -------------------------------------------------------------------------

def _linear():
    F = burn
    shapes = [("2d", (2, 3), (3, 4)), ("batched", (5, 2, 3), (3, 4)), ("broadcast", (2, 1, 2, 3), (4, 3, 2)),
              ("1d@2d", (3,), (3, 4)), ("2d@1d", (2, 3), (3,)), ("1d@1d", (3,), (3,)),
              ("3d@1d", (2, 2, 3), (3,)), ("1d@3d", (3,), (2, 3, 4))]
    for tag, sa, sb in shapes:
        dts = FLOATS + ("int32", "int64") if tag in ("2d", "batched") else ("float32",)
        _family("matmul", F.matmul, np.matmul, (Arg(sa), Arg(sb)), dts, variant=tag, tol=3.0, tol16=3.0)
    _add("__matmul__[float32]", "matmul", "forward", lambda a, b: a @ b, (Arg((2, 3)), Arg((3, 2))), np.matmul)
    _add("tensordot[axes=1,float32]", "tensordot", "forward", lambda a, b: F.tensordot(a, b, axes=1),
         (Arg((2, 3)), Arg((3, 4))), lambda a, b: np.tensordot(a, b, axes=1), tol=3.0)
    _family("tensordot", lambda a, b: F.tensordot(a, b, axes=([1, 0], [0, 2])),
            lambda a, b: np.tensordot(a, b, axes=([1, 0], [0, 2])), (Arg((2, 3, 4)), Arg((3, 5, 2))),
            ("float32",), variant="axes=pairs", tol=3.0)
    _family("vecdot", F.vecdot, lambda a, b: np.sum(a * b, axis=-1), (Arg((2, 3)), Arg((3,))), ("float32",),
            tol=3.0)
    _family("outer", F.outer, np.outer, (Arg((3,)), Arg((4,))), ("float32", "int64"))
    _family("inner", F.inner, np.inner, (Arg((2, 3)), Arg((4, 3))), ("float32",), tol=3.0)
    _family("dot", F.dot, np.dot, (Arg((3,)), Arg((3,))), ("float32",), tol=3.0)


# -- creation ------------------------------------------------------------------------------

def _creation():
    F = burn
    for d in ALL_DTYPES:
        _add(f"zeros[{d}]", "zeros", "forward", lambda device, d=d: F.zeros((2, 3), dtype=d, device=device),
             (), lambda: np.zeros((2, 3)), out=d, needs_device=True)
        _add(f"ones[{d}]", "ones", "forward", lambda device, d=d: F.ones((3,), dtype=d, device=device),
             (), lambda: np.ones((3,)), out=d, needs_device=True)
        _add(f"full[{d}]", "full", "forward", lambda device, d=d: F.full((2, 2), 1, dtype=d, device=device),
             (), lambda: np.full((2, 2), 1), out=d, needs_device=True)
        _add(f"eye[{d}]", "eye", "forward", lambda device, d=d: F.eye(3, 4, k=1, dtype=d, device=device),
             (), lambda: np.eye(3, 4, 1), out=d, needs_device=True)
        _add(f"tensor[{d}]", "tensor", "forward", lambda device, d=d: F.tensor([[0, 1, 3], [2, 1, 0]], dtype=d,
                                                                              device=device),
             (), lambda: np.array([[0, 1, 3], [2, 1, 0]]), out=d, needs_device=True)
    inferred = [("tensor[float-inferred]", lambda device: F.tensor([1.5, -2.0], device=device), lambda: np.array([1.5, -2.0]),
                 "float32"),
                ("tensor[int-inferred]", lambda device: F.tensor([[1, 2]], device=device), lambda: np.array([[1, 2]]), "int64"),
                ("tensor[bool-inferred]", lambda device: F.tensor([True, False], device=device), lambda: np.array([1, 0]),
                 "bool"),
                ("tensor[numpy-float64]", lambda device: F.tensor(np.array([0.25]), device=device),
                 lambda: np.array([0.25]), "float64"),   # an array keeps its dtype
                ("tensor[numpy-int32]", lambda device: F.tensor(np.array([3], np.int32), device=device),
                 lambda: np.array([3]), "int32"),
                ("tensor[scalar]", lambda device: F.tensor(2.5, device=device), lambda: np.array(2.5), "float32"),
                ("full[float-inferred]", lambda device: F.full((2,), 0.5, device=device), lambda: np.full(2, 0.5),
                 "float32"),
                ("full[int-inferred]", lambda device: F.full((2,), 3, device=device), lambda: np.full(2, 3), "int64"),
                ("full[bool-inferred]", lambda device: F.full((2,), True, device=device), lambda: np.full(2, True),
                 "bool"),
                ("zeros[default]", lambda device: F.zeros((2, 1), device=device), lambda: np.zeros((2, 1)), "float32"),
                ("empty[shape]", lambda device: F.empty((2, 3), device=device) * 0, lambda: np.zeros((2, 3)),
                 "float32"),
                ("arange[stop]", lambda device: F.arange(5, device=device), lambda: np.arange(5), "int64"),
                ("arange[start,stop,step]", lambda device: F.arange(1, 8, 3, device=device),
                 lambda: np.arange(1, 8, 3), "int64"),
                ("arange[negative-step]", lambda device: F.arange(5, 0, -2, device=device),
                 lambda: np.arange(5, 0, -2), "int64"),
                ("arange[float]", lambda device: F.arange(0.0, 1.0, 0.25, device=device),
                 lambda: np.arange(0.0, 1.0, 0.25), "float32"),
                ("arange[dtype]", lambda device: F.arange(4, dtype=F.float64, device=device),
                 lambda: np.arange(4.0), "float64"),
                ("arange[empty]", lambda device: F.arange(3, 3, device=device), lambda: np.arange(3, 3), "int64"),
                ("linspace", lambda device: F.linspace(0, 1, 5, device=device), lambda: np.linspace(0, 1, 5),
                 "float32"),
                ("linspace[endpoint=False]", lambda device: F.linspace(-1, 1, 4, endpoint=False, device=device),
                 lambda: np.linspace(-1, 1, 4, endpoint=False), "float32"),
                ("linspace[float64]", lambda device: F.linspace(0, 2, 3, dtype=F.float64, device=device),
                 lambda: np.linspace(0, 2, 3), "float64"),
                ("eye[square]", lambda device: F.eye(3, device=device), lambda: np.eye(3), "float32"),
                ("eye[k=-1]", lambda device: F.eye(3, k=-1, device=device), lambda: np.eye(3, k=-1), "float32")]
    for name, fn, ref, out in inferred:
        _add(name, name.split("[")[0], "forward", fn, (), ref, out=out, needs_device=True)
    for name, fn, ref in [("zeros_like", F.zeros_like, np.zeros_like), ("ones_like", F.ones_like, np.ones_like),
                          ("full_like", lambda x: F.full_like(x, 2), lambda x: np.full_like(x, 2))]:
        _family(name, fn, ref, (Arg((2, 3)),), ("float32", "int32", "bool", "bfloat16"), grad=False)
    _add("empty_like[shape]", "empty_like", "forward", lambda x: F.empty_like(x) * 0, (Arg((2, 3), "int32"),),
         lambda x: np.zeros((2, 3)))
    _add("rand_like", "rand_like", "forward", lambda x: F.rand_like(F.zeros((2000,), dtype=x.dtype, device=x.device)),
         (Arg((1,), "float64"),), prop=_uniform_prop, out="float64")
    _add("randn_like", "randn_like", "forward", lambda x: F.randn_like(F.zeros((2000,), device=x.device)) * 2 + 1,
         (Arg((1,)),), prop=_normal_prop, out="float32")
    _add("asarray[tensor-unchanged]", "asarray", "forward", lambda x: F.asarray(x) * (F.asarray(x) is x),
         (Arg(),), lambda x: x)
    _add("asarray[list,dtype]", "asarray", "forward", lambda device: F.asarray([[1, 2]], dtype=F.int8, device=device),
         (), lambda: np.array([[1, 2]]), out="int8", needs_device=True)
    for d in ("float16", "int32", "uint8", "bool", "float64"):
        _add(f"from_numpy[{d}]", "from_numpy", "forward",
             lambda device, d=d: F.from_numpy(np.arange(6).reshape(2, 3).astype(d), device=device), (),
             lambda d=d: np.arange(6).reshape(2, 3).astype(d), out=d, needs_device=True)
        _add(f"from_dlpack[{d}]", "from_dlpack", "forward",
             lambda device, d=d: F.from_dlpack(np.arange(6).reshape(2, 3).astype(d), device=device), (),
             lambda d=d: np.arange(6).reshape(2, 3).astype(d), out=d, needs_device=True)
    _add("from_dlpack[tensor-round-trip,float32]", "from_dlpack", "forward",
         lambda x: F.from_dlpack(x * 2, device=x.device), (Arg(),), lambda x: x * 2)
    _add("zeros_like[dtype]", "zeros_like", "forward", lambda x: F.zeros_like(x, dtype=F.int8), (Arg((2,)),),
         lambda x: np.zeros(2), out="int8")

    # random: properties, and reproducibility from device.seed()
    uniform_prop, normal_prop = _uniform_prop, _normal_prop

    def randint_prop(v):
        assert set(np.unique(v).tolist()) == {-2, -1, 0, 1, 2}, np.unique(v)

    def same_prop(a, b, c):
        assert np.array_equal(a, b), "the same seed gave different values"
        assert not np.array_equal(a, c), "consecutive draws were equal"

    def seeded(device):
        device.seed(1234)
        a = F.rand((16,), device=device)
        c = F.rand((16,), device=device)
        a_val = a.numpy()
        device.seed(1234)
        b = F.rand((16,), device=device)
        return F.tensor(a_val, device=device), b, c
    rnd = [("rand", lambda device: F.rand((2000,), device=device), uniform_prop, "float32"),
           ("rand[float64]", lambda device: F.rand((2000,), dtype=F.float64, device=device), uniform_prop, "float64"),
           ("randn", lambda device: F.randn((2000,), mean=1.0, std=2.0, device=device), normal_prop, "float32"),
           ("randint", lambda device: F.randint(-2, 3, (500,), device=device), randint_prop, "int64"),
           ("rand[seeded]", seeded, same_prop, "float32")]
    for name, fn, prop, out in rnd:
        _add(name, name.split("[")[0], "forward", fn, (), prop=prop, out=out, needs_device=True)


def _uniform_prop(v):
    assert v.shape == (2000,), v.shape
    assert 0.0 <= v.min() and v.max() < 1.0, (v.min(), v.max())
    assert abs(v.mean() - 0.5) < 0.05 and abs(v.std() - math.sqrt(1 / 12)) < 0.03, (v.mean(), v.std())


def _normal_prop(v):
    assert v.shape == (2000,), v.shape
    assert abs(v.mean() - 1.0) < 0.15 and abs(v.std() - 2.0) < 0.15, (v.mean(), v.std())


# -- convolution and pooling (references: a direct loop over output positions) ---------------

def _windows(x, k, s, p, d, fill):
    """x [N, C, H, W] -> patches [N, C, Ho, Wo, kh, kw] of the padded input."""
    xp = np.pad(x, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])), constant_values=fill)
    ho = (xp.shape[2] - d[0] * (k[0] - 1) - 1) // s[0] + 1
    wo = (xp.shape[3] - d[1] * (k[1] - 1) - 1) // s[1] + 1
    out = np.empty(x.shape[:2] + (ho, wo) + tuple(k), dtype=xp.dtype)
    for i in range(ho):
        for j in range(wo):
            out[:, :, i, j] = xp[:, :, i * s[0]:i * s[0] + d[0] * (k[0] - 1) + 1:d[0],
                                 j * s[1]:j * s[1] + d[1] * (k[1] - 1) + 1:d[1]]
    return out


def _conv2d_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    two = (lambda v: (v, v) if isinstance(v, int) else tuple(v))
    o, cg = w.shape[:2]
    pw = _windows(x, w.shape[2:], two(stride), two(padding), two(dilation), 0.0)
    outs = []
    for g in range(groups):
        og = o // groups
        xs = pw[:, g * cg:(g + 1) * cg]
        outs.append(np.einsum("nchwij,ocij->nohw", xs, w[g * og:(g + 1) * og]))
    y = np.concatenate(outs, axis=1)
    return y if b is None else y + b[None, :, None, None]


def _pool_ref(x, k, s, p, kind):
    two = (lambda v: (v, v) if isinstance(v, int) else tuple(v))
    k, p = two(k), two(p)
    s = k if s is None else two(s)
    pw = _windows(x, k, s, p, (1, 1), -np.inf if kind == "max" else 0.0)
    return pw.max(axis=(4, 5)) if kind == "max" else pw.mean(axis=(4, 5))


def _conv():
    from burn.nn import functional as NF
    convs = [  # variant, x shape, w shape, kwargs, bias
        ("basic", (2, 2, 5, 5), (3, 2, 3, 3), {}, True),
        ("stride=2,padding=1", (1, 2, 6, 5), (2, 2, 3, 3), {"stride": 2, "padding": 1}, True),
        ("dilation=2", (1, 1, 6, 6), (2, 1, 2, 3), {"dilation": 2}, False),
        ("groups=2", (1, 4, 4, 4), (4, 2, 3, 3), {"groups": 2}, True),
        ("rect", (1, 2, 4, 6), (2, 2, 1, 3), {"stride": (1, 2), "padding": (0, 1)}, False),
    ]
    for variant, xs, ws, kw, bias in convs:
        args = (Arg(xs), Arg(ws), Arg((ws[0],))) if bias else (Arg(xs), Arg(ws))
        _family("conv2d", lambda x, w, *b, kw=kw: NF.conv2d(x, w, *b, **kw),
                lambda x, w, *b, kw=kw: _conv2d_ref(x, w, *b, **kw), args,
                ("float32", "float64") if variant == "basic" else ("float32",), variant=variant, tol=5.0)
    _family("conv2d", lambda x, w, b: NF.conv2d(x, w, b, padding=1), lambda x, w, b: _conv2d_ref(x, w, b, padding=1),
            (Arg((1, 2, 4, 4)), Arg((2, 2, 3, 3)), Arg((2,))), ("float16", "bfloat16"), grad=False,
            variant="half", tol=4.0)

    def conv1d_ref(x, w, b, stride=1, padding=0):
        return _conv2d_ref(x[:, :, None], w[:, :, None], b, (1, stride), (0, padding))[:, :, 0]
    _family("conv1d", lambda x, w, b: NF.conv1d(x, w, b, stride=2, padding=1),
            lambda x, w, b: conv1d_ref(x, w, b, 2, 1), (Arg((2, 2, 7)), Arg((3, 2, 3)), Arg((3,))),
            ("float32",), variant="stride=2,padding=1", tol=5.0)
    pools = [("k=2", 2, None, 0), ("k=3,s=2,p=1", 3, 2, 1), ("k=(2,3),s=1", (2, 3), 1, 0)]
    for variant, k, st, p in pools:
        for kind, fn in [("max", NF.max_pool2d), ("avg", NF.avg_pool2d)]:
            _family(f"{kind}_pool2d", lambda x, fn=fn, k=k, st=st, p=p: fn(x, k, st, p),
                    lambda x, kind=kind, k=k, st=st, p=p: _pool_ref(x, k, st, p, kind),
                    (Arg((2, 2, 5, 5), kind="distinct"),), ("float32", "float64", "float16"), variant=variant,
                    tol=3.0)
    for kind, fn in [("max", NF.max_pool1d), ("avg", NF.avg_pool1d)]:
        _family(f"{kind}_pool1d", lambda x, fn=fn: fn(x, 3, 2, 1),
                lambda x, kind=kind: _pool_ref(x[:, :, None], (1, 3), (1, 2), (0, 1), kind)[:, :, 0],
                (Arg((2, 3, 7), kind="distinct"),), ("float32",), tol=3.0)


# -- nn.functional ----------------------------------------------------------------------------

def _functional():
    from burn.nn import functional as NF
    X = (Arg((3, 5), low=-3, high=3),)
    for tag, axis in [("axis=-1", -1), ("axis=0", 0)]:
        _family("softmax", lambda x, axis=axis: NF.softmax(x, axis=axis),
                lambda x, axis=axis: np.exp(_log_softmax(x, axis)), X, FLOATS, variant=tag, tol16=2.0)
        _family("log_softmax", lambda x, axis=axis: NF.log_softmax(x, axis=axis),
                lambda x, axis=axis: _log_softmax(x, axis), X, FLOATS, variant=tag, tol16=2.0)
    _add("softmax[large,float32]", "softmax", "forward", lambda x: NF.softmax(x * 1000.0), X,
         lambda x: np.exp(_log_softmax(x * 1000.0)))
    T = Arg((3,), "int64", 0, 5, "index")

    def ce_ref(x, t, reduction="mean", ls=0.0):
        lp = _log_softmax(x)
        nll = -lp[np.arange(len(t)), t]
        return _red((1 - ls) * nll + ls * -lp.mean(-1), reduction)
    for tag, red, ls in [("mean", "mean", 0.0), ("sum", "sum", 0.0), ("none", "none", 0.0),
                         ("label_smoothing=0.1", "mean", 0.1)]:
        _family("cross_entropy", lambda x, t, red=red, ls=ls: NF.cross_entropy(x, t, reduction=red,
                                                                                label_smoothing=ls),
                lambda x, t, red=red, ls=ls: ce_ref(x, t, red, ls), (X[0], T),
                ("float32", "float64", "float16") if tag == "mean" else ("float32",), variant=tag,
                out=lambda ds: ds[0], tol16=3.0)
    _family("cross_entropy", lambda x, p: NF.cross_entropy(x, NF.softmax(p)),
            lambda x, p: -(np.exp(_log_softmax(p)) * _log_softmax(x)).sum(-1).mean(),
            (X[0], Arg((3, 5), low=-3, high=3, const=True)), ("float32",), variant="probabilities")
    _family("nll_loss", lambda x, t: NF.nll_loss(NF.log_softmax(x), t),
            lambda x, t: -_log_softmax(x)[np.arange(3), t].mean(), (X[0], T), ("float32",),
            out=lambda ds: ds[0])
    _family("mse_loss", NF.mse_loss, lambda a, b: ((a - b) ** 2).mean(), (Arg((2, 3)), Arg((2, 3))),
            ("float32", "float64"))
    _family("mse_loss", lambda a, b: NF.mse_loss(a, b, reduction="sum"), lambda a, b: ((a - b) ** 2).sum(),
            (Arg((2, 3)), Arg((2, 3))), ("float32",), variant="sum")
    lin_args = (Arg((4, 3)), Arg((3, 2)), Arg((2,)))
    _family("linear", NF.linear, lambda x, w, b: x @ w + b, lin_args, FLOATS, tol=3.0, tol16=2.0)
    _family("linear", lambda x, w: NF.linear(x, w), lambda x, w: x @ w, lin_args[:2], ("float32",),
            variant="no-bias")
    _family("linear", NF.linear, lambda x, w, b: x @ w + b, (Arg((2, 4, 3)), Arg((3, 2)), Arg((2,))),
            ("float32",), variant="batched", tol=3.0)
    _family("linear_relu", NF.linear_relu, lambda x, w, b: np.maximum(x @ w + b, 0), lin_args,
            FLOATS, tol=3.0, tol16=2.0)
    _family("linear_relu", NF.linear_relu, lambda x, w, b: np.maximum(x @ w + b, 0),
            (Arg((2, 4, 3)), Arg((3, 2)), Arg((2,))), ("float32",), variant="batched", tol=3.0)
    E_idx = Arg((2, 3), "int64", 0, 4, "index")
    _family("embedding", NF.embedding, lambda i, w: w[i], (E_idx, Arg((4, 3))), ("float32", "bfloat16"),
            out=lambda ds: ds[1])

    def ln_ref(x, w, b, k=1, eps=1e-5):
        ax = tuple(range(x.ndim - k, x.ndim))
        mu = x.mean(axis=ax, keepdims=True)
        var = ((x - mu) ** 2).mean(axis=ax, keepdims=True)
        return (x - mu) / np.sqrt(var + eps) * w + b
    _family("layer_norm", lambda x, w, b: NF.layer_norm(x, (4,), w, b), ln_ref,
            (Arg((3, 4)), Arg((4,)), Arg((4,))), FLOATS, tol=5.0, tol16=2.0)
    _family("layer_norm", lambda x, w, b: NF.layer_norm(x, (3, 4), w, b), lambda x, w, b: ln_ref(x, w, b, 2),
            (Arg((2, 3, 4)), Arg((3, 4)), Arg((3, 4))), ("float32",), variant="2d", tol=5.0)
    _family("layer_norm", lambda x: NF.layer_norm(x, 4), lambda x: ln_ref(x, 1.0, 0.0),
            (Arg((3, 4)),), ("float32",), variant="no-affine", tol=5.0)
    for name in ("relu", "gelu", "sigmoid", "tanh", "silu", "softplus"):
        f = getattr(NF, name)
        _add(f"nn.functional.{name}[is-burn.{name}]", name, "forward", lambda x, f=f, name=name:
             f(x) - getattr(burn, name)(x), X, lambda x: np.zeros_like(x))
    _add("dropout[eval,float32]", "dropout", "forward", lambda x: NF.dropout(x, 0.5, training=False), X,
         lambda x: x)

    def dropout_prop(v):
        kept = v != 0
        assert 0.3 < kept.mean() < 0.7, kept.mean()
        np.testing.assert_allclose(v[kept], 2.0)
    _add("dropout[train,float32]", "dropout", "forward",
         lambda device: NF.dropout(burn.ones((2000,), device=device), 0.5), (), prop=dropout_prop, out="float32",
         needs_device=True)


# -- errors -----------------------------------------------------------------------------------

def _errors():
    F = burn
    from burn.nn import functional as NF
    A, B = Arg((2, 3)), Arg((4,))
    E = [  # name, error class, op name in the message, fn, args
        ("add[shapes]", "ShapeError", "add", F.add, (A, B)),
        ("__add__[shapes]", "ShapeError", "add", lambda a, b: a + b, (A, B)),
        ("multiply[shapes]", "ShapeError", "mul", F.multiply, (Arg((2, 3)), Arg((3, 2)))),
        ("where[shapes]", "ShapeError", "where", F.where, (Arg((2,), "bool"), A, A)),
        ("where[condition-dtype]", "DTypeError", "where", F.where, (A, A, A)),
        ("add[bool]", "DTypeError", "add", F.add, (Arg((2,), "bool"), Arg((2,), "bool"))),
        ("neg[bool]", "DTypeError", "neg", F.neg, (Arg((2,), "bool"),)),
        ("bitwise_and[float]", "DTypeError", "bitwise_and", F.bitwise_and, (A, A)),
        ("clip[bool]", "DTypeError", "clip", lambda x: F.clip(x, 0, 1), (Arg((2,), "bool"),)),
        ("matmul[inner]", "ShapeError", "matmul", F.matmul, (Arg((2, 3)), Arg((2, 3)))),
        ("matmul[batch]", "ShapeError", "matmul", F.matmul, (Arg((2, 2, 3)), Arg((3, 3, 2)))),
        ("matmul[0d]", "ShapeError", "matmul", F.matmul, (Arg(()), Arg((3,)))),
        ("matmul[bool]", "DTypeError", "matmul", F.matmul, (Arg((2, 2), "bool"), Arg((2, 2), "bool"))),
        ("reshape[size]", "ShapeError", "reshape", lambda x: F.reshape(x, (4, 2)), (A,)),
        ("reshape[two -1]", "ShapeError", "reshape", lambda x: F.reshape(x, (-1, -1)), (A,)),
        ("permute_dims[not-a-permutation]", "ShapeError", "permute_dims", lambda x: F.permute_dims(x, (0, 0)),
         (A,)),
        ("broadcast_to[shape]", "ShapeError", "broadcast_to", lambda x: F.broadcast_to(x, (3, 3)), (A,)),
        ("squeeze[not-1]", "ShapeError", "squeeze", lambda x: F.squeeze(x, axis=0), (A,)),
        ("sum[axis-range]", "ShapeError", "sum", lambda x: F.sum(x, axis=2), (A,)),
        ("mean[repeated-axis]", "ShapeError", "mean", lambda x: F.mean(x, axis=(1, -1)), (A,)),
        ("argmax[axis-range]", "ShapeError", "argmax", lambda x: F.argmax(x, axis=-3), (A,)),
        ("max[empty]", "ShapeError", "max", lambda x: F.max(x, axis=0), (Arg((0, 3)),)),
        ("cumsum[axis-range]", "ShapeError", "cumsum", lambda x: F.cumsum(x, axis=5), (A,)),
        ("concat[shapes]", "ShapeError", "concat", lambda a, b: F.concat([a, b], axis=0), (A, Arg((2, 2)))),
        ("stack[shapes]", "ShapeError", "stack", lambda a, b: F.stack([a, b]), (A, Arg((3, 2)))),
        ("split[unequal]", "ShapeError", "split", lambda x: F.split(x, 2, axis=1), (A,)),
        ("getitem[out-of-bounds]", "ShapeError", "getitem", lambda x: x[2], (A,)),
        ("getitem[too-many]", "ShapeError", "getitem", lambda x: x[0, 0, 0], (A,)),
        ("getitem[float-index]", "DTypeError", "getitem", lambda x, i: x[i], (A, Arg((2,)))),
        ("take_along_axis[ndim]", "ShapeError", "take_along_axis", lambda x, i: F.take_along_axis(x, i, axis=1),
         (A, Arg((2,), "int64", 0, 2, "index"))),
        ("take_along_axis[float-index]", "DTypeError", "take_along_axis",
         lambda x, i: F.take_along_axis(x, i, axis=1), (A, A)),
        ("scatter_add[shapes]", "ShapeError", "scatter_add", lambda x, i, s: F.scatter_add(x, i, s, axis=1),
         (A, Arg((2, 2), "int64", 0, 2, "index"), Arg((2, 3)))),
        ("pad[negative]", "ShapeError", "pad", lambda x: F.pad(x, ((0, -1), (0, 0))), (A,)),
        ("item[size]", "ShapeError", "item", lambda x: x.item(), (A,)),
        ("cross_entropy[float-class-target]", "ShapeError", "cross_entropy", lambda x, t: NF.cross_entropy(x, t),
         (Arg((3, 5)), Arg((3,)))),
        ("nll_loss[target-dtype]", "DTypeError", "nll_loss", lambda x, t: NF.nll_loss(x, t),
         (Arg((3, 5)), Arg((3,)))),
        ("cross_entropy[probability-shape]", "ShapeError", "cross_entropy", lambda x, t: NF.cross_entropy(x, t),
         (Arg((3, 5)), Arg((3, 4)))),
        ("embedding[float-indices]", "DTypeError", "embedding", lambda i, w: NF.embedding(i, w), (A, A)),
        ("layer_norm[shape]", "ShapeError", "layer_norm", lambda x: NF.layer_norm(x, (4,)), (A,)),
        ("linear_relu[shapes]", "ShapeError", "linear_relu", NF.linear_relu, (A, Arg((2, 4)), Arg((4,)))),
        ("linear_relu[dtypes]", "DTypeError", "linear_relu", NF.linear_relu,
         (A, Arg((3, 4), "float64"), Arg((4,)))),
        ("conv2d[channels]", "ShapeError", ("conv2d", "channel"), NF.conv2d, (Arg((1, 3, 5, 5)), Arg((2, 2, 3, 3)))),
        ("conv2d[kernel-too-large]", "ShapeError", "conv2d", NF.conv2d, (Arg((1, 2, 2, 2)), Arg((2, 2, 3, 3)))),
        ("conv2d[int]", "DTypeError", "conv2d", NF.conv2d, (Arg((1, 2, 5, 5), "int32"), Arg((2, 2, 3, 3), "int32"))),
        ("add[autodiff-mix]", "DeviceMismatch", ("add", "autodiff"), F.add, (A, Arg((2, 3), autodiff=True))),
        ("matmul[autodiff-mix]", "DeviceMismatch", ("matmul", "autodiff"), F.matmul, (Arg((3, 2), autodiff=True), A)),
        ("where[autodiff-mix]", "DeviceMismatch", "where", F.where,
         (Arg((2, 3), "bool"), A, Arg((2, 3), autodiff=True))),
        ("concat[autodiff-mix]", "DeviceMismatch", "concat", lambda a, b: F.concat([a, b]),
         (A, Arg((2, 3), autodiff=True))),
        ("require_grad[int]", "DTypeError", "require_grad", lambda x: x.require_grad(),
         (Arg((2,), "int64", autodiff=True),)),
        ("require_grad[plain-device]", "AutodiffError", "require_grad", lambda x: x.require_grad(), (A,)),
        ("require_grad[non-leaf]", "AutodiffError", "not a leaf",
         lambda x: (x.require_grad() * 2).require_grad(), (Arg((2,), autodiff=True),)),
        ("backward[non-scalar]", "AutodiffError", "backward",
         lambda x: (x.require_grad() * 2).backward(), (Arg((2,), autodiff=True),)),
        ("backward[plain-device]", "AutodiffError", "backward", lambda x: x.sum().backward(), (A,)),
    ]
    for name, err, match, fn, args in E:
        _add(f"error:{name}", name.split("[")[0], "error", fn, args, error=err, match=match)
