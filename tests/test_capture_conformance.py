"""Captured vs eager for every conformance program: each case's function is traced, then
replayed on fresh input values and compared with an eager call on those values (forward
results, and the gradients of a weighted sum of them). Ops whose output shape depends on
the data cannot be one graph: their cases must raise burn.CaptureError at the trace."""
import os
import re
import tempfile

import numpy as np
import pytest

import burn
from burn.testing import conformance
from burn.testing.conformance import _call, _make, _seed

from devices import wgpu_or_skip

# ops whose result shape (or a Python value they compute) depends on the data
DATA_DEPENDENT = {"nonzero", "unique_values", "unique_counts", "unique_inverse", "unique_all", "argwhere",
                  "flatnonzero", "allclose", "array_equal"}
DATA_DEPENDENT_CASES = ("getitem[x[mask]", "getitem[x[row-mask]", "setitem[mask")


def _outs(out):
    return [o for o in (out if isinstance(out, (tuple, list)) else (out,))]


_TMP = tempfile.mkdtemp(prefix="burn-capture-")


def _np(t):
    return np.asarray(t.numpy()) if isinstance(t, burn.Tensor) else t


def _same(a, b, label):
    a, b = _np(a), _np(b)
    if isinstance(a, np.ndarray) and a.dtype.name == "bfloat16":
        a, b = a.astype(np.float32), b.astype(np.float32)
    if isinstance(a, np.ndarray) and a.dtype.kind in "fc":
        np.testing.assert_array_equal(a, b, err_msg=label)      # same kernels: bit-identical, nan included
    else:
        assert np.array_equal(a, b), label


def _fresh(case, device, salt):
    rng = np.random.default_rng(_seed(case) + salt)
    return _make(case, device, rng)[0]


# programs that read a value themselves (numpy(), DLPack), or seed a device, inside
READS_VALUES = ("laziness[inputs-untouched", "dtype-support:", "rand[seeded]")


# ...except the dtype-support paths that make no tensor on flex (so read none)
READS_NOTHING_ON_FLEX = ("dtype-support:to_device", "dtype-support:from_dlpack[copy][bfloat16]",
                         "dtype-support:from_dlpack[producer][bfloat16]")


# DLPack exchanges with another library hand memory across: a trace refuses them, saying so
# (from_dlpack of a burn tensor is an ordinary program: its value is shared, as eager does)
FOREIGN_DLPACK = {"from_dlpack[tensor-round-trip": None,
                  "from_dlpack[": r"from_dlpack\(ndarray\) inside a traced function imports memory",
                  "dtype-support:from_dlpack[copy]": r"from_dlpack\(ndarray\) inside a traced function imports",
                  "dtype-support:from_dlpack[producer]": r"from_dlpack\(_Producer\) inside a traced function",
                  "dlpack:export": r"a DLPack export \(t.__dlpack",
                  "dlpack:import[burn-tensor]": r"t.tolist\(\) reads",     # the rule reads the values it checks
                  "dlpack:import": r"from_dlpack\(ndarray\) inside a traced function imports memory"}


def _dlpack_error(case):
    """The CaptureError message pattern a DLPack case's trace raises (None: it traces)."""
    if case.name.startswith(READS_NOTHING_ON_FLEX):
        return None
    for prefix, pattern in FOREIGN_DLPACK.items():
        if case.name.startswith(prefix):
            return pattern
    return None


def _expects_capture_error(case):
    if case.name.startswith(READS_NOTHING_ON_FLEX):
        return False
    return (case.op in DATA_DEPENDENT or case.name.startswith(DATA_DEPENDENT_CASES + READS_VALUES)
            or _dlpack_error(case) is not None)


