"""burn.einsum on flex against numpy.einsum and torch.einsum on the common contractions.

Batched matmul, a bilinear form (three operands: the contraction order is planned), and the
two einsums of attention, forward (the value read back) and forward + backward (the gradient of
every operand under a fixed cotangent, against torch autograd). Each round runs burn, numpy,
torch in turn (interleaved, so a busy neighbour slows all alike); medians, and the median of
the per-round ratios burn/torch. Once at default thread settings, once pinned to one thread.

    .venv/bin/python benchmarks/bench_einsum.py [--reps 15] [--only attn_scores,bilinear]
"""
from __future__ import annotations

import argparse

import numpy as np

from common import interleaved_times, medians, paired_ratio  # benchmarks/ is sys.path[0] when run as a script
import torch
from threadpoolctl import threadpool_limits

import burn

CASES = {
    "batched_matmul": ("bij,bjk->bik", [(64, 128, 64), (64, 64, 128)]),
    "bilinear": ("bn,anm,bm->ba", [(256, 128), (64, 128, 128), (256, 128)]),
    "attn_scores": ("bhqd,bhkd->bhqk", [(8, 8, 128, 64), (8, 8, 128, 64)]),
    "attn_values": ("bhqk,bhkd->bhqd", [(8, 8, 128, 128), (8, 8, 128, 64)]),
}


def _forward(spec, arrays):
    bt = [burn.tensor(a) for a in arrays]
    tt = [torch.tensor(a) for a in arrays]
    return {"burn": lambda: burn.einsum(spec, *bt).numpy(),
            "numpy": lambda: np.einsum(spec, *arrays, optimize=True),
            "torch": lambda: torch.einsum(spec, *tt).numpy()}


def _backward(spec, arrays, cot):
    dev = burn.Device.flex().autodiff()
    bt = [burn.tensor(a, device=dev).require_grad() for a in arrays]
    bc = burn.tensor(cot, device=dev)
    tt = [torch.tensor(a, requires_grad=True) for a in arrays]
    tc = torch.tensor(cot)

    def b():
        g = (burn.einsum(spec, *bt) * bc).sum().backward()
        return [t.grad(g).numpy() for t in bt]

    def t():
        for x in tt:
            x.grad = None
        (torch.einsum(spec, *tt) * tc).sum().backward()
        return [x.grad.numpy() for x in tt]
    return {"burn": b, "torch": t}


def _rounds(fns, reps):
    times = interleaved_times(fns, reps, warmup=2, freeze_gc=True)
    return medians(times), paired_ratio(times, "burn", "torch")


def _report(name, med, pair):
    cols = "   ".join(f"{k} {v * 1e3:7.2f} ms" for k, v in med.items())
    print(f"  {name:<26} {cols}   burn/torch {pair:4.2f}x", flush=True)


def _check(spec, arrays, cot):
    b = _backward(spec, arrays, cot)
    for x, y in zip(b["burn"](), b["torch"]()):     # only meaningful if both agree
        np.testing.assert_allclose(x, y, rtol=1e-3, atol=1e-3)
    np.testing.assert_allclose(_forward(spec, arrays)["burn"](), np.einsum(spec, *arrays), rtol=1e-3, atol=1e-3)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--only", default="", help="comma-separated case names")
    args = ap.parse_args()
    names = [n for n in CASES if not args.only or n in args.only.split(",")]
    rng = np.random.default_rng(0)
    data = {}
    for n in names:
        spec, shapes = CASES[n]
        arrays = [rng.standard_normal(s).astype(np.float32) for s in shapes]
        cot = rng.standard_normal(np.einsum(spec, *arrays).shape).astype(np.float32)
        _check(spec, arrays, cot)
        data[n] = (spec, arrays, cot)
    default_threads = torch.get_num_threads()
    for label, threads in (("default threads", None), ("one thread", 1)):
        torch.set_num_threads(threads or default_threads)
        print(f"{label} (torch {torch.get_num_threads()} threads)")
        with threadpool_limits(limits=threads):
            for n in names:
                spec, arrays, cot = data[n]
                _report(f"{n} forward", *_rounds(_forward(spec, arrays), args.reps))
                _report(f"{n} fwd+bwd", *_rounds(_backward(spec, arrays, cot), args.reps))
    torch.set_num_threads(default_threads)


if __name__ == "__main__":
    main()
