"""A 2 x 2 / stride 2 max pooling folded into flex's direct convolution with its bias and relu
(direct.ll's direct_conv_pool, burn_flex.conv_epilogue): the kernel gives the bits of the
convolution, add, relu and pooling run one after another (NaN, -0.0, odd sizes, partial channel
tiles, one and two threads); the merged plan equals the unmerged one in eager flushes and capture
replays; it is not taken where the pooled tensor's input is kept or the pooling is another one;
and a pooling with other attributes but the same shapes never reuses the merged plan
(``max_pool2d`` is declared with ``plan_attrs``)."""
import numpy as np
import pytest

import burn
from burn import fusion
from burn_flex.backend import FlexBackend
from burn_flex.kernels import conv as K
from burn_flex.kernels import conv_direct
from plan_steps import steps_run  # noqa: E402  (tests/ is on sys.path under pytest)
from thread_runs import on_one_and_two_threads  # noqa: E402

F = burn.nn.functional
POOL2 = dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1))

pytestmark = pytest.mark.skipif(K._jit_columns(np.dtype(np.float32)) is None,
                                reason="flex's JIT is unavailable: the direct kernel is one of its kernels")


@pytest.fixture(autouse=True)
def planned_flushes(monkeypatch):
    """Every flush through the planner (small ones otherwise run op by op, with no plan steps)."""
    from burn import graph
    monkeypatch.setattr(graph, "SMALL_FLUSH_NODES", 0)


