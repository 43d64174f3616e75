"""The flex worker pool: one per process, sized from the CPUs this process may use.

numpy's ufuncs, copies and BLAS calls release the GIL, so plain Python threads
running numpy on disjoint slices of an array do run in parallel. Kernels split
their work with :func:`parallel_for`; below a size threshold (the caller's
``min_chunk``) the work stays on the calling thread, where a thread hand-off
would cost more than it saves.

The size comes from ``os.sched_getaffinity`` (the CPUs this process may run on,
which respects ``taskset`` and container limits, unlike ``os.cpu_count``),
overridden by the environment variable ``BURN_FLEX_THREADS`` or by
:func:`set_num_threads`.

Example::

    from burn_flex import threads
    out = np.empty_like(x)
    def work(start, stop):
        np.exp(x[start:stop], out=out[start:stop])
    threads.parallel_for(len(x), work, min_chunk=65536)

Large JIT kernel calls (direct convolutions, max pooling, weight-gradient blocks) split over
:mod:`burn_flex.native_pool` instead, whose workers wait in native code (same thread count).

BLAS and the pool. OpenBLAS runs its own threads (as many as
``burn.set_num_threads`` / threadpoolctl allow), so the rule is: a BLAS call
made on the calling thread outside a parallel region (a matmul, a convolution's
GEMM) keeps every BLAS thread. Chunks that call BLAS themselves (a convolution's
per-image GEMMs, attention per batch item, row sums as matrix-vector products in
softmax or layer_norm) are split with ``parallel_for(..., blas=True)``, and by
default those run on the calling thread: the OpenBLAS of numpy's and SciPy's
wheels serializes BLAS calls made from several threads at once, so splitting
them only adds contention (measured here: 64 GEMMs [6, 25] @ [25, 576] took
383 us in one thread and 487 us split over two; LeNet's training step 4.6 ms
with such chunks inline, 5.9 ms with them on the pool). ``BURN_FLEX_BLAS_CHUNKS=
parallel`` (a BLAS that runs concurrent calls in parallel: MKL, BLIS) runs them
on the pool with BLAS pinned to one thread while they run, restored afterwards,
so N chunks never start N x N BLAS threads. The pin is process-wide: a BLAS
call another Python thread makes in that window runs on one thread too
(correct, only slower).
"""
from __future__ import annotations

import itertools
import os
import threading

import numpy as np

_num_threads: int | None = None
# Held while a parallel region uses the workers. A region that finds it taken (another
# Python thread's region) runs inline; set_num_threads waits for it.
_region = threading.Lock()
_workers: list = []
# Set in pool workers, and on the calling thread while its region runs: a parallel_for
# inside a parallel_for runs inline, so nested kernels never wait for busy workers.
_inside = threading.local()
# parallel regions run on the pool so far (not counting inline calls): tests read it
stats = {"regions": 0}


class _Worker:
    """A pool thread handed one chunk at a time through two locks (cheaper than futures)."""

    __slots__ = ("go", "done", "task", "error", "thread")

    def __init__(self, k):
        self.go = threading.Lock()
        self.go.acquire()
        self.done = threading.Lock()
        self.done.acquire()
        self.task = None
        self.error = None
        self.thread = threading.Thread(target=self._loop, name=f"burn-flex-{k}", daemon=True)
        self.thread.start()

    def _loop(self):
        _inside.active = True
        while True:
            self.go.acquire()
            task = self.task
            if task is None:           # stop
                self.done.release()
                return
            work, start, stop, err = task
            try:
                with np.errstate(**err):   # the caller's floating-point error handling
                    work(start, stop)
            except BaseException as e:
                self.error = e
            self.task = None
            self.done.release()

    def start(self, work, start, stop, err):
        self.task = (work, start, stop, err)
        self.go.release()

    def wait(self):
        self.done.acquire()
        e, self.error = self.error, None
        return e

    def stop(self):
        self.task = None
        self.go.release()
        self.done.acquire()


def _reset_after_fork():
    # a forked child (a data-loader worker) has none of the parent's threads
    global _region, _workers
    _region = threading.Lock()
    _workers = []
    _inside.active = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_after_fork)


def _blas_chunks_from_environment() -> bool:
    raw = os.environ.get("BURN_FLEX_BLAS_CHUNKS", "inline").strip().lower()
    if raw not in ("inline", "parallel"):
        raise ValueError(f"BURN_FLEX_BLAS_CHUNKS={raw!r}: expected 'inline' (chunks that call BLAS run on "
                         "the calling thread, the default) or 'parallel' (on the pool, BLAS pinned to one "
                         "thread)")
    return raw == "parallel"


