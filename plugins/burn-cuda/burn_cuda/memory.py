"""The adaptive device memory pool of burn-cuda (DESIGN §8), behind CuPy's allocator hook.

CuPy asks an allocator for a ``MemoryPointer`` per array; :class:`AdaptivePool`
answers with memory it got from ``cudaMalloc`` and takes it back when CuPy drops
the array (a small owner object inside CuPy's ``UnownedMemory`` tells it). It is
installed only around burn's own kernels (``DeviceContext.scope``), never with
``cupy.cuda.set_allocator``: other libraries in the process keep CuPy's pool.

What adapts:

* **Small allocations** (<= :data:`SMALL_MAX`) are slots of power-of-two size
  classes carved from :data:`SMALL_PAGE` pages, one class per page (a slab).
  Short-lived scalars and bias-sized buffers then never reach the driver and do
  not fragment the large blocks. A page that empties is returned to the driver
  at once unless it is the last page of its class (kept as hysteresis).
* **Large allocations** are rounded by what was observed: a size seen before
  (training steps allocate the same activation sizes every step) is rounded only
  to :data:`GRAIN` bytes, so its block is reused exactly with no slack; a size
  seen for the first time gets a quarter-power-of-two class (<= 25% slack) so
  that one-off sizes still share blocks. A request takes a free block of its own
  size, else the smallest free block no larger than its quarter-power-of-two class.
* **Pressure**: when ``cudaMalloc`` fails, every cached free block and empty
  page is returned to the driver and the allocation retried once.

Not done yet (a later slice): moving live allocations off sparsely used pages.

Frees are stream-ordered by construction: every burn kernel of a device runs on
the device's one stream, so a kernel enqueued after a block was freed and
reused runs after every kernel that read it.
"""
from __future__ import annotations

import bisect

SMALL_MAX = 1 << 20          # bytes: requests up to this size come from slab pages
SMALL_PAGE = 2 << 20         # bytes per slab page
SMALL_MIN = 512              # smallest slot
GRAIN = 512                  # rounding of recurring large sizes (CuPy's own granularity)


def small_class(nbytes: int) -> int:
    """Slot size of a small request: the next power of two, at least SMALL_MIN.

    >>> assert small_class(1) == 512 and small_class(513) == 1024 and small_class(SMALL_MAX) == SMALL_MAX
    """
    return max(SMALL_MIN, 1 << (max(int(nbytes), 1) - 1).bit_length())


