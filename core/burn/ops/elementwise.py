"""Element-wise primitives: forward meta rule and backward rule side by side.

Binary ops cast both operands to their common dtype (recorded as explicit
``cast`` nodes) before the primitive, so every backend kernel sees operands
of one dtype and only numpy broadcasting between them.
"""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes as dt
from ..bridge import Handle
from ..errors import DTypeError, describe
from ..graph import graph_for
from ..primitives import ELEMENTWISE, TensorMeta, primitive
from ..tensor import Tensor, apply
from ._util import broadcast_shapes, scalar_dtype
from . import creation as _creation

__all__ = [
    "astype", "neg", "abs", "sign", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt",
    "square", "sin", "cos", "tan", "tanh", "sigmoid", "relu", "gelu", "silu", "erf", "floor", "ceil",
    "round", "trunc", "reciprocal", "clip", "isnan", "isinf", "isfinite", "logical_not", "positive",
    "add", "subtract", "multiply", "divide", "pow", "maximum", "minimum", "remainder", "floor_divide",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal", "logical_and",
    "logical_or", "logical_xor", "where", "sub", "mul", "div", "eq", "ne", "lt", "le", "gt", "ge",
    "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "atan2", "real", "imag",
    "conj", "angle", "nan_to_num", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_invert",
    "copysign", "hypot", "logaddexp", "signbit", "square", "softplus", "nextafter", "make_complex",
]


def _unbroadcast(g: Tensor, shape) -> Tensor:
    """Sum ``g`` down to ``shape`` (the adjoint of numpy broadcasting)."""
    if g.shape == tuple(shape):
        return g
    # ops.reduction builds on this module: its sum is reached as the Tensor method
    # (bound by burn._methods), and its primitive as that function's ``prim``
    _sum = Tensor.sum
    _sum = getattr(_sum, "__wrapped__", _sum)     # the function itself, not numpy's method spelling
    lead = g.ndim - len(shape)
    kept = tuple(i + lead for i, s in enumerate(shape) if s == 1 and g.shape[i + lead] != 1)
    if not kept:           # only leading axes go (a bias gradient): one sum, no reshape
        if g._h.dtype.kind in "fc":      # the meta is known: record the sum directly
            return apply(_sum.prim, (g,), {"axis": tuple(range(lead)), "keepdims": False},
                         (_meta(TensorMeta, (tuple(shape), g._h.dtype, None)),))
        return _sum(g, axis=tuple(range(lead)))
    r = _sum(g, axis=tuple(range(lead)) + kept, keepdims=True)
    return r.reshape(tuple(shape))


# -- cast ------------------------------------------------------------------------

def _cast_meta(x, *, dtype):
    return TensorMeta(x.shape, dtype)


def _cast_backward(ctx, g):
    x = ctx.inputs[0]
    if g.dtype.is_complex and not x.dtype.is_complex and x.dtype.is_inexact:
        g = real(g)     # real -> complex cast: the gradient of the real input is the real part (as torch)
    return (g.astype(x.dtype) if x.dtype.is_inexact else None,)


cast_p = primitive("cast", ELEMENTWISE, _cast_meta)
cast_p.backward = _cast_backward


def astype(x, dtype, /, *, copy=True, device=None) -> Tensor:
    """``x`` converted to ``dtype`` (Array API ``astype``), then moved to ``device`` if
    one is given.

    Example:
        >>> import burn
        >>> assert burn.astype(burn.tensor([1.7]), burn.int32).tolist() == [1]
        >>> assert burn.astype(burn.ones(1), burn.float64, device=burn.Device.flex()).dtype is burn.float64
    """
    if device is not None:
        return astype(x, dtype, copy=copy).to_device(device)
    d = dt.as_dtype(dtype)
    if d is x.dtype:
        return x if not copy else apply(cast_p, (x,), {"dtype": d})
    return apply(cast_p, (x,), {"dtype": d})


# -- unary -------------------------------------------------------------------------

def _same(d):
    return d


def _to_float(d):
    return d if d.is_inexact else dt.default_float


def _to_bool(d):
    return dt.bool_


# ops with no complex definition (numpy has none; they order or round real values): an
# error at the call on every backend, not a backend's error at the flush
_REAL_ONLY = frozenset({"floor", "ceil", "round", "trunc", "relu", "gelu", "silu", "softplus", "erf", "signbit",
                        "atan2", "hypot", "logaddexp", "copysign", "nextafter", "remainder", "floor_divide",
                        "clip"})


