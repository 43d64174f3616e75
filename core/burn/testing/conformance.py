"""The backend conformance suite: every core op, checked on any device.

A backend package (first- or third-party) proves it implements burn's ops by
running this table on its device: each :class:`Case` builds its inputs on the
device, runs one op, and checks the result against an independent numpy
reference (values, shape and dtype), the gradient against float64 finite
differences (:func:`burn.testing.gradcheck`), or that a misuse raises the
right :class:`burn.BurnError` naming the op, at the call. Nothing here
imports a backend: the device is a value the caller passes. The table itself
is built lazily by ``burn.testing._conformance_cases``.

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
from dataclasses import dataclass
from typing import Callable

import numpy as np

import burn

__all__ = ["Arg", "Case", "cases", "get_case", "run_case", "register_cases", "FLOATS", "INTS", "NUMERIC", "ALL_DTYPES", "COMPLEX"]

FLOATS = ("float16", "bfloat16", "float32", "float64")
INTS = ("int8", "int32", "int64", "uint8")
NUMERIC = FLOATS + INTS
ALL_DTYPES = NUMERIC + ("bool",)
COMPLEX = ("complex64", "complex128")

# (rtol, atol) per expected floating dtype; a case may scale them with ``tol``.
_TOL = {"float16": (4e-3, 4e-3), "bfloat16": (2.5e-2, 2.5e-2), "float32": (2e-5, 2e-6),
        "float64": (1e-10, 1e-12), "complex64": (2e-5, 2e-6), "complex128": (1e-10, 1e-12)}


@dataclass(frozen=True)
class Arg:
    """How one tensor input is generated.

    ``kind`` picks the values: ``real`` (uniform in [low, high]), ``nonzero``
    (|x| in [0.25, high], random sign; positive if low >= 0), ``distinct`` (no
    ties, for max/argmax), ``index`` (integers in [low, high)), ``bool``,
    ``special`` (nan, +-inf, +-0 and ordinary values), ``halves`` (k + 0.5),
    ``sparse`` (rows with none, one, several zeros).
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
        """True for a real floating dtype.

        Example:
            >>> assert Arg((2,), "float64").is_float and not Arg((2,), "int32").is_float
        """
        return self.dtype in FLOATS

    def values(self, rng) -> np.ndarray:
        """float64 / int64 / bool values in this argument's domain (before the cast to ``dtype``).

        Args:
            rng: a ``numpy.random.Generator``; the same seed gives the same values.

        Example:
            >>> import numpy as np
            >>> v = Arg((4,), "float32", 0.0, 1.0).values(np.random.default_rng(0))
            >>> assert v.dtype == np.float64 and ((0.0 <= v) & (v <= 1.0)).all()
        """
        shape, n = self.shape, int(np.prod(self.shape, dtype=np.int64))
        lo, hi = self.low, self.high
        if self.dtype == "uint8":
            lo = max(lo, 0)
        if self.dtype in COMPLEX:
            return rng.uniform(lo, hi, size=shape) + 1j * rng.uniform(lo, hi, size=shape)
        if self.dtype == "bool" or self.kind == "bool":
            return rng.random(shape) < 0.5
        if self.kind == "index":
            return rng.integers(int(lo), int(hi), size=shape).astype(np.int64)
        if self.kind == "special":
            pool = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.25, 3.0])
            return np.resize(pool, n).reshape(shape)
        if self.kind == "sparse":   # row r of the last axis holds r zeros (mod its length + 1)
            v = rng.uniform(lo, hi, size=shape).reshape(-1, shape[-1])
            for r, row in enumerate(v):
                row[rng.permutation(shape[-1])[:r % (shape[-1] + 1)]] = 0.0
            return v.reshape(shape)
        if self.kind == "halves":
            return (rng.integers(-4, 4, size=shape) + 0.5).astype(np.float64)
        if self.kind == "distinct":
            v = np.linspace(lo, hi, max(n, 2))[:n]
            return rng.permutation(v).reshape(shape) if self.dtype in FLOATS else \
                rng.permutation(np.arange(n) + int(lo)).reshape(shape)
        if self.dtype in FLOATS:
            if self.kind == "nonzero":
                mag = rng.uniform(0.25, max(abs(hi), abs(lo)), size=shape)
                return mag if lo >= 0 else mag * rng.choice([-1.0, 1.0], size=shape)
            return rng.uniform(lo, hi, size=shape)
        if self.kind == "nonzero":
            mag = rng.integers(1, int(max(abs(hi), abs(lo))) + 1, size=shape)
            return mag if lo >= 0 else mag * rng.choice([-1, 1], size=shape)
        return rng.integers(int(math.ceil(lo)), int(math.floor(hi)) + 1, size=shape)




