"""The backend conformance suite: every core op, checked on any device.

A backend package (first- or third-party) proves it implements burn's ops by
running this table on its device: each :class:`Case` builds its inputs on the
device, runs one op, and checks the result against an independent numpy
reference (values, shape and dtype), the gradient against float64 finite
differences (:func:`burn.testing.gradcheck`), or that a misuse raises the
right :class:`burn.BurnError` naming the op, at the call. Nothing here
imports a backend: the device is a value the caller passes.

From pytest, use :mod:`burn.testing.pytest_plugin`::

    import burn
    from burn.testing.pytest_plugin import make_conformance_tests
    test_conformance = make_conformance_tests(lambda: burn.Device("mybackend"))

Example:
    >>> import burn
    >>> from burn.testing import conformance
    >>> case = conformance.get_case("add[float32]")
    >>> conformance.run_case(case, burn.Device.flex())
    >>> assert {c.check for c in conformance.cases()} == {"forward", "grad", "error"}
"""
from __future__ import annotations

import math
import zlib
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

import burn
from burn import dtypes as _dt

__all__ = ["Arg", "Case", "cases", "get_case", "run_case", "FLOATS", "INTS", "NUMERIC", "ALL_DTYPES"]

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + ("bool",)

# (rtol, atol) per expected floating dtype; a case may scale them with ``tol``.
_TOL = {"float16": (4e-3, 4e-3), "bfloat16": (2.5e-2, 2.5e-2), "float32": (2e-5, 2e-6),
        "float64": (1e-10, 1e-12), "complex64": (2e-5, 2e-6), "complex128": (1e-10, 1e-12)}


@dataclass(frozen=True)
class Arg:
    """How one tensor input is generated.

    ``kind`` picks the values: ``real`` (uniform in [low, high]), ``nonzero``
    (|x| in [0.25, high], random sign; positive if low >= 0), ``distinct`` (no
    ties, for max/argmax), ``index`` (integers in [low, high)), ``bool``,
    ``special`` (nan, +-inf, +-0 and ordinary values), ``halves`` (k + 0.5).
    ``const`` inputs are held fixed by the gradient check (non-float ones always
    are); ``autodiff`` inputs are made on ``device.autodiff()``.

    Example:
        >>> import numpy as np
        >>> v = Arg((2, 3), "int8", -3, 3).values(np.random.default_rng(0))
        >>> assert v.shape == (2, 3) and v.min() >= -3 and v.max() <= 3
    """
    shape: tuple = (2, 3)
    dtype: str = "float32"
    low: float = -2.0
    high: float = 2.0
    kind: str = "real"
    const: bool = False
    autodiff: bool = False

    @property
    def is_float(self) -> bool:
        return self.dtype in FLOATS

    def values(self, rng) -> np.ndarray:
        """float64 / int64 / bool values in this argument's domain (before the cast to ``dtype``)."""
        shape, n = self.shape, int(np.prod(self.shape, dtype=np.int64))
        lo, hi = self.low, self.high
        if self.dtype == "uint8":
            lo = builtins_max(lo, 0)
        if self.dtype == "bool" or self.kind == "bool":
            return rng.random(shape) < 0.5
        if self.kind == "index":
            return rng.integers(int(lo), int(hi), size=shape).astype(np.int64)
        if self.kind == "special":
            pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25, 3.0])
            return np.resize(pool, n).reshape(shape)
        if self.kind == "halves":
            return (rng.integers(-4, 4, size=shape) + 0.5).astype(np.float64)
        if self.kind == "distinct":
            v = np.linspace(lo, hi, builtins_max(n, 2))[:n]
            return rng.permutation(v).reshape(shape) if self.dtype in FLOATS else \
                rng.permutation(np.arange(n) + int(lo)).reshape(shape)
        if self.dtype in FLOATS:
            if self.kind == "nonzero":
                mag = rng.uniform(0.25, builtins_max(abs(hi), abs(lo)), size=shape)
                return mag if lo >= 0 else mag * rng.choice([-1.0, 1.0], size=shape)
            return rng.uniform(lo, hi, size=shape)
        if self.kind == "nonzero":
            mag = rng.integers(1, int(builtins_max(abs(hi), abs(lo))) + 1, size=shape)
            return mag if lo >= 0 else mag * rng.choice([-1, 1], size=shape)
        return rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1, size=shape)


builtins_max = max


