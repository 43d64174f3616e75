"""Core benchmarks: burn on flex vs numpy written by hand vs PyTorch CPU, in one run.

    .venv/bin/python benchmarks/bench_core.py            # full run (a few minutes)
    .venv/bin/python benchmarks/bench_core.py --quick    # fewer repeats (~1 minute)
    .venv/bin/python benchmarks/bench_core.py --only chain,mlp --json out.json

Every workload is written once per framework with the same math. The three
implementations run interleaved (burn, numpy, torch, burn, numpy, torch, ...)
so a busy neighbour on a shared machine slows all three alike, and the report
shows medians and the ratios burn/numpy and burn/torch.

Each round runs every framework twice: with the default thread settings (what a
user gets: torch's intra-op threads, BLAS's pool and burn's flex pool on every
core) and with all of them pinned to one thread (threadpoolctl,
torch.set_num_threads(1), burn.set_num_threads(1): a kernel-for-kernel
comparison). The report gives both ratios and each framework's speed-up from
one thread to the default (``--threads default`` or ``one`` runs one setting).
"""
from __future__ import annotations

import argparse
import gc
import json
import math
import os
import platform
import statistics
import subprocess
import sys
import time

import numpy as np

F32 = np.float32


# -- timing -------------------------------------------------------------------------

def interleaved(fns: dict, rounds: int, inner: int = 1, warmup: int = 2, modes=None,
                settings=("one",), blocks: bool = True) -> dict:
    """Median seconds per call of each fn per thread setting: ``{setting: {name: s}}``, run in
    the order A B C (setting 1) A B C (setting 2) A B C (setting 1) ..., each letter one block
    of calls (``common.block_time``: the previous framework's spinning threads would otherwise
    slow the next call), or one call each with ``blocks=False`` (a workload whose fns must run
    in turn, such as eager_shapes' fresh shapes).

    Samples taken while the 1-minute load average says the machine is
    oversubscribed are kept (dropping them all could leave nothing) but the
    median already discounts the outliers such neighbours cause.
    """
    from common import block_time      # benchmarks/ is on sys.path once main() runs
    for mode in settings:
        if modes is not None:
            modes.set(mode)
        for _ in range(warmup):
            for f in fns.values():
                f()
    samples = {m: {k: [] for k in fns} for m in settings}
    for _ in range(rounds):
        for mode in settings:
            if modes is not None:
                modes.set(mode)
            for k, f in fns.items():
                if blocks:
                    samples[mode][k].append(block_time(f, inner=inner))
                    continue
                t0 = time.perf_counter()
                for _ in range(inner):
                    f()
                samples[mode][k].append((time.perf_counter() - t0) / inner)
    return {m: {k: statistics.median(v) for k, v in per.items()} for m, per in samples.items()}


# -- workloads --------------------------------------------------------------------
# Each returns (description, unit scale, {"burn": fn, "numpy": fn, "torch": fn}).

def chain_math(ns, x):
    """The 8-op element-wise chain (abs, neg, exp, log1p, tanh, mul, add, sqrt),
    written once and run with each framework's namespace."""
    t = ns.tanh(x)
    return ns.sqrt(ns.log1p(ns.exp(-ns.abs(x))) + t * t)


def w_per_op(burn, torch, quick):
    n = 10_000
    xn = np.arange(8, dtype=F32) / 8
    xb = burn.tensor(xn)
    xt = torch.from_numpy(xn.copy())

    def run_burn():
        y = xb
        for _ in range(n):
            y = y + xb
        y.numpy()

    def run_numpy():
        y = xn
        for _ in range(n):
            y = y + xn

    def run_torch():
        y = xt
        for _ in range(n):
            y = y + xt

    return (f"per-op overhead: {n:,} adds of shape [8]", 1e6 / n, "µs/op",
            {"burn": run_burn, "numpy": run_numpy, "torch": run_torch})


def w_ext_call(burn, torch, quick):
    """Per-call cost of an extension op (burn.nn.functional.linear_relu, a
    ``backend_extension``) against one primitive (matmul) and torch's equivalent,
    on tensors small enough that the Python path is what is measured."""
    n = 5_000
    rng = np.random.default_rng(4)
    xn, wn, bn = (rng.standard_normal(s, dtype=F32) for s in ((4, 8), (8, 3), (3,)))
    xb, wb, bb = burn.tensor(xn), burn.tensor(wn), burn.tensor(bn)
    xt, wt, bt = (torch.from_numpy(a.copy()) for a in (xn, wn, bn))
    lr = burn.nn.functional.linear_relu

    def run_ext():
        for _ in range(n):
            y = lr(xb, wb, bb)
        y.numpy()

    def run_prim():
        for _ in range(n):
            y = xb @ wb
        y.numpy()

    def run_numpy():
        for _ in range(n):
            np.maximum(xn @ wn + bn, F32(0))

    def run_torch():
        for _ in range(n):
            torch.relu(torch.addmm(bt, xt, wt))

    return (f"extension call: {n:,} linear_relu [4,8]@[8,3]", 1e6 / n, "µs/call",
            {"burn": run_ext, "numpy": run_numpy, "torch": run_torch, "burn primitive (matmul)": run_prim})


