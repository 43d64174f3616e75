"""burn.capture: what is traced, what is state, when it retraces, and the errors.

Replayed results are compared with eager calls of the same function (same kernels: equal),
and with numpy where a value is computed by hand."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import burn


def test_replay_reads_new_inputs_and_current_state():
    w = burn.tensor([1.0, 2.0, 3.0])
    g = burn.capture.trace(lambda x: (x * w).exp().sum(axis=0), burn.ones((3,)))
    x = np.array([0.5, -1.0, 0.25], np.float32)
    assert np.allclose(g(burn.tensor(x)).item(), np.exp(x * [1, 2, 3]).sum(), rtol=1e-6)
    w.assign_(burn.tensor([0.0, 0.0, 1.0]))      # eager update between replays: state is read at replay
    assert np.allclose(g(burn.tensor(x)).item(), np.exp(x * [0, 0, 1]).sum(), rtol=1e-6)
    assert [s.name for s in g.state] == ["w"] and not g.consts


def test_print_shows_one_line_per_node():
    g = burn.capture.trace(lambda a, b: (a @ b).relu() + 1.0, burn.ones((2, 3)), burn.ones((3, 4)))
    lines = str(g).splitlines()
    body = [ln for ln in lines if ln.strip().startswith("%")]
    assert [ln.split("=")[1].split("(")[0].strip() for ln in body] == ["matmul", "relu", "add"]
    assert "float32[2, 4]" in body[0] and lines[-1].strip() == "return %2"


def test_in_place_updates_are_replayed_like_assign():
    state = burn.zeros((2,))
    buf = burn.zeros((4,))
    view = buf[1:3]

    def f(x):
        state.assign_(state + x)     # assign_
        view[...] = x * 2            # a write through a view: reaches its base
        return state * 1

    fn = burn.capture(f)
    outs = [fn(burn.tensor([1.0, 2.0])).tolist() for _ in range(3)]
    assert outs == [[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]] and fn.cache_info()["replays"] == 2
    assert state.tolist() == [3.0, 6.0] and buf.tolist() == [0.0, 2.0, 4.0, 0.0] and view.tolist() == [2.0, 4.0]


def test_argument_updated_in_place_is_updated_on_replay():
    g = burn.capture.trace(lambda x: x.__iadd__(1.0) * 1, burn.zeros((2,)))
    a = burn.tensor([5.0, 6.0])
    assert g(a).tolist() == [6.0, 7.0] and a.tolist() == [6.0, 7.0]


def test_laziness_a_replayed_value_is_the_value_at_replay_time():
    w = burn.tensor([1.0])
    g = burn.capture.trace(lambda x: x * w, burn.ones((1,)))
    y = g(burn.tensor([2.0]))
    w.assign_(burn.tensor([100.0]))
    assert y.item() == 2.0


def test_random_ops_draw_fresh_numbers_from_the_eager_stream():
    dev = burn.Device.flex()
    f = lambda x: x + burn.rand((4,), device=dev)      # noqa: E731
    g = burn.capture.trace(f, burn.zeros((4,)))
    dev.seed(3)
    replayed = [g(burn.zeros((4,))).numpy().copy() for _ in range(3)]
    dev.seed(3)
    eager = [f(burn.zeros((4,))).numpy().copy() for _ in range(3)]
    assert not np.array_equal(replayed[0], replayed[1])
    for a, b in zip(replayed, eager):
        np.testing.assert_array_equal(a, b)


def test_new_shape_traces_again_and_the_bound_is_enforced():
    fn = burn.capture(lambda x: x.sum(), max_traces=2)
    assert fn(burn.ones((2,))).item() == 2.0 and fn(burn.ones((3,))).item() == 3.0
    assert fn(burn.ones((2,))).item() == 2.0
    assert fn.cache_info() == {"traces": 2, "replays": 1, "graphs": 2}
    with pytest.raises(burn.CaptureError, match="max_traces=2") as e:
        fn(burn.ones((4,)))
    assert "float32[4]" in str(e.value) and "float32[2]" in str(e.value)


def test_static_arguments_are_part_of_the_key():
    fn = burn.capture(lambda x, k: x * k)
    assert fn(burn.ones((1,)), 2.0).item() == 2.0
    assert fn(burn.ones((1,)), 3.0).item() == 3.0 and fn.cache_info()["traces"] == 2


@pytest.mark.parametrize("reader,needle", [
    (lambda y: y.item(), "t.item()"), (lambda y: float(y), "float(t)"), (lambda y: bool(y > 0), "bool(t)"),
    (lambda y: y.numpy(), "t.numpy()"), (lambda y: y.tolist(), "t.tolist()"),
    (lambda y: burn.nonzero(y.reshape((1,))), "'nonzero'"),
    (lambda y: burn.ones((3,))[burn.ones((3,)) > y], "getitem"),
])
def test_reading_a_value_in_a_trace_raises_capture_error(reader, needle):
    def f(x):
        return reader((x * 2).sum())
    with pytest.raises(burn.CaptureError) as e:
        burn.capture.trace(f, burn.ones((3,)))
    msg = str(e.value)
    assert needle in msg and "traced function" in msg
    assert burn.ones((2,)).tolist() == [1.0, 1.0]       # burn works normally after the failed trace


def test_returning_a_python_number_is_an_error_with_advice():
    with pytest.raises(burn.CaptureError, match="return loss"):
        burn.capture.trace(lambda x: 3.0 + x.sum() * 0 if False else 3.0, burn.ones((1,)))


def test_guard_retraces_a_decorated_function():
    cfg = {"k": 2.0}

    @burn.capture
    def f(x):
        burn.capture.guard(lambda: cfg["k"], "k")
        return x * cfg["k"]
    assert f(burn.ones((1,))).item() == 2.0 and f(burn.ones((1,))).item() == 2.0
    cfg["k"] = 5.0
    assert f(burn.ones((1,))).item() == 5.0 and f.cache_info()["traces"] == 2


def _mlp(dev, dropout):
    nn = burn.nn
    return nn.Sequential(nn.Linear(64, 32, device=dev), nn.ReLU(), nn.Dropout(dropout),
                         nn.Linear(32, 32, device=dev), nn.ReLU(), nn.Linear(32, 10, device=dev))


def _train(model_fn, opt_fn, xs, ys, captured, seed=0):
    import burn.nn.functional as F
    dev = burn.Device.flex().autodiff()
    dev.seed(seed)
    model = model_fn(dev)
    opt = opt_fn(model)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss
    fn = burn.capture(step) if captured else step
    losses = [fn(burn.tensor(x, device=dev), burn.tensor(y, device=dev)) for x, y in zip(xs, ys)]
    return [v.item() for v in losses], [p.numpy().copy() for p in model.parameters()], fn


@pytest.mark.parametrize("opt_fn", [lambda m: burn.optim.Adam(m, lr=3e-3),
                                    lambda m: burn.optim.AdamW(m, lr=3e-3, weight_decay=0.1),
                                    lambda m: burn.optim.SGD(m, lr=0.05, momentum=0.9)],
                         ids=["adam", "adamw", "sgd-momentum"])
def test_50_captured_training_steps_with_dropout_equal_eager(opt_fn):
    rng = np.random.default_rng(0)
    xs = rng.random((50, 16, 64), dtype=np.float32)
    ys = (xs @ rng.standard_normal((64, 10))).argmax(-1)        # a learnable labelling
    eager = _train(lambda d: _mlp(d, 0.2), opt_fn, xs, ys, captured=False)
    cap = _train(lambda d: _mlp(d, 0.2), opt_fn, xs, ys, captured=True)
    assert cap[2].cache_info() == {"traces": 2, "replays": 48, "graphs": 1}   # first call: warm-up
    assert eager[0] == cap[0] and eager[0][-1] < eager[0][0]
    for a, b in zip(eager[1], cap[1]):
        np.testing.assert_array_equal(a, b)


def test_captured_cnn_with_batchnorm_trains_like_eager():
    nn = burn.nn

    def cnn(dev):
        return nn.Sequential(nn.Conv2d(1, 4, 3, padding=1, device=dev), nn.BatchNorm2d(4, device=dev), nn.ReLU(),
                             nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), nn.Linear(4 * 4 * 4, 10, device=dev))
    rng = np.random.default_rng(1)
    xs, ys = rng.random((12, 8, 1, 8, 8), dtype=np.float32), rng.integers(0, 10, (12, 8))
    eager = _train(cnn, lambda m: burn.optim.Adam(m, lr=1e-2), xs, ys, captured=False)
    cap = _train(cnn, lambda m: burn.optim.Adam(m, lr=1e-2), xs, ys, captured=True)
    assert eager[0] == cap[0]
    for a, b in zip(eager[1], cap[1]):
        np.testing.assert_array_equal(a, b)


def test_saved_graph_replays_in_a_fresh_process(tmp_path):
    w = burn.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    g = burn.capture.trace(lambda x: burn.softmax(x @ w, axis=-1) * 2.0, burn.ones((2, 3)))
    path = tmp_path / "g.burngraph"
    g.save(path)
    x = np.arange(6, dtype=np.float32).reshape(2, 3) / 5
    want = g(burn.tensor(x)).numpy()
    code = ("import sys, json, numpy as np, burn\n"
            "g = burn.Graph.load(sys.argv[1])\n"
            "x = np.arange(6, dtype=np.float32).reshape(2, 3) / 5\n"
            "print(json.dumps({'y': g(burn.tensor(x)).numpy().tolist(), 'ops': g.ops()}))\n")
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["ops"] == g.ops()
    np.testing.assert_array_equal(np.asarray(got["y"], np.float32), want)


def test_saved_training_step_round_trips_state_and_random_nodes(tmp_path):
    dev = burn.Device.flex().autodiff()
    w = burn.nn.Parameter(burn.tensor([[0.5, -0.5], [0.25, 1.0]], device=dev))
    opt = burn.optim.SGD([w], lr=0.1)

    def step(x):
        loss = burn.nn.functional.dropout(x @ w, 0.5, training=True).sum()
        opt.step(loss.backward())
        return loss
    g = burn.capture.trace(step, burn.ones((2, 2), device=dev))
    g.save(tmp_path / "s.burngraph")
    h = burn.Graph.load(tmp_path / "s.burngraph", device=dev)
    assert h.ops() == g.ops() and [s.name for s in h.state] == [s.name for s in g.state]
    np.testing.assert_array_equal(h.state_tensors[g.state[0].name].numpy(), w.numpy())
    x = burn.ones((2, 2), device=dev)
    dev.seed(5)
    a = g(x).item()
    dev.seed(5)
    b = h(x).item()
    assert a == b
    np.testing.assert_array_equal(h.state_tensors[g.state[0].name].numpy(), w.numpy())


def test_a_graph_with_an_unknown_extension_op_fails_to_load_naming_its_plugin(tmp_path):
    g = burn.capture.trace(lambda x, w, b: burn.nn.functional.linear_relu(x, w, b),
                           burn.ones((2, 3)), burn.ones((3, 4)), burn.ones((4,)))
    op = next(n.op for n in g.nodes if "::" in n.op)
    path = tmp_path / "ext.burngraph"
    g.save(path)
    # the file as written by a process where a third-party plugin registered the op
    import safetensors.numpy
    raw = safetensors.numpy.load_file(str(path))
    with open(path, "rb") as f:
        import safetensors
        meta = safetensors.safe_open(str(path), framework="numpy").metadata()
    doc = json.loads(meta["burn.graph"])
    for n in doc["nodes"]:
        if n["op"] == op:
            n["op"] = "acme::fused_linear"
    doc["ops"] = {"acme::fused_linear": {"plugin": "acme", "distribution": "burn-acme"}}
    safetensors.numpy.save_file(raw, str(path), metadata={"burn.graph": json.dumps(doc)})
    with pytest.raises(burn.CaptureError) as e:
        burn.Graph.load(path)
    msg = str(e.value)
    assert "acme::fused_linear" in msg and "pip install burn-acme" in msg and "plugin 'acme'" in msg


def test_graph_file_is_not_pickle_and_has_a_version(tmp_path):
    g = burn.capture.trace(lambda x: x.exp(), burn.ones((2,)))
    g.save(tmp_path / "v.burngraph")
    import safetensors
    meta = safetensors.safe_open(str(tmp_path / "v.burngraph"), framework="numpy").metadata()
    doc = json.loads(meta["burn.graph"])
    assert doc["format"] == "burn.graph" and doc["version"] == burn.Graph.VERSION
    doc["version"] = burn.Graph.VERSION + 1
    import safetensors.numpy
    safetensors.numpy.save_file({}, str(tmp_path / "new.burngraph"), metadata={"burn.graph": json.dumps(doc)})
    with pytest.raises(burn.CaptureError, match="upgrade burn"):
        burn.Graph.load(tmp_path / "new.burngraph")


class _Holder:
    pass


def test_state_held_by_any_live_tensor_is_read_at_replay():
    holder = _Holder()
    holder.scale = burn.tensor([2.0])       # not reachable by name from the function's code

    def make():
        h = holder
        return lambda x: x * h.scale
    g = burn.capture.trace(make(), burn.ones((1,)))
    assert len(g.state) == 1 and not g.consts
    holder.scale.assign_(burn.tensor([7.0]))
    assert g(burn.ones((1,))).item() == 7.0
    inside = burn.capture.trace(lambda x: x * burn.tensor([3.0]), burn.ones((1,)))   # made in the call
    assert len(inside.consts) == 1 and not inside.state
