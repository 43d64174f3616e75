"""An eager optimizer step records one ``burn::adam_update_group`` / ``burn::sgd_update_group`` per
parameter group (burn.optim's ``_update_together``) instead of one update per parameter: the
parameters and state equal the per-parameter path bit for bit, the op's reference equals the
single updates it stands for, and whatever the group op cannot take (different step counts,
first and later momentum steps, a subclass's own update, a trace) goes per parameter."""
import numpy as np
import pytest

import burn
from burn.fused import adam_update, adam_update_group, group_kernel, sgd_update, sgd_update_group
from burn.optim import Adam, AdamW, Optimizer, SGD
from tiny_training import classifier_steps  # noqa: E402  (tests/ is on sys.path under pytest)

nn = burn.nn

OPTIMIZERS = {
    "adam": lambda ps: Adam(ps, lr=1e-2),
    "adam-l2": lambda ps: Adam(ps, lr=1e-2, weight_decay=0.05),
    "adamw": lambda ps: AdamW(ps, lr=1e-2, weight_decay=0.1),
    "sgd-momentum": lambda ps: SGD(ps, lr=0.05, momentum=0.9),
    "sgd-nesterov": lambda ps: SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=1e-3),
}


def _per_parameter(monkeypatch):
    for cls in (Adam, SGD):
        monkeypatch.setattr(cls, "_update_together", Optimizer._update_together)


def _recorded(fn):
    """``(fn(), names)``: the result and the op name of every multi-output node recorded meanwhile
    (those go through ``LazyGraph.add``; the update ops have two or three outputs)."""
    names = []
    real = burn.graph.LazyGraph.add

    def spy(self, node):
        names.append(node.prim.name)
        return real(self, node)
    burn.graph.LazyGraph.add = spy
    try:
        return fn(), names
    finally:
        burn.graph.LazyGraph.add = real


def _train(make_opt, device, steps=5):
    train, opt = classifier_steps(make_opt, steps=steps, seed=7, device=device)

    def with_state():
        losses, params = train()
        state = {k: {n: v.numpy() if isinstance(v, burn.Tensor) else v for n, v in s.items()}
                 for k, s in opt.state.items()}
        return losses, params, state
    return _recorded(with_state)


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_group_steps_equal_the_per_parameter_steps_bit_for_bit(name, monkeypatch):
    (losses, params, state), names = _train(OPTIMIZERS[name], burn.Device.flex())
    kernel = "burn::adam_update_group" if name.startswith("adam") else "burn::sgd_update_group"
    assert names.count(kernel) == 5 and not any(n in ("burn::adam_update", "burn::sgd_update") for n in names)
    _per_parameter(monkeypatch)
    (losses1, params1, state1), names1 = _train(OPTIMIZERS[name], burn.Device.flex())
    assert kernel not in names1 and names1.count(kernel.replace("_group", "")) == 5 * 4     # 4 parameters
    assert losses == losses1 and losses[-1] < losses[0]
    for a, b in zip(params, params1):
        np.testing.assert_array_equal(a, b)
    assert state.keys() == state1.keys()
    for k in state:
        for n in state[k]:
            np.testing.assert_array_equal(state[k][n], state1[k][n])


def test_a_step_records_one_update_op_per_parameter_group():
    dev = burn.Device.flex().autodiff()
    model = nn.Sequential(nn.Linear(4, 6, device=dev), nn.ReLU(), nn.Linear(6, 3, device=dev))
    opt = Adam(model, lr=1e-2, groups=[(burn.optim.ParamGroup(glob="layers.2.*"), {"lr": 1e-3})])
    loss = model(burn.ones((2, 4), device=dev)).sum()
    grads = loss.backward()
    pending = burn.graph.graph_for(dev).pending
    before = len(pending)
    opt.step(grads)
    names = [n.prim.name for n in pending[before:]]
    assert names.count("burn::adam_update_group") == 2 and "burn::adam_update" not in names


def test_steps_that_the_group_op_cannot_take_go_per_parameter():
    dev = burn.Device.flex().autodiff()
    a = nn.Parameter(burn.tensor([1.0, 2.0], device=dev))
    b = nn.Parameter(burn.tensor([3.0], device=dev))
    pending = burn.graph.graph_for(dev).pending

    def step(opt, params):
        grads = sum((p * p).sum() for p in params).backward()
        before = len(pending)
        opt.step(grads)
        return [n.prim.name for n in pending[before:]]

    opt = Adam([a, b], lr=0.1)
    step(opt, [a])                                   # only a has a gradient: a's count moves on
    names = step(opt, [a, b])                        # counts 2 and 1: one h each, per parameter
    assert names.count("burn::adam_update") == 2 and "burn::adam_update_group" not in names
    assert [opt.state[k]["t"] for k in sorted(opt.state)] == [2, 1]

    sgd = SGD([a, b], lr=0.1, momentum=0.9)
    step(sgd, [a])                                   # a's buffer exists, b's starts next step
    names = step(sgd, [a, b])
    assert names.count("burn::sgd_update") == 2 and "burn::sgd_update_group" not in names
    assert step(sgd, [a, b]).count("burn::sgd_update_group") == 1

    class Halved(Adam):                              # a subclass's own rule runs per parameter
        calls = 0

        def update(self, p, g, state, group):
            Halved.calls += 1
            return super().update(p, g * 0.5, state, group)
    opt = Halved([a, b], lr=0.1)
    step(opt, [a, b])
    assert Halved.calls == 2


