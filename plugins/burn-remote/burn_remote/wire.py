"""The wire format of burn-remote: msgpack frames on Iroh QUIC streams, tensor bytes raw.

Every message is one frame, ``<u32 little-endian length><msgpack payload>``, on the
connection's control stream (one bidirectional stream, so messages keep their order). A frame
longer than :data:`MAX_FRAME` or one that is not a msgpack list starting with a known verb is
a :class:`ProtocolError`: the server closes that connection (and only that one). Tensor bytes
follow their header raw: inline on the control stream up to :data:`INLINE_BYTES`, else split
over :data:`PARTS` streams of their own on the same connection (QUIC multiplexes them; one
stream alone moves about 100 MiB/s here, several go faster).

Graphs travel as their structure in burn.Graph's terms (:func:`encode_graph`): nodes (op,
attributes encoded by ``burn.capture.serialize.encode_attr``, input references, output shapes
and dtypes), inputs, outputs; the server rebuilds a :class:`burn.Graph` from it
(:func:`decode_graph`) and keys it by the SHA-256 of these bytes.

Writing: iroh 1.2's Python bindings lower a ``bytes`` argument into a Rust buffer one byte at
a time in Python (about 3-6 MiB/s measured here); :func:`write_all` lowers it with one
``memmove`` instead and calls the same FFI function (``SendStream.write_all``), so bytes still
go only through the encrypted Iroh connection.

Example:
    >>> from burn_remote import wire
    >>> blob = wire.pack(["sync", 7])
    >>> assert wire.unpack(blob[4:]) == ["sync", 7] and int.from_bytes(blob[:4], "little") == len(blob) - 4
"""
from __future__ import annotations

import ctypes
import hashlib
import itertools
import threading
import time

import msgpack
import numpy as np

import burn

__all__ = ["ALPN", "PROTOCOL_VERSION", "MAX_FRAME", "INLINE_BYTES", "PARTS", "ProtocolError", "pack", "unpack",
           "read_frame", "FrameReader", "SyncFrameReader", "write_all", "write_now", "read_now", "encode_graph",
           "decode_graph", "graph_id", "np_dtype"]

#: the Iroh application protocol (ALPN) of burn-remote; the version is part of it and of hello
ALPN = b"burn-remote/1"
#: the message protocol version, checked at connect (client and server must agree)
PROTOCOL_VERSION = 2             # 2: a run names the small outputs whose values the server pushes
#: the largest control frame accepted (graphs and small tensors); larger: the connection is closed
MAX_FRAME = 64 << 20
#: tensors up to this many bytes travel inline on the control stream
INLINE_BYTES = 1 << 20
#: streams a large tensor is split over
PARTS = 4
#: the largest tensor accepted (bytes)
MAX_TENSOR = 1 << 40

VERBS = frozenset({"hello", "put", "run", "get", "free", "sync", "stats", "bye"})


class ProtocolError(burn.BurnError):
    """A malformed, oversized or unexpected frame: the connection that sent it is closed.

    Example:
        >>> from burn_remote.wire import ProtocolError, unpack
        >>> try:
        ...     unpack(b"\\xc1")
        ... except ProtocolError as e:
        ...     assert "malformed" in str(e)
    """


def pack(msg) -> bytes:
    """One frame: length prefix and msgpack payload.

    Example:
        >>> from burn_remote.wire import pack
        >>> assert pack([1])[:4] == (2).to_bytes(4, "little")
    """
    body = msgpack.packb(msg, use_bin_type=True)
    return len(body).to_bytes(4, "little") + body


