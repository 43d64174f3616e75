"""``burn.set_num_threads`` / ``burn.get_num_threads``: how many host CPU threads burn uses.

Backend-neutral, like ``torch.set_num_threads``: the count goes to BLAS (numpy's OpenBLAS
or MKL, through threadpoolctl) and to every backend through the public
:meth:`burn.Backend.set_num_threads` method: now to the backends already started, and to
each backend that starts later as it starts. A backend with its own host pool (flex's
worker threads) resizes it; a backend whose work runs on a device ignores it. Without a
call, each backend picks its own default (flex: the CPUs this process may use, or
``BURN_FLEX_THREADS``) and BLAS keeps its own.

Example:
    >>> import burn
    >>> n = burn.get_num_threads()
    >>> burn.set_num_threads(1)
    >>> assert burn.get_num_threads() == 1
    >>> burn.set_num_threads(n)
"""
from __future__ import annotations

import os

from . import backend as _backend
from .dispatch import registry

__all__ = ["set_num_threads", "get_num_threads"]


def set_num_threads(n: int) -> None:
    """Use ``n`` host CPU threads (the calling thread included) in BLAS and in every backend.

    Example:
        >>> import burn
        >>> n = burn.get_num_threads()
        >>> burn.set_num_threads(2)
        >>> assert burn.get_num_threads() == 2
        >>> burn.set_num_threads(n)
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"burn.set_num_threads: expected a positive integer (the number of CPU threads), "
                         f"got {n!r}")
    _backend._REQUESTED_THREADS[0] = n
    from threadpoolctl import threadpool_limits      # deferred: scans the loaded libraries
    threadpool_limits(limits=n, user_api="blas")
    for entry in list(registry.backends.values()):
        if entry.instance is not None:
            entry.instance.set_num_threads(n)


def get_num_threads() -> int:
    """The count given to :func:`set_num_threads`; before any call, the largest count a
    started backend reports, else the number of CPUs this process may use.

    Example:
        >>> import burn
        >>> assert burn.get_num_threads() >= 1
    """
    n = _backend.requested_num_threads()
    if n is not None:
        return n
    counts = [entry.instance.num_threads() for entry in list(registry.backends.values())
              if entry.instance is not None]
    counts = [c for c in counts if c]
    if counts:
        return max(counts)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:          # not Linux
        return max(1, os.cpu_count() or 1)