def w_chain(burn, torch, quick):
    rng = np.random.default_rng(0)
    xn = (rng.standard_normal(4 * 1024 * 1024) * 3).astype(F32)
    xb = burn.from_numpy(xn)
    xt = torch.from_numpy(xn.copy())

    def run_burn():
        chain_math(burn, xb).numpy()

    def run_numpy():
        chain_math(np, xn)

    def run_torch():
        chain_math(torch, xt)

    return ("8-op element-wise chain (exp/log1p/tanh/sqrt), 4M float32", 1e3, "ms",
            {"burn": run_burn, "numpy": run_numpy, "torch": run_torch})


def _np_gelu(x):
    import scipy.special as sps
    return x * F32(0.5) * (F32(1.0) + sps.erf(x * F32(math.sqrt(0.5))))


def w_matmul_gelu(burn, torch, quick):
    rng = np.random.default_rng(1)
    an = rng.standard_normal((2, 512, 512), dtype=F32)
    bn = rng.standard_normal((2, 512, 512), dtype=F32) / 22
    biasn = rng.standard_normal(512, dtype=F32)
    ab, bb, biasb = burn.from_numpy(an), burn.from_numpy(bn), burn.from_numpy(biasn)
    at, bt, biast = (torch.from_numpy(a.copy()) for a in (an, bn, biasn))
    tf = torch.nn.functional

    def run_burn():
        burn.gelu(burn.relu(ab @ bb) + biasb).numpy()

    def run_numpy():
        _np_gelu(np.maximum(an @ bn, F32(0)) + biasn)

    def run_torch():
        tf.gelu(torch.relu(at @ bt) + biast)

    return ("gelu(relu(A@B)+bias), A,B [2,512,512]", 1e3, "ms",
            {"burn": run_burn, "numpy": run_numpy, "torch": run_torch})


def w_gelu_erf(burn, torch, quick):
    """gelu written from elementary ops (erf form), forward + backward of its sum, [32,512,256]."""
    rng = np.random.default_rng(5)
    xn = (rng.standard_normal((32, 512, 256)) * 2).astype(F32)
    dev = burn.Device.flex().autodiff()
    xb = burn.tensor(xn, device=dev).require_grad()
    xt = torch.from_numpy(xn.copy()).requires_grad_()
    r2 = F32(math.sqrt(0.5))

    def run_burn():
        y = xb * 0.5 * (burn.erf(xb * float(r2)) + 1.0)
        g = y.sum().backward()
        xb.grad(g).numpy()

    def run_numpy():
        import scipy.special as sps
        e = sps.erf(xn * r2)
        xn * F32(0.5) * (e + F32(1.0))                    # forward
        F32(0.5) * (e + F32(1.0)) + xn * np.exp(xn * xn * F32(-0.5)) * F32(1 / math.sqrt(2 * math.pi))

    def run_torch():
        xt.grad = None
        y = xt * 0.5 * (torch.erf(xt * float(r2)) + 1.0)
        y.sum().backward()

    return ("custom gelu (erf form) fwd+bwd, [32,512,256]", 1e3, "ms",
            {"burn": run_burn, "numpy": run_numpy, "torch": run_torch})


def w_gelu_erf_fwd(burn, torch, quick):
    """The same gelu (erf form, elementary ops), forward only, [32,512,256]."""
    rng = np.random.default_rng(5)
    xn = (rng.standard_normal((32, 512, 256)) * 2).astype(F32)
    xb = burn.tensor(xn)
    xt = torch.from_numpy(xn.copy())
    r2 = F32(math.sqrt(0.5))

    def run_burn():
        (xb * 0.5 * (burn.erf(xb * float(r2)) + 1.0)).numpy()

    def run_numpy():
        import scipy.special as sps
        xn * F32(0.5) * (sps.erf(xn * r2) + F32(1.0))

    def run_torch():
        xt * 0.5 * (torch.erf(xt * float(r2)) + 1.0)

    return ("custom gelu (erf form) forward, [32,512,256]", 1e3, "ms",
            {"burn": run_burn, "numpy": run_numpy, "torch": run_torch})


