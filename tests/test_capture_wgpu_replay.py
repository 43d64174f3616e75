"""burn-wgpu's replay hook: pre-bound kernels (burn_wgpu.replay), on PoCL, against eager.

After its warm-up a graph's replay is recorded once and then re-enqueued with only its
inputs' and results' arguments rebound; every replay must give exactly what the eager call
gives (same kernels: bit-identical), and what the recording cannot replay must fall back to
the plan, saying why."""
import numpy as np
import pytest

import burn
import burn.nn.functional as F
from burn.testing import conformance
from burn.testing.conformance import _call

from devices import wgpu_or_skip
from test_capture_conformance import WGPU_CASES, _expects_capture_error, _fresh, _outs, _same

nn = burn.nn


@pytest.fixture
def wgpu():
    dev = wgpu_or_skip()
    import burn_wgpu.replay as replay
    return dev, replay


def _graph(fn):
    return [v for v in fn._graphs.values() if isinstance(v, burn.Graph)][0]


@pytest.mark.parametrize("opt", ["adam", "rmsprop-clip"])
def test_a_pre_bound_training_step_trains_like_eager(wgpu, opt):
    dev0, _ = wgpu

    def run(captured):
        dev = dev0.autodiff()
        dev.seed(0)
        m = nn.Sequential(nn.Linear(16, 32, device=dev), nn.ReLU(), nn.Linear(32, 5, device=dev))
        o = (burn.optim.Adam(m, lr=1e-2) if opt == "adam" else
             burn.optim.RMSprop(m, lr=1e-2, grad_clip=burn.optim.GradClip.norm(1.0)))

        def step(x, y):
            loss = F.cross_entropy(m(x), y)     # its gather checks the labels' range on the device
            o.step(loss.backward())
            return loss
        fn = burn.capture(step) if captured else step
        rng = np.random.default_rng(0)
        losses = [fn(burn.tensor(rng.random((8, 16), dtype=np.float32), device=dev),
                     burn.tensor(rng.integers(0, 5, 8), device=dev)).item() for _ in range(8)]
        return losses, [p.numpy() for p in m.parameters()], fn
    eager, cap = run(False), run(True)
    assert "pre-bound kernels" in _graph(cap[2])._prepared["wgpu"].describe(dev0.index)
    assert eager[0] == cap[0]
    for a, b in zip(eager[1], cap[1]):
        np.testing.assert_array_equal(a, b)


def test_every_sampled_conformance_program_replays_pre_bound_like_eager(wgpu, monkeypatch):
    dev, replay = wgpu
    monkeypatch.setattr(replay, "WARMUP", 0)        # record on the first replay, pre-bound after
    ran = 0
    for case in WGPU_CASES:
        if case.check != "forward" or _expects_capture_error(case):
            continue
        fn = lambda *xs, case=case: _call(case, list(xs), dev)      # noqa: E731
        try:
            with np.errstate(all="ignore"):
                conformance.run_case(case, dev)
        except Exception:
            continue        # the eager case fails on this OpenCL too (test_capture_conformance skips it)
        g = burn.capture.trace(fn, *_fresh(case, dev, 0))
        for salt in (1, 2, 3):      # recorded, then twice pre-bound (or the plan, where declined)
            with np.errstate(all="ignore"):
                got = _outs(g(*_fresh(case, dev, salt)))
                want = _outs(fn(*_fresh(case, dev, salt)))
            for i, (a, b) in enumerate(zip(got, want)):
                _same(a, b, f"{case.name} output {i} (replay {salt})")
        ran += "pre-bound" in g._prepared["wgpu"].describe(dev.index)
    assert ran >= 5


def test_random_ops_decline_pre_binding_and_say_why(wgpu):
    dev, _ = wgpu
    g = burn.capture.trace(lambda x: F.dropout(x, 0.5, training=True) * 2, burn.ones((64,), device=dev))
    for _ in range(4):
        dev.seed(3)
        got = g(burn.ones((64,), device=dev)).numpy()
    dev.seed(3)
    np.testing.assert_array_equal(got, (F.dropout(burn.ones((64,), device=dev), 0.5, training=True) * 2).numpy())
    assert "declined: 1 random op(s)" in g._prepared["wgpu"].describe(dev.index)


def test_an_out_of_range_index_in_a_pre_bound_replay_fails_as_eager(wgpu):
    dev, _ = wgpu
    table = burn.tensor(np.arange(12, dtype=np.float32).reshape(4, 3), device=dev)
    g = burn.capture.trace(lambda i: table[i] * 2, burn.tensor([0, 1], device=dev))
    for _ in range(4):
        assert g(burn.tensor([3, 2], device=dev)).tolist() == [[18, 20, 22], [12, 14, 16]]
    assert "pre-bound" in g._prepared["wgpu"].describe(dev.index)
    with pytest.raises(burn.IndexOutOfRange, match="index 7 is out of bounds"):
        g(burn.tensor([7, 0], device=dev)).tolist()
    assert g(burn.tensor([1, 0], device=dev)).tolist() == [[6, 8, 10], [0, 2, 4]]


def test_an_input_of_another_layout_runs_the_plan(wgpu):
    dev, _ = wgpu
    g = burn.capture.trace(lambda x: (x + 1).exp(), burn.ones((3, 4), device=dev))
    base = np.arange(12, dtype=np.float32).reshape(4, 3) / 10
    for _ in range(4):
        g(burn.ones((3, 4), device=dev))
    t = burn.tensor(base, device=dev).T            # a transposed view: other strides
    np.testing.assert_array_equal(g(t).numpy(), (t + 1).exp().numpy())
    np.testing.assert_allclose(g(t).numpy(), np.exp(base.T + 1), rtol=1e-6)