def _no_complex(name, *ts):
    raise DTypeError(f"{name}: not defined for complex tensors ({', '.join(describe(t) for t in ts)}); "
                     f"apply it to burn.real(x) / burn.imag(x) / burn.abs(x)")


def _unary(name, backward, *, rule=_same, floats=False, allow_bool=False, doc=""):
    real_only = name in _REAL_ONLY

    def meta(x):
        if x.dtype.is_bool and not allow_bool:
            raise DTypeError(f"{name}: not defined for bool tensors ({describe(x)}); cast with .astype() first")
        if real_only and x.dtype.is_complex:
            _no_complex(name, x)
        return TensorMeta(x.shape, rule(x.dtype))
    p = primitive(name, ELEMENTWISE, meta, differentiable=backward is not None)
    p.backward = backward

    same = rule is _same
    fast_kinds = "f" if real_only else "fc"

    def fn(x, /):
        if isinstance(x, Tensor):
            h = x._h
            if same and h.dtype.kind in fast_kinds:    # a float in, the same float out: meta known
                return apply(p, (x,), None, (_meta(TensorMeta, (h.shape, h.dtype, None)),))
        else:
            x = _creation.tensor(x)
        if floats and not x.dtype.is_inexact:
            x = astype(x, dt.default_float)
        return apply(p, (x,))
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc or f"Element-wise ``{name}``.\n\n    Example:\n        >>> import burn\n        >>> y = burn.{name}(burn.tensor([0.5, 1.0]))\n        >>> assert y.shape == (2,)\n    "
    fn.prim = p
    return fn


def _zero_grad(ctx, g):
    return (None,)


def _holomorphic(rule):
    """A rule written as ``g * f'(z)`` (``g / ...``), made right for complex inputs.

    For a real loss, the gradient of a complex input in PyTorch's convention (the one
    ``mul``'s rule follows: dL = Re(conj(G) dz)) is ``g * conj(f'(z))`` for a holomorphic
    ``f``, which is ``conj(conj(g) * f'(z))``: the real rule run on ``conj(g)``, conjugated."""
    def bw(c, g):
        if not any(t.dtype.is_complex for t in c.inputs):
            return rule(c, g)
        return tuple(None if r is None else conj(r) for r in rule(c, conj(g)))
    bw.__name__ = getattr(rule, "__name__", "bw")
    return bw


def _bw_angle(c, g):
    # angle(x + iy) = atan2(y, x): d angle = Re(conj(i / conj(z)) dz), so the gradient is g i / conj(z)
    # (0 at z = 0, as PyTorch); a real input's angle is piecewise constant
    z = c.inputs[0]
    if not z.dtype.is_complex:
        return (None,)
    zero = z == 0
    return (where(zero, 0, (g * 1j) / conj(where(zero, 1, z))),)


neg = _unary("neg", lambda c, g: (-g,))
positive = _unary("positive", lambda c, g: (g,))
def _unit(z, r):
    # z / |z| (0 where z == 0) from differentiable ops: sign's own rule is zero, which is
    # right for real z only, so complex rules that need it stay twice-differentiable this way
    nz = r != 0
    return where(nz, z / where(nz, r, 1), 0)


def _bw_abs(c, g):
    x = c.inputs[0]
    return (g * _unit(x, c.out),) if x.dtype.is_complex else (g * sign(x),)


def _bw_sign(c, g):
    # real sign is piecewise constant; complex sign z/|z| moves with the phase: the adjoint
    # keeps g's component tangent to the unit circle, divided by |z| (PyTorch's sgn rule)
    x = c.inputs[0]
    if not x.dtype.is_complex:
        return (None,)
    r = abs(x)
    s = c.out
    tangent = g - s * real(conj(s) * g).astype(x.dtype)
    nz = r != 0
    return (where(nz, tangent / where(nz, r, 1).astype(x.dtype), 0),)


