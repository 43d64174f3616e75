"""flex's worker pool (burn_flex.threads) and the kernels that use it: each parallel kernel run
with one and with several threads, compared exactly (or within the accuracy bounds where the
summation order changes: full float sums); errors in workers propagate; nested parallel_for
does not deadlock; BLAS is pinned to one thread inside ``blas=True`` regions;
``burn.set_num_threads`` reaches BLAS and the backends.

The size thresholds are lowered in these tests so that small arrays already split."""
from __future__ import annotations

import threading

import numpy as np
import pytest
import torch
from threadpoolctl import threadpool_info

import burn
from burn.nn import functional as F
from burn.optim.optimizer import adam_update, sgd_update
from burn_flex import fused, threads
from burn_flex.kernels import nn as knn, optim as koptim, reduce as kreduce

AD = burn.Device.flex().autodiff()


@pytest.fixture
def restore_threads():
    n = threads.num_threads()
    yield
    threads.set_num_threads(n)


@pytest.fixture
def small_thresholds(monkeypatch, restore_threads):
    monkeypatch.setattr(kreduce, "PAR_REDUCE", 64)
    monkeypatch.setattr(koptim, "PAR_OPTIM", 16)
    monkeypatch.setattr(knn, "PAR_ROWS", 32)
    monkeypatch.setattr(fused, "PAR_WHOLE", 256)
    monkeypatch.setattr(fused, "PAR_BLOCKS", 1)
    # BLAS chunks (softmax rows, conv images) run on the pool here, so its split is what is compared
    monkeypatch.setattr(threads, "BLAS_CHUNKS_PARALLEL", True)


def _both(fn):
    """fn() with one flex thread and with four (more chunks than this machine's cores); the
    second run must have used the pool."""
    threads.set_num_threads(1)
    one = fn()
    threads.set_num_threads(4)
    before = threads.stats["regions"]
    several = fn()
    assert threads.stats["regions"] > before, "nothing ran on the pool"
    return one, several


def _equal(a, b):
    a, b = (a,) if not isinstance(a, tuple) else a, (b,) if not isinstance(b, tuple) else b
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y)


# -- the pool ------------------------------------------------------------------------------

def test_parallel_for_covers_every_item_once(restore_threads):
    threads.set_num_threads(3)
    seen = np.zeros(1000, np.int64)
    names = set()

    def work(a, b):
        seen[a:b] += 1
        names.add(threading.current_thread().name.startswith("burn-flex"))
    threads.parallel_for(1000, work, min_chunk=10)
    assert (seen == 1).all() and names == {True, False}     # the caller ran a chunk, workers the rest
    calls = []
    threads.parallel_for(15, lambda a, b: calls.append((a, b)), min_chunk=10)   # under two chunks: inline
    assert calls == [(0, 15)]


@pytest.mark.parametrize("bad_chunk", [0, 2])
def test_worker_errors_propagate_after_every_chunk_finished(restore_threads, bad_chunk):
    threads.set_num_threads(3)
    done = []

    def work(a, b):
        if a == [0, 100, 200][bad_chunk]:
            raise KeyError(f"chunk {a}")
        done.append(a)
    with pytest.raises(KeyError, match=f"chunk {[0, 100, 200][bad_chunk]}"):
        threads.parallel_for(300, work, min_chunk=100)
    assert len(done) == 2
    # the pool still works afterwards
    out = np.zeros(300)
    threads.parallel_for(300, lambda a, b: out.__setitem__(slice(a, b), 1.0), min_chunk=100)
    assert out.sum() == 300


def test_pieces_cover_every_item_once_and_a_slow_thread_costs_one_piece(restore_threads):
    import time
    threads.set_num_threads(2)
    seen = np.zeros(1000, np.int64)
    by = {}

    def work(a, b):
        me = threading.current_thread().name
        if me.startswith("burn-flex") and not by.get(me):
            time.sleep(0.5)                # a worker that lost its core: the caller takes the rest
        else:
            time.sleep(0.005)              # (lets the worker wake up and take its first piece)
        seen[a:b] += 1
        by.setdefault(me, []).append((a, b))
    threads.parallel_for(1000, work, min_chunk=10, pieces=8)
    assert (seen == 1).all()
    sizes = sorted(b - a for p in by.values() for a, b in p)
    assert len(sizes) == 16 and sizes[0] >= 62, sizes        # ~8 pieces per thread, fixed bounds
    worker = [p for name, p in by.items() if name.startswith("burn-flex")]
    assert len(worker) == 1 and len(worker[0]) == 1, by       # the slow worker ran one piece
    # at most min_chunk-sized pieces; and errors stop the hand-out and propagate
    calls = []
    threads.parallel_for(40, lambda a, b: calls.append(b - a), min_chunk=10, pieces=8)
    assert sorted(calls) == [10, 10, 10, 10]

    def bad(a, b):
        if a == 0:
            raise KeyError("piece 0")
    with pytest.raises(KeyError, match="piece 0"):
        threads.parallel_for(1000, bad, min_chunk=10, pieces=8)