def large_class(nbytes: int) -> int:
    """Quarter-power-of-two class of a first-seen large request (<= 25% slack).

    >>> assert large_class(3 << 20) == 3 << 20 and large_class((3 << 20) + 1) == 7 << 19
    """
    n = int(nbytes)
    top = 1 << (n - 1).bit_length()
    q = top // 8
    return -(-n // q) * q


def _round(n: int, g: int) -> int:
    return -(-n // g) * g


class _Page:
    __slots__ = ("ptr", "slot", "free", "live")

    def __init__(self, ptr, slot):
        self.ptr = ptr
        self.slot = slot
        self.free = list(range(SMALL_PAGE // slot - 1, -1, -1))   # pop() hands out slot 0 first
        self.live = 0


class _Owner:
    """Lives inside CuPy's UnownedMemory; its death is the array's free."""

    __slots__ = ("pool", "ptr", "size", "page", "__weakref__")

    def __init__(self, pool, ptr, size, page):
        self.pool, self.ptr, self.size, self.page = pool, ptr, size, page

    def __del__(self):
        pool = self.pool
        if pool is not None:
            self.pool = None
            try:
                pool._release(self)
            except Exception:     # interpreter shutdown: the driver frees everything anyway
                pass


class AdaptivePool:
    """Device memory for one CUDA device; ``malloc`` is CuPy's allocator hook.

    ``driver`` (tests) replaces CuPy: an object with ``malloc(n) -> int``, ``free(ptr)``,
    ``wrap(ptr, size, owner) -> pointer`` and ``OutOfMemory`` (the exception type).
    """

    def __init__(self, dc=None, driver=None):
        self.driver = driver if driver is not None else _CupyDriver(dc)
        self.free_large: dict = {}        # size -> [ptr]
        self.free_sizes: list = []        # sorted sizes with a free block
        self.pages: dict = {}             # slot size -> [_Page]
        self.seen: dict = {}              # GRAIN-rounded large size -> requests so far
        self.reserved = self.in_use = self.peak_reserved = self.peak_in_use = 0
        self.alloc_count = self.free_count = self.driver_allocs = self.reused = 0

    # -- the hook ------------------------------------------------------------------------
    def malloc(self, nbytes: int):
        """Memory for ``nbytes`` (CuPy's allocator protocol: returns a MemoryPointer)."""
        nbytes = int(nbytes)
        if nbytes <= SMALL_MAX:
            owner = self._small(nbytes)
        else:
            owner = self._large(nbytes)
        self.alloc_count += 1
        self.in_use += owner.size
        self.peak_in_use = max(self.peak_in_use, self.in_use)
        return self.driver.wrap(owner.ptr, owner.size, owner)

    def _small(self, nbytes):
        slot = small_class(nbytes)
        pages = self.pages.setdefault(slot, [])
        page = next((p for p in reversed(pages) if p.free), None)
        if page is None:
            page = _Page(self._driver_malloc(SMALL_PAGE), slot)
            pages.append(page)
        else:
            self.reused += 1
        i = page.free.pop()
        page.live += 1
        return _Owner(self, page.ptr + i * slot, slot, page)

    def _large(self, nbytes):
        g = _round(nbytes, GRAIN)
        n_seen = self.seen.get(g, 0)
        self.seen[g] = n_seen + 1
        size = g if n_seen else large_class(nbytes)
        ptr = self._take_free(size, nbytes)
        if ptr is not None:
            self.reused += 1
            return _Owner(self, ptr[0], ptr[1], None)
        return _Owner(self, self._driver_malloc(size), size, None)

    def _take_free(self, size, need):
        """A cached block of ``size`` bytes, else the smallest one no larger than the request's
        quarter-power-of-two class (a block cached under the class of a first-seen size serves
        the same size when it recurs)."""
        lst = self.free_large.get(size)
        if not lst:
            i = bisect.bisect_left(self.free_sizes, need)
            size = None
            if i < len(self.free_sizes) and self.free_sizes[i] <= max(large_class(need), need + need // 8):
                size = self.free_sizes[i]
            if size is None:
                return None
            lst = self.free_large[size]
        ptr = lst.pop()
        if not lst:
            del self.free_large[size]
            self.free_sizes.remove(size)
        return ptr, size

    def _driver_malloc(self, size):
        try:
            ptr = self.driver.malloc(size)
        except self.driver.OutOfMemory:
            self.cleanup()                  # pressure: give every cached byte back, retry once
            ptr = self.driver.malloc(size)
        self.driver_allocs += 1
        self.reserved += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return ptr

    def _release(self, owner):
        self.free_count += 1
        self.in_use -= owner.size
        page = owner.page
        if page is not None:
            page.free.append((owner.ptr - page.ptr) // page.slot)
            page.live -= 1
            pages = self.pages[page.slot]
            if page.live == 0 and len(pages) > 1:      # keep one empty page per class
                pages.remove(page)
                self._driver_free(page.ptr, SMALL_PAGE)
            return
        lst = self.free_large.get(owner.size)
        if lst is None:
            lst = self.free_large[owner.size] = []
            bisect.insort(self.free_sizes, owner.size)
        lst.append(owner.ptr)

    def _driver_free(self, ptr, size):
        self.driver.free(ptr)
        self.reserved -= size

    # -- maintenance ---------------------------------------------------------------------
    def cleanup(self):
        """Return every free large block and every empty page to the driver."""
        for size, lst in self.free_large.items():
            for ptr in lst:
                self._driver_free(ptr, size)
        self.free_large.clear()
        self.free_sizes.clear()
        for slot, pages in self.pages.items():
            for p in [p for p in pages if p.live == 0]:
                pages.remove(p)
                self._driver_free(p.ptr, SMALL_PAGE)

    def stats(self) -> dict:
        """Bytes reserved from the driver / handed out, their peaks, and counters."""
        return {"reserved_bytes": self.reserved, "in_use_bytes": self.in_use,
                "peak_reserved_bytes": self.peak_reserved, "peak_in_use_bytes": self.peak_in_use,
                "alloc_count": self.alloc_count, "free_count": self.free_count,
                "driver_allocs": self.driver_allocs, "reused": self.reused,
                "small_pages": sum(len(p) for p in self.pages.values())}

    def reset_peaks(self):
        self.peak_reserved, self.peak_in_use = self.reserved, self.in_use


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

    def wrap(self, ptr, size, owner):
        mem = self.cp.cuda.UnownedMemory(ptr, size, owner, self.index)
        return self.cp.cuda.MemoryPointer(mem, 0)


class CupyDefaultPool:
    """CuPy's own default pool behind the same interface and statistics (reserved = CuPy's
    ``total_bytes``). Selected with ``BURN_CUDA_POOL=cupy``: the baseline gpu_check.sh
    compares the adaptive pool's peak memory with."""

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