def _check_forward(case, device):
    ts = _fresh(case, device, 0)
    fn = lambda *xs: _call(case, list(xs), device)      # noqa: E731
    if _expects_capture_error(case):
        with pytest.raises(burn.CaptureError, match=_dlpack_error(case)):
            burn.capture.trace(fn, *ts)
        return
    g = burn.capture.trace(fn, *ts)
    # two copies of the same new values (a program may update its arguments in place), and
    # the same random stream: a replay draws what the eager call draws after the same seed
    device.seed(7)
    got = _outs(g(*_fresh(case, device, 1)))
    device.seed(7)
    want = _outs(fn(*_fresh(case, device, 1)))
    assert len(got) == len(want)
    for i, (a, b) in enumerate(zip(got, want)):
        _same(a, b, f"{case.name} output {i}")
    # the same program saved and loaded (every op's attributes through the file format)
    path = os.path.join(_TMP, "g.burngraph")
    g.save(path)
    device.seed(7)
    loaded = _outs(burn.Graph.load(path, device=device)(*_fresh(case, device, 1)))
    for i, (a, b) in enumerate(zip(loaded, want)):
        _same(a, b, f"{case.name} output {i} (saved and loaded)")


def _check_grad(case, device):
    dev = device.autodiff()
    free = [i for i, a in enumerate(case.args) if a.is_float and not a.const]

    def fn(*xs):
        leaves = [xs[i] for i in free]
        outs = _outs(_call(case, list(xs), dev))
        loss = None
        for k, o in enumerate(outs):
            if isinstance(o, burn.Tensor) and o.dtype.is_floating:
                w = burn.arange(o.size, dtype=o.dtype, device=dev).reshape(o.shape) * 0.01 + (k + 1)
                term = (o * w).sum()
                loss = term if loss is None else loss + term
        grads = loss.backward()
        return tuple(x.grad(grads) for x in leaves)

    def leaves(salt):
        ts = _fresh(case, device, salt)
        return [t.to_device(dev).require_grad() if i in free else t.to_device(dev) for i, t in enumerate(ts)]

    if _expects_capture_error(case):
        with pytest.raises(burn.CaptureError):
            burn.capture.trace(fn, *leaves(0))
        return
    g = burn.capture.trace(fn, *leaves(0))
    device.seed(7)
    got = g(*leaves(1))
    device.seed(7)
    for i, (a, b) in enumerate(zip(got, fn(*leaves(1)))):
        assert (a is None) == (b is None), f"{case.name} grad {i}"
        if a is not None:
            _same(a, b, f"{case.name} grad {i}")


def _check_error(case, device):
    ts = _fresh(case, device, 0)
    cls = getattr(burn, case.error)
    with pytest.raises((cls, burn.CaptureError)):
        burn.capture.trace(lambda *xs: _outs(_call(case, list(xs), device)), *ts)


def check_case(case, device):
    with np.errstate(all="ignore"):
        {"forward": _check_forward, "grad": _check_grad, "error": _check_error}[case.check](case, device)


# every program and every gradient case; forward cases in the narrow dtypes only with
# BURN_CAPTURE_ALL_DTYPES=1 (capture does not depend on the dtype: it keeps these tests quick)
_NARROW = ("float16", "bfloat16", "int8", "uint8", "int32", "complex64")
CASES = [c for c in conformance.cases()
         if os.environ.get("BURN_CAPTURE_ALL_DTYPES") or c.check != "forward"
         or not re.search(r"[\[,:](%s)\]" % "|".join(_NARROW), c.name)]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_captured_program_equals_eager_flex(case):
    check_case(case, burn.Device.flex())


WGPU_CASES = [c for c in CASES if (c.check == "forward" and "float32" in c.name or c.check == "grad")
              and not c.name.startswith(("dtype-support:", "laziness["))][::40]


@pytest.mark.parametrize("case", WGPU_CASES, ids=[c.name for c in WGPU_CASES])
def test_captured_program_equals_eager_wgpu(case):
    dev = wgpu_or_skip()
    try:
        with np.errstate(all="ignore"):
            conformance.run_case(case, dev)
    except Exception as e:      # the eager case fails on this OpenCL too: nothing to compare with
        pytest.skip(f"the eager case fails on this wgpu device as well: {type(e).__name__}: {e}")
    check_case(case, dev)