def _data(xs, ws, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(xs).astype(np.float32)
    x.flat[5] = np.nan                                  # NaN windows keep their NaN
    w = rng.standard_normal((ws[0], xs[1]) + ws[1:]).astype(np.float32)
    b = rng.standard_normal(ws[0]).astype(np.float32)
    b[0] = -0.0
    w[0] = 0.0                                          # channel 0: +-0.0 sums plus -0.0, through relu
    return x, w, b


SHAPES = [
    # (N, C, H, W), (O, kH, kW), stride, padding (top, bottom, left, right), dilation
    ((5, 1, 8, 8), (16, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),      # the digits CNN's blocks
    ((4, 16, 4, 4), (32, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1)),
    ((3, 1, 28, 28), (6, 5, 5), (1, 1), (0, 0, 0, 0), (1, 1)),     # LeNet's: 6 of 16 channels
    ((3, 5, 9, 11), (7, 3, 2), (2, 1), (1, 2, 0, 1), (1, 2)),      # odd output sizes: a row and a column dropped
    ((2, 3, 7, 5), (20, 2, 3), (3, 2), (2, 0, 1, 3), (2, 1)),      # 20 channels: a partial 16-channel tile
    ((2, 2, 3, 3), (9, 2, 2), (1, 1), (0, 0, 0, 0), (1, 1)),       # one window per image
    ((2, 2, 1, 6), (4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1)),       # one output row: nothing to pool
]


@pytest.mark.parametrize("xs, ws, stride, padding, dilation", SHAPES)
@pytest.mark.parametrize("relu", [False, True])
def test_pooled_kernel_gives_the_bits_of_conv_add_relu_then_pool(xs, ws, stride, padding, dilation, relu,
                                                                  monkeypatch):
    k = K._jit_columns(np.dtype(np.float32))
    x, w, b = _data(xs, ws)
    out_hw = K._out_hw(xs, ws[1:], stride, padding, dilation)
    want = K.max_pool2d(conv_direct.direct_conv(k, x, w, stride, padding, dilation, out_hw, bias=b, relu=relu),
                        **POOL2)
    monkeypatch.setattr(conv_direct, "_SPLIT_MACS", 0)     # images split over the native pool's threads
    monkeypatch.setattr(conv_direct, "_CHUNK_MACS", 1)
    one, two = on_one_and_two_threads(lambda: conv_direct.direct_conv(k, x, w, stride, padding, dilation, out_hw,
                                                                     bias=b, relu=relu, pool2=True))
    assert one.shape == want.shape == (xs[0], ws[0], out_hw[0] // 2, out_hw[1] // 2)
    np.testing.assert_array_equal(one.view(np.int32), want.view(np.int32))
    np.testing.assert_array_equal(two.view(np.int32), want.view(np.int32))


def _pooled(name):
    """Whether a plan step's name is a merged convolution + pooling step."""
    return name.startswith("conv2d_bias") and "_pool2" in name


def _both(fn, monkeypatch):
    """``fn()`` with the merge (asserting the pooled step ran) and without any merge."""
    fusion.clear_plan_cache()
    merged, names = steps_run(fn)
    assert any(_pooled(n) for n in names), names
    with monkeypatch.context() as m:
        m.setattr(FlexBackend, "merge_steps", lambda self, steps, nodes: None)
        fusion.clear_plan_cache()
        plain, names = steps_run(fn)
    assert not any(_pooled(n) for n in names)
    fusion.clear_plan_cache()
    return merged, plain


@pytest.mark.parametrize("relu", [True, False])
@pytest.mark.parametrize("xs, ws, kw", [((4, 3, 9, 9), (20, 3, 3), dict(padding=1)),
                                        ((3, 1, 12, 12), (6, 5, 5), dict()),
                                        ((3, 2, 13, 15), (6, 3, 5), dict(stride=2, dilation=(1, 2)))])
def test_eager_conv_relu_pool_equals_the_unmerged_plan(xs, ws, kw, relu, monkeypatch):
    x, w, b = _data(xs, ws)

    def run():                      # no Python name holds the conv + bias: it is not a result
        act = F.relu if relu else (lambda t: t)
        return F.max_pool2d(act(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), **kw)), 2).numpy()
    merged, plain = _both(run, monkeypatch)
    np.testing.assert_array_equal(merged.view(np.int32), plain.view(np.int32))


def test_captured_cnn_replay_equals_the_unmerged_plan(monkeypatch):
    x, w1, b1 = _data((6, 1, 8, 8), (16, 3, 3), seed=2)
    _, w2, b2 = _data((6, 16, 4, 4), (32, 3, 3), seed=3)

    def net(t):
        h = F.max_pool2d(F.relu(F.conv2d(t, burn.tensor(w1), burn.tensor(b1), padding=1)), 2)
        return F.max_pool2d(F.relu(F.conv2d(h, burn.tensor(w2), burn.tensor(b2), padding=1)), 2).reshape((6, -1))

    def run():
        g = burn.capture.trace(net, burn.tensor(x))
        outs = [g(burn.tensor(x * s)).numpy() for s in (1.0, -2.0)]
        return outs, [getattr(st[0], "__name__", "") for st in g._prepared["flex"].plan.steps]
    fusion.clear_plan_cache()
    merged, steps = run()
    # the first block writes its pooled result padded for the second, which pads nothing
    assert "conv2d_bias_relu_pool2_padded" in steps and "conv2d_bias_relu_pool2_prepadded" in steps, steps
    assert "max_pool2d" not in steps
    monkeypatch.setattr(FlexBackend, "merge_steps", lambda self, steps, nodes: None)
    fusion.clear_plan_cache()
    plain, _ = run()
    fusion.clear_plan_cache()
    for a, c in zip(merged, plain):
        np.testing.assert_array_equal(a.view(np.int32), c.view(np.int32))


def test_not_pooled_where_the_relu_output_is_kept_or_the_pooling_differs():
    x, w, b = _data((2, 3, 8, 8), (8, 3, 3), seed=4)
    x[np.isnan(x)] = 0.0
    fusion.clear_plan_cache()

    def kept():
        y = F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), padding=1))
        return F.max_pool2d(y, 2).numpy(), y.numpy()      # the pooling's input is a result too

    def other_pool():
        y = F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b), padding=1))
        return F.max_pool2d(y, 3, stride=2, padding=1).numpy()

    def training():                                       # autodiff keeps relu's output for the pooling's gradient
        dev = burn.Device.flex().autodiff()
        wt = burn.tensor(w, device=dev).require_grad()
        y = F.max_pool2d(F.relu(F.conv2d(burn.tensor(x, device=dev), wt, burn.tensor(b, device=dev), padding=1)), 2)
        return y.sum().backward(), y.numpy()
    for fn in (kept, other_pool, training):
        _, names = steps_run(fn)
        assert not any(_pooled(n) for n in names), fn.__name__
    (p, y), _ = steps_run(kept)
    np.testing.assert_array_equal(p, K.max_pool2d(y, **POOL2))


