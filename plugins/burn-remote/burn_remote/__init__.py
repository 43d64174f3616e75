"""burn-remote: ``burn.remote``, remote devices over Iroh (authenticated, encrypted), with graphs
sent once and replayed by id.

On the machine with the device, ``burn remote serve --device cuda:0 --allow <client-id>`` prints a
ticket; on the client, :func:`connect` turns the ticket into a ``Device`` of kind ``remote``, and
everything else (autodiff, nn, optim, Learner, capture) works on it unchanged. See docs/remote.md.

Installed, it is found through the ``burn.plugins`` entry point ``remote`` and appears as
``burn.remote``:

    >>> import burn
    >>> import burn_remote
    >>> assert burn.remote is burn_remote
    >>> assert callable(burn.remote.connect) and callable(burn.remote.serve)
"""
from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["connect", "disconnect", "serve", "Server", "client_endpoint_id", "connection", "stats"]

from burn.library import lazy_exports  # noqa: E402

# imported on first use: discovery imports this package, and iroh is not for every burn user
__getattr__ = lazy_exports(__name__, {"Server": "server", "serve": "server", "client_endpoint_id": "transport"})


def connect(ticket: str, *, key_file: str | None = None, timeout: float = 30.0, relay: bool = False,
            replay: bool = True):
    """Connect to the server of ``ticket``; returns its ``Device`` (kind ``remote``).

    Args:
        ticket: what ``burn remote serve`` printed (also in its ``--ticket-file``).
        key_file: this client's secret key file (default ``BURN_REMOTE_KEY_FILE`` or
            ``~/.config/burn/remote/client.key``); its endpoint id must be on the server's allow-list.
        timeout: seconds of silence from the server after which a waiting call raises BurnError.
        relay: use iroh's relays (default: the ticket's direct addresses only).
        replay: send each flushed graph once and replay it by id (default); False sends the
            graph with every flush (benchmarks measure the difference).

    Raises ``burn.BackendUnavailable`` naming the reason if the server refuses this client, cannot
    be reached, or speaks another protocol version.

    Example (not run here: it needs a server):
        >>> import burn
        >>> callable(burn.remote.connect)
        True
    """
    import burn
    from .backend import add_connection
    from .client import Connection
    burn.plugins.ensure_loaded()
    conn = Connection(ticket, key_file=key_file, timeout=timeout, relay=relay, replay=replay)
    return burn.Device("remote", add_connection(conn))


def connection(device):
    """The :class:`burn_remote.client.Connection` of a remote device (its counters, ids).

    Example:
        >>> import burn
        >>> try:
        ...     burn.remote.connection(burn.Device("remote:99"))
        ... except burn.BackendUnavailable as e:
        ...     assert "remote:99" in str(e)
    """
    from .backend import backend
    return backend().conn(device.index)


def stats(device) -> dict:
    """Counters of a remote device: the server's (graphs compiled and replayed, sessions), this
    session's live tensors and memory, and the client's (graphs sent, replays sent, bytes moved).

    Example (not run here: it needs a server):
        >>> import burn
        >>> callable(burn.remote.stats)
        True
    """
    return connection(device).stats()


def disconnect(device) -> None:
    """Close a remote device's connection (the server frees its tensors); its tensors are gone.

    Example (not run here: it needs a server):
        >>> import burn
        >>> callable(burn.remote.disconnect)
        True
    """
    connection(device).close()
