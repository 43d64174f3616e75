"""Peak reserved memory of burn's page pool against CuPy's pool, on recorded allocation traces.

burn-cuda's pool cannot run without a GPU, but its policy is the plain-Python
:class:`burn.pagepool.PagePool`, and an allocation trace (every request's size and the
order of allocations and frees) does not depend on the device. This benchmark

1. records traces of training runs: the CNN step of ``plugins/burn-cuda/scripts/gpu_check.py``
   (batch 128, 5 steps) on burn-cuda over the null GPU of ``tests/fakecupy_null.py`` (every
   array CuPy would allocate, no arithmetic), and that CNN, a LeNet step and the digits MLP
   on burn's wgpu device (the same planner and fused groups, its own kernels);
2. replays each trace through
   - burn-cuda's :class:`~burn_cuda.memory.AdaptivePool` (the page pool, no moves) on a
     pretend driver,
   - burn's page pool with moves (wgpu's configuration),
   - :class:`CupyPoolModel`, a model of CuPy's ``SingleDeviceMemoryPool`` (the baseline of
     the issue's target): requests rounded up to 512 bytes, the smallest free chunk that fits
     is split, freed chunks merge with free neighbours of the same ``cudaMalloc``, and a
     ``cudaMalloc`` of exactly the request when nothing fits; reserved bytes never shrink;
3. prints peak reserved bytes of each, as a ratio to the trace's peak in-use bytes (what no
   pool can go below) and to CuPy's.

The GPU run (``gpu_check.sh``) measures the real thing; this one explains it, and runs
anywhere. There is no numpy/PyTorch CPU counterpart of a device pool: CuPy's is the reference.

    .venv/bin/python benchmarks/bench_pool.py
"""
from __future__ import annotations

import bisect
import contextlib
import os
import sys
import weakref

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "plugins", "burn-cuda", "scripts"))

ROUND = 512          # CuPy's allocation unit


