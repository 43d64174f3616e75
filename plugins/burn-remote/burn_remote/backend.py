"""The ``remote`` backend: a device whose tensors live on a burn-remote server.

A remote device's native array is a :class:`RemoteArray`: an id in its connection's namespace
on the server, with the shape and dtype known here. Ops record into the device's lazy graph as
on any device (shape and dtype errors are raised at the call); a flush hands the whole graph to
:meth:`RemoteBackend.compile_graph` (core's whole-graph hook, :mod:`burn.wholegraph`), which
encodes it once per structure; every flush then sends the graph's id, the input ids, the random
keys and fresh output ids, and returns at once. Values move when read (``numpy``, ``item``).

Devices: ``burn.remote.connect(ticket)`` gives ``Device("remote:N")`` for a new connection N;
``Device("remote:0")`` with ``BURN_REMOTE=<ticket>`` set connects on first use.

Example:
    >>> from burn_remote.backend import RemoteBackend
    >>> be = RemoteBackend()
    >>> assert be.name == "remote" and be.compiles_graphs
    >>> assert "burn.remote.connect" in be.unavailable_reason(10 ** 6)
"""
from __future__ import annotations

import atexit
import os
import threading

import numpy as np

import burn

from . import wire

__all__ = ["RemoteArray", "RemoteBackend", "backend", "add_connection"]

_CONNECTIONS = {}               # device index -> Connection
_LOCK = threading.RLock()      # unavailable_reason connects BURN_REMOTE under it, add_connection takes it again
_NEXT = [1]                     # index 0 is BURN_REMOTE's
_ENV_ERROR = [None]             # why BURN_REMOTE's connection failed (not retried)
_EXIT_HOOK = []                 # [True] once _close_all is registered with atexit
URGENT_RUN_NODES = 32           # a flush of this many nodes is sent at once (RemoteBackend.compile_graph)


class RemoteArray:
    """A tensor on the server: its connection, id, shape and dtype. Dropping the last reference
    frees the server's copy (the id is sent with the connection's next message).

    Example:
        >>> import burn
        >>> from burn_remote.backend import RemoteArray
        >>> a = RemoteArray(None, 3, (2,), burn.float32)
        >>> assert a.shape == (2,) and a.size == 2 and a.nbytes == 8
    """

    __slots__ = ("conn", "id", "shape", "dtype", "pushed", "__weakref__")

    def __init__(self, conn, tid: int, shape, dtype):
        self.conn, self.id, self.shape, self.dtype = conn, tid, tuple(shape), dtype
        self.pushed = None      # a client.Pushed when the server sends the value after its run

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * self.dtype.itemsize

    def __repr__(self):
        return f"RemoteArray(id={self.id}, shape={self.shape}, dtype={self.dtype})"

    def __del__(self):
        conn = self.conn
        if conn is not None:
            try:
                conn.release(self.id)
            except Exception:       # interpreter shutdown
                pass


def add_connection(conn, index: int | None = None) -> int:
    """Register ``conn`` as device ``remote:<index>`` (the next free index by default)."""
    with _LOCK:
        if not _CONNECTIONS and not _EXIT_HOOK:
            atexit.register(_close_all)
            _EXIT_HOOK.append(True)
        if index is None:
            index = _NEXT[0]
            _NEXT[0] += 1
        _CONNECTIONS[index] = conn
    return index


def _close_all():
    """At exit: close every connection, so no loop thread is left inside iroh's Rust code."""
    for c in list(_CONNECTIONS.values()):
        try:
            c.close()
        except Exception:
            pass


def _env_connect():
    """Connect ``remote:0`` from ``BURN_REMOTE`` (once; a failure is kept and reported)."""
    from .client import Connection
    ticket = os.environ.get("BURN_REMOTE")
    if not ticket or _ENV_ERROR[0] is not None:
        return
    try:
        timeout = float(os.environ.get("BURN_REMOTE_TIMEOUT", Connection.DEFAULT_TIMEOUT))
        add_connection(Connection(ticket, timeout=timeout), 0)
    except burn.BurnError as e:
        _ENV_ERROR[0] = str(e)


def _on_server(*args, **kwargs):
    raise burn.BurnError("this extension op runs on the burn-remote server, as a node of the flushed graph; "
                         "it has no kernel on the client")


def offer_extension_ops(names) -> None:
    """Register ``remote`` as having a kernel for each extension op a server has a kernel for,
    so the client records them as nodes (run on the server by its kernel, e.g. the fused Adam
    update) instead of expanding their reference definitions into primitives. The marker
    kernel itself never runs: a remote flush ships the graph (:meth:`RemoteBackend.compile_graph`)."""
    from burn.dispatch import registry
    for op in names:
        if registry.kernel(op, "remote") is None:
            registry.register_kernel(op, "remote", _on_server, plugin="remote")


