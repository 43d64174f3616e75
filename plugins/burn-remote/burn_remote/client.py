"""The client side of one burn-remote connection: uploads, graph runs, reads, frees.

A :class:`Connection` owns an Iroh endpoint and one connection to a server. The calling thread
writes what it posts (:func:`burn_remote.wire.write_now`) and, while it waits for a reply, reads
the server's messages itself (:func:`burn_remote.wire.read_now`); an asyncio loop on a background
thread (:class:`burn_remote.transport.LoopThread`) runs the side-stream transfers of large
tensors and the batch ticker. Messages that need no answer (put, run, free) are queued
and written in batches, so a training step costs the client no round trip until it reads a
value (a step's loss comes back with its run, unasked); reads and syncs wait for their reply,
at most ``timeout`` seconds without a word from the server (it speaks every half second while
it is alive), then raise :class:`burn.BurnError`: a killed server never hangs a client.

Example:
    >>> from burn_remote.client import Connection
    >>> assert Connection.DEFAULT_TIMEOUT > 0
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
import threading
import time

import numpy as np

import burn

from . import __version__, wire
from .transport import LoopThread, bind, default_key_file, endpoint_id_of, load_or_create_key, parse_ticket

__all__ = ["Connection", "Pushed"]

_ERRORS = {"ShapeError": burn.ShapeError, "DTypeError": burn.DTypeError, "IndexOutOfRange": burn.IndexOutOfRange,
           "BackendUnavailable": burn.BackendUnavailable, "CaptureError": burn.CaptureError,
           "OutOfMemory": burn.OutOfMemory}


class Connection:
    """One connection to a burn-remote server (see the module docstring).

    Args:
        ticket: the server's ticket (``burn remote serve`` prints it).
        key_file: this client's secret key (default :func:`burn_remote.transport.default_key_file`).
        timeout: seconds without a word from the server after which a waiting call fails.
        relay: use iroh's relays and discovery (default: the ticket's direct addresses only).
        replay: send each graph once and replay it by id (default); False sends every flush's
            graph, which the server decodes and prepares again (to measure what replay saves).
    """

    DEFAULT_TIMEOUT = 30.0
    BATCH_TICK_S = 0.002        # messages awaiting no answer wait at most about this long (see _post)
    BATCH_IDLE_TICKS = 50       # the ticker stops after this many ticks with nothing to write
    BATCH_BYTES = 1 << 20       # a batch this large is written at once
    BATCHING = os.environ.get("BURN_REMOTE_BATCHING", "1") != "0"   # 0: write every message at once (to measure)

    def __init__(self, ticket: str, *, key_file: str | None = None, timeout: float = DEFAULT_TIMEOUT,
                 relay: bool = False, replay: bool = True):
        self.timeout = float(timeout)
        self.replay = bool(replay)
        addr = parse_ticket(ticket)
        key = load_or_create_key(key_file or default_key_file())
        self.endpoint_id = endpoint_id_of(key)
        self.server_id = str(addr.id())
        self.ids = itertools.count(1)
        self.rids = itertools.count(1)
        self.pending = {}               # request id -> concurrent Future of (info, bytes)
        self.freed = []                 # ids of tensors the client dropped, sent with the next message
        self.sent_graphs = set()
        self.counts = {"graphs_sent": 0, "replays_sent": 0, "uploaded_bytes": 0, "downloaded_bytes": 0,
                       "reads_requested": 0, "reads_pushed": 0}
        self.dead = None                # why the connection is gone, once it is
        self.last_heard = time.monotonic()
        self.lock = threading.Lock()
        self.batch, self.batched = [], 0   # frames posted, not yet written (see _post)
        self.ticking = False
        self.wlock = threading.Lock()       # held while a batch is taken and written (_write_batch)
        self.rlock = threading.Lock()       # held by the thread that reads the server's messages (_wait)
        self.lt = LoopThread("client")
        try:
            self.info = self.lt.call(self._open(key, addr, relay), timeout=self.timeout + 5)
        except concurrent.futures.TimeoutError:
            self.lt.stop()
            raise burn.BackendUnavailable(f"burn-remote: no answer from server {self.server_id[:16]}... within "
                                          f"{self.timeout:g} s (is `burn remote serve` running, and reachable at "
                                          f"the ticket's addresses?)") from None
        except BaseException:
            self.lt.stop()
            raise
        self.device_name = self.info["device"]
        self.dtypes = dict(self.info["dtypes"])      # dtype name -> None (held) or why the server cannot
        from .backend import offer_extension_ops
        offer_extension_ops(self.info.get("ext_ops", []))

    # -- async side ------------------------------------------------------------------------
    async def _open(self, key, addr, relay):
        self.ep = await bind(key, relay=relay)
        try:
            self.conn = await asyncio.wait_for(self.ep.connect(addr, wire.ALPN), self.timeout)
        except asyncio.TimeoutError:
            raise burn.BackendUnavailable(f"burn-remote: could not reach server {self.server_id[:16]}... within "
                                          f"{self.timeout:g} s") from None
        except Exception as e:
            raise burn.BackendUnavailable(f"burn-remote: could not connect to server {self.server_id[:16]}...: "
                                          f"{e}") from None
        bi = await self.conn.open_bi()
        self.send, self.recv = bi.send(), bi.recv()
        await wire.write_all(self.send, wire.pack(["hello", {"version": wire.PROTOCOL_VERSION, "package": __version__,
                                                             "burn": burn.__version__}]))
        try:
            reply = wire.unpack(await asyncio.wait_for(wire.read_frame(self.recv, 1 << 16), self.timeout))
        except asyncio.TimeoutError:
            raise burn.BackendUnavailable(f"burn-remote: server {self.server_id[:16]}... did not answer hello within "
                                          f"{self.timeout:g} s") from None
        except Exception as e:
            raise burn.BackendUnavailable(f"burn-remote: server {self.server_id[:16]}... closed the connection at "
                                          f"hello ({self._close_reason() or e})") from None
        info = reply[1] if reply[0] == "hello" and len(reply) > 1 and isinstance(reply[1], dict) else {}
        if not info.get("ok"):
            raise burn.BackendUnavailable(f"burn-remote: server {self.server_id[:16]}... refused this client "
                                          f"({self.endpoint_id}): {info.get('error', 'no reason given')}")
        self._tasks = []
        self.reader = wire.SyncFrameReader(self.recv)
        return info

    def _close_reason(self):
        try:
            return self.conn.close_reason()
        except Exception:
            return None

    def _read_one(self, timeout: float) -> bool:
        """Read one message from the server (waiting at most ``timeout`` s) and hand a reply to
        its future; False if none came. Called under ``rlock`` by a thread that waits for a reply
        (:meth:`_wait`), and by the ticker, which drains what arrived while nobody waits."""
        try:
            body = self.reader.frame(timeout)
            if body is None:
                return False
            msg = wire.unpack(body)
            self.last_heard = time.monotonic()
            if msg[0] == "hb":
                return True
            if msg[0] != "reply":
                raise wire.ProtocolError(f"burn-remote: unexpected message {msg[0]!r} from the server")
            rid, info = msg[1], msg[2]
            data = None
            if info.get("ok") and info.get("nbytes") and not info.get("parts"):
                data = self.reader.exact(info["nbytes"], self.timeout)
                if data is None:
                    raise TimeoutError(f"the {info['nbytes']} bytes of a reply did not come within {self.timeout:g} s")
        except Exception as e:
            self._die(f"the connection to server {self.server_id[:16]}... was lost ({self._close_reason() or e})")
            return False
        fut = self.pending.pop(rid, None)
        if fut is not None:
            fut.set_result((info, data))
        return True

    def _drain(self) -> None:
        """Take the messages that have arrived while no thread waits (pushed values nobody read,
        heartbeats), without waiting: a loop that never reads would otherwise pile them up."""
        if self.dead is None and self.rlock.acquire(blocking=False):
            try:
                for _ in range(256):
                    if not self._read_one(0.0) or self.dead is not None:
                        break
            finally:
                self.rlock.release()

    def _die(self, why: str):
        if self.dead is None:
            self.dead = why
        for rid in list(self.pending):
            fut = self.pending.pop(rid, None)
            if fut is not None and not fut.done():
                fut.set_exception(burn.BurnError(f"burn-remote: {self.dead}"))

    async def _upload_part(self, tid, data, off, total, parts):
        bi = await self.conn.open_bi()
        s, r = bi.send(), bi.recv()
        await wire.write_all(s, wire.pack(["part", tid, off, len(data), total, parts]))
        await wire.write_all(s, data)
        await s.finish()
        await r.read_exact(1)

    async def _fetch_part(self, rid, part, parts, out, off):
        bi = await self.conn.open_bi()
        s, r = bi.send(), bi.recv()
        await wire.write_all(s, wire.pack(["fetch", rid, part, parts]))
        await s.finish()
        n = len(out) - off if part == parts - 1 else -(-len(out) // parts)
        out[off:off + n] = np.frombuffer(await r.read_exact(n), dtype=np.uint8)

    # -- the calling thread's side ---------------------------------------------------------
    def _check(self):
        if self.dead is not None:
            raise burn.BurnError(f"burn-remote: {self.dead}; reconnect with burn.remote.connect(ticket)")

    def _post(self, *frames, urgent: bool = True):
        """Queue ``frames`` for the server. ``urgent`` (a request, a large upload's header, a large
        graph's run, bye): write the batch now, from this thread (:meth:`_write_batch`).
        Otherwise (put, a small run, free: no answer awaited) they wait in ``self.batch`` for the
        next urgent message or the loop's next tick (``BATCH_TICK_S``), so a tiny op's put, run
        and read go out in one write."""
        self._check()
        urgent = urgent or not self.BATCHING
        with self.lock:
            if not frames and not self.batch and not self.freed:
                return                  # nothing to write (a pushed value's run went out already)
            if self.freed:
                ids, self.freed = self.freed, []
                frames = (wire.pack(["free", ids]),) + frames
            self.batch.extend(frames)
            self.batched += sum(len(f) for f in frames)
            if self.batched >= self.BATCH_BYTES:
                urgent = True
            start_ticker = not urgent and not self.ticking
            if start_ticker:
                self.ticking = True
        if urgent:
            self._write_batch()
        elif start_ticker:
            self.lt.loop.call_soon_threadsafe(self._start_ticker)

    def _write_batch(self):
        """Write the batch now, from the calling thread (:func:`burn_remote.wire.write_now`: no
        hand-over to the loop thread, which waits for the GIL while this client records). The
        write lock is taken before the batch, so batches go out in the order they were taken."""
        with self.wlock:
            with self.lock:
                frames, self.batch, self.batched = self.batch, [], 0
            if not frames or self.dead is not None:
                return
            try:
                wire.write_now(self.send, b"".join(frames), self.timeout)
            except Exception as e:
                # a write fails when the server has closed the connection (a malformed frame, its
                # shutdown): say so, with the close reason, as a failed read does (iroh's error
                # text may be empty)
                self._die(f"writing to server {self.server_id[:16]}... failed: the connection was closed or "
                          f"lost ({self._close_reason() or e or type(e).__name__})")

    def _start_ticker(self):
        self._tasks.append(asyncio.ensure_future(self._ticker()))
        self._tasks = [t for t in self._tasks if not t.done()]

    async def _ticker(self):
        """While messages are being posted: write the batch every ``BATCH_TICK_S`` (so the server
        computes while this client records) and take the replies that arrived while no thread
        waits (:meth:`_drain`); stops after ``BATCH_IDLE_TICKS`` empty ticks."""
        idle = 0
        while True:
            await asyncio.sleep(self.BATCH_TICK_S)
            if self.pending:            # replies nobody waits for yet (pushed values)
                self._drain()
            with self.lock:
                if not self.batch:
                    idle += 1
                    if idle >= self.BATCH_IDLE_TICKS:
                        self.ticking = False
                        return
                    continue
            idle = 0
            self._write_batch()

    def _wait(self, fut, what: str):
        """The result of ``fut``, reading the server's messages meanwhile (the waiting thread reads
        them itself: a reply costs no hand-over from the loop thread; another thread waiting at
        the same time lets this one read, and takes over when it is done)."""
        started = time.monotonic()
        while not fut.done():
            if self.rlock.acquire(blocking=False):
                try:
                    while not fut.done():
                        self._check()
                        self._read_one(0.1)
                        self._check_silence(started, what)
                finally:
                    self.rlock.release()
            else:
                try:
                    return fut.result(0.005)
                except concurrent.futures.TimeoutError:
                    self._check_silence(started, what)
        return fut.result()

    def _check_silence(self, started: float, what: str) -> None:
        """Fail once the server has said nothing for ``timeout`` seconds of this wait (it speaks
        every half second while alive: killed or unreachable)."""
        self._check()
        silent = time.monotonic() - max(self.last_heard, started)
        if silent > self.timeout:
            self._die(f"no word from server {self.server_id[:16]}... for {silent:.1f} s (killed or unreachable) "
                      f"while waiting for {what}")
            self._check()

    def _transfer(self, coros, what: str):
        """Run side-stream transfers on the loop; a failure is a BurnError saying why."""
        try:
            self._wait(self.lt.submit(_gather(coros)), what)
        except burn.BurnError:
            raise
        except Exception as e:
            why = self.dead or self._close_reason() or f"{type(e).__name__}: {e}"
            raise burn.BurnError(f"burn-remote: {what} failed: {why}") from None

    def _request(self, msg, what: str):
        rid = next(self.rids)
        fut = concurrent.futures.Future()
        self.pending[rid] = fut
        self._post(wire.pack([msg[0], rid] + msg[1:]))
        return rid, self._answer(fut, what)

    def _answer(self, fut, what: str):
        """The reply ``fut`` brings (``(info, bytes)``), or the server's error raised as its class."""
        info, data = self._wait(fut, what)
        if not info.get("ok"):
            cls = _ERRORS.get(info.get("kind"), burn.BurnError)
            raise cls(f"{info.get('error')} (on server {self.server_id[:16]}..., device {self.device_name})")
        return info, data

    def new_id(self) -> int:
        return next(self.ids)

    def release(self, tid: int) -> None:
        """Forget tensor ``tid`` (sent with the next message)."""
        self.freed.append(tid)

    def put(self, array: np.ndarray, dtype) -> int:
        """Upload ``array`` as a new server tensor of burn dtype ``dtype``; returns its id."""
        a = np.ascontiguousarray(array, dtype=np.dtype(dtype))
        tid = self.new_id()
        raw = a.reshape(-1).view(np.uint8) if a.size else np.zeros(0, np.uint8)
        n = raw.nbytes
        shape = list(a.shape)
        self.counts["uploaded_bytes"] += n
        if n <= wire.INLINE_BYTES:
            self._post(wire.pack(["put", tid, dtype.name, shape, n, 0]) + raw.tobytes(), urgent=False)
            return tid
        parts = wire.PARTS
        self._post(wire.pack(["put", tid, dtype.name, shape, n, parts]))
        step = -(-n // parts)
        coros = [self._upload_part(tid, raw[i * step:(i + 1) * step], i * step, n, parts) for i in range(parts)]
        self._transfer(coros, f"the upload of a {n}-byte tensor")
        return tid

    def run(self, gid: bytes, blob: bytes, inputs, keys, outputs, *, push=(), urgent: bool = False) -> list:
        """Run graph ``gid`` on the server (sending its bytes the first time only). ``push``: the
        positions in ``outputs`` of values the server sends back when the run ends (a step's loss,
        read right after: :meth:`get` then waits for it instead of asking); returns a
        :class:`Pushed` per position. ``urgent``: write it now rather than with the next batch (a
        large graph: the server computes while this client records what follows)."""
        pushed, pairs = [], []
        for k in push:
            rid = next(self.rids)
            fut = concurrent.futures.Future()
            self.pending[rid] = fut
            pushed.append(Pushed(fut, rid))
            pairs.append([k, rid])
        if self.replay and gid in self.sent_graphs:
            self.counts["replays_sent"] += 1
            self._post(wire.pack(["run", gid, None, inputs, keys, outputs, pairs]), urgent=urgent)
        else:
            self.counts["graphs_sent"] += 1
            self._post(wire.pack(["run", gid, blob, inputs, keys, outputs, pairs]), urgent=urgent)
            self.sent_graphs.add(gid)
        return pushed

    def get(self, tid: int, shape, dtype, pushed: "Pushed | None" = None) -> np.ndarray:
        """The values of server tensor ``tid`` (``pushed``: the server sends them after the run that
        makes them, see :meth:`run`; the batch holding that run is written now)."""
        if pushed is None:
            self.counts["reads_requested"] += 1
            rid, (info, data) = self._request(["get", tid], "a tensor's values")
        else:
            self.counts["reads_pushed"] += 1
            self._post(urgent=True)
            rid, (info, data) = pushed.rid, self._answer(pushed.future, "a tensor's values")
        n = info["nbytes"]
        self.counts["downloaded_bytes"] += n
        if info.get("parts"):
            out = np.empty(n, np.uint8)
            parts = info["parts"]
            step = -(-n // parts)
            coros = [self._fetch_part(rid, i, parts, out, i * step) for i in range(parts)]
            self._transfer(coros, f"the download of a {n}-byte tensor")
            return out.view(np.dtype(dtype)).reshape(shape)
        if not n:
            return np.zeros(shape, np.dtype(dtype))
        return np.frombuffer(data, dtype=np.dtype(dtype)).reshape(shape).copy()

    def sync(self) -> None:
        """Wait until the server has run everything sent so far."""
        self._request(["sync"], "sync")

    def stats(self) -> dict:
        """The server's counters and this session's (and the client's own ``counts``)."""
        _, (info, _) = self._request(["stats"], "stats")
        return {"server": info["server"], "tensors": info["tensors"], "memory": info["memory"],
                "client": dict(self.counts)}

    def close(self) -> None:
        """Say goodbye and close the connection (the server frees this client's tensors)."""
        if not self.lt.thread.is_alive():
            return
        if self.dead is None:
            try:
                self._post(wire.pack(["bye"]))
                time.sleep(0.05)
                self.lt.call(self._close(), timeout=5)
            except Exception:
                pass
            self.dead = "the connection was closed by this client"
        else:
            try:
                self.lt.call(self._close(), timeout=5)
            except Exception:
                pass
        self.lt.stop()

    async def _close(self):
        for t in self._tasks:
            t.cancel()
        try:
            self.conn.close(0, b"bye")
        except Exception:
            pass
        await self.ep.close()


class Pushed:
    """A value the server sends after the run that computes it (:meth:`Connection.run`'s ``push``):
    the reply's future and request id.

    Example:
        >>> import concurrent.futures
        >>> from burn_remote.client import Pushed
        >>> assert Pushed(concurrent.futures.Future(), 3).rid == 3
    """
    __slots__ = ("future", "rid")

    def __init__(self, future, rid):
        self.future, self.rid = future, rid


async def _gather(coros):
    await asyncio.gather(*coros)
