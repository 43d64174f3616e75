"""The on-disk kernel cache: a second process with the same cache dir loads every
program as a driver binary and compiles nothing; a corrupt entry is rebuilt."""
import json
import os
import subprocess
import sys

import pytest

import burn

SCRIPT = r"""
import json, numpy as np, burn
import burn.nn.functional as F
dev = burn.Device.wgpu().autodiff()
dev.seed(0)
model = burn.nn.Sequential(burn.nn.Linear(8, 16, device=dev), burn.nn.ReLU(), burn.nn.Linear(16, 3, device=dev))
opt = burn.optim.SGD(model.parameters(), lr=0.1)
rng = np.random.default_rng(0)
for _ in range(3):
    x = burn.tensor(rng.standard_normal((10, 8)).astype(np.float32), device=dev)
    y = burn.tensor(rng.integers(0, 3, 10), device=dev)
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
value = loss.item()          # runs the pending work
print(json.dumps(dict(dev.backend.stats(0), loss=value)))
"""


def _wgpu_or_skip():
    try:
        import pyopencl  # noqa: F401
        burn.Device.wgpu().backend
    except Exception as e:
        pytest.skip(f"no usable wgpu device: {e}")


def _run(cache_dir):
    env = dict(os.environ, BURN_WGPU_CACHE_DIR=str(cache_dir), BURN_WGPU_CACHE="1")
    out = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_second_process_compiles_nothing(tmp_path):
    _wgpu_or_skip()
    first = _run(tmp_path)
    assert first["compiles"] > 0 and first["disk_loads"] == 0
    assert len(list(tmp_path.glob("*.bin"))) == first["compiles"]
    second = _run(tmp_path)
    assert second["compiles"] == 0
    assert second["disk_loads"] == first["compiles"]
    assert second["loss"] == first["loss"]


def test_corrupt_cache_entry_is_rebuilt(tmp_path):
    _wgpu_or_skip()
    first = _run(tmp_path)
    victim = sorted(tmp_path.glob("*.bin"))[0]
    victim.write_bytes(b"not a binary")
    second = _run(tmp_path)
    assert second["compiles"] == 1 and second["disk_loads"] == first["compiles"] - 1
    assert second["loss"] == first["loss"]
