"""A convolution's bias and relu folded into flex's direct kernel (burn_flex.conv_epilogue, the
backend's merge_steps): the merged plan gives the unmerged plan's bits in eager flushes, in
training (forward and every gradient) and in burn.capture replays; it is not taken where the
convolution's output (or the add's) is read elsewhere or kept; a later flush with other
attributes of the same shapes (the conv's attributes are not in the plan key) still computes
those attributes; and the group it replaced is never rebound into its place at other sizes."""
import numpy as np
import pytest

import burn
from burn import fusion
from burn_flex.backend import FlexBackend
from burn_flex.kernels import conv as K
from plan_steps import steps_run  # noqa: E402  (tests/ is on sys.path under pytest)

F = burn.nn.functional

pytestmark = pytest.mark.skipif(K._jit_columns(np.dtype(np.float32)) is None,
                                reason="flex's JIT is unavailable: the direct kernel is one of its kernels")


@pytest.fixture(autouse=True)
def planned_flushes(monkeypatch):
    """Every flush through the planner (small ones otherwise run op by op, with no plan steps)."""
    from burn import graph
    monkeypatch.setattr(graph, "SMALL_FLUSH_NODES", 0)


def _both(fn, monkeypatch):
    """``fn()`` with the merge (asserting it ran) and without it: both results."""
    fusion.clear_plan_cache()
    merged, names = steps_run(fn)
    assert any(n.startswith("conv2d_bias") for n in names), names
    with monkeypatch.context() as m:
        m.setattr(FlexBackend, "merge_steps", lambda self, steps, nodes: None)
        fusion.clear_plan_cache()
        plain, names = steps_run(fn)
    assert not any(n.startswith("conv2d_bias") for n in names)
    fusion.clear_plan_cache()
    return merged, plain


def _data(xs, ws, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    x.flat[5] = np.nan
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    b[0] = -0.0
    w[0] = 0.0                      # channel 0: +-0.0 sums plus -0.0, through relu
    return x, w, b


@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("xs, ws, kw", [((4, 3, 9, 9), (20, 3, 3), dict(padding=1)),
                                        ((3, 2, 11, 10), (6, 5, 5), dict(stride=2, dilation=(1, 2)))])
def test_eager_conv_bias_relu_equals_the_unmerged_plan(xs, ws, kw, relu, monkeypatch):
    x, w, b = _data(xs, ws)

    def run():                      # no Python name holds the conv + bias: it is not a result
        if relu:
            return F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), **kw)).numpy()
        return F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), **kw).numpy()
    merged, plain = _both(run, monkeypatch)
    np.testing.assert_array_equal(merged.view(np.int32), plain.view(np.int32))


def test_captured_replay_equals_the_unmerged_plan(monkeypatch):
    x, w, b = _data((6, 4, 7, 7), (12, 3, 3), seed=2)

    def run():
        g = burn.capture.trace(lambda t: F.relu(F.conv2d(t, burn.tensor(w), burn.tensor(b), padding=1)),
                               burn.tensor(x))
        outs = [g(burn.tensor(x * s)).numpy() for s in (1.0, -2.0)]
        return outs, [type(st[0]).__name__ for st in g._prepared["flex"].plan.steps]
    fusion.clear_plan_cache()
    merged, steps = run()
    assert "_ConvBiasRelu" in steps
    monkeypatch.setattr(FlexBackend, "merge_steps", lambda self, steps, nodes: None)
    fusion.clear_plan_cache()
    plain, steps = run()
    assert "_ConvBiasRelu" not in steps
    fusion.clear_plan_cache()
    for a, c in zip(merged, plain):
        np.testing.assert_array_equal(a.view(np.int32), c.view(np.int32))


def test_not_merged_where_the_conv_output_is_kept_or_read_elsewhere():
    x, w, b = _data((2, 3, 6, 6), (8, 3, 3), seed=3)
    fusion.clear_plan_cache()

    def kept():
        c = F.conv2d(burn.tensor(x), burn.tensor(w), padding=1)
        y = F.relu(c + burn.tensor(b).reshape((1, 8, 1, 1)))
        return y.numpy(), c.numpy()                  # the conv's own output is kept: a result

    def read_twice():
        c = F.conv2d(burn.tensor(x), burn.tensor(w), padding=1)
        y = F.relu(c + burn.tensor(b).reshape((1, 8, 1, 1)))
        return (y + c * 2.0).numpy()
    def training():                                  # autodiff keeps relu's input (its gradient reads it)
        dev = burn.Device.flex().autodiff()
        wt = burn.tensor(w, device=dev).require_grad()
        y = F.relu(F.conv2d(burn.tensor(x, device=dev), wt, burn.tensor(b, device=dev), padding=1))
        return y.sum().backward(), y.numpy()
    for fn in (kept, read_twice, training):
        _, names = steps_run(fn)
        assert not any(n.startswith("conv2d_bias") for n in names), fn.__name__
    (y, c), _ = steps_run(kept)
    np.testing.assert_array_equal(y, np.maximum(c + b.reshape(1, 8, 1, 1), 0))


