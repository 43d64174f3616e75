"""The adaptive page pool of DESIGN §8, shared by the backends that own device memory.

Every allocation is a range of a *page* (one driver allocation). Two pools
share the page logic:

- the **small pool** serves requests up to ``SMALL_MAX`` bytes (scalars, biases,
  losses: many, short-lived) from its own pages, so they never fragment the
  pages that hold activations;
- the **main pool** serves the rest. Its page size follows the observed
  allocations: a new page is ``max(request + slack, target)`` rounded to 1/32
  of its power of two, where ``target`` is a twelfth of the peak in-use bytes
  seen so far (clamped to ``[MIN_PAGE, MAX_PAGE]``); large tensors get a page
  that just fits them, small ones share pages with their neighbours.

A request takes the best-fitting free range of any page (coalesced on free),
so a repeated training step reuses the same ranges and ``reserved`` stays
flat. A small request that finds no room in the small pool takes a free range
of the main pool before a new small page is made. When no free range fits, a
backend that can move live buffers (``can_move``: wgpu, whose tensors hold a
pool Block) first tries to clear a window of the request's size in an existing
page by moving the few live blocks inside it (at most half the request's bytes)
to other pages; a new page comes only after that. Empty pages smaller than a
new page are released and their bytes added to it, so reserved memory does not
grow while free space becomes contiguous. A page that empties is released at
once when it is *outdated* (less than half the current target: the pool has
grown past it), otherwise kept for reuse and released if it stays empty for
``DRAIN_AGE`` allocations or on ``cleanup()``. Running out of memory (a request
above the device's largest allocation, or refused by the driver after every
empty page was released) raises :class:`burn.OutOfMemory` naming the sizes.

A backend subclasses :class:`PagePool` and supplies the driver: ``_driver_alloc``,
``_driver_free``, ``_sub`` (a block's handle inside a page) and, when it can move
buffers, ``_copy``. Reuse without events is safe when a device runs its kernels
on one in-order queue/stream: a kernel enqueued after a range was freed runs
after every kernel that used it.

Example (a pool over a pretend driver that hands out addresses):
    >>> class Addresses(PagePool):
    ...     backend = "demo"
    ...     next = 1 << 20
    ...     def _driver_alloc(self, size):
    ...         self.next += size
    ...         return self.next - size
    ...     def _driver_free(self, page):
    ...         pass
    ...     def _sub(self, page, off, alen):
    ...         return page.buf + off
    >>> pool = Addresses(max_alloc=1 << 30, global_mem=1 << 32)
    >>> a, b = pool.alloc(100_000), pool.alloc(100_000)
    >>> assert a.page is b.page and b.buf - a.buf >= 100_000
    >>> del a, b
    >>> assert pool.stats()["in_use_bytes"] == 0
"""
from __future__ import annotations

import bisect
import threading
import weakref

from .errors import OutOfMemory

ALIGN = 256                  # range origins (>= every device's base address alignment we met)
SMALL_MAX = 32 * 1024        # requests up to this go to the small pool
SMALL_PAGE_MIN = 64 * 1024
SMALL_PAGE_MAX = 2 * 2 ** 20
MIN_PAGE = 256 * 1024
MAX_PAGE = 256 * 2 ** 20
DRAIN_EVERY = 512            # allocations between scans for outdated empty pages
DRAIN_AGE = 4096             # an empty page unused for this many allocations is released
TARGET_DIV = 12              # new pages hold at least 1/TARGET_DIV of the peak in-use bytes
HIGH_DIV = 4                 # requests under target / HIGH_DIV are taken from the top of a range
SLACK_DIV = 16               # a page made to fit one request gets 1/SLACK_DIV extra


