"""flex's replay runner (burn_flex.replay, Backend.prepare_replay): a replay through the
flattened steps equals the plan's replay and the eager call, bit for bit, including random
ops drawing fresh numbers, state updates and values read after later replays; where the
runner declines (an index out of range) the plan runs and fails as eager does."""
import warnings

import numpy as np
import pytest

import burn
from burn_flex.replay import FlatReplay


def _plan_only(g):
    """Make ``g``'s flex replays run the fusion plan (as BURN_CAPTURE_BACKEND_REPLAY=0 does)."""
    g._prepared["flex"].runners[0] = None


def test_flat_replay_runs_and_equals_the_plan_and_eager():
    rng = np.random.default_rng(0)
    w = burn.tensor(rng.standard_normal((6, 4), dtype=np.float32))

    def f(x):
        h = (x @ w).relu() * 0.5 + 1.0
        return h.exp().sum(axis=1), burn.clip(h, 0.2, 1.3)

    xs = [burn.tensor(rng.standard_normal((5, 6), dtype=np.float32)) for _ in range(3)]
    flat, plan = burn.capture.trace(f, xs[0]), burn.capture.trace(f, xs[0])
    _ = flat(xs[0]), plan(xs[0])
    _plan_only(plan)
    assert isinstance(flat._prepared["flex"].runners[0], FlatReplay)
    assert flat._prepared["flex"].describe().startswith("flex flat replay")
    for x in xs:
        got, ref, eager = flat(x), plan(x), f(x)
        for a, b, c in zip(got, ref, eager):
            assert np.array_equal(a.numpy(), b.numpy()) and np.array_equal(a.numpy(), c.numpy())


def test_flat_replay_draws_fresh_random_numbers_like_eager():
    dev = burn.Device.flex()

    def f(x):
        return burn.nn.functional.dropout(x, 0.5, training=True) + burn.rand((4, 8), device=dev)

    x = burn.ones((4, 8), device=dev)
    g = burn.capture.trace(f, x)
    _ = g(x)
    assert isinstance(g._prepared["flex"].runners[0], FlatReplay)
    dev.seed(11)
    replays = [g(x).numpy() for _ in range(3)]
    dev.seed(11)
    eagers = [f(x).numpy() for _ in range(3)]
    for r, e in zip(replays, eagers):
        assert np.array_equal(r, e)
    assert not np.array_equal(replays[0], replays[1])       # a fresh key per replay


def test_flat_replay_applies_state_updates_and_keeps_earlier_results():
    w = burn.tensor([1.0, 2.0, 3.0])

    def step(x):
        y = w * x + 1.0
        w.assign_(w * 0.5)
        return y

    x = burn.tensor([2.0, 2.0, 2.0])
    g = burn.capture.trace(step, x)       # the trace is the first step: w halves once
    first = g(x)
    assert isinstance(g._prepared["flex"].runners[0], FlatReplay)
    second = g(x)
    assert first.tolist() == [2.0, 3.0, 4.0]       # w was [0.5, 1, 1.5] at the first replay
    assert second.tolist() == [1.5, 2.0, 2.5]      # a later replay does not change it
    assert w.tolist() == [0.125, 0.25, 0.375]


def test_flat_replay_declines_an_index_out_of_range_and_the_plan_fails_it_as_eager():
    x = burn.tensor([1.0, 2.0, 3.0])

    def f(x, i):
        return burn.take(x, i) * 2, x + 1

    g = burn.capture.trace(f, x, burn.tensor([0, 1]))
    a, b = g(x, burn.tensor([2, 0]))
    assert a.tolist() == [6.0, 2.0] and isinstance(g._prepared["flex"].runners[0], FlatReplay)
    a, b = g(x, burn.tensor([5, 0]))
    assert b.tolist() == [2.0, 3.0, 4.0]           # the unrelated value is still computed
    with pytest.raises(burn.BurnError, match="index 5 is out of bounds"):
        a.tolist()
    a, _ = g(x, burn.tensor([1, 1]))               # the next replay runs flat again
    assert a.tolist() == [4.0, 4.0]


