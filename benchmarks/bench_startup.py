"""Time to the first step (issue 19): fresh interpreters, every workspace plugin installed.

    .venv/bin/python benchmarks/bench_startup.py [--rounds 7] [--json out.json]

Each command runs in a new process; the commands are interleaved round by round (a busy
neighbour slows all alike) and the table gives medians, with each burn row's excess over
``import numpy`` (what the targets are stated in) and ``import torch`` beside them:

| target (issue 19)                               |                          |
|-------------------------------------------------|--------------------------|
| ``import burn``                                 | <= import numpy + 100 ms |
| first flex op, every plugin installed           | <= import numpy + 150 ms |
| first digits-MLP Adam step on flex              | <= import numpy + 400 ms |

The MLP step uses data of the digits' shape (64 features, 10 classes, batch 128) made with
numpy, so the time is burn's, not scikit-learn's loader's.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

FIRST_OP = "import burn; burn.ones((2,), device=burn.Device.flex()).numpy()"
MLP_STEP = """
import numpy as np, burn
from burn import nn, optim
import burn.nn.functional as F
dev = burn.Device.flex().autodiff()
rng = np.random.default_rng(0)
x = burn.tensor(rng.random((128, 64), dtype=np.float32), device=dev)
y = burn.tensor(rng.integers(0, 10, 128), device=dev)
model = nn.Sequential(nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10))
model.to_device(dev)
opt = optim.Adam(model.parameters(), lr=1e-3)
loss = F.cross_entropy(model(x), y)
opt.step(loss.backward())
loss.item()
"""

#: name -> (code, env overrides, target excess over `import numpy` in ms or None)
COMMANDS = {
    "python -c pass": ("pass", {}, None),
    "import numpy": ("import numpy", {}, None),
    "import burn": ("import burn", {}, 100),
    "first flex op": (FIRST_OP, {}, 150),
    "first flex op, only flex enabled": (FIRST_OP, {"BURN_PLUGINS_DISABLE": "wgpu,cuda,linalg,signal"}, None),
    "first digits-MLP Adam step on flex": (MLP_STEP, {}, 400),
    "Device.default() then first op": ("import burn; burn.ones((2,), device=burn.Device.default()).numpy()", {}, None),
    "import torch": ("import torch", {}, None),
}


def run_once(code: str, env: dict) -> float:
    e = {k: v for k, v in os.environ.items() if not k.startswith("BURN_")}
    e.update(env)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env=e, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def measure(rounds: int, names=None) -> dict:
    """Median seconds per command over ``rounds`` interleaved rounds (after one warm-up each:
    the OS file cache, and pyc files written on first import)."""
    names = names or list(COMMANDS)
    times = {n: [] for n in names}
    for n in names:
        run_once(*COMMANDS[n][:2])
    for _ in range(rounds):
        for n in names:
            times[n].append(run_once(*COMMANDS[n][:2]))
    return {n: statistics.median(v) for n, v in times.items()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--json", help="write the medians (ms) here")
    args = ap.parse_args(argv)
    med = measure(args.rounds)
    base = med["import numpy"]
    torch = med["import torch"]
    print(f"{'command':<40} {'median':>9} {'- numpy':>9} {'target':>9} {'/ import torch':>15}")
    for n, t in med.items():
        target = COMMANDS[n][2]
        mark = "" if target is None else f"+{target} ms" + (" ok" if (t - base) * 1e3 <= target else " MISSED")
        print(f"{n:<40} {t * 1e3:8.0f}ms {(t - base) * 1e3:+8.0f}ms {mark:>12} {t / torch:14.2f}x")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({n: t * 1e3 for n, t in med.items()}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
