"""Iroh's own throughput and round trip on this machine, without burn: the references the remote
timing tests compare with where the machine cannot reach the absolute targets.

``python raw_iroh_peer.py`` serves: it prints a ticket, then on each bidirectional stream reads an
8-byte command, ``+n`` (receive n bytes, answer one byte), ``-n`` (send n bytes) or ``0`` (echo
16-byte messages until the stream ends). A client (:func:`measure`) moves 64 MiB each way over the
same number of streams and with the same write path (``burn_remote.wire.write_all``) as
burn-remote's tensor transfers, in a separate process like the server's, and returns the best
MiB/s of several tries per direction; :func:`measure_round_trip` sends 16-byte messages on one
stream and waits for each echo, as a tiny op's request and reply travel.
"""
from __future__ import annotations

import asyncio
import subprocess
import sys
import time

import numpy as np

ALPN = b"burn-raw-iroh-test/1"


async def _bind():
    from iroh import iroh_ffi as F
    from burn_remote import transport
    opts = F.EndpointOptions(preset=F.preset_minimal(), relay_mode=F.RelayMode.disabled(),
                             secret_key=transport.load_or_create_key(None), alpns=[ALPN], bind_addr="127.0.0.1:0")
    return await F.Endpoint.bind(opts)


async def _serve():
    from iroh import iroh_ffi as F
    from burn_remote import wire
    ep = await _bind()
    print(str(F.EndpointTicket.from_addr(ep.addr())), flush=True)
    blob = np.zeros(64 << 20, np.uint8)

    async def side(bi):
        r, s = bi.recv(), bi.send()
        cmd = int.from_bytes(await r.read_exact(8), "little", signed=True)
        if cmd == 0:
            while True:
                try:
                    msg = await r.read_exact(16)
                except Exception:       # the client finished the stream
                    return
                await wire.write_all(s, msg)
        if cmd > 0:
            await r.read_exact(cmd)
            await wire.write_all(s, b"k")
        else:
            await wire.write_all(s, blob[:-cmd])
        await s.finish()

    while True:
        inc = await ep.accept_next()
        conn = await (await inc.accept()).connect()

        async def streams(conn=conn):
            while True:
                asyncio.ensure_future(side(await conn.accept_bi()))
        asyncio.ensure_future(streams())


async def _client(ticket, parts, tries, mib):
    from burn_remote import transport, wire
    ep = await _bind()
    conn = await asyncio.wait_for(ep.connect(transport.parse_ticket(ticket), ALPN), 20)
    n = mib << 20
    data = np.random.default_rng(0).integers(0, 255, n, dtype=np.uint8)
    step = n // parts

    async def up(i):
        bi = await conn.open_bi()
        s, r = bi.send(), bi.recv()
        await wire.write_all(s, step.to_bytes(8, "little", signed=True))
        await wire.write_all(s, data[i * step:(i + 1) * step])
        await s.finish()
        await r.read_exact(1)

    async def down(i):
        bi = await conn.open_bi()
        s, r = bi.send(), bi.recv()
        await wire.write_all(s, (-step).to_bytes(8, "little", signed=True))
        await s.finish()
        await r.read_exact(step)

    best = {}
    for name, fn in (("up", up), ("down", down)):
        rates = []
        for _ in range(tries):
            t = time.perf_counter()
            await asyncio.gather(*[fn(i) for i in range(parts)])
            rates.append(mib / (time.perf_counter() - t))
        best[name] = max(rates)
    return best


async def _round_trips(ticket, blocks, calls):
    from burn_remote import transport, wire
    ep = await _bind()
    conn = await asyncio.wait_for(ep.connect(transport.parse_ticket(ticket), ALPN), 20)
    bi = await conn.open_bi()
    s, r = bi.send(), bi.recv()
    await wire.write_all(s, (0).to_bytes(8, "little", signed=True))
    msg = bytes(16)
    for _ in range(30):                 # warm-up
        await wire.write_all(s, msg)
        await r.read_exact(16)
    medians = []
    for _ in range(blocks):
        ts = []
        for _ in range(calls):
            t = time.perf_counter()
            await wire.write_all(s, msg)
            await r.read_exact(16)
            ts.append(time.perf_counter() - t)
        medians.append(float(np.median(ts)))
    await s.finish()
    return min(medians)


class RawPeer:
    """The serving process of this file, for round-trip blocks measured between other work (the
    timing test alternates them with burn's blocks, so both see the machine's same moments).

    Example::

        >>> import raw_iroh_peer                                         # doctest: +SKIP
        >>> with raw_iroh_peer.RawPeer() as peer:                        # doctest: +SKIP
        ...     assert peer.round_trip() < 0.01
    """

    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, __file__], stdout=subprocess.PIPE, text=True)
        self.ticket = self.proc.stdout.readline().strip()
        if not self.ticket:
            self.close()
            raise RuntimeError("the raw iroh peer printed no ticket")

    def round_trip(self, calls: int = 100, timeout: float = 60) -> float:
        """Seconds: the median of ``calls`` 16-byte round trips on one stream (a new connection,
        warmed up by 30 round trips first)."""
        return asyncio.run(asyncio.wait_for(_round_trips(self.ticket, 1, calls), timeout))

    def close(self):
        self.proc.kill()
        self.proc.wait(10)
        self.proc.stdout.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def measure_round_trip(blocks: int = 3, calls: int = 100) -> float:
    """Seconds: the best of ``blocks`` medians of ``calls`` 16-byte round trips on one stream to
    a peer in another process (the timing test's blocks, without burn on either side)."""
    with RawPeer() as peer:
        return min(peer.round_trip(calls) for _ in range(blocks))


def measure(parts: int = 4, tries: int = 6, mib: int = 64, timeout: float = 120) -> dict:
    """``{"up": MiB/s, "down": MiB/s}``: the best of ``tries`` transfers of ``mib`` MiB over
    ``parts`` streams, each way, to a peer in another process."""
    with RawPeer() as peer:
        return asyncio.run(asyncio.wait_for(_client(peer.ticket, parts, tries, mib), timeout))


if __name__ == "__main__":
    asyncio.run(_serve())