abs = _unary("abs", _bw_abs, rule=dt.real_of)   # |complex| is real
sign = _unary("sign", _bw_sign)
exp = _unary("exp", _holomorphic(lambda c, g: (g * c.out,)), floats=True)
expm1 = _unary("expm1", _holomorphic(lambda c, g: (g * (c.out + 1),)), floats=True)
log = _unary("log", _holomorphic(lambda c, g: (g / c.inputs[0],)), floats=True)
log1p = _unary("log1p", _holomorphic(lambda c, g: (g / (c.inputs[0] + 1),)), floats=True)
log2 = _unary("log2", _holomorphic(lambda c, g: (g / (c.inputs[0] * math.log(2.0)),)), floats=True)
log10 = _unary("log10", _holomorphic(lambda c, g: (g / (c.inputs[0] * math.log(10.0)),)), floats=True)
sqrt = _unary("sqrt", _holomorphic(lambda c, g: (g / (c.out * 2),)), floats=True)
rsqrt = _unary("rsqrt", _holomorphic(lambda c, g: (g * (c.out * c.out * c.out) * -0.5,)), floats=True)
square = _unary("square", _holomorphic(lambda c, g: (g * c.inputs[0] * 2,)))
sin = _unary("sin", _holomorphic(lambda c, g: (g * cos(c.inputs[0]),)), floats=True)
cos = _unary("cos", _holomorphic(lambda c, g: (-(g * sin(c.inputs[0])),)), floats=True)
tan = _unary("tan", _holomorphic(lambda c, g: (g * (c.out * c.out + 1),)), floats=True)
asin = _unary("asin", _holomorphic(lambda c, g: (g * rsqrt(1 - c.inputs[0] * c.inputs[0]),)), floats=True)
acos = _unary("acos", _holomorphic(lambda c, g: (-(g * rsqrt(1 - c.inputs[0] * c.inputs[0])),)), floats=True)
atan = _unary("atan", _holomorphic(lambda c, g: (g / (c.inputs[0] * c.inputs[0] + 1),)), floats=True)
sinh = _unary("sinh", _holomorphic(lambda c, g: (g * cosh(c.inputs[0]),)), floats=True)
cosh = _unary("cosh", _holomorphic(lambda c, g: (g * sinh(c.inputs[0]),)), floats=True)
tanh = _unary("tanh", _holomorphic(lambda c, g: (g * (1 - c.out * c.out),)), floats=True)
asinh = _unary("asinh", _holomorphic(lambda c, g: (g * rsqrt(c.inputs[0] * c.inputs[0] + 1),)), floats=True)
acosh = _unary("acosh", _holomorphic(lambda c, g: (g * rsqrt(c.inputs[0] * c.inputs[0] - 1),)), floats=True)
atanh = _unary("atanh", _holomorphic(lambda c, g: (g / (1 - c.inputs[0] * c.inputs[0]),)), floats=True)
sigmoid = _unary("sigmoid", _holomorphic(lambda c, g: (g * c.out * (1 - c.out),)), floats=True)
relu = _unary("relu", lambda c, g: (where(c.inputs[0] > 0, g, 0),))   # 2 ops, not gt+cast+mul
erf = _unary("erf", lambda c, g: (g * exp(-(c.inputs[0] * c.inputs[0])) * (2.0 / math.sqrt(math.pi)),),
             floats=True)
_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _gelu_backward(c, g):
    x = c.inputs[0]
    cdf = (erf(x * _SQRT_HALF) + 1) * 0.5
    pdf = exp(x * x * -0.5) * _INV_SQRT_2PI
    return (g * (cdf + x * pdf),)


gelu = _unary("gelu", _gelu_backward, floats=True,
              doc="Gaussian error linear unit, exact form ``x * Phi(x)``.\n\n    Example:\n"
                  "        >>> import burn\n        >>> assert burn.gelu(burn.tensor([0.0])).item() == 0.0\n    ")


def _silu_backward(c, g):
    x = c.inputs[0]
    s = sigmoid(x)
    return (g * s * (1 + x * (1 - s)),)


silu = _unary("silu", _silu_backward, floats=True)
softplus = _unary("softplus", lambda c, g: (g * sigmoid(c.inputs[0]),), floats=True)
floor = _unary("floor", _zero_grad)
ceil = _unary("ceil", _zero_grad)
round = _unary("round", _zero_grad)
trunc = _unary("trunc", _zero_grad)
reciprocal = _unary("reciprocal", _holomorphic(lambda c, g: (-(g * c.out * c.out),)), floats=True)
isnan = _unary("isnan", None, rule=_to_bool, allow_bool=True)
isinf = _unary("isinf", None, rule=_to_bool, allow_bool=True)
isfinite = _unary("isfinite", None, rule=_to_bool, allow_bool=True)
signbit = _unary("signbit", None, rule=_to_bool)
logical_not = _unary("logical_not", None, rule=_to_bool, allow_bool=True)
bitwise_invert = _unary("bitwise_invert", None, allow_bool=True)
conj = _unary("conj", lambda c, g: (conj(g),))
real = _unary("real", lambda c, g: (g.astype(c.inputs[0].dtype),) if c.inputs[0].dtype.is_complex else (g,),
              rule=dt.real_of)
