"""`burn info` with BURN_REMOTE set names the remote device and its server (issue 15's acceptance)."""
import os
import subprocess
import sys

import pytest

pytest.importorskip("iroh")

from remote_server import ServerProcess, client_id, key_file  # noqa: E402


def test_burn_info_shows_the_remote_device_and_its_server(tmp_path):
    k = key_file(tmp_path, "client")
    srv = ServerProcess(tmp_path, [client_id(k)])
    try:
        env = dict(os.environ, BURN_REMOTE=srv.ticket, BURN_REMOTE_KEY_FILE=k)
        out = subprocess.run([sys.executable, "-m", "burn", "info"], env=env, capture_output=True, text=True,
                             timeout=120)
        assert out.returncode == 0, out.stderr
        line = next(s for s in out.stdout.splitlines() if s.strip().startswith("remote:0"))
        assert "flex:0 on server" in line and "connected" in line, line
        server_id = line.split("on server ")[1].split()[0]
        assert len(server_id) == 64, line
    finally:
        srv.stop()