# whether parallel_for(..., blas=True) chunks run on the pool (module docstring); tests set it
BLAS_CHUNKS_PARALLEL = _blas_chunks_from_environment()


def _positive_int_from_environment(name: str, meaning: str) -> int | None:
    """The positive integer in environment variable ``name``, None when it is unset or empty."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return None
    try:
        n = int(raw)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(f"{name}={raw!r}: expected a positive integer ({meaning})")
    return n


def _chunk_scale_from_environment() -> int:
    n = _positive_int_from_environment(
        "BURN_FLEX_CHUNK_SCALE", "how many times the kernels' minimum chunk a parallel region's chunks must hold")
    return 8 if n is None else n


# Every parallel_for's min_chunk is multiplied by this. The kernels size min_chunk for a hand-off
# of ~20-50 us (a worker that is awake); measured on this 2-vCPU machine, handing a chunk to a
# worker that slept through the ~300 us of other work between two regions of a training step
# costs ~85 us (np.exp over 2^18 float32: 94 us inline, 170 us on two threads; over 2^20: 520
# against 299 us). With the kernels' sizes as they were, every training step ran slower on two
# threads than on one (in one process, alternating: LeNet 4.55 vs 4.23 ms, MLP 1.03 vs 0.96 ms,
# transformer 11.6 vs 11.0 ms); at 8x they match one thread and large element-wise work still
# splits. BURN_FLEX_CHUNK_SCALE overrides it (1 = the kernels' own sizes: a machine with cheap
# wake-ups; tests use 1 to split small inputs).
CHUNK_SCALE = _chunk_scale_from_environment()


def _threads_from_environment() -> int:
    n = _positive_int_from_environment("BURN_FLEX_THREADS", "the number of threads flex kernels may use")
    if n is not None:
        return n
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not Linux
        return max(1, os.cpu_count() or 1)


def num_threads() -> int:
    """How many threads flex kernels use (the calling thread included).

    Example::

        >>> from burn_flex import threads
        >>> threads.num_threads() >= 1
        True
    """
    global _num_threads
    if _num_threads is None:
        _num_threads = _threads_from_environment()
    return _num_threads


def set_num_threads(n: int) -> None:
    """Use ``n`` threads (the calling thread included) for flex kernels from now on.

    Example::

        >>> from burn_flex import threads
        >>> n = threads.num_threads()
        >>> threads.set_num_threads(1)      # everything on the calling thread
        >>> threads.set_num_threads(n)
    """
    global _num_threads, _workers
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"set_num_threads: expected a positive integer, got {n!r}")
    if getattr(_inside, "active", False):
        raise RuntimeError("set_num_threads: called inside a flex parallel region (a kernel chunk); "
                           "call it between operations")
    with _region:              # waits for a region another Python thread is running
        old, _workers = _workers, []
        _num_threads = n
        for w in old:
            w.stop()


class _BlasPin:
    """Counted pin of BLAS to one thread while parallel regions with ``blas=True`` run.

    The first region to enter saves BLAS's thread counts and sets them to 1; the last to
    leave restores them (several Python threads may run regions at once)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.depth = 0
        self.saved = []
        self._libs = None

    def libs(self):
        if self._libs is None:
            try:
                from threadpoolctl import ThreadpoolController
                self._libs = [c for c in ThreadpoolController().lib_controllers if c.user_api == "blas"]
            except Exception:      # threadpoolctl missing or no BLAS found: nothing to pin
                self._libs = []
        return self._libs

    def __enter__(self):
        with self.lock:
            if self.depth == 0:
                self.saved = [(c, c.get_num_threads()) for c in self.libs()]
                for c, n in self.saved:
                    if n is not None and n > 1:
                        c.set_num_threads(1)
            self.depth += 1

    def __exit__(self, *exc):
        with self.lock:
            self.depth -= 1
            if self.depth == 0:
                for c, n in self.saved:
                    if n is not None and n > 1:
                        c.set_num_threads(n)
                self.saved = []
        return False


_blas_pin = _BlasPin()


