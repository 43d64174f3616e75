"""flex's native worker pool (burn_flex/native_pool.py, kernels/ll/workers.ll): chunks of a JIT
kernel call run on worker threads as well as the caller, with the bits of one call."""
from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from burn_flex import jit, native_pool, threads
from burn_flex.kernels import conv_direct

from thread_runs import on_one_and_two_threads

pytestmark = pytest.mark.skipif(jit.kernels() is None, reason="flex's JIT is unavailable: the pool runs JIT code")

# a 32 -> 64 3x3 convolution of 16 images of 16 x 16: ~60 M multiply-adds (milliseconds on one core)
XS, WS, OUT_HW = (16, 32, 16, 16), (64, 32, 3, 3), (14, 14)


def _conv_data(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(XS, dtype=np.float32), rng.standard_normal(WS, dtype=np.float32)


def _call():
    return conv_direct.prepared_direct_conv(jit.kernels(), XS, WS, (1, 1), (0, 0, 0, 0), (1, 1), OUT_HW)


def test_workers_run_chunks_and_the_result_has_the_bits_of_one_call():
    x, w = _conv_data()
    call = _call()
    one, two = on_one_and_two_threads(lambda: call(x, w))
    np.testing.assert_array_equal(one.view(np.int32), two.view(np.int32))
    workers = jit.kernels().workers
    before = threads.num_threads()
    try:
        threads.set_num_threads(2)
        start = workers.worker_chunks()
        # a worker that was asleep joins some microseconds after the task starts; a call of
        # milliseconds leaves it time (retried for up to 20 s: a loaded machine may not schedule
        # it at once)
        deadline = time.monotonic() + 20
        while workers.worker_chunks() == start and time.monotonic() < deadline:
            y = call(x, w)
            np.testing.assert_array_equal(y.view(np.int32), one.view(np.int32))
        assert workers.worker_chunks() > start, "no chunk ran on a worker thread"
    finally:
        threads.set_num_threads(before)


def test_one_thread_has_no_pool_and_the_switch_turns_it_off(monkeypatch):
    before = threads.num_threads()
    try:
        threads.set_num_threads(1)
        assert native_pool.pool() is None
        threads.set_num_threads(3)
        p = native_pool.pool()
        assert p is not None and p.threads == 3 and p is native_pool.pool()
        monkeypatch.setenv("BURN_FLEX_NATIVE_POOL", "0")
        native_pool.reset()
        assert native_pool.pool() is None
        x, w = _conv_data(1)
        np.testing.assert_array_equal(_call()(x, w), conv_direct.DirectCall(
            jit.kernels(), XS, WS, (1, 1), (0, 0, 0, 0), (1, 1), OUT_HW)(x, w))
    finally:
        monkeypatch.delenv("BURN_FLEX_NATIVE_POOL")
        native_pool.reset()
        threads.set_num_threads(before)


def test_a_new_thread_count_stops_the_old_workers():
    before = threads.num_threads()
    try:
        threads.set_num_threads(3)
        old = native_pool.pool()
        x, w = _conv_data(2)
        _call()(x, w)
        threads.set_num_threads(2)
        new = native_pool.pool()
        assert new is not old and new.threads == 2 and old.closed
        assert not any(t.is_alive() for t in old._threads)
        # a caller still holding the old pool is sent back to run its kernel itself
        assert old.run(jit.kernels().workers.strided_chunk, 0, 1) is False
        np.testing.assert_array_equal(_call()(x, w), on_one_and_two_threads(lambda: _call()(x, w))[0])
    finally:
        threads.set_num_threads(before)


def test_a_busy_pool_leaves_the_call_to_its_own_thread():
    """Two Python threads convolving at once: one task runs on the pool, the other finds it busy
    and runs its kernel itself; both results have the bits of one call."""
    x, w = _conv_data(3)
    call = _call()
    want = on_one_and_two_threads(lambda: call(x, w))[0]
    before = threads.num_threads()
    got, errors = [], []

    def work():
        try:
            for _ in range(5):
                got.append(call(x * 1.0, w))
        except BaseException as e:      # reported below
            errors.append(e)
    try:
        threads.set_num_threads(2)
        p = native_pool.pool()
        with p.lock:                    # held: the pool is busy, every call runs inline
            assert p.run(jit.kernels().workers.strided_chunk, 0, 1) is False
            np.testing.assert_array_equal(call(x, w).view(np.int32), want.view(np.int32))
        ts = [threading.Thread(target=work) for _ in range(3)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        threads.set_num_threads(before)
    assert not errors and len(got) == 15
    for y in got:
        np.testing.assert_array_equal(y.view(np.int32), want.view(np.int32))


def test_chunk_counts_out_of_range_are_refused():
    before = threads.num_threads()
    try:
        threads.set_num_threads(2)
        p = native_pool.pool()
        for n in (0, 1 << 20):
            with pytest.raises(ValueError, match="chunks"):
                p.run(jit.kernels().workers.strided_chunk, 0, n)
    finally:
        threads.set_num_threads(before)


def test_spin_setting_is_checked(monkeypatch):
    monkeypatch.setenv("BURN_FLEX_SPIN_US", "soon")
    with pytest.raises(ValueError, match="BURN_FLEX_SPIN_US"):
        native_pool._spin_cycles()
    monkeypatch.setenv("BURN_FLEX_SPIN_US", "50")
    assert native_pool._spin_cycles() == 150000


@pytest.mark.parametrize("shape", [(6, 3, 8, 8), (5, 2, 9, 7), (1, 4, 6, 6)])
def test_max_pooling_split_over_the_pool_has_the_bits_of_one_call(shape, monkeypatch):
    """2x2 max pooling and its gradient (pool.ll) with images split over the native pool's threads
    (chunk arguments derived in native code: wp_strided_chunk): the bits of the one-thread call,
    NaN windows included, every gradient element written."""
    from burn_flex.kernels import conv as K
    rng = np.random.default_rng(7)
    x = rng.standard_normal(shape).astype(np.float32)
    x.reshape(-1)[::13] = np.nan
    attrs = dict(kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1))
    monkeypatch.setattr(K, "_SPLIT_ELEMS", 0)
    monkeypatch.setattr(K, "_CHUNK_ELEMS", 1)

    def run():
        out = K.max_pool2d(x, **attrs)
        g = np.arange(out.size, dtype=np.float32).reshape(out.shape)
        return out, K.max_pool2d_grad(x, out, g, **attrs)
    (o1, g1), (o2, g2) = on_one_and_two_threads(run)
    np.testing.assert_array_equal(o1.view(np.int32), o2.view(np.int32))
    np.testing.assert_array_equal(g1.view(np.int32), g2.view(np.int32))
    monkeypatch.setattr(K, "_JIT_POOL", False)          # the numpy path: the reference
    want = K.max_pool2d(x, **attrs)
    np.testing.assert_array_equal(o2.view(np.int32), want.view(np.int32))


def test_strided_split_checks_its_geometry_argument():
    from burn_flex.kernels import conv as K
    before = threads.num_threads()
    try:
        threads.set_num_threads(2)
        x, out = np.ones((8, 4, 4), np.float32), np.zeros((8, 2, 2), np.float32)
        with pytest.raises(ValueError, match="geometry"):
            native_pool.run_strided(jit.kernels().maxpool2, 8, (x, out, np.zeros(20, np.int64)), (64, 16, 0),
                                    geometry=2)
        with pytest.raises(ValueError, match="bytes per item"):
            native_pool.run_strided(jit.kernels().maxpool2, 8, (x, out), (64,))
    finally:
        threads.set_num_threads(before)
    assert K._SPLIT_ELEMS > 0


def test_a_task_that_wakes_nobody_still_runs_every_chunk():
    """wake=False leaves sleeping workers asleep (only spinning ones join): the caller then runs
    every chunk itself, with the same bits."""
    from burn_flex.kernels import conv as K
    x = np.random.default_rng(9).standard_normal((8, 3, 6, 6)).astype(np.float32)
    want = K.max_pool2d(x, kernel=(2, 2), stride=(2, 2), padding=(0, 0, 0, 0), dilation=(1, 1))
    before = threads.num_threads()
    try:
        threads.set_num_threads(2)
        native_pool.pool()
        for _ in range(20):
            out = np.full(want.shape, np.nan, np.float32)
            d = np.array([8 * 3, 6, 6, 3, 3], np.int64)
            assert native_pool.run_strided(jit.kernels().maxpool2, 8, (x, out, d), (x[0].nbytes, out[0].nbytes, 0),
                                           geometry=2, count_per_item=3, wake=False)
            np.testing.assert_array_equal(out.view(np.int32), want.view(np.int32))
    finally:
        threads.set_num_threads(before)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_makes_a_pool_of_its_own():
    """A child forked while the parent's workers exist (a data-loader worker) has none of them: its
    first split call makes a pool of its own and computes the same bits."""
    x, w = _conv_data(4)
    call = _call()
    before = threads.num_threads()
    try:
        threads.set_num_threads(2)
        want = call(x, w)
        pid = os.fork()
        if pid == 0:                                    # the child: exit status says whether it agreed
            ok = False
            try:
                ok = bool(np.array_equal(call(x, w).view(np.int32), want.view(np.int32)))
                ok = ok and native_pool.pool() is not None and native_pool.pool().threads == 2
            finally:
                os._exit(0 if ok else 1)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    finally:
        threads.set_num_threads(before)
