"""burn-wgpu benchmarks, one command, one run, ratios (PoCL's CPU device here).

Sections (all by default, or ``--only a,b``):

- ``matmul``: float32 512³ and 1024³ GFLOP/s: the wgpu kernel, numpy BLAS on one thread,
  and the unfused path (the generic tiled kernel the CPU-specific one replaced).
- ``fused``: an 8-op element-wise chain (exp, log1p, tanh, sqrt, ...) on 4M floats as one
  fused kernel against op-by-op kernels on the same device.
- ``train``: the digits MLP (64-256-256-10, Adam) and a LeNet-style CNN (SGD) training step
  on wgpu against flex.
- ``pool``: peak reserved vs peak in-use bytes over a LeNet CNN training run with the adaptive
  pool against ``pyopencl.tools.MemoryPool`` (each in its own process), then the same on
  CNN batch 32/128 and MLP batch 128/512.
- ``coldwarm``: time to the first MLP training step in a fresh process with an empty kernel
  cache (cold) and again with the cache it filled (warm).
- ``complex``: complex64 matmul 512³, one real library matmul (the default) against the tiled
  complex kernel it replaced, 3 real matmuls (gauss), numpy and torch; and the accuracy of each.
- ``moments``: var over the last axis as one two-pass kernel against the segmented group
  (one kernel per run of ops), burn.var end to end, numpy and torch.
- ``rows``: log_softmax forward + backward as row kernels against the burn-ops composition
  they replaced, and torch.
- ``reduce``: full sum and argmax of 16M floats, mean over the rows of [8, 1M], var over the
  rows of [4, 4M]: one work-item per row (before) against the work-group / split variants
  (after), numpy and torch.
- ``longrows``: softmax and layer_norm of [8, 1M]: the one-work-item-per-row kernels (before)
  against the work-group-per-row kernels (after), numpy and torch.
- ``creduce``: complex64 argmax / max / any / all of 4M values or [8, 512K] rows: one work-item
  per row (before) against the work-group / split variants (after), and numpy.

Timings on this shared 2-core machine swing when a neighbour is busy: compared runs are
interleaved and medians reported; BLAS is pinned to one thread.

    .venv/bin/python benchmarks/bench_wgpu.py [--only matmul,pool] [--reps 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

F32 = np.float32


def _med_time(fn, reps, sync=None):
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        if sync:
            sync()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def _interleaved(fns, reps, sync=None):
    """Median seconds of each fn, run A B A B ... so a busy neighbour slows all alike."""
    ts = [[] for _ in fns]
    for _ in range(reps):
        for i, f in enumerate(fns):
            t0 = time.perf_counter()
            f()
            if sync:
                sync()
            ts[i].append(time.perf_counter() - t0)
    return [statistics.median(t) for t in ts]


# -- models ----------------------------------------------------------------------------------

def lenet(burn, dev):
    bnn = burn.nn
    return bnn.Sequential(bnn.Conv2d(1, 6, 5, device=dev), bnn.ReLU(), bnn.MaxPool2d(2),
                          bnn.Conv2d(6, 16, 5, device=dev), bnn.ReLU(), bnn.MaxPool2d(2), bnn.Flatten(),
                          bnn.Linear(256, 120, device=dev), bnn.ReLU(), bnn.Linear(120, 84, device=dev),
                          bnn.ReLU(), bnn.Linear(84, 10, device=dev))


def cnn_step(burn, dev, batch=64):
    ad = dev.autodiff()
    ad.seed(0)
    model = lenet(burn, ad)
    opt = burn.optim.SGD(model, lr=0.01, momentum=0.9)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((batch, 1, 28, 28), dtype=F32), device=ad)
    y = burn.tensor(rng.integers(0, 10, batch), device=ad)
    F = burn.nn.functional

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss.item()
    return step


def mlp_step(burn, dev, batch=128):
    ad = dev.autodiff()
    ad.seed(0)
    bnn = burn.nn
    model = bnn.Sequential(bnn.Linear(64, 256, device=ad), bnn.ReLU(), bnn.Linear(256, 256, device=ad),
                           bnn.ReLU(), bnn.Linear(256, 10, device=ad))
    opt = burn.optim.Adam(model, lr=1e-3)
    rng = np.random.default_rng(0)
    x = burn.tensor(rng.standard_normal((batch, 64), dtype=F32), device=ad)
    y = burn.tensor(rng.integers(0, 10, batch), device=ad)
    F = burn.nn.functional

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss.item()
    return step


# -- workers (run in their own process) -----------------------------------------------------

def worker_pool(steps, model="cnn", batch=64):
    import burn
    dev = burn.Device.wgpu()
    step = (cnn_step if model == "cnn" else mlp_step)(burn, dev, batch=batch)
    losses = [step() for _ in range(steps)]
    s = dev.memory_stats()
    s["first_loss"], s["last_loss"] = losses[0], losses[-1]
    return s


def worker_first_step():
    t0 = time.perf_counter()
    import burn
    dev = burn.Device.wgpu()
    step = mlp_step(burn, dev)
    step()
    t = time.perf_counter() - t0
    return {"seconds": t, "stats": dev.backend.stats(0)}


def _run_worker(args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    r = subprocess.run([sys.executable, __file__, "--worker"] + args, env=e, capture_output=True, text=True,
                       timeout=900)
    if r.returncode:
        raise RuntimeError(f"worker {args} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


# -- sections -----------------------------------------------------------------------------------

def bench_pool(args, out):
    res = {}
    for kind in ("adaptive", "pyopencl"):
        res[kind] = _run_worker(["pool", str(args.pool_steps)], {"BURN_WGPU_POOL": kind})
    a, p = res["adaptive"], res["pyopencl"]
    mb = 2 ** 20
    rows = []
    for kind, s in res.items():
        rows.append(f"| {kind} | {s['peak_in_use_bytes'] / mb:.2f} | {s['peak_reserved_bytes'] / mb:.2f} | "
                    f"{s['peak_reserved_bytes'] / s['peak_in_use_bytes']:.3f} | {s['reserved_bytes'] / mb:.2f} |")
    lower = 1 - a["peak_reserved_bytes"] / p["peak_reserved_bytes"]
    out.append(("pool", f"LeNet CNN training on wgpu, batch 64, SGD, {args.pool_steps} steps "
                        "(in-use = requested bytes of live tensors)\n\n"
                        "| pool | peak in-use MiB | peak reserved MiB | reserved / in-use | final reserved MiB |\n"
                        "|---|---|---|---|---|\n" + "\n".join(rows) +
                f"\n\nadaptive peak reserved is {lower * 100:.0f}% lower than pyopencl.tools.MemoryPool "
                f"(target >= 30%); adaptive reserved/in-use "
                f"{a['peak_reserved_bytes'] / a['peak_in_use_bytes']:.3f} (target <= 1.15)"))
    # the same measurement on other workloads, so a pool tuned for one run shows what it costs the others
    rows = []
    for model, batch in (("cnn", 32), ("cnn", 128), ("mlp", 128), ("mlp", 512)):
        r = {kind: _run_worker(["pool", str(args.pool_steps), model, str(batch)], {"BURN_WGPU_POOL": kind})
             for kind in ("adaptive", "pyopencl")}
        a, p = r["adaptive"], r["pyopencl"]
        rows.append(f"| {model.upper()} batch {batch} | {a['peak_in_use_bytes'] / mb:.2f} | "
                    f"{a['peak_reserved_bytes'] / mb:.2f} | {a['peak_reserved_bytes'] / a['peak_in_use_bytes']:.3f} | "
                    f"{p['peak_reserved_bytes'] / p['peak_in_use_bytes']:.3f} | "
                    f"{(1 - a['peak_reserved_bytes'] / p['peak_reserved_bytes']) * 100:.0f}% |")
    out[-1] = ("pool", out[-1][1] + "\n\nOther workloads (CNN: LeNet + SGD; MLP: digits MLP + Adam):\n\n"
               "| workload | peak in-use MiB | adaptive peak reserved MiB | adaptive reserved / in-use | "
               "pyopencl reserved / in-use | adaptive lower by |\n|---|---|---|---|---|---|\n" + "\n".join(rows))


def bench_coldwarm(args, out):
    with tempfile.TemporaryDirectory() as d:
        # PoCL keeps its own cache of compiled work-group functions: point it at the same temp
        # dir, so "cold" starts from nothing and "warm" is a real second process
        env = {"BURN_WGPU_CACHE_DIR": os.path.join(d, "burn"), "BURN_WGPU_CACHE": "1",
               "POCL_CACHE_DIR": os.path.join(d, "pocl")}
        cold = _run_worker(["first_step"], env)
        warm = _run_worker(["first_step"], env)
    out.append(("coldwarm", "time to the first digits-MLP training step in a fresh process (import, "
                            "device, model, one Adam step)\n\n"
                            "| cache | seconds | programs compiled | loaded from disk |\n|---|---|---|---|\n"
                f"| cold (empty dir) | {cold['seconds']:.2f} | {cold['stats']['compiles']} | "
                f"{cold['stats']['disk_loads']} |\n"
                f"| warm | {warm['seconds']:.2f} | {warm['stats']['compiles']} | {warm['stats']['disk_loads']} |\n\n"
                f"cold / warm = {cold['seconds'] / warm['seconds']:.1f}x (target >= 5x)"))


def bench_matmul(args, out):
    import burn
    from burn_wgpu.kernels import linear as kernels
    dev = burn.Device.wgpu()
    rng = np.random.default_rng(0)
    rows = []
    for n in (512, 1024):
        a = rng.standard_normal((n, n), dtype=F32)
        b = rng.standard_normal((n, n), dtype=F32)
        bias = rng.standard_normal((n,), dtype=F32)
        ta, tb, tbias = (burn.tensor(v, device=dev) for v in (a, b, bias))
        dev.sync()
        ref = a @ b
        got = {}

        def wgpu(variant):
            def f():
                kernels.MATMUL_CPU = variant
                y = ta @ tb
                dev.sync()
                got[variant] = y
            return f

        def fused():            # matmul + one epilogue kernel (bias, relu)
            kernels.MATMUL_CPU = "packed"
            y = (ta @ tb + tbias).relu()
            dev.sync()

        def unfused():          # the same ops, each flushed on its own
            kernels.MATMUL_CPU = "packed"
            y = ta @ tb
            dev.sync()
            y = y + tbias
            dev.sync()
            y = y.relu()
            dev.sync()

        fns = [wgpu("packed"), wgpu("rows"), wgpu("tiled"), lambda: a @ b, fused, unfused]
        for f in fns:           # compile and warm up
            f()
        for v in ("packed", "rows", "tiled"):
            np.testing.assert_allclose(got[v].numpy(), ref, rtol=1e-3, atol=1e-2)
        t = _interleaved(fns, args.reps)
        gf = [2 * n ** 3 / x / 1e9 for x in t]
        rows.append(f"| {n}³ | {gf[0]:.1f} | {gf[1]:.1f} | {gf[2]:.1f} | {gf[3]:.1f} | {t[0] / t[3]:.2f}x | "
                    f"{t[4] * 1e3:.1f} | {t[5] * 1e3:.1f} | {t[5] / t[4]:.2f}x |")
    kernels.MATMUL_CPU = "packed"
    out.append(("matmul", "float32 matmul on wgpu (PoCL, 2 cores) against numpy BLAS on one thread; "
                          "GFLOP/s, medians of interleaved runs\n\n"
                          "| size | wgpu packed (default) | wgpu rows | wgpu tiled (GPU kernel) | numpy 1 thread | "
                          "time wgpu / numpy | relu(A@B+b) fused ms | op by op ms | unfused / fused |\n"
                          "|---|---|---|---|---|---|---|---|---|\n" + "\n".join(rows)))


def bench_fused(args, out):
    import burn
    dev = burn.Device.wgpu()
    x_np = np.random.default_rng(0).standard_normal(4 * 2 ** 20, dtype=F32)
    x = burn.tensor(x_np, device=dev)
    dev.sync()
    steps = [lambda v: v.exp(), lambda v: v * 0.5, lambda v: v + 1.0, lambda v: v.log1p(),
             lambda v: v.tanh(), lambda v: v.abs(), lambda v: v.sqrt(), lambda v: v - 0.25]

    def fused():
        v = x
        for s in steps:
            v = s(v)
        dev.sync()
        return v

    def op_by_op():
        v = x
        for s in steps:
            v = s(v)
            dev.sync()
        return v
    want = np.sqrt(np.abs(np.tanh(np.log1p(np.exp(x_np) * 0.5 + 1.0)))) - 0.25
    np.testing.assert_allclose(fused().numpy(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(op_by_op().numpy(), want, rtol=1e-5, atol=1e-5)
    fused()
    tf, to = _interleaved([fused, op_by_op], args.reps)
    out.append(("fused", "8-op element-wise chain (exp, mul, add, log1p, tanh, abs, sqrt, sub) on 4M float32 "
                         "on wgpu\n\n| fused (1 kernel) ms | op by op (8 kernels) ms | op by op / fused |\n"
                         f"|---|---|---|\n| {tf * 1e3:.1f} | {to * 1e3:.1f} | {to / tf:.2f}x (target >= 4x) |"))


def bench_train(args, out):
    import burn
    rows = []
    for name, make in (("digits MLP 64-256-256-10, batch 128, Adam", mlp_step),
                       ("LeNet CNN, batch 64, SGD", cnn_step)):
        w = make(burn, burn.Device.wgpu())
        f = make(burn, burn.Device.flex())
        for _ in range(3):
            w()
            f()
        tw, tf = _interleaved([w, f], max(args.reps, 10))
        rows.append(f"| {name} | {tw * 1e3:.2f} | {tf * 1e3:.2f} | {tw / tf:.2f}x |")
    out.append(("train", "training step (forward, backward, optimizer, loss.item()), medians\n\n"
                         "| model | wgpu ms | flex ms | wgpu / flex |\n|---|---|---|---|\n" + "\n".join(rows)))


def bench_complex(args, out):
    import burn
    import torch
    from burn_wgpu.kernels import linear as complex_linear
    dev = burn.Device.wgpu()
    rng = np.random.default_rng(0)
    n = 512
    a = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    b = (rng.standard_normal((n, n)) + 1j * rng.standard_normal((n, n))).astype(np.complex64)
    ta, tb = burn.tensor(a, device=dev), burn.tensor(b, device=dev)
    xa, xb = torch.from_numpy(a), torch.from_numpy(b)
    ref = a.astype(np.complex128) @ b
    # real-dominant operands (imaginary parts 1e-4 of the real ones): the error of C's small
    # imaginary part relative to its own size, where a 3-multiplication product loses it
    ar = (rng.standard_normal((n, n)) + 1e-4j * rng.standard_normal((n, n))).astype(np.complex64)
    br = (rng.standard_normal((n, n)) + 1e-4j * rng.standard_normal((n, n))).astype(np.complex64)
    rr = ar.astype(np.complex128) @ br
    variants = ("tiled", "gauss", "real")

    def wgpu(variant, x=ta, y=tb):
        def f():
            complex_linear.COMPLEX_MATMUL = variant
            c = x @ y
            dev.sync()
            return c
        return f
    err, err_im = {}, {}
    for v in variants:
        err[v] = np.abs(wgpu(v)().numpy() - ref).max() / np.abs(ref).max()
        c = wgpu(v, burn.tensor(ar, device=dev), burn.tensor(br, device=dev))().numpy()
        err_im[v] = np.abs(c.imag - rr.imag).max() / np.abs(rr.imag).max()
        assert err[v] < 1e-5, v
    c = ar @ br
    err["numpy"], err_im["numpy"] = (np.abs(a @ b - ref).max() / np.abs(ref).max(),
                                     np.abs(c.imag - rr.imag).max() / np.abs(rr.imag).max())
    err["torch"], err_im["torch"] = err["numpy"], err_im["numpy"]      # the same BLAS product
    fns = [wgpu(v) for v in variants] + [lambda: a @ b, lambda: xa @ xb]
    torch.set_num_threads(1)
    t = _interleaved(fns, args.reps)
    complex_linear.COMPLEX_MATMUL = "auto"
    gf = [8 * n ** 3 / x / 1e9 for x in t]
    names = ("wgpu before: tiled complex kernel (local memory)", "wgpu gauss: 3 real library matmuls",
             "wgpu after: one real library matmul (4-mult)", "numpy", "torch")
    keys = variants + ("numpy", "torch")
    out.append(("complex", f"complex64 matmul {n}³ on wgpu (PoCL) against numpy and torch on one thread; "
                           "medians of interleaved runs; error: max |C - C128| / max |C128|, and of the "
                           "imaginary part alone for operands with imaginary parts 1e-4 of the real ones\n\n"
                           "| kernel | ms | GFLOP/s | / numpy | / torch | error | small-part error |\n"
                           "|---|---|---|---|---|---|---|\n" +
                "\n".join(f"| {name} | {x * 1e3:.1f} | {g:.1f} | {x / t[3]:.1f}x | {x / t[4]:.1f}x | "
                          f"{err[k]:.1e} | {err_im[k]:.1e} |" for name, x, g, k in zip(names, t, gf, keys)) +
                f"\n\nafter / before: {t[2] / t[0]:.2f}x the time ({t[0] / t[2]:.1f}x faster); "
                f"gauss / after: {t[1] / t[2]:.2f}x"))


def bench_moments(args, out):
    import burn
    import torch
    from burn.fusion import FusedGroup
    dev = burn.Device.wgpu()
    be = dev.backend
    shape = (64, 65536)
    a = (1e4 + np.random.default_rng(0).standard_normal(shape)).astype(F32)
    n = shape[1]
    m = lambda s: burn.TensorMeta(s, burn.float32)  # noqa: E731
    axes = {"axis": (1,), "keepdims": True}
    # the group core's var(x, axis=1, correction=1) records, as a planner keeping the
    # reduction's epilogue and next pass hands it over
    ops = [("sum", axes, [("in", 0)]), ("mul", {}, [("op", 0), ("in", 1)]), ("sub", {}, [("in", 0), ("op", 1)]),
           ("mul", {}, [("op", 2), ("op", 2)]), ("sum", {"axis": (1,), "keepdims": False}, [("op", 3)]),
           ("mul", {}, [("op", 4), ("in", 2)])]
    g = FusedGroup("reduce", ops, [m(shape), m(()), m(())], [5], [m((64,))])
    ins = [be.from_numpy(v, burn.float32, 0) for v in (a, np.float32(1 / n), np.float32(1 / (n - 1)))]
    fn = be.compile_group(g)
    x = burn.tensor(a, device=dev)
    xt = torch.from_numpy(a)

    def run(f):
        def r():
            y = f(*ins)[0]
            be.sync(0)
            return y
        return r

    def end_to_end():
        return burn.var(x, axis=1, correction=1).numpy()
    want = a.astype(np.float64).var(axis=1, ddof=1)
    fns = [run(fn.fallback), run(fn), end_to_end, lambda: a.var(axis=1, ddof=1), lambda: torch.var(xt, dim=1)]
    for f in fns[:2]:
        np.testing.assert_allclose(be.to_numpy(f(), 0), want, rtol=2e-4)
    np.testing.assert_allclose(end_to_end(), want, rtol=2e-4)
    torch.set_num_threads(1)
    launches = []
    for f in fns[:2]:
        be.sync(0)
        l0 = be.stats(0)["launches"]
        f()
        launches.append(be.stats(0)["launches"] - l0)
    groups = len(burn.fusion.explain(burn.var(x, axis=1, correction=1)).groups)
    dev.sync()
    t = _interleaved(fns, args.reps)
    names = [f"wgpu before: the var group segmented ({launches[0]} launches)",
             f"wgpu after: burn_wgpu.kernels.reduce.generated ({launches[1]} launch, two passes inside)",
             f"burn.var end to end on wgpu (core's planner: {groups} group(s); incl. download)", "numpy", "torch"]
    out.append(("moments", f"var(x, axis=1, correction=1) of [64, 65536] float32, x = 1e4 + N(0, 1), on wgpu "
                           "(PoCL) against numpy and torch on one thread\n\n"
                           "| path | ms | / numpy | / torch |\n|---|---|---|---|\n" +
                "\n".join(f"| {nm} | {x_ * 1e3:.2f} | {x_ / t[3]:.2f}x | {x_ / t[4]:.2f}x |" for nm, x_ in zip(names, t))
                + f"\n\nafter / before: {t[1] / t[0]:.2f}x the time"))


def bench_rows(args, out):
    import burn
    import torch
    F = burn.nn.functional
    dev = burn.Device.wgpu()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((512, 1000), dtype=F32) * 3
    gy = rng.standard_normal(a.shape, dtype=F32)
    ad = dev.autodiff()
    tg = burn.tensor(gy, device=ad)

    def burn_fb(fn):
        def f():
            x = burn.tensor(a, device=ad).require_grad()
            y = fn(x, 1)
            g = x.grad((y * tg).sum().backward())
            g.numpy()
            return y, g
        return f

    def torch_fb():
        x = torch.tensor(a, requires_grad=True)
        y = torch.log_softmax(x, 1)
        (y * torch.from_numpy(gy)).sum().backward()
        return y, x.grad
    torch.set_num_threads(1)
    fns = [burn_fb(F.log_softmax_fused.reference), burn_fb(F.log_softmax_fused), torch_fb]
    res = [f() for f in fns]        # compile and check
    for y, g in res[:2]:
        np.testing.assert_allclose(y.numpy(), res[2][0].detach().numpy(), rtol=1e-5, atol=1e-5)
        np.testing.assert_allclose(g.numpy(), res[2][1].numpy(), rtol=1e-4, atol=1e-5)
    t = _interleaved(fns, args.reps)
    out.append(("rows", "log_softmax forward + backward of [512, 1000] float32 on wgpu (PoCL) against torch on "
                        "one thread (tensor upload and gradient download included)\n\n"
                        "| path | ms | / torch |\n|---|---|---|\n"
                        f"| wgpu before: x - logsumexp(x) as burn ops | {t[0] * 1e3:.1f} | {t[0] / t[2]:.1f}x |\n"
                        f"| wgpu after: row kernels burn::log_softmax(_grad) | {t[1] * 1e3:.1f} | {t[1] / t[2]:.1f}x |\n"
                        f"| torch | {t[2] * 1e3:.1f} | 1.0x |\n\n"
                        f"after / before: {t[1] / t[0]:.2f}x the time"))


def bench_reduce(args, out):
    import burn
    import torch
    import burn_wgpu.kernels.reduce as wk
    from burn_wgpu.kernels.reduce import generated as rf
    dev = burn.Device.wgpu()
    rng = np.random.default_rng(0)
    flat = rng.standard_normal(16 << 20, dtype=F32)
    rows8 = rng.standard_normal((8, 1 << 20), dtype=F32)
    rows4 = (1e3 + rng.standard_normal((4, 4 << 20), dtype=F32)).astype(F32)
    xs = {k: burn.tensor(v, device=dev) for k, v in (("flat", flat), ("rows8", rows8), ("rows4", rows4))}
    ts = {k: torch.from_numpy(v) for k, v in (("flat", flat), ("rows8", rows8), ("rows4", rows4))}
    dev.sync()
    cases = [  # name, burn fn, numpy fn, torch fn, whether "before" is the library kernel
        ("sum of 16M float32 (full)", lambda: xs["flat"].sum().numpy(), lambda: flat.sum(),
         lambda: ts["flat"].sum(), True),
        ("mean over the rows of [8, 1M]", lambda: xs["rows8"].mean(axis=1).numpy(), lambda: rows8.mean(axis=1),
         lambda: ts["rows8"].mean(dim=1), False),
        ("argmax of 16M float32 (full)", lambda: xs["flat"].argmax().numpy(), lambda: flat.argmax(),
         lambda: ts["flat"].argmax(), True),
        ("var over the rows of [4, 4M]", lambda: burn.var(xs["rows4"], axis=1).numpy(), lambda: rows4.var(axis=1),
         lambda: torch.var(ts["rows4"], dim=1, correction=0), False),
    ]
    torch.set_num_threads(1)

    def mode(before, f, lib):
        def r():
            wk.REDUCE_LIBRARY, rf.FORCE = (lib, "row") if before else (False, None)
            try:
                return f()
            finally:
                wk.REDUCE_LIBRARY, rf.FORCE = False, None
        return r
    rows = []
    for name, fb, fn, ft, lib in cases:
        b, a = mode(True, fb, lib), mode(False, fb, lib)
        for f in (b, a, b, a):          # compile, warm up, check
            np.testing.assert_allclose(f(), fn(), rtol=2e-4)
        a()
        variant = "%s, S=%d" % rf.LAST_VARIANT[0]
        t = _interleaved([b, a, fn, ft], args.reps)
        rows.append((name, variant, t))
    from burn_wgpu import runtime
    units = f"({runtime.context(dev.index).device.max_compute_units} compute units)"
    body = "\n".join(f"| {nm} | {v} | {t[0] * 1e3:.1f} | {t[1] * 1e3:.1f} | {t[0] / t[1]:.1f}x | {t[2] * 1e3:.1f} | "
                     f"{t[1] / t[2]:.2f}x | {t[3] * 1e3:.1f} | {t[1] / t[3]:.2f}x |" for nm, v, t in rows)
    out.append(("reduce", "reductions to few outputs on wgpu (PoCL, 2 cores) before (one work-item per row: the "
                          "library kernel for plain reductions, the one-item fused kernel for mean/var) and after "
                          "(work-group / split variants chosen by shape), against numpy and torch on one thread; "
                          f"result download included {units}\n\n"
                          "| reduction | variant after | before ms | after ms | speed-up | numpy ms | after / numpy "
                          "| torch ms | after / torch |\n|---|---|---|---|---|---|---|---|---|\n" + body))


def bench_longrows(args, out):
    import burn
    import torch
    from burn_wgpu.kernels import nn as wl
    F = burn.nn.functional
    dev = burn.Device.wgpu()
    rng = np.random.default_rng(0)
    a = rng.standard_normal((8, 1 << 20), dtype=F32)
    w = rng.standard_normal(a.shape[1], dtype=F32)
    b = rng.standard_normal(a.shape[1], dtype=F32)
    x, xw, xb = (burn.tensor(v, device=dev) for v in (a, w, b))
    ta, tw, tb = (torch.from_numpy(v) for v in (a, w, b))
    dev.sync()

    def np_softmax():
        e = np.exp(a - a.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)

    def np_layer_norm():
        mu = a.mean(1, keepdims=True)
        d = a - mu
        return d / np.sqrt((d * d).mean(1, keepdims=True) + 1e-5) * w + b
    cases = [("softmax of [8, 1M]", lambda: F.softmax(x, axis=1).numpy(), np_softmax,
              lambda: torch.softmax(ta, 1)),
             ("layer_norm of [8, 1M]", lambda: F.layer_norm(x, (a.shape[1],), xw, xb, eps=1e-5).numpy(),
              np_layer_norm, lambda: torch.nn.functional.layer_norm(ta, (a.shape[1],), tw, tb, 1e-5))]
    torch.set_num_threads(1)

    def pinned(variant, f):
        def r():
            wl.ROWS_FORCE = variant
            try:
                return f()
            finally:
                wl.ROWS_FORCE = None
        return r
    rows = []
    for name, fb, fn, ft in cases:
        before, after = pinned("row", fb), pinned(None, fb)
        ref = fn()
        # one item's serial float32 sum over 1M values drifts (layer_norm's mean: ~4e-3); the
        # group's blocks and tree stay near numpy's pairwise sum
        err = [float(np.abs(f() - ref).max()) for f in (before, after)]
        np.testing.assert_allclose(after(), ref, rtol=1e-4, atol=1e-4)
        variant = wl.LAST_ROWS[0]
        t = _interleaved([before, after, fn, ft], args.reps)
        rows.append((name, variant, t, err))
    from burn_wgpu import runtime
    units = f"({runtime.context(dev.index).device.max_compute_units} compute units)"
    body = "\n".join(f"| {nm} | {v} | {t[0] * 1e3:.1f} | {t[1] * 1e3:.1f} | {t[0] / t[1]:.1f}x | {t[2] * 1e3:.1f} | "
                     f"{t[1] / t[2]:.2f}x | {t[3] * 1e3:.1f} | {t[1] / t[3]:.2f}x | {e[0]:.1e} / {e[1]:.1e} |"
                     for nm, v, t, e in rows)
    out.append(("longrows", "row kernels on few long rows, float32, on wgpu (PoCL) before (one work-item per row) "
                            "and after (a work-group per row: local-memory tree of the row's max / sums), against "
                            f"numpy and torch on one thread; result download included {units}\n\n"
                            "| op | variant after | before ms | after ms | speed-up | numpy ms | after / numpy "
                            "| torch ms | after / torch | max abs error vs numpy before / after |\n"
                            "|---|---|---|---|---|---|---|---|---|---|\n" + body))


def bench_creduce(args, out):
    import burn
    from burn_wgpu.kernels.reduce import complex as rc
    from burn_wgpu.kernels.reduce import generated as rf
    dev = burn.Device.wgpu()
    rng = np.random.default_rng(0)
    C64 = np.complex64
    flat = (rng.standard_normal(4 << 20) + 1j * rng.standard_normal(4 << 20)).astype(C64)
    rows = (rng.standard_normal((8, 1 << 19)) + 1j * rng.standard_normal((8, 1 << 19))).astype(C64)
    zeros = np.zeros((8, 1 << 19), C64)
    xs = {k: burn.tensor(v, device=dev) for k, v in (("flat", flat), ("rows", rows), ("zeros", zeros))}
    dev.sync()
    cases = [  # every row scanned to its end: all of nonzero values, any of zeros
        ("argmax of 4M complex64 (full)", lambda: xs["flat"].argmax().numpy(), lambda: flat.argmax()),
        ("max over the rows of [8, 512K]", lambda: burn.max(xs["rows"], axis=1).numpy(), lambda: rows.max(axis=1)),
        ("all of 4M complex64 (full)", lambda: burn.all(xs["flat"]).numpy(), lambda: flat.all()),
        ("any over the rows of [8, 512K] zeros", lambda: burn.any(xs["zeros"], axis=1).numpy(),
         lambda: zeros.any(axis=1)),
    ]

    def pinned(force, f):
        def r():
            rf.FORCE = force
            try:
                return f()
            finally:
                rf.FORCE = None
        return r
    res = []
    for name, fb, fn in cases:
        b, a = pinned("row", fb), pinned(None, fb)
        for f in (b, a):
            np.testing.assert_array_equal(f(), fn())
        variant = "%s, S=%d" % rc.LAST_VARIANT[0]
        t = _interleaved([b, a, fn], args.reps)
        res.append((name, variant, t))
    body = "\n".join(f"| {nm} | {v} | {t[0] * 1e3:.1f} | {t[1] * 1e3:.1f} | {t[0] / t[1]:.1f}x | {t[2] * 1e3:.1f} | "
                     f"{t[1] / t[2]:.2f}x |" for nm, v, t in res)
    out.append(("creduce", "complex max / argmax / any / all on wgpu (PoCL) before (one work-item per row) and "
                           "after (work-group / split variants chosen by shape, burn_wgpu.kernels.reduce.complex), against "
                           "numpy on one thread; result download included\n\n"
                           "| reduction | variant after | before ms | after ms | speed-up | numpy ms | after / numpy |\n"
                           "|---|---|---|---|---|---|---|\n" + body))


SECTIONS = {"matmul": bench_matmul, "fused": bench_fused, "train": bench_train, "pool": bench_pool,
            "coldwarm": bench_coldwarm, "complex": bench_complex, "rows": bench_rows,
            "moments": bench_moments, "reduce": bench_reduce, "longrows": bench_longrows,
            "creduce": bench_creduce}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default=",".join(SECTIONS))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--pool-steps", type=int, default=20)
    ap.add_argument("--worker", nargs="+")
    args = ap.parse_args(argv)
    if args.worker:
        kind, rest = args.worker[0], args.worker[1:]
        r = worker_pool(int(rest[0]), *rest[1:2], *map(int, rest[2:3])) if kind == "pool" else worker_first_step()
        print(json.dumps(r))
        return
    from threadpoolctl import threadpool_limits
    out = []
    with threadpool_limits(1):
        for name in args.only.split(","):
            t0 = time.perf_counter()
            SECTIONS[name](args, out)
            print(f"## {name} ({time.perf_counter() - t0:.0f} s)\n\n{out[-1][1]}\n", flush=True)


if __name__ == "__main__":
    main()
