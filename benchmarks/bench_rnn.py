"""LSTM / GRU training steps: burn.nn + burn.optim against torch.nn + torch.optim and numpy, in one run.

    .venv/bin/python benchmarks/bench_rnn.py                 # lstm and gru, default threads and pinned
    .venv/bin/python benchmarks/bench_rnn.py --only lstm --rounds 11 --threads 1

Workload (issue 17's target: burn's step <= 1.5x torch CPU eager's): a 2-layer LSTM (or GRU),
input 128, hidden 256, sequence 64, batch 32, float32; loss ``mean(output * r)``; one step is
forward + backward + Adam (lr 1e-3) on every parameter. burn runs ``burn.nn.LSTM`` on
``Device.flex().autodiff()`` with ``burn.optim.Adam``; torch ``torch.nn.LSTM`` with
``torch.optim.Adam`` (same initial weights); numpy is the same step written by hand: the
projections and Adam in numpy, the recurrences with burn-flex's kernels called directly
(``burn_flex.kernels.recurrent``), so burn/numpy is what burn adds around its kernels
(recording, planning, autodiff, the optimizer's ops).

Honest timing on a shared machine: the three alternate step by step (A B C A B C ...), each
reads its loss (burn's lazy work is included), the garbage collector is frozen after the
warm-up, and the report gives medians, their ratios and the median of per-round ratios.
"Default" threads leave BLAS, torch and flex pools as they start; "pinned" limits BLAS to
one thread each (common.ThreadModes: threadpoolctl, ``torch.set_num_threads(1)``, ``burn.set_num_threads(1)``).
Before timing, burn and torch are checked to agree (losses over three steps and the weights after).
"""
from __future__ import annotations

import argparse
import os

import numpy as np

from common import ThreadModes, interleaved_times, medians, paired_ratio, write_results  # benchmarks/ is sys.path[0] when run as a script

F32 = np.float32
SIZES = dict(T=64, B=32, I=128, H=256, L=2)


def _models(burn, torch, kind):
    torch.manual_seed(0)
    T, B, I, H, L = (SIZES[k] for k in "TBIHL")
    tm = getattr(torch.nn, kind.upper())(I, H, L)
    dev = burn.Device.flex().autodiff()
    bm = getattr(burn.nn, kind.upper())(I, H, L, device=dev)
    bm.load_state_dict({k: burn.tensor(v.detach().numpy(), device=dev) for k, v in tm.state_dict().items()})
    rng = np.random.default_rng(0)
    x = rng.standard_normal((T, B, I), dtype=F32)
    r = rng.standard_normal((T, B, H), dtype=F32)
    return tm, bm, dev, x, r


def make(burn, torch, kind):
    """``(step_burn, step_torch, step_numpy)`` for ``kind`` "lstm" or "gru"; each returns the loss."""
    tm, bm, dev, x, r = _models(burn, torch, kind)
    xb, rb = burn.tensor(x, device=dev), burn.tensor(r, device=dev)
    xt, rt = torch.from_numpy(x.copy()), torch.from_numpy(r.copy())
    bo = burn.optim.Adam(bm, lr=1e-3)
    to = torch.optim.Adam(tm.parameters(), lr=1e-3)

    def step_burn():
        out = bm(xb)[0]
        loss = (out * rb).mean()
        bo.step(loss.backward())
        return loss.item()

    def step_torch():
        to.zero_grad(set_to_none=True)
        loss = (tm(xt)[0] * rt).mean()
        loss.backward()
        to.step()
        return loss.item()

    step_numpy = _numpy_step(kind, {k: v.detach().numpy().copy() for k, v in tm.state_dict().items()}, x, r)
    return step_burn, step_torch, step_numpy


