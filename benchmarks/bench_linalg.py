"""burn.linalg on flex (and wgpu, if usable) against SciPy, numpy.linalg and torch.linalg (CPU), same run.

Batched 64 x (128 x 128): solve (64 right-hand sides), cholesky (SPD), qr (reduced),
eigh (SPD), svd (reduced). One BLAS / torch thread; repetitions interleaved (burn, scipy, numpy, torch,
burn, ...) so a busy neighbour slows all alike; medians, the ratios burn/other of the
medians, and the median of the per-repetition ratios burn/scipy. burn's time includes everything a user sees: the call, the lazy graph flush and
reading the result back as numpy. Target: burn within 1.1x of SciPy (wrapper overhead only).

The wgpu column runs the same calls on ``burn.Device.wgpu()`` (inputs uploaded once, results
read back as numpy): native OpenCL kernels for every op (tridiagonal QL for eigh, Jacobi for svd; complex
dtypes run as host fallbacks). On a CI machine that device is PoCL on the CPU (all its cores), so the
column measures the kernels' correctness path more than a GPU's speed. ``--no-wgpu`` skips it.

    .venv/bin/python benchmarks/bench_linalg.py [--reps 15] [--dtype float32|float64|complex64|complex128] [--no-wgpu]

Complex dtypes use complex matrices (Hermitian positive definite for cholesky); on wgpu
they run as declared host fallbacks.
"""
from __future__ import annotations

import argparse

import numpy as np
import scipy.linalg as sl
import torch
from threadpoolctl import threadpool_limits

import burn
from common import interleaved_medians, wgpu_device


def cases(rng, dtype, batch=64, n=128, wgpu=None):
    def draw(shape):
        x = rng.standard_normal(shape)
        return (x + 1j * rng.standard_normal(shape) if np.dtype(dtype).kind == "c" else x).astype(dtype)
    a = draw((batch, n, n))
    wc = a + n ** 0.5 * 2 * np.eye(n, dtype=dtype)
    b = draw((batch, n, n))
    spd = (a @ a.conj().transpose(0, 2, 1) + n * np.eye(n, dtype=dtype)).astype(dtype)
    bt = lambda x: burn.tensor(x)          # noqa: E731
    tt = torch.from_numpy
    W, B, S, A = bt(wc), bt(b), bt(spd), bt(a)
    tW, tB, tS, tA = tt(wc), tt(b), tt(spd), tt(a)
    out = {
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
        "eigh": {
            "burn": lambda: [t.numpy() for t in burn.linalg.eigh(S)],
            "scipy": lambda: sl.eigh(spd, driver="evd", check_finite=False),
            "numpy": lambda: np.linalg.eigh(spd),
            "torch": lambda: [t.numpy() for t in torch.linalg.eigh(tS)],
        },
        "svd": {
            "burn": lambda: [t.numpy() for t in burn.linalg.svd(A, full_matrices=False)],
            "scipy": lambda: sl.svd(a, full_matrices=False, check_finite=False),
            "numpy": lambda: np.linalg.svd(a, full_matrices=False),
            "torch": lambda: [t.numpy() for t in torch.linalg.svd(tA, full_matrices=False)],
        },
    }
    if wgpu is not None:
        gW, gB, gS, gA = (burn.tensor(x, device=wgpu) for x in (wc, b, spd, a))
        out["solve"]["wgpu"] = lambda: burn.linalg.solve(gW, gB).numpy()
        out["cholesky"]["wgpu"] = lambda: burn.linalg.cholesky(gS).numpy()
        out["qr"]["wgpu"] = lambda: [t.numpy() for t in burn.linalg.qr(gA)]
        out["eigh"]["wgpu"] = lambda: [t.numpy() for t in burn.linalg.eigh(gS)]
        out["svd"]["wgpu"] = lambda: [t.numpy() for t in burn.linalg.svd(gA, full_matrices=False)]
    return out


def run(reps, dtype, wgpu=None):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for name, fns in cases(rng, dtype, wgpu=wgpu).items():
            rows.append((name, interleaved_medians(fns, reps)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=15)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64", "complex64", "complex128"])
    p.add_argument("--no-wgpu", action="store_true", help="skip the wgpu column")
    args = p.parse_args(argv)
    wgpu = None if args.no_wgpu else wgpu_device()
    rows = run(args.reps, np.dtype(args.dtype), wgpu)
    print(f"burn.linalg on flex, 64 x (128x128) {args.dtype}, 1 thread, median of {args.reps} interleaved reps")
    print(f"{'op':<10}{'burn ms':>9}{'scipy ms':>10}{'numpy ms':>10}{'torch ms':>10}"
          f"{'burn/scipy':>12}{'(pairs)':>9}{'burn/numpy':>12}{'burn/torch':>12}")
    for name, m in rows:
        print(f"{name:<10}{m['burn'] * 1e3:>9.2f}{m['scipy'] * 1e3:>10.2f}{m['numpy'] * 1e3:>10.2f}"
              f"{m['torch'] * 1e3:>10.2f}{m['burn'] / m['scipy']:>12.2f}{m['pair']:>9.2f}{m['burn'] / m['numpy']:>12.2f}"
              f"{m['burn'] / m['torch']:>12.2f}")
    if wgpu is not None:
        from burn_linalg import _wgpu
        from burn_wgpu import runtime
        print(f"\nburn.linalg on {wgpu} ({runtime.context(wgpu.index).device.name.strip()}), same run")
        print(f"{'op':<10}{'wgpu ms':>9}{'kernel':>15}{'wgpu/scipy':>12}{'wgpu/torch':>12}{'wgpu/flex':>11}")
        for name, m in rows:
            kind = "host-fallback" if name in _wgpu.HOST_FALLBACK else "native"
            print(f"{name:<10}{m['wgpu'] * 1e3:>9.2f}{kind:>15}{m['wgpu'] / m['scipy']:>12.2f}"
                  f"{m['wgpu'] / m['torch']:>12.2f}{m['wgpu'] / m['burn']:>11.2f}")
    return rows


if __name__ == "__main__":
    main()