def test_same_shapes_other_pooling_never_takes_the_merged_plan():
    """max_pool2d(k=2, s=2) and max_pool2d(k=3, s=2, p=1) of an 8 x 8 map both give 4 x 4: the
    pooling's attributes are in the plan key, so the second flush plans again and pools as asked."""
    import torch
    x, w, b = _data((2, 3, 8, 8), (8, 3, 3), seed=5)
    x[np.isnan(x)] = 0.0
    fusion.clear_plan_cache()
    conv = torch.relu(torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), torch.tensor(b), padding=1))
    for kernel, stride, pad in ((2, 2, 0), (3, 2, 1), (2, 2, 0), (3, 2, 1)):
        y, names = steps_run(lambda: F.max_pool2d(F.relu(F.conv2d(burn.tensor(x), burn.tensor(w), burn.tensor(b),
                                                                   padding=1)), kernel, stride=stride,
                                                  padding=pad).numpy())
        assert any(_pooled(n) for n in names) == (kernel == 2)
        want = torch.nn.functional.max_pool2d(conv, kernel, stride=stride, padding=pad).numpy()
        assert y.shape == (2, 8, 4, 4)
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    fusion.clear_plan_cache()


@pytest.mark.parametrize("groups, dtype", [(2, np.float32), (1, np.float64)])
def test_pooled_step_falls_back_where_the_direct_kernel_does_not_apply(groups, dtype):
    from burn_flex.conv_epilogue import _ConvBiasReluPool
    from burn_flex.kernels.elementwise import _relu
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 4, 6, 6)).astype(dtype)
    w = rng.standard_normal((6, 4 // groups, 3, 3)).astype(dtype)
    b = rng.standard_normal((1, 6, 1, 1)).astype(dtype)
    attrs = dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=groups)
    (got,) = _ConvBiasReluPool(True)(x, w, b, **attrs)
    want = K.max_pool2d(_relu(np.add(K.conv2d(x, w, **attrs), b)), **POOL2)
    assert got.dtype == dtype and got.shape == (3, 6, 3, 3)
    np.testing.assert_array_equal(got, want)


def _two_blocks(x, w1, b1, w2, b2, pad2=1, dil2=1, bias2=True):
    # no Python name holds the first block's result when the flush runs: it is not a result
    return F.relu(F.conv2d(F.max_pool2d(F.relu(F.conv2d(burn.tensor(x), burn.tensor(w1), burn.tensor(b1),
                                                         padding=1)), 2),
                           burn.tensor(w2), burn.tensor(b2) if bias2 else None, padding=pad2,
                           dilation=dil2)).numpy()


@pytest.mark.parametrize("bias2", [True, False])
def test_a_pooled_result_read_by_a_padded_conv_is_written_padded(bias2, monkeypatch):
    """The first block stores its pooled result in the middle of zeros; the second convolution
    (merged with its bias and relu, or a plain conv2d) pads nothing: the unmerged plan's bits."""
    x, w1, b1 = _data((5, 2, 10, 10), (16, 3, 3), seed=7)
    _, w2, b2 = _data((5, 16, 5, 5), (12, 3, 3), seed=8)
    merged, plain = _both(lambda: _two_blocks(x, w1, b1, w2, b2, bias2=bias2), monkeypatch)
    np.testing.assert_array_equal(merged.view(np.int32), plain.view(np.int32))
    fusion.clear_plan_cache()
    _, names = steps_run(lambda: _two_blocks(x, w1, b1, w2, b2, bias2=bias2))
    assert "conv2d_bias_relu_pool2_padded" in names and any(n.endswith("_prepadded") for n in names), names
    fusion.clear_plan_cache()


def test_a_prepadded_conv_with_other_padding_of_the_same_shapes_pads_as_asked():
    """Padding 1 and padding 2 with dilation 2 give a 3 x 3 conv the same shapes: the second flush
    reuses the plan whose producer pads by 1, and the step takes the input back out of those zeros."""
    import torch
    x, w1, b1 = _data((3, 1, 8, 8), (8, 3, 3), seed=9)
    _, w2, b2 = _data((3, 8, 4, 4), (6, 3, 3), seed=10)
    x[np.isnan(x)] = 0.0
    fusion.clear_plan_cache()
    T = torch.nn.functional
    h = T.max_pool2d(torch.relu(T.conv2d(torch.tensor(x), torch.tensor(w1), torch.tensor(b1), padding=1)), 2)
    for pad, dil in ((1, 1), (2, 2), (1, 1), (2, 2)):
        y, names = steps_run(lambda: _two_blocks(x, w1, b1, w2, b2, pad2=pad, dil2=dil))
        assert any(n.endswith("_prepadded") for n in names), names
        want = torch.relu(T.conv2d(h, torch.tensor(w2), torch.tensor(b2), padding=pad, dilation=dil)).numpy()
        np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    fusion.clear_plan_cache()


def test_not_prepadded_where_the_pooled_result_is_kept_or_read_twice():
    x, w1, b1 = _data((2, 1, 8, 8), (8, 3, 3), seed=11)
    _, w2, b2 = _data((2, 8, 4, 4), (8, 3, 3), seed=12)
    x[np.isnan(x)] = 0.0
    fusion.clear_plan_cache()

    def kept():
        h = F.max_pool2d(F.relu(F.conv2d(burn.tensor(x), burn.tensor(w1), burn.tensor(b1), padding=1)), 2)
        return F.conv2d(h, burn.tensor(w2), padding=1).numpy(), h.numpy()

    def read_twice():
        h = F.max_pool2d(F.relu(F.conv2d(burn.tensor(x), burn.tensor(w1), burn.tensor(b1), padding=1)), 2)
        return (F.conv2d(h, burn.tensor(w2), padding=1) + h.sum()).numpy()
    for fn in (kept, read_twice):
        _, names = steps_run(fn)
        assert any(_pooled(n) for n in names) and not any(n.endswith("_prepadded") for n in names), names
    (y, h), _ = steps_run(kept)
    assert h.shape == (2, 8, 4, 4)
    np.testing.assert_allclose(y, K.conv2d(h, w2, stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1),
                               rtol=1e-6, atol=1e-6)
    fusion.clear_plan_cache()


def test_the_pooled_fallback_writes_the_padded_layout_too():
    from burn_flex.conv_epilogue import _ConvBiasReluPool
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 3, 6, 6))                       # float64: not the direct kernel
    w, b = rng.standard_normal((4, 3, 3, 3)), rng.standard_normal((1, 4, 1, 1))
    attrs = dict(stride=(1, 1), padding=(1, 1, 1, 1), dilation=(1, 1), groups=1)
    (got,) = _ConvBiasReluPool(True, (1, 2, 0, 1))(x, w, b, **attrs)
    (plain,) = _ConvBiasReluPool(True)(x, w, b, **attrs)
    assert got.shape == (2, 4, 3 + 3, 3 + 1) and plain.shape == (2, 4, 3, 3)
    np.testing.assert_array_equal(got, np.pad(plain, ((0, 0), (0, 0), (1, 2), (0, 1))))


