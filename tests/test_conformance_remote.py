"""The whole backend conformance suite (burn.testing.conformance) on a ``remote`` device served by
flex, one test per case, as tests/test_conformance_flex.py runs it on flex locally.

One ``burn remote serve --device flex`` subprocess per test process (module scope; under
``pytest -n 2`` each worker has its own server and takes about half of the cases). Every case
travels as on any remote device: its inputs uploaded, its graph sent once and replayed by id,
its values read back, its gradients checked against finite differences computed on the remote
device, its errors raised at the call on the client.
"""
from __future__ import annotations

import pytest

import burn
from burn.testing import conformance
from burn.testing.pytest_plugin import selected_cases
from remote_server import ServerProcess, client_id, key_file

_CASES = selected_cases()


@pytest.fixture(scope="module")
def remote_flex(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("remote-conformance")
    k = key_file(tmp, "client")
    srv = ServerProcess(tmp, [client_id(k)])
    dev = None
    try:
        dev = burn.remote.connect(srv.ticket, key_file=k, timeout=30)
        yield dev
    finally:
        if dev is not None:
            burn.remote.disconnect(dev)
        srv.stop()


@pytest.mark.parametrize("case", _CASES, ids=[c.name for c in _CASES])
def test_conformance_remote(remote_flex, case):
    conformance.run_case(case, remote_flex)


def test_every_op_of_the_suite_runs_on_remote():
    # the parametrization above is the whole suite, not a subset of it
    assert [c.name for c in _CASES] == [c.name for c in conformance.cases()]
    assert {"forward", "grad", "error"} <= {c.check for c in _CASES}