imag = _unary("imag", lambda c, g: (g.astype(c.inputs[0].dtype) * 1j,) if c.inputs[0].dtype.is_complex else (None,),
              rule=dt.real_of)
angle = _unary("angle", _bw_angle, rule=lambda d: dt.real_of(d) if d.is_complex else _to_float(d))


# -- binary ------------------------------------------------------------------------

def _operands(name, a, b):
    """Tensors of one dtype for a binary op; scalars take the tensor's dtype."""
    scalar, tensor = _creation.scalar, _creation.tensor   # hot path: no import statement per call
    ta, tb = isinstance(a, Tensor), isinstance(b, Tensor)
    if ta and tb:
        if a.dtype is not b.dtype:
            d = dt.result_type(a.dtype, b.dtype)
            if a.dtype is not d:
                a = astype(a, d)
            if b.dtype is not d:
                b = astype(b, d)
        return a, b
    if ta:
        kind = type(b)
        if kind is float or kind is int:      # the common scalar operands, without the generic checks
            d = a.dtype
            if d.is_bool or kind is float and not d.is_inexact:
                d = scalar_dtype(b, d)
                a = astype(a, d)
            return a, scalar(b, d, a.device)
        if isinstance(b, (bool, int, float, complex)) or hasattr(b, "dtype") and getattr(b, "shape", None) == ():
            d = scalar_dtype(b, a.dtype) if not hasattr(b, "shape") else dt.result_type(a.dtype, dt.as_dtype(b.dtype))
            if d is not a.dtype:
                a = astype(a, d)
            return a, scalar(b.item() if hasattr(b, "item") else b, d, a.device)
        return _operands(name, a, tensor(b, device=a.device))
    if tb:
        b2, a2 = _operands(name, b, a)
        return a2, b2
    return _operands(name, tensor(a), b)


_meta = tuple.__new__        # TensorMeta(shape, dtype, None) without the namedtuple's Python __new__
_SCALAR_TENSORS: dict = {}


def _scalar(value, dtype, device):
    """``creation.scalar`` for a float/int operand, memoized by device identity.

    ``creation.scalar`` hashes the Device (a Python ``__hash__``) on every call;
    keying by ``id(device)`` is safe because the entry keeps the device alive."""
    if type(value) is float and (value != value or (value == 0 and math.copysign(1.0, value) < 0)):
        # NaN would never hit; -0.0 == 0.0 must not share an entry (creation.scalar's
        # cache would hand back +0.0 too, so build this one uncached)
        graph = graph_for(device)
        arr = np.asarray(value, dtype=np.float64 if dtype.is_floating and dtype.itemsize < 4 else None)
        h = Handle((), dtype, graph, graph.backend.from_numpy(arr, dtype, device.index))
        e = (device, h)
    else:
        key = (id(device), dtype, type(value), value)
        e = _SCALAR_TENSORS.get(key)
        if e is None:
            if len(_SCALAR_TENSORS) > 4096:
                _SCALAR_TENSORS.clear()
            e = _SCALAR_TENSORS[key] = (device, _creation.scalar(value, dtype, device)._h)
    t = _new(Tensor)
    t._h = e[1]
    t.device = device
    t._grad = None
    t._leaf = False
    return t


_new = object.__new__


def _binary_meta(name, rule):
    def meta(a, b):
        shape, sb = a.shape, b.shape
        if shape != sb:
            shape = _broadcast2(name, a, b, shape, sb)
        return TensorMeta(shape, rule(a.dtype, name, a, b))
    return meta


def _broadcast2(name, a, b, sa, sb):
    """The broadcast shape of two different shapes, with fast paths for the common
    cases: a 0-d operand (a Python scalar), and a trailing-suffix operand (a bias)."""
    if not sb:
        return sa
    if not sa:
        return sb
    na, nb = len(sa), len(sb)
    if nb < na and sa[na - nb:] == sb:
        return sa
    if na < nb and sb[nb - na:] == sa:
        return sb
    return broadcast_shapes(name, a, b)