def test_replayed_conv_steps_prepare_once_and_follow_the_switches(monkeypatch):
    """A capture replay binds each merged convolution step with its prepared kernel call
    (conv_epilogue._ReplayConv); switching the direct kernel off (or the calling thread's
    scheduling) between replays takes the plan's path, with that path's results."""
    from burn_flex import threads
    # shared DLPack memory another test left alive would make flex decline its flat replays
    monkeypatch.setattr(burn.dlpack, "GUARDS", {})
    # the Python replay steps (a native program would run these replays without them:
    # tests/test_flex_native_replay.py)
    monkeypatch.setenv("BURN_FLEX_NATIVE_REPLAY", "0")
    from burn_flex.conv_epilogue import _ReplayConv
    x, w1, b1 = _data((6, 1, 8, 8), (16, 3, 3), seed=4)
    _, w2, b2 = _data((6, 16, 4, 4), (32, 3, 3), seed=5)
    tw1, tb1, tw2, tb2 = (burn.tensor(a) for a in (w1, b1, w2, b2))

    def net(t):
        h = F.max_pool2d(F.relu(F.conv2d(t, tw1, tb1, padding=1)), 2)
        return F.max_pool2d(F.relu(F.conv2d(h, tw2, tb2, padding=1)), 2)

    def eager(t):
        with monkeypatch.context() as m:          # the unmerged plan: conv, add, relu, pool one by one
            m.setattr(FlexBackend, "merge_steps", lambda self, steps, nodes: None)
            fusion.clear_plan_cache()
            return net(t).numpy()
    fusion.clear_plan_cache()
    g = burn.capture.trace(net, burn.tensor(x))
    got = [g(burn.tensor(x * s)).numpy() for s in (1.0, 3.0)]
    runner = g._prepared["flex"].runners[0]
    bound = [st[0] for st in runner.steps if isinstance(st[0], _ReplayConv)]
    assert len(bound) == 2 and all(b.call is not None for b in bound), runner.steps
    for s, y in zip((1.0, 3.0), got):
        np.testing.assert_array_equal(y.view(np.int32), eager(burn.tensor(x * s)).view(np.int32))
    # the same replay with the direct kernel switched off: im2col + GEMM, as eager is then
    monkeypatch.setattr(conv_direct, "ENABLED", False)
    off = g(burn.tensor(x)).numpy()
    np.testing.assert_array_equal(off.view(np.int32), eager(burn.tensor(x)).view(np.int32))
    assert all(b.call is None for b in bound)
    monkeypatch.setattr(conv_direct, "ENABLED", True)
    monkeypatch.setattr(conv_direct, "_SPLIT_MACS", 0)     # the prepared calls split images over the native pool
    monkeypatch.setattr(conv_direct, "_CHUNK_MACS", 1)
    before = threads.num_threads()
    try:
        for n in (2, 1):
            threads.set_num_threads(n)
            np.testing.assert_array_equal(g(burn.tensor(x)).numpy().view(np.int32), got[0].view(np.int32))
            assert all(b.call is not None for b in bound)
    finally:
        threads.set_num_threads(before)