def unpack(body: bytes):
    """The message of a frame's payload, checked to be ``[verb, ...]`` with a known verb.

    Example:
        >>> from burn_remote.wire import pack, unpack
        >>> assert unpack(pack(["free", [1, 2]])[4:]) == ["free", [1, 2]]
    """
    try:
        msg = msgpack.unpackb(body, raw=False, strict_map_key=False)
    except Exception as e:
        raise ProtocolError(f"burn-remote: malformed frame ({type(e).__name__}: {e})") from None
    if not isinstance(msg, list) or not msg or not isinstance(msg[0], str):
        raise ProtocolError(f"burn-remote: malformed frame: expected [verb, ...], got {type(msg).__name__}")
    return msg


async def read_frame(stream, max_frame: int = MAX_FRAME):
    """Read one frame's payload from an iroh ``RecvStream``; :class:`ProtocolError` if too long."""
    head = await stream.read_exact(4)
    n = int.from_bytes(head, "little")
    if n > max_frame:
        raise ProtocolError(f"burn-remote: frame of {n} bytes is larger than the limit of {max_frame} bytes")
    return await stream.read_exact(n) if n else b""


class _FrameBuffer:
    """What the two frame readers share: the bytes read and not yet taken, and the frame header."""

    def __init__(self, stream, max_frame: int = MAX_FRAME):
        self.stream, self.max_frame = stream, max_frame
        self.buf, self.pos = bytearray(), 0

    def _missing(self, need: int) -> int:
        return need - (len(self.buf) - self.pos)

    def _append(self, chunk: bytes) -> None:
        if not chunk:
            raise ConnectionError("burn-remote: the stream ended")
        if self.pos:
            del self.buf[:self.pos]
            self.pos = 0
        self.buf += chunk

    def _take(self, n: int) -> bytes:
        out = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return out

    def _frame_length(self) -> int:
        """The length in the buffered header (4 bytes there); :class:`ProtocolError` past the limit."""
        n = int.from_bytes(self.buf[self.pos:self.pos + 4], "little")
        if n > self.max_frame:
            raise ProtocolError(f"burn-remote: frame of {n} bytes is larger than the limit of {self.max_frame} bytes")
        return n


class FrameReader(_FrameBuffer):
    """Frames from an iroh ``RecvStream``, read in chunks (one FFI call brings every frame that
    has arrived, instead of two calls per frame).

    Example:
        >>> import asyncio
        >>> from burn_remote.wire import FrameReader, pack, unpack
        >>> class Fake:
        ...     def __init__(self, data): self.data = data
        ...     async def read(self, n):
        ...         out, self.data = self.data[:n], self.data[n:]
        ...         return out
        >>> r = FrameReader(Fake(pack(["sync", 1]) + pack(["sync", 2]) + b"xyz"))
        >>> async def go():
        ...     return [unpack(await r.frame()), unpack(await r.frame()), await r.exact(3)]
        >>> assert asyncio.run(go()) == [["sync", 1], ["sync", 2], b"xyz"]
    """

    async def _fill(self, need: int):
        while self._missing(need) > 0:
            self._append(await self.stream.read(max(self._missing(need), 1 << 16)))

    async def exact(self, n: int) -> bytes:
        """The next ``n`` bytes."""
        await self._fill(n)
        return self._take(n)

    async def frame(self) -> bytes:
        """The next frame's payload; :class:`ProtocolError` if it is longer than the limit."""
        await self._fill(4)
        n = self._frame_length()
        self.pos += 4
        return await self.exact(n)


