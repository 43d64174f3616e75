"""The device memory allocator of burn-wgpu: every buffer comes from a Pool.

Sizes are rounded to size classes (powers of two split in quarters, so at
most 25% is wasted), and a freed block goes back to its class's free list
instead of the driver: a training step that repeats reuses the same buffers
and ``reserved`` stays flat. ``cleanup()`` returns the free blocks to the
driver. The in-order queue makes reuse safe: a kernel enqueued after a
buffer was freed runs after every kernel that read it.

(The adaptive pool of DESIGN §8 — pages sized from observed allocations, a
small-allocation pool, moving live blocks off outdated pages — replaces the
size classes in a later slice; the stats and the interface stay.)
"""
from __future__ import annotations

import pyopencl as cl

from burn.errors import BurnError

MIN_BLOCK = 256


def size_class(nbytes: int) -> int:
    """The reserved size for a request of ``nbytes`` (>= MIN_BLOCK, <= 25% slack).

    >>> assert size_class(1) == 256 and size_class(1000) == 1024 and size_class(1100) == 1280
    """
    n = max(int(nbytes), MIN_BLOCK)
    top = 1 << (n - 1).bit_length()         # next power of two
    if top <= 4 * MIN_BLOCK:
        return top
    q = top // 8                             # quarter steps of the lower power of two
    return -(-n // q) * q


class Block:
    """One allocation; returns its buffer to the pool when the last reference goes."""

    __slots__ = ("buf", "size", "pool", "__weakref__")

    def __init__(self, buf, size, pool):
        self.buf = buf
        self.size = size
        self.pool = pool

    def __del__(self):
        pool = self.pool
        if pool is not None:
            try:
                pool._release(self.buf, self.size)
            except Exception:   # interpreter shutdown
                pass


class Pool:
    """Size-class free lists over ``cl.Buffer`` with statistics."""

    def __init__(self, dc):
        self.dc = dc
        self.free: dict = {}                # size -> [cl.Buffer]
        self.reserved = 0
        self.in_use = 0
        self.peak_reserved = 0
        self.peak_in_use = 0
        self.alloc_count = 0
        self.free_count = 0
        self.driver_allocs = 0

    def alloc(self, nbytes: int) -> Block:
        size = size_class(nbytes)
        bucket = self.free.get(size)
        if bucket:
            buf = bucket.pop()
        else:
            buf = self._new(size, nbytes)
        self.alloc_count += 1
        self.in_use += size
        if self.in_use > self.peak_in_use:
            self.peak_in_use = self.in_use
        return Block(buf, size, self)

    def _new(self, size, nbytes):
        try:
            buf = cl.Buffer(self.dc.ctx, cl.mem_flags.READ_WRITE, size)
        except cl.Error:
            self.cleanup()
            try:
                buf = cl.Buffer(self.dc.ctx, cl.mem_flags.READ_WRITE, size)
            except cl.Error as e:
                raise BurnError(
                    f"wgpu: out of device memory allocating {nbytes} bytes (block {size}) on "
                    f"{self.dc.device.name}: {self.in_use} bytes in use, {self.reserved} reserved "
                    f"({e}); free tensors or use smaller batches") from None
        self.driver_allocs += 1
        self.reserved += size
        if self.reserved > self.peak_reserved:
            self.peak_reserved = self.reserved
        return buf

    def _release(self, buf, size):
        self.in_use -= size
        self.free_count += 1
        self.free.setdefault(size, []).append(buf)

    def cleanup(self):
        """Return every free block to the driver."""
        for size, bufs in self.free.items():
            self.reserved -= size * len(bufs)
            for b in bufs:
                b.release()
        self.free.clear()

    def stats(self) -> dict:
        return {"reserved_bytes": self.reserved, "in_use_bytes": self.in_use,
                "peak_reserved_bytes": self.peak_reserved, "peak_in_use_bytes": self.peak_in_use,
                "alloc_count": self.alloc_count, "free_count": self.free_count,
                "driver_alloc_count": self.driver_allocs}