def _reduce_inputs(burn, torch):
    rng = np.random.default_rng(2)
    xn = rng.standard_normal((32, 512, 512), dtype=F32)
    return xn, burn.from_numpy(xn), torch.from_numpy(xn.copy())


def w_sum(burn, torch, quick):
    xn, xb, xt = _reduce_inputs(burn, torch)
    return ("sum over last axis of [32,512,512]", 1e3, "ms",
            {"burn": lambda: burn.sum(xb, axis=-1).numpy(), "numpy": lambda: xn.sum(axis=-1),
             "torch": lambda: xt.sum(dim=-1)})


def w_argmin(burn, torch, quick):
    xn, xb, xt = _reduce_inputs(burn, torch)
    return ("argmin over last axis of [32,512,512]", 1e3, "ms",
            {"burn": lambda: burn.argmin(xb, axis=-1).numpy(), "numpy": lambda: xn.argmin(axis=-1),
             "torch": lambda: xt.argmin(dim=-1)})


# MLP 64-256-256-10, batch 128, cross-entropy, Adam: written by hand in numpy and torch,
# burn.nn.Linear + burn.optim.Adam in burn (the same math).
SIZES = (64, 256, 256, 10)
LR, B1, B2, EPS = 1e-3, 0.9, 0.999, 1e-8


def _mlp_init():
    rng = np.random.default_rng(3)
    params = []
    for din, dout in zip(SIZES[:-1], SIZES[1:]):
        params.append((rng.standard_normal((din, dout)) * math.sqrt(2.0 / din)).astype(F32))
        params.append(np.zeros(dout, F32))
    x = rng.standard_normal((128, 64), dtype=F32)
    y = rng.integers(0, 10, 128)
    return params, x, y


class NumpyMLP:
    def __init__(self):
        self.p, self.x, self.y = _mlp_init()
        self.m = [np.zeros_like(p) for p in self.p]
        self.v = [np.zeros_like(p) for p in self.p]
        self.t = 0

    def step(self):
        w1, b1, w2, b2, w3, b3 = self.p
        x, y = self.x, self.y
        z1 = x @ w1 + b1
        h1 = np.maximum(z1, F32(0))
        z2 = h1 @ w2 + b2
        h2 = np.maximum(z2, F32(0))
        lg = h2 @ w3 + b3
        lg = lg - lg.max(axis=1, keepdims=True)
        e = np.exp(lg)
        s = e.sum(axis=1, keepdims=True)
        n = len(y)
        loss = float(np.mean(np.log(s[:, 0]) - lg[np.arange(n), y]))
        d = e / s
        d[np.arange(n), y] -= 1
        d /= F32(n)
        g3, gb3 = h2.T @ d, d.sum(0)
        d = (d @ w3.T) * (z2 > 0)
        g2, gb2 = h1.T @ d, d.sum(0)
        d = (d @ w2.T) * (z1 > 0)
        g1, gb1 = x.T @ d, d.sum(0)
        self.t += 1
        c1, c2 = F32(1 - B1 ** self.t), F32(1 - B2 ** self.t)
        for i, g in enumerate((g1, gb1, g2, gb2, g3, gb3)):
            self.m[i] = F32(B1) * self.m[i] + F32(1 - B1) * g
            self.v[i] = F32(B2) * self.v[i] + F32(1 - B2) * (g * g)
            self.p[i] = self.p[i] - F32(LR) * (self.m[i] / c1) / (np.sqrt(self.v[i] / c2) + F32(EPS))
        return loss


class TorchMLP:
    def __init__(self, torch):
        self.torch = torch
        p, x, y = _mlp_init()
        self.p = [torch.from_numpy(a.copy()).requires_grad_() for a in p]
        self.x, self.y = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
        self.m = [torch.zeros_like(a) for a in self.p]
        self.v = [torch.zeros_like(a) for a in self.p]
        self.t = 0

    def step(self):
        torch = self.torch
        w1, b1, w2, b2, w3, b3 = self.p
        h = torch.relu(self.x @ w1 + b1)
        h = torch.relu(h @ w2 + b2)
        loss = torch.nn.functional.cross_entropy(h @ w3 + b3, self.y)
        grads = torch.autograd.grad(loss, self.p)
        self.t += 1
        c1, c2 = 1 - B1 ** self.t, 1 - B2 ** self.t
        with torch.no_grad():
            for i, g in enumerate(grads):
                self.m[i] = B1 * self.m[i] + (1 - B1) * g
                self.v[i] = B2 * self.v[i] + (1 - B2) * (g * g)
                self.p[i].sub_(LR * (self.m[i] / c1) / (torch.sqrt(self.v[i] / c2) + EPS))
        return loss.item()


