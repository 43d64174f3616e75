"""wgpu's adaptive memory pool (DESIGN §8): every buffer is a sub-range of a pooled page;
in-use memory returns to its baseline after ``del``, ``memory_cleanup`` gives empty pages
back, repeated training steps reuse their ranges (reserved stays flat), outdated pages are
drained, and running out of memory is a clear ``burn.BurnError`` naming the sizes; a device
lost mid-run (simulated driver errors) is a prompt ``burn.BurnError`` naming the device."""
import gc

import numpy as np
import pytest

import burn
import burn.nn.functional as F


def _wgpu_or_skip():
    try:
        import pyopencl  # noqa: F401
        burn.Device.wgpu().backend
    except Exception as e:
        pytest.skip(f"no usable wgpu device: {e}")
    from burn_wgpu.memory import Pool
    from burn_wgpu import runtime
    if not isinstance(runtime.context(0).pool, Pool):
        pytest.skip("BURN_WGPU_POOL selects another allocator")
    return burn.Device.wgpu()


def _fresh_pool():
    from burn_wgpu import runtime
    from burn_wgpu.memory import Pool
    return Pool(runtime.context(0))


def test_round_page_bounds_slack():
    _wgpu_or_skip()
    from burn_wgpu.memory import ALIGN, round_page
    rng = np.random.default_rng(0)
    for n in [1, 255, 256, 257, 1000, 4097, 10_000, 123_457, 5_000_000] + list(rng.integers(1, 2 ** 28, 50)):
        c = round_page(int(n))
        assert c >= n and c % ALIGN == 0
        assert c - n < max(ALIGN, n * 0.07), (n, c)


def test_freed_ranges_coalesce_and_are_reused():
    _wgpu_or_skip()
    pool = _fresh_pool()
    blocks = [pool.alloc(40_000) for _ in range(5)]       # main pool, one MIN_PAGE page
    assert len(pool.pages) == 1 and pool.driver_allocs == 1
    page = pool.pages[0]
    offs = sorted(b.off for b in blocks)
    assert len(set(offs)) == 5 and all(b - a >= 40_000 for a, b in zip(offs, offs[1:]))
    del blocks[1:3]                                        # two neighbours: one free range
    gc.collect()
    big = pool.alloc(80_000)                               # fits the coalesced hole, no new page
    assert pool.driver_allocs == 1 and big.page is page
    del blocks, big
    gc.collect()
    assert page.used == 0 and page.starts == [0] and page.lens == [page.size]
    assert pool.in_use == 0 and pool.free_count == pool.alloc_count == 6


def test_small_allocations_use_their_own_pages():
    _wgpu_or_skip()
    pool = _fresh_pool()
    from burn_wgpu.memory import SMALL_MAX
    small = [pool.alloc(4) for _ in range(50)] + [pool.alloc(SMALL_MAX)]
    assert pool.pages == [] and len(pool.small_pages) == 1
    large = pool.alloc(SMALL_MAX + 1)
    assert len(pool.pages) == 1 and large.page is pool.pages[0]
    assert all(b.page.small for b in small) and not large.page.small
    del small, large
    gc.collect()
    pool.cleanup()
    assert pool.reserved == 0 and pool.pages == [] and pool.small_pages == []


def test_page_size_follows_observed_allocations_and_outdated_pages_drain():
    _wgpu_or_skip()
    pool = _fresh_pool()
    from burn_wgpu.memory import MIN_PAGE, TARGET_DIV
    early = [pool.alloc(100_000) for _ in range(10)]        # ~1 MB in MIN_PAGE pages
    assert all(p.size == MIN_PAGE for p in pool.pages)
    n_early = len(pool.pages)
    big = pool.alloc(48 * 2 ** 20)                           # a page that just fits (+ slack)
    assert 48 * 2 ** 20 <= big.page.size <= 48 * 2 ** 20 * 1.1
    assert pool.target >= 48 * 2 ** 20 // TARGET_DIV         # a fraction of the peak in use
    mid = pool.alloc(300_000)                                # new pages now have the larger target
    assert mid.page.size in (big.page.size, pool.target) or mid.page is big.page
    reserved = pool.reserved
    del early
    gc.collect()
    # the 1 MiB pages are outdated (< target / 2): released as they empty, without cleanup
    assert pool.driver_frees == n_early
    assert pool.reserved == reserved - n_early * MIN_PAGE
    del big, mid
    gc.collect()
    pool.cleanup()
    assert pool.reserved == 0 and pool.in_use == 0


