"""mean / var / std on wgpu: a reduce group that goes on after its reduction (an epilogue,
a second pass over the same input) runs as ONE kernel (burn_wgpu.kernels.reduce.generated), var with
the two-pass algorithm inside the kernel, matching numpy at float32 tolerance on inputs
with a large mean, over any axes, keepdims, strided inputs.

The groups below are the ones core's compositions record (``mean = sum(x) * (1/n)``,
``var = sum((x - mean(x, keepdims))²) * (1/(n - correction))``), handed to the backend's
``compile_group`` as a planner that lets a reduction keep its epilogue and next pass
would (see burn_wgpu.kernels.reduce.generated); the end-to-end tests check burn.mean / burn.var /
burn.std through whatever plan the core planner makes."""
import numpy as np
import pytest

import burn
from burn.fusion import FusedGroup
from burn.primitives import TensorMeta


@pytest.fixture
def dev(monkeypatch):
    try:
        import pyopencl  # noqa: F401
        burn.Device.wgpu().backend
    except Exception as e:
        pytest.skip(f"no usable wgpu device: {e}")
    monkeypatch.setenv("BURN_WGPU_FUSE_AFTER", "0")      # fuse small groups on their first call
    return burn.Device.wgpu()


def _launches(dev):
    return dev.backend.stats(dev.index)["launches"]


def _axes(axis, ndim):
    return tuple(range(ndim)) if axis is None else tuple(sorted(a % ndim for a in np.atleast_1d(axis)))


def _reduced(shape, axes, keep):
    return tuple(1 if d in axes else s for d, s in enumerate(shape)) if keep else \
        tuple(s for d, s in enumerate(shape) if d not in axes)


def _meta(shape, dtype="float32"):
    return TensorMeta(tuple(shape), burn.as_dtype(dtype))


def mean_group(shape, axis, keepdims, dtype="float32"):
    axes = _axes(axis, len(shape))
    ops = [("sum", {"axis": axes, "keepdims": keepdims}, [("in", 0)]), ("mul", {}, [("op", 0), ("in", 1)])]
    n = int(np.prod([shape[d] for d in axes]))
    out = _reduced(shape, axes, keepdims)
    return FusedGroup("reduce", ops, [_meta(shape, dtype), _meta((), dtype)], [1], [_meta(out, dtype)]), [1.0 / n]


def var_group(shape, axis, keepdims, correction=0.0, sqrt=False, dtype="float32"):
    """What core's var records: mean(x, keepdims=True), then sum((x - mean)²) * 1/(n - c)."""
    axes = _axes(axis, len(shape))
    n = int(np.prod([shape[d] for d in axes]))
    ops = [("sum", {"axis": axes, "keepdims": True}, [("in", 0)]), ("mul", {}, [("op", 0), ("in", 1)]),
           ("sub", {}, [("in", 0), ("op", 1)]), ("mul", {}, [("op", 2), ("op", 2)]),
           ("sum", {"axis": axes, "keepdims": keepdims}, [("op", 3)]), ("mul", {}, [("op", 4), ("in", 2)])]
    if sqrt:
        ops.append(("sqrt", {}, [("op", 5)]))
    out = _reduced(shape, axes, keepdims)
    g = FusedGroup("reduce", ops, [_meta(shape, dtype), _meta((), dtype), _meta((), dtype)], [len(ops) - 1],
                   [_meta(out, dtype)])
    return g, [1.0 / n, 1.0 / (n - correction) if n - correction > 0 else float("nan")]


def run_group(dev, group, x_np, scalars, view=None):
    """Compile ``group`` on wgpu and run it on ``x_np`` (through ``view`` if given) and scalars."""
    be = dev.backend
    dt = burn.as_dtype(x_np.dtype.name)
    x = be.from_numpy(x_np, dt, dev.index)
    if view is not None:
        x = view(x)
    ins = [x] + [be.from_numpy(np.array(s, x_np.dtype), dt, dev.index) for s in scalars]
    fn = be.compile_group(group)
    assert type(fn).__name__ == "FusedMultiReduce"
    be.sync(dev.index)
    before = _launches(dev)
    outs = fn(*ins)
    be.sync(dev.index)
    return [be.to_numpy(o, dev.index) for o in outs], _launches(dev) - before