class BurnMLP:
    """The same step with burn's real API: burn.nn.Linear layers and burn.optim.Adam
    (whose update is the math above: m, v, bias corrections, eps outside the sqrt)."""

    def __init__(self, burn):
        self.burn = burn
        self.F = burn.nn.functional
        dev = burn.Device.flex().autodiff()
        p, x, y = _mlp_init()
        self.layers = [burn.nn.Linear(din, dout, device=dev) for din, dout in zip(SIZES[:-1], SIZES[1:])]
        for i, lin in enumerate(self.layers):     # the shared initial values, not Linear's own init
            lin.weight.assign_(burn.tensor(p[2 * i], device=dev))
            lin.bias.assign_(burn.tensor(p[2 * i + 1], device=dev))
        self.opt = burn.optim.Adam([t for lin in self.layers for t in (lin.weight, lin.bias)],
                                   lr=LR, betas=(B1, B2), eps=EPS)
        self.x, self.y = burn.tensor(x, device=dev), burn.tensor(y, device=dev)

    def step(self):
        burn, F = self.burn, self.F
        l1, l2, l3 = self.layers
        h = burn.relu(l1(self.x))
        h = burn.relu(l2(h))
        loss = F.cross_entropy(l3(h), self.y)
        self.opt.step(loss.backward())
        return loss.item()


def w_mlp(burn, torch, quick):
    nb, nn_, nt = BurnMLP(burn), NumpyMLP(), TorchMLP(torch)
    return ("MLP 64-256-256-10 train step, batch 128, Adam", 1e3, "ms",
            {"burn": nb.step, "numpy": nn_.step, "torch": nt.step})


PROBE_N = 200      # probes per timed call: 200 fresh shapes (issue 13's eager target)


def w_eager_shapes(burn, torch, quick):
    """Issue 13's eager probe ``float((a * 2.0 + 1.0).exp().sum().item())`` on 200 shapes never
    seen before per call (each call takes the next set: [m, n] with 3 <= m, n < 83, all
    distinct), against torch and numpy on the same shapes. Extra lines: burn on the same 200
    shapes again (their plans cached: the time at repeated sizes) and on one [40, 41] shape
    repeated 200 times. Unit: per probe (one flush each)."""
    pairs = [(m, n) for m in range(3, 83) for n in range(3, 83)]
    np.random.default_rng(13).shuffle(pairs)
    rng = np.random.default_rng(0)
    n_sets = min(len(pairs) // PROBE_N, 2 * (ROUNDS["eager_shapes"] + 2) + 2)
    sets = [[rng.standard_normal(s).astype(F32) * F32(0.1) for s in pairs[k * PROBE_N:(k + 1) * PROBE_N]]
            for k in range(n_sets)]
    burn_sets = [[burn.tensor(a) for a in arrs] for arrs in sets]
    torch_sets = [[torch.from_numpy(a) for a in arrs] for arrs in sets]
    one = burn.tensor(rng.standard_normal((40, 41)).astype(F32) * F32(0.1))
    cur = [-1]

    def probe(xs):
        for a in xs:
            float((a * 2.0 + 1.0).exp().sum().item())

    def run_burn():            # the next set of never-seen shapes (the other fns reuse it)
        cur[0] += 1
        if cur[0] >= n_sets:
            raise RuntimeError("eager_shapes: out of fresh shapes; lower the rounds")
        probe(burn_sets[cur[0]])

    def run_numpy():
        for a in sets[cur[0]]:
            float(np.exp(a * F32(2) + F32(1)).sum())

    return (f"eager probe on {PROBE_N} fresh shapes (per flush)", 1e6 / PROBE_N, "µs",
            {"burn": run_burn, "numpy": run_numpy, "torch": lambda: probe(torch_sets[cur[0]]),
             "burn, same shapes again": lambda: probe(burn_sets[cur[0]]),
             "burn, one shape repeated": lambda: probe([one] * PROBE_N)})


WORKLOADS = {"per_op": w_per_op, "ext_call": w_ext_call, "chain": w_chain, "matmul_gelu": w_matmul_gelu,
             "gelu_erf": w_gelu_erf, "gelu_erf_fwd": w_gelu_erf_fwd, "sum": w_sum, "argmin": w_argmin, "mlp": w_mlp,
             "eager_shapes": w_eager_shapes}
ROUNDS = {"per_op": 15, "ext_call": 15, "chain": 15, "matmul_gelu": 21, "gelu_erf": 11, "gelu_erf_fwd": 11, "sum": 21, "argmin": 15,
          "mlp": 41, "eager_shapes": 11}


def import_times(rounds: int) -> dict:
    """Median wall time of fresh interpreters importing each module (interleaved)."""
    cmds = {"numpy": "import numpy", "burn": "import burn",
            "burn + first flex use": "import burn; burn.ones((2,)).numpy()"}
    samples = {k: [] for k in cmds}
    env = dict(os.environ)
    for _ in range(rounds):
        for k, c in cmds.items():
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", c], check=True, env=env)
            samples[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) for k, v in samples.items()}