@dataclass(frozen=True)
class Case:
    """One conformance check.

    ``fn(*tensors)`` runs the op (``fn(*tensors, device=dev)`` when
    ``needs_device``); ``ref(*arrays)`` is the numpy reference on the same
    inputs (floats given as float64, integers and bools in their own dtype);
    ``out`` is the expected burn dtype name or a rule ``[dtype names] -> name``
    (default: the promoted dtype of the inputs); ``prop(values)`` replaces
    ``ref`` for random ops. ``check`` is ``forward``, ``grad`` (finite
    differences in float64) or ``error`` (``error`` class name, ``match``: text
    or texts the message must contain); ``differentiable`` says whether the op
    has a gradient check.

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
    differentiable: bool = False

    @property
    def dtypes(self) -> frozenset:
        """Names of the dtypes the case needs (inputs, a fixed output, float64 for a
        gradient check), so a backend without e.g. float64 can skip what it lacks.

        Example:
            >>> case = Case("doc_add", "add", "value", lambda a, b: a + b,
            ...             (Arg((2,), "float32"), Arg((2,), "int32")))
            >>> assert case.dtypes == {"float32", "int32"}
        """
        ds = {a.dtype for a in self.args}
        if isinstance(self.out, str):
            ds.add(self.out)
        if self.check == "grad":
            ds.add("float64")
        return frozenset(ds)

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
    # cases reach inf/nan on purpose (log of 0 in logsumexp of a -inf row): the
    # values are checked, a numpy-based backend's floating-point warnings are noise
    with np.errstate(all="ignore"):
        runner(case, device)


# -- the table -------------------------------------------------------------------------

_CASES: list = []
_BY_NAME: dict = {}


def _add(name, op, check, fn, args=(), ref=None, **kw):
    if name in _BY_NAME:
        raise ValueError(f"duplicate conformance case {name}")
    kw.setdefault("differentiable", check == "grad")
    c = Case(name=name, op=op, check=check, fn=fn, args=tuple(args), ref=ref, **kw)
    _CASES.append(c)
    _BY_NAME[name] = c
    return c


# cases added by plugins for their own ops (register_cases), after core's table
_EXTRA: list = []


def cases() -> list:
    """Every conformance case, in a stable order: core's table, then the cases plugins
    added with :func:`register_cases`.

    Example:
        >>> names = [c.name for c in cases()]
        >>> assert len(names) == len(set(names)) > 500
    """
    if not _CASES:
        _build()
    return list(_CASES) + list(_EXTRA)


def register_cases(new) -> list:
    """Add a plugin's :class:`Case` objects (its extension ops, checked like core's: forward against
    a numpy reference, gradients against finite differences, errors at the call) to the
    suite, so every backend's conformance run checks them too. Names must be new; adding the
    same Case object again is a no-op. Returns the cases added.

    Example:
        >>> import numpy as np, burn
        >>> c = Case("doc_twice[float32]", "doc::twice", "forward", lambda x: x * 2, (Arg((3,)),),
        ...          lambda x: x * 2)
        >>> assert register_cases([c]) == [c] and get_case("doc_twice[float32]") is c
        >>> run_case(c, burn.Device.flex())
    """
    have = {c.name: c for c in cases()}
    added = []
    for c in new:
        if not isinstance(c, Case):
            raise TypeError(f"register_cases: expected burn.testing.conformance.Case objects, got {c!r}")
        if have.get(c.name) is c:
            continue
        if c.name in have:
            raise ValueError(f"register_cases: a conformance case named {c.name!r} exists already; "
                             f"prefix your cases with your op's namespace")
        _EXTRA.append(c)
        have[c.name] = c
        added.append(c)
    return added


def get_case(name: str) -> Case:
    """The case called ``name`` (as in a pytest id).

    Example:
        >>> assert get_case("exp[grad]").check == "grad"
    """
    if not _CASES:
        _build()
    if name in _BY_NAME:
        return _BY_NAME[name]
    for c in _EXTRA:
        if c.name == name:
            return c
    raise KeyError(f"no conformance case named {name!r}")


def _build():
    try:
        from ._conformance_cases import build_all
        build_all()
    except BaseException:
        _CASES.clear()
        _BY_NAME.clear()
        raise
