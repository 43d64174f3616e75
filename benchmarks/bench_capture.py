"""burn.capture: eager vs replayed steps, against PyTorch CPU eager and torch.compile, in one run.

    .venv/bin/python benchmarks/bench_capture.py                 # default threads, then one thread
    .venv/bin/python benchmarks/bench_capture.py --only chain,mlp --rounds 15 --threads 1

Workloads (issue 13's targets, as ratios of the same run):

- ``chain``: 10,000 chained adds of shape [8], read once (per op: replay <= 0.5 us; torch eager ~2 us);
  ``chain`` and ``mlp`` also run "burn replay (plan)": the graph replayed through its fusion plan
  instead of flex's flat runner (burn_flex.replay), the before and after of that runner;
- ``mlp``: the digits MLP 64-256-256-10 Adam step, batch 128 (replay <= 0.6x torch eager);
- ``cnn``: LeNet CNN [64,1,28,28] Adam step (replay <= 1.0x torch eager);
- ``encoder``: TransformerEncoderLayer d128 h4 ff512 [16,64] forward + backward (replay <= 1.0x torch);
- ``trace``: trace + first replay of the MLP step against one eager step (<= 3x);
- ``optim``: the MLP step with RMSprop (centered), GradClip.norm and a cosine schedule stepped
  inside the captured function (its lr a replay input), against torch's RMSprop + clip_grad_norm_;
- ``wgpu``: the MLP Adam step on wgpu (PoCL here): eager, replay through the fusion plan
  (``BURN_CAPTURE_BACKEND_REPLAY=0``) and replay through pre-bound kernels (burn_wgpu.replay);
  ratios against burn eager (no torch on OpenCL).

"One thread" pins burn's flex pool, BLAS and torch to one thread each (common.ThreadModes).

Each round runs every contender once in turn (A B C D A B C D ...); the table gives medians.
torch.compile runs where it compiles here (else the reason is printed).
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

N_CHAIN = 10_000


def _medians(fns, rounds):
    from common import block_time
    for f in fns.values():
        f()
    gc.collect()
    times = {k: [] for k in fns}
    for _ in range(rounds):
        for k, f in fns.items():
            times[k].append(block_time(f))        # blocks, not call by call: see common.block_time
    return {k: statistics.median(v) for k, v in times.items()}


def _compiled(torch, fn, *args):
    """torch.compile(fn) and one call, or the reason it does not run here."""
    try:
        c = torch.compile(fn)
        c(*args)
        return c, None
    except Exception as e:      # no C compiler, unsupported op...: report, do not fail the run
        return None, f"{type(e).__name__}: {str(e).splitlines()[0][:100]}"


def _plan_replay(cap, *args):
    """``cap`` with its graph's replays through the fusion plan, not the backend's runner (as
    ``BURN_CAPTURE_BACKEND_REPLAY=0`` does for a whole process): the "before" of flex's flat
    replay (burn_flex.replay) in the same run."""
    while cap.graph(*args) is None or "flex" not in cap.graph(*args)._prepared:
        cap(*args)
    prep = cap.graph(*args)._prepared["flex"]
    prep.runners[0] = None
    return cap


def w_chain(burn, torch, rounds):
    x0 = burn.ones((8,))

    def chain(x):
        for _ in range(N_CHAIN):
            x = x + 1.0
        return x
    cap = burn.capture(chain)
    cap(x0).numpy()
    tx = torch.ones(8)

    def torch_chain(x):
        for _ in range(N_CHAIN):
            x = x + 1.0
        return x
    plan = _plan_replay(burn.capture(chain), x0)
    fns = {"burn eager": lambda: chain(x0).numpy(), "burn replay": lambda: cap(x0).numpy(),
           "burn replay (plan)": lambda: plan(x0).numpy(), "torch eager": lambda: torch_chain(tx).numpy()}
    assert float(cap(x0).numpy()[0]) == 1.0 + N_CHAIN
    med = _medians(fns, max(3, rounds // 3))
    return {k: v / N_CHAIN * 1e6 for k, v in med.items()}, "us/op", \
        "torch.compile skipped: a 10,000-op Python loop unrolls into a graph it takes minutes to compile"


def _burn_mlp(burn, make_opt=None):
    """bench_core's digits MLP and its training step as a function of (x, y); ``make_opt(params)``
    -> (optimizer, scheduler or None) replaces its Adam."""
    import bench_core
    nb = bench_core.BurnMLP(burn)
    F = burn.nn.functional
    opt, sched = (nb.opt, None) if make_opt is None else \
        make_opt([p for layer in nb.layers for p in (layer.weight, layer.bias)])

    def body(x, y):
        l1, l2, l3 = nb.layers
        h = burn.relu(l2(burn.relu(l1(x))))
        loss = F.cross_entropy(l3(h), y)
        opt.step(loss.backward())
        if sched is not None:
            sched.step()
        return loss
    return nb, body


def w_mlp(burn, torch, rounds):
    import bench_core
    nb, body = _burn_mlp(burn)
    cap = burn.capture(body)
    ne, body_e = _burn_mlp(burn)
    nt = bench_core.TorchMLP(torch)
    npl, body_p = _burn_mlp(burn)
    plan = _plan_replay(burn.capture(body_p), npl.x, npl.y)
    fns = {"burn eager": lambda: body_e(ne.x, ne.y).item(), "burn replay": lambda: cap(nb.x, nb.y).item(),
           "burn replay (plan)": lambda: plan(npl.x, npl.y).item(), "torch eager": nt.step}
    tc = bench_core.TorchMLP(torch)
    comp, why = _compiled(torch, _torch_mlp_grads(torch), tc.p, tc.x, tc.y)
    if comp is not None:
        fns["torch.compile"] = lambda: _torch_adam(torch, tc, comp(tc.p, tc.x, tc.y))
    return _medians(fns, rounds), "ms", why and f"torch.compile: {why}"


def _torch_mlp_grads(torch):
    def grads(p, x, y):
        w1, b1, w2, b2, w3, b3 = p
        h = torch.relu(torch.relu(x @ w1 + b1) @ w2 + b2)
        loss = torch.nn.functional.cross_entropy(h @ w3 + b3, y)
        return (loss,) + tuple(torch.autograd.grad(loss, p))
    return grads


def _torch_adam(torch, tm, out):
    import bench_core as bc
    loss, grads = out[0], out[1:]
    tm.t += 1
    c1, c2 = 1 - bc.B1 ** tm.t, 1 - bc.B2 ** tm.t
    with torch.no_grad():
        for i, g in enumerate(grads):
            tm.m[i] = bc.B1 * tm.m[i] + (1 - bc.B1) * g
            tm.v[i] = bc.B2 * tm.v[i] + (1 - bc.B2) * (g * g)
            tm.p[i].sub_(bc.LR * (tm.m[i] / c1) / (torch.sqrt(tm.v[i] / c2) + bc.EPS))
    return loss.item()


def _burn_cnn(burn):
    nn, F = burn.nn, burn.nn.functional
    dev = burn.Device.flex().autodiff()
    m = nn.Sequential(nn.Conv2d(1, 6, 5, device=dev), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5, device=dev),
                      nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120, device=dev), nn.ReLU(),
                      nn.Linear(120, 84, device=dev), nn.ReLU(), nn.Linear(84, 10, device=dev))
    opt = burn.optim.Adam(m, lr=1e-3)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((64, 1, 28, 28), dtype=np.float32), device=dev)
    y = burn.tensor(rng.integers(0, 10, 64), device=dev)

    def body(x, y):
        loss = F.cross_entropy(m(x), y)
        opt.step(loss.backward())
        return loss
    return body, x, y


def w_cnn(burn, torch, rounds):
    import bench_nn
    be, xe, ye = _burn_cnn(burn)
    br, xr, yr = _burn_cnn(burn)
    cap = burn.capture(br)
    _, step_torch = bench_nn.make_cnn(burn, torch, "adam")
    fns = {"burn eager": lambda: be(xe, ye).item(), "burn replay": lambda: cap(xr, yr).item(),
           "torch eager": step_torch}
    return _medians(fns, rounds), "ms", None


def _burn_encoder(burn):
    d, heads, ff, n, s = 128, 4, 512, 16, 64
    dev = burn.Device.flex().autodiff()
    layer = burn.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.0, device=dev)
    params = [p for _, p in layer.named_parameters()]
    rng = np.random.default_rng(1)
    x = burn.tensor(rng.standard_normal((n, s, d), dtype=np.float32), device=dev).require_grad()
    r = burn.tensor(rng.standard_normal((n, s, d), dtype=np.float32), device=dev)

    def body(x, r):
        grads = (layer(x) * r).sum().backward()
        return [x.grad(grads)] + [p.grad(grads) for p in params]
    return body, x, r


def w_encoder(burn, torch, rounds):
    import bench_nn
    be, xe, re_ = _burn_encoder(burn)
    br, xr, rr = _burn_encoder(burn)
    cap = burn.capture(br)
    _, step_torch = bench_nn.make_encoder(burn, torch)
    fns = {"burn eager": lambda: [g.numpy() for g in be(xe, re_)],
           "burn replay": lambda: [g.numpy() for g in cap(xr, rr)], "torch eager": step_torch}
    return _medians(fns, rounds), "ms", None


def w_trace(burn, torch, rounds):
    """A fresh trace + first replay (after the warm-up call) against one eager step."""
    import bench_core
    eager_times, first_times = [], []
    for _ in range(max(3, rounds // 4)):
        ne, body_e = _burn_mlp(burn)
        body_e(ne.x, ne.y).item()
        t0 = time.perf_counter()
        body_e(ne.x, ne.y).item()
        eager_times.append(time.perf_counter() - t0)
        nb, body = _burn_mlp(burn)
        cap = burn.capture(body)
        cap(nb.x, nb.y).item()          # warm-up: Adam makes its moments
        t0 = time.perf_counter()
        cap(nb.x, nb.y).item()          # the trace (the call runs too)
        cap(nb.x, nb.y).item()          # the first replay (prepares the plan)
        first_times.append(time.perf_counter() - t0)
    del bench_core
    return {"burn eager": statistics.median(eager_times), "trace+first replay": statistics.median(first_times)}, \
        "ms", None


def _burn_mlp_rmsprop(burn):
    def make_opt(params):
        opt = burn.optim.RMSprop(params, lr=1e-3, centered=True, grad_clip=burn.optim.GradClip.norm(1.0))
        return opt, burn.optim.CosineAnnealingLR(opt, T_max=10_000)
    return _burn_mlp(burn, make_opt)


def w_optim(burn, torch, rounds):
    import bench_core
    nb, body = _burn_mlp_rmsprop(burn)
    cap = burn.capture(body)
    ne, body_e = _burn_mlp_rmsprop(burn)
    nt = bench_core.TorchMLP(torch)
    topt = torch.optim.RMSprop(nt.p, lr=1e-3, centered=True)
    tsched = torch.optim.lr_scheduler.CosineAnnealingLR(topt, T_max=10_000)

    def torch_step():
        w1, b1, w2, b2, w3, b3 = nt.p
        topt.zero_grad()
        loss = torch.nn.functional.cross_entropy(torch.relu(torch.relu(nt.x @ w1 + b1) @ w2 + b2) @ w3 + b3, nt.y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(nt.p, 1.0)
        topt.step()
        tsched.step()
        return loss.item()
    fns = {"burn eager": lambda: body_e(ne.x, ne.y).item(), "burn replay": lambda: cap(nb.x, nb.y).item(),
           "torch eager": torch_step}
    return _medians(fns, rounds), "ms", None


def w_wgpu(burn, torch, rounds):
    from common import wgpu_device
    dev = wgpu_device()
    if dev is None:
        return {"burn eager": float("nan")}, "ms", "no OpenCL device: skipped"
    import bench_core
    F = burn.nn.functional

    def mlp():
        nn = burn.nn
        ad = dev.autodiff()
        ad.seed(0)
        m = nn.Sequential(nn.Linear(64, 256, device=ad), nn.ReLU(), nn.Linear(256, 256, device=ad), nn.ReLU(),
                          nn.Linear(256, 10, device=ad))
        opt = burn.optim.Adam(m, lr=bench_core.LR)
        rng = np.random.default_rng(0)
        x = burn.tensor(rng.random((128, 64), dtype=np.float32), device=ad)
        y = burn.tensor(rng.integers(0, 10, 128), device=ad)

        def body(x, y):
            loss = F.cross_entropy(m(x), y)
            opt.step(loss.backward())
            return loss
        return body, x, y
    be, xe, ye = mlp()
    bp, xp, yp = mlp()
    bb, xb, yb = mlp()
    plan, bound = burn.capture(bp), burn.capture(bb)
    old = os.environ.get("BURN_CAPTURE_BACKEND_REPLAY")
    os.environ["BURN_CAPTURE_BACKEND_REPLAY"] = "0"     # read when a graph first replays
    for _ in range(3):
        plan(xp, yp).item()
    os.environ.pop("BURN_CAPTURE_BACKEND_REPLAY") if old is None else os.environ.update(
        BURN_CAPTURE_BACKEND_REPLAY=old)
    for _ in range(6):
        bound(xb, yb).item()
    how = bound.graph(xb, yb)._prepared["wgpu"].describe(dev.index)
    fns = {"burn eager": lambda: be(xe, ye).item(), "replay (plan)": lambda: plan(xp, yp).item(),
           "replay (pre-bound)": lambda: bound(xb, yb).item()}
    return _medians(fns, max(5, rounds // 2)), "ms", f"wgpu:{dev.index}, pre-bound replay: {how}"


WORKLOADS = {"chain": ("10,000 chained adds of [8], one read", w_chain),
             "mlp": ("MLP 64-256-256-10 Adam step, batch 128", w_mlp),
             "cnn": ("LeNet CNN [64,1,28,28] Adam step", w_cnn),
             "encoder": ("TransformerEncoderLayer d128 [16,64] fwd+bwd", w_encoder),
             "trace": ("trace + first replay vs one eager MLP step", w_trace),
             "optim": ("MLP step RMSprop+clip+cosine, batch 128", w_optim),
             "wgpu": ("MLP Adam step on wgpu, batch 128", w_wgpu)}


def _report(name, med, unit, note):
    desc = WORKLOADS[name][0]
    ref = med.get("torch eager") or med["burn eager"]
    scale = 1.0 if unit == "us/op" else 1e3
    cells = "  ".join(f"{k} {v * scale:8.3f} {unit} ({v / ref:4.2f}x)" for k, v in med.items())
    print(f"{desc:46s} {cells}", flush=True)
    if note:
        print(f"{'':46s} ({note})", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--threads", default="default,1", help="'default', '1', or both")
    args = ap.parse_args(argv)
    import torch
    import burn
    from common import ThreadModes
    names = [w for w in args.only.split(",") if w] or list(WORKLOADS)
    print("load average at start:", os.getloadavg())
    modes = ThreadModes(burn, torch)
    print(modes.describe())
    for setting in args.threads.split(","):
        modes.set("one" if setting == "1" else "default")
        print(f"-- threads: {setting} (ratios against torch eager, else burn eager; trace: against one eager step)")
        for name in names:
            med, unit, note = WORKLOADS[name][1](burn, torch, args.rounds)
            _report(name, med, unit, note)
    modes.set("default")
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
