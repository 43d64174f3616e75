"""The device memory allocator of burn-wgpu (DESIGN §8): burn's adaptive page pool
(:mod:`burn.pagepool`, shared with burn-cuda) over OpenCL buffers.

A page is one ``cl.Buffer``; a block is a sub-buffer of it (``get_sub_region``), or the
page itself when it spans the whole page. wgpu tensors hold their pool Block, so a live
block can be moved (``can_move``): under pressure the pool clears a window in a page by
copying the few live blocks inside it elsewhere (``enqueue_copy`` on the in-order queue).

``BURN_WGPU_POOL=pyopencl`` swaps in ``pyopencl.tools.MemoryPool`` behind the
same interface (for the benchmark that compares the two).
"""
from __future__ import annotations

import os

import pyopencl as cl

from burn.errors import BurnError, OutOfMemory  # noqa: F401  (OutOfMemory: re-exported)
from burn.pagepool import (ALIGN, DRAIN_AGE, DRAIN_EVERY, HIGH_DIV, MAX_PAGE, MIN_PAGE,  # noqa: F401
                           SLACK_DIV, SMALL_MAX, SMALL_PAGE_MAX, SMALL_PAGE_MIN, TARGET_DIV, Block,
                           DriverRefused, Page, PagePool, round_page)


class Pool(PagePool):
    """The adaptive pool of one OpenCL device (see :mod:`burn.pagepool`).

    Example:
        >>> import burn
        >>> from burn_wgpu import runtime
        >>> try:
        ...     pool = Pool(runtime.context(0))
        ... except burn.BurnError:
        ...     pool = None                     # no OpenCL device on this machine
        >>> if pool is not None:
        ...     b = pool.alloc(1000)
        ...     assert b.alen >= 1000 and pool.stats()["in_use_bytes"] == 1000
    """

    backend = "wgpu"
    can_move = True

    def __init__(self, dc):
        self.dc = dc
        dev = dc.device
        super().__init__(max_alloc=int(dev.max_mem_alloc_size), global_mem=int(dev.global_mem_size),
                         align=int(dev.mem_base_addr_align) // 8)

    def _device_name(self):
        return self.dc.device.name.strip()

    def _driver_alloc(self, size):
        try:
            return cl.Buffer(self.dc.ctx, cl.mem_flags.READ_WRITE, size)
        except cl.Error as e:
            raise DriverRefused(str(e)) from None

    def _driver_free(self, page):
        page.buf.release()   # pending commands keep the memory alive until they finish

    def _sub(self, page, off, alen):
        return page.buf.get_sub_region(off, alen) if (off or alen != page.size) else page.buf

    def _copy(self, dst, src, nbytes):
        if self.dc.recorder is not None:    # recorded commands name buffers: a moved one goes stale
            self.dc.recorder.refuse("the memory pool moved a live buffer while the step was recorded")
        try:
            cl.enqueue_copy(self.dc.queue, dst, src, byte_count=nbytes)
        except cl.Error as e:
            raise self.dc.error(f"moving a {nbytes}-byte buffer inside the memory pool", e) from None


class PyOpenCLPool:
    """``pyopencl.tools.MemoryPool`` behind the Pool interface (for comparisons only)."""

    def __init__(self, dc):
        from pyopencl.tools import ImmediateAllocator, MemoryPool
        self.dc = dc
        self.mp = MemoryPool(ImmediateAllocator(dc.queue))
        self.in_use = self.peak_in_use = self.peak_reserved = 0
        self.alloc_count = self.free_count = 0
        self.max_alloc = int(dc.device.max_mem_alloc_size)

    def alloc(self, nbytes):
        nbytes = int(nbytes)
        if nbytes > self.max_alloc:
            raise OutOfMemory(f"wgpu: out of device memory: {nbytes} bytes exceed the largest allocation "
                              f"({self.max_alloc} bytes)")
        buf = self.mp.allocate(max(nbytes, 1))
        self.alloc_count += 1
        self.in_use += nbytes
        self.peak_in_use = max(self.peak_in_use, self.in_use)
        self.peak_reserved = max(self.peak_reserved, self.mp.managed_bytes)
        return Block(buf, nbytes, self)

    def _release(self, block):
        self.in_use -= block.size
        self.free_count += 1
        block.buf = None        # the PooledBuffer goes back to pyopencl's bins

    def cleanup(self):
        self.mp.free_held()

    def stats(self):
        return {"reserved_bytes": self.mp.managed_bytes, "in_use_bytes": self.in_use,
                "peak_reserved_bytes": self.peak_reserved, "peak_in_use_bytes": self.peak_in_use,
                "alloc_count": self.alloc_count, "free_count": self.free_count, "pool": "pyopencl"}

    def reset_peaks(self):
        self.peak_reserved = self.mp.managed_bytes
        self.peak_in_use = self.in_use


def make_pool(dc):
    """The allocator of a device: the adaptive pool unless ``BURN_WGPU_POOL=pyopencl``."""
    kind = os.environ.get("BURN_WGPU_POOL", "adaptive").strip().lower()
    if kind == "pyopencl":
        return PyOpenCLPool(dc)
    if kind not in ("", "adaptive"):
        raise BurnError(f"wgpu: BURN_WGPU_POOL={kind!r} is not a pool (use 'adaptive' or 'pyopencl')")
    return Pool(dc)
