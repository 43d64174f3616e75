"""wgpu's allocator: every buffer comes from the pool; in-use memory returns to its
baseline after ``del``, ``memory_cleanup`` gives free blocks back, and a repeated
training step reuses its buffers (reserved stays flat)."""
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
    return burn.Device.wgpu()


def test_size_classes_waste_at_most_a_quarter():
    _wgpu_or_skip()
    from burn_wgpu.memory import MIN_BLOCK, size_class
    for n in [1, 255, 256, 257, 1000, 4097, 10_000, 123_457, 5_000_000]:
        c = size_class(n)
        assert c >= n and c >= MIN_BLOCK
        assert c <= max(MIN_BLOCK, 1.25 * n) or c <= 1024


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
    assert after["reserved_bytes"] >= mid["in_use_bytes"] - base["in_use_bytes"]   # kept for reuse
    dev.memory_cleanup()
    cleaned = dev.memory_stats()
    assert cleaned["reserved_bytes"] <= after["reserved_bytes"] - 4 * 256 * 256 * 4
    assert cleaned["peak_in_use_bytes"] >= mid["in_use_bytes"]


def test_reserved_stays_flat_over_repeated_training_steps():
    dev = _wgpu_or_skip()
    ad = dev.autodiff()
    ad.seed(0)
    model = burn.nn.Sequential(burn.nn.Linear(32, 64, device=ad), burn.nn.ReLU(), burn.nn.Linear(64, 5, device=ad))
    # SGD: Adam's bias correction makes a new Python scalar every step, and core keeps a
    # device buffer per distinct scalar in its scalar cache
    opt = burn.optim.SGD(model.parameters(), lr=1e-2, momentum=0.9)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 32)).astype(np.float32)
    y = rng.integers(0, 5, 128)
    reserved, driver = [], []
    for step in range(40):
        loss = F.cross_entropy(model(burn.tensor(x, device=ad)), burn.tensor(y, device=ad))
        opt.step(loss.backward())
        loss.item()
        s = dev.memory_stats()
        reserved.append(s["reserved_bytes"])
        driver.append(s["driver_alloc_count"])
    assert reserved[-1] == reserved[10], reserved
    assert driver[-1] == driver[10]          # no new driver allocations once warm
