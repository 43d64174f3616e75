"""A burn-remote server in a subprocess for tests (loopback, relays disabled), and clients of it."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import burn


class ServerProcess:
    """``burn remote serve`` in a subprocess; ``ticket`` once it is up; ``kill()`` / ``stop()``."""

    def __init__(self, tmp, allow=(), *, allow_any=False, device="flex"):
        self.ticket_file = os.path.join(str(tmp), f"ticket-{os.getpid()}-{time.monotonic_ns()}")
        cmd = [sys.executable, "-m", "burn", "remote", "serve", "--device", device, "--ticket-file", self.ticket_file]
        for a in allow:
            cmd += ["--allow", a]
        if allow_any:
            cmd.append("--allow-any")
        env = dict(os.environ, BURN_REMOTE_QUIET="1")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
        deadline = time.monotonic() + 60
        while not os.path.exists(self.ticket_file):
            if self.proc.poll() is not None:
                raise RuntimeError(f"burn remote serve exited {self.proc.returncode}: {self.proc.stderr.read()}")
            if time.monotonic() > deadline:
                self.kill()
                raise RuntimeError("burn remote serve did not write its ticket within 60 s")
            time.sleep(0.05)
        with open(self.ticket_file) as f:
            self.ticket = f.read().strip()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def stop(self):
        self.kill()


def key_file(tmp, name: str) -> str:
    return os.path.join(str(tmp), f"{name}.key")


def client_id(path: str) -> str:
    return burn.remote.client_endpoint_id(path)