@dataclass(frozen=True)
class Case:
    """One conformance check.

    ``fn(*tensors)`` runs the op (``fn(*tensors, device=dev)`` when
    ``needs_device``); ``ref(*arrays)`` is the numpy reference on the same
    inputs (floats given as float64, integers and bools in their own dtype);
    ``out`` is the expected burn dtype name or a rule ``[dtype names] -> name``
    (default: the promoted dtype of the inputs); ``prop(values)`` replaces
    ``ref`` for random ops. ``check`` is ``forward``, ``grad`` (finite
    differences in float64) or ``error`` (``error`` class name, ``match`` text).

    Example:
        >>> c = get_case("matmul[batched,float32]")
        >>> assert c.op == "matmul" and c.check == "forward"
    """
    name: str
    op: str
    check: str
    fn: Callable
    args: tuple = ()
    ref: Callable | None = None
    out: object = None
    tol: float = 1.0
    error: str | None = None
    match: str | None = None
    needs_device: bool = False
    prop: Callable | None = None
    differentiable: bool = True
    tags: tuple = field(default=())

    def __repr__(self):
        return f"<conformance case {self.name}>"


# -- running ----------------------------------------------------------------------

def _seed(case) -> int:
    return zlib.crc32(case.name.encode())


def _make(case, device, rng):
    """Tensors on ``device`` and the float64/int reference arrays holding exactly their values."""
    tensors, arrays = [], []
    for a in case.args:
        dev = device.autodiff() if a.autodiff else device
        t = burn.tensor(a.values(rng), dtype=burn.as_dtype(a.dtype), device=dev)
        tensors.append(t)
    for t in tensors:
        arrays.append(_host(t))
    return tensors, arrays


def _host(t) -> np.ndarray:
    """A tensor's values for the reference: floats as float64 (bfloat16 included)."""
    v = np.asarray(t.numpy())
    if t.dtype.is_floating:
        return v.astype(np.float64)
    if t.dtype.is_complex:
        return v.astype(np.complex128)
    return v


def _expected_dtype(case, in_dtypes):
    out = case.out
    if out is None:
        return burn.result_type(*in_dtypes) if in_dtypes else burn.float32
    if callable(out):
        out = out([d.name for d in in_dtypes])
    return burn.as_dtype(out)


def _compare(case, got_t, ref, expect, where=""):
    label = f"{case.name}{where}"
    if not isinstance(got_t, burn.Tensor):
        raise AssertionError(f"{label}: expected a Tensor, got {type(got_t).__name__}")
    if got_t.dtype is not expect:
        raise AssertionError(f"{label}: dtype is {got_t.dtype}, expected {expect}")
    got = np.asarray(got_t.numpy())
    if got.dtype.name != expect.name:
        raise AssertionError(f"{label}: the backend returned numpy dtype {got.dtype} for a {expect} tensor")
    ref = np.asarray(ref)
    if tuple(got.shape) != tuple(ref.shape) or tuple(got_t.shape) != tuple(ref.shape):
        raise AssertionError(f"{label}: shape {got_t.shape} (array {got.shape}), expected {ref.shape}")
    if expect.is_inexact:
        rtol, atol = _TOL[expect.name]
        want = np.dtype(np.complex128 if expect.is_complex else np.float64)
        np.testing.assert_allclose(got.astype(want), ref.astype(want), rtol=rtol * case.tol,
                                   atol=atol * case.tol, equal_nan=True, err_msg=label)
    else:
        ref_c = ref.astype(np.dtype(expect.name))
        if not np.array_equal(got, ref_c):
            raise AssertionError(f"{label}: values differ\n got={got}\n ref={ref_c}")


def _call(case, tensors, device):
    return case.fn(*tensors, device=device) if case.needs_device else case.fn(*tensors)


def _run_forward(case, device):
    rng = np.random.default_rng(_seed(case))
    tensors, arrays = _make(case, device, rng)
    out = _call(case, tensors, device)
    if case.prop is not None:
        outs = out if isinstance(out, (tuple, list)) else (out,)
        expect = _expected_dtype(case, [t.dtype for t in tensors])
        for o in outs:
            if o.dtype is not expect:
                raise AssertionError(f"{case.name}: dtype is {o.dtype}, expected {expect}")
        case.prop(*[np.asarray(o.numpy()) for o in outs])
        return
    with np.errstate(all="ignore"):
        ref = case.ref(*arrays)
    expect = _expected_dtype(case, [t.dtype for t in tensors])
    if isinstance(ref, (tuple, list)):
        if not isinstance(out, (tuple, list)) or len(out) != len(ref):
            raise AssertionError(f"{case.name}: expected {len(ref)} outputs, got {out!r}")
        for i, (o, r) in enumerate(zip(out, ref)):
            _compare(case, o, r, expect, f" output {i}")
    else:
        _compare(case, out, ref, expect)