def _arith(d, name, a, b):
    if d.is_bool:
        raise DTypeError(f"{name}: not defined for bool tensors ({describe(a)}, {describe(b)}); "
                         f"use logical_and/logical_or, or cast with .astype()")
    return d


def _cmp(d, name, a, b):
    return dt.bool_


def _real_arith(d, name, a, b):
    if d.is_complex:
        _no_complex(name, a, b)
    return _arith(d, name, a, b)


def _logical(d, name, a, b):
    return dt.bool_


def _bitwise(d, name, a, b):
    if d.is_inexact:
        raise DTypeError(f"{name}: needs integer or bool tensors, got {describe(a)}, {describe(b)}")
    return d


def _binary(name, backward, rule=_arith, *, pre=None, doc="", example="burn.tensor([1.0, 2.0]), 2.0"):
    p = primitive(name, ELEMENTWISE, _binary_meta(name, rule), differentiable=backward is not None)
    p.backward = backward
    arith = rule is _arith         # its dtype rule only rejects bool: checked inline

    def fn(a, b, /):
        # fast paths (the ops of a training step): tensors of one dtype, or a tensor
        # and a Python float/int that takes its dtype; the meta rule is inlined
        if isinstance(a, Tensor):
            h = a._h
            d = h.dtype
            if pre is None or d.kind in "fc":          # ``pre`` only casts non-float operands
                if isinstance(b, Tensor):
                    hb = b._h
                    if hb.dtype is d:
                        shape, sb = h.shape, hb.shape
                        if shape != sb:
                            shape = _broadcast2(name, a, b, shape, sb)
                        d = d if arith and d.kind != "b" else rule(d, name, a, b)
                        return apply(p, (a, b), None, (_meta(TensorMeta, (shape, d, None)),))
                else:
                    kind = type(b)
                    if (kind is float and d.kind in "fc") or (kind is int and d.kind in "iufc"):
                        b = _scalar(b, d, a.device)
                        d = d if arith else rule(d, name, a, b)
                        return apply(p, (a, b), None, (_meta(TensorMeta, (h.shape, d, None)),))
        elif isinstance(b, Tensor):
            h = b._h
            d = h.dtype
            kind = type(a)
            if (pre is None or d.kind in "fc") and ((kind is float and d.kind in "fc") or
                                                    (kind is int and d.kind in "iufc")):
                a = _scalar(a, d, b.device)
                d = d if arith else rule(d, name, a, b)
                return apply(p, (a, b), None, (_meta(TensorMeta, (h.shape, d, None)),))
        a, b = _operands(name, a, b)
        if pre is not None:
            a, b = pre(a, b)
        return apply(p, (a, b))
    fn.__name__ = name
    fn.__qualname__ = name
    fn.__doc__ = doc or (f"Element-wise ``{name}`` with numpy broadcasting.\n\n    Example:\n"
                         f"        >>> import burn\n        >>> y = burn.{name}({example})\n"
                         f"        >>> assert y.shape == (2,)\n    ")
    fn.prim = p
    return fn


def _bw_add(c, g):
    a, b = c.inputs
    return _unbroadcast(g, a.shape), _unbroadcast(g, b.shape)


def _bw_sub(c, g):
    a, b = c.inputs
    return _unbroadcast(g, a.shape), _unbroadcast(-g, b.shape)


def _bw_mul(c, g):
    a, b = c.inputs
    return (_unbroadcast(g * conj(b) if b.dtype.is_complex else g * b, a.shape) if a.requires_grad else None,
            _unbroadcast(g * conj(a) if a.dtype.is_complex else g * a, b.shape) if b.requires_grad else None)


def _bw_div(c, g):
    a, b = c.inputs
    ga = _unbroadcast(g / b, a.shape) if a.requires_grad else None
    gb = _unbroadcast(-(g * c.out) / b, b.shape) if b.requires_grad else None
    return ga, gb


