"""flex's native worker pool: chunks of one JIT kernel call on several cores, handed over in
native code (``kernels/ll/workers.ll``).

flex's Python pool (:mod:`burn_flex.threads`) hands a chunk to a thread that must wake and take
the GIL: ~20-50 us a hand-off on this 2-core machine, as much as splitting a 100 us convolution
saves. Here a worker is a Python thread that enters a JIT function once (``wp_worker``, through
ctypes, so it holds no GIL) and stays there: it claims chunks of the published task with one
compare-and-swap, spins between tasks for a short while (``BURN_FLEX_SPIN_US``, default 200 us,
yielding the core every few rounds), then sleeps in the kernel (a futex, on Linux) until a task
wakes it; where there is no futex it returns to Python and parks on an event instead. The calling
thread publishes a task (a kernel's chunk function and its argument table), runs chunks itself
and returns when every chunk has run. A spinning worker joins within ~1 us.

Which calls split is the kernels' choice (``kernels.conv_direct._SPLIT_MACS``,
``kernels.conv._SPLIT_ELEMS``): on this 2-vCPU VM only large ones, because inside a training step
waking a sleeping worker costs the caller ~10-100 us and OpenBLAS's own worker, spinning for
~0.1 s after each threaded GEMM, holds the second core (docs/benchmarks.md, round 16).

The pool has ``threads.num_threads() - 1`` workers (``burn.set_num_threads`` / ``BURN_FLEX_THREADS``
size it) and runs one task at a time: a second Python thread that finds it busy runs its kernel
on its own thread (results do not depend on where a chunk runs: chunks write disjoint outputs).
``BURN_FLEX_NATIVE_POOL=0`` turns it off (every kernel call then runs on the calling thread).

Example::

    >>> from burn_flex import native_pool
    >>> p = native_pool.pool()          # None with one thread, or without the JIT
    >>> p is None or p.threads >= 2
    True
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

from . import jit, threads

# int64s per worker slot: one cache line each, so a worker's flag shares no line with another's
_SLOT = 8
# Held while a task runs. One for every pool: the tasks share workers.ll's globals, so a pool being
# replaced (a new thread count) and its successor must never run tasks at once.
_TASK_LOCK = threading.Lock()
# how long an idle worker spins for the next task before it sleeps
_SPIN_US_DEFAULT = 200


def enabled() -> bool:
    """Whether kernels may split over the native pool (``BURN_FLEX_NATIVE_POOL`` is not ``0``).

    Example::

        >>> from burn_flex import native_pool
        >>> isinstance(native_pool.enabled(), bool)
        True
    """
    return os.environ.get("BURN_FLEX_NATIVE_POOL", "1").strip() != "0"


def _spin_cycles() -> int:
    raw = os.environ.get("BURN_FLEX_SPIN_US", "").strip()
    try:
        us = float(raw) if raw else _SPIN_US_DEFAULT
    except ValueError:
        us = -1.0
    if not us >= 0:                 # also NaN
        raise ValueError(f"BURN_FLEX_SPIN_US={raw!r}: expected microseconds (a number >= 0)")
    return int(us * 3000)           # cycles of the time-stamp counter, ~3 GHz (an estimate is enough)


class NativePool:
    """``threads`` threads (the caller and ``threads - 1`` workers) sharing chunks of one kernel call
    at a time (the module docstring). Made by :func:`pool`.

    Example::

        >>> from burn_flex import native_pool
        >>> p = native_pool.pool()
        >>> p is None or isinstance(p.busy(), bool)
        True
    """

    def __init__(self, k, n_threads: int):
        w = k.workers
        self._kernels = k                 # the JIT engine holding the code the workers run stays alive
        self._run, self._worker, self._shutdown = w.run, w.worker, w.shutdown
        self.threads = n_threads
        self.lock = _TASK_LOCK
        self.closed = False
        self.slots = np.zeros((n_threads - 1) * _SLOT, np.int64)
        base = jit._addr(self.slots)
        self._events = [threading.Event() for _ in range(n_threads - 1)]
        self._threads = [threading.Thread(target=self._serve, args=(base + 8 * _SLOT * i, self._events[i]),
                                          name=f"burn-flex-native-{i + 1}", daemon=True)
                         for i in range(n_threads - 1)]
        for t, e in zip(self._threads, self._events):
            t.start()
            e.set()             # into native code at once (where the kernel lets them sleep there)

    def _serve(self, slot, event):
        while True:
            event.wait()
            event.clear()
            if self.closed or self._worker(slot) == 1:
                return

    def chunks(self, n_items: int, min_chunk_items: int = 1) -> int:
        """How many chunks a call over ``n_items`` items is cut into here: at most
        ``CHUNKS_PER_THREAD`` per thread, each of ``min_chunk_items`` items at least.

        Example::

            >>> from burn_flex import native_pool
            >>> p = native_pool.pool()
            >>> p is None or p.chunks(64, 16) == 4
            True
        """
        return min(n_items, CHUNKS_PER_THREAD * self.threads, n_items // max(1, min_chunk_items))

    def busy(self) -> bool:
        """Whether a task is running now (another thread's kernel call).

        Example::

            >>> from burn_flex import native_pool
            >>> p = native_pool.pool()
            >>> p is None or p.busy() is False
            True
        """
        return self.lock.locked()

    def run(self, chunk_fn: int, table: int, n_chunks: int, wake: bool = True) -> bool:
        """Run ``chunk_fn(table, c)`` (JIT code: addresses) for c in 0..n_chunks-1 over the pool and
        return True when all have run; False without running anything when the pool is busy with
        another thread's task (the caller then runs its kernel itself). ``wake``: wake workers that
        sleep (else only workers still spinning from an earlier task join: waking one costs the
        caller ~10-100 us on this VM, more than a small task saves)."""
        if not 0 < n_chunks < (1 << 20):
            raise ValueError(f"native pool: {n_chunks} chunks (expected 1 .. 2**20 - 1)")
        if not self.lock.acquire(blocking=False):
            return False
        try:
            if self.closed:         # replaced by a pool for a new thread count: the caller runs it
                return False
            if wake:
                slots, events = self.slots, self._events
                for i in range(len(events)):
                    if slots[i * _SLOT] == 0:      # parked in Python: wake it (it joins as it comes)
                        events[i].set()
            self._run(chunk_fn, table, n_chunks, 1 if wake else 0)
            return True
        finally:
            self.lock.release()

    def close(self) -> None:
        """Stop the workers (they return from native code and their threads end)."""
        with self.lock:
            self.closed = True
            self._shutdown()
            for e in self._events:
                e.set()
            for t in self._threads:
                t.join(timeout=5)


# the most arguments of a kernel call that run_calls and run_strided pass (workers.ll's rows)
_MAX_ARGS = 10
# i64s of a wp_strided_chunk table: 8 of header, then (address, bytes per item) per argument
STRIDED_ROW = 8 + 2 * _MAX_ARGS


def run_calls(kernel, calls) -> None:
    """``kernel`` (a JIT kernel: ``jit._Planes`` and the like, pointer arguments only) called once
    per tuple of numpy arrays in ``calls``, on the native pool when there is one and more than
    one call, else one after another on this thread. The calls must write disjoint memory (each
    its own slice or its own array); the caller keeps the arrays alive and reads the results
    after the return. Shapes and dtypes are the caller's contract, as for the kernel itself.

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit, native_pool
        >>> k = jit.kernels()
        >>> x, out = np.arange(32, dtype=np.float32).reshape(2, 4, 4), np.empty((2, 2, 2), np.float32)
        >>> d = [np.array([1, 4, 4, 2, 2], np.int64)] * 2
        >>> if k is not None:
        ...     native_pool.run_calls(k.maxpool2, [(x[i], out[i], d[i]) for i in range(2)])
        >>> k is None or out[1].tolist() == [[21.0, 23.0], [29.0, 31.0]]
        True
    """
    if any(len(arrays) > _MAX_ARGS for arrays in calls):
        raise ValueError(f"native pool: a kernel call takes at most {_MAX_ARGS} arrays")
    fn = kernel.fn
    pool_ = pool() if len(calls) > 1 else None
    if pool_ is not None:
        head = ctypes.cast(fn, ctypes.c_void_p).value
        rows = [[head] + jit._addrs_of(arrays) + [0] * (_MAX_ARGS - len(arrays)) for arrays in calls]
        table = np.array(rows, np.int64)
        if pool_.run(pool_._kernels.workers.call_chunk, jit._addr(table), len(rows)):
            return
    for arrays in calls:            # no pool, or it is busy with another thread's task
        fn(*jit._addrs_of(arrays))


# chunks per thread a split call is cut into at most (the threads claim them in turn, so one that
# starts late or is preempted takes fewer)
CHUNKS_PER_THREAD = 4


def run_strided(kernel, n_items: int, arrays, item_bytes, min_chunk_items: int = 1, *, geometry: int = -1,
                count_slot: int = 0, count_per_item: int = 1, wake: bool = True) -> bool:
    """A kernel call over ``n_items`` items split into chunks on the native pool, the chunks' arguments
    derived in native code (no Python per chunk): ``arrays`` are the whole call's, argument i
    advancing ``item_bytes[i]`` bytes per item (0: the same for every chunk); argument ``geometry``
    (the kernel's int64 geometry array, at most 16 entries) is copied per chunk with entry
    ``count_slot`` set to the chunk's items times ``count_per_item``. Chunks hold at least
    ``min_chunk_items`` items; ``wake`` as for :meth:`NativePool.run`. False, having run nothing,
    where there is no pool or fewer than two chunks: the caller then runs the kernel itself. Chunks
    must write disjoint memory.

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit, native_pool
        >>> k = jit.kernels()
        >>> x, out = np.ones((8, 3, 4, 4), np.float32), np.zeros((8, 3, 2, 2), np.float32)
        >>> d = np.array([24, 4, 4, 2, 2], np.int64)     # planes, H, W, OH, OW
        >>> ran = k is not None and native_pool.run_strided(k.maxpool2, 8, (x, out, d), (x[0].nbytes, out[0].nbytes, 0),
        ...                                                 geometry=2, count_per_item=3)
        >>> not ran or bool((out == 1).all())
        True
    """
    p = pool()
    if p is None:
        return False
    chunks = p.chunks(n_items, min_chunk_items)
    if chunks < 2:
        return False
    if len(arrays) > _MAX_ARGS or len(item_bytes) != len(arrays):
        raise ValueError(f"native pool: at most {_MAX_ARGS} arrays, each with its bytes per item")
    if geometry >= 0 and not (arrays[geometry].dtype == np.int64 and arrays[geometry].size <= 16
                              and 0 <= count_slot < arrays[geometry].size):
        raise ValueError("native pool: the geometry argument must be an int64 array of at most 16 entries")
    table = np.zeros(STRIDED_ROW, np.int64)
    table[:8] = (ctypes.cast(kernel.fn, ctypes.c_void_p).value, n_items, chunks, geometry,
                 arrays[geometry].size if geometry >= 0 else 0, count_slot, count_per_item, 0)
    table[8:8 + 2 * len(arrays):2] = jit._addrs_of(arrays)
    table[9:9 + 2 * len(arrays):2] = item_bytes
    return p.run(p._kernels.workers.strided_chunk, jit._addr(table), chunks, wake)


_state = {"pool": None, "threads": None, "tried": False}
_make_lock = threading.Lock()


def pool() -> NativePool | None:
    """The process's native pool for the current thread count; None with one thread, with the JIT
    unavailable, or with ``BURN_FLEX_NATIVE_POOL=0``.

    Example::

        >>> from burn_flex import native_pool
        >>> p = native_pool.pool()
        >>> p is None or p is native_pool.pool()
        True
    """
    n = threads.num_threads()
    if n == _state["threads"]:
        return _state["pool"]
    with _make_lock:
        if n == _state["threads"]:
            return _state["pool"]
        old = _state["pool"]
        if old is not None:
            old.close()
        _state["pool"] = None
        k = jit.kernels() if n > 1 and enabled() else None
        if k is not None:
            k.workers.setup(_spin_cycles(), _libc_address("sched_yield"), *_futex())
            _state["pool"] = NativePool(k, n)
        _state["threads"] = n
        return _state["pool"]


def reset() -> None:
    """Stop the pool (the next :func:`pool` call makes one again: after changing
    ``BURN_FLEX_NATIVE_POOL`` or ``BURN_FLEX_SPIN_US``; tests use it).

    Example::

        >>> from burn_flex import native_pool
        >>> native_pool.reset()
    """
    with _make_lock:
        if _state["pool"] is not None:
            _state["pool"].close()
        _state.update(pool=None, threads=None)


def _libc_address(name: str) -> int:
    """The address of libc function ``name`` in this process, or 0 (then the workers do without)."""
    try:
        return ctypes.cast(getattr(ctypes.CDLL(None), name), ctypes.c_void_p).value or 0
    except (OSError, AttributeError):
        return 0


# Linux's futex system call number per CPU: idle workers sleep in the kernel, woken by the next
# task without the GIL; elsewhere they return to Python and park on an event (~20-50 us more a wake)
_SYS_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}


def _futex() -> tuple:
    import platform
    import sys
    nr = _SYS_FUTEX.get(platform.machine().lower()) if sys.platform.startswith("linux") else None
    address = _libc_address("syscall") if nr is not None else 0
    return (address, nr) if address else (0, 0)


def _reset_after_fork():
    # a forked child has none of the parent's worker threads: make a pool again when needed
    _state.update(pool=None, threads=None)


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)
