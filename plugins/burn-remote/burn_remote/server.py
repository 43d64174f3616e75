"""The burn-remote server: runs clients' graphs on a local device, for allowed endpoint ids only.

``burn remote serve --device flex --allow <endpoint-id>`` (or :func:`serve`) binds an Iroh
endpoint, prints its ticket and endpoint id, and serves each allowed connection in a session
of its own: a tensor namespace (client-chosen ids -> tensors on the server's device), a worker
thread that runs the session's messages in order, and the side streams of large transfers.
Graphs are cached by structural hash (:func:`burn_remote.wire.graph_id`) for every session: a
client sends a graph once and replays it by id with new bindings. A session's tensors are freed
when its connection ends, however it ends (bye, disconnect, a malformed frame, a killed client).

Example:
    >>> from burn_remote.server import Server
    >>> try:
    ...     Server(device="flex", allow=[])
    ... except ValueError as e:
    ...     assert "--allow-any" in str(e)
"""
from __future__ import annotations

import asyncio
import os
import queue
import sys
import threading
import time
import warnings

import numpy as np

import burn

from . import wire
from .transport import LoopThread, bind, endpoint_id_of, load_or_create_key
from .wire import ProtocolError

__all__ = ["Server", "serve"]

_ARITY = {"run": 7, "get": 3, "free": 2, "sync": 2, "stats": 2}   # fields per control message (put: _check_put)
_CLOSE_PROTOCOL = 2      # QUIC application error codes of the connection close
_CLOSE_REFUSED = 3
HEARTBEAT_S = 0.5        # the server speaks at least this often while a session is open
STAGE_TIMEOUT_S = 60.0   # how long a put waits for the parts of its bytes
# a message whose kind took less than this last time is handled on the loop (0: never, to measure):
# a training step's replay saves the two hand-overs to the worker and back (~0.25 ms a step on this
# 2-core machine); the loop is held this long at most, so a heartbeat or another session's reply is
# late by that much (they wait for the compute lock anyway; a client gives up after seconds of silence)
QUICK_S = float(os.environ.get("BURN_REMOTE_QUICK_S", "0.02"))


class _Failed:
    """The value of a tensor whose computation failed on the server: reading it (or a value
    computed from it) reports the error to the client."""
    __slots__ = ("kind", "message")

    def __init__(self, kind: str, message: str):
        self.kind, self.message = kind, message


def _error_of(e: BaseException) -> _Failed:
    return _Failed(type(e).__name__, str(e))


