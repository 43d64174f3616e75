"""The adaptive device memory pool of burn-cuda (DESIGN §8), behind CuPy's allocator hook.

The policy is burn's page pool (:mod:`burn.pagepool`, shared with burn-wgpu): pages
(one ``cudaMalloc`` each) sized from the observed peak, best-fit ranges coalesced on
free, a separate small pool for scalars and biases, empty pages merged into the next
new page, outdated empty pages returned. CuPy asks an allocator for a
``MemoryPointer`` per array; :class:`AdaptivePool` answers with a range of a page,
wrapped as CuPy ``UnownedMemory`` whose owner is the pool's Block: when CuPy drops the
array, the Block dies and its range returns. It is installed only around burn's own
kernels (``DeviceContext.scope``), never with ``cupy.cuda.set_allocator``: other
libraries in the process keep CuPy's pool.

Live blocks are never moved here (``can_move`` is False): a CuPy array holds its raw
device address, so a copy elsewhere could not be made visible to it.

Why pages and not size classes: an earlier version kept free blocks per size class
(exact sizes, quarter-power-of-two classes for first-seen sizes) and a slab per small
class. On the H200's CNN step it reserved 37% more than CuPy's pool, because a freed
block only served requests of its own class; CuPy's pool splits and merges chunks.
Replaying an allocation trace of the same CNN (``benchmarks/bench_pool.py``) gives
the class pool 1.6x CuPy's reserved bytes and the page pool about CuPy's.

Frees are stream-ordered by construction: every burn kernel of a device runs on
the device's one stream, so a kernel enqueued after a range was freed and
reused runs after every kernel that read it.
"""
from __future__ import annotations

from burn.pagepool import DriverRefused, PagePool


class AdaptivePool(PagePool):
    """Device memory for one CUDA device; ``malloc`` is CuPy's allocator hook.

    ``driver`` (tests) replaces CuPy: an object with ``malloc(n) -> int``, ``free(ptr)``,
    ``wrap(ptr, size, owner) -> pointer``, ``total_memory() -> int`` and ``OutOfMemory``
    (the exception type its malloc raises when the device is full).

    Example (a pretend driver handing out addresses; the "pointer" is the Block itself):
        >>> class Addresses:
        ...     OutOfMemory = MemoryError
        ...     next = 1 << 20
        ...     def malloc(self, n):
        ...         self.next += n
        ...         return self.next - n
        ...     def free(self, ptr): pass
        ...     def wrap(self, ptr, size, owner): return owner
        ...     def total_memory(self): return 1 << 34
        >>> pool = AdaptivePool(driver=Addresses())
        >>> a = pool.malloc(3 << 20)
        >>> assert a.buf % 256 == 0 and pool.stats()["in_use_bytes"] == 3 << 20
        >>> del a
        >>> assert pool.stats()["in_use_bytes"] == 0
    """

    backend = "cuda"
    split_ends = False      # nothing moves here: every request from the bottom of its range

    def __init__(self, dc=None, driver=None):
        self.driver = driver if driver is not None else _CupyDriver(dc)
        self.index = getattr(dc, "index", 0)
        total = int(self.driver.total_memory())
        super().__init__(max_alloc=total, global_mem=total)

    # -- the hook ------------------------------------------------------------------------
    def malloc(self, nbytes: int):
        """Memory for ``nbytes`` (CuPy's allocator protocol: returns a MemoryPointer)."""
        block = self.alloc(nbytes)
        return self.driver.wrap(block.buf, block.alen, block)

    # -- the driver ----------------------------------------------------------------------
    def _device_name(self):
        return f"cuda:{self.index}"

    def _driver_alloc(self, size):
        try:
            return self.driver.malloc(size)
        except self.driver.OutOfMemory as e:
            raise DriverRefused(str(e)) from None

    def _driver_free(self, page):
        self.driver.free(page.buf)

    def _sub(self, page, off, alen):
        return page.buf + off


class _CupyDriver:
    """cudaMalloc / cudaFree through CuPy, results wrapped as CuPy MemoryPointers."""

    def __init__(self, dc):
        cp = dc.cp
        self.cp = cp
        self.index = dc.index
        self.OutOfMemory = cp.cuda.runtime.CUDARuntimeError

    def malloc(self, n):
        with self.cp.cuda.Device(self.index):
            return self.cp.cuda.runtime.malloc(n)

    def free(self, ptr):
        with self.cp.cuda.Device(self.index):
            self.cp.cuda.runtime.free(ptr)

    def total_memory(self):
        return int(self.cp.cuda.runtime.getDeviceProperties(self.index)["totalGlobalMem"])

    def wrap(self, ptr, size, owner):
        mem = self.cp.cuda.UnownedMemory(ptr, size, owner, self.index)
        return self.cp.cuda.MemoryPointer(mem, 0)


class CupyDefaultPool:
    """CuPy's own default pool behind the same interface and statistics (reserved = CuPy's
    ``total_bytes``). Selected with ``BURN_CUDA_POOL=cupy``: the baseline gpu_check.sh
    compares the adaptive pool's peak memory with.

    Example (on a GPU)::

        BURN_CUDA_POOL=cupy python gpu_check.py memory memory_cupy.json
    """

    def __init__(self, dc):
        self.mp = dc.cp.get_default_memory_pool()
        self.peak_reserved = self.peak_in_use = 0
        self.alloc_count = 0

    def malloc(self, nbytes: int):
        p = self.mp.malloc(nbytes)
        self.alloc_count += 1
        self.peak_reserved = max(self.peak_reserved, self.mp.total_bytes())
        self.peak_in_use = max(self.peak_in_use, self.mp.used_bytes())
        return p

    def cleanup(self):
        self.mp.free_all_blocks()

    def stats(self) -> dict:
        return {"reserved_bytes": self.mp.total_bytes(), "in_use_bytes": self.mp.used_bytes(),
                "peak_reserved_bytes": self.peak_reserved, "peak_in_use_bytes": self.peak_in_use,
                "alloc_count": self.alloc_count, "free_count": 0}

    def reset_peaks(self):
        self.peak_reserved, self.peak_in_use = self.mp.total_bytes(), self.mp.used_bytes()
