"""burn.signal on flex against SciPy and torch (CPU), same run.

rfft of 2^20 float32; stft of 60 s of 16 kHz audio (float32, nperseg=512, periodic hann as a
float32 array, scipy's defaults otherwise); fftconvolve of 1M x 4k float32 ("full"). One thread everywhere
(scipy.fft's default workers=1, threadpoolctl, torch.set_num_threads(1)); repetitions
interleaved (burn, scipy, torch, burn, ...) so a busy neighbour slows all alike; medians,
the ratios of the medians and the median of the per-repetition ratios burn/scipy. burn's
time includes everything a user sees: the call, the lazy graph flush and reading the
result back as numpy. Target: burn within 1.1x of SciPy (wrapper overhead only).

torch has no fftconvolve: its column is torch.fft (rfft, multiply, irfft) written by hand,
the same algorithm. Its stft pads by reflection unless told otherwise; here it is given
scipy's zero padding and window so it does the same work.

    .venv/bin/python benchmarks/bench_signal.py [--reps 9]
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np
import scipy.fft as sfft
import scipy.signal as ss
import torch
from threadpoolctl import threadpool_limits

import burn


def cases(rng):
    sig = rng.standard_normal(1 << 20).astype(np.float32)
    audio = rng.standard_normal(60 * 16000).astype(np.float32)
    long = rng.standard_normal(1_000_000).astype(np.float32)
    kern = rng.standard_normal(4096).astype(np.float32)
    S, A, L, K = (burn.tensor(a) for a in (sig, audio, long, kern))
    tS, tA, tL, tK = (torch.from_numpy(a) for a in (sig, audio, long, kern))
    nper = 512
    twin = torch.hann_window(nper, periodic=True)
    # scipy given the same float32 window array burn passes its kernel: with the string "hann"
    # scipy builds a float64 window and computes in float64 (about 2x slower)
    win = ss.get_window("hann", nper).astype(np.float32)
    step = nper // 2
    n_ext = audio.shape[0] + 2 * (nper // 2)
    pad_end = nper // 2 + (-(n_ext - nper) % step) % nper

    def torch_stft():
        # scipy's framing: nperseg//2 zeros each side, window sum scaling, one-sided
        x = torch.nn.functional.pad(tA, (nper // 2, pad_end))
        z = torch.stft(x, n_fft=nper, hop_length=step, window=twin, center=False, return_complex=True)
        return (z / twin.sum()).numpy()

    def torch_fftconvolve():
        n = tL.shape[0] + tK.shape[0] - 1
        nf = sfft.next_fast_len(n, real=True)
        return torch.fft.irfft(torch.fft.rfft(tL, nf) * torch.fft.rfft(tK, nf), nf)[:n].numpy()

    return {
        "rfft 2^20": {
            "burn": lambda: burn.fft.rfft(S).numpy(),
            "scipy": lambda: sfft.rfft(sig),
            "torch": lambda: torch.fft.rfft(tS).numpy(),
        },
        "stft 60s@16k": {
            "burn": lambda: burn.signal.stft(A, nperseg=nper)[2].numpy(),
            "scipy": lambda: ss.stft(audio, window=win, nperseg=nper)[2],
            "torch": torch_stft,
        },
        "fftconvolve 1Mx4k": {
            "burn": lambda: burn.signal.fftconvolve(L, K).numpy(),
            "scipy": lambda: ss.fftconvolve(long, kern),
            "torch": torch_fftconvolve,
        },
    }


def run(reps):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for name, fns in cases(rng).items():
            times = {k: [] for k in fns}
            for f in fns.values():      # warm up (FFT plans, kernel registration)
                f()
            gc.collect()
            gc.freeze()
            for _ in range(reps):
                for k, f in fns.items():
                    t0 = time.perf_counter()
                    f()
                    times[k].append(time.perf_counter() - t0)
            gc.unfreeze()
            med = {k: statistics.median(v) for k, v in times.items()}
            med["pair"] = statistics.median(b / s for b, s in zip(times["burn"], times["scipy"]))
            rows.append((name, med))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=9)
    args = p.parse_args(argv)
    rows = run(args.reps)
    print(f"burn.signal on flex, float32, 1 thread, median of {args.reps} interleaved reps")
    print(f"{'op':<20}{'burn ms':>9}{'scipy ms':>10}{'torch ms':>10}{'burn/scipy':>12}{'(pairs)':>9}"
          f"{'burn/torch':>12}")
    for name, m in rows:
        print(f"{name:<20}{m['burn'] * 1e3:>9.2f}{m['scipy'] * 1e3:>10.2f}{m['torch'] * 1e3:>10.2f}"
              f"{m['burn'] / m['scipy']:>12.2f}{m['pair']:>9.2f}{m['burn'] / m['torch']:>12.2f}")
    return rows


if __name__ == "__main__":
    main()