class Server:
    """A burn-remote server over an Iroh endpoint (see the module docstring).

    Args:
        device: the local device that runs clients' work ("flex", "wgpu:0", "cuda:0", ...).
        allow: endpoint ids (hex) allowed to connect; empty is refused unless ``allow_any``.
        allow_any: serve any endpoint id (warns: anyone who has the ticket can run code).
        key_file: the server's secret key (created if missing), for a ticket that stays the same.
        relay: use iroh's relays and discovery (default: direct addresses only, no relay).
        bind_addr: the UDP address to bind (default 127.0.0.1:0 without relays).

    Example:
        >>> from burn_remote.server import Server
        >>> import warnings
        >>> with warnings.catch_warnings(record=True):
        ...     s = Server(device="flex", allow_any=True)
        >>> assert s.stats()["connections"] == 0
    """

    def __init__(self, device="flex", allow=(), *, allow_any: bool = False, key_file: str | None = None,
                 relay: bool = False, bind_addr: str | None = None, max_frame: int = wire.MAX_FRAME):
        allow = [a.strip().lower() for a in allow if a.strip()]
        if not allow and not allow_any:
            raise ValueError("burn remote serve: the allow-list is empty, so no client could connect; give each "
                             "client's endpoint id with --allow <id> (the client prints it with `burn remote id`), "
                             "or serve anyone holding the ticket with --allow-any")
        for a in allow:
            if len(a) != 64 or any(c not in "0123456789abcdef" for c in a):
                raise ValueError(f"burn remote serve: --allow {a!r} is not an endpoint id (64 hex digits, from "
                                 f"`burn remote id` on the client)")
        if allow_any:
            warnings.warn("burn remote serve --allow-any: every endpoint holding the ticket may run code on this "
                          "machine's device", stacklevel=2)
        self.device = burn.Device(device) if isinstance(device, str) else device
        self.device.backend          # a device that cannot run fails here, at start
        self.ext_ops = _extension_ops(self.device)
        self.accelerator = bool(self.device.backend.is_accelerator(self.device.index))
        self.allow = set(allow)
        self.allow_any = allow_any
        self.key = load_or_create_key(key_file)
        self.endpoint_id = endpoint_id_of(self.key)
        self.relay, self.bind_addr, self.max_frame = relay, bind_addr, max_frame
        self.graphs = {}                    # graph id -> burn.Graph, shared by every session
        # one session computes at a time: core keeps one lazy graph per device (its pending list is
        # appended to without a lock) and a cached burn.Graph's prepared replay binds its inputs into
        # shared slots, so two threads computing on one device could lose or swap values. Re-entrant:
        # the control loop takes it without blocking to run a quick message itself (Session._quick)
        self.compute = threading.RLock()
        self.counts = {"connections": 0, "refused": 0, "active": 0, "closed_protocol": 0, "graphs_compiled": 0,
                       "graph_replays": 0, "runs": 0, "freed_at_close": 0}
        self.sessions = set()
        self.ticket = None
        self._lt = None
        self._ep = None

    # -- life ------------------------------------------------------------------------------
    def start(self) -> "Server":
        """Bind the endpoint and accept connections on a background thread; returns self."""
        self._lt = LoopThread("server")
        self._lt.call(self._bind(), timeout=30)
        self._lt.submit(self._accept_loop())
        return self

    async def _bind(self):
        from iroh import iroh_ffi as F
        self._ep = await bind(self.key, relay=self.relay, bind_addr=self.bind_addr)
        self.ticket = str(F.EndpointTicket.from_addr(self._ep.addr()))

    def stop(self) -> None:
        """Close every session and the endpoint."""
        if self._lt is None:
            return
        try:
            self._lt.call(self._ep.close(), timeout=5)
        except Exception:
            pass
        self._lt.stop()
        self._lt = None

    def stats(self) -> dict:
        """Counters: connections, refused, active sessions, graphs compiled and replayed, runs, and
        the tensors all sessions hold (``live_tensors``)."""
        return dict(self.counts, live_tensors=sum(len(s.tensors) for s in list(self.sessions)))

    async def _accept_loop(self):
        while True:
            try:
                inc = await self._ep.accept_next()
            except Exception:
                return
            if inc is None:
                return
            asyncio.ensure_future(self._connection(inc))

    async def _connection(self, inc):
        try:
            conn = await (await inc.accept()).connect()
        except Exception:
            return
        self.counts["connections"] += 1
        s = Session(self, conn)
        self.sessions.add(s)
        try:
            await s.run()
        except ProtocolError as e:
            self.counts["closed_protocol"] += 1
            _log(f"closing connection of {s.peer[:16]}: {e}")
            _close(conn, _CLOSE_PROTOCOL, str(e))
        except Exception as e:          # the peer went away, a stream was reset, ...: end this session only
            _log(f"session of {s.peer[:16]} ended: {type(e).__name__}: {e}")
            _close(conn, _CLOSE_PROTOCOL, f"session ended: {type(e).__name__}")
        finally:
            s.close()
            if s.worker is not None:       # it frees the session's tensors when it stops
                await asyncio.get_running_loop().run_in_executor(None, s.worker.join, 60)
            self.sessions.discard(s)