def _numpy_step(kind, W, x, r):
    from burn_flex.kernels import recurrent as K
    T, B, I, H, L = (SIZES[k] for k in "TBIHL")
    G = (4 if kind == "lstm" else 3) * H
    m = {k: np.zeros_like(v) for k, v in W.items()}
    v = {k: np.zeros_like(v) for k, v in W.items()}
    state = {"t": 0}
    z = np.zeros((B, H), F32)

    def step():
        saved, inp = [], x
        for layer in range(L):
            wi, wh, bi, bh = (W[f"{n}_l{layer}"] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh"))
            x2 = inp.reshape(T * B, -1)
            if kind == "lstm":
                xp = (x2 @ wi.T + (bi + bh)).reshape(T, B, G)
                out, _, _, gates, cells = K.lstm_layer(xp, wh, z, z)
                saved.append((x2, out, gates, cells))
            else:
                xp = (x2 @ wi.T + bi).reshape(T, B, G)
                out, _, sv = K.gru_layer(xp, wh, bh, z)
                saved.append((x2, out, sv))
            inp = out
        loss = float((inp * r).mean())
        g_out = r * F32(1.0 / r.size)
        grads = {}
        for layer in range(L - 1, -1, -1):
            wi, wh = W[f"weight_ih_l{layer}"], W[f"weight_hh_l{layer}"]
            if kind == "lstm":
                x2, out, gates, cells = saved[layer]
                d_xp, d_wh, _, _ = K.lstm_layer_grad(wh, z, z, out, gates, cells, g_out, None, None)
                d2 = d_xp.reshape(T * B, G)
                db = np.ones(T * B, F32) @ d2
                grads[f"bias_ih_l{layer}"], grads[f"bias_hh_l{layer}"] = db, db
            else:
                x2, out, sv = saved[layer]
                d_xp, d_wh, d_bh, _ = K.gru_layer_grad(wh, z, out, sv, g_out, None)
                d2 = d_xp.reshape(T * B, G)
                grads[f"bias_ih_l{layer}"], grads[f"bias_hh_l{layer}"] = np.ones(T * B, F32) @ d2, d_bh
            grads[f"weight_hh_l{layer}"] = d_wh
            grads[f"weight_ih_l{layer}"] = d2.T @ x2
            if layer:
                g_out = (d2 @ wi).reshape(T, B, -1)
        state["t"] += 1
        t = state["t"]
        lr, b1, b2, eps = 1e-3, 0.9, 0.999, 1e-8
        for k, g in grads.items():
            m[k] = b1 * m[k] + (1 - b1) * g
            v[k] = b2 * v[k] + (1 - b2) * g * g
            W[k] -= (lr / (1 - b1 ** t)) * m[k] / (np.sqrt(v[k] / (1 - b2 ** t)) + eps)
        return loss
    return step


def check(burn, torch, kind):
    """burn and torch agree: losses of three steps and every weight after them."""
    sb, st, sn = make(burn, torch, kind)
    lb = [sb() for _ in range(3)]
    lt = [st() for _ in range(3)]
    ln = [sn() for _ in range(3)]
    assert np.allclose(lb, lt, rtol=1e-4, atol=1e-6), (kind, lb, lt)
    assert np.allclose(ln, lt, rtol=1e-4, atol=1e-6), (kind, ln, lt)
    print(f"check {kind}: losses burn {lb[-1]:.6f} torch {lt[-1]:.6f} numpy {ln[-1]:.6f}", flush=True)


def run(name, burn, torch, rounds):
    sb, st, sn = make(burn, torch, name)
    fns = {"burn": sb, "torch": st, "numpy": sn}
    times = interleaved_times(fns, rounds, warmup=2, freeze_gc=True)
    med, paired = medians(times), paired_ratio(times, "burn", "torch")
    res = {"burn_ms": med["burn"] * 1e3, "torch_ms": med["torch"] * 1e3, "numpy_ms": med["numpy"] * 1e3,
           "burn/torch": med["burn"] / med["torch"], "burn/numpy": med["burn"] / med["numpy"], "paired": paired}
    print(f"{name:5s} burn {res['burn_ms']:7.1f} ms  torch {res['torch_ms']:7.1f} ms  numpy {res['numpy_ms']:7.1f} ms"
          f"  burn/torch {res['burn/torch']:4.2f}x (paired {paired:4.2f}x)  burn/numpy {res['burn/numpy']:4.2f}x",
          flush=True)
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated: lstm,gru")
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--threads", default="default,1", help="comma-separated settings: default and/or 1")
    ap.add_argument("--json", default="")
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args(argv)
    import torch
    import burn
    names = [w for w in args.only.split(",") if w] or ["lstm", "gru"]
    print("load average at start:", os.getloadavg(), "sizes:", SIZES)
    if not args.no_check:
        for name in names:
            check(burn, torch, name)
    results = {}
    modes = ThreadModes(burn, torch)
    print(modes.describe())
    for setting in args.threads.split(","):
        print(f"-- threads: {setting}")
        modes.set("default" if setting == "default" else "one")
        results["default" if setting == "default" else "pinned"] = {n: run(n, burn, torch, args.rounds) for n in names}
    modes.set("default")
    return write_results(results, args.json)


if __name__ == "__main__":
    main()
