"""The eager fast path: a small flush runs op by op without the planner (burn.graph.run_small_flush).

Every program here runs twice, through the direct path and through the planner (forced by
``SMALL_FLUSH_NODES = 0``), and must give the same bits, dtypes and shapes, and numpy's values;
the cases the direct path leaves to the planner (half precision, large arrays, data-dependent
errors, failed inputs) are checked to take the planner and still give its results.
"""
import numpy as np
import pytest

import burn
from burn.fusion import plan_cache_info
from burn.graph import graph_for

F32 = np.float32


def _flush():
    graph_for(burn.Device.flex()).flush()


def _direct_count():
    return plan_cache_info()["direct"]


def _run(program, arrays, planner):
    """``program``'s results (numpy arrays) on fresh tensors, and whether the direct path ran."""
    old = burn.graph.SMALL_FLUSH_NODES
    if planner:
        burn.graph.SMALL_FLUSH_NODES = 0
    try:
        _flush()
        before = _direct_count()
        outs = program(*[burn.tensor(a) for a in arrays])
        outs = outs if isinstance(outs, tuple) else (outs,)
        got = [o.numpy().copy() for o in outs]
        return got, _direct_count() > before
    finally:
        burn.graph.SMALL_FLUSH_NODES = old


def _rng():
    return np.random.default_rng(18)


def _setitem_through_view(x, y):
    v = x[1:]                 # a view: writing it writes x
    v[0] = y[0] * 2.0
    v += 1.0
    return x, v


PROGRAMS = {
    # name: (program, numpy reference, input arrays)
    "probe": (lambda a: (a * 2.0 + 1.0).exp().sum(),
              lambda a: np.exp(a * F32(2) + F32(1)).sum(dtype=F32),
              lambda r: [r.standard_normal((7, 9)).astype(F32) * F32(0.1)]),
    "broadcast": (lambda a, b: ((a + b) * 0.5).tanh(),
                  lambda a, b: np.tanh((a + b) * F32(0.5)),
                  lambda r: [r.standard_normal((5, 1)).astype(F32), r.standard_normal(6).astype(F32)]),
    "promotion": (lambda a, b: (a * b + 1, (a > 0.5).astype(burn.float32).mean()),
                  lambda a, b: (a * b + 1, np.float32((a > 0.5).mean())),
                  lambda r: [r.standard_normal((4, 3)).astype(F32), r.standard_normal((4, 3))]),
    "int_float": (lambda a, b: a + b,                   # burn promotes int32 + float32 to float32
                  lambda a, b: a.astype(F32) + b,
                  lambda r: [r.integers(-5, 5, (6,)).astype(np.int32), r.standard_normal(6).astype(F32)]),
    "reduce_axis": (lambda a: ((a - a.mean(axis=1, keepdims=True)) ** 2).sum(axis=1),
                    lambda a: ((a - a.mean(axis=1, keepdims=True)) ** 2).sum(axis=1),
                    lambda r: [r.standard_normal((3, 11)).astype(F32)]),
    "matmul_bias": (lambda x, w, b: burn.relu(x @ w + b),
                    lambda x, w, b: np.maximum(x @ w + b, 0),
                    lambda r: [r.standard_normal((4, 5)).astype(F32), r.standard_normal((5, 3)).astype(F32),
                               r.standard_normal(3).astype(F32)]),
    "views": (_setitem_through_view,
              lambda x, y: (np.concatenate([x[:1], (y[:1] * F32(2) + F32(1)), x[2:] + F32(1)]),
                            np.concatenate([(y[:1] * F32(2) + F32(1)), x[2:] + F32(1)])),
              lambda r: [r.standard_normal((4, 3)).astype(F32), r.standard_normal((4, 3)).astype(F32)]),
}


@pytest.mark.parametrize("name", list(PROGRAMS))
def test_a_small_flush_runs_directly_and_gives_the_planners_bits(name):
    program, ref, inputs = PROGRAMS[name]
    arrays = inputs(_rng())
    direct, took_direct = _run(program, arrays, planner=False)
    planned, took_planner_direct = _run(program, arrays, planner=True)
    assert took_direct and not took_planner_direct, name
    want = ref(*[a.copy() for a in arrays])
    want = want if isinstance(want, tuple) else (want,)
    for d, p, w in zip(direct, planned, want):
        assert d.dtype == p.dtype and d.shape == p.shape, (name, d.dtype, p.dtype, d.shape, p.shape)
        np.testing.assert_array_equal(d, p, err_msg=name)
        w = np.asarray(w)
        assert d.dtype == w.dtype, (name, d.dtype, w.dtype)
        np.testing.assert_allclose(d, w, rtol=1e-5, atol=1e-6, err_msg=name)


def test_half_precision_and_large_arrays_are_left_to_the_planner():
    r = _rng()
    cases = [(lambda a: (a * 2.0 + 1.0).exp(), [r.standard_normal(10).astype(np.float16)]),
             (lambda a: (a.astype(burn.bfloat16) * 2.0).astype(burn.float32), [r.standard_normal(10).astype(F32)]),
             (lambda a: (a * 2.0).exp(), [r.standard_normal(burn.graph.SMALL_FLUSH_ELEMENTS + 1).astype(F32)])]
    for program, arrays in cases:
        direct, took_direct = _run(program, arrays, planner=False)
        planned, _ = _run(program, arrays, planner=True)
        assert not took_direct
        np.testing.assert_array_equal(direct[0], planned[0])


def test_a_data_dependent_error_fails_only_its_dependents():
    x = burn.arange(12, dtype=burn.float32).reshape((3, 4))
    _flush()
    before = _direct_count()
    bad = burn.take(x, burn.tensor([0, 7]), axis=1) * 2.0        # index 7 of an axis of 4
    good = (x + 1.0).sum()
    assert good.item() == float(np.arange(12).sum() + 12)        # computed, in the same flush
    with pytest.raises(burn.IndexOutOfRange, match="take"):
        bad.numpy()
    assert _direct_count() == before           # the planner ran it (it defers the error per value)


def test_a_value_whose_computation_failed_is_not_read_directly():
    x = burn.arange(4, dtype=burn.float32)
    bad = burn.take(x, burn.tensor([9]))
    with pytest.raises(burn.IndexOutOfRange):
        bad.numpy()
    y = bad + 1.0                      # reads the failed value: the error again, at this read
    with pytest.raises(burn.IndexOutOfRange):
        y.numpy()
    assert (x * 2.0).tolist() == [0.0, 2.0, 4.0, 6.0]


def test_values_nobody_holds_are_not_computed():
    calls = []

    @burn.backend_extension("test_small_flush::counted")
    def counted(x):
        return x

    @counted.meta
    def _(x):
        return burn.TensorMeta(x.shape, x.dtype)

    @counted.kernel("flex")
    def _(x):
        calls.append(1)
        return x + np.float32(1)

    x = burn.ones((3,))
    _flush()
    before = _direct_count()
    counted(x)                                  # dropped at once: a dead node
    kept = counted(x * 2.0)
    assert kept.tolist() == [3.0, 3.0, 3.0]
    assert _direct_count() == before + 1 and len(calls) == 1


def test_errors_of_bad_input_are_raised_at_the_call():
    a, b = burn.ones((3, 4)), burn.ones((5,))
    with pytest.raises(burn.ShapeError, match="add"):
        a + b
    assert (a * 3.0).sum().item() == 36.0
