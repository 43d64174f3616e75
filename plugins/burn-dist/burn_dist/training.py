"""The Learner's data-parallel hook on ``burn.dist``: ``Learner(..., data_parallel=True)``.

:class:`DistributedTraining` implements ``burn.train.TrainingParallel``: the model is wrapped in
:class:`~burn_dist.DataParallel` (rank 0's parameters broadcast, gradients averaged in buckets),
loaders are sharded with ``DataLoader.shard(rank, world_size)`` (each rank a disjoint part of
every batch of the one-process order, so a seeded epoch is the same set of batches on any number
of ranks and a checkpoint resumes on any world size), and metric states are summed with one
host all-reduce.

Example:
    >>> import burn, burn_dist
    >>> p = burn_dist.learner_parallel()
    >>> assert isinstance(p, burn.train.TrainingParallel) and p.world_size == burn_dist.world_size()
"""
from __future__ import annotations

import numpy as np

import burn

from . import runtime
from .parallel import DataParallel

__all__ = ["DistributedTraining", "learner_parallel"]


class DistributedTraining(burn.train.TrainingParallel):
    """``burn.train.TrainingParallel`` over a burn-dist communicator (default: :func:`burn_dist.init`'s).

    Example:
        >>> import burn, burn_dist
        >>> p = burn_dist.DistributedTraining(bucket_mb=4)
        >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(4)), 4)
        >>> assert p.shard(dl) is dl and dl.shard_count == p.world_size
    """

    def __init__(self, comm=None, *, bucket_mb: float = 25.0):
        self.comm = comm if comm is not None else runtime.init()
        self.rank, self.world_size = self.comm.rank, self.comm.world_size
        self.bucket_mb = bucket_mb
        self.model = None

    def prepare(self, model):
        """Wrap ``model`` in :class:`DataParallel` (no-op if it already is one).

        Example:
            >>> import burn, burn_dist
            >>> m = burn_dist.learner_parallel().prepare(burn.nn.Linear(2, 2))
            >>> assert isinstance(m, burn_dist.DataParallel)
        """
        self.model = model if isinstance(model, DataParallel) else DataParallel(
            model, comm=self.comm, bucket_mb=self.bucket_mb)
        return self.model

    def gradients(self, grads):
        """The gradients averaged over the ranks.

        Example:
            >>> import burn, burn_dist
            >>> p = burn_dist.learner_parallel()
            >>> dev = burn.Device.flex().autodiff()
            >>> m = p.prepare(burn.nn.Linear(1, 1, device=dev))
            >>> g = p.gradients(m(burn.ones((1, 1), device=dev)).sum().backward())
            >>> assert m.bias.grad(g).tolist() == [1.0]
        """
        if self.model is None:
            raise burn.BurnError("burn.dist: DistributedTraining.gradients before prepare(model)")
        return self.model.average_gradients(grads)

    def shard(self, loader):
        """``loader.shard(rank, world_size)`` (a burn DataLoader, or any loader with that method).

        Example:
            >>> import burn, burn_dist
            >>> dl = burn.data.DataLoader(burn.data.ArrayDataset(np.arange(6)), 2)
            >>> assert burn_dist.learner_parallel().shard(dl).shard_rank == burn_dist.rank()
        """
        if self.world_size == 1:
            return loader
        if not hasattr(loader, "shard"):
            raise burn.BurnError(f"Learner(data_parallel=True): the loader ({type(loader).__name__}) has no "
                                 f"shard(rank, world_size); use a burn.data.DataLoader, or give each rank its "
                                 f"own part of the data and pass data_parallel=burn.dist.DistributedTraining() "
                                 f"subclassed with shard() returning it")
        return loader.shard(self.rank, self.world_size)

    def reduce_sums(self, values):
        """Every value summed over the ranks (float64, one collective).

        Example:
            >>> import burn_dist
            >>> assert burn_dist.learner_parallel().reduce_sums([1.5]) == [1.5 * burn_dist.world_size()]
        """
        buf = np.array([float(v) for v in values], np.float64)
        self.comm.all_reduce(buf, "sum")
        return buf.tolist()

    def barrier(self) -> None:
        """Wait for every rank.

        Example:
            >>> import burn_dist
            >>> burn_dist.learner_parallel().barrier()
        """
        self.comm.barrier()


def learner_parallel(**kwargs) -> DistributedTraining:
    """What ``Learner(data_parallel=True)`` uses: a :class:`DistributedTraining` on the default communicator.

    Example:
        >>> import burn_dist
        >>> assert burn_dist.learner_parallel().rank == burn_dist.rank()
    """
    return DistributedTraining(**kwargs)
