"""Errors are raised at the user's call (before any flush of the lazy graph), as
BurnError subclasses whose message names the op, the operands and the fix."""
import sys
import traceback

import numpy as np
import pytest

import burn
import burn.nn.functional as F
from burn.graph import graph_for

DEV = burn.Device.flex()
AD = DEV.autodiff()


def _x(*shape, dtype=burn.float32, device=DEV):
    return burn.ones(shape, dtype=dtype, device=device)


# (id, error class, text the message must contain, the failing call)
CALLS = [
    ("add", burn.ShapeError, ["add:", "shape=(2, 3)", "shape=(4,)", "cannot be broadcast"],
     lambda: _x(2, 3) + _x(4)),
    ("matmul", burn.ShapeError, ["matmul:", "inner dimensions", "(3 != 4)"], lambda: _x(2, 3) @ _x(4, 5)),
    ("reshape", burn.ShapeError, ["reshape:", "6 elements", "(4, 2)"], lambda: _x(2, 3).reshape((4, 2))),
    ("concat", burn.ShapeError, ["concat:", "outside axis 0"], lambda: burn.concat([_x(2, 3), _x(2, 2)])),
    ("where", burn.DTypeError, ["where:", "must be bool", "float32"], lambda: burn.where(_x(2), _x(2), _x(2))),
    ("bool-add", burn.DTypeError, ["add:", "bool", ".astype()"],
     lambda: _x(2, dtype=burn.bool) + _x(2, dtype=burn.bool)),
    ("take_along_axis", burn.ShapeError, ["take_along_axis:", "dimensions"],
     lambda: burn.take_along_axis(_x(2, 3), burn.tensor([0, 1]), axis=1)),
    ("sum-axis", burn.ShapeError, ["sum:", "axis 2 is out of range"], lambda: _x(2, 3).sum(axis=2)),
    ("getitem", burn.ShapeError, ["getitem:", "out of bounds", "shape=(2, 3)"], lambda: _x(2, 3)[2]),
    ("linear_relu", burn.ShapeError, ["linear_relu:", "weight [d_in, d_out]"],
     lambda: F.linear_relu(_x(2, 3), _x(4, 5), _x(5))),
    ("cross_entropy", burn.ShapeError, ["cross_entropy:", "probability targets"],
     lambda: F.cross_entropy(_x(3, 5), _x(3))),
    ("autodiff-mix", burn.DeviceMismatch, ["mul:", "device=flex:0+autodiff", "autodiff device and one is not",
                                            ".detach()"],
     lambda: _x(2) * _x(2, device=AD)),
    ("require_grad", burn.AutodiffError, ["require_grad:", "device.autodiff()"], lambda: _x(2).require_grad()),
]


@pytest.mark.parametrize("name,cls,texts,call", CALLS, ids=[c[0] for c in CALLS])
def test_error_is_raised_at_the_call_before_any_flush(name, cls, texts, call):
    g = graph_for(DEV)
    DEV.sync()
    before = (g.flushes, len(g.pending))
    with pytest.raises(cls) as info:
        call()
    assert isinstance(info.value, burn.BurnError)
    for t in texts:
        assert t in str(info.value), f"{t!r} not in: {info.value}"
    assert g.flushes == before[0], "the error was raised after running pending work"
    # only the operands' creation may be pending: the failing op itself was never recorded
    assert len(g.pending) <= before[1] + 3, "work was recorded before the check failed"


def _raising_line(fn):
    """The line of this file, in the traceback of ``fn()``'s error, deepest first."""
    try:
        fn()
    except burn.BurnError:
        tb = traceback.extract_tb(sys.exc_info()[2])
        return [f.lineno for f in tb if f.filename == __file__]
    raise AssertionError("no error")


def test_traceback_points_at_the_user_line_and_the_op_is_the_next_frame():
    a, b = _x(2, 3), _x(3, 2)

    def user_code():
        c = a @ b           # fine
        d = c + a           # the broadcasting error: this line must be the last user frame
        return d
    lines = _raising_line(user_code)
    want = user_code.__code__.co_firstlineno + 2
    assert lines[-1] == want
    # the error is raised eagerly: no value of c was needed
    assert "add:" in _message(user_code)