def test_nested_parallel_for_does_not_deadlock(restore_threads):
    threads.set_num_threads(2)
    out = np.zeros((8, 64))

    def inner(row):
        def work(a, b):
            out[row, a:b] += 1
        threads.parallel_for(64, work, min_chunk=1)

    def outer(a, b):
        for row in range(a, b):
            inner(row)
    t = threading.Thread(target=lambda: threads.parallel_for(8, outer, min_chunk=1), daemon=True)
    t.start()
    t.join(timeout=20)
    assert not t.is_alive(), "nested parallel_for deadlocked"
    assert (out == 1).all()


def test_chunk_scale_keeps_small_inputs_on_the_calling_thread(restore_threads, monkeypatch):
    threads.set_num_threads(2)
    calls = []
    monkeypatch.setattr(threads, "CHUNK_SCALE", 8)
    threads.parallel_for(15, lambda a, b: calls.append((a, b)), min_chunk=1)     # < 2 * 8 items
    assert calls == [(0, 15)]
    calls.clear()
    threads.parallel_for(16, lambda a, b: calls.append((a, b)), min_chunk=1)
    assert sorted(calls) == [(0, 8), (8, 16)]


@pytest.mark.parametrize("var, parse, bad, good, want", [
    ("BURN_FLEX_THREADS", "_threads_from_environment", "many", "3", 3),
    ("BURN_FLEX_CHUNK_SCALE", "_chunk_scale_from_environment", "0", "3", 3),
    ("BURN_FLEX_BLAS_CHUNKS", "_blas_chunks_from_environment", "sometimes", "parallel", True),
])
def test_environment_settings_parse_or_say_what_they_expect(monkeypatch, var, parse, bad, good, want):
    monkeypatch.setenv(var, bad)
    with pytest.raises(ValueError, match=f"{var}='{bad}': expected"):
        getattr(threads, parse)()
    monkeypatch.setenv(var, good)
    assert getattr(threads, parse)() == want


def test_blas_chunks_run_on_the_calling_thread_by_default(restore_threads, monkeypatch):
    # numpy's OpenBLAS serializes concurrent calls: BLAS chunks stay inline (threads docstring)
    monkeypatch.setattr(threads, "BLAS_CHUNKS_PARALLEL", False)
    threads.set_num_threads(2)
    calls = []
    before = threads.stats["regions"]
    threads.parallel_for(8, lambda a, b: calls.append((a, b, threading.current_thread().name)), min_chunk=1,
                         blas=True)
    assert calls == [(0, 8, threading.current_thread().name)]
    assert threads.stats["regions"] == before


def test_blas_is_pinned_to_one_thread_inside_blas_regions(restore_threads, monkeypatch):
    if threads.blas_threads() is None:
        pytest.skip("threadpoolctl finds no BLAS library")
    monkeypatch.setattr(threads, "BLAS_CHUNKS_PARALLEL", True)
    threads.set_num_threads(2)
    libs = threads._blas_pin.libs()
    before = [c.get_num_threads() for c in libs]
    seen = []
    threads.parallel_for(4, lambda a, b: seen.append(threads.blas_threads()), min_chunk=1, blas=True)
    assert seen == [1, 1]
    assert [c.get_num_threads() for c in libs] == before


def test_thread_count_errors_are_clear(monkeypatch, restore_threads):
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="set_num_threads"):
            threads.set_num_threads(bad)
        with pytest.raises(ValueError, match="burn.set_num_threads"):
            burn.set_num_threads(bad)


