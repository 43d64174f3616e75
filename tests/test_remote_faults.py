"""burn-remote's faults, each bounded in time: an unknown peer is refused with the reason, a
protocol version mismatch is a clear error at connect, a malformed or oversized frame closes
that connection only, a client that vanishes mid-upload leaves the server serving (and its
tensors freed), a killed server is a BurnError on the client within its timeout, never a hang."""
from __future__ import annotations

import time

import numpy as np
import pytest

import burn
from burn_remote import wire
from remote_server import ServerProcess, client_id, key_file


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remote-faults")
    return tmp, key_file(tmp, "a"), key_file(tmp, "b")


@pytest.fixture(scope="module")
def server(keys):
    tmp, a, b = keys
    srv = ServerProcess(tmp, [client_id(a), client_id(b)])
    yield srv
    srv.stop()


def test_an_endpoint_not_on_the_allow_list_is_refused_with_the_reason(server, keys):
    stranger = key_file(keys[0], "stranger")
    with pytest.raises(burn.BackendUnavailable, match="not on the allow-list") as e:
        burn.remote.connect(server.ticket, key_file=stranger, timeout=20)
    assert client_id(stranger) in str(e.value) and "--allow" in str(e.value)


def test_a_protocol_version_mismatch_is_a_clear_error_at_connect(server, keys, monkeypatch):
    monkeypatch.setattr(wire, "PROTOCOL_VERSION", wire.PROTOCOL_VERSION + 1)
    with pytest.raises(burn.BackendUnavailable, match="protocol version mismatch") as e:
        burn.remote.connect(server.ticket, key_file=keys[1], timeout=20)
    assert "same burn-remote version" in str(e.value)


def test_a_bad_ticket_is_refused_before_anything_is_sent(keys):
    with pytest.raises(burn.BackendUnavailable, match="not an endpoint ticket"):
        burn.remote.connect("not-a-ticket", key_file=keys[1], timeout=5)


@pytest.mark.parametrize("frame", [b"\x05\x00\x00\x00\xc1\xc1\xc1\xc1\xc1",           # not msgpack
                                   wire.pack({"no": "verb"}),                        # not [verb, ...]
                                   wire.pack(["run", 1]),                            # wrong arity
                                   (2 ** 31).to_bytes(4, "little")],                 # 2 GiB frame
                         ids=["garbage", "not-a-list", "bad-arity", "oversized"])
def test_a_malformed_frame_closes_that_connection_and_the_server_serves_others(server, keys, frame):
    good = burn.remote.connect(server.ticket, key_file=keys[1], timeout=20)
    bad = burn.remote.connect(server.ticket, key_file=keys[2], timeout=20)
    x = burn.tensor([1.0, 2.0], device=good)
    before = burn.remote.stats(good)["server"]["closed_protocol"]
    conn = burn.remote.connection(bad)
    conn._post(frame)             # what a broken or hostile client could send
    t0 = time.monotonic()
    with pytest.raises(burn.BurnError, match="lost|closed"):
        conn.sync()
    assert time.monotonic() - t0 < 15
    assert (x * 3).tolist() == [3.0, 6.0]         # the other connection is untouched
    assert burn.remote.stats(good)["server"]["closed_protocol"] == before + 1
    burn.remote.disconnect(good)
    burn.remote.disconnect(bad)


def test_a_run_that_pushes_an_output_it_does_not_have_closes_that_connection(server, keys):
    """A replay of a cached graph whose push list names an output past its output ids is a
    protocol error (the connection closes), not a failed value or a server error."""
    good = burn.remote.connect(server.ticket, key_file=keys[1], timeout=20)
    bad = burn.remote.connect(server.ticket, key_file=keys[2], timeout=20)
    x = burn.tensor([1.0, 2.0], device=bad)
    assert (x + 1).tolist() == [2.0, 3.0]
    conn = burn.remote.connection(bad)
    gid = next(iter(conn.sent_graphs))
    before = burn.remote.stats(good)["server"]["closed_protocol"]
    conn._post(wire.pack(["run", gid, None, [], [], [conn.new_id()], [[3, 1]]]))
    with pytest.raises(burn.BurnError, match="lost|closed"):
        conn.sync()
    assert burn.remote.stats(good)["server"]["closed_protocol"] == before + 1
    burn.remote.disconnect(good)
    burn.remote.disconnect(bad)


def test_a_client_that_vanishes_mid_upload_leaves_the_server_serving_and_frees_its_tensors(server, keys):
    watcher = burn.remote.connect(server.ticket, key_file=keys[1], timeout=20)
    freed0 = burn.remote.stats(watcher)["server"]["freed_at_close"]
    victim = burn.remote.connect(server.ticket, key_file=keys[2], timeout=20)
    held = [burn.tensor(np.full(16, float(i)), device=victim) for i in range(10)]
    victim.sync()
    conn = burn.remote.connection(victim)

    async def half_upload_then_vanish():
        bi = await conn.conn.open_bi()
        s = bi.send()
        await wire.write_all(s, wire.pack(["part", 999, 0, 32 << 20, 32 << 20, 1]))
        await wire.write_all(s, np.zeros(4 << 20, np.uint8))     # 4 of the 32 MiB announced
        conn.conn.close(9, b"vanished")
    conn._post(wire.pack(["put", 999, "uint8", [32 << 20], 32 << 20, 1]))
    conn.lt.call(half_upload_then_vanish(), timeout=20)
    deadline = time.monotonic() + 20
    while burn.remote.stats(watcher)["server"]["freed_at_close"] < freed0 + 10:
        assert time.monotonic() < deadline, burn.remote.stats(watcher)
        time.sleep(0.1)
    assert server.alive()
    assert burn.ones((3,), device=watcher).sum().item() == 3.0
    assert len(held) == 10
    burn.remote.disconnect(watcher)


def test_a_killed_server_is_a_burn_error_within_the_timeout_not_a_hang(keys):
    tmp, a, _ = keys
    srv = ServerProcess(tmp, [client_id(a)])
    try:
        dev = burn.remote.connect(srv.ticket, key_file=a, timeout=3)
        ad = dev.autodiff()
        w = burn.tensor(np.ones((8, 8), np.float32), device=ad).require_grad()
        loss = (w @ w).sum()
        assert loss.item() == 512.0
        g = loss.backward()                       # the next step is pending ...
        srv.kill()                                # ... when the server dies
        t0 = time.monotonic()
        with pytest.raises(burn.BurnError, match="server"):
            w.grad(g).numpy()
        assert time.monotonic() - t0 < 10
        with pytest.raises(burn.BurnError):       # and stays an error, at once
            burn.ones((2,), device=dev).numpy()
    finally:
        srv.stop()