def test_group_reference_equals_the_single_updates():
    rng = np.random.default_rng(4)
    shapes = [(3, 2), (5,), ()]
    ts = [[burn.tensor(rng.standard_normal(s).astype(np.float32)) for _ in range(4)] for s in shapes]
    for t in ts:
        t[3] = t[3] * t[3]                                       # v >= 0
    h = burn.tensor([0.1, 0.9, 0.1, 0.999, 0.001, 10.0, 1000.0, 1e-8, 0.5, 0.95], dtype=burn.float64)
    for mode in ("none", "l2", "decoupled"):
        flat = [x for t in ts for x in t]
        got = adam_update_group(*flat, h, mode=mode)                      # flex's group kernel
        ref = adam_update_group.reference(*flat, h, mode=mode)            # burn ops
        want = [r for t in ts for r in adam_update(*t, h, mode)]
        assert len(got) == len(ref) == len(want) == 9
        for a, b, c in zip(got, ref, want):
            assert a.shape == c.shape
            np.testing.assert_array_equal(a.numpy(), c.numpy())
            np.testing.assert_allclose(b.numpy(), c.numpy(), rtol=1e-6, atol=1e-7)
    hs = burn.tensor([0.1, 0.01, 0.9, 1.0], dtype=burn.float64)
    for mode in (("first", False, False), ("next", True, True)):
        flat = [x for t in ts for x in t[:3]]
        got = sgd_update_group(*flat, hs, mode=mode)
        want = [r for t in ts for r in sgd_update(*t[:3], hs, mode)]
        for a, c in zip(got, want):
            np.testing.assert_array_equal(a.numpy(), c.numpy())


def test_group_ops_reject_bad_arguments_at_the_call():
    p = burn.ones((2,))
    h = burn.zeros((10,), dtype=burn.float64)
    with pytest.raises(ValueError, match="adam_update_group: expected 4 tensors per parameter"):
        adam_update_group(p, p, p, h)
    with pytest.raises(burn.ShapeError, match="adam_update_group: gradient and state must match"):
        adam_update_group(p, p, p, p, p, burn.ones((3,)), p, p, h)
    with pytest.raises(ValueError, match="adam_update_group: mode must be"):
        adam_update_group(p, p, p, p, h, mode="nesterov")
    with pytest.raises(ValueError, match="sgd_update_group: expected 3 tensors per parameter"):
        sgd_update_group(p, p, burn.zeros((4,), dtype=burn.float64))


def test_group_kernel_runs_the_single_kernel_per_parameter_in_the_groups_order():
    seen = []

    def single(p, g, buf, h, mode):
        seen.append((p, mode))
        return p - g, buf + h
    k = group_kernel(single, 3)
    assert k(10, 1, 0, 20, 2, 5, 100, mode="m") == (9, 100, 18, 105)
    assert seen == [(10, "m"), (20, "m")] and k.__name__ == "single_group"


def test_wgpu_without_a_group_kernel_runs_the_reference_with_the_same_values():
    pytest.importorskip("burn_wgpu")
    try:
        dev = burn.Device.wgpu()
        burn.ones((1,), device=dev).numpy()
    except burn.BackendUnavailable as e:
        pytest.skip(f"wgpu unavailable: {e}")
    (losses, params, _), _ = _train(OPTIMIZERS["adam"], dev)
    (losses1, params1, _), _ = _train(OPTIMIZERS["adam"], burn.Device.flex())
    np.testing.assert_allclose(losses, losses1, rtol=1e-5, atol=1e-6)
    for a, b in zip(params, params1):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


def test_a_group_step_that_raises_changes_no_parameter_and_no_state():
    """A state that no longer fits its parameter (here: a wrong-shaped m) fails the group op's
    checks at the call, before any parameter, moment or step count changes."""
    dev = burn.Device.flex().autodiff()
    a = nn.Parameter(burn.tensor([1.0, 2.0], device=dev))
    b = nn.Parameter(burn.tensor([3.0], device=dev))
    opt = Adam([a, b], lr=0.1)
    opt.step(((a * a).sum() + (b * b).sum()).backward())
    before = [a.numpy(), b.numpy()]
    key = sorted(opt.state)[1]
    opt.state[key]["m"] = burn.zeros((4,), device=dev)
    with pytest.raises(burn.ShapeError, match="adam_update_group"):
        opt.step(((a * a).sum() + (b * b).sum()).backward())
    np.testing.assert_array_equal(a.numpy(), before[0])
    np.testing.assert_array_equal(b.numpy(), before[1])
    assert [opt.state[k]["t"] for k in sorted(opt.state)] == [1, 1]
