"""burn.signal on flex (and wgpu, if usable) against SciPy and torch (CPU), same run.

rfft of 2^20 float32; complex64 fft of 3 * 2^18 (mixed radix) and of the prime 1_000_003
(Bluestein); stft of 60 s of 16 kHz audio (float32, nperseg=512, periodic hann as a float32
array, scipy's defaults otherwise); fftconvolve of 1M x 4k float32 ("full"); lfilter of 64
one-second 16 kHz signals through a 4th-order Butterworth (b, a) filter. One thread everywhere
(scipy.fft's default workers=1, threadpoolctl, torch.set_num_threads(1)); repetitions
interleaved (burn, scipy, torch, burn, ...) so a busy neighbour slows all alike; medians,
the ratios of the medians and the median of the per-repetition ratios burn/scipy. burn's
time includes everything a user sees: the call, the lazy graph flush and reading the
result back as numpy. Target: burn within 1.1x of SciPy (wrapper overhead only).

torch has no fftconvolve: its column is torch.fft (rfft, multiply, irfft) written by hand,
the same algorithm. Its stft pads by reflection unless told otherwise; here it is given
scipy's zero padding and window so it does the same work. torch has no lfilter (torchaudio's is
not installed here): that row has no torch column.

The wgpu column runs the same calls on ``burn.Device.wgpu()`` (inputs uploaded once, results read
back as numpy), all native OpenCL kernels. On a CI machine that device is PoCL on the CPU (all its
cores, not limited to one thread), so the column shows the kernels' path more than a GPU's speed.
Target there: the OpenCL rfft of 2^20 within 3x of scipy.fft (aim: 1.3x). ``--no-wgpu`` skips it.

    .venv/bin/python benchmarks/bench_signal.py [--reps 9] [--no-wgpu]
"""
from __future__ import annotations

import argparse

import numpy as np
import scipy.fft as sfft
import scipy.signal as ss
import torch
from threadpoolctl import threadpool_limits

import burn
from common import interleaved_medians, wgpu_device


def cases(rng, wgpu=None):
    sig = rng.standard_normal(1 << 20).astype(np.float32)
    audio = rng.standard_normal(60 * 16000).astype(np.float32)
    long = rng.standard_normal(1_000_000).astype(np.float32)
    kern = rng.standard_normal(4096).astype(np.float32)
    zm, zp = ((rng.standard_normal(k) + 1j * rng.standard_normal(k)).astype(np.complex64)
              for k in (3 << 18, 1_000_003))
    S, A, L, K, ZM, ZP = (burn.tensor(a) for a in (sig, audio, long, kern, zm, zp))
    tS, tA, tL, tK, tZM, tZP = (torch.from_numpy(a) for a in (sig, audio, long, kern, zm, zp))
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

    sigs = rng.standard_normal((64, 16000)).astype(np.float32)
    fb, fa = (c.astype(np.float32) for c in ss.butter(4, 0.2))
    G, FB, FA = (burn.tensor(v) for v in (sigs, fb, fa))
    out = {
        "rfft 2^20": {
            "burn": lambda: burn.fft.rfft(S).numpy(),
            "scipy": lambda: sfft.rfft(sig),
            "torch": lambda: torch.fft.rfft(tS).numpy(),
        },
        "fft 3*2^18 c64": {
            "burn": lambda: burn.fft.fft(ZM).numpy(),
            "scipy": lambda: sfft.fft(zm),
            "torch": lambda: torch.fft.fft(tZM).numpy(),
        },
        "fft 1000003 c64": {
            "burn": lambda: burn.fft.fft(ZP).numpy(),
            "scipy": lambda: sfft.fft(zp),
            "torch": lambda: torch.fft.fft(tZP).numpy(),
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
        "lfilter 64x16k": {
            "burn": lambda: burn.signal.lfilter(FB, FA, G).numpy(),
            "scipy": lambda: ss.lfilter(fb, fa, sigs),
        },
    }
    if wgpu is not None:
        gS, gA, gL, gK, gG, gB, gFA, gZM, gZP = (burn.tensor(v, device=wgpu)
                                                 for v in (sig, audio, long, kern, sigs, fb, fa, zm, zp))
        gwin = burn.tensor(win, device=wgpu)
        out["rfft 2^20"]["wgpu"] = lambda: burn.fft.rfft(gS).numpy()
        out["fft 3*2^18 c64"]["wgpu"] = lambda: burn.fft.fft(gZM).numpy()
        out["fft 1000003 c64"]["wgpu"] = lambda: burn.fft.fft(gZP).numpy()
        out["stft 60s@16k"]["wgpu"] = lambda: burn.signal.stft(gA, window=gwin, nperseg=nper)[2].numpy()
        out["fftconvolve 1Mx4k"]["wgpu"] = lambda: burn.signal.fftconvolve(gL, gK).numpy()
        out["lfilter 64x16k"]["wgpu"] = lambda: burn.signal.lfilter(gB, gFA, gG).numpy()
    return out


def run(reps, wgpu=None):
    torch.set_num_threads(1)
    rng = np.random.default_rng(0)
    rows = []
    with threadpool_limits(1):
        for name, fns in cases(rng, wgpu).items():
            rows.append((name, interleaved_medians(fns, reps, freeze_gc=True)))
    return rows


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--reps", type=int, default=9)
    p.add_argument("--no-wgpu", action="store_true", help="skip the wgpu column")
    args = p.parse_args(argv)
    wgpu = None if args.no_wgpu else wgpu_device()
    rows = run(args.reps, wgpu)

    def r(m, a, b):
        return f"{m[a] / m[b]:.2f}" if a in m and b in m else "-"

    def ms(m, k):
        return f"{m[k] * 1e3:.2f}" if k in m else "-"
    print(f"burn.signal on flex, float32, 1 thread, median of {args.reps} interleaved reps")
    print(f"{'op':<20}{'burn ms':>9}{'scipy ms':>10}{'torch ms':>10}{'burn/scipy':>12}{'(pairs)':>9}"
          f"{'burn/torch':>12}")
    for name, m in rows:
        print(f"{name:<20}{ms(m, 'burn'):>9}{ms(m, 'scipy'):>10}{ms(m, 'torch'):>10}"
              f"{r(m, 'burn', 'scipy'):>12}{m['pair']:>9.2f}{r(m, 'burn', 'torch'):>12}")
    if wgpu is not None:
        from burn_wgpu import runtime
        print(f"\nburn.signal on {wgpu} ({runtime.context(wgpu.index).device.name.strip()}), same run")
        print(f"{'op':<20}{'wgpu ms':>9}{'wgpu/scipy':>12}{'wgpu/torch':>12}{'wgpu/flex':>11}")
        for name, m in rows:
            print(f"{name:<20}{ms(m, 'wgpu'):>9}{r(m, 'wgpu', 'scipy'):>12}{r(m, 'wgpu', 'torch'):>12}"
                  f"{r(m, 'wgpu', 'burn'):>11}")
    return rows


if __name__ == "__main__":
    main()
