"""flex's native replay programs (burn_flex.native_replay): a captured inference graph of direct
convolutions, reshapes, matmuls and compiled element-wise groups replays as native call tables,
with the Python replay's bits (BURN_FLEX_NATIVE_REPLAY=0), on one thread and with its images split
over two; results are fresh arrays per replay, changed weights are packed again, sources of
another layout and steps without a native form run the Python steps."""
from __future__ import annotations

import threading
import warnings

import numpy as np
import pytest

import burn
from burn_flex import jit, native_replay
from burn_flex.replay import FlatReplay
from thread_runs import on_one_and_two_threads


@pytest.fixture(autouse=True)
def _jit():
    if jit.kernels() is None:
        pytest.skip("flex's JIT is unavailable: programs call JIT kernels")


def _cnn(seed=0):
    burn.Device.flex().seed(seed)
    nn = burn.nn
    return nn.Sequential(nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                         nn.Linear(128, 64), nn.ReLU(), nn.Linear(64, 10))


def _x(n, seed=1):
    return burn.tensor(np.random.default_rng(seed).standard_normal((n, 1, 8, 8)).astype(np.float32))


def _runner(g) -> FlatReplay:
    return g._prepared["flex"].runners[0]


def _same_bits(a, b):
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def _python_replay(fn, xs, monkeypatch):
    with monkeypatch.context() as m:
        m.setenv("BURN_FLEX_NATIVE_REPLAY", "0")
        g = burn.capture.trace(fn, xs[0])
        out = [g(x).numpy() for x in xs]
        assert "steps in Python: BURN_FLEX_NATIVE_REPLAY=0" in _runner(g).describe()
    return out


@pytest.mark.parametrize("batch", [64, 37, 2])
def test_a_cnn_replays_as_one_program_with_the_python_replays_bits(batch, monkeypatch):
    model = _cnn()
    xs = [_x(batch, s) for s in range(3)]
    want = _python_replay(model, xs, monkeypatch)

    def replays():
        g = burn.capture.trace(model, xs[0])
        out = [g(x).numpy() for x in xs]
        assert _runner(g).describe().endswith("of arena))"), _runner(g).describe()
        assert isinstance(_runner(g).program, native_replay.Program)
        return out

    one, two = on_one_and_two_threads(replays)
    for a, b, w in zip(one, two, want):
        _same_bits(a, w)
        _same_bits(b, w)
    eager = model(xs[2]).numpy()
    np.testing.assert_allclose(want[2], eager, rtol=1e-5, atol=1e-6)


def test_the_split_segment_runs_on_the_worker_and_gives_the_same_bits(monkeypatch):
    from burn_flex import native_pool, threads
    model = _cnn(3)
    x = _x(64, 5)
    want = _python_replay(model, [x], monkeypatch)[0]
    before = threads.num_threads()
    try:
        threads.set_num_threads(2)
        p = native_pool.pool()
        if p is None:
            pytest.skip("no native pool here")
        g = burn.capture.trace(model, x)
        g(x)
        prog = _runner(g).program
        assert [(items, macs >= native_replay.SPLIT_MACS) for _, items, macs, _ in prog.segments] == \
            [(64, True), (None, False)]
        chunks = p._kernels.workers.worker_chunks()
        for _ in range(200):
            _same_bits(g(x).numpy(), want)
        assert p._kernels.workers.worker_chunks() > chunks    # the worker ran some of the images
    finally:
        threads.set_num_threads(before)


def test_results_are_fresh_arrays_and_earlier_results_keep_their_values():
    model = _cnn()
    x1, x2 = _x(8, 1), _x(8, 2)
    g = burn.capture.trace(model, x1)
    g(x1)
    y1 = g(x1)
    first = y1.numpy().copy()
    y2 = g(x2)
    assert isinstance(_runner(g).program, native_replay.Program)
    _same_bits(y1.numpy(), first)
    assert not np.array_equal(y2.numpy(), first)