def _extension_ops(device) -> list:
    """The extension ops with a kernel on ``device``'s backend (every namespace imported first,
    so burn.linalg's and burn.signal's count): clients record these as nodes, not references."""
    burn.plugins.ensure_loaded()
    from burn.dispatch import registry
    for entry in list(registry.namespaces.values()):
        try:
            entry.resolve()
        except Exception as e:      # a broken namespace: its ops are simply not offered
            _log(f"namespace burn.{entry.name} failed to import ({type(e).__name__}: {e}); its ops run as "
                 f"their reference definitions")
    name = device.backend.name
    return sorted(op.name for op in list(registry.ops.values())
                  if getattr(op, "is_extension", False) and registry.kernel(op.name, name) is not None)


def _log(msg: str) -> None:
    if os.environ.get("BURN_REMOTE_QUIET") != "1":
        print(f"burn remote: {msg}", file=sys.stderr, flush=True)


def _close(conn, code: int, reason: str) -> None:
    try:
        conn.close(code, reason.encode()[:200])
    except Exception:
        pass


class Session:
    """One client connection: its tensors, its worker thread, its transfers."""

    def __init__(self, server: Server, conn):
        self.server, self.conn = server, conn
        self.peer = str(conn.remote_id()).lower()
        self.tensors = {}           # id -> Tensor (or _Failed)
        self.reshapes = {}          # (id, shape) -> that tensor reshaped for a graph's input (_reshaped)
        self.staging = {}           # tensor id -> [bytearray, parts left, threading.Event]
        self.outbox = {}            # request id -> [bytes-like, parts left]
        self.lock = threading.Lock()
        self.inbox = queue.Queue()
        self.queued = 0             # messages handed to the worker and not done (the loop thread's count)
        self.cost = {}              # (verb, graph id) -> seconds its last handling took (see _quick)
        self.out = asyncio.Queue()
        self.closed = False
        self.worker = None

    # -- the control stream ----------------------------------------------------------------
    async def run(self):
        srv = self.server
        bi = await asyncio.wait_for(self.conn.accept_bi(), timeout=30)
        recv, send = bi.recv(), bi.send()
        hello = wire.unpack(await asyncio.wait_for(wire.read_frame(recv, 1 << 16), timeout=30))
        refusal = self._check_hello(hello)
        if refusal is not None:
            srv.counts["refused"] += 1
            await wire.write_all(send, wire.pack(["hello", {"ok": False, "error": refusal}]))
            await send.finish()
            await asyncio.sleep(0.2)        # let the refusal reach the client before the close
            _close(self.conn, _CLOSE_REFUSED, "refused")
            return
        srv.counts["active"] += 1
        be, index = srv.device.backend, srv.device.index
        dtypes = {d.name: be.dtype_unavailable_reason(d, index) for d in burn.dtypes.ALL}
        await wire.write_all(send, wire.pack(["hello", {
            "ok": True, "version": wire.PROTOCOL_VERSION, "burn": burn.__version__, "device": str(srv.device),
            "server": srv.endpoint_id, "dtypes": dtypes, "ext_ops": srv.ext_ops}]))
        loop = asyncio.get_running_loop()
        self.worker = threading.Thread(target=self._work, args=(loop,), name="burn-remote-session", daemon=True)
        self.worker.start()
        tasks = [asyncio.ensure_future(self._writer(send)), asyncio.ensure_future(self._heartbeat()),
                 asyncio.ensure_future(self._side_streams())]
        reader = wire.FrameReader(recv, srv.max_frame)
        try:
            while True:
                msg = wire.unpack(await reader.frame())
                if msg[0] == "bye":
                    return
                if msg[0] == "put":
                    n = _check_put(msg)
                    if msg[5] == 0:                     # inline bytes follow the header
                        msg.append(await reader.exact(n) if n else b"")
                elif _ARITY.get(msg[0]) != len(msg):
                    raise ProtocolError(f"burn-remote: unexpected message {msg[0]!r} with {len(msg)} fields on the "
                                        f"control stream"[:200])
                if self.queued == 0 and self._quick(msg):
                    if not self.out.empty():
                        # the writer sends the reply before the next message here runs (frames
                        # already read would otherwise run first: a step's pushed loss waited for
                        # the put and frees that followed its run)
                        await asyncio.sleep(0)
                    continue
                self.queued += 1
                self.inbox.put(msg)
        finally:
            srv.counts["active"] -= 1
            for t in tasks:
                t.cancel()

    def _quick(self, msg) -> bool:
        """Handle ``msg`` here, on the control loop, when that is safe and cheap: the worker is
        idle (so the session's messages keep their order), no other session computes (the lock is
        taken without waiting) and the same kind of message took under ``QUICK_S`` last time. A
        tiny op's run and read, or a training step's replay, then cost no hand-over to the worker
        thread and back (two thread wake-ups, most of a tiny op's round trip on a loaded machine);
        anything slower, and every first run of a graph, goes to the worker, so the loop keeps
        serving heartbeats and other sessions."""
        kind = _cost_key(msg)
        if kind is None or self.cost.get(kind, 1.0) > QUICK_S:
            return False
        srv = self.server
        if srv.accelerator and kind[0] in ("get", "sync"):
            return False        # they wait for the device's queue: a fast one says nothing of the next

        if not srv.compute.acquire(blocking=False):
            return False
        try:
            blob = self._handle(msg)
        finally:
            srv.compute.release()
        if blob is not None:
            self.out.put_nowait(blob)
        return True

    def _done(self, blob):
        """On the loop: the worker finished a message (its reply, if any, goes out first)."""
        self.queued -= 1
        if blob is not None:
            self.out.put_nowait(blob)

    def _check_hello(self, msg) -> str | None:
        if msg[0] != "hello" or len(msg) < 2 or not isinstance(msg[1], dict):
            raise ProtocolError("burn-remote: the first message must be hello")
        info = msg[1]
        srv = self.server
        if not srv.allow_any and self.peer not in srv.allow:
            return (f"endpoint id {self.peer} is not on the allow-list of server {srv.endpoint_id[:16]}...; start "
                    f"the server with --allow {self.peer}")
        if info.get("version") != wire.PROTOCOL_VERSION:
            return (f"protocol version mismatch: the client speaks burn-remote protocol {info.get('version')} "
                    f"(burn-remote {info.get('package')}), the server {wire.PROTOCOL_VERSION}; install the same "
                    f"burn-remote version on both machines")
        return None

    async def _writer(self, send):
        while True:
            frames = [await self.out.get()]
            while not self.out.empty():
                frames.append(self.out.get_nowait())
            await wire.write_all(send, b"".join(frames) if len(frames) > 1 else frames[0])

    async def _heartbeat(self):
        hb = wire.pack(["hb"])
        while True:
            await asyncio.sleep(HEARTBEAT_S)
            self.out.put_nowait(hb)

    async def _side_streams(self):
        while True:
            bi = await self.conn.accept_bi()
            asyncio.ensure_future(self._side(bi))

    async def _side(self, bi):
        recv, send = bi.recv(), bi.send()
        try:
            msg = wire.unpack(await wire.read_frame(recv, 1 << 16))
            if msg[0] == "part":         # ["part", tensor id, offset, length, total, parts]
                _, tid, off, n, total, parts = msg
                if not (0 <= off and 0 < n and off + n <= total <= wire.MAX_TENSOR and 0 < parts <= 64):
                    raise ProtocolError(f"burn-remote: bad part {msg[1:]}")
                data = await recv.read_exact(n)
                st = self._stage(tid, total, parts)
                st[0][off:off + n] = data
                with self.lock:
                    st[1] -= 1
                    if st[1] == 0:
                        st[2].set()
                await wire.write_all(send, b"k")
                await send.finish()
            elif msg[0] == "fetch":      # ["fetch", request id, part, parts]
                _, rid, part, parts = msg
                with self.lock:
                    box = self.outbox.get(rid)
                if box is None:
                    raise ProtocolError(f"burn-remote: fetch of unknown request {rid}")
                data = box[0]
                step = -(-len(data) // parts)
                await wire.write_all(send, data[part * step:(part + 1) * step])
                await send.finish()
                with self.lock:
                    box[1] -= 1
                    if box[1] <= 0:
                        self.outbox.pop(rid, None)
            else:
                raise ProtocolError(f"burn-remote: unexpected side-stream message {msg[0]!r}")
        except ProtocolError as e:
            self.server.counts["closed_protocol"] += 1
            _close(self.conn, _CLOSE_PROTOCOL, str(e))
        except Exception:
            pass                         # a reset stream (client gone): the session's close frees the rest

    def _stage(self, tid, total, parts):
        with self.lock:
            st = self.staging.get(tid)
            if st is None:
                st = self.staging[tid] = [bytearray(total), parts, threading.Event()]
            elif len(st[0]) != total:
                raise ProtocolError(f"burn-remote: parts of tensor {tid} disagree on its size")
            return st

    def close(self):
        """Free everything this session holds (its worker stops after its current message)."""
        self.closed = True
        self.inbox.put(None)
        with self.lock:
            self.staging.clear()
            self.outbox.clear()
        if self.worker is None:
            self._free_all()

    # -- the worker: messages in order -----------------------------------------------------
    def _work(self, loop):
        while True:
            msg = self.inbox.get()
            if msg is None or self.closed:
                break
            try:
                blob = self._handle(msg)
            except ProtocolError as e:
                self.server.counts["closed_protocol"] += 1
                _close(self.conn, _CLOSE_PROTOCOL, str(e))
                break
            loop.call_soon_threadsafe(self._done, blob)
        self._free_all()                 # the client is gone: free its tensors

    def _handle(self, msg):
        """Run one message (on the worker or, see _quick, on the loop); its reply frame or None.
        ProtocolError propagates (the connection is closed); other failures become error replies."""
        t0 = time.perf_counter()
        try:
            reply = getattr(self, "_do_" + msg[0])(msg)
        except ProtocolError:
            raise
        except Exception as e:      # a bug or an unexpected failure: tell the client, keep serving
            reply = ["reply", msg[1] if len(msg) > 1 and isinstance(msg[1], int) else -1,
                     {"ok": False, "kind": type(e).__name__, "error": f"burn-remote server: {e}"}]
        kind = _cost_key(msg)
        if kind is not None:
            self.cost[kind] = time.perf_counter() - t0
        return None if reply is None else _reply_bytes(reply)

    def _free_all(self):
        self.server.counts["freed_at_close"] += len(self.tensors)
        self.tensors.clear()
        self.reshapes.clear()

    def _do_put(self, msg):             # ["put", id, dtype, shape, nbytes, parts, (inline bytes)]
        tid, dtype, shape, n, parts = msg[1], msg[2], tuple(msg[3]), msg[4], msg[5]
        npd = wire.np_dtype(dtype)
        if parts:
            st = self._stage(tid, n, parts)
            deadline = time.monotonic() + STAGE_TIMEOUT_S
            while not st[2].wait(0.25):
                if self.closed or time.monotonic() > deadline:
                    self.tensors[tid] = _Failed("BurnError", f"the upload of tensor {tid} did not complete")
                    return None
            with self.lock:
                self.staging.pop(tid, None)
            buf = st[0]
        else:
            buf = bytearray(msg[6])
        arr = np.frombuffer(buf, dtype=npd).reshape(shape) if n else np.zeros(shape, npd)
        with self.server.compute:
            self.tensors[tid] = burn.from_numpy(arr, device=self.server.device)
        return None

    def _do_run(self, msg):     # ["run", graph id, graph bytes or None, input ids, keys, output ids, push]
        push, out_ids = msg[6], msg[5]
        if not (isinstance(push, list) and isinstance(out_ids, list) and all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], int) and 0 <= p[0] < len(out_ids)
                and isinstance(p[1], int) for p in push)):
            raise ProtocolError("burn-remote: a run's push list is not [[output index, request id], ...]")
        self._run_graph(msg)
        if not push:
            return None
        # the values the client asked for with the run (a step's loss): their replies go out as soon
        # as the run ends, as a get's would (the client does not send the get and wait a round trip)
        return [_reply_bytes(self._value_reply(rid, out_ids[k])) for k, rid in push]

    def _run_graph(self, msg):
        _, gid, blob, in_ids, keys, out_ids, _push = msg
        srv = self.server
        g = srv.graphs.get(gid) if blob is None else None     # bytes sent: the client asks for no replay
        if g is None:
            if blob is None:
                raise ProtocolError("burn-remote: replay of a graph id this server never received")
            if wire.graph_id(blob) != gid:
                raise ProtocolError("burn-remote: a graph's bytes do not match its id")
            g = wire.decode_graph(blob)
            g.device = srv.device
            # a client without replay sends the bytes of a graph the cache may hold already: its fresh
            # copy serves this run only, so the cached one (prepared, and replayed by other clients)
            # is not thrown away and prepared again at their next replay
            srv.graphs.setdefault(gid, g)
            srv.counts["graphs_compiled"] += 1
        else:
            srv.counts["graph_replays"] += 1
        srv.counts["runs"] += 1
        leaves = []
        for i in in_ids:
            t = self.tensors.get(i)
            if t is None or t.__class__ is _Failed:
                bad = t or _Failed("BurnError", f"tensor {i} does not exist on the server (freed, or its upload "
                                                f"failed)")
                for o in out_ids:
                    self.tensors[o] = bad
                return None
            leaves.append(t)
        for k, (t, slot) in enumerate(zip(leaves, g.inputs)):
            if t.shape != slot.shape:
                leaves[k] = self._reshaped(in_ids[k], t, slot.shape)
        try:
            with srv.compute:
                outs = g.run(leaves, keys=[tuple(k) for k in keys])
        except Exception as e:
            outs = [_error_of(e)] * len(out_ids)
        for o, t in zip(out_ids, outs):
            self.tensors[o] = t
        return None

    def _reshaped(self, tid, t, shape):
        """Tensor ``tid`` (``t``) in the shape a graph's input slot has, where only the shape
        differs (core keeps a scalar constant as one element of shape ()): made once per tensor
        and shape, as a step replays with the same constants (a lazy reshape and its flush cost
        3% of a digits-MLP step's replay), and dropped with the tensor."""
        key = (tid, shape)
        r = self.reshapes.get(key)
        if r is None:
            if t.size != int(np.prod(shape, dtype=np.int64)):
                return t            # the replay reports the mismatch
            r = self.reshapes[key] = t.reshape(shape)
        return r

    def _do_get(self, msg):             # ["get", request id, tensor id]
        return self._value_reply(msg[1], msg[2])

    def _value_reply(self, rid, tid):
        """The reply to a read of tensor ``tid`` (a get, or a value a run pushes): its bytes inline,
        or a header whose bytes the client fetches on side streams, or the error that made it."""
        t = self.tensors.get(tid)
        if t is None:
            return ["reply", rid, {"ok": False, "kind": "BurnError", "error": f"tensor {tid} does not exist on "
                                                                             f"the server"}]
        if t.__class__ is _Failed:
            return ["reply", rid, {"ok": False, "kind": t.kind, "error": t.message}]
        try:
            with self.server.compute:
                arr = np.ascontiguousarray(t.numpy())
        except Exception as e:
            self.tensors[tid] = f = _error_of(e)
            return ["reply", rid, {"ok": False, "kind": f.kind, "error": f.message}]
        data = memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else b""
        n = len(data)
        if n <= wire.INLINE_BYTES:
            return [wire.pack(["reply", rid, {"ok": True, "nbytes": n, "parts": 0}]), bytes(data)]
        with self.lock:
            self.outbox[rid] = [data, wire.PARTS]
        return ["reply", rid, {"ok": True, "nbytes": n, "parts": wire.PARTS}]

    def _do_free(self, msg):            # ["free", [ids]]
        for i in msg[1]:
            if self.tensors.pop(i, None) is not None and self.reshapes:
                for key in [key for key in self.reshapes if key[0] == i]:
                    del self.reshapes[key]
        return None

    def _do_sync(self, msg):            # ["sync", request id]
        with self.server.compute:
            self.server.device.sync()
        return ["reply", msg[1], {"ok": True}]

    def _do_stats(self, msg):           # ["stats", request id]
        with self.server.compute:
            mem = self.server.device.memory_stats()
        return ["reply", msg[1], {"ok": True, "server": self.server.stats(), "tensors": len(self.tensors),
                                  "memory": mem}]