def test_in_use_returns_to_baseline_after_del_and_cleanup_releases():
    dev = _wgpu_or_skip()
    warm = burn.ones((256, 256), device=dev) * 3.0     # core caches the scalar operand's buffer
    del warm
    gc.collect()
    base = dev.memory_stats()
    xs = [burn.ones((256, 256), device=dev) * 3.0 for i in range(4)]
    dev.sync()
    mid = dev.memory_stats()
    assert mid["in_use_bytes"] >= base["in_use_bytes"] + 4 * 256 * 256 * 4
    assert mid["alloc_count"] > base["alloc_count"]
    del xs
    gc.collect()
    after = dev.memory_stats()
    assert after["in_use_bytes"] == base["in_use_bytes"]
    dev.memory_cleanup()
    cleaned = dev.memory_stats()
    assert cleaned["reserved_bytes"] < mid["reserved_bytes"] or mid["reserved_bytes"] == base["reserved_bytes"]
    assert cleaned["reserved_bytes"] <= base["reserved_bytes"] + 256 * 1024
    assert cleaned["peak_in_use_bytes"] >= mid["in_use_bytes"]
    from burn_wgpu import runtime
    pool = runtime.context(0).pool
    assert all(p.used > 0 for p in pool.pages + pool.small_pages)   # no empty page survives cleanup


def test_reserved_stays_flat_over_500_training_steps():
    dev = _wgpu_or_skip()
    ad = dev.autodiff()
    ad.seed(0)
    model = burn.nn.Sequential(burn.nn.Linear(16, 32, device=ad), burn.nn.ReLU(), burn.nn.Linear(32, 4, device=ad))
    # SGD: Adam's bias correction makes a new Python scalar every step, and core keeps a
    # device buffer per distinct scalar in its scalar cache
    opt = burn.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((64, 16)).astype(np.float32), device=ad)
    y = burn.tensor(rng.integers(0, 4, 64), device=ad)
    reserved, driver, in_use = [], [], []
    losses = []
    for step in range(500):
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        if step % 50 == 0 or step == 499:
            losses.append(loss.item())
        s = dev.memory_stats()
        reserved.append(s["reserved_bytes"])
        driver.append(s["driver_alloc_count"])
        in_use.append(s["in_use_bytes"])
    assert losses[-1] < losses[0]                    # it trained
    assert max(reserved[20:]) == reserved[20] == reserved[-1], (reserved[20], max(reserved[20:]))
    assert driver[-1] == driver[20]                  # no new driver allocations once warm
    assert in_use[-1] == in_use[20]                  # nothing leaks step to step


def test_out_of_memory_is_a_clear_burn_error():
    dev = _wgpu_or_skip()
    from burn_wgpu import runtime
    dc = runtime.context(0)
    n = dc.device.max_mem_alloc_size // 4 + 1024            # one float32 element per 4 bytes
    if n >= 2 ** 31:
        pytest.skip("the device allows allocations beyond the 2**31-element limit")
    before = dev.memory_stats()
    with pytest.raises(burn.BurnError) as ei:
        burn.zeros((n,), device=dev).numpy()
    msg = str(ei.value)
    assert "out of device memory" in msg and str(n * 4) in msg and str(dc.device.max_mem_alloc_size) in msg
    assert f"({n},)" in msg                                  # the tensor's shape
    # nothing was reserved for the failed request and the device still works
    assert dev.memory_stats()["reserved_bytes"] <= before["reserved_bytes"] + 256 * 1024
    np.testing.assert_allclose((burn.ones((4,), device=dev) * 2).numpy(), np.full(4, 2, np.float32))


def test_live_blocks_move_off_a_nearly_empty_page_under_pressure():
    _wgpu_or_skip()
    import pyopencl as cl
    pool = _fresh_pool()
    q = pool.dc.queue
    a1 = pool.alloc(600_000)                    # page 1 fits it (+ slack)
    b = pool.alloc(40_000)                      # lands in page 1's slack
    assert b.page is a1.page
    a2 = pool.alloc(600_000)                    # page 2
    p1, p2 = a1.page, a2.page
    assert p1 is not p2 and pool.driver_allocs == 2
    data = np.arange(10_000, dtype=np.float32)
    cl.enqueue_copy(q, b.buf, data, is_blocking=True)
    del a1
    gc.collect()
    c = pool.alloc(620_000)                     # fits page 1 only once b moves to page 2
    assert pool.moves == 1 and pool.driver_allocs == 2
    assert c.page is p1 and b.page is p2
    back = np.empty_like(data)
    cl.enqueue_copy(q, back, b.buf, is_blocking=True)
    np.testing.assert_array_equal(back, data)   # b's contents came along
    del b, c, a2
    gc.collect()
    assert p1.used == 0 and p2.used == 0 and pool.in_use == 0
    pool.cleanup()