class SyncFrameReader(_FrameBuffer):
    """Frames from an iroh ``RecvStream`` read by the calling thread (:func:`read_now`), each
    call waiting at most ``timeout`` seconds; a frame not whole by then stays buffered for the
    next call.

    Example:
        >>> import burn_remote.wire as wire
        >>> class Fake:
        ...     pass
        >>> r = wire.SyncFrameReader(Fake())
        >>> r.buf += wire.pack(["sync", 1]) + b"xy"
        >>> assert wire.unpack(r.frame(0.0)) == ["sync", 1] and r.exact(2, 0.0) == b"xy"
    """

    def _fill(self, need: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while self._missing(need) > 0:
            # timeout 0 still polls once: what has arrived is taken, nothing is waited for
            left = max(0.0, deadline - time.monotonic())
            chunk = read_now(self.stream, max(self._missing(need), 1 << 16), left)
            if chunk is None:
                return False
            self._append(chunk)
        return True

    def exact(self, n: int, timeout: float):
        """The next ``n`` bytes, or None if they have not all arrived within ``timeout`` s."""
        return self._take(n) if self._fill(n, timeout) else None

    def frame(self, timeout: float):
        """The next frame's payload, or None if it is not whole within ``timeout`` seconds;
        :class:`ProtocolError` if it is longer than the limit."""
        if not self._fill(4, timeout):
            return None
        n = self._frame_length()
        if not self._fill(4 + n, timeout):
            return None
        self.pos += 4
        return self._take(n)


def _ffi():
    from iroh import iroh_ffi as F
    need = ("_UniffiRustBuffer", "_UniffiLib", "_uniffi_rust_call_async", "_UniffiFfiConverterTypeIrohError__as_error",
            "_uniffi_rust_call_with_error", "_UNIFFI_RUST_FUTURE_CONTINUATION_CALLBACK", "_UNIFFI_RUST_FUTURE_POLL_READY")
    missing = [n for n in need if not hasattr(F, n)]
    if missing:
        import iroh
        raise burn.BackendUnavailable(
            f"burn-remote: the iroh bindings ({getattr(iroh, '__version__', '?')}) lack {missing}; burn-remote's "
            f"fast write path needs iroh 1.2.x (pip install 'iroh>=1.2,<1.3')")
    return F


def _lower(data) -> object:
    """A Rust buffer holding ``data`` as UniFFI's ``bytes`` (i32 big-endian length, then the
    bytes), filled with one memmove."""
    F = _ffi()
    mv = memoryview(data).cast("B")
    n = mv.nbytes
    if n > 0x7FFFFFFF:
        raise ValueError(f"burn-remote: one write is limited to 2 GiB, got {n} bytes")
    rb = F._UniffiRustBuffer.alloc(n + 4)
    base = ctypes.cast(rb.data, ctypes.c_void_p).value
    ctypes.memmove(base, n.to_bytes(4, "big"), 4)
    if n:
        src = np.frombuffer(mv, dtype=np.uint8)
        ctypes.memmove(base + 4, src.ctypes.data, n)
    rb.len = n + 4
    return rb


_WAITERS = {}                   # poll handle -> (Event, [poll code]) of write_now's pending polls
_HANDLES = itertools.count(1)
_CALLBACK = []                  # the C callback of write_now's polls (made once, kept alive)


def _continuation(handle, code):
    w = _WAITERS.pop(handle, None)
    if w is not None:
        w[1].append(code)
        w[0].set()


_TIMED_OUT = object()


def _drive(fut, poll, complete, free, timeout: float, F):
    """Poll the UniFFI Rust future ``fut`` from this thread until it is ready (iroh's runtime
    wakes it through :func:`_continuation`) and return its completed value; ``_TIMED_OUT`` when
    it is not ready within ``timeout`` seconds. ``fut`` is freed either way (dropping a pending iroh read or
    write is safe: quinn's reads and writes are cancel-safe)."""
    if not _CALLBACK:
        _CALLBACK.append(F._UNIFFI_RUST_FUTURE_CONTINUATION_CALLBACK(_continuation))
    try:
        while True:
            handle, ev, code = next(_HANDLES), threading.Event(), []
            _WAITERS[handle] = (ev, code)
            poll(fut, _CALLBACK[0], handle)
            if not ev.wait(timeout):
                _WAITERS.pop(handle, None)
                return _TIMED_OUT
            if code[0] == F._UNIFFI_RUST_FUTURE_POLL_READY:
                break
        return F._uniffi_rust_call_with_error(F._UniffiFfiConverterTypeIrohError__as_error, complete, fut)
    finally:
        free(fut)


def write_now(stream, data, timeout: float) -> None:
    """``SendStream.write_all(data)`` driven from the calling thread, no event loop involved:
    UniFFI polls the Rust future right here, and a write that fits QUIC's send buffer (every
    control message) is done on that first poll. A busy client's loop thread gets the GIL only
    when the recording thread lets it go: handing it a write cost 0.1 to 2 ms a message on this
    2-core machine. A write that must wait (the peer's flow-control window) blocks this thread
    until iroh's runtime wakes it, at most ``timeout`` seconds (then ``TimeoutError``).

    Example:
        >>> from burn_remote.wire import write_now
        >>> callable(write_now)
        True
    """
    F = _ffi()
    lib = F._UniffiLib
    fut = lib.uniffi_iroh_ffi_fn_method_sendstream_write_all(stream._uniffi_clone_handle(), _lower(data))
    if _drive(fut, lib.ffi_iroh_ffi_rust_future_poll_void, lib.ffi_iroh_ffi_rust_future_complete_void,
              lib.ffi_iroh_ffi_rust_future_free_void, timeout, F) is _TIMED_OUT:
        raise TimeoutError(f"burn-remote: a write of {len(memoryview(data).cast('B'))} bytes waited more than "
                           f"{timeout:g} s for the peer")


def read_now(stream, size_limit: int, timeout: float):
    """``RecvStream.read(size_limit)`` driven from the calling thread (see :func:`write_now`):
    the bytes that have arrived (at most ``size_limit``), ``b""`` at the stream's end, or None
    when nothing arrived within ``timeout`` seconds (what arrives later stays for the next read).
    A client waiting for a reply reads it itself: no hand-over from the loop thread.

    Example:
        >>> from burn_remote.wire import read_now
        >>> callable(read_now)
        True
    """
    F = _ffi()
    lib = F._UniffiLib
    fut = lib.uniffi_iroh_ffi_fn_method_recvstream_read(stream._uniffi_clone_handle(), size_limit)
    rb = _drive(fut, lib.ffi_iroh_ffi_rust_future_poll_rust_buffer, lib.ffi_iroh_ffi_rust_future_complete_rust_buffer,
                lib.ffi_iroh_ffi_rust_future_free_rust_buffer, timeout, F)
    return None if rb is _TIMED_OUT else F._UniffiFfiConverterBytes.lift(rb)


async def write_all(stream, data) -> None:
    """``SendStream.write_all(data)`` with the bytes lowered by one memmove (see the module
    docstring); ``data`` is any contiguous buffer (bytes, memoryview, numpy array)."""
    F = _ffi()
    lib = F._UniffiLib
    rb = _lower(data)
    await F._uniffi_rust_call_async(
        lib.uniffi_iroh_ffi_fn_method_sendstream_write_all(stream._uniffi_clone_handle(), rb),
        lib.ffi_iroh_ffi_rust_future_poll_void, lib.ffi_iroh_ffi_rust_future_complete_void,
        lib.ffi_iroh_ffi_rust_future_free_void, lambda v: None, F._UniffiFfiConverterTypeIrohError__as_error)


def np_dtype(name: str):
    """The numpy dtype of a burn dtype name (bfloat16 through ml_dtypes), or ProtocolError.

    Example:
        >>> import numpy as np
        >>> from burn_remote.wire import np_dtype
        >>> assert np_dtype("float32") == np.float32
    """
    try:
        return np.dtype(burn.as_dtype(name))
    except Exception:
        raise ProtocolError(f"burn-remote: unknown dtype {name!r}") from None


# -- graphs --------------------------------------------------------------------------------

def encode_graph(flushed) -> bytes:
    """The bytes of a :class:`burn.wholegraph.FlushedGraph` (random keys left out: per flush).

    Example:
        >>> import burn
        >>> from burn.wholegraph import FlushedGraph, FlushedNode
        >>> f = FlushedGraph([FlushedNode("exp", {}, (("in", 0),), (((2,), burn.float32),))],
        ...                  [((2,), burn.float32)], [("node", 0, 0)], [])
        >>> g = decode_graph(encode_graph(f))
        >>> assert g.ops() == ["exp"] and g.inputs[0].shape == (2,)
    """
    from burn.capture.serialize import encode_attr   # lazily: see decode_graph
    nodes = []
    for p, n in enumerate(flushed.nodes):
        attrs = {k: (None if k == "_key" else encode_attr(v, f"node %{p} ({n.op}) attribute {k!r}"))
                 for k, v in n.attrs.items()}
        nodes.append([n.op, attrs, [list(r) for r in n.inputs], [[list(s), d.name] for s, d in n.outputs]])
    doc = {"nodes": nodes, "inputs": [[list(s), d.name] for s, d in flushed.inputs],
           "outputs": [list(r) for r in flushed.outputs]}
    return msgpack.packb(doc, use_bin_type=True)


def graph_id(blob: bytes) -> bytes:
    """The structural hash a graph is cached and replayed by (SHA-256 of its bytes).

    Example:
        >>> from burn_remote.wire import graph_id
        >>> assert len(graph_id(b"x")) == 32
    """
    return hashlib.sha256(blob).digest()


def _meta(x):
    shape, dtype = x
    if not isinstance(shape, list) or not all(isinstance(s, int) and s >= 0 for s in shape):
        raise ProtocolError(f"burn-remote: bad shape {shape!r} in a graph")
    return tuple(shape), burn.as_dtype(dtype)


def decode_graph(blob: bytes) -> "burn.Graph":
    """The :class:`burn.Graph` of :func:`encode_graph`'s bytes: inputs ``in<i>``, outputs a tuple
    of its output references; unknown ops raise :class:`burn.CaptureError` naming them."""
    # imported here, not at module level: the client registers the backend at the first op, and
    # burn.capture is for its first use (tests/test_lazy_import.py)
    from burn.capture import Graph, GraphNode, Slot
    from burn.capture.serialize import decode_attr
    try:
        doc = msgpack.unpackb(blob, raw=False, strict_map_key=False)
        nodes = []
        for op, attrs, ins, outs in doc["nodes"]:
            refs = tuple(("node", int(r[1]), int(r[2])) if r[0] == "node" else ("in", int(r[1])) for r in ins)
            nodes.append(GraphNode(str(op), {k: decode_attr(v) for k, v in attrs.items()}, refs,
                                   tuple(_meta(o) for o in outs)))
        inputs = [Slot(f"in{i}", *_meta(x)) for i, x in enumerate(doc["inputs"])]
        outputs = ("tuple", [("T", ("node", int(r[1]), int(r[2])), False) for r in doc["outputs"]])
    except (ProtocolError, burn.CaptureError):
        raise
    except Exception as e:
        raise ProtocolError(f"burn-remote: malformed graph ({type(e).__name__}: {e})") from None
    for p, n in enumerate(nodes):
        for r in n.inputs:
            if (r[0] == "node" and not (0 <= r[1] < p and 0 <= r[2] < len(nodes[r[1]].outputs))) or \
                    (r[0] == "in" and not 0 <= r[1] < len(inputs)):
                raise ProtocolError(f"burn-remote: graph node %{p} ({n.op}) reads {r}, which does not exist")
    for r in outputs[1]:
        if not (0 <= r[1][1] < len(nodes)):
            raise ProtocolError(f"burn-remote: graph output {r[1]} does not exist")
    burn.plugins.ensure_loaded()
    from burn.dispatch import registry
    for n in nodes:
        if n.op not in registry.ops:
            raise burn.CaptureError(f"burn-remote server: the graph uses op '{n.op}', which is not registered "
                                    f"on the server; install the plugin that provides it there")
    return Graph(nodes, inputs, [], [], [], outputs, [], name="remote")
