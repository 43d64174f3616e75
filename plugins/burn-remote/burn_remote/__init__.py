"""burn-remote: ``burn.remote``, remote devices over Iroh (authenticated, encrypted), with graphs sent once and replayed by id.

Installed, it is found through the ``burn.plugins`` entry point ``remote`` and appears as
``burn.remote``:

    >>> import burn
    >>> import burn_remote
    >>> assert burn.remote is burn_remote
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__: list = []