def round_page(n: int) -> int:
    """``n`` rounded up to 1/32 of its power of two (<= ~3% slack), at least ALIGN.

    >>> assert round_page(1) == 256 and round_page(2 ** 20) == 2 ** 20
    >>> assert 2 ** 20 + 1 < round_page(2 ** 20 + 1) <= 2 ** 20 * 1.07
    """
    n = max(int(n), ALIGN)
    gran = max(ALIGN, (1 << (n - 1).bit_length()) // 32)
    return -(-n // gran) * gran


class Block:
    """One allocation: ``buf`` is the backend's handle (an OpenCL sub-buffer on wgpu, a device
    address on cuda) of ``alen`` bytes at ``off`` in ``page``; ``size`` is the requested size.
    Its range returns to the pool when the last reference goes.

    Example:
        >>> b = Block(4096, 100, None)          # no pool: dropping it returns nothing
        >>> assert b.buf == 4096 and b.size == 100
    """

    __slots__ = ("buf", "size", "pool", "page", "off", "alen", "__weakref__")

    def __init__(self, buf, size, pool, page=None, off=0, alen=0):
        self.buf = buf
        self.size = size
        self.pool = pool
        self.page = page
        self.off = off
        self.alen = alen

    def __del__(self):
        pool = self.pool
        if pool is not None:
            try:
                pool._release(self)
            except Exception:   # interpreter shutdown
                pass


class Page:
    """One driver allocation and its free ranges: ``starts``/``lens`` sorted by offset.

    Example:
        >>> p = Page(buf=0, size=1024, small=False, tick=0)
        >>> off = p.take(0, 256)                # from the bottom of free range 0
        >>> p.give(off, 256)                    # coalesced back into one range
        >>> assert (off, p.starts, p.lens, p.used) == (0, [0], [1024], 0)
    """

    __slots__ = ("buf", "size", "starts", "lens", "used", "last_use", "small", "live")

    def __init__(self, buf, size, small, tick):
        self.buf = buf
        self.size = size
        self.starts = [0]
        self.lens = [size]
        self.used = 0
        self.last_use = tick
        self.small = small
        self.live: dict = {}         # offset -> weakref to the Block there

    def take(self, i, alen, high=False):
        off = self.starts[i]
        if self.lens[i] == alen:
            del self.starts[i]
            del self.lens[i]
        elif high:
            off += self.lens[i] - alen
            self.lens[i] -= alen
        else:
            self.starts[i] += alen
            self.lens[i] -= alen
        self.used += alen
        return off

    def take_at(self, i, off, alen):
        """Take ``[off, off + alen)`` out of free range ``i`` (which holds it)."""
        st, ln = self.starts[i], self.lens[i]
        del self.starts[i]
        del self.lens[i]
        if off + alen < st + ln:
            self.starts.insert(i, off + alen)
            self.lens.insert(i, st + ln - off - alen)
        if off > st:
            self.starts.insert(i, st)
            self.lens.insert(i, off - st)
        self.used += alen
        return off

    def give(self, off, alen):
        self.used -= alen
        i = bisect.bisect_left(self.starts, off)
        # coalesce with the following and the preceding free range
        if i < len(self.starts) and off + alen == self.starts[i]:
            alen += self.lens[i]
            del self.starts[i]
            del self.lens[i]
        if i > 0 and self.starts[i - 1] + self.lens[i - 1] == off:
            self.lens[i - 1] += alen
        else:
            self.starts.insert(i, off)
            self.lens.insert(i, alen)


class DriverRefused(Exception):
    """Raised by a backend's ``_driver_alloc`` when the driver has no memory for a page; the
    pool then releases its empty pages, retries once without slack, and raises
    :class:`burn.OutOfMemory` naming the sizes.

    Example:
        >>> assert str(DriverRefused("cudaErrorMemoryAllocation")) == "cudaErrorMemoryAllocation"
    """


class PagePool:
    """The adaptive pool of one device (small pool + main pool) with statistics.

    ``max_alloc``: the largest single driver allocation; ``global_mem``: the device's memory;
    ``align``: range alignment (at least :data:`ALIGN`). Subclasses set ``backend`` (the
    name in messages), implement the driver methods and may set ``can_move``.

    Example (see the module's for a whole driver):
        >>> assert PagePool(max_alloc=1 << 30, global_mem=1 << 32).stats()["reserved_bytes"] == 0
    """

    backend = "device"
    can_move = False
    # take requests under target / HIGH_DIV from the top of a free range, the others from its
    # bottom. With moves (wgpu) that keeps freed large ranges whole; without them, the small
    # blocks at a page's top and the large ones at its bottom leave a hole between them that
    # fits neither once the target has grown (replayed traces: 1.21x CuPy's pool's peak on
    # burn-cuda's CNN at batch 64 with it, 0.97x without), so a backend that cannot move
    # sets it False
    split_ends = True

    def __init__(self, *, max_alloc: int, global_mem: int, align: int = ALIGN):
        self.max_alloc = int(max_alloc)
        self.global_mem = int(global_mem)
        self.align = max(ALIGN, int(align))
        self.pages: list = []          # main pool
        self.small_pages: list = []
        self.reserved = 0
        self.in_use = 0                # requested bytes of live allocations
        self.peak_reserved = 0
        self.peak_in_use = 0
        self.small_in_use = 0
        self.small_peak = 0
        self.alloc_count = 0
        self.free_count = 0
        self.driver_allocs = 0
        self.driver_frees = 0
        self.moves = 0
        self.moved_bytes = 0
        # one mutation at a time: allocations wait for the lock; a release that cannot take it
        # (the cyclic GC inside an allocation on this thread, or another thread's work) is
        # deferred and applied by the lock's holder before it lets go
        self._lock = threading.Lock()
        self._deferred: list = []
        self.target = MIN_PAGE
        self.small_target = SMALL_PAGE_MIN

    # -- the driver (backends implement these) ---------------------------------------------
    def _driver_alloc(self, size: int):
        """A new driver allocation of ``size`` bytes (its handle); DriverRefused when full."""
        raise NotImplementedError

    def _driver_free(self, page: Page) -> None:
        """Give ``page.buf`` back to the driver."""
        raise NotImplementedError

    def _sub(self, page: Page, off: int, alen: int):
        """The handle of ``[off, off + alen)`` inside ``page``."""
        raise NotImplementedError

    def _copy(self, dst, src, nbytes: int) -> None:
        """Enqueue a device copy of ``nbytes`` from handle ``src`` to ``dst`` (``can_move``)."""
        raise NotImplementedError

    def _device_name(self) -> str:
        return self.backend

    # -- allocation ------------------------------------------------------------------
    def alloc(self, nbytes: int) -> Block:
        """A Block of at least ``nbytes`` bytes (its range returns when the Block is dropped)."""
        # the cyclic GC may finalize a Block in the middle of an allocation (between finding a
        # free range and taking it): such releases wait until the allocation is done
        lock = self._lock
        lock.acquire()
        try:
            return self._alloc(nbytes)
        finally:
            if self._deferred:
                self._apply_deferred()
            lock.release()

    def _apply_deferred(self):
        while self._deferred:
            self._give_back(*self._deferred.pop())

    def _alloc(self, nbytes):
        nbytes = int(nbytes)
        small = nbytes <= SMALL_MAX
        alen = -(-max(nbytes, 1) // self.align) * self.align
        pages = self.small_pages if small else self.pages
        page, i = self._best_fit(pages, alen)
        if page is None and small:
            # a free range of the main pool beats a new small page (taken from the top of the range)
            page, i = self._best_fit(self.pages, alen)
        at = None
        if page is None:
            c = self._compact(pages, alen, small) if self.can_move else None
            if c is not None:
                page, i, at = c
            else:
                page, i = self._new_page(alen, small, nbytes), 0     # one free range
        if at is not None:
            off = page.take_at(i, at, alen)
        else:
            # small requests from the top of a range, large ones from the bottom: the two kinds
            # stay apart, so a freed large range is not split by a small neighbour (where
            # blocks can move; see ``split_ends``)
            off = page.take(i, alen, high=self.split_ends and alen * HIGH_DIV < self.target)
        page.last_use = self.alloc_count
        self.alloc_count += 1
        self.in_use += nbytes
        if self.in_use > self.peak_in_use:
            self.peak_in_use = self.in_use
            self.target = min(MAX_PAGE, max(MIN_PAGE, round_page(self.peak_in_use // TARGET_DIV)))
        if small:
            self.small_in_use += nbytes
            if self.small_in_use > self.small_peak:
                self.small_peak = self.small_in_use
                self.small_target = min(SMALL_PAGE_MAX, max(SMALL_PAGE_MIN, round_page(self.small_peak // 4)))
        if self.alloc_count % DRAIN_EVERY == 0:
            self._drain(self.alloc_count - DRAIN_AGE)
        block = Block(self._sub(page, off, alen), nbytes, self, page, off, alen)
        if self.can_move:           # only compaction needs to find a page's live blocks
            page.live[off] = weakref.ref(block)
        return block

    def _compact(self, pages, alen, small):
        """Under pressure (no free range fits), clear a window of ``alen`` bytes in some page by
        moving the few live blocks inside it elsewhere, so the request takes the window: the
        window with the fewest live bytes (at most half the request) over every page and every
        block boundary. Moved blocks go to free ranges of other pages, or, when nothing fits,
        to a new page sized for them, which grows reserved less than a page for the request.

        Moving is safe: a block's handle is read when a launch is enqueued, the copy is enqueued
        on the same in-order queue, and the old range is reused only by later commands."""
        best = None
        for p in pages:
            if p.size < alen or p.size - p.used < alen // 2:
                continue
            blocks = sorted((b for b in (r() for r in list(p.live.values())) if b is not None),
                            key=lambda b: b.off)
            if not blocks:
                continue
            offs = [b.off for b in blocks]
            ends = [b.off + b.alen for b in blocks]         # sorted too: blocks do not overlap
            pre = [0]
            for b in blocks:
                pre.append(pre[-1] + b.alen)
            # a best window starts at the page start, right after a block, or ends right before one
            for s in {0, p.size - alen, *ends, *(o - alen for o in offs)}:
                if s < 0 or s + alen > p.size:
                    continue
                lo, hi = bisect.bisect_right(ends, s), bisect.bisect_left(offs, s + alen)
                cost = pre[hi] - pre[lo]
                if cost <= alen // 2 and (best is None or cost < best[0]):
                    best = (cost, p, s, blocks[lo:hi])
        if best is None:
            return None
        cost, p, s, inside = best
        inside.sort(key=lambda b: -b.alen)
        others = [q for q in pages if q is not p]
        for k, b in enumerate(inside):
            q, j = self._best_fit(others, b.alen)
            if q is None:
                rest = sum(x.alen for x in inside[k:])
                q, j = self._new_page(rest, small, rest, keep=p), 0
                others.append(q)
            self._move(b, q, j)
        i = bisect.bisect_right(p.starts, s) - 1
        if i < 0 or s + alen > p.starts[i] + p.lens[i]:
            return None     # a block finalized during this allocation still holds part of the window
        return p, i, s

    def _move(self, b, q, j):
        off = q.take(j, b.alen, high=self.split_ends and b.alen * HIGH_DIV < self.target)
        dst = self._sub(q, off, b.alen)
        try:
            self._copy(dst, b.buf, b.alen)
        except Exception:
            q.give(off, b.alen)         # the block stays where it was
            raise
        p = b.page
        p.live.pop(b.off, None)
        p.give(b.off, b.alen)
        b.buf, b.page, b.off = dst, q, off
        q.live[off] = weakref.ref(b)
        q.last_use = self.alloc_count
        self.moves += 1
        self.moved_bytes += b.alen

    @staticmethod
    def _best_fit(pages, alen):
        """The page and index of the smallest free range of at least ``alen`` bytes."""
        best, bi, blen = None, 0, 1 << 62
        for p in pages:
            if p.size - p.used < alen:
                continue
            i = 0
            for ln in p.lens:
                if alen <= ln < blen:
                    if ln == alen:
                        return p, i
                    best, bi, blen = p, i, ln
                i += 1
        return best, bi

    def _new_page(self, alen, small, nbytes, keep=None):
        if small:
            size = max(self.small_target, alen)
        else:
            # grow to fit (+ 1/16 slack for a slightly larger request next time), at least the target
            size = alen + alen // SLACK_DIV if alen >= self.target else self.target
        # empty pages too small for this request are merged into the new page: released first,
        # their bytes added to it, so reserved does not grow while free space gets contiguous
        pages = self.small_pages if small else self.pages
        empty = [p for p in pages if p.used == 0 and p is not keep]
        if empty and alen <= self.max_alloc:
            merged = sum(p.size for p in empty)
            for p in empty:
                self._free_page(p)
            size = max(size, merged)
        size = min(round_page(size), max(alen, self.max_alloc // self.align * self.align))
        if alen > self.max_alloc:
            raise OutOfMemory(
                f"{self.backend}: out of device memory: a buffer of {nbytes} bytes exceeds the largest "
                f"allocation {self._device_name()} allows ({self.max_alloc} bytes; {self.global_mem} bytes "
                f"of global memory, {self.in_use} in use, {self.reserved} reserved); use smaller tensors or batches")
        if self.reserved + size > self.global_mem:
            self._drain(None)
        if self.reserved + size > self.global_mem:
            size = alen                 # no slack when memory is tight
        if self.reserved + size > self.global_mem:
            raise self._oom(nbytes, size, "exceeds the device's global memory")
        try:
            buf = self._driver_alloc(size)
        except DriverRefused:
            self._drain(None)           # pressure: every empty page back, then once more, no slack
            size = alen
            try:
                buf = self._driver_alloc(size)
            except DriverRefused as e:
                raise self._oom(nbytes, size, f"the driver refused it ({e})") from None
        page = Page(buf, size, small, self.alloc_count)
        (self.small_pages if small else self.pages).append(page)
        self.driver_allocs += 1
        self.reserved += size
        if self.reserved > self.peak_reserved:
            self.peak_reserved = self.reserved
        return page

    def _oom(self, nbytes, size, why):
        return OutOfMemory(
            f"{self.backend}: out of device memory allocating {nbytes} bytes (page of {size} bytes) on "
            f"{self._device_name()}: {why}; {self.in_use} bytes in use, {self.reserved} reserved, "
            f"{self.global_mem} bytes of global memory; free tensors (del + memory_cleanup) or use smaller batches")

    def pin(self, block) -> None:
        """Never move ``block`` (compaction skips it): commands recorded with its handle
        (burn-wgpu's pre-bound replay) are enqueued again later.

        Example:
            >>> class Mem(PagePool):
            ...     can_move = True
            ...     def _driver_alloc(self, size): return size
            ...     def _driver_free(self, page): pass
            ...     def _sub(self, page, off, alen): return off
            >>> pool = Mem(max_alloc=1 << 30, global_mem=1 << 32)
            >>> b = pool.alloc(1000)
            >>> pool.pin(b)
            >>> assert b.off not in b.page.live
        """
        lock = self._lock
        with lock:
            if block.page is not None:
                block.page.live.pop(block.off, None)

    # -- release -----------------------------------------------------------------------
    def _release(self, block):
        block.buf = None
        lock = self._lock
        if lock.acquire(False):
            try:
                self._give_back(block.page, block.off, block.alen, block.size)
                if self._deferred:
                    self._apply_deferred()
            finally:
                lock.release()
        else:       # list.append is atomic: the lock's holder applies it
            self._deferred.append((block.page, block.off, block.alen, block.size))

    def _give_back(self, page, off, alen, size):
        self.in_use -= size
        self.free_count += 1
        if size <= SMALL_MAX:        # by request size: a small request may sit on a main page
            self.small_in_use -= size
        page.live.pop(off, None)
        page.give(off, alen)
        if page.used == 0:
            target = self.small_target if page.small else self.target
            if page.size < target // 2:           # outdated: the pool has grown past this page
                self._free_page(page)

    def _free_page(self, page):
        pages = self.small_pages if page.small else self.pages
        for i, p in enumerate(pages):
            if p is page:
                del pages[i]
                break
        else:
            return
        self.reserved -= page.size
        self.driver_frees += 1
        self._driver_free(page)

    def _drain(self, older_than):
        """Release empty pages (all of them, or those last used before ``older_than``)."""
        for p in [p for p in self.pages + self.small_pages if p.used == 0]:
            if older_than is None or p.last_use < older_than:
                self._free_page(p)

    def cleanup(self):
        """Return every empty page to the driver."""
        with self._lock:
            self._apply_deferred()
            self._drain(None)

    def stats(self) -> dict:
        """Bytes reserved from the driver / handed out, their peaks, and counters."""
        return {"reserved_bytes": self.reserved, "in_use_bytes": self.in_use,
                "peak_reserved_bytes": self.peak_reserved, "peak_in_use_bytes": self.peak_in_use,
                "alloc_count": self.alloc_count, "free_count": self.free_count,
                "driver_alloc_count": self.driver_allocs, "driver_free_count": self.driver_frees,
                "moves": self.moves, "moved_bytes": self.moved_bytes, "pages": len(self.pages),
                "small_pages": len(self.small_pages), "page_target_bytes": self.target, "pool": "adaptive"}

    def reset_peaks(self):
        """Start the peaks again from the current values (for measuring one phase)."""
        self.peak_reserved = self.reserved
        self.peak_in_use = self.in_use
