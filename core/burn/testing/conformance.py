"""The backend conformance suite: every core op, checked on any device.

A backend package (first- or third-party) proves it implements burn's ops by
running this table on its device: each :class:`Case` builds its inputs on the
device, runs one op, and checks the result against an independent numpy
reference (values, shape and dtype), the gradient against float64 finite
differences (:func:`burn.testing.gradcheck`), or that a misuse raises the
right :class:`burn.BurnError` naming the op, at the call. Nothing here
imports a backend: the device is a value the caller passes. The table itself
is built on first use by the case modules of ``burn.testing._cases``.

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

import zlib

import numpy as np

import burn

from . import _cases
from ._table import _BY_NAME, _CASES, ALL_DTYPES, COMPLEX, FLOATS, INTS, NUMERIC, Arg, Case  # noqa: F401
from .gradcheck import gradcheck

__all__ = ["Arg", "Case", "cases", "get_case", "run_case", "register_cases", "FLOATS", "INTS", "NUMERIC", "ALL_DTYPES", "COMPLEX"]

# (rtol, atol) per expected floating dtype; a case may scale them with ``tol``.
_TOL = {"float16": (4e-3, 4e-3), "bfloat16": (2.5e-2, 2.5e-2), "float32": (2e-5, 2e-6),
        "float64": (1e-10, 1e-12), "complex64": (2e-5, 2e-6), "complex128": (1e-10, 1e-12)}


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
        _cases.build_all()
    except BaseException:
        _CASES.clear()
        _BY_NAME.clear()
        raise
