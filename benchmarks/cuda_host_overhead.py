"""burn-cuda's host overhead per training step, measured without a GPU (a "null GPU").

    .venv/bin/python benchmarks/cuda_host_overhead.py                 # timing, counts, profile
    .venv/bin/python benchmarks/cuda_host_overhead.py --reps 7 --steps 30 --top 30 --json out.json
    .venv/bin/python benchmarks/cuda_host_overhead.py --no-context   # skip the flex / torch CPU timings

The workload is plugins/burn-cuda/scripts/gpu_check.py's CNN step (``_cnn_burn``: batch 128,
3x32x32, conv 3->32 3x3, relu, max pool 2, conv 32->64 3x3, relu, max pool 2, flatten,
linear 2304->256, relu, linear 256->10, cross-entropy, Adam), the one that took 10.5 ms on an
H200 against PyTorch eager's 2.4 ms. A step that small is host-bound on an H200: what counts
is the Python that burn and burn_cuda run per step and the CuPy calls they make.

The null GPU is tests/fakecupy_null.py: the numpy stand-in for CuPy of tests/fakecupy.py in a
mode where kernel launches, ufuncs, matmuls, reductions and copies allocate their outputs
(through burn-cuda's pool, as CuPy would) and compute nothing. burn + burn_cuda then run
their real Python path, fused kernels included (``BURN_CUDA_FUSE_AFTER`` at its default).
The script runs itself in a subprocess with that CuPy on ``PYTHONPATH``.

What it prints:

- host ms per step (median over ``--reps`` rounds of ``--steps`` steps; min too);
- what one step asks of the GPU: RawKernel launches (``dc.stats["launches"]``), CuPy ufunc /
  reduction / matmul / copy / fill kernels, allocator calls and device-scope entries;
- a cProfile of ``--steps`` steps: top functions by own time, and own time by module group;
- as context, the same step computed for real on burn's flex device and on PyTorch CPU
  (those include the arithmetic: they are not host overhead).

What it cannot tell: CuPy's own per-call cost (Cython, ~3-10 us per kernel launch on a real
GPU) is not in the host ms; multiply the launch counts by it. The GPU time of the kernels
is not modelled at all.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import importlib.util
import json
import os
import pstats
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GPU_CHECK = ROOT / "plugins" / "burn-cuda" / "scripts" / "gpu_check.py"
BATCH = 128


def _gpu_check():
    spec = importlib.util.spec_from_file_location("_gpu_check", GPU_CHECK)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _timed(step, sync, steps, reps):
    """Per-step seconds of ``reps`` rounds of ``steps`` steps each (synchronized per round)."""
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        sync()
        out.append((time.perf_counter() - t0) / steps)
    return out


def _group(path: str) -> str:
    p = path.replace("\\", "/")
    if "/burn_cuda/" in p:
        return "burn_cuda/" + p.rsplit("/", 1)[1]
    if "/core/burn/" in p:
        rest = p.split("/core/burn/", 1)[1]
        top = rest.split("/", 1)[0]
        return "burn/" + (top if "/" in rest else rest)
    if "/cupy/" in p or "/cupyx/" in p:
        return "fake cupy (stand-in for CuPy's own cost)"
    if "/numpy/" in p:
        return "numpy (python part)"
    if p.startswith("~") or p.startswith("<"):
        return "builtins / C calls"
    return "other: " + p.rsplit("/", 1)[-1]


def _profile(step, steps, top):
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(steps):
        step()
    pr.disable()
    st = pstats.Stats(pr)
    rows, groups = [], {}
    total = 0.0
    for (path, line, fn), (cc, nc, tt, ct, _callers) in st.stats.items():
        total += tt
        g = _group(path)
        groups[g] = groups.get(g, 0.0) + tt
        rows.append((tt, ct, nc, f"{_group(path)}:{line}({fn})"))
    rows.sort(reverse=True)
    by_cum = sorted(rows, key=lambda r: -r[1])
    return {
        "profiled_ms_per_step": total / steps * 1e3,
        "top_own": [(f"{tt / steps * 1e3:.3f}", f"{ct / steps * 1e3:.3f}", nc // steps, name)
                    for tt, ct, nc, name in rows[:top]],
        "top_cum": [(f"{tt / steps * 1e3:.3f}", f"{ct / steps * 1e3:.3f}", nc // steps, name)
                    for tt, ct, nc, name in by_cum[:top]],
        "groups": sorted(((g, t / steps * 1e3) for g, t in groups.items()), key=lambda r: -r[1]),
    }


def child(args):
    import cupy

    import burn
    from burn_cuda import runtime

    assert getattr(cupy, "COUNTS", None) is not None, "the null-GPU CuPy is not the one imported"
    gpu_check = _gpu_check()
    dev = burn.Device.cuda(0)
    step = gpu_check._cnn_burn(dev, BATCH)
    for _ in range(args.warmup):       # fusion plans, rendered kernels, pool sizes
        step()
    dev.sync()
    dc = runtime.context(0)
    gc.collect()
    gc.freeze()

    res = {"fuse_after": os.environ.get("BURN_CUDA_FUSE_AFTER", "default (1)")}
    # one step's work for the GPU
    cupy.COUNTS.clear()
    l0 = dc.stats["launches"]
    step()
    dev.sync()
    counts = dict(cupy.COUNTS)
    counts["dc_launches"] = dc.stats["launches"] - l0
    counts["gpu_work"] = sum(counts.get(k, 0) for k in ("raw", "ufunc", "reduce", "matmul", "copy", "fill"))
    res["per_step"] = counts

    t = _timed(step, dev.sync, args.steps, args.reps)
    res["host_ms"] = {"median": statistics.median(t) * 1e3, "min": min(t) * 1e3, "all": [x * 1e3 for x in t]}
    real0 = cupy._null.REAL_SECONDS[0]
    _timed(step, dev.sync, args.steps, 1)
    res["real_numpy_ms_per_step"] = (cupy._null.REAL_SECONDS[0] - real0) / args.steps * 1e3
    if args.top:
        res["profile"] = _profile(step, args.steps, args.top)
    gc.unfreeze()

    if args.context:
        from threadpoolctl import threadpool_limits
        with threadpool_limits(1):
            fdev = burn.Device.flex()
            flex = gpu_check._cnn_burn(fdev, BATCH)
            flex()
            ft = _timed(flex, fdev.sync, 3, max(3, args.reps // 2))
            res["flex_ms"] = statistics.median(ft) * 1e3
            try:
                import torch
                torch.set_num_threads(1)
                res["torch_cpu_ms"] = _torch_cpu_ms(torch, max(3, args.reps // 2))
            except ImportError:
                res["torch_cpu_ms"] = None
    print(json.dumps(res))


def _torch_cpu_ms(torch, reps):
    from torch import nn
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(),
                          nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64 * 6 * 6, 256), nn.ReLU(), nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(BATCH, 3, 32, 32)
    y = torch.randint(0, 10, (BATCH,))

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    step()
    return statistics.median(_timed(step, lambda: None, 3, reps)) * 1e3


def report(res, args):
    h = res["host_ms"]
    c = res["per_step"]
    print(f"null-GPU CNN step (batch {BATCH}, gpu_check._cnn_burn), BURN_CUDA_FUSE_AFTER={res['fuse_after']}")
    print(f"  host time per step: median {h['median']:.2f} ms, min {h['min']:.2f} ms "
          f"({args.reps} rounds x {args.steps} steps: {', '.join(f'{x:.2f}' for x in h['all'])})")
    print(f"  of which numpy computing for real (uploads, small index ops): {res['real_numpy_ms_per_step']:.3f} ms")
    print(f"  GPU work per step: {c['gpu_work']} kernels = raw {c.get('raw', 0)} (dc.stats launches "
          f"{c['dc_launches']}) + ufunc {c.get('ufunc', 0)} + reduce {c.get('reduce', 0)} + matmul "
          f"{c.get('matmul', 0)} + copy {c.get('copy', 0)} + fill {c.get('fill', 0)}")
    print(f"  allocator calls {c.get('alloc', 0)}, device-scope entries {c.get('scope', 0)}, "
          f"uploads {c.get('upload', 0)}, real numpy calls {c.get('real', 0)}")
    if "flex_ms" in res:
        tc = res.get("torch_cpu_ms")
        print(f"  context (computing for real, 1 thread): burn flex {res['flex_ms']:.1f} ms/step, "
              f"torch CPU {tc:.1f} ms/step" if tc else f"  context: burn flex {res['flex_ms']:.1f} ms/step")
    p = res.get("profile")
    if p:
        print(f"\ncProfile ({p['profiled_ms_per_step']:.2f} ms/step under the profiler), own time by group "
              f"(ms/step):")
        for g, t in p["groups"]:
            if t >= 0.01:
                print(f"  {t:7.3f}  {g}")
        print("\ntop functions by own time (own ms/step, cumulative ms/step, calls/step, function):")
        for r in p["top_own"]:
            print(f"  {r[0]:>7} {r[1]:>8} {r[2]:>5}  {r[3]}")
        print("\ntop functions by cumulative time:")
        for r in p["top_cum"]:
            print(f"  {r[0]:>7} {r[1]:>8} {r[2]:>5}  {r[3]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="steps per timed round")
    ap.add_argument("--reps", type=int, default=7, help="timed rounds")
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--top", type=int, default=25, help="profile rows (0: no profile)")
    ap.add_argument("--no-context", dest="context", action="store_false", help="skip flex / torch CPU")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        return child(args)
    sys.path.insert(0, str(ROOT / "tests"))
    from fakecupy_null import write_null_cupy
    with tempfile.TemporaryDirectory() as d:
        env = write_null_cupy(Path(d))
        env.setdefault("OMP_NUM_THREADS", "1")
        env.setdefault("OPENBLAS_NUM_THREADS", "1")
        r = subprocess.run([sys.executable, __file__, "--child"] + sys.argv[1:], env=env, capture_output=True,
                           text=True)
    if r.returncode != 0:
        sys.exit(f"the null-GPU run failed:\n{r.stderr[-6000:]}")
    res = json.loads(r.stdout.strip().splitlines()[-1])
    report(res, args)
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    main()
