"""Mixed precision on flex against PyTorch CPU, in one run: the digits-sized MLP training step.

    .venv/bin/python benchmarks/bench_amp.py                 # default threads, then one thread
    .venv/bin/python benchmarks/bench_amp.py --rounds 41 --json out.json

The step is bench_core's MLP (64-256-256-10, batch 128, cross-entropy, Adam) written with
``burn.nn.Linear`` + ``burn.optim.Adam`` and ``torch.nn.Linear`` + ``torch.optim.Adam``, same
initial weights, in four modes:

- ``float32``: everything float32.
- ``bfloat16``: parameters, inputs and optimizer state bfloat16 ("pure" bf16; on flex each
  kernel computes in float32 and rounds once).
- ``autocast_bf16``: float32 parameters, forward under ``burn.autocast(burn.bfloat16)`` /
  ``torch.autocast("cpu", dtype=torch.bfloat16)``.
- ``autocast_fp16``: float32 parameters, forward under float16 autocast, loss scaled by
  ``burn.amp.GradScaler`` / ``torch.amp.GradScaler("cpu")``.

Every step of every mode (burn and torch) runs once per round, interleaved (A B C ...), after
warm-up; medians per mode and the ratios burn-mode / burn-float32 and burn / torch (same
mode) are printed, at the default thread settings and with BLAS and torch pinned to one
thread (burn, BLAS and torch each pinned by common.ThreadModes).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from common import ThreadModes, interleaved_times, medians, write_results  # benchmarks/ is sys.path[0] when run as a script

SIZES = (64, 256, 256, 10)
MODES = ("float32", "bfloat16", "autocast_bf16", "autocast_fp16")


def _init():
    rng = np.random.default_rng(3)
    ws = [(rng.standard_normal((a, b)) * np.sqrt(2.0 / a)).astype(np.float32) for a, b in zip(SIZES[:-1], SIZES[1:])]
    x = rng.standard_normal((128, 64), dtype=np.float32)
    y = rng.integers(0, 10, 128)
    return ws, x, y


def burn_step(burn, mode):
    ws, x, y = _init()
    dev = burn.Device.flex().autodiff()
    dtype = burn.bfloat16 if mode == "bfloat16" else burn.float32
    layers = []
    for w in ws:
        lin = burn.nn.Linear(w.shape[0], w.shape[1], device=dev, dtype=dtype)
        lin.weight.assign_(burn.tensor(w, device=dev).astype(dtype))
        lin.bias.assign_(burn.zeros((w.shape[1],), device=dev, dtype=dtype))
        layers.append(lin)
    model = burn.nn.Sequential(layers[0], burn.nn.ReLU(), layers[1], burn.nn.ReLU(), layers[2])
    opt = burn.optim.Adam(model, lr=1e-3)
    xb, yb = burn.tensor(x, device=dev).astype(dtype), burn.tensor(y, device=dev)
    F = burn.nn.functional
    if mode.startswith("autocast"):
        low = burn.bfloat16 if mode == "autocast_bf16" else burn.float16
        scaler = burn.amp.GradScaler(enabled=mode == "autocast_fp16")

        def step():
            with burn.autocast(low):
                loss = F.cross_entropy(model(xb), yb)
            scaler.step(opt, scaler.scale(loss).backward())
            scaler.update()
            return loss.item()
    else:
        def step():
            loss = F.cross_entropy(model(xb), yb)
            opt.step(loss.backward())
            return loss.item()
    return step


def torch_step(torch, mode):
    ws, x, y = _init()
    dtype = torch.bfloat16 if mode == "bfloat16" else torch.float32
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    with torch.no_grad():
        for lin, w in zip(model[::2], ws):
            lin.weight.copy_(torch.from_numpy(w.T.copy()))
            lin.bias.zero_()
    model = model.to(dtype)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xb, yb = torch.from_numpy(x).to(dtype), torch.from_numpy(y)
    if mode.startswith("autocast"):
        low = torch.bfloat16 if mode == "autocast_bf16" else torch.float16
        scaler = torch.amp.GradScaler("cpu", enabled=mode == "autocast_fp16")

        def step():
            opt.zero_grad(set_to_none=True)
            with torch.autocast("cpu", dtype=low):
                loss = torch.nn.functional.cross_entropy(model(xb), yb)
            scaler.scale(loss).backward()
            scaler.step(opt)
            scaler.update()
            return loss.item()
    else:
        def step():
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(xb), yb)
            loss.backward()
            opt.step()
            return loss.item()
    return step


def measure(burn, torch, rounds, modes):
    fns = {}
    for m in modes:
        fns[("burn", m)] = burn_step(burn, m)
        fns[("torch", m)] = torch_step(torch, m)
    med = medians(interleaved_times(fns, rounds, warmup=3, freeze_gc=True))
    out = {}
    base = med[("burn", "float32")]
    for m in modes:
        b, t = med[("burn", m)], med[("torch", m)]
        out[m] = {"burn_ms": b * 1e3, "torch_ms": t * 1e3, "vs_burn_float32": b / base, "burn_over_torch": b / t}
        print(f"  {m:14s} burn {b * 1e3:7.2f} ms ({b / base:5.2f}x burn float32)   torch {t * 1e3:7.2f} ms   "
              f"burn/torch {b / t:5.2f}x", flush=True)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=25)
    ap.add_argument("--modes", default=",".join(MODES), help="comma-separated: " + ",".join(MODES))
    ap.add_argument("--json", default="")
    args = ap.parse_args(argv)
    import torch
    import burn
    modes = [m for m in args.modes.split(",") if m]
    threads = ThreadModes(burn, torch)
    print("load average at start:", os.getloadavg())
    results = {}
    print(f"default threads (torch {torch.get_num_threads()}):")
    results["default"] = measure(burn, torch, args.rounds, modes)
    threads.set("one")
    print("one thread:")
    results["one_thread"] = measure(burn, torch, args.rounds, modes)
    threads.set("default")
    return write_results(results, args.json)


if __name__ == "__main__":
    main()
