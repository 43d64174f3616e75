"""Iroh endpoints, keys and the asyncio loop that drives them.

Both sides bind an Iroh endpoint (QUIC over UDP: every byte authenticated by the peers'
endpoint ids, which are ed25519 public keys, and encrypted with TLS 1.3). By default relays
are disabled (iroh's minimal preset with ``RelayMode.disabled()``): a ticket then holds the
server's endpoint id and its direct addresses, and the client dials them; ``relay=True`` uses
iroh's n0 preset (relays and address discovery, for peers behind NATs).

An endpoint's identity is its secret key: the server keeps one in ``--key-file`` for a stable
ticket, the client in ``BURN_REMOTE_KEY_FILE`` (default ``~/.config/burn/remote/client.key``)
so that the id a server allows stays the id this machine connects with
(:func:`client_endpoint_id`, ``burn remote id``).

Example:
    >>> import os, tempfile
    >>> from burn_remote import transport
    >>> p = os.path.join(tempfile.mkdtemp(), "k")
    >>> a = transport.endpoint_id_of(transport.load_or_create_key(p))
    >>> assert a == transport.endpoint_id_of(transport.load_or_create_key(p)) and len(a) == 64
"""
from __future__ import annotations

import asyncio
import os
import threading

import burn

from .wire import ALPN

__all__ = ["LoopThread", "bind", "load_or_create_key", "endpoint_id_of", "default_key_file",
           "client_endpoint_id", "parse_ticket"]


def default_key_file() -> str:
    """Where the client's secret key lives: ``BURN_REMOTE_KEY_FILE``, else
    ``~/.config/burn/remote/client.key``.

    Example:
        >>> from burn_remote.transport import default_key_file
        >>> assert default_key_file().endswith(".key") or default_key_file()
    """
    return os.environ.get("BURN_REMOTE_KEY_FILE") or os.path.join(
        os.path.expanduser("~"), ".config", "burn", "remote", "client.key")


def load_or_create_key(path: str | None) -> bytes:
    """The 32-byte secret key in ``path`` (created, readable by the owner only, if missing);
    a fresh key when ``path`` is None."""
    from iroh import iroh_ffi as F
    if path is None:
        return bytes(F.SecretKey.generate().to_bytes())
    if os.path.exists(path):
        with open(path, "rb") as f:
            key = f.read()
        if len(key) != 32:
            raise burn.BackendUnavailable(f"burn-remote: key file {path!r} holds {len(key)} bytes, not a 32-byte "
                                          f"secret key; delete it to make a new one (the endpoint id changes)")
        return key
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    key = bytes(F.SecretKey.generate().to_bytes())
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(key)
    return key


def endpoint_id_of(key: bytes) -> str:
    """The endpoint id (hex public key) of a secret key."""
    from iroh import iroh_ffi as F
    return str(F.SecretKey.from_bytes(key).public())


def client_endpoint_id(key_file: str | None = None) -> str:
    """This machine's client endpoint id (what a server's ``--allow`` takes); creates the key
    on first use.

    Example:
        >>> import os, tempfile
        >>> from burn_remote.transport import client_endpoint_id
        >>> assert len(client_endpoint_id(os.path.join(tempfile.mkdtemp(), "c.key"))) == 64
    """
    return endpoint_id_of(load_or_create_key(key_file or default_key_file()))


def parse_ticket(ticket: str):
    """The iroh ``EndpointAddr`` of a ticket string, or BackendUnavailable saying what is wrong."""
    from iroh import iroh_ffi as F
    try:
        return F.EndpointTicket.from_string(ticket.strip()).endpoint_addr()
    except Exception as e:
        raise burn.BackendUnavailable(f"burn-remote: {ticket[:24]!r}... is not an endpoint ticket ({e}); use the "
                                      f"ticket `burn remote serve` printed") from None


async def bind(key: bytes, *, relay: bool = False, bind_addr: str | None = None):
    """An Iroh endpoint with secret ``key`` speaking burn-remote's ALPN."""
    from iroh import iroh_ffi as F
    if relay:
        opts = F.EndpointOptions(preset=F.preset_n0(), secret_key=key, alpns=[ALPN],
                                 bind_addr=bind_addr)
    else:
        opts = F.EndpointOptions(preset=F.preset_minimal(), relay_mode=F.RelayMode.disabled(), secret_key=key,
                                 alpns=[ALPN], bind_addr=bind_addr or "127.0.0.1:0")
    return await F.Endpoint.bind(opts)


class LoopThread:
    """An asyncio event loop on a daemon thread; :meth:`call` runs a coroutine on it from any
    other thread and waits (with a timeout) for its result.

    Example:
        >>> from burn_remote.transport import LoopThread
        >>> lt = LoopThread("doc")
        >>> async def two(): return 2
        >>> assert lt.call(two(), timeout=5) == 2
        >>> lt.stop()
    """

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self._main, name=f"burn-remote-{name}", daemon=True)
        self.thread.start()

    def _main(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def submit(self, coro):
        """Schedule ``coro``; returns a concurrent.futures.Future."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def call(self, coro, timeout: float):
        """Run ``coro`` on the loop and return its result (TimeoutError after ``timeout`` s)."""
        return self.submit(coro).result(timeout)

    def stop(self, wait: float = 5.0):
        """Stop the loop and wait (up to ``wait`` s) for its thread to end: a daemon thread still
        inside iroh's Rust code when the interpreter exits would abort the process."""
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
        if self.thread is not threading.current_thread():
            self.thread.join(wait)
