"""burn-dist: ``burn.dist``, data-parallel training on MPI (mpi4py) and NCCL (CuPy).

Installed, it is found through the ``burn.plugins`` entry point ``dist`` and appears as
``burn.dist``:

    >>> import burn
    >>> import burn_dist
    >>> assert burn.dist is burn_dist

- :func:`init`, :func:`rank`, :func:`world_size`: the job the launcher started (world size 1 under
  plain ``python``); :func:`communicator` the engine behind it (:mod:`burn_dist.comm`).
- :func:`all_reduce`, :func:`broadcast`, :func:`all_gather`, :func:`reduce_scatter`, :func:`barrier`:
  collectives on burn tensors (ops of the lazy graph, captured by ``burn.capture``).
- :class:`DataParallel`: gradients averaged over the ranks; ``burn.train.Learner(...,
  data_parallel=True)`` uses it through :func:`learner_parallel`.
- ``burn-dist launch -n N -- python train.py``: the launcher (:mod:`burn_dist.launch`).
"""
from __future__ import annotations

from burn.library import lazy_exports

# imported on first use (burn.library.lazy_exports): discovery imports this package, and
# burn.nn / mpi4py are not for every burn user to pay at the first op
_EXPORTS = {"CollectiveMismatch": "comm", "Communicator": "comm", "LocalCommunicator": "comm",
            "MPICommunicator": "comm",
            **dict.fromkeys(["abort", "communicator", "init", "is_initialized", "launched_by_mpi", "local_rank",
                             "rank", "world_size"], "runtime"),
            **dict.fromkeys(["all_gather", "all_reduce", "all_reduce_many", "barrier", "broadcast",
                             "reduce_scatter"], "collectives"),
            "DataParallel": "parallel", "DistributedTraining": "training", "learner_parallel": "training"}
__getattr__ = lazy_exports(__name__, _EXPORTS)

__version__ = "0.1.0"
__all__ = ["init", "is_initialized", "rank", "world_size", "local_rank", "communicator", "launched_by_mpi",
           "abort", "Communicator", "LocalCommunicator", "MPICommunicator", "CollectiveMismatch",
           "all_reduce", "all_reduce_many", "broadcast", "all_gather", "reduce_scatter", "barrier",
           "DataParallel", "DistributedTraining", "learner_parallel"]