def machine_notes() -> dict:
    import threadpoolctl
    notes = {"python": platform.python_version(), "numpy": np.__version__, "cpu_count": os.cpu_count(),
             "machine": platform.machine(), "load_avg_start": os.getloadavg()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    notes["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    notes["blas"] = [f"{p['internal_api']} {p.get('version')} ({p['num_threads']} threads)"
                     for p in threadpoolctl.threadpool_info()]
    notes["OPENBLAS_CORETYPE"] = os.environ.get("OPENBLAS_CORETYPE")
    return notes


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer repeats")
    ap.add_argument("--only", default="", help="comma-separated workloads: " + ",".join(WORKLOADS) + ",import")
    ap.add_argument("--json", default="", help="also write the results to this file")
    ap.add_argument("--threads", default="both", choices=("both", "default", "one"),
                    help="thread settings to run (default: both, interleaved)")
    args = ap.parse_args(argv)
    only = [w for w in args.only.split(",") if w] or list(WORKLOADS) + ["import"]

    import threadpoolctl
    import torch
    import burn
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from common import ThreadModes

    modes = ThreadModes(burn, torch)
    settings = ThreadModes.MODES if args.threads == "both" else (args.threads,)
    limits = threadpoolctl.threadpool_limits()      # remembers the original limits
    notes = machine_notes()
    notes["torch"] = torch.__version__
    notes["threads"] = modes.describe()
    print("machine:", json.dumps(notes))
    results = {}
    for name in only:
        if name == "import":
            continue
        modes.set(settings[0])
        desc, scale, unit, fns = WORKLOADS[name](burn, torch, args.quick)
        # A full collection with torch loaded scans ~180K objects (~40 ms) and lands
        # in whichever framework happens to allocate at that moment; freezing the
        # setup's objects keeps collections proportional to what a workload creates.
        gc.collect()
        gc.freeze()
        rounds = max(5, ROUNDS[name] // 3) if args.quick else ROUNDS[name]
        med = interleaved(fns, rounds, modes=modes, settings=settings, blocks=name != "eager_shapes")
        results[name] = {"desc": desc, "unit": unit}
        for mode in settings:
            r = {k: v * scale for k, v in med[mode].items()}
            results[name][mode] = {**r, "burn/numpy": r["burn"] / r["numpy"], "burn/torch": r["burn"] / r["torch"]}
            label = f"{desc} [{'default threads' if mode == 'default' else 'one thread'}]"
            print(f"{label:78s} burn {r['burn']:9.3f} {unit:5s} numpy {r['numpy']:9.3f}  torch {r['torch']:9.3f}"
                  f"  burn/numpy {r['burn'] / r['numpy']:5.2f}x  burn/torch {r['burn'] / r['torch']:5.2f}x",
                  flush=True)
            for k in [k for k in r if k not in ("burn", "numpy", "torch")]:      # a workload's extra comparisons
                print(f"{'':78s} {k} {r[k]:9.3f} {unit}  burn/this {r['burn'] / r[k]:5.2f}x", flush=True)
        if len(settings) == 2:
            up = {k: med["one"][k] / med["default"][k] for k in ("burn", "numpy", "torch")}
            results[name]["speedup_1_to_default"] = up
            print(f"{'':78s} speed-up 1 -> default threads: burn {up['burn']:.2f}x, numpy {up['numpy']:.2f}x, "
                  f"torch {up['torch']:.2f}x", flush=True)
        gc.unfreeze()
    modes.set("default")
    if "import" in only:
        it = import_times(5 if args.quick else 9)
        results["import"] = {k: v * 1e3 for k, v in it.items()}
        print("import (ms, fresh interpreter): " + ", ".join(f"{k} {v * 1e3:.0f}" for k, v in it.items())
              + f"; burn - numpy = {(it['burn'] - it['numpy']) * 1e3:.0f} ms", flush=True)
    limits.restore_original_limits()
    notes["load_avg_end"] = os.getloadavg()
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": notes, "results": results}, f, indent=1)
    return results


if __name__ == "__main__":
    main()