def _bw_pow(c, g):
    a, b = c.inputs
    ga = _unbroadcast(g * b * pow(a, b - 1), a.shape) if a.requires_grad else None
    gb = None
    if b.requires_grad:
        # d a^b / db = a^b log(a): real bases only where a > 0; complex ones away from 0
        safe = where(a != 0, a, 1) if a.dtype.is_complex else where(a > 0, a, 1)
        gb = _unbroadcast(g * c.out * log(safe), b.shape)
    return ga, gb


def _bw_minmax(pick_a):
    def bw(c, g):
        a, b = c.inputs
        wa = pick_a(a, b).astype(g.dtype) + (a == b).astype(g.dtype) * 0.5
        return _unbroadcast(g * wa, a.shape), _unbroadcast(g * (1 - wa), b.shape)
    return bw


def _bw_remainder(c, g):
    a, b = c.inputs
    return _unbroadcast(g, a.shape), _unbroadcast(-(g * floor(a / b)), b.shape)


def _bw_atan2(c, g):
    a, b = c.inputs
    den = a * a + b * b
    return _unbroadcast(g * b / den, a.shape), _unbroadcast(-(g * a) / den, b.shape)


def _bw_hypot(c, g):
    a, b = c.inputs
    return _unbroadcast(g * a / c.out, a.shape), _unbroadcast(g * b / c.out, b.shape)


def _bw_logaddexp(c, g):
    a, b = c.inputs
    return _unbroadcast(g * exp(a - c.out), a.shape), _unbroadcast(g * exp(b - c.out), b.shape)


def _true_div_pre(a, b):
    if not a.dtype.is_inexact:
        return astype(a, dt.default_float), astype(b, dt.default_float)
    return a, b


def _float_pre(a, b):
    return _true_div_pre(a, b)


add = _binary("add", _bw_add)
subtract = _binary("sub", _bw_sub)
multiply = _binary("mul", _bw_mul)
divide = _binary("div", _holomorphic(_bw_div), pre=_true_div_pre)
_pow = _binary("pow", _holomorphic(_bw_pow))


def pow(x1, x2, /) -> Tensor:  # noqa: A001 (the Array API name)
    """Element-wise ``x1 ** x2`` with numpy broadcasting.

    Integer powers follow PyTorch: a negative Python-int exponent of an integer tensor is an
    error at the call (numpy and torch both refuse it), and a tensor of negative integer
    exponents gives C's integer result (``1 ** -k = 1``, ``(-1) ** -k = ±1``, else 0) on
    every backend.

    Example:
        >>> import burn
        >>> assert burn.pow(burn.tensor([1.0, 2.0]), 2.0).tolist() == [1.0, 4.0]
        >>> assert (burn.tensor([2, 1, -1]) ** burn.tensor([-1, -2, -3])).tolist() == [0, 1, -1]
    """
    if type(x2) is int and x2 < 0 and isinstance(x1, Tensor) and x1._h.dtype.kind in "iu":
        raise DTypeError(f"pow: integers to negative integer powers are not allowed ({describe(x1)} ** {x2}); "
                         f"use a floating base, e.g. x.astype(burn.float64) ** {x2}")
    return _pow(x1, x2)


pow.prim = _pow.prim
maximum = _binary("maximum", _bw_minmax(lambda a, b: a > b))
minimum = _binary("minimum", _bw_minmax(lambda a, b: a < b))
remainder = _binary("remainder", _bw_remainder, rule=_real_arith)
_floor_divide = _binary("floor_divide", None, rule=_real_arith)


def floor_divide(x1, x2, /) -> Tensor:
    """``floor(x1 / x2)`` element-wise, with numpy broadcasting (``x1 // x2``).

    Floats follow the Array API's special cases where they differ from numpy:
    an infinity divided by a finite number is a signed infinity (numpy: NaN), and
    a finite number divided by an infinity a signed zero (numpy: -1 for opposite
    signs), which is what ``x1 / x2`` gives exactly there.

    Example:
        >>> import burn
        >>> assert burn.floor_divide(burn.tensor([7, -7]), 2).tolist() == [3, -4]
        >>> inf = float("inf")
        >>> y = burn.floor_divide(burn.tensor([inf, -5.0, 5.0]), burn.tensor([2.0, inf, 2.0]))
        >>> assert y.tolist() == [inf, -0.0, 2.0]
    """
    out = _floor_divide(x1, x2)
    if not out.dtype.is_floating:
        return out
    a, b = _operands("floor_divide", x1, x2)
    return where(logical_xor(isinf(a), isinf(b)), divide(a, b), out)