def test_burn_set_num_threads_reaches_blas_flex_and_later_backends(monkeypatch, restore_threads):
    import burn.backend as core_backend
    from burn.dispatch import registry

    class Recorder(burn.Backend):
        name = "threadrec"
        got = []

        def set_num_threads(self, n):
            self.got.append(n)
    monkeypatch.setattr(core_backend, "_REQUESTED_THREADS", [core_backend._REQUESTED_THREADS[0]])
    blas = [i for i in threadpool_info() if i["user_api"] == "blas"]
    old_blas = blas[0]["num_threads"] if blas else None
    burn.Device.flex().backend                  # started: the call reaches it at once
    try:
        burn.set_num_threads(1)
        assert burn.get_num_threads() == 1 and threads.num_threads() == 1
        assert burn.Device.flex().backend.num_threads() == 1
        if blas:
            assert all(i["num_threads"] == 1 for i in threadpool_info() if i["user_api"] == "blas")
        # a backend that starts after the call gets the count as it starts
        registry.register_backend("threadrec", Recorder, plugin="test")
        try:
            assert registry.try_backend("threadrec").got == [1]
            burn.set_num_threads(3)
            assert Recorder.got == [1, 3] and threads.num_threads() == 3
        finally:
            registry.backends.pop("threadrec", None)
        assert "3 flex threads" in burn.Device.flex().backend.describe_devices()[0]
    finally:
        if old_blas is not None:
            from threadpoolctl import threadpool_limits
            threadpool_limits(old_blas, user_api="blas")


# -- kernels: one thread against several -------------------------------------------------

def test_fused_elementwise_blocks_equal_across_thread_counts(small_thresholds):
    r = np.random.default_rng(0)
    x = burn.tensor((r.standard_normal(9 * fused.BLOCK + 123) * 3).astype(np.float32))
    b = burn.tensor(r.standard_normal((1, 700)).astype(np.float32))
    y2 = burn.tensor(r.standard_normal((600, 700)).astype(np.float32))

    def run():
        flat = (((-x.abs()).exp().log1p() + x.tanh() ** 2).sqrt() - x * 0.5).numpy()
        rows = F.gelu(y2 * 2.0 + b).numpy()          # bias broadcast: blocks of rows
        return flat, rows
    one, several = _both(run)
    _equal(one, several)
    xn = x.numpy().astype(np.float64)
    np.testing.assert_allclose(one[0], np.sqrt(np.log1p(np.exp(-np.abs(xn))) + np.tanh(xn) ** 2) - xn * 0.5,
                               rtol=2e-6, atol=2e-6)


def test_blocks_over_collapsed_leading_axes_and_broadcast_scalars(small_thresholds):
    r = np.random.default_rng(9)
    y3 = r.standard_normal((4, 96, 512)).astype(np.float32)      # rows larger than a block: B*T rows
    bias = r.standard_normal(512).astype(np.float32)
    col = r.standard_normal((4, 96, 1)).astype(np.float32)
    layout = fused._block_layout((4, 96, 512), [(4, 96, 512), (512,), (4, 96, 1)])
    assert layout[0] == 384 and layout[1] == (512,) and layout[3] == [True, False, True] and layout[4] == 2
    xb = burn.tensor(y3, device=AD).require_grad()

    def run():
        z = (burn.tensor(y3) * 3.0 + burn.tensor(bias)).tanh() * burn.tensor(col)
        gx = xb.grad(((xb * 2.0).exp() * 0.5).sum().backward())   # sum's gradient: a broadcast scalar
        return z.numpy(), gx.numpy()
    one, several = _both(run)
    _equal(one, several)
    np.testing.assert_allclose(one[0], np.tanh(y3 * 3.0 + bias) * col, rtol=2e-6, atol=2e-6)
    np.testing.assert_allclose(one[1], np.exp(y3 * 2.0), rtol=2e-6)


def test_matmul_epilogue_and_reduce_prologue_split_equal(small_thresholds):
    r = np.random.default_rng(1)
    a = burn.tensor(r.standard_normal((3, 40, 32)).astype(np.float32))
    w = burn.tensor(r.standard_normal((32, 48)).astype(np.float32))
    bias = burn.tensor(r.standard_normal(48).astype(np.float32))

    def run():
        y = F.gelu(F.relu(a @ w) + bias)
        s = ((a * 2.0).exp() - 1.0).sum(axis=1)
        return y.numpy(), s.numpy()
    one, several = _both(run)
    _equal(one, several)
    want = torch.nn.functional.gelu(torch.relu(torch.tensor(a.numpy()) @ torch.tensor(w.numpy()))
                                    + torch.tensor(bias.numpy())).numpy()
    np.testing.assert_allclose(one[0], want, rtol=1e-5, atol=1e-5)


@pytest.fixture
def numpy_groups(monkeypatch):
    """Fused groups through flex's numpy runners, not compiled (burn_flex.jit_groups): the tests of
    those runners' own mechanisms (blocking, splitting) use it."""
    from burn_flex import jit_groups
    monkeypatch.setattr(jit_groups, "ENABLED", False)
    burn.fusion.clear_plan_cache()
    yield
    burn.fusion.clear_plan_cache()


