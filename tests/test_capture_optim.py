"""burn.capture of optimizer steps: every optimizer, gradient clipping and LR schedulers.

A captured training step must train exactly like the eager one: the same losses and
weights, bit for bit, over 50 steps (the eager run is the reference: same kernels). Values
that change per step (a scheduled lr, Adam's bias corrections, Adagrad's decayed rate, step
counts) are replay inputs, never constants baked at trace time: the runs below change them
every step and must not retrace."""
import json
import subprocess
import sys

import numpy as np
import pytest

import burn
import burn.nn.functional as F

nn = burn.nn


def _mlp(dev):
    return nn.Sequential(nn.Linear(16, 24, device=dev), nn.ReLU(), nn.Dropout(0.2), nn.Linear(24, 5, device=dev))


def _data(n=50, seed=0):
    rng = np.random.default_rng(seed)
    xs = rng.random((n, 8, 16), dtype=np.float32)
    ys = (xs @ rng.standard_normal((16, 5))).argmax(-1)
    return xs, ys


def _train(opt_fn, captured, sched_fn=None, sched_inside=False, n=50):
    dev = burn.Device.flex().autodiff()
    dev.seed(0)
    model = _mlp(dev)
    opt = opt_fn(model)
    sched = sched_fn(opt) if sched_fn else None

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        if sched_inside:
            sched.step()
        return loss
    fn = burn.capture(step) if captured else step
    losses, norms = [], []
    for x, y in zip(*_data(n)):
        losses.append(fn(burn.tensor(x, device=dev), burn.tensor(y, device=dev)))
        if opt.last_grad_norm is not None:
            norms.append(opt.last_grad_norm.item())
        if sched is not None and not sched_inside:
            sched.step()
    return [v.item() for v in losses], [p.numpy().copy() for p in model.parameters()], fn, norms, opt


OPTIMIZERS = {
    "rmsprop": lambda m: burn.optim.RMSprop(m, lr=1e-2),
    "rmsprop-centered-momentum-wd": lambda m: burn.optim.RMSprop(m, lr=5e-3, centered=True, momentum=0.9,
                                                                 weight_decay=1e-3),
    "adagrad-decay-wd": lambda m: burn.optim.Adagrad(m, lr=0.1, lr_decay=0.05, weight_decay=1e-3,
                                                     initial_accumulator_value=0.1),
    "adam-clip-norm": lambda m: burn.optim.Adam(m, lr=3e-3, grad_clip=burn.optim.GradClip.norm(0.5)),
    "sgd-clip-value": lambda m: burn.optim.SGD(m, lr=0.05, grad_clip=burn.optim.GradClip.value(0.01)),
    "rmsprop-clip-norm": lambda m: burn.optim.RMSprop(m, lr=1e-2, grad_clip=burn.optim.GradClip.norm(1.0)),
}


def _assert_same(eager, cap):
    assert eager[0] == cap[0] and eager[0][-1] < eager[0][0]
    for a, b in zip(eager[1], cap[1]):
        np.testing.assert_array_equal(a, b)
    info = cap[2].cache_info()
    # one graph, never retraced; an optimizer that makes state on its first step traces on call 2
    stateless = all(not st for st in cap[4].state.values())
    assert info == {"traces": 1 if stateless else 2, "replays": 49 if stateless else 48, "graphs": 1}


@pytest.mark.parametrize("name", list(OPTIMIZERS))
def test_50_captured_steps_equal_eager_for_every_optimizer_and_clip(name):
    eager = _train(OPTIMIZERS[name], captured=False)
    cap = _train(OPTIMIZERS[name], captured=True)
    _assert_same(eager, cap)
    if "clip-norm" in name:
        assert len(cap[3]) == 50 and eager[3] == cap[3]        # opt.last_grad_norm: the replayed step's own
    for path, st in eager[4].state.items():
        for k, v in st.items():
            got = cap[4].state[path][k]
            if isinstance(v, burn.Tensor):
                np.testing.assert_array_equal(v.numpy(), got.numpy())
            else:
                assert v == got, (path, k)          # step counts advance per replay