def test_weights_changed_in_place_are_packed_again():
    rng = np.random.default_rng(0)
    w = burn.tensor(rng.standard_normal((8, 3, 3, 3)).astype(np.float32))
    b = burn.tensor(rng.standard_normal(8).astype(np.float32))
    x = burn.tensor(rng.standard_normal((16, 3, 6, 6)).astype(np.float32))

    def f(x):
        return burn.nn.functional.max_pool2d(burn.nn.functional.conv2d(x, w, b, padding=1).relu(), 2)

    g = burn.capture.trace(f, x)
    g(x)
    _same_bits(g(x).numpy(), f(x).numpy())
    assert isinstance(_runner(g).program, native_replay.Program)
    w[0] = w[0] * -2.0                      # the same tensor, other values
    _same_bits(g(x).numpy(), f(x).numpy())
    b[3] = 5.0                              # 8 channels: the bias is copied into 16 lanes per replay
    _same_bits(g(x).numpy(), f(x).numpy())


def test_a_strided_input_runs_the_python_steps_and_is_right():
    model = _cnn()
    x = _x(8)
    g = burn.capture.trace(model, x)
    g(x)
    g(x)
    prog = _runner(g).program
    assert isinstance(prog, native_replay.Program)
    wide = burn.tensor(np.random.default_rng(3).standard_normal((8, 1, 8, 16)).astype(np.float32))
    strided = wide[:, :, :, ::2]
    assert strided.shape == (8, 1, 8, 8)
    got = g(strided).numpy()
    np.testing.assert_allclose(got, model(strided).numpy(), rtol=1e-5, atol=1e-6)
    assert _runner(g).program is prog                    # still the program for the usual layout


def test_switching_the_direct_kernel_off_runs_the_python_steps(monkeypatch):
    from burn_flex.kernels import conv_direct
    model = _cnn()
    x = _x(8)
    g = burn.capture.trace(model, x)
    g(x)
    on = g(x).numpy()
    monkeypatch.setattr(conv_direct, "ENABLED", False)     # im2col + GEMM: the eager path then
    np.testing.assert_allclose(g(x).numpy(), on, rtol=1e-5, atol=1e-6)
    _same_bits(g(x).numpy(), model(x).numpy())
    monkeypatch.setattr(conv_direct, "ENABLED", True)
    _same_bits(g(x).numpy(), on)


def test_strided_weights_do_not_lower_and_are_right():
    rng = np.random.default_rng(2)
    w = burn.tensor(rng.standard_normal((3, 3, 4, 8)).astype(np.float32)).permute((3, 2, 0, 1))
    b = burn.tensor(rng.standard_normal(8).astype(np.float32))
    x = burn.tensor(rng.standard_normal((16, 4, 6, 6)).astype(np.float32))

    def f(x):
        return burn.nn.functional.conv2d(x, w, b, padding=1).relu()

    g = burn.capture.trace(f, x)
    g(x)
    d = _runner(g).describe()
    assert "steps in Python:" in d, d
    _same_bits(g(x).numpy(), f(x).numpy())


def test_a_graph_with_more_values_than_an_arena_keeps_runs_in_python(monkeypatch):
    monkeypatch.setattr(native_replay, "MAX_ARENA_BYTES", 64 * 1024)
    model = _cnn()
    x = _x(16)
    g = burn.capture.trace(model, x)
    g(x)
    d = _runner(g).describe()
    assert "more than a program keeps (0 MiB)" in d, d
    _same_bits(g(x).numpy(), model(x).numpy())


def test_steps_without_a_native_form_say_why():
    x = burn.tensor(np.linspace(-1, 1, 64 * 96, dtype=np.float32).reshape(64, 96))
    g = burn.capture.trace(lambda x: x.exp().sum(axis=1), x)
    g(x)
    d = _runner(g).describe()
    assert "steps in Python: a group whose ops do not compile" in d, d
    np.testing.assert_allclose(g(x).numpy(), np.exp(x.numpy()).sum(axis=1), rtol=1e-5)


def test_an_mlp_lowers_its_matmuls_with_numpys_bits(monkeypatch):
    burn.Device.flex().seed(4)
    nn = burn.nn
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10))
    xs = [burn.tensor(np.random.default_rng(s).standard_normal((32, 64)).astype(np.float32)) for s in range(2)]
    want = _python_replay(model, xs, monkeypatch)
    g = burn.capture.trace(model, xs[0])
    got = [g(x).numpy() for x in xs]
    assert isinstance(_runner(g).program, native_replay.Program), _runner(g).describe()
    for a, b in zip(got, want):
        _same_bits(a, b)


