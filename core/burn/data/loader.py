"""DataLoader: batches of a dataset as burn tensors, seeded per-epoch shuffle, background prefetch."""
from __future__ import annotations

import math
import queue
import threading

import numpy as np

from ..errors import BurnError
from ..tensor import Tensor
from ..ops.creation import _device, from_numpy

__all__ = ["DataLoader", "default_collate"]


def _host(x) -> np.ndarray:
    return x.numpy() if isinstance(x, Tensor) else np.asarray(x)


def default_collate(samples: list):
    """Stack samples field by field: tuples -> tuple of arrays, dicts -> dict, arrays -> 1-tuple.

    Example:
        >>> import burn, numpy as np
        >>> x, y = burn.data.default_collate([(np.zeros(2), 1), (np.ones(2), 0)])
        >>> assert x.shape == (2, 2) and y.tolist() == [1, 0]
    """
    first = samples[0]
    if isinstance(first, dict):
        return {k: np.stack([_host(s[k]) for s in samples]) for k in first}
    if isinstance(first, (tuple, list)):
        return tuple(np.stack([_host(s[i]) for s in samples]) for i in range(len(first)))
    return (np.stack([_host(s) for s in samples]),)


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
    - ``prefetch=N``: a background thread prepares up to ``N`` batches ahead
      (host work: indexing, collate). An exception there is raised in the
      loop; stopping the loop early stops the thread.

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
                 drop_last: bool = False, device=None, collate=None, prefetch: int = 0):
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

    def __len__(self) -> int:
        n = len(self.dataset)
        return n // self.batch_size if self.drop_last else math.ceil(n / self.batch_size)

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
        batches = self._host_batches(order, start)
        if self.prefetch:
            batches = _prefetched(batches, self.prefetch)
        return self._to_device(batches)

    # -- internals ---------------------------------------------------------------------
    def _host_batches(self, order, start=0):
        """(batch, random state after building it or None), from batch ``start`` on."""
        import random
        bs, n = self.batch_size, len(order)
        stop = n - n % bs if self.drop_last else n
        fast = self.collate is None and hasattr(self.dataset, "get_batch")
        track = self.track_host_rng
        for i in range(start * bs, stop, bs):
            idx = order[i:i + bs]
            if fast:
                batch = self.dataset.get_batch(idx)
            else:
                batch = (self.collate or default_collate)([self.dataset[int(j)] for j in idx])
            yield batch, ((np.random.get_state(legacy=False), random.getstate()) if track else None)

    def _to_device(self, batches):
        device = _device(self.device)

        def convert(x):
            if isinstance(x, Tensor):
                return x.to_device(device)
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
                    yield tuple(convert(v) for v in batch)
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