SCHEDULES = {
    "adam-cosine": (lambda m: burn.optim.Adam(m, lr=1e-2), lambda o: burn.optim.CosineAnnealingLR(o, T_max=20)),
    "sgd-exponential": (lambda m: burn.optim.SGD(m, lr=0.1), lambda o: burn.optim.ExponentialLR(o, gamma=0.95)),
    "sgd-momentum-onecycle": (lambda m: burn.optim.SGD(m, lr=0.1, momentum=0.9),
                              lambda o: burn.optim.OneCycleLR(o, max_lr=0.1, total_steps=60)),
    "adamw-onecycle": (lambda m: burn.optim.AdamW(m, lr=1e-2),
                       lambda o: burn.optim.OneCycleLR(o, max_lr=1e-2, total_steps=60)),
    "adagrad-step": (lambda m: burn.optim.Adagrad(m, lr=0.1, lr_decay=0.01),
                     lambda o: burn.optim.StepLR(o, step_size=3, gamma=0.7)),
    "rmsprop-warmup": (lambda m: burn.optim.RMSprop(m, lr=1e-2), lambda o: burn.optim.LinearWarmup(o, 10)),
    "rmsprop-momentum-onecycle": (lambda m: burn.optim.RMSprop(m, lr=1e-2, momentum=0.5),
                                  lambda o: burn.optim.OneCycleLR(o, max_lr=1e-2, total_steps=60)),
}


@pytest.mark.parametrize("inside", [False, True], ids=["sched-outside", "sched-inside"])
@pytest.mark.parametrize("name", list(SCHEDULES))
def test_a_scheduled_lr_is_a_replay_input_not_a_constant(name, inside):
    opt_fn, sched_fn = SCHEDULES[name]
    eager = _train(opt_fn, False, sched_fn, inside)
    cap = _train(opt_fn, True, sched_fn, inside)
    _assert_same(eager, cap)
    assert eager[4].param_groups[-1]["lr"] == cap[4].param_groups[-1]["lr"]


def test_groups_that_share_an_lr_at_trace_time_may_diverge_after():
    def opt_fn(m):
        return burn.optim.Adam(m, lr=1e-2, groups=[(burn.optim.ParamGroup(glob="*.bias"), {})])

    def run(captured):
        dev = burn.Device.flex().autodiff()
        dev.seed(0)
        model = _mlp(dev)
        opt = opt_fn(model)

        def step(x, y):
            loss = F.cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss
        fn = burn.capture(step) if captured else step
        out = []
        for i, (x, y) in enumerate(zip(*_data(12))):
            # equal at the trace (call 2), then only the bias group's lr changes
            opt.param_groups[0]["lr"] = 1e-2 / max(1, i - 1)
            out.append(fn(burn.tensor(x, device=dev), burn.tensor(y, device=dev)).item())
        return out, [p.numpy() for p in model.parameters()]
    a, b = run(False), run(True)
    assert a[0] == b[0]
    for x, y in zip(a[1], b[1]):
        np.testing.assert_array_equal(x, y)


def test_an_optimizer_that_does_not_declare_capturable_says_how():
    class SignSGD(burn.optim.Optimizer):
        def __init__(self, params):
            super().__init__(params, lr=0.1)

        def update(self, p, g, state, group):
            return p - g.sign() * group["lr"]
    dev = burn.Device.flex().autodiff()
    w = burn.nn.Parameter(burn.ones((2,), device=dev))
    opt = SignSGD([w])
    with pytest.raises(burn.CaptureError, match=r"SignSGD.step cannot be captured.*capturable = True"):
        burn.capture.trace(lambda x: opt.step((w * x).sum().backward()), burn.ones((2,), device=dev))


def test_reduce_lr_on_plateau_inside_a_capture_raises():
    dev = burn.Device.flex().autodiff()
    w = burn.nn.Parameter(burn.ones((2,), device=dev))
    opt = burn.optim.SGD([w], lr=0.1)
    sched = burn.optim.ReduceLROnPlateau(opt)

    def step(x):
        loss = (w * x).sum()
        opt.step(loss.backward())
        sched.step(1.0)
        return loss
    with pytest.raises(burn.CaptureError, match="ReduceLROnPlateau.step inside a captured function"):
        burn.capture.trace(step, burn.ones((2,), device=dev))