def test_fused_chain_passes_out_by_position_without_numpy_warnings():
    # a whole-array element-wise group of small ops, maximum and minimum among them (their
    # positional out is deprecated in numpy: they keep out=)
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)

    def f(x):
        return burn.minimum(burn.maximum(x * 2.0 + 1.0, 0.5), 2.0).exp() - 1.0

    g = burn.capture.trace(f, burn.tensor(a))
    ref = np.exp(np.minimum(np.maximum(a * np.float32(2) + np.float32(1), np.float32(0.5)),
                            np.float32(2))) - np.float32(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for _ in range(3):                         # the first call learns the program, later ones run it
            assert np.allclose(g(burn.tensor(a)).numpy(), ref, rtol=1e-6, atol=0)
            assert np.array_equal(g(burn.tensor(a)).numpy(), f(burn.tensor(a)).numpy())


@pytest.mark.parametrize("make_opt, batched", [
    (lambda m: burn.optim.Adam(m, lr=1e-2), "adam_update_many"),
    (lambda m: burn.optim.AdamW(m, lr=1e-2, weight_decay=0.1), "adam_update_many"),
    (lambda m: burn.optim.SGD(m, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3), "sgd_update_many"),
])
def test_flat_replay_batches_a_steps_optimizer_updates_and_trains_as_eager(make_opt, batched):
    nn, F = burn.nn, burn.nn.functional
    rng = np.random.default_rng(1)
    xs = rng.random((12, 8, 16), dtype=np.float32)
    ys = (xs @ rng.standard_normal((16, 5))).argmax(-1)
    runs = []
    for captured in (False, True):
        dev = burn.Device.flex().autodiff()
        dev.seed(0)
        model = nn.Sequential(nn.Linear(16, 24, device=dev), nn.ReLU(), nn.Linear(24, 5, device=dev))
        opt = make_opt(model)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss
        fn = burn.capture(step) if captured else step
        losses = [fn(burn.tensor(x, device=dev), burn.tensor(y, device=dev)).item() for x, y in zip(xs, ys)]
        runs.append((losses, [p.numpy() for p in model.parameters()], fn))
    (eager_losses, eager_params, _), (losses, params, fn) = runs
    assert losses == eager_losses and losses[-1] < losses[0]
    for a, b in zip(eager_params, params):
        np.testing.assert_array_equal(a, b)
    runner = fn.graph(burn.tensor(xs[0], device=dev), burn.tensor(ys[0], device=dev))._prepared["flex"].runners[0]
    names = [getattr(st[0], "__name__", "") for st in runner.steps]
    assert names.count(batched) == 1, names        # the 4 parameters' updates: one step


def test_a_kernel_registered_after_the_first_replay_is_used_by_the_next():
    """A replay's prepared plan holds kernel functions: when kernels change (a plugin loaded
    later, a kernel registered with a higher priority) the next replay prepares again."""
    from burn.dispatch import registry

    @burn.backend_extension("test_capture::scaled")
    def scaled(x):
        return x * 2.0

    @scaled.meta
    def _(x):
        return burn.TensorMeta(x.shape, x.dtype)

    calls = []
    scaled.kernel("flex")(lambda x: (calls.append("first"), x * 2.0)[1])
    g = burn.capture.trace(lambda x: scaled(x) + 1.0, burn.ones((3,)))
    assert g(burn.ones((3,))).tolist() == [3.0, 3.0, 3.0] and calls
    calls.clear()
    registry.register_kernel("test_capture::scaled", "flex", lambda x: (calls.append("second"), x * 2.0)[1],
                             priority=50, plugin="test")
    try:
        assert g(burn.ones((3,))).tolist() == [3.0, 3.0, 3.0]
        assert calls == ["second"]
    finally:
        registry.forget_plugin("test")


def test_a_replay_reads_pending_and_failed_inputs_as_eager_reads_them():
    """A replay's inputs and state are read as ``Handle.value`` reads them (burn.bridge.values_of):
    a pending value is computed first, a value whose computation failed raises its error at the
    replay, and a later replay with good values runs."""
    w = burn.tensor([1.0, 2.0, 3.0])

    def f(x):
        return x * w

    g = burn.capture.trace(f, burn.ones((3,)))
    pending = burn.tensor([1.0, 1.0, 1.0]) + 1.0          # not flushed yet
    w.assign_(w * 10.0)                                    # the state pending too
    assert g(pending).tolist() == [20.0, 40.0, 60.0]
    bad = burn.take(burn.tensor([1.0, 2.0, 3.0]), burn.tensor([0, 7, 1]))
    with pytest.raises(burn.BurnError, match="index 7 is out of bounds"):
        g(bad).tolist()                                    # pending: its flush fails
    bad = burn.take(burn.tensor([1.0, 2.0, 3.0]), burn.tensor([0, 8, 1]))
    assert (burn.tensor([0.0]) + 1).tolist() == [1.0]      # flushes bad's graph: bad holds its failure
    assert bad._h.node is None
    with pytest.raises(burn.BurnError, match="index 8 is out of bounds"):
        g(bad)
    assert g(burn.tensor([1.0, 0.0, 1.0])).tolist() == [10.0, 0.0, 30.0]