def test_same_shapes_other_attributes_share_the_plan_and_compute_their_own():
    """A 3x3 conv with padding 1 and with padding 2, dilation 2 give the same shapes: one plan key (a
    boundary's attributes are not in it), the merged step reads each flush's own attributes."""
    import torch
    x, w, b = _data((2, 3, 9, 9), (8, 3, 3), seed=4)
    x[np.isnan(x)] = 0.0
    fusion.clear_plan_cache()
    before = dict(fusion._STATS)
    outs = {}
    for pad, dil in ((1, 1), (2, 2)):
        y, names = steps_run(lambda: F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), padding=pad,
                                                      dilation=dil)).numpy())
        assert any(n.startswith("conv2d_bias") for n in names)
        want = torch.relu(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding=pad,
                                                     dilation=dil)).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
        outs[pad] = y
    assert outs[1].shape == outs[2].shape and not np.allclose(outs[1], outs[2])
    assert fusion._STATS["hits"] > before["hits"]             # the second flush took the first's plan


def test_the_replaced_group_is_not_rebound_into_the_merged_step_at_other_sizes(monkeypatch):
    """A plan family at another batch size rebinds its compiled groups that do not run at any
    size; the folded group's site has index None, so the merged step stays (forced here by
    making every compiled group size-bound)."""
    from burn_flex import fused
    monkeypatch.setattr(fused._BySize, "any_size", False)
    x, w, b = _data((6, 3, 8, 8), (16, 3, 3), seed=5)
    x[np.isnan(x)] = 0.0
    fusion.clear_plan_cache()
    import torch
    for n in (6, 4):
        y, names = steps_run(lambda: F.relu(F.conv2d(burn.tensor(x[:n]), burn.tensor(w), burn.tensor(b),
                                                      padding=1)).numpy())
        assert any(n_.startswith("conv2d_bias") for n_ in names)
        want = torch.relu(torch.nn.functional.conv2d(torch.tensor(x[:n]), torch.tensor(w), torch.tensor(b),
                                                     padding=1)).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    fusion.clear_plan_cache()


@pytest.mark.parametrize("groups, dtype", [(2, np.float32), (1, np.float64)])
def test_merged_step_falls_back_to_conv_add_relu_where_the_direct_kernel_does_not_apply(groups, dtype):
    """The merged step reads the conv's attributes per run (they are not in the plan key): with
    groups, or another dtype, it runs flex's conv kernel, numpy's add and flex's relu."""
    from burn_flex.conv_epilogue import _ConvBiasRelu
    from burn_flex.kernels.elementwise import _relu
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 6, 6)).astype(dtype)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(dtype)
    b = rng.standard_normal((1, 6, 1, 1)).astype(dtype)
    attrs = dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=groups)
    (got,) = _ConvBiasRelu(True)(x, w, b, **attrs)
    want = _relu(np.add(K.conv2d(x, w, **attrs), b))
    assert got.dtype == dtype
    np.testing.assert_array_equal(got, want)


def test_the_bias_reshape_runs_only_where_the_reshaped_bias_is_read_elsewhere():
    """The merged step reads the bias itself (any shape of O elements) unless the [1, O, 1, 1]
    reshape is kept by a tensor or read by another op; both give the unmerged plan's values."""
    x, w, b = _data((2, 3, 6, 6), (8, 3, 3), seed=7)
    fusion.clear_plan_cache()
    y, names = steps_run(lambda: F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), padding=1)).numpy())
    assert "conv2d_bias_relu" in names and "reshape" not in names, names

    def kept():                      # recorded as F.conv2d does: the conv, then the bias reshape
        y = F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), padding=1) + (rb := burn.tensor(b).reshape((1, 8, 1, 1))))
        return y.numpy(), rb.numpy()
    (y2, rb), names = steps_run(kept)
    assert "conv2d_bias_relu" in names and "reshape" in names, names
    np.testing.assert_array_equal(y2.view(np.int32), y.view(np.int32))
    np.testing.assert_array_equal(rb.reshape(-1), b)
    fusion.clear_plan_cache()
    from burn_flex.conv_epilogue import _ConvBiasRelu           # without the direct kernel (float64)
    attrs = dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1)
    x64, w64, b64 = x.astype(np.float64), w.astype(np.float64), b.astype(np.float64)
    (raw,) = _ConvBiasRelu(True)(x64, w64, b64, **attrs)
    (shaped,) = _ConvBiasRelu(True)(x64, w64, b64.reshape(1, 8, 1, 1), **attrs)
    np.testing.assert_array_equal(raw, shaped)
    assert not np.allclose(raw, _ConvBiasRelu(True)(x64, w64, np.zeros(8), **attrs)[0])