def test_release_during_an_allocation_waits_for_it():
    """A Block finalized by the cyclic GC inside alloc() must not reshuffle free ranges mid-way."""
    _wgpu_or_skip()
    pool = _fresh_pool()
    a = pool.alloc(50_000)
    page = a.page
    used = page.used
    pool._lock.acquire()                # as if inside alloc()
    del a
    gc.collect()
    assert page.used == used and len(pool._deferred) == 1 and pool.in_use == 50_000
    pool._lock.release()
    b = pool.alloc(50_000)              # the deferred release is applied when this allocation ends
    assert pool._deferred == [] and pool.in_use == 50_000
    del b
    gc.collect()
    assert page.used == 0 and pool.in_use == 0


def test_pyopencl_memory_pool_can_be_selected_for_comparison():
    _wgpu_or_skip()
    import os
    import subprocess
    import sys
    code = ("import burn, numpy as np; d = burn.Device.wgpu(); y = (burn.ones((64, 64), device=d) * 2).numpy(); "
            "s = d.memory_stats(); assert y.sum() == 2 * 64 * 64; "
            "assert s['pool'] == 'pyopencl' and s['peak_in_use_bytes'] >= 64 * 64 * 4 and s['reserved_bytes'] > 0, s; "
            "print('ok')")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, BURN_WGPU_POOL="pyopencl"),
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and "ok" in r.stdout, r.stderr[-2000:]
    bad = subprocess.run([sys.executable, "-c", "import burn; (burn.ones((2,), device=burn.Device.wgpu()) * 2).numpy()"],
                         env=dict(os.environ, BURN_WGPU_POOL="nonsense"), capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0 and "BURN_WGPU_POOL" in bad.stderr


def test_live_blocks_move_to_a_smaller_new_page_when_nothing_else_fits():
    _wgpu_or_skip()
    import pyopencl as cl
    pool = _fresh_pool()
    a1 = pool.alloc(600_000)
    b = pool.alloc(40_000)                      # in page 1's slack; no other page exists
    p1 = a1.page
    data = np.arange(10_000, dtype=np.float32)
    cl.enqueue_copy(pool.dc.queue, b.buf, data, is_blocking=True)
    del a1
    gc.collect()
    reserved = pool.reserved
    c = pool.alloc(620_000)                     # page 1 once b moves to a new, smaller page
    assert c.page is p1 and b.page is not p1 and pool.moves == 1
    assert pool.reserved - reserved < 620_000   # grew by b's new page, not by a page for c
    back = np.empty_like(data)
    cl.enqueue_copy(pool.dc.queue, back, b.buf, is_blocking=True)
    np.testing.assert_array_equal(back, data)
    del b, c
    gc.collect()
    pool.cleanup()
    assert pool.reserved == 0


def test_a_window_is_cleared_by_moving_a_block_out_of_a_busy_page():
    """The page holds more live bytes than half the request (it cannot be emptied), but a
    window of the request's size holds only one small block: that block moves, the others stay."""
    _wgpu_or_skip()
    import pyopencl as cl
    pool = _fresh_pool()
    x = pool.alloc(1_000_000)
    q = pool.alloc(600_000)
    P, Q = x.page, q.page
    assert P is not Q
    del x
    gc.collect()
    k = pool.alloc(400_000)                     # bottom of P
    m = pool.alloc(70_000)                      # right above k
    assert k.page is P and m.page is P and k.off < m.off
    want = 700_000
    assert P.size - P.used >= want - 70_000 and P.used > want // 2    # the old rule could not empty P
    assert pool._best_fit(pool.pages, -(-want // pool.align) * pool.align) == (None, 0)
    data = np.arange(70_000 // 4, dtype=np.float32)
    cl.enqueue_copy(pool.dc.queue, m.buf, data, is_blocking=True)
    k_off, reserved = k.off, pool.reserved
    r = pool.alloc(want)
    assert r.page is P and pool.moves == 1 and m.page is not P
    assert k.page is P and k.off == k_off       # the block outside the window stayed
    assert r.off + r.alen <= P.size and (r.off >= k.off + k.alen)
    assert pool.reserved - reserved < want      # grew by m's new page at most, not by a page for r
    back = np.empty_like(data)
    cl.enqueue_copy(pool.dc.queue, back, m.buf, is_blocking=True)
    np.testing.assert_array_equal(back, data)
    del k, m, r, q
    gc.collect()
    assert pool.in_use == 0 and all(p.used == 0 for p in pool.pages)
    pool.cleanup()
    assert pool.reserved == 0


def test_small_request_takes_a_main_pool_range_before_a_new_small_page():
    _wgpu_or_skip()
    pool = _fresh_pool()
    from burn_wgpu.memory import SMALL_MAX
    full = [pool.alloc(SMALL_MAX) for _ in range(2)]        # fills the first (64 KiB) small page
    assert len(pool.small_pages) == 1 and pool.small_pages[0].used == pool.small_pages[0].size
    big = pool.alloc(100_000)                                # a main page with room to spare
    s = pool.alloc(30_000)
    assert s.page is big.page and len(pool.small_pages) == 1
    assert s.off >= big.off + big.alen                       # small ones from the top of the range
    assert pool.small_in_use == 2 * SMALL_MAX + 30_000
    del full, big, s
    gc.collect()
    assert pool.in_use == 0 and pool.small_in_use == 0       # counted by request size, wherever it sat
    pool.cleanup()
    assert pool.reserved == 0


_DEVICE_LOST = r'''
import sys, time
import numpy as np
import pyopencl as cl
import burn

where, status = sys.argv[1], getattr(cl.status_code, sys.argv[2])
dev = burn.Device.wgpu()
x = burn.ones((1000,), device=dev) * 2.0
assert float(x.sum().item()) == 2000.0          # the device works before it is lost

def lost(*a, **k):
    routine = {"launch": "clEnqueueNDRangeKernel", "finish": "clFinish", "copy": "clEnqueueReadBuffer"}[where]
    raise cl.RuntimeError(cl._cl._ErrorRecord(routine, status, ""))

if where == "launch":
    cl.enqueue_nd_range_kernel = lost
elif where == "finish":
    cl.CommandQueue.finish = lost
else:
    copy = cl.enqueue_copy

    def read_lost(queue, dst, src, **k):     # uploads still work; the read that waits fails
        return lost() if isinstance(dst, np.ndarray) else copy(queue, dst, src, **k)
    cl.enqueue_copy = read_lost
t0 = time.perf_counter()
try:
    y = (x.exp() * 3.0).sum()
    if where == "finish":
        dev.sync()
    y.numpy()
except burn.BurnError as e:
    print("BURNERROR", round(time.perf_counter() - t0, 3), str(e).replace("\n", " "))
else:
    print("NO ERROR")
'''


@pytest.mark.parametrize("where,status", [("launch", "OUT_OF_RESOURCES"), ("finish", "DEVICE_NOT_AVAILABLE"),
                                          ("copy", "DEVICE_NOT_AVAILABLE")])
def test_a_device_lost_mid_run_is_a_prompt_burn_error(where, status):
    """The driver reports a lost device (or one out of resources) at a kernel launch, at a queue
    finish or at a blocking read: the user's call raises a BurnError naming the device, what was
    being done and the status; nothing waits on the dead queue (the subprocess ends in time)."""
    _wgpu_or_skip()
    import os
    import subprocess
    import sys
    r = subprocess.run([sys.executable, "-c", _DEVICE_LOST, where, status], capture_output=True, text=True,
                       timeout=180, env=dict(os.environ))
    assert r.returncode == 0, r.stderr[-3000:]
    line = [ln for ln in r.stdout.splitlines() if ln.startswith(("BURNERROR", "NO ERROR"))][-1]
    assert line.startswith("BURNERROR"), r.stdout
    seconds, msg = float(line.split()[1]), line.split(None, 2)[2]
    assert seconds < 30, seconds
    from burn_wgpu import runtime
    assert "wgpu:0" in msg and runtime.context(0).device.name.strip() in msg
    assert status in msg and "lost or ran out of resources" in msg
    assert {"launch": "launching kernel", "finish": "finishing the queue", "copy": "downloading"}[where] in msg