@pytest.mark.parametrize("shape,axis,keepdims", [((64, 300), 1, False), ((64, 300), 0, True), ((5, 40, 7), (0, 2), False),
                                                 ((5, 40, 7), None, True), ((3, 1, 500), -1, False)])
def test_mean_is_one_launch_and_matches_numpy(dev, shape, axis, keepdims):
    a = (1e4 + np.random.default_rng(1).standard_normal(shape)).astype(np.float32)
    g, sc = mean_group(shape, axis, keepdims)
    (got,), n = run_group(dev, g, a, sc)
    assert n == 1
    want = a.astype(np.float64).mean(axis=axis, keepdims=keepdims)
    assert got.shape == want.shape and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=2e-7 * 4)


@pytest.mark.filterwarnings("ignore:Degrees of freedom")
@pytest.mark.parametrize("shape,axis,keepdims,correction", [
    ((32, 20000), 1, False, 0.0), ((32, 20000), 1, True, 1.0), ((400, 50), 0, False, 1.0),
    ((6, 300, 9), (0, 2), True, 0.0), ((6, 300, 9), None, False, 1.0), ((2, 3), 1, False, 3.0)])
def test_var_is_one_two_pass_launch_and_sound_with_a_large_mean(dev, shape, axis, keepdims, correction):
    a = (1e4 + np.random.default_rng(2).standard_normal(shape)).astype(np.float32)
    g, sc = var_group(shape, axis, keepdims, correction)
    (got,), n = run_group(dev, g, a, sc)
    assert n == 1
    with np.errstate(divide="ignore", invalid="ignore"):
        want = a.astype(np.float64).var(axis=axis, keepdims=keepdims, ddof=correction)
    if correction >= np.prod(np.shape(a)) / want.size:      # core: NaN where numpy divides by <= 0
        want = np.full_like(want, np.nan)
    assert got.shape == want.shape
    # E[x²] - E[x]² in float32 would be off by ~100% here (1e8 against 1): this is two-pass
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("dtype,rtol", [("float32", 2e-4), ("float64", 1e-10)])
def test_std_and_var_of_strided_views(dev, dtype, rtol):
    from burn_wgpu.kernels.movement import permute, slice_
    a = (1e4 + np.random.default_rng(3).standard_normal((300, 40))).astype(dtype)
    # a transposed view of a column slice: strides (1, 40), offset 5
    view = lambda x: permute(slice_(x, starts=[0, 5], stops=[300, 37], steps=[1, 1]), axes=(1, 0))  # noqa: E731
    ref = a[:, 5:37].T.astype(np.float64)
    for axis, keepdims in ((1, False), (0, True), (None, False)):
        g, sc = var_group(ref.shape, axis, keepdims, 1.0, sqrt=True, dtype=dtype)
        (got,), n = run_group(dev, g, a, sc, view)
        assert n == 1 and got.dtype == np.dtype(dtype)
        np.testing.assert_allclose(got, ref.std(axis=axis, keepdims=keepdims, ddof=1), rtol=rtol)


def test_reduce_epilogue_reads_a_per_row_input(dev):
    """sum(exp(x * 0.01), axis=1) + b: prologue, reduction and a per-row bias in one launch."""
    rng = np.random.default_rng(4)
    a = rng.standard_normal((70, 90)).astype(np.float32)
    b = rng.standard_normal(70).astype(np.float32)
    ops = [("mul", {}, [("in", 0), ("in", 1)]), ("exp", {}, [("op", 0)]),
           ("sum", {"axis": (1,), "keepdims": False}, [("op", 1)]), ("add", {}, [("op", 2), ("in", 2)])]
    g = FusedGroup("reduce", ops, [_meta((70, 90)), _meta(()), _meta((70,))], [3], [_meta((70,))])
    be = dev.backend
    ins = [be.from_numpy(v, burn.float32, dev.index) for v in (a, np.float32(0.01), b)]
    fn = be.compile_group(g)
    be.sync(dev.index)
    before = _launches(dev)
    (out,) = fn(*ins)
    got = be.to_numpy(out, dev.index)
    assert _launches(dev) - before == 1
    np.testing.assert_allclose(got, np.exp(a * np.float32(0.01)).sum(axis=1) + b, rtol=1e-5)