floor_divide.prim = _floor_divide.prim
atan2 = _binary("atan2", _bw_atan2, pre=_float_pre, rule=_real_arith)
hypot = _binary("hypot", _bw_hypot, pre=_float_pre, rule=_real_arith)
logaddexp = _binary("logaddexp", _bw_logaddexp, pre=_float_pre, rule=_real_arith)
copysign = _binary("copysign", None, pre=_float_pre, rule=_real_arith)
nextafter = _binary("nextafter", None, pre=_float_pre, rule=_real_arith, doc="""The next representable value after ``x1`` towards ``x2``, element-wise (``x2`` itself
    where they are equal, so ``nextafter(0.0, -0.0)`` is ``-0.0``; NaN if either is NaN).

    Every backend steps the bit pattern in its own kernel (C's ``nextafter``, or the 16-bit
    pattern of float16 / bfloat16 where the kernel computes them in float). Not differentiable
    (the result is piecewise constant in ``x1``).

    Example:
        >>> import burn
        >>> x = burn.tensor([1.0, 0.0], dtype=burn.float32)
        >>> y = burn.nextafter(x, burn.tensor([2.0, -1.0], dtype=burn.float32))
        >>> assert y.tolist()[0] == 1.0 + 2.0 ** -23 and y.tolist()[1] == -(2.0 ** -149)
    """)


def _parts_rule(d, name, a, b):
    if d not in (dt.float32, dt.float64):
        raise DTypeError(f"make_complex: needs float32 or float64 parts, got {describe(a)}, {describe(b)}")
    return dt.complex_of(d)


def _bw_make_complex(c, g):
    a, b = c.inputs
    return _unbroadcast(real(g), a.shape), _unbroadcast(imag(g), b.shape)


_make_complex = _binary("make_complex", _bw_make_complex, rule=_parts_rule)


def make_complex(real_part, imag_part, /) -> Tensor:
    """The complex tensor with real part ``real_part`` and imaginary part ``imag_part``
    (broadcast together; PyTorch's ``torch.complex``): each part is taken bit for bit, so
    infinities, NaNs and signed zeros stay where they are (``re + 1j * im`` would turn
    ``inf * 1j`` into ``nan + inf j``). float64 parts give complex128, other real parts
    complex64. Differentiable: the parts' gradients are the real and imaginary parts of
    the result's.

    Example:
        >>> import burn
        >>> z = burn.make_complex(burn.tensor([1.0, float("inf")]), burn.tensor([-0.0, 2.0]))
        >>> assert z.dtype is burn.complex64 and z.tolist() == [complex(1, -0.0), complex(float("inf"), 2)]
    """
    a, b = _operands("make_complex", real_part, imag_part)
    if a.dtype.is_complex:
        _no_complex("make_complex", a, b)
    if a.dtype is not dt.float64:
        a, b = astype(a, dt.float32), astype(b, dt.float32)
    return _make_complex(a, b)


make_complex.prim = _make_complex.prim
equal = _binary("eq", None, _cmp)
not_equal = _binary("ne", None, _cmp)
less = _binary("lt", None, _cmp)
less_equal = _binary("le", None, _cmp)
greater = _binary("gt", None, _cmp)
greater_equal = _binary("ge", None, _cmp)
logical_and = _binary("logical_and", None, _logical, example="burn.tensor([True, False]), True")
logical_or = _binary("logical_or", None, _logical, example="burn.tensor([True, False]), True")
logical_xor = _binary("logical_xor", None, _logical, example="burn.tensor([True, False]), True")
bitwise_and = _binary("bitwise_and", None, _bitwise, example="burn.tensor([1, 2]), 3")
bitwise_or = _binary("bitwise_or", None, _bitwise, example="burn.tensor([1, 2]), 3")
bitwise_xor = _binary("bitwise_xor", None, _bitwise, example="burn.tensor([1, 2]), 3")
sub, mul, div = subtract, multiply, divide
eq, ne, lt, le, gt, ge = equal, not_equal, less, less_equal, greater, greater_equal


# -- where / clip ------------------------------------------------------------------

def _where_meta(cond, a, b):
    if not cond.dtype.is_bool:
        raise DTypeError(f"where: condition must be bool, got {describe(cond)}")
    sc, sa, sb = cond.shape, a.shape, b.shape
    if sc == sa and (not sb or sb == sa):      # a relu gradient: where(x > 0, g, 0)
        return TensorMeta(sa, a.dtype)
    return TensorMeta(broadcast_shapes("where", cond, a, b), a.dtype)


