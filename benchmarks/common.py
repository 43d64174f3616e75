"""What several benchmarks share (run as scripts, so ``benchmarks/`` is on ``sys.path``)."""
from __future__ import annotations

import gc
import statistics
import time

import burn


def wgpu_device():
    """``burn.Device.wgpu()`` if an OpenCL device is usable here, else None."""
    try:
        dev = burn.Device.wgpu()
        burn.zeros((1,), device=dev).numpy()
        return dev
    except Exception:       # no pyopencl, no OpenCL device
        return None


def interleaved_medians(fns: dict, reps: int, *, freeze_gc: bool = False) -> dict:
    """Median seconds of each ``{name: fn}`` over ``reps`` rounds that run every fn once in turn
    (a busy neighbour slows all alike), after one warm-up call each; ``"pair"`` is the median of
    the per-round ratios burn/scipy (robust to load spikes). ``freeze_gc`` keeps the warm-up's
    objects out of the collector's way during the rounds."""
    times = {k: [] for k in fns}
    for f in fns.values():      # warm up (plans, workspaces, kernel compilation)
        f()
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        for _ in range(reps):
            for k, f in fns.items():
                t0 = time.perf_counter()
                f()
                times[k].append(time.perf_counter() - t0)
    finally:
        if freeze_gc:
            gc.unfreeze()
    med = {k: statistics.median(v) for k, v in times.items()}
    med["pair"] = statistics.median(b / s for b, s in zip(times["burn"], times["scipy"]))
    return med