def test_a_prepared_direct_call_checks_what_it_is_called_with():
    k = K._jit_columns(np.dtype(np.float32))
    x, w, b = _data((2, 3, 6, 6), (8, 3, 3), seed=6)
    call = conv_direct.prepared_direct_conv(k, x.shape, w.shape, (1, 1), (1, 1, 1, 1), (1, 1), (6, 6), relu=True)
    want = conv_direct.direct_conv(k, x, w, (1, 1), (1, 1, 1, 1), (1, 1), (6, 6), bias=b, relu=True)
    np.testing.assert_array_equal(call(x, w, b).view(np.int32), want.view(np.int32))
    out = np.empty_like(want)
    assert call(x, w, b, out) is out
    np.testing.assert_array_equal(out.view(np.int32), want.view(np.int32))
    with pytest.raises(ValueError, match=r"prepared for x \(2, 3, 6, 6\).*called with \(1, 3, 6, 6\)"):
        call(x[:1], w, b)
    with pytest.raises(ValueError, match="bias has 7 elements for 8 output channels"):
        call(x, w, b[:7])
    with pytest.raises(TypeError, match="C-contiguous float32"):
        call(x, w, b, np.empty(want.shape, np.float64))
    with pytest.raises(ValueError, match="out has shape"):
        call(x, w, b, np.empty((2, 8, 6, 5), np.float32))
    # a non-contiguous input is read as numpy reads it
    xt = np.ascontiguousarray(x.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
    np.testing.assert_array_equal(call(xt, w, b).view(np.int32), want.view(np.int32))
    assert conv_direct.prepared_direct_conv(k, (2, 0, 6, 6), (8, 0, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), (6, 6)) is None


def _replay_follows_weight_values(seed, scales):
    """A captured conv + bias + relu + pool block replayed after each assignment of its weights
    times ``scale``: each result equals the direct convolution of the new weights, bit for bit.
    Returns the graph and the last result."""
    x, w1, b1 = _data((4, 1, 8, 8), (16, 3, 3), seed=seed)
    tw, tb = burn.tensor(w1), burn.tensor(b1)

    def net(t):
        return F.max_pool2d(F.relu(F.conv2d(t, tw, tb, padding=1)), 2)
    fusion.clear_plan_cache()
    g = burn.capture.trace(net, burn.tensor(x))
    k = K._jit_columns(np.dtype(np.float32))
    for scale in scales:
        tw.assign_(burn.tensor(w1 * np.float32(scale)))
        got = g(burn.tensor(x)).numpy()
        want = K.max_pool2d(conv_direct.direct_conv(k, x, w1 * np.float32(scale), (1, 1), (1, 1, 1, 1), (1, 1),
                                                    (8, 8), bias=b1, relu=True), **POOL2)
        np.testing.assert_array_equal(got.view(np.int32), want.view(np.int32))
    return g, got


def test_a_replay_repacks_weights_whose_values_changed():
    """The replayed step keeps its packed weights while their bytes are the same; new values (an
    optimizer step, an assignment) are packed again: the replay follows them."""
    _, first = _replay_follows_weight_values(7, (1.0,))
    _, last = _replay_follows_weight_values(7, (1.0, 2.0, -0.5, 1.0))
    np.testing.assert_array_equal(last.view(np.int32), first.view(np.int32))


@pytest.mark.parametrize("native", ["0", "1"])
def test_large_weights_are_packed_per_call_not_kept(native, monkeypatch):
    """Above conv_epilogue._KEEP_PACKED_BYTES a replayed convolution keeps no packed copy (nor a
    copy of the weights' bytes) and still follows new weight values: the Python step, and a
    native program's prologue (both through conv_epilogue.PackedWeights)."""
    from burn_flex import conv_epilogue, native_replay
    from burn_flex.conv_epilogue import _ReplayConv
    monkeypatch.setattr(burn.dlpack, "GUARDS", {})
    monkeypatch.setenv("BURN_FLEX_NATIVE_REPLAY", native)
    monkeypatch.setattr(conv_epilogue, "_KEEP_PACKED_BYTES", 100)      # the [16, 1, 3, 3] weights: 576 bytes
    g, _ = _replay_follows_weight_values(8, (1.0, 3.0, 0.5))
    runner = g._prepared["flex"].runners[0]
    steps = [st[0] for st in runner.steps if isinstance(st[0], _ReplayConv)]
    assert steps and all(s.call is not None and s.weights.packed is None and s.weights.copy is None
                         for s in steps)
    if native == "1":
        assert isinstance(runner.program, native_replay.Program), runner.describe()
        assert all(p.weights.packed is None and p.weights.copy is None for p in runner.program.prologue)