class CupyPoolModel:
    """CuPy's best-fit pool with splitting and merging (a model for comparisons).

    Example:
        >>> m = CupyPoolModel()
        >>> a = m.malloc(1000); b = m.malloc(1000)
        >>> m.free(a); m.free(b)                # neighbours? no: two cudaMallocs, two chunks
        >>> c = m.malloc(600)                   # splits a 1024-byte chunk
        >>> assert m.reserved == 2048 and m.peak_in_use == 2048
    """

    def __init__(self):
        self.reserved = self.peak_reserved = self.in_use = self.peak_in_use = 0
        self._free: list = []        # sorted (size, serial, chunk)
        self._serial = 0

    def malloc(self, nbytes: int) -> dict:
        n = max(ROUND, -(-int(nbytes) // ROUND) * ROUND)
        i = bisect.bisect_left(self._free, (n, -1))
        if i < len(self._free):
            size, _, ch = self._free.pop(i)
            if size > n:              # split: the rest stays free in the same allocation
                rest = {"size": size - n, "free": True, "prev": ch, "next": ch["next"]}
                if ch["next"] is not None:
                    ch["next"]["prev"] = rest
                ch["next"], ch["size"] = rest, n
                self._add(rest)
            ch["free"] = False
        else:
            ch = {"size": n, "free": False, "prev": None, "next": None}
            self.reserved += n
            self.peak_reserved = max(self.peak_reserved, self.reserved)
        self.in_use += n
        self.peak_in_use = max(self.peak_in_use, self.in_use)
        return ch

    def free(self, ch: dict) -> None:
        self.in_use -= ch["size"]
        ch["free"] = True
        for side in ("next", "prev"):
            nb = ch[side]
            if nb is not None and nb["free"]:
                self._remove(nb)
                first, second = (ch, nb) if side == "next" else (nb, ch)
                first["size"] += second["size"]
                first["next"] = second["next"]
                if second["next"] is not None:
                    second["next"]["prev"] = first
                ch = first
        self._add(ch)

    def _add(self, ch):
        self._serial += 1
        ch["key"] = (ch["size"], self._serial)
        bisect.insort(self._free, (ch["size"], self._serial, ch), key=lambda t: t[:2])

    def _remove(self, ch):
        i = bisect.bisect_left(self._free, ch["key"], key=lambda t: t[:2])
        assert self._free[i][2] is ch
        self._free.pop(i)


@contextlib.contextmanager
def traced_allocations():
    """Every allocation of burn's page pool (wgpu's and cuda's pools are both
    :class:`burn.pagepool.PagePool`) made inside, as a list of ``("a", id, nbytes)`` /
    ``("f", id, 0)`` events in program order (frees recorded whenever the block dies)."""
    from burn.pagepool import PagePool
    events, count = [], [0]
    original = PagePool.alloc

    def traced(self, nbytes):
        block = original(self, nbytes)
        k = count[0]
        count[0] += 1
        events.append(("a", k, int(nbytes)))
        weakref.finalize(block, events.append, ("f", k, 0))
        return block
    PagePool.alloc = traced
    try:
        yield events
    finally:
        PagePool.alloc = original


def record(make_step, steps: int) -> list:
    """The allocation trace of ``steps`` calls of ``make_step(dev)()`` on wgpu (see
    :func:`traced_allocations`)."""
    import gc
    from common import wgpu_device
    with traced_allocations() as events:
        dev = wgpu_device()
        step = make_step(dev)
        for _ in range(steps):
            step()
            dev.sync()
        del step
        gc.collect()
    return events


_CUDA_CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
import bench_pool
import gpu_check
import burn
with bench_pool.traced_allocations() as events:
    dev = burn.Device.cuda(0)
    step = gpu_check._cnn_burn(dev, int(sys.argv[2]))
    for _ in range(int(sys.argv[3])):
        step()
        dev.sync()
print(json.dumps(events))
"""


def record_cuda_null(batch: int, steps: int) -> list:
    """The allocation trace of gpu_check's CNN step on burn-cuda over the null GPU of
    tests/fakecupy_null.py (no arithmetic; every array CuPy would allocate asks burn-cuda's
    pool, fused groups and generated kernels included): the cuda program's own trace."""
    import json
    import subprocess
    import tempfile
    from pathlib import Path
    sys.path.insert(0, os.path.join(HERE, "..", "tests"))
    from fakecupy_null import write_null_cupy
    with tempfile.TemporaryDirectory() as d:
        env = write_null_cupy(Path(d))
        r = subprocess.run([sys.executable, "-c", _CUDA_CHILD, HERE, str(batch), str(steps)], env=env,
                           capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"the null-GPU cuda run failed:\n{r.stderr[-4000:]}")
    return [tuple(e) for e in json.loads(r.stdout.strip().splitlines()[-1])]


class _Addresses:
    """A pretend cudaMalloc: increasing addresses, never full."""
    OutOfMemory = MemoryError

    def __init__(self):
        self.next = 1 << 20

    def malloc(self, n):
        self.next += n + 4096
        return self.next - n - 4096

    def free(self, ptr):
        pass

    def wrap(self, ptr, size, owner):
        return owner

    def total_memory(self):
        return 1 << 40


def replay_page_pool(events, *, moves: bool) -> dict:
    """Peak reserved / in-use bytes of burn's page pool over ``events``."""
    from burn.pagepool import PagePool
    from burn_cuda.memory import AdaptivePool
    if moves:
        class Movable(PagePool):
            backend, can_move = "replay", True
            next = 1 << 20

            def _driver_alloc(self, size):
                self.next += size + 4096
                return self.next - size - 4096

            def _driver_free(self, page):
                pass

            def _sub(self, page, off, alen):
                return page.buf + off

            def _copy(self, dst, src, nbytes):
                pass
        pool = Movable(max_alloc=1 << 40, global_mem=1 << 40)
        take = pool.alloc
    else:
        pool = AdaptivePool(driver=_Addresses())
        take = pool.malloc
    live = {}
    for kind, k, n in events:
        if kind == "a":
            live[k] = take(n)
        else:
            del live[k]
    st = pool.stats()
    return {"peak_reserved": st["peak_reserved_bytes"], "peak_in_use": st["peak_in_use_bytes"]}


def replay_cupy(events) -> dict:
    m, live = CupyPoolModel(), {}
    for kind, k, n in events:
        if kind == "a":
            live[k] = m.malloc(n)
        else:
            m.free(live.pop(k))
    return {"peak_reserved": m.peak_reserved, "peak_in_use": m.peak_in_use}


def _lenet(dev, batch=128):
    import numpy as np
    import burn
    import burn.nn.functional as F
    nn = burn.nn
    ad = dev.autodiff()
    model = nn.Sequential(nn.Conv2d(1, 6, 5, device=ad), nn.ReLU(), nn.MaxPool2d(2),
                          nn.Conv2d(6, 16, 5, device=ad), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(),
                          nn.Linear(256, 120, device=ad), nn.ReLU(), nn.Linear(120, 84, device=ad), nn.ReLU(),
                          nn.Linear(84, 10, device=ad))
    opt = burn.optim.SGD(model, lr=0.01)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((batch, 1, 28, 28)).astype(np.float32), device=ad)
    y = burn.tensor(rng.integers(0, 10, batch), device=ad)
    return lambda: opt.step(F.cross_entropy(model(x), y).backward())


def _mlp(dev, batch=512):
    import numpy as np
    import burn
    import burn.nn.functional as F
    nn = burn.nn
    ad = dev.autodiff()
    model = nn.Sequential(nn.Linear(64, 256, device=ad), nn.ReLU(), nn.Linear(256, 256, device=ad), nn.ReLU(),
                          nn.Linear(256, 10, device=ad))
    opt = burn.optim.Adam(model, lr=1e-3)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((batch, 64)).astype(np.float32), device=ad)
    y = burn.tensor(rng.integers(0, 10, batch), device=ad)
    return lambda: opt.step(F.cross_entropy(model(x), y).backward())


def main():
    import gpu_check
    runs = {"gpu_check CNN, batch 128": lambda dev: gpu_check._cnn_burn(dev, 128),
            "LeNet, batch 128": _lenet, "MLP 64-256-256-10, batch 512": _mlp}
    mib = 2 ** 20
    print(f"{'trace':36} {'peak in use':>12} {'CuPy model':>16} {'page pool (cuda)':>22} {'page pool + moves':>22}")
    traces = {"gpu_check CNN on cuda (null GPU)": lambda: record_cuda_null(128, 5)}
    traces.update({name + " (wgpu)": (lambda make=make: record(make, 5)) for name, make in runs.items()})
    for name, rec in traces.items():
        ev = rec()
        cupy = replay_cupy(ev)
        cuda = replay_page_pool(ev, moves=False)
        wgpu = replay_page_pool(ev, moves=True)
        live = cuda["peak_in_use"]

        def cell(r):
            return f"{r['peak_reserved'] / mib:6.1f} MiB {r['peak_reserved'] / live:4.2f}x"
        print(f"{name:36} {live / mib:8.1f} MiB {cell(cupy):>16} "
              f"{cell(cuda):>14} ({cuda['peak_reserved'] / cupy['peak_reserved']:4.2f}x CuPy) "
              f"{cell(wgpu):>14} ({wgpu['peak_reserved'] / cupy['peak_reserved']:4.2f}x CuPy)")
    print("\nx: peak reserved / peak in use of the trace (1.00 = no pool could do better)")


if __name__ == "__main__":
    main()