def test_three_pass_softmax_composition_writes_its_full_shape_output(dev):
    """max, then exp(x - max) summed, then exp(x - max) / sum: three walks, one launch; the
    trailing pass writes the full-shape result (a loop-level output)."""
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((33, 257)) * 10).astype(np.float32)
    ops = [("max", {"axis": (1,), "keepdims": True}, [("in", 0)]), ("sub", {}, [("in", 0), ("op", 0)]),
           ("exp", {}, [("op", 1)]), ("sum", {"axis": (1,), "keepdims": True}, [("op", 2)]),
           ("div", {}, [("op", 2), ("op", 3)])]
    g = FusedGroup("reduce", ops, [_meta(a.shape)], [0, 4], [_meta((33, 1)), _meta(a.shape)])
    (mx, sm), n = run_group(dev, g, a, [])
    assert n == 1
    np.testing.assert_array_equal(mx, a.max(axis=1, keepdims=True))
    e = np.exp(a.astype(np.float64) - a.max(axis=1, keepdims=True))
    np.testing.assert_allclose(sm, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-8)


def test_a_group_the_kernel_cannot_take_runs_segmented_with_the_same_result(dev):
    """A second reduction over other axes is not a second pass: the segmented path runs it
    (one kernel per run of ops), with the same values."""
    a = np.random.default_rng(6).standard_normal((40, 50)).astype(np.float32)
    ops = [("sum", {"axis": (1,), "keepdims": True}, [("in", 0)]), ("sub", {}, [("in", 0), ("op", 0)]),
           ("sum", {"axis": (0,), "keepdims": False}, [("op", 1)])]
    g = FusedGroup("reduce", ops, [_meta(a.shape)], [2], [_meta((50,))])
    be = dev.backend
    fn = be.compile_group(g)
    be.sync(dev.index)
    before = _launches(dev)
    (out,) = fn(be.from_numpy(a, burn.float32, dev.index))
    got = be.to_numpy(out, dev.index)
    assert _launches(dev) - before > 1
    np.testing.assert_allclose(got, (a - a.sum(axis=1, keepdims=True)).sum(axis=0), rtol=1e-4, atol=1e-3)


# -- end to end, through core's ops and planner -------------------------------------------------

@pytest.mark.parametrize("axis,keepdims,correction", [(1, False, 0.0), (0, True, 1.0), ((0, 2), False, 1.0),
                                                      (None, True, 0.0)])
def test_burn_mean_var_std_on_wgpu_match_numpy_with_a_large_mean(dev, axis, keepdims, correction):
    a = (1e4 + np.random.default_rng(7).standard_normal((12, 3000, 5))).astype(np.float32)
    x = burn.tensor(a, device=dev)
    ref = a.astype(np.float64)
    for _ in range(2):          # the second call runs the fused plan
        m = burn.mean(x, axis=axis, keepdims=keepdims).numpy()
        v = burn.var(x, axis=axis, keepdims=keepdims, correction=correction).numpy()
        s = burn.std(x, axis=axis, keepdims=keepdims, correction=correction).numpy()
        np.testing.assert_allclose(m, ref.mean(axis=axis, keepdims=keepdims), rtol=1e-6)
        np.testing.assert_allclose(v, ref.var(axis=axis, keepdims=keepdims, ddof=correction), rtol=2e-4)
        np.testing.assert_allclose(s, ref.std(axis=axis, keepdims=keepdims, ddof=correction), rtol=1e-4)


def test_burn_var_on_wgpu_is_one_launch_when_the_planner_keeps_the_epilogue(dev):
    a = (1e4 + np.random.default_rng(8).standard_normal((64, 4096))).astype(np.float32)
    x = burn.tensor(a, device=dev)
    groups = burn.fusion.explain(burn.var(x, axis=1)).groups
    if len(groups) != 1:
        pytest.skip(f"core's planner splits var into {[(k, ops) for k, ops, _ in groups]}: it does not yet let "
                    "a reduction keep its epilogue and next pass (burn.fusion.plan_groups)")
    assert groups[0][0] == "reduce"
    for _ in range(2):
        dev.sync()
        before = _launches(dev)
        v = burn.var(x, axis=1, correction=1).numpy()
        assert _launches(dev) - before == 1
    np.testing.assert_allclose(v, a.astype(np.float64).var(axis=1, ddof=1), rtol=2e-4)