def _message(fn):
    try:
        fn()
    except burn.BurnError as e:
        return str(e)


def test_errors_are_also_standard_python_exceptions():
    with pytest.raises(ValueError):
        _x(2) + _x(3)
    with pytest.raises(TypeError):
        burn.where(_x(2), _x(2), _x(2))


def test_an_error_does_not_poison_pending_work():
    a = burn.tensor([1.0, 2.0]) * 3    # pending
    with pytest.raises(burn.ShapeError):
        a + _x(3)
    assert (a + 1).tolist() == [4.0, 7.0]


def test_unavailable_backend_names_the_package_to_install():
    import importlib.util
    if importlib.util.find_spec("burn_wgpu") is not None:
        pytest.skip("burn-wgpu is installed here")
    d = burn.Device.wgpu()
    with pytest.raises(burn.BackendUnavailable, match="burn-wgpu"):
        burn.zeros((2,), device=d)


def test_unknown_dtype_lists_the_valid_ones():
    with pytest.raises(burn.DTypeError, match="float32"):
        burn.zeros((2,), dtype="float128")
    with pytest.raises(burn.DTypeError, match="timedelta64"):
        burn.as_dtype(np.timedelta64)
    assert burn.as_dtype(np.int16) is burn.int16


def _exploding_op(name, message):
    """An extension op whose flex kernel raises ValueError(message) when its flush runs it."""
    @burn.backend_extension(name)
    def explode(x):
        return x * 1

    @explode.meta
    def _(x):
        return burn.TensorMeta(x.shape, x.dtype)

    @explode.kernel("flex")
    def _(x):
        raise ValueError(message)
    return explode


def test_a_kernel_failure_surfaces_at_read_and_other_pending_values_say_why_they_are_missing():
    explode = _exploding_op("errtest::explode", "kernel blew up")
    x = burn.ones((2,))
    x.numpy()                       # computed before the failure
    y = x * 2                       # pending in the same graph as the failing op
    z = explode(x)
    with pytest.raises(ValueError, match="kernel blew up"):
        z.numpy()
    with pytest.raises(burn.BurnError, match="never computed.*kernel blew up"):
        y.numpy()
    assert (x * 3).tolist() == [3.0, 3.0]      # the device keeps working


@pytest.mark.parametrize("name,call", [
    ("index", lambda x: x[burn.tensor([5, 6])]),
    ("index_put", lambda x: x.__setitem__(burn.tensor([6]), 1.0) or x),
    ("take_along_axis", lambda x: burn.take_along_axis(x, burn.tensor([[9]]), axis=0)),
    ("scatter_add", lambda x: burn.scatter_add(x, burn.tensor([[7, 0, 0, 0]]), burn.ones((1, 4)), axis=0)),
])
def test_out_of_range_index_arrays_are_shape_errors_naming_the_op_on_flex(name, call):
    # the values of an index tensor are known only when it is computed: the error comes at
    # the flush, as the same ShapeError with numpy's message that wgpu and cuda raise
    x = burn.zeros((6, 4))
    with pytest.raises(burn.ShapeError, match=rf"^{name}: index -?\d+ is out of bounds for axis 0 with size 6"):
        call(x).numpy()


def test_a_failed_flush_of_pending_work_does_not_raise_at_an_unrelated_trace():
    """burn.capture flushes every device's pending work before it traces: another value's failing
    kernel must not make the trace raise (it used to, from any later trace in the process: a
    remote device whose connection had closed left pending work that failed every capture); the
    failure stays with the value, raised where it is read."""
    explode = _exploding_op("errtest::explode_later", "pending kernel blew up")
    x = burn.ones((2,))
    x.numpy()
    z = explode(x)                  # pending, fails when flushed
    traced = burn.capture(lambda a: a * 2)
    assert traced(burn.tensor([1.0, 2.0])).tolist() == [2.0, 4.0]
    with pytest.raises(burn.BurnError, match="never computed.*pending kernel blew up"):
        z.numpy()
