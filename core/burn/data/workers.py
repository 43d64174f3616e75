"""DataLoader worker processes: whole batches loaded by index in other processes, handed back
as numpy arrays (burn tensors are made by the loader in the main process, on its device).

Workers start with the 'forkserver' method where the platform has it, else 'spawn' — never
'fork': burn's thread pools may already run, and a forked child would inherit their locks
held. Each worker takes ``(batch number, sample indices)`` tasks from its own queue
(round-robin, at most ``prefetch_factor`` per worker in flight) and puts the collated batch
on one result queue; the loader yields batches in batch order. A worker's exception comes
back as text and is raised in the loop naming the batch, its samples and the worker's
traceback; a worker that dies is found within a second; stopping the loop (``break``, an
exception) shuts the workers down, so nothing hangs.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import queue
import random
import traceback
from collections import namedtuple

import numpy as np

from ..errors import BurnError

__all__ = ["WorkerPool", "get_worker_info", "WorkerInfo", "start_method"]

WorkerInfo = namedtuple("WorkerInfo", "id num_workers seed dataset")
_INFO = None
_POLL = 0.5     # seconds between liveness checks while waiting for a batch


def get_worker_info():
    """In a DataLoader worker process: its ``WorkerInfo(id, num_workers, seed, dataset)``;
    in the main process: None (as ``torch.utils.data.get_worker_info``).

    Example:
        >>> import burn
        >>> assert burn.data.get_worker_info() is None
    """
    return _INFO


def start_method(requested=None) -> str:
    """The multiprocessing start method workers use: ``requested``, or 'forkserver' where
    available, else 'spawn'. 'fork' is refused (threads may already run in this process).

    Example:
        >>> from burn.data.workers import start_method
        >>> assert start_method("spawn") == "spawn" and start_method() in ("forkserver", "spawn")
    """
    if requested is None:
        return "forkserver" if "forkserver" in mp.get_all_start_methods() else "spawn"
    name = requested if isinstance(requested, str) else requested.get_start_method()
    if name == "fork":
        raise BurnError("DataLoader: multiprocessing_context='fork' is refused: burn's thread pools may "
                        "already run, and a forked worker inherits their locks held; use 'forkserver' or 'spawn'")
    if name not in mp.get_all_start_methods():
        raise BurnError(f"DataLoader: unknown multiprocessing start method {name!r}; "
                        f"this platform has {mp.get_all_start_methods()}")
    return name


def _to_host(batch):
    """The batch with every burn tensor as a numpy array (results cross processes as numpy)."""
    if isinstance(batch, dict):
        return {k: _to_host(v) for k, v in batch.items()}
    if isinstance(batch, (tuple, list)) and not hasattr(batch, "_fields"):
        return type(batch)(_to_host(v) for v in batch)
    if hasattr(batch, "numpy") and hasattr(batch, "_h"):
        return np.array(batch.numpy())
    return batch


def _loop(wid, num_workers, seed, dataset, collate, fast, tasks, results, init_fn):
    """A worker process: seed, ``init_fn(wid)``, then load batches until the ``None`` task."""
    global _INFO
    _INFO = WorkerInfo(wid, num_workers, seed, dataset)
    random.seed(seed)
    np.random.seed(seed % 2 ** 32)
    try:
        if init_fn is not None:
            init_fn(wid)
    except BaseException:  # noqa: BLE001 - reported to the main process, which raises it
        results.put((None, -1, None, f"worker_init_fn({wid}) raised:\n{traceback.format_exc()}"))
        return
    while True:
        task = tasks.get()
        if task is None:
            return
        run, bi, idx = task
        try:
            batch = dataset.get_batch(idx) if fast else collate([dataset[int(j)] for j in idx])
            results.put((run, bi, _to_host(batch), None))
        except BaseException:  # noqa: BLE001 - reported to the main process, which raises it
            results.put((run, bi, None, traceback.format_exc()))


class WorkerPool:
    """``num_workers`` processes loading batches of ``dataset`` (see the module docstring).

    Example:
        >>> import burn, numpy as np
        >>> from burn.data.workers import WorkerPool
        >>> pool = WorkerPool(burn.data.ArrayDataset(np.arange(6)), None, True, 2, seed=0)
        >>> got = [b[0].tolist() for b in pool.batches([[0, 1], [2, 3], [4, 5]])]
        >>> pool.shutdown()
        >>> assert got == [[0, 1], [2, 3], [4, 5]]
    """

    def __init__(self, dataset, collate, fast, num_workers, *, seed, prefetch_factor=2, init_fn=None,
                 context=None, timeout=0.0):
        ctx = mp.get_context(start_method(context))
        if ctx.get_start_method() == "forkserver":
            ctx.set_forkserver_preload(["burn.data.workers"])   # each worker forks with burn imported
        self.prefetch = int(prefetch_factor) * int(num_workers)
        self.timeout = float(timeout)
        self.run = 0
        self.results = ctx.Queue()
        self.tasks, self.procs = [], []
        for wid in range(num_workers):
            q = ctx.Queue()
            p = ctx.Process(target=_loop, name=f"burn-data-worker-{wid}", daemon=True,
                            args=(wid, num_workers, int(seed) + wid, dataset, collate, fast, q, self.results,
                                  init_fn))
            try:
                p.start()
            except Exception as e:      # pickling the dataset, collate_fn or worker_init_fn
                self.shutdown()
                raise BurnError(f"DataLoader(num_workers={num_workers}): the dataset, collate_fn and "
                                f"worker_init_fn go to the worker processes by pickling, which failed: "
                                f"{type(e).__name__}: {e}; define them at module level (no lambdas or "
                                f"local functions), or use num_workers=0") from e
            self.tasks.append(q)
            self.procs.append(p)

    def batches(self, index_lists):
        """Yield the batch of each list of sample indices, in order."""
        self.run += 1
        run, n, nw = self.run, len(index_lists), len(self.procs)
        sent = got = 0
        ready = {}
        while got < n:
            while sent < n and sent - got < self.prefetch:
                self.tasks[sent % nw].put((run, sent, list(map(int, index_lists[sent]))))
                sent += 1
            while got not in ready:
                r, bi, batch, err = self._get(got, index_lists)
                if r is None:
                    raise BurnError(f"DataLoader: a worker failed to start: {err}")
                if r != run:
                    continue                    # left over from a loop stopped early
                ready[bi] = (batch, err)
            batch, err = ready.pop(got)
            if err is not None:                 # raised in batch order, as the batch would have come
                idx = index_lists[got]
                shown = f"{[int(i) for i in idx[:8]]}{'...' if len(idx) > 8 else ''}"
                raise BurnError(f"DataLoader: worker {got % nw} raised while loading batch {got} (samples "
                                f"{shown}); the worker's traceback:\n{err}")
            yield batch
            got += 1

    def _get(self, waiting_for, index_lists):
        waited = 0.0
        while True:
            try:
                return self.results.get(timeout=_POLL)
            except queue.Empty:
                waited += _POLL
            dead = [(i, p.exitcode) for i, p in enumerate(self.procs) if not p.is_alive()]
            if dead:
                i, code = dead[0]
                raise BurnError(f"DataLoader: worker {i} (pid {self.procs[i].pid}) exited unexpectedly with "
                                f"code {code} while batch {waiting_for} was loading")
            if self.timeout and waited >= self.timeout:
                raise BurnError(f"DataLoader: no batch from the workers in {self.timeout} s (timeout=) while "
                                f"waiting for batch {waiting_for}")

    def alive(self) -> bool:
        return bool(self.procs) and all(p.is_alive() for p in self.procs)

    def shutdown(self) -> None:
        """Stop the workers: a None task each, then join (terminate those still running)."""
        for q in self.tasks:
            try:
                q.put(None)
            except (OSError, ValueError):
                pass
        for p in self.procs:
            p.join(timeout=2.0)
            if p.is_alive():
                p.terminate()
                p.join(timeout=2.0)
        for q in self.tasks + [self.results]:
            q.cancel_join_thread()      # undelivered items must not block this process' exit
            q.close()
        self.tasks, self.procs = [], []


def worker_count_ok(n) -> bool:
    """Whether ``n`` is a valid ``num_workers`` (an int >= 0).

    Example:
        >>> from burn.data.workers import worker_count_ok
        >>> assert worker_count_ok(0) and not worker_count_ok(-1) and not worker_count_ok(True)
    """
    return not isinstance(n, bool) and isinstance(n, (int, np.integer)) and n >= 0 and n <= (os.cpu_count() or 1) * 64