def _bw_where(c, g):
    cond, a, b = c.inputs
    z = 0
    return None, _unbroadcast(where(cond, g, z), a.shape), _unbroadcast(where(cond, z, g), b.shape)


where_p = primitive("where", ELEMENTWISE, _where_meta)
where_p.backward = _bw_where


def where(condition, x1, x2, /) -> Tensor:
    """Pick ``x1`` where ``condition`` holds, else ``x2`` (broadcasting all three).

    Example:
        >>> import burn
        >>> x = burn.tensor([-1.0, 2.0])
        >>> assert burn.where(x > 0, x, 0.0).tolist() == [0.0, 2.0]
    """
    if isinstance(condition, Tensor) and isinstance(x1, Tensor) and condition._h.dtype is dt.bool_:
        h1 = x1._h
        d = h1.dtype
        kind = type(x2)
        if (kind is int and d.kind in "iufc") or (kind is float and d.kind in "fc"):   # where(m, g, 0)
            x2 = _scalar(x2, d, x1.device)
            if condition._h.shape == h1.shape:
                return apply(where_p, (condition, x1, x2), None, (_meta(TensorMeta, (h1.shape, d, None)),))
            return apply(where_p, (condition, x1, x2))
    tensor = _creation.tensor
    if not isinstance(condition, Tensor):
        like = x1 if isinstance(x1, Tensor) else x2 if isinstance(x2, Tensor) else None
        condition = tensor(condition, device=like.device if like is not None else None)
    if not isinstance(x1, Tensor) and not isinstance(x2, Tensor):
        x1 = tensor(x1, device=condition.device)
    x1, x2 = _operands("where", x1, x2)
    return apply(where_p, (condition, x1, x2))


def _clip_meta(x, *, min, max):
    return TensorMeta(x.shape, x.dtype)


def _bw_clip(c, g):
    x = c.inputs[0]
    lo, hi = c.attrs["min"], c.attrs["max"]
    mask = None
    if lo is not None:
        mask = x >= lo
    if hi is not None:
        m2 = x <= hi
        mask = m2 if mask is None else logical_and(mask, m2)
    return (g * mask.astype(g.dtype) if mask is not None else g,)


clip_p = primitive("clip", ELEMENTWISE, _clip_meta)
clip_p.backward = _bw_clip


def clip(x, /, min=None, max=None) -> Tensor:
    """Limit values to ``[min, max]`` (either may be None or a tensor).

    Example:
        >>> import burn
        >>> assert burn.clip(burn.tensor([-2.0, 0.5, 3.0]), -1, 1).tolist() == [-1.0, 0.5, 1.0]
    """
    if isinstance(min, Tensor) or isinstance(max, Tensor):
        out = x
        if min is not None:
            out = maximum(out, min)
        if max is not None:
            out = minimum(out, max)
        return out
    if x.dtype.is_bool:
        raise DTypeError(f"clip: not defined for bool tensors ({describe(x)})")
    if x.dtype.is_complex:
        _no_complex("clip", x)
    cast = (lambda v: None if v is None else (float(v) if x.dtype.is_inexact else int(v)))
    return apply(clip_p, (x,), {"min": cast(min), "max": cast(max)})


def nan_to_num(x, /, nan=0.0, posinf=None, neginf=None) -> Tensor:
    """Replace NaN and infinities with finite numbers (numpy semantics).

    Example:
        >>> import burn
        >>> assert burn.nan_to_num(burn.tensor([float("nan"), 1.0])).tolist() == [0.0, 1.0]
    """
    if x.dtype.is_complex:      # numpy: each part on its own
        return (nan_to_num(real(x), nan, posinf, neginf) + nan_to_num(imag(x), nan, posinf, neginf) * 1j).astype(
            x.dtype)
    if not x.dtype.is_floating:
        return x
    import numpy as np
    info = np.finfo(np.float32 if x.dtype.itemsize <= 4 else np.float64)
    out = where(isnan(x), nan, x)
    out = where(logical_and(isinf(out), out > 0), info.max if posinf is None else posinf, out)
    return where(logical_and(isinf(out), out < 0), info.min if neginf is None else neginf, out)
