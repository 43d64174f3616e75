"""LeNet-style convolution stack and a transposed convolution, forward + backward: burn-flex against torch CPU.

x [64, 1, 28, 28] -> conv 1->6 5x5 (+bias) -> max pool 2 -> conv 6->16 5x5 (+bias) -> max pool 2,
gradients of both weights and biases. Then a decoder's upsampling ConvTranspose2d
(x [32, 16, 14, 14], weight [16, 8, 4, 4], stride 2, padding 1 -> [32, 8, 28, 28]), forward and
forward + backward (input, weight, bias gradients), at default threads and at one. One BLAS / torch thread, interleaved repetitions
(burn, torch, burn, ...) so a busy neighbour slows both alike; medians, the ratio burn/torch of
the medians, and the median of the per-pair ratios.

    .venv/bin/python benchmarks/bench_conv.py [--reps 30]
"""
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import torch
import torch.nn.functional as TF
from threadpoolctl import threadpool_limits

import burn
from burn.nn import functional as F


def make_burn(arrays):
    dev = burn.Device.flex().autodiff()
    x = burn.tensor(arrays[0], device=dev)
    params = [burn.tensor(a, device=dev).require_grad() for a in arrays[1:]]

    def step():
        w1, b1, w2, b2 = params
        h = F.max_pool2d(F.conv2d(x, w1, b1), 2)
        y = F.max_pool2d(F.conv2d(h, w2, b2), 2)
        loss = y.sum()
        grads = loss.backward()
        return [p.grad(grads).numpy() for p in params]
    return step


def make_torch(arrays):
    x = torch.tensor(arrays[0])
    params = [torch.tensor(a, requires_grad=True) for a in arrays[1:]]

    def step():
        w1, b1, w2, b2 = params
        for p in params:
            p.grad = None
        h = TF.max_pool2d(TF.conv2d(x, w1, b1), 2)
        y = TF.max_pool2d(TF.conv2d(h, w2, b2), 2)
        y.sum().backward()
        return [p.grad.numpy() for p in params]
    return step


def make_burn_forward(arrays):
    x = burn.tensor(arrays[0])
    w1, b1, w2, b2 = (burn.tensor(a) for a in arrays[1:])

    def step():
        return F.max_pool2d(F.conv2d(F.max_pool2d(F.conv2d(x, w1, b1), 2), w2, b2), 2).numpy()
    return step


def make_torch_forward(arrays):
    x, w1, b1, w2, b2 = (torch.tensor(a) for a in arrays)

    def step():
        with torch.no_grad():
            return TF.max_pool2d(TF.conv2d(TF.max_pool2d(TF.conv2d(x, w1, b1), 2), w2, b2), 2).numpy()
    return step


CT_ARGS = dict(stride=2, padding=1)


def make_burn_transposed(arrays, backward):
    dev = burn.Device.flex().autodiff() if backward else burn.Device.flex()
    x, w, b = (burn.tensor(a, device=dev) for a in arrays)
    if not backward:
        return lambda: F.conv_transpose2d(x, w, b, **CT_ARGS).numpy()
    leaves = [t.require_grad() for t in (x, w, b)]

    def step():
        loss = F.conv_transpose2d(*leaves, **CT_ARGS).sum()
        grads = loss.backward()
        # the loss is read too: otherwise burn would never compute the forward (only its sum's
        # gradient, which does not need it) while torch does
        return [loss.item()] + [t.grad(grads).numpy() for t in leaves]
    return step


def make_torch_transposed(arrays, backward):
    x, w, b = (torch.tensor(a, requires_grad=backward) for a in arrays)
    if not backward:
        def fwd():
            with torch.no_grad():
                return TF.conv_transpose2d(x, w, b, **CT_ARGS).numpy()
        return fwd

    def step():
        for t in (x, w, b):
            t.grad = None
        loss = TF.conv_transpose2d(x, w, b, **CT_ARGS).sum()
        loss.backward()
        return [loss.item()] + [t.grad.numpy() for t in (x, w, b)]
    return step


def timed(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def compare(name, burn_step, torch_step, reps):
    for _ in range(3):                       # warm up plan caches and allocators
        burn_step(), torch_step()
    tb, tt = [], []
    for _ in range(reps):
        tb.append(timed(burn_step))
        tt.append(timed(torch_step))
    mb, mt = statistics.median(tb), statistics.median(tt)
    # neighbours on a shared machine slow adjacent samples alike: the median of the
    # per-pair ratios is steadier than the ratio of the medians
    paired = statistics.median(b / t for b, t in zip(tb, tt))
    print(f"{name:<28} burn-flex {mb * 1e3:7.2f} ms   torch {mt * 1e3:7.2f} ms   "
          f"ratio {mb / mt:5.2f}x (paired {paired:4.2f}x)")
    return paired


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1
              for s in [(64, 1, 28, 28), (6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,)]]

    bg, tg = make_burn(arrays)(), make_torch(arrays)()
    for b, t in zip(bg, tg):                 # the comparison is only meaningful if both agree
        np.testing.assert_allclose(b, t, rtol=1e-3, atol=1e-3)

    ct = [rng.standard_normal(s).astype(np.float32) * 0.1 for s in [(32, 16, 14, 14), (16, 8, 4, 4), (8,)]]
    for b, t in zip(make_burn_transposed(ct, True)(), make_torch_transposed(ct, True)()):
        np.testing.assert_allclose(b, t, rtol=1e-3, atol=1e-3)

    threads = torch.get_num_threads()
    print(f"default threads (torch {threads})")
    compare("ConvTranspose2d forward", make_burn_transposed(ct, False), make_torch_transposed(ct, False), args.reps)
    compare("ConvTranspose2d fwd+bwd", make_burn_transposed(ct, True), make_torch_transposed(ct, True), args.reps)
    print("one thread")
    torch.set_num_threads(1)
    with threadpool_limits(limits=1):
        compare("LeNet convs forward", make_burn_forward(arrays), make_torch_forward(arrays), args.reps)
        compare("LeNet convs forward+backward", make_burn(arrays), make_torch(arrays), args.reps)
        compare("ConvTranspose2d forward", make_burn_transposed(ct, False), make_torch_transposed(ct, False),
                args.reps)
        compare("ConvTranspose2d fwd+bwd", make_burn_transposed(ct, True), make_torch_transposed(ct, True),
                args.reps)
    torch.set_num_threads(threads)


if __name__ == "__main__":
    main()