class RemoteBackend(burn.Backend):
    """The backend of ``remote`` devices (see the module docstring)."""

    name = "remote"
    owns_memory = True
    dlpack_shares = False
    compiles_graphs = True

    def conn(self, index: int):
        c = _CONNECTIONS.get(index)
        if c is None:
            raise burn.BackendUnavailable(f"remote:{index}: {self.unavailable_reason(index)}")
        return c

    # -- devices ---------------------------------------------------------------------------
    def device_indices(self) -> list:
        return sorted(i for i, c in _CONNECTIONS.items() if c.dead is None)

    def unavailable_reason(self, index: int):
        if index == 0 and index not in _CONNECTIONS and os.environ.get("BURN_REMOTE"):
            with _LOCK:
                if 0 not in _CONNECTIONS:
                    _env_connect()
            if _ENV_ERROR[0] is not None:
                return f"BURN_REMOTE's server: {_ENV_ERROR[0]}"
        c = _CONNECTIONS.get(index)
        if c is None:
            return (f"no remote connection with index {index}: call burn.remote.connect(ticket), which returns "
                    f"its device, or set BURN_REMOTE=<ticket> for remote:0")
        return None

    def is_accelerator(self, index: int) -> bool:
        return False        # never the default device: a remote device is chosen explicitly

    def describe_devices(self) -> list:
        # `burn info` is where a user checks a BURN_REMOTE ticket: connect (bounded by the
        # connection timeout) so the line names the server's device and endpoint, or the error
        if os.environ.get("BURN_REMOTE"):
            self.unavailable_reason(0)
        out = []
        for i, c in sorted(_CONNECTIONS.items()):
            state = "connected" if c.dead is None else f"lost: {c.dead}"
            out.append(f"remote:{i}  {c.device_name} on server {c.server_id} ({state}; this client is "
                       f"{c.endpoint_id[:16]}...)")
        if os.environ.get("BURN_REMOTE") and 0 not in _CONNECTIONS:
            out.append("remote:0  BURN_REMOTE is set" + (f"; connecting failed: {_ENV_ERROR[0]}" if _ENV_ERROR[0]
                                                         else " (connects on first use)"))
        return out

    # -- data ------------------------------------------------------------------------------
    def native_dtype(self, dtype):
        return dtype

    def dtype_unavailable_reason(self, dtype, index: int):
        c = _CONNECTIONS.get(index)
        if c is None:
            return None
        if dtype.name not in c.dtypes:
            return f"the server's device {c.device_name} does not know {dtype} (an older burn there?)"
        why = c.dtypes[dtype.name]
        return None if why is None else f"the server's device {c.device_name}: {why}"

    def from_numpy(self, array, dtype, index: int):
        a = np.asarray(array)
        dtype = burn.as_dtype(a.dtype) if dtype is None else dtype
        c = self.conn(index)
        return RemoteArray(c, c.put(a, dtype), a.shape, dtype)

    def to_numpy(self, native, index: int):
        return native.conn.get(native.id, native.shape, native.dtype, native.pushed)

    def native_meta(self, native):
        return native.shape, native.dtype

    def dlpack_import_shares(self, obj, index: int) -> bool:
        return False

    # -- execution -------------------------------------------------------------------------
    def compile_graph(self, flushed):
        """Encode ``flushed`` once; the returned runner sends its id and bindings per flush."""
        blob = wire.encode_graph(flushed)
        gid = wire.graph_id(blob)
        metas = [flushed.nodes[r[1]].outputs[r[2]] for r in flushed.outputs]
        # a large graph (a training step) is written at once: the server computes it while this
        # client records what follows; a small one waits for the batch (an op's put, run and read
        # go out in one write)
        urgent = len(flushed.nodes) >= URGENT_RUN_NODES
        # one-element results (a loss, a metric) are what a step reads right after it: the server
        # sends them when the run ends, and reading one costs no request of its own
        push = [k for k, (s, _) in enumerate(metas) if int(np.prod(s, dtype=np.int64)) == 1]

        def run(inputs, keys, index):
            c = self.conn(index)
            outs = [RemoteArray(c, c.new_id(), s, d) for s, d in metas]
            pushed = c.run(gid, blob, [a.id for a in inputs], [list(k) for k in keys], [o.id for o in outs],
                           push=push, urgent=urgent)
            for k, p in zip(push, pushed):
                outs[k].pushed = p
            return outs
        return run

    def sync(self, index: int) -> None:
        self.conn(index).sync()

    def memory_stats(self, index: int) -> dict:
        return dict(self.conn(index).stats()["memory"])


_BACKEND = [None]


def backend() -> RemoteBackend:
    """The one RemoteBackend of this process (the registry's factory).

    Example:
        >>> from burn_remote.backend import backend
        >>> assert backend() is backend()
    """
    if _BACKEND[0] is None:
        _BACKEND[0] = RemoteBackend()
    return _BACKEND[0]