def test_large_matmul_epilogue_runs_blocked_and_equal(small_thresholds, numpy_groups, monkeypatch):
    r = np.random.default_rng(10)
    a = r.standard_normal((2, 256, 64)).astype(np.float32)
    w = r.standard_normal((64, 256)).astype(np.float32)
    bias = r.standard_normal(256).astype(np.float32)
    used = []
    call = fused._MatmulEpilogue.__call__
    monkeypatch.setattr(fused._MatmulEpilogue, "__call__", lambda self, *x: (used.append(1), call(self, *x))[1])

    def run():
        y = burn.tensor(a) @ burn.tensor(w)
        z = F.gelu(F.relu(y) + burn.tensor(bias))
        return y.numpy(), z.numpy()                 # the matmul's result leaves the group too
    one, several = _both(run)
    assert used
    _equal(one, several)
    want = torch.nn.functional.gelu(torch.relu(torch.tensor(a) @ torch.tensor(w)) + torch.tensor(bias)).numpy()
    np.testing.assert_allclose(one[1], want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(one[0], a @ w, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op", ["sum_", "prod", "max_", "min_", "any_", "all_", "argmax", "argmin"])
@pytest.mark.parametrize("axis,keepdims", [(-1, False), (0, True), ((0, 2), False), (1, False)])
def test_reductions_over_an_axis_equal_across_thread_counts(small_thresholds, op, axis, keepdims):
    if op.startswith("arg") and isinstance(axis, tuple):
        return
    r = np.random.default_rng(2)
    x = r.standard_normal((12, 9, 50)).astype(np.float32)
    x[3, 4, 7] = np.nan
    x[5] = np.inf
    xs = x > 0.3 if op in ("any_", "all_") else (x * 0.1 + 1.0 if op == "prod" else x)
    fn = getattr(kreduce, op)
    one, several = _both(lambda: fn(xs, axis=axis, keepdims=keepdims))
    _equal(one, several)
    ref = {"sum_": np.sum, "prod": np.prod, "max_": np.max, "min_": np.min, "any_": np.any, "all_": np.all,
           "argmax": np.argmax, "argmin": np.argmin}[op](xs, axis=axis, keepdims=keepdims)
    _equal(one, np.asarray(ref).astype(one.dtype))


@pytest.mark.parametrize("shape", [(64, 5), (64, 9), (37, 4, 3)])
def test_column_sums_equal_across_thread_counts(small_thresholds, shape):
    # a bias gradient: the sum over axis 0 split over the few columns (a one-column chunk was
    # summed pairwise by numpy, the whole array row by row: another last bit)
    x = (np.random.default_rng(9).standard_normal(shape) * 10).astype(np.float32)
    one, several = _both(lambda: kreduce.sum_(x, axis=0, keepdims=False))
    _equal(one, several)
    _equal(one, np.add.reduce(x, axis=0))


def test_full_reductions_and_scans_across_thread_counts(small_thresholds):
    r = np.random.default_rng(3)
    x = r.standard_normal((64, 33)).astype(np.float32)
    i = r.integers(-9, 9, (64, 33)).astype(np.int32)
    for fn, arr in [(kreduce.max_, x), (kreduce.min_, x), (kreduce.sum_, i), (kreduce.any_, x > 2.5)]:
        one, several = _both(lambda: fn(arr, axis=None, keepdims=False))
        _equal(one, several)
    # floating full sums: chunk partials are combined, so the order changes (float64 reference)
    one, several = _both(lambda: kreduce.sum_(np.abs(x), axis=None, keepdims=True))
    want = np.abs(x).astype(np.float64).sum()
    assert several.shape == (1, 1) and abs(float(several[0, 0]) - want) <= 4e-7 * want
    assert abs(float(one[0, 0]) - want) <= 4e-7 * want
    for scan in (kreduce.cumsum, kreduce.cumprod):
        for ax in (0, 1):
            one, several = _both(lambda: scan(x * 0.1 + 1.0, axis=ax))
            _equal(one, several)
            _equal(one, (np.cumsum if scan is kreduce.cumsum else np.cumprod)(x * 0.1 + 1.0, axis=ax))


def _hyper_adam(lr, b1, b2, t, eps, wd):
    return [lr, b1, 1 - b1, b2, 1 - b2, 1 / (1 - b1 ** t), 1 / (1 - b2 ** t), eps, wd, 1 - lr * wd]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("mode", ["none", "l2", "decoupled"])
def test_adam_update_split_is_bit_identical(small_thresholds, dtype, mode):
    r = np.random.default_rng(4)
    p, g, m = (burn.tensor(r.standard_normal((37, 11)).astype(dtype)) for _ in range(3))
    v = burn.tensor(np.abs(r.standard_normal((37, 11))).astype(dtype))
    h = burn.tensor(np.array(_hyper_adam(0.01, 0.8, 0.99, 3, 1e-8, 0.1)), dtype=burn.float64)
    threads.set_num_threads(4)
    got = [t.numpy() for t in adam_update(p, g, m, v, h, mode)]
    want = [t.numpy() for t in adam_update.reference(p, g, m, v, h, mode)]
    _equal(tuple(got), tuple(want))


@pytest.mark.parametrize("mode", [("first", False, False), ("next", True, False), ("next", False, True)])
def test_sgd_update_split_is_bit_identical(small_thresholds, mode):
    r = np.random.default_rng(5)
    p, g, buf = (burn.tensor(r.standard_normal((41, 7)).astype(np.float32)) for _ in range(3))
    h = burn.tensor(np.array([0.05, 0.01, 0.9, 0.75]), dtype=burn.float64)
    threads.set_num_threads(4)
    got = [t.numpy() for t in sgd_update(p, g, buf, h, mode)]
    _equal(tuple(got), tuple(t.numpy() for t in sgd_update.reference(p, g, buf, h, mode)))


@pytest.mark.parametrize("axis", [-1, 1])
def test_softmax_and_log_softmax_rows_equal_across_thread_counts(small_thresholds, axis):
    r = np.random.default_rng(6)
    x = (r.standard_normal((5, 37, 24)) * 3).astype(np.float32)
    x[1, 2, :] = -np.inf
    x[2, 3, 5] = np.nan
    g = r.standard_normal(x.shape).astype(np.float32)
    one, several = _both(lambda: (knn.softmax(x, axis), knn.log_softmax(x, axis)))
    _equal(one, several)
    y, ly = one
    one, several = _both(lambda: (knn.softmax_grad(y, g, axis), knn.log_softmax_grad(ly, g, axis)))
    _equal(one, several)
    with np.errstate(invalid="ignore"):
        np.testing.assert_allclose(y, torch.softmax(torch.tensor(x), axis).numpy(), rtol=1e-6, atol=1e-7)


def test_layer_norm_rows_equal_across_thread_counts(small_thresholds):
    r = np.random.default_rng(7)
    x = (r.standard_normal((70, 48)) * 2 + 1).astype(np.float32)
    w, b = (r.standard_normal(48).astype(np.float32) for _ in range(2))
    g = r.standard_normal(x.shape).astype(np.float32)
    one, several = _both(lambda: (knn.layer_norm(x, w, b, 1e-5), *knn.layer_norm_grad(x, w, g, 1e-5)))
    _equal(one, several)
    xt = torch.tensor(x, requires_grad=True)
    wt, bt = torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)
    yt = torch.nn.functional.layer_norm(xt, (48,), wt, bt, 1e-5)
    (yt * torch.tensor(g)).sum().backward()
    for got, want in zip(one, (yt.detach(), xt.grad, wt.grad, bt.grad)):
        np.testing.assert_allclose(got, want.numpy(), rtol=1e-4, atol=1e-4)


def test_training_step_equal_across_thread_counts(small_thresholds):
    r = np.random.default_rng(8)
    xs = r.standard_normal((64, 20)).astype(np.float32)
    ys = r.integers(0, 5, 64)

    def run():
        lin1, norm, lin2 = burn.nn.Linear(20, 32, device=AD), burn.nn.LayerNorm(32, device=AD), \
            burn.nn.Linear(32, 5, device=AD)
        params = [lin1.weight, lin1.bias, norm.weight, norm.bias, lin2.weight, lin2.bias]
        for k, p in enumerate(params):      # fixed values, not the modules' random init
            p.assign_(burn.tensor(np.linspace(-0.3, 0.3 + k, p.numel()).reshape(p.shape).astype(np.float32),
                                  device=AD))
        opt = burn.optim.Adam(params, lr=0.01)
        x, y = burn.tensor(xs, device=AD), burn.tensor(ys, device=AD)
        losses = []
        for _ in range(3):
            loss = F.cross_entropy(lin2(burn.relu(norm(lin1(x)))), y)
            opt.step(loss.backward())
            losses.append(loss.item())
        return (np.array(losses), *[p.numpy() for p in params])
    one, several = _both(run)
    _equal(one, several)