@pytest.mark.parametrize("batch,d_out", [(1, 10), (5, 1), (1, 1), (3, 7)])
@pytest.mark.parametrize("layout", ["weights", "transposed"])
def test_matmuls_of_one_row_or_column_take_numpys_blas_call(batch, d_out, layout, monkeypatch):
    """numpy computes a vector @ matrix and a matrix @ vector with gemv, a row @ column with a dot:
    a program calls what numpy calls (or leaves the step to Python), so the bits are numpy's."""
    rng = np.random.default_rng(batch * 10 + d_out)
    w = rng.standard_normal((24, d_out)).astype(np.float32)
    w = burn.tensor(w) if layout == "weights" else burn.tensor(np.ascontiguousarray(w.T)).permute((1, 0))
    b = burn.tensor(rng.standard_normal(d_out).astype(np.float32))
    w1 = burn.tensor(rng.standard_normal((16, 24)).astype(np.float32))
    b1 = burn.tensor(rng.standard_normal(24).astype(np.float32))

    def f(x):
        return ((x @ w1 + b1).relu() @ w + b).relu()

    xs = [burn.tensor(rng.standard_normal((batch, 16)).astype(np.float32)) for _ in range(2)]
    want = _python_replay(f, xs, monkeypatch)
    g = burn.capture.trace(f, xs[0])
    got = [g(x).numpy() for x in xs]
    for a, ref in zip(got, want):
        _same_bits(a, ref)
    lowered = isinstance(_runner(g).program, native_replay.Program)
    assert lowered == (not (batch == 1 and d_out == 1)), _runner(g).describe()


def test_a_matrix_times_its_own_transpose_runs_in_python(monkeypatch):
    """numpy's matmul takes syrk for ``a @ a.T`` (one buffer): a program whose two matmul operands
    are sources checks that they are not one array, and leaves that replay to Python."""
    rng = np.random.default_rng(7)
    a = burn.tensor(rng.standard_normal((32, 48)).astype(np.float32))
    other = burn.tensor(rng.standard_normal((48, 32)).astype(np.float32))

    def f(x, y):
        return (x @ y + 1.0).relu()

    g = burn.capture.trace(f, a, other)
    g(a, other)
    assert isinstance(_runner(g).program, native_replay.Program), _runner(g).describe()
    _same_bits(g(a, other).numpy(), f(a, other).numpy())
    at = a.T
    _same_bits(g(a, at).numpy(), np.maximum(a.numpy() @ a.numpy().T + np.float32(1.0), 0))


@pytest.mark.parametrize("native", ["1", "0"])
def test_two_threads_replaying_one_graph_at_once_get_their_own_results(native, monkeypatch):
    monkeypatch.setenv("BURN_FLEX_NATIVE_REPLAY", native)
    model = _cnn()
    xs = [_x(16, s) for s in range(4)]
    g = burn.capture.trace(model, xs[0])
    g(xs[0])
    want = [model(x).numpy() for x in xs]
    errors = []

    def worker(k):
        try:
            for _ in range(30):
                np.testing.assert_allclose(g(xs[k]).numpy(), want[k], rtol=1e-5, atol=1e-6)
        except Exception as e:          # noqa: BLE001 - reported below
            errors.append(e)

    ts = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_a_program_that_does_not_reproduce_the_python_steps_is_dropped_with_a_warning(monkeypatch):
    real = native_replay.Program.run

    def wrong(self, env):
        outs = real(self, env)
        return None if outs is None else [o + 1 for o in outs]

    monkeypatch.setattr(native_replay.Program, "run", wrong)
    model = _cnn()
    x = _x(8)
    g = burn.capture.trace(model, x)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g(x)
    assert any("native calls gave other results" in str(w.message) for w in caught)
    assert "did not reproduce" in _runner(g).describe()
    np.testing.assert_allclose(g(x).numpy(), model(x).numpy(), rtol=1e-5, atol=1e-6)
