"""burn-dist: ``burn.dist``, data-parallel training on MPI (mpi4py) and NCCL (CuPy).

Installed, it is found through the ``burn.plugins`` entry point ``dist`` and appears as
``burn.dist``:

    >>> import burn
    >>> import burn_dist
    >>> assert burn.dist is burn_dist
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__: list = []