_CONTINUE = """
import sys, json, numpy as np, burn
xs, ys = np.load(sys.argv[1]), np.load(sys.argv[2])
out = {}
for path in sys.argv[3:]:
    g = burn.Graph.load(path, device=burn.Device.flex().autodiff())
    dev = g.device.autodiff()
    losses = [g(burn.tensor(x, device=dev), burn.tensor(y, device=dev)).item() for x, y in zip(xs, ys)]
    out[path] = {"losses": losses, "state": {k: t.numpy().tolist() for k, t in g.state_tensors.items()}}
print(json.dumps(out))
"""

FRESH = {"adam": lambda m: burn.optim.Adam(m, lr=1e-2),
         "adagrad": lambda m: burn.optim.Adagrad(m, lr=0.1, lr_decay=0.1),
         "sgd-momentum": lambda m: burn.optim.SGD(m, lr=0.05, momentum=0.9),
         "rmsprop-clip": OPTIMIZERS["rmsprop-clip-norm"]}


def test_a_saved_training_step_continues_in_a_fresh_process_without_binding(tmp_path):
    xs, ys = _data(10)
    np.save(tmp_path / "x.npy", xs[4:])
    np.save(tmp_path / "y.npy", ys[4:])
    wants, paths = {}, []
    for name, opt_fn in FRESH.items():
        dev = burn.Device.flex().autodiff()
        model = nn.Sequential(nn.Linear(16, 8, device=dev), nn.ReLU(), nn.Linear(8, 5, device=dev))
        opt = opt_fn(model)

        def step(x, y, model=model, opt=opt):
            loss = F.cross_entropy(model(x), y)
            opt.step(loss.backward())
            return loss
        step = burn.capture(step)
        for x, y in zip(xs[:4], ys[:4]):                       # warm-up, trace, 2 replays
            step(burn.tensor(x, device=dev), burn.tensor(y, device=dev))
        g = step.graph(burn.tensor(xs[0], device=dev), burn.tensor(ys[0], device=dev))
        assert g.hosts and all(r is not None for r in g.host_recipes), name
        path = str(tmp_path / f"{name}.burngraph")
        g.save(path)
        paths.append(path)
        losses = [step(burn.tensor(x, device=dev), burn.tensor(y, device=dev)).item() for x, y in zip(xs[4:], ys[4:])]
        wants[path] = (name, losses, {k: t.numpy() for k, t in g.state_tensors.items()})
    out = subprocess.run([sys.executable, "-c", _CONTINUE, str(tmp_path / "x.npy"), str(tmp_path / "y.npy"), *paths],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    for path, (name, losses, state) in wants.items():
        assert got[path]["losses"] == losses, name          # the step counts went on from the saved ones
        for k, v in state.items():
            np.testing.assert_array_equal(np.asarray(got[path]["state"][k], np.float32), v, err_msg=f"{name} {k}")


def test_a_loaded_graph_with_a_host_value_of_no_recipe_names_what_to_bind(tmp_path):
    def f(x):
        a = burn.capture.host_value(lambda: np.float32(2.0), name="scale")
        return x * a + burn.capture.host_value(lambda: np.float32(1.0), name="scale")
    g = burn.capture.trace(f, burn.ones((2,)))
    assert [h.name for h in g.hosts] == ["scale", "scale#2"]
    g.save(tmp_path / "h.burngraph")
    h = burn.Graph.load(tmp_path / "h.burngraph")
    with pytest.raises(burn.CaptureError) as e:
        h(burn.ones((2,)))
    msg = str(e.value)
    assert "'scale', 'scale#2'" in msg and "g.bind_host('scale', fn)" in msg and "g.bind_host('scale#2', fn)" in msg
    h.bind_host("scale", lambda: np.float32(3.0))
    h.bind_host("scale#2", lambda: np.float32(0.5))
    assert h(burn.ones((2,))).tolist() == [3.5, 3.5]
