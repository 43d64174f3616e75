"""The process group: ``init()`` from the launcher's environment, ``rank()``, ``world_size()``.

Under ``mpirun``/``burn-dist launch`` (Open MPI's ``OMPI_COMM_WORLD_SIZE``), ``srun --mpi=pmix``
(``PMIX_RANK``) or another PMI launcher (``PMI_SIZE``), :func:`init` starts MPI through mpi4py
and the default communicator is an :class:`~burn_dist.comm.MPICommunicator`. Under plain
``python`` it is world size 1 and mpi4py is not even imported. ``BURN_DIST=local`` forces
world size 1, ``BURN_DIST=mpi`` forces MPI.

With more than one rank, an exception that escapes a rank's main thread prints
``burn.dist: rank R of N failed: ...`` and aborts the whole job (``MPI_Abort``): the other
ranks, which may be waiting in a collective for the one that failed, end within a second or
two instead of hanging, and the launcher exits non-zero.

Example:
    >>> import burn_dist
    >>> c = burn_dist.init()
    >>> assert burn_dist.world_size() >= 1 and 0 <= burn_dist.rank() < burn_dist.world_size()
"""
from __future__ import annotations

import os
import sys
import traceback

from burn import BurnError

from .comm import Communicator, LocalCommunicator

__all__ = ["init", "is_initialized", "rank", "world_size", "local_rank", "communicator", "launched_by_mpi",
           "abort"]

_STATE = {"comm": None, "hook": None}
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")


def launched_by_mpi(environ=None) -> bool:
    """Whether this process was started by an MPI launcher (mpirun, srun with PMIx/PMI).

    Example:
        >>> from burn_dist.runtime import launched_by_mpi
        >>> assert launched_by_mpi({"OMPI_COMM_WORLD_SIZE": "2"}) and not launched_by_mpi({})
    """
    env = os.environ if environ is None else environ
    forced = env.get("BURN_DIST", "").lower()
    if forced in ("local", "mpi"):
        return forced == "mpi"
    if forced:
        raise BurnError(f"burn.dist: BURN_DIST must be 'local' or 'mpi', got {env['BURN_DIST']!r}")
    return any(v in env for v in _LAUNCHER_VARS)


def init(communicator: Communicator | None = None) -> Communicator:
    """Join the job the launcher started (idempotent) and return the default communicator.

    ``communicator``: use this one instead (e.g. an MPI sub-communicator's
    ``MPICommunicator(comm)``); only before the first init.

    Example:
        >>> import burn_dist
        >>> c = burn_dist.init()
        >>> assert burn_dist.init() is c and c.world_size == burn_dist.world_size()
    """
    if _STATE["comm"] is not None:
        if communicator is not None and communicator is not _STATE["comm"]:
            raise BurnError("burn.dist.init: already initialized with another communicator; call init(c) "
                            "once, before any collective")
        return _STATE["comm"]
    if communicator is None:
        if launched_by_mpi():
            from .comm import MPICommunicator
            communicator = MPICommunicator()
        else:
            communicator = LocalCommunicator()
    elif not isinstance(communicator, Communicator):
        raise BurnError(f"burn.dist.init: communicator must be a burn_dist Communicator, got "
                        f"{type(communicator).__name__}")
    _STATE["comm"] = communicator
    if communicator.world_size > 1:
        _install_fault_hook(communicator)
    return communicator


def is_initialized() -> bool:
    """Whether :func:`init` ran in this process.

    Example:
        >>> import burn_dist
        >>> _ = burn_dist.init()
        >>> assert burn_dist.is_initialized()
    """
    return _STATE["comm"] is not None


def communicator() -> Communicator:
    """The default communicator (:func:`init` first if needed).

    Example:
        >>> import burn_dist
        >>> assert burn_dist.communicator() is burn_dist.init()
    """
    return _STATE["comm"] if _STATE["comm"] is not None else init()


def rank() -> int:
    """This process's rank, 0 .. world_size - 1 (0 under plain python).

    Example:
        >>> import burn_dist
        >>> assert burn_dist.rank() < burn_dist.world_size()
    """
    return communicator().rank


def world_size() -> int:
    """The number of ranks in the job (1 under plain python).

    Example:
        >>> import burn_dist
        >>> assert burn_dist.world_size() >= 1
    """
    return communicator().world_size


def local_rank() -> int:
    """This process's rank among the ranks of its machine (picks its GPU: ``Device(f"cuda:{local_rank()}")``).

    Example:
        >>> import burn_dist
        >>> assert 0 <= burn_dist.local_rank() <= burn_dist.rank()
    """
    for var in ("OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID", "PMI_LOCAL_RANK"):
        if var in os.environ:
            return int(os.environ[var])
    return 0 if communicator().world_size == 1 else rank()


def abort(message: str, code: int = 1) -> None:
    """Print ``message`` naming this rank and end the whole job with exit code ``code``.

    Example:
        >>> import burn_dist
        >>> assert callable(burn_dist.abort)
    """
    comm = communicator()
    sys.stderr.write(f"burn.dist: rank {comm.rank} of {comm.world_size} failed: {message}\n")
    sys.stderr.flush()
    if comm.world_size > 1 and hasattr(comm, "comm"):
        comm.comm.Abort(code)
    raise SystemExit(code)


def _install_fault_hook(comm) -> None:
    """An exception escaping a rank ends every rank (see the module docstring)."""
    previous = sys.excepthook

    def hook(etype, value, tb):
        text = "".join(traceback.format_exception(etype, value, tb))
        sys.stderr.write(f"burn.dist: rank {comm.rank} of {comm.world_size} failed with "
                         f"{etype.__name__}: {value}\n{text}")
        sys.stderr.write(f"burn.dist: rank {comm.rank} aborts the job\n")
        sys.stderr.flush()
        try:
            comm.comm.Abort(1)
        finally:
            previous(etype, value, tb)

    sys.excepthook = hook
    _STATE["hook"] = hook