def _reply_bytes(reply) -> bytes:
    """A handler's reply as the bytes to write: a message to pack, or frames already packed (a
    header and its tensor's bytes, or several replies) joined, so a heartbeat never falls between
    a header and its bytes."""
    return b"".join(reply) if isinstance(reply[0], bytes) else wire.pack(reply)


def _cost_key(msg):
    """What the cost of ``msg`` is remembered by for Session._quick (None: never run on the loop):
    a run by its graph id (the graph fixes its shapes, so its cost is stable), a put with inline
    bytes, a get, free and sync by their verb. A put whose bytes come on side streams waits for
    them, a graph's bytes are decoded and prepared: both always go to the worker."""
    verb = msg[0]
    if verb == "run":
        return None if msg[2] is not None else ("run", msg[1])
    if verb == "put":
        return None if msg[5] else ("put",)
    if verb in ("get", "free", "sync"):
        return (verb,)
    return None


def _check_put(msg) -> int:
    """The inline byte count of a put header (0 when its bytes come on side streams)."""
    ok = (len(msg) == 6 and isinstance(msg[1], int) and isinstance(msg[2], str) and isinstance(msg[3], list)
          and isinstance(msg[4], int) and isinstance(msg[5], int) and 0 <= msg[5] <= 64)
    if not ok or not 0 <= msg[4] <= (wire.MAX_TENSOR if msg[5] else wire.INLINE_BYTES):
        raise ProtocolError(f"burn-remote: bad put header {msg[1:6]!r}"[:200])
    shape = msg[3]
    if not all(isinstance(s, int) and s >= 0 for s in shape) or \
            int(np.prod(shape, dtype=np.int64)) * wire.np_dtype(msg[2]).itemsize != msg[4]:
        raise ProtocolError(f"burn-remote: put of shape {shape} {msg[2]} does not hold {msg[4]} bytes"[:200])
    return 0 if msg[5] else msg[4]


def serve(device="flex", allow=(), *, allow_any: bool = False, ticket_file: str | None = None,
          key_file: str | None = None, relay: bool = False, bind_addr: str | None = None) -> None:
    """Serve until interrupted: prints the ticket and the server's endpoint id, and writes the
    ticket to ``ticket_file`` if given (what ``burn remote serve`` runs).

    Example (not run here: it blocks):
        >>> from burn_remote.server import serve
        >>> callable(serve)
        True
    """
    srv = Server(device, allow, allow_any=allow_any, key_file=key_file, relay=relay, bind_addr=bind_addr).start()
    print(f"burn remote: serving {srv.device} as endpoint {srv.endpoint_id}", flush=True)
    print(f"ticket: {srv.ticket}", flush=True)
    if ticket_file:
        tmp = f"{ticket_file}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(srv.ticket + "\n")
        os.replace(tmp, ticket_file)         # a reader never sees half a ticket
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