def _run_grad(case, device):
    from .gradcheck import gradcheck
    rng = np.random.default_rng(_seed(case))
    vals = [a.values(rng) for a in case.args]
    free = [i for i, a in enumerate(case.args) if a.is_float and not a.const]

    def f(*leaves):
        dev = leaves[0].device
        it = iter(leaves)
        ts = [next(it) if i in free else burn.tensor(v, dtype=burn.as_dtype(a.dtype), device=dev)
              for i, (a, v) in enumerate(zip(case.args, vals))]
        return _call(case, ts, dev)

    gradcheck(f, *[vals[i] for i in free], device=device, atol=1e-5 * case.tol, rtol=1e-4 * case.tol)


def _run_error(case, device):
    rng = np.random.default_rng(_seed(case))
    tensors, _ = _make(case, device, rng)
    cls = getattr(burn, case.error)
    try:
        out = _call(case, tensors, device)
    except burn.BurnError as e:
        if not isinstance(e, cls):
            raise AssertionError(f"{case.name}: raised {type(e).__name__}, expected {case.error}: {e}") from e
        for m in ((case.match,) if isinstance(case.match, str) else case.match or ()):
            if m not in str(e):
                raise AssertionError(f"{case.name}: message does not name {m!r}: {e}") from e
        return
    try:
        for o in (out if isinstance(out, (tuple, list)) else (out,)):
            if isinstance(o, burn.Tensor):
                o.numpy()
    except burn.BurnError as e:
        raise AssertionError(f"{case.name}: {case.error} was raised only when the value was read "
                             f"(at the flush), not at the call: {e}") from e
    raise AssertionError(f"{case.name}: expected {case.error} naming {case.match!r}, nothing was raised")


def run_case(case: Case, device) -> None:
    """Run one case on ``device``; raise AssertionError describing any mismatch.

    Example:
        >>> import burn
        >>> run_case(get_case("sum[axis=(0, 2),keepdims,float32]"), burn.Device.flex())
    """
    if not isinstance(device, burn.Device):
        device = burn.Device(device)
    runner = {"forward": _run_forward, "grad": _run_grad, "error": _run_error}[case.check]
    runner(case, device)


# -- the table -------------------------------------------------------------------------

_CASES: list = []
_BY_NAME: dict = {}


def _add(name, op, check, fn, args=(), ref=None, **kw):
    if name in _BY_NAME:
        raise ValueError(f"duplicate conformance case {name}")
    c = Case(name=name, op=op, check=check, fn=fn, args=tuple(args), ref=ref, **kw)
    _CASES.append(c)
    _BY_NAME[name] = c
    return c


def cases() -> list:
    """Every conformance case, in a stable order.

    Example:
        >>> names = [c.name for c in cases()]
        >>> assert len(names) == len(set(names)) > 500
    """
    if not _CASES:
        _build()
    return list(_CASES)


def get_case(name: str) -> Case:
    """The case called ``name`` (as in a pytest id).

    Example:
        >>> assert get_case("exp[grad]").check == "grad"
    """
    if not _CASES:
        _build()
    return _BY_NAME[name]


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
        _add(f"{op}[{v}{d}]", op, "forward", fn, _with(args, d), ref, out=out, tol=t)
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


def _build():
    try:
        _build_all()
    except BaseException:
        _CASES.clear()
        _BY_NAME.clear()
        raise


def _build_all():
    _elementwise()
    _promotion_and_scalars()
    _reductions()
    _movement()
    _indexing()
    _linear()
    _creation()
    _functional()
    _errors()


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
             (Arg((2, 3), "int32", builtins_max(math.ceil(lo), -2) if kind != "nonzero" else -3,
                  builtins_max(math.floor(hi), math.ceil(lo)), kind),), ref, out=_float_out)
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
                 lambda: np.array([0.25]), "float32"),
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
    _add("zeros_like[dtype]", "zeros_like", "forward", lambda x: F.zeros_like(x, dtype=F.int8), (Arg((2,)),),
         lambda x: np.zeros(2), out="int8")

    # random: properties, and reproducibility from device.seed()
    def uniform_prop(v):
        assert v.shape == (2000,), v.shape
        assert 0.0 <= v.min() and v.max() < 1.0, (v.min(), v.max())
        assert abs(v.mean() - 0.5) < 0.05 and abs(v.std() - math.sqrt(1 / 12)) < 0.03, (v.mean(), v.std())

    def normal_prop(v):
        assert v.shape == (2000,), v.shape
        assert abs(v.mean() - 1.0) < 0.15 and abs(v.std() - 2.0) < 0.15, (v.mean(), v.std())

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
