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


# Contenders alternate in blocks, not call by call. A library with a worker pool leaves its
# idle threads spinning after each call (OpenBLAS's busy-wait for up to ~0.1 s, OpenMP's for a
# while), and on this 2-core machine the next framework's calls run on cores those spinners
# hold. Measured (benchmarks/README.md): torch's LeNet step took 6.9 ms/step for the first
# 100 ms after a block of burn steps and 2.6 ms/step after that; alternating call by call,
# torch's digits-MLP step took 4.0 ms against 0.78 ms alone. So a block first runs the
# contender untimed for HANDOVER_SECONDS (the previous contender's threads go idle), then
# times at least BLOCK_MIN_CALLS calls and BLOCK_MIN_SECONDS; the block's median is its sample.
HANDOVER_SECONDS = 0.12
BLOCK_MIN_CALLS = 3
BLOCK_MIN_SECONDS = 0.02


def block_time(f, *, min_calls: int = BLOCK_MIN_CALLS, min_seconds: float = BLOCK_MIN_SECONDS,
               inner: int = 1, handover: float = HANDOVER_SECONDS) -> float:
    """Median seconds per call of ``f`` over one block: untimed calls for ``handover`` seconds
    (at least one), then at least ``min_calls`` timed samples and ``min_seconds`` (each sample
    ``inner`` calls).

    Example::

        >>> t = block_time(lambda: sum(range(100)), handover=0.0)
        >>> 0 < t < 1
        True
    """
    start = time.perf_counter()
    f()
    while time.perf_counter() - start < handover:
        f()
    samples = []
    start = time.perf_counter()
    while len(samples) < min_calls or time.perf_counter() - start < min_seconds:
        t0 = time.perf_counter()
        for _ in range(inner):
            f()
        samples.append((time.perf_counter() - t0) / inner)
    return statistics.median(samples)


def interleaved_times(fns: dict, reps: int, *, warmup: int = 1, freeze_gc: bool = False) -> dict:
    """Seconds per call of each ``{name: fn}`` per round, over ``reps`` rounds that run every fn
    for one block in turn (a busy neighbour slows all alike; blocks: see ``block_time``), after
    ``warmup`` calls each (plans, workspaces, kernel compilation). ``freeze_gc`` keeps the
    warm-up's objects out of the collector's way during the rounds. Returns
    ``{name: [seconds per call, one per round]}``."""
    times = {k: [] for k in fns}
    for f in fns.values():
        for _ in range(warmup):
            f()
    if freeze_gc:
        gc.collect()
        gc.freeze()
    try:
        for _ in range(reps):
            for k, f in fns.items():
                times[k].append(block_time(f))
    finally:
        if freeze_gc:
            gc.unfreeze()
    return times


def medians(times: dict) -> dict:
    """The median of each list of :func:`interleaved_times`."""
    return {k: statistics.median(v) for k, v in times.items()}


def paired_ratio(times: dict, a, b) -> float:
    """The median of the per-round ratios ``a / b`` (robust to load spikes)."""
    return statistics.median(x / y for x, y in zip(times[a], times[b]))


def interleaved_medians(fns: dict, reps: int, *, freeze_gc: bool = False) -> dict:
    """Median seconds of each ``{name: fn}`` (see :func:`interleaved_times`, one warm-up call
    each); ``"pair"`` is the median of the per-round ratios burn/scipy."""
    times = interleaved_times(fns, reps, freeze_gc=freeze_gc)
    med = medians(times)
    med["pair"] = paired_ratio(times, "burn", "scipy")
    return med


class ThreadModes:
    """Switches burn, BLAS and torch between what a user gets by default and one thread each.

    ``"default"``: the thread counts found at start (torch's intra-op threads, BLAS's pool,
    burn's flex pool: every core this process may use); ``"one"``: all pinned to one thread
    (``threadpoolctl.threadpool_limits(1)``, ``torch.set_num_threads(1)``,
    ``burn.set_num_threads(1)``). A tree without ``burn.set_num_threads`` (an older commit
    measured as "before") only has its BLAS and torch switched: its flex kernels ran on the
    calling thread anyway."""

    MODES = ("default", "one")

    def __init__(self, burn, torch):
        import threadpoolctl
        self.burn, self.torch, self.tpc = burn, torch, threadpoolctl
        self.torch_n = torch.get_num_threads()
        blas = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
        self.blas_n = max(blas) if blas else None
        self.burn_n = burn.get_num_threads() if hasattr(burn, "get_num_threads") else None
        self.mode = None

    def describe(self) -> str:
        return (f"default threads: torch {self.torch_n}, BLAS {self.blas_n}, burn "
                f"{self.burn_n if self.burn_n is not None else '1 (no burn.set_num_threads in this tree)'}")

    def set(self, mode: str) -> None:
        if mode == self.mode:
            return
        n_burn, n_torch, n_blas = (self.burn_n, self.torch_n, self.blas_n) if mode == "default" else (1, 1, 1)
        if self.burn_n is not None:
            self.burn.set_num_threads(n_burn)      # sets BLAS too; set again below to be explicit
        if n_blas is not None:
            self.tpc.threadpool_limits(n_blas, user_api="blas")
        self.torch.set_num_threads(n_torch)
        self.mode = mode


def write_results(results: dict, json_path: str = "") -> dict:
    """The end of every benchmark run: the load average (how far to trust the numbers) and, when
    asked, the results as JSON. Returns ``results``."""
    import json
    import os
    print("load average at end:", os.getloadavg())
    if json_path:
        with open(json_path, "w") as f:
            json.dump(results, f, indent=1)
    return results