def blas_threads() -> int | None:
    """BLAS's thread count now (the first BLAS library numpy loaded), or None if unknown.

    Example::

        >>> from burn_flex import threads
        >>> n = threads.blas_threads()
        >>> n is None or n >= 1
        True
    """
    libs = _blas_pin.libs()
    return libs[0].get_num_threads() if libs else None


def parallel_for(n_items: int, work, min_chunk: int = 1, *, blas: bool = False, pieces: int = 1) -> None:
    """Run ``work(start, stop)`` over ``range(n_items)`` split into contiguous chunks.

    Chunks have at least ``min_chunk * CHUNK_SCALE`` items (see ``CHUNK_SCALE``); with fewer
    than two chunks' worth of items, or one thread, or when already inside a parallel region (a worker,
    or the calling thread while it runs its own chunk), it is one call on the
    calling thread: nested parallel_for never waits for busy workers. The
    calling thread runs the first chunk itself. The first exception raised by
    any chunk is re-raised here after every chunk has finished, so no chunk is
    still writing when the caller sees the error. ``blas=True`` says the chunks
    call BLAS: they run on the calling thread, or with ``BURN_FLEX_BLAS_CHUNKS=parallel`` on
    the pool with BLAS pinned to one thread while they run (module docstring).

    ``pieces=k`` (k > 1) schedules dynamically: the range is cut into about k pieces per
    thread (each at least ``min_chunk`` items, boundaries fixed by the sizes alone), and
    every thread takes the next untaken piece until none is left. A thread that starts
    late or loses its core to another process then costs at most one piece instead of
    holding the region up for a whole 1/N share. ``work`` must not depend on which
    thread runs a piece (element-wise blocks: each element computed the same way).

    Example::

        >>> import numpy as np
        >>> from burn_flex import threads
        >>> x = np.arange(10.0); out = np.empty_like(x)
        >>> threads.parallel_for(10, lambda a, b: np.multiply(x[a:b], 2, out=out[a:b]))
        >>> float(out[-1])
        18.0
    """
    if n_items <= 0:
        return
    if blas and not BLAS_CHUNKS_PARALLEL:
        work(0, n_items)
        return
    min_chunk = max(1, min_chunk) * CHUNK_SCALE
    chunks = min(num_threads(), n_items // min_chunk)
    if chunks < 2 or getattr(_inside, "active", False):
        work(0, n_items)
        return
    bounds = [n_items * k // chunks for k in range(chunks + 1)]
    if pieces > 1:
        n_pieces = max(chunks, min(n_items // min_chunk, chunks * pieces))
        work = _Pieces(work, [n_items * k // n_pieces for k in range(n_pieces + 1)])
    if not _region.acquire(blocking=False):     # another Python thread's region has the workers
        work(0, n_items)
        return
    try:
        _run_region(work, bounds, blas)
    finally:
        _region.release()


class _Pieces:
    """Dynamic scheduling for :func:`parallel_for`: every thread of the region calls this
    (its static bounds are ignored) and runs the next untaken piece until none is left.
    ``next`` on an ``itertools.count`` is atomic under the GIL. After an error no thread
    takes another piece; the region re-raises it once every thread has stopped."""

    __slots__ = ("work", "bounds", "next", "failed")

    def __init__(self, work, bounds):
        self.work, self.bounds = work, bounds
        self.next = itertools.count().__next__
        self.failed = False

    def __call__(self, _start, _stop):
        b, n = self.bounds, len(self.bounds) - 1
        while not self.failed:
            i = self.next()
            if i >= n:
                return
            try:
                self.work(b[i], b[i + 1])
            except BaseException:
                self.failed = True
                raise


def _run_region(work, bounds, blas):
    global _workers
    chunks = len(bounds) - 1
    if len(_workers) < chunks - 1:
        _workers = _workers + [_Worker(k) for k in range(len(_workers), num_threads() - 1)]
    stats["regions"] += 1
    pin = _blas_pin if blas else None
    if pin is not None:
        pin.__enter__()
    first_error = None
    _inside.active = True
    try:
        err = np.geterr()
        started = []
        for k in range(1, chunks):
            _workers[k - 1].start(work, bounds[k], bounds[k + 1], err)
            started.append(_workers[k - 1])
        try:
            work(bounds[0], bounds[1])
        except BaseException as e:      # wait for the others before raising
            first_error = e
        for w in started:
            e = w.wait()
            if first_error is None:
                first_error = e
    finally:
        _inside.active = False
        if pin is not None:
            pin.__exit__()
    if first_error is not None:
        raise first_error
