"""burn.linalg on flex against SciPy, numpy.linalg and torch.linalg (CPU), same run.

Batched 64 x (128 x 128): solve (64 right-hand sides), cholesky (SPD), qr (reduced),
svd (reduced). One BLAS / torch thread; repetitions interleaved (burn, scipy, numpy, torch,
burn, ...) so a busy neighbour slows all alike; medians, the ratios burn/other of the
medians, and the median of the per-repetition ratios burn/scipy. burn's time includes everything a user sees: the call, the lazy graph flush and
reading the result back as numpy. Target: burn within 1.1x of SciPy (wrapper overhead only).

    .venv/bin/python benchmarks/bench_linalg.py [--reps 15] [--dtype float32|float64]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import scipy.linalg as sl
import torch
from threadpoolctl import threadpool_limits

import burn


def cases(rng, dtype, batch=64, n=128):
    a = rng.standard_normal((batch, n, n)).astype(dtype)
    wc = a + n ** 0.5 * 2 * np.eye(n, dtype=dtype)
    b = rng.standard_normal((batch, n, n)).astype(dtype)
    spd = (a @ a.transpose(0, 2, 1) + n * np.eye(n, dtype=dtype)).astype(dtype)
    bt = lambda x: burn.tensor(x)          # noqa: E731
    tt = torch.from_numpy
    W, B, S, A = bt(wc), bt(b), bt(spd), bt(a)
    tW, tB, tS, tA = tt(wc), tt(b), tt(spd), tt(a)
    return {
        "solve": {
            "burn": lambda: burn.linalg.solve(W, B).numpy(),
            "scipy": lambda: sl.solve(wc, b, check_finite=False),
            "numpy": lambda: np.linalg.solve(wc, b),
            "torch": lambda: torch.linalg.solve(tW, tB).numpy(),
        },
        "cholesky": {
            "burn": lambda: burn.linalg.cholesky(S).numpy(),
            "scipy": lambda: sl.cholesky(spd, lower=True, check_finite=False),
            "numpy": lambda: np.linalg.cholesky(spd),
            "torch": lambda: torch.linalg.cholesky(tS).numpy(),
        },
        "qr": {
            "burn": lambda: [t.numpy() for t in burn.linalg.qr(A)],
            "scipy": lambda: sl.qr(a, mode="economic", check_finite=False),
            "numpy": lambda: np.linalg.qr(a),
            "torch": lambda: [t.numpy() for t in torch.linalg.qr(tA)],
        },
        "svd": {
            "burn": lambda: [t.numpy() for t in burn.linalg.svd(A, full_matrices=False)],
            "scipy": lambda: sl.svd(a, full_matrices=False, check_finite=False),
            "numpy": lambda: np.linalg.svd(a, full_matrices=False),
            "torch": lambda: [t.numpy() for t in torch.linalg.svd(tA, full_matrices=False)],
        },
    }


def run(reps, dtype):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for name, fns in cases(rng, dtype).items():
            times = {k: [] for k in fns}
            for f in fns.values():      # warm up (plans, LAPACK workspaces)
                f()
            for _ in range(reps):
                for k, f in fns.items():
                    t0 = time.perf_counter()
                    f()
                    times[k].append(time.perf_counter() - t0)
            med = {k: statistics.median(v) for k, v in times.items()}
            # robust to a neighbour's load spikes: the median of per-repetition ratios
            med["pair"] = statistics.median(b / s for b, s in zip(times["burn"], times["scipy"]))
            rows.append((name, med))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args(argv)
    rows = run(args.reps, np.dtype(args.dtype))
    print(f"burn.linalg on flex, 64 x (128x128) {args.dtype}, 1 thread, median of {args.reps} interleaved reps")
    print(f"{'op':<10}{'burn ms':>9}{'scipy ms':>10}{'numpy ms':>10}{'torch ms':>10}"
          f"{'burn/scipy':>12}{'(pairs)':>9}{'burn/numpy':>12}{'burn/torch':>12}")
    for name, m in rows:
        print(f"{name:<10}{m['burn'] * 1e3:>9.2f}{m['scipy'] * 1e3:>10.2f}{m['numpy'] * 1e3:>10.2f}"
              f"{m['torch'] * 1e3:>10.2f}{m['burn'] / m['scipy']:>12.2f}{m['pair']:>9.2f}{m['burn'] / m['numpy']:>12.2f}"
              f"{m['burn'] / m['torch']:>12.2f}")
    return rows


if __name__ == "__main__":
    main()
