"""DataLoader: batches of a dataset as burn tensors, seeded per-epoch shuffle, background prefetch."""
from __future__ import annotations

import math
import queue
import threading
from collections.abc import Mapping

import numpy as np

from . import workers
from ..errors import BurnError
from ..tensor import Tensor
from ..ops.creation import _device, from_numpy

__all__ = ["DataLoader", "default_collate"]


def _host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def default_collate(samples: list):
    """Stack a list of samples into a batch with ``torch.utils.data.default_collate``'s meaning,
    as numpy arrays: arrays (and burn tensors) are stacked along a new first axis; Python floats
    become float64, ints int64 and bools bool arrays; numpy scalars an array of their dtype;
    dicts collate per key, named tuples per field, tuples and lists per position (a tuple stays
    a tuple, where torch gives a list); strings and bytes stay a list.

    Example:
        >>> import burn, numpy as np
        >>> x, y = burn.data.default_collate([(np.zeros(2), 1), (np.ones(2), 0)])
        >>> assert x.shape == (2, 2) and y.tolist() == [1, 0] and y.dtype == np.int64
        >>> d = burn.data.default_collate([{"a": 1.5, "s": "u"}, {"a": 2.0, "s": "v"}])
        >>> assert d["a"].dtype == np.float64 and d["s"] == ["u", "v"]
    """
    first = samples[0]
    if isinstance(first, (Tensor, np.ndarray)):
        return np.stack([_host(s) for s in samples])
    if isinstance(first, np.generic):
        return np.array(samples)
    if isinstance(first, bool):
        return np.array(samples, dtype=np.bool_)
    if isinstance(first, int):
        return np.array(samples, dtype=np.int64)
    if isinstance(first, float):
        return np.array(samples, dtype=np.float64)
    if isinstance(first, (str, bytes)):
        return list(samples)
    if isinstance(first, Mapping):
        return {k: default_collate([s[k] for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        if any(len(s) != len(first) for s in samples):
            raise BurnError(f"default_collate: every sample must have the same number of fields, got "
                            f"{sorted({len(s) for s in samples})}")
        fields = [default_collate(list(f)) for f in zip(*samples)]
        if hasattr(first, "_fields"):
            return type(first)(*fields)
        return tuple(fields) if isinstance(first, tuple) else fields
    raise BurnError(f"default_collate: samples must be arrays, tensors, numbers, strings, dicts, tuples or "
                    f"lists, got {type(first).__name__}; pass collate_fn= to build batches of it")


class DataLoader:
    """Iterate a dataset in batches of burn tensors on ``device``.

    - ``shuffle``: a new order every epoch (every ``iter()``), drawn from
      ``seed`` and the epoch number, so epoch ``e`` has the same order in every
      run with the same seed (``set_epoch`` picks the epoch, e.g. on resume).
      ``seed=None`` draws one seed per loader.
    - ``drop_last``: skip a final batch smaller than ``batch_size``.
    - ``collate(samples) -> tuple | dict`` builds a batch from ``[ds[i], ...]``;
      by default datasets with ``get_batch`` (ArrayDataset) are indexed once
      per batch, others are stacked by :func:`default_collate`.
      ``collate_fn=`` is the same argument under torch's name.
    - ``prefetch=N``: a background thread prepares up to ``N`` batches ahead
      (host work: indexing, collate). An exception there is raised in the
      loop; stopping the loop early stops the thread.
    - ``num_workers=N``: ``N`` worker processes load whole batches by index
      (:mod:`burn.data.workers`: 'forkserver' or 'spawn', never 'fork'), at most
      ``prefetch_factor`` (default 2) batches in flight per worker, yielded in order;
      the batches cross as numpy arrays and become tensors here, on ``device``.
      ``persistent_workers=True`` keeps them between epochs; ``worker_init_fn(id)``
      runs first in each; ``timeout`` (s, 0: none) bounds the wait for a batch.
      Each worker seeds ``random`` and ``numpy.random`` from the loader's seed, the
      epoch and its id. A worker's exception is raised here naming the batch and
      the worker's traceback; stopping the loop shuts the workers down. The dataset,
      ``collate_fn`` and ``worker_init_fn`` must pickle (module-level definitions).

    Arrays keep their dtype (a float64 array gives float64 tensors).

    Example:
        >>> import burn, numpy as np
        >>> X, y = np.arange(20.0).reshape(10, 2), np.arange(10)
        >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), batch_size=4, shuffle=True, seed=0)
        >>> order = dl.indices(epoch=0)
        >>> xb, yb = next(iter(dl))
        >>> assert (xb.numpy() == X[order[:4]]).all() and len(dl) == 3
        >>> assert not (dl.indices(epoch=1) == order).all()
    """

    def __init__(self, dataset, batch_size: int = 1, shuffle: bool = False, seed: int | None = None,
                 drop_last: bool = False, device=None, collate=None, prefetch: int = 0, *, collate_fn=None,
                 num_workers: int = 0, prefetch_factor: int | None = None, persistent_workers: bool = False,
                 worker_init_fn=None, multiprocessing_context=None, timeout: float = 0.0):
        if collate_fn is not None:
            if collate is not None:
                raise TypeError("DataLoader: got both collate= and collate_fn= (the same argument): give one")
            collate = collate_fn
        if not (hasattr(dataset, "__len__") and hasattr(dataset, "__getitem__")):
            raise BurnError(f"DataLoader: dataset must have __len__ and __getitem__, "
                            f"got {type(dataset).__name__}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise BurnError(f"DataLoader: batch_size must be a positive int, got {batch_size!r}")
        if isinstance(prefetch, bool) or not isinstance(prefetch, (int, np.integer)) or prefetch < 0:
            raise BurnError(f"DataLoader: prefetch must be an int >= 0 (batches prepared ahead), "
                            f"got {prefetch!r}")
        if collate is not None and not callable(collate):
            raise BurnError(f"DataLoader: collate must be callable, got {collate!r}")
        self._check_workers(num_workers, prefetch_factor, persistent_workers, worker_init_fn, timeout)
        self.num_workers = int(num_workers)
        self.prefetch_factor = 2 if prefetch_factor is None else int(prefetch_factor)
        self.persistent_workers = bool(persistent_workers)
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = workers.start_method(multiprocessing_context) if num_workers else None
        self.timeout = float(timeout)
        self._pool = None
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(np.random.SeedSequence().entropy) if seed is None else int(seed)
        self.drop_last = bool(drop_last)
        self.device = device
        self.collate = collate
        self.prefetch = int(prefetch)
        self.epoch = 0
        self._start_batch = 0
        # mid-epoch checkpoints need the global random state as it was right after the last
        # batch handed out was built, not as the prefetch thread left it (see host_rng_after_batch)
        self.track_host_rng = False
        self.host_rng_after_batch = None
        self.shard_rank, self.shard_count = 0, 1

    def __len__(self) -> int:
        n = len(self.dataset)
        if self.shard_count > 1 and not self.drop_last and n % self.batch_size and n % self.batch_size < self.shard_count:
            return n // self.batch_size      # a last batch smaller than the rank count is dropped when sharded
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

    def shard(self, rank: int, count: int) -> "DataLoader":
        """Give only part ``rank`` of ``count`` of every batch (data-parallel training): the batches
        (order, size ``batch_size``, number) stay those of one process, and each is split into
        ``count`` disjoint parts (``numpy.array_split``), rank ``rank`` getting one; a last batch
        smaller than ``count`` is dropped. ``shard(0, 1)`` undoes it. Returns the loader.

        Example:
            >>> import burn, numpy as np
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(8)), 4).shard(1, 2)
            >>> assert [b[0].tolist() for b in dl] == [[2, 3], [6, 7]] and len(dl) == 2
        """
        for v, what in ((rank, "rank"), (count, "count")):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
                raise BurnError(f"DataLoader.shard: {what} must be an int, got {v!r}")
        if not (count >= 1 and 0 <= rank < count):
            raise BurnError(f"DataLoader.shard: need 0 <= rank < count, got rank={rank}, count={count}")
        if count > self.batch_size:
            raise BurnError(f"DataLoader.shard: batch_size {self.batch_size} is smaller than the {count} ranks; "
                            f"every rank needs at least one sample of each batch")
        self.shard_rank, self.shard_count = int(rank), int(count)
        return self

    def set_epoch(self, epoch: int) -> None:
        """Make the next ``iter()`` run epoch ``epoch`` (its shuffle order), e.g. when resuming.

        Example:
            >>> import burn, numpy as np
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(8)), 8, shuffle=True, seed=1)
            >>> dl.set_epoch(5)
            >>> (x,) = next(iter(dl))
            >>> assert x.tolist() == dl.indices(epoch=5).tolist() and dl.epoch == 6
        """
        self.epoch = int(epoch)

    def skip_batches(self, n: int) -> None:
        """Make the next ``iter()`` start at batch ``n`` of its epoch, without reading or collating
        the batches before it (a Learner resuming mid-epoch calls it).

        Example:
            >>> import burn, numpy as np
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(10)), 4)
            >>> dl.skip_batches(1)
            >>> assert [b[0].tolist() for b in dl] == [[4, 5, 6, 7], [8, 9]]
            >>> assert len(list(dl)) == 3          # only the next epoch is shortened
        """
        if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
            raise BurnError(f"DataLoader.skip_batches: n must be an int >= 0, got {n!r}")
        self._start_batch = int(n)

    def indices(self, epoch: int | None = None) -> np.ndarray:
        """The sample order of ``epoch`` (default: the next one): a permutation if shuffling.

        Example:
            >>> import burn, numpy as np
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(5)), 2, shuffle=True, seed=3)
            >>> assert sorted(dl.indices(0).tolist()) == [0, 1, 2, 3, 4]
            >>> assert (dl.indices(0) == dl.indices(0)).all()
        """
        n = len(self.dataset)
        if not self.shuffle:
            return np.arange(n)
        e = self.epoch if epoch is None else int(epoch)
        return np.random.default_rng([self.seed, e]).permutation(n)

    def __iter__(self):
        order = self.indices(self.epoch)
        self.epoch += 1
        start, self._start_batch = self._start_batch, 0
        self.host_rng_after_batch = None
        if self.num_workers:
            batches = self._worker_batches(order, start)
        else:
            batches = self._host_batches(order, start)
            if self.prefetch:
                batches = _prefetched(batches, self.prefetch)
        return self._to_device(batches)

    @staticmethod
    def _check_workers(num_workers, prefetch_factor, persistent_workers, worker_init_fn, timeout):
        if not workers.worker_count_ok(num_workers):
            raise BurnError(f"DataLoader: num_workers must be an int >= 0 (worker processes), got {num_workers!r}")
        if prefetch_factor is not None and (isinstance(prefetch_factor, bool) or not isinstance(
                prefetch_factor, (int, np.integer)) or prefetch_factor < 1 or not num_workers):
            raise BurnError(f"DataLoader: prefetch_factor must be an int >= 1 and needs num_workers > 0 "
                            f"(batches in flight per worker), got {prefetch_factor!r} with num_workers={num_workers}")
        if persistent_workers and not num_workers:
            raise BurnError("DataLoader: persistent_workers=True needs num_workers > 0")
        if worker_init_fn is not None and not callable(worker_init_fn):
            raise BurnError(f"DataLoader: worker_init_fn must be callable, got {worker_init_fn!r}")
        if not isinstance(timeout, (int, float)) or timeout < 0:
            raise BurnError(f"DataLoader: timeout must be a number of seconds >= 0, got {timeout!r}")

    def _worker_batches(self, order, start):
        """(batch, None) from worker processes (no host random state to track: it is theirs)."""
        index_lists = list(self._index_lists(order, start))
        pool = self._pool
        if pool is None or not pool.alive():
            fast = self.collate is None and hasattr(self.dataset, "get_batch")
            seed = int(np.random.SeedSequence([self.seed, self.epoch]).generate_state(1)[0])
            pool = workers.WorkerPool(self.dataset, self.collate or default_collate, fast, self.num_workers,
                                      seed=seed, prefetch_factor=self.prefetch_factor,
                                      init_fn=self.worker_init_fn, context=self.multiprocessing_context,
                                      timeout=self.timeout)
            if self.persistent_workers:
                self._pool = pool
        try:
            for batch in pool.batches(index_lists):
                yield batch, None
        finally:
            if not self.persistent_workers:
                pool.shutdown()

    def close(self) -> None:
        """Stop persistent worker processes now (they also stop when the loader is collected).

        Example:
            >>> import burn, numpy as np
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(4)), 2)
            >>> dl.close()                      # no workers: nothing to do
        """
        pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown()

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown: the daemons end with it
            pass

    # -- internals ---------------------------------------------------------------------
    def _host_batches(self, order, start=0):
        """(batch, random state after building it or None), from batch ``start`` on."""
        import random
        fast = self.collate is None and hasattr(self.dataset, "get_batch")
        track = self.track_host_rng
        for idx in self._index_lists(order, start):
            if fast:
                batch = self.dataset.get_batch(idx)
            else:
                batch = (self.collate or default_collate)([self.dataset[int(j)] for j in idx])
            yield batch, ((np.random.get_state(legacy=False), random.getstate()) if track else None)

    def _index_lists(self, order, start):
        """The sample indices of each batch from batch ``start`` on (this shard's part of it)."""
        bs, n = self.batch_size, len(order)
        stop = n - n % bs if self.drop_last else n
        k = self.shard_count
        for i in range(start * bs, stop, bs):
            idx = order[i:i + bs]
            if k > 1:
                if len(idx) < k:
                    return
                idx = np.array_split(idx, k)[self.shard_rank]
            yield idx

    def _to_device(self, batches):
        device = _device(self.device)

        def convert(x):
            if isinstance(x, Tensor):
                return x.to_device(device)
            if isinstance(x, dict):                 # nested structures keep their shape (collate_fn)
                return {k: convert(v) for k, v in x.items()}
            if isinstance(x, (tuple, list)):
                items = [convert(v) for v in x]
                return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
            if isinstance(x, (str, bytes)) or x is None:
                return x
            a = np.asarray(x)
            if a.base is not None or not a.flags.c_contiguous or not a.flags.writeable:
                a = np.array(a, copy=True)   # never alias the dataset's own arrays
            return from_numpy(a, device=device)

        try:
            for batch, rng_after in batches:
                self.host_rng_after_batch = rng_after
                if isinstance(batch, dict):
                    yield {k: convert(v) for k, v in batch.items()}
                elif isinstance(batch, (tuple, list)):
                    yield type(batch)(*map(convert, batch)) if hasattr(batch, "_fields") else \
                        tuple(convert(v) for v in batch)
                else:
                    yield (convert(batch),)
        finally:
            batches.close()   # an early break stops the prefetch thread now, not at garbage collection


_DONE = object()


def _prefetched(source, depth: int):
    """Run ``source`` in a daemon thread, ``depth`` items ahead; re-raise its errors here.

    Only host work runs in the thread: burn's lazy graphs are not shared
    across threads, so tensors are made by the consumer.
    """
    q: queue.Queue = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def work():
        try:
            for item in source:
                q.put((item, None))
                if stop.is_set():
                    return
            q.put((_DONE, None))
        except BaseException as e:   # noqa: BLE001 - handed to the consumer, who raises it
            q.put((_DONE, e))

    thread = threading.Thread(target=work, name="burn-data-prefetch", daemon=True)
    thread.start()
    try:
        while True:
            item, err = q.get()
            if err is not None:
                raise err
            if item is _DONE:
                return
            yield item
    finally:
        # wake a worker blocked on a full queue; after stop it puts at most one more item
        stop.set()
        try:
            while True:
                q.get_nowait()
        except queue.Empty:
            pass
