"""Convolutions and attention on burn-flex against torch CPU, at default threads and at one thread.

Conv-level cases: the LeNet convolution stack (x [64, 1, 28, 28] -> conv 1->6 5x5 (+bias) -> max
pool 2 -> conv 6->16 5x5 (+bias) -> max pool 2) forward, and forward + backward (gradients of both
weights and biases); the same for the digits CNN's stack (burn.examples.digits: x [64, 1, 8, 8], conv
1->16 3x3 and 16->32 3x3 with padding 1, each followed by a 2x2 max pool); one 32->64 3x3 conv (padding 1) on [32, 32, 16, 16] forward + backward (the
per-image GEMMs OpenBLAS threads itself); scaled dot-product attention [16, 4, 64, 32] forward +
backward; a decoder's upsampling ConvTranspose2d (x [32, 16, 14, 14], weight [16, 8, 4, 4],
stride 2, padding 1 -> [32, 8, 28, 28]) forward and forward + backward. Step cases (bench_nn.py's workloads, imported, not copied): the LeNet CNN SGD step and
the Transformer encoder layer forward + backward; and the digits CNN's Adam step (the network of
``python3 dev.py main``, burn.examples.digits).

Each case runs twice: with default thread settings (torch's intra-op threads, OpenBLAS's and
burn_flex.threads' defaults: what a user gets) and pinned to one thread (torch.set_num_threads(1),
threadpoolctl, burn_flex.threads.set_num_threads(1)). Within a setting burn and torch alternate
(A B A B ...); the report gives medians, the ratio burn/torch of the medians and the median of the
per-pair ratios, and per case the speed-up from one thread to the default for burn and for torch.
The load average is printed at start and end: on a shared machine, numbers taken under load are
noise (threads wait for cores).

    .venv/bin/python benchmarks/bench_conv.py [--reps 30] [--only lenet,digits,conv3x3,sdpa,convT,cnn_sgd,digits_adam,encoder]
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


def make_burn(arrays, padding=0):
    dev = burn.Device.flex().autodiff()
    x = burn.tensor(arrays[0], device=dev)
    params = [burn.tensor(a, device=dev).require_grad() for a in arrays[1:]]

    def step():
        w1, b1, w2, b2 = params
        h = F.max_pool2d(F.conv2d(x, w1, b1, padding=padding), 2)
        y = F.max_pool2d(F.conv2d(h, w2, b2, padding=padding), 2)
        loss = y.sum()
        grads = loss.backward()
        return [p.grad(grads).numpy() for p in params]
    return step


def make_torch(arrays, padding=0):
    x = torch.tensor(arrays[0])
    params = [torch.tensor(a, requires_grad=True) for a in arrays[1:]]

    def step():
        w1, b1, w2, b2 = params
        for p in params:
            p.grad = None
        h = TF.max_pool2d(TF.conv2d(x, w1, b1, padding=padding), 2)
        y = TF.max_pool2d(TF.conv2d(h, w2, b2, padding=padding), 2)
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
    print(f"{name:<58} burn-flex {mb * 1e3:7.2f} ms   torch {mt * 1e3:7.2f} ms   "
          f"ratio {mb / mt:5.2f}x (paired {paired:4.2f}x)", flush=True)
    return mb, mt, paired


def make_conv3x3(arrays=None):
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal((32, 32, 16, 16), dtype=np.float32), rng.standard_normal((64, 32, 3, 3), dtype=np.float32)
    dev = burn.Device.flex().autodiff()
    bx, bw = burn.tensor(x, device=dev).require_grad(), burn.tensor(w, device=dev).require_grad()
    tx, tw = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)

    def step_burn():
        grads = F.relu(F.conv2d(bx, bw, padding=1)).sum().backward()
        return bx.grad(grads).numpy(), bw.grad(grads).numpy()

    def step_torch():
        return torch.autograd.grad(TF.relu(TF.conv2d(tx, tw, padding=1)).sum(), [tx, tw])
    return step_burn, step_torch


def make_sdpa(arrays=None):
    rng = np.random.default_rng(2)
    q, k, v, r = (rng.standard_normal((16, 4, 64, 32), dtype=np.float32) for _ in range(4))
    dev = burn.Device.flex().autodiff()
    bq, bk, bv = (burn.tensor(a, device=dev).require_grad() for a in (q, k, v))
    br = burn.tensor(r, device=dev)
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tr = torch.tensor(r)

    def step_burn():
        grads = (F.scaled_dot_product_attention(bq, bk, bv) * br).sum().backward()
        return [t.grad(grads).numpy() for t in (bq, bk, bv)]

    def step_torch():
        return torch.autograd.grad((TF.scaled_dot_product_attention(tq, tk, tv) * tr).sum(), [tq, tk, tv])
    return step_burn, step_torch


def _transposed_arrays():
    rng = np.random.default_rng(3)
    return [rng.standard_normal(s).astype(np.float32) * 0.1 for s in [(32, 16, 14, 14), (16, 8, 4, 4), (8,)]]


def _transposed(backward):
    return lambda arrays: (make_burn_transposed(_transposed_arrays(), backward),
                           make_torch_transposed(_transposed_arrays(), backward))


def _digits_arrays():
    rng = np.random.default_rng(1)
    return [rng.standard_normal(s).astype(np.float32) * 0.1
            for s in [(64, 1, 8, 8), (16, 1, 3, 3), (16,), (32, 16, 3, 3), (32,)]]


def _digits(backward):
    """The digits CNN's convolution stack (burn.examples.digits: 3x3 convs with padding 1)."""
    def make(_arrays):
        a = _digits_arrays()
        if backward:
            return make_burn(a, padding=1), make_torch(a, padding=1)
        dev = burn.Device.flex().autodiff()
        x = burn.tensor(a[0], device=dev)
        pb = [burn.tensor(v, device=dev) for v in a[1:]]
        xt, pt = torch.tensor(a[0]), [torch.tensor(v) for v in a[1:]]

        def burn_fwd():
            h = F.max_pool2d(F.conv2d(x, pb[0], pb[1], padding=1), 2)
            return F.max_pool2d(F.conv2d(h, pb[2], pb[3], padding=1), 2).numpy()

        def torch_fwd():
            with torch.no_grad():
                h = TF.max_pool2d(TF.conv2d(xt, pt[0], pt[1], padding=1), 2)
                return TF.max_pool2d(TF.conv2d(h, pt[2], pt[3], padding=1), 2).numpy()
        return burn_fwd, torch_fwd
    return make


def _digits_step(_arrays):
    """The digits CNN's Adam training step (burn.examples.digits.DigitsCNN, batch 64) against the
    same network in torch, each from its own initial weights."""
    from burn.examples.digits import DigitsCNN
    rng = np.random.default_rng(2)
    xs, ys = rng.random((64, 64)).astype(np.float32), rng.integers(0, 10, 64)
    dev = burn.Device.flex().autodiff()
    model = DigitsCNN(dev)
    opt = burn.optim.Adam(model, lr=3e-3)
    x, y = burn.tensor(xs, device=dev), burn.tensor(ys, device=dev)

    def step_burn():
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss.item()
    tn = torch.nn
    tm = tn.Sequential(tn.Conv2d(1, 16, 3, padding=1), tn.ReLU(), tn.MaxPool2d(2), tn.Conv2d(16, 32, 3, padding=1),
                       tn.ReLU(), tn.MaxPool2d(2), tn.Flatten(), tn.Linear(128, 64), tn.ReLU(), tn.Linear(64, 10))
    topt = torch.optim.Adam(tm.parameters(), lr=3e-3, foreach=False)
    tx, ty = torch.from_numpy(xs.reshape(64, 1, 8, 8).copy()), torch.from_numpy(ys.copy())

    def step_torch():
        topt.zero_grad(set_to_none=True)
        loss = TF.cross_entropy(tm(tx), ty)
        loss.backward()
        topt.step()
        return loss.item()
    return step_burn, step_torch


def _nn(name):
    import bench_nn
    return lambda arrays: bench_nn.WORKLOADS[name][1](burn, torch)


CASES = {
    "lenet": [("LeNet convs forward", lambda a: (make_burn_forward(a), make_torch_forward(a))),
              ("LeNet convs forward+backward", lambda a: (make_burn(a), make_torch(a)))],
    "digits": [("digits CNN convs [64,1,8,8] forward", _digits(False)),
               ("digits CNN convs forward+backward", _digits(True))],
    "conv3x3": [("conv 32->64 3x3 [32,32,16,16] fwd+bwd", make_conv3x3)],
    "sdpa": [("sdpa [16,4,64,32] fwd+bwd", make_sdpa)],
    "convT": [("ConvTranspose2d [32,16,14,14] -> [32,8,28,28] forward", _transposed(False)),
              ("ConvTranspose2d fwd+bwd", _transposed(True))],
    "cnn_sgd": [("LeNet CNN SGD step (bench_nn)", _nn("cnn_sgd"))],
    "digits_adam": [("digits CNN Adam step [64,1,8,8]", _digits_step)],
    "encoder": [("encoder layer fwd+bwd (bench_nn)", _nn("encoder"))],
}


def _set_threads(n):
    """n threads everywhere, or the defaults (None) restored."""
    from burn_flex import threads
    torch.set_num_threads(n or _DEFAULTS["torch"])
    threads.set_num_threads(n or _DEFAULTS["flex"])
    return threadpool_limits(limits=n) if n else None


_DEFAULTS = {}


def main():
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from burn_flex import threads
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(CASES))
    args = ap.parse_args()
    _DEFAULTS.update(torch=torch.get_num_threads(), flex=threads.num_threads())
    from burn_flex import jit
    k = jit.kernels()
    lanes = "no JIT" if k is None else f"{getattr(k, 'vector_bits', 256) // 32} float32 lanes"
    print("load average at start:", os.getloadavg(), f"(torch threads {_DEFAULTS['torch']}, "
          f"flex threads {_DEFAULTS['flex']}; flex's direct convolutions: {lanes})")
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(s).astype(np.float32) * 0.1
              for s in [(64, 1, 28, 28), (6, 1, 5, 5), (6,), (16, 6, 5, 5), (16,)]]

    bg, tg = make_burn(arrays)(), make_torch(arrays)()
    for b, t in zip(bg, tg):                 # the comparison is only meaningful if both agree
        np.testing.assert_allclose(b, t, rtol=1e-3, atol=1e-3)
    names = [c for c in args.only.split(",") if c] or list(CASES)
    for case in names:
        for desc, make in CASES[case]:
            times = {}
            for setting in (None, 1):
                limits = _set_threads(setting)
                label = "default threads" if setting is None else "one thread"
                fb, ft = make(arrays)
                times[setting] = compare(f"{desc} [{label}]", fb, ft, args.reps)
                if limits is not None:
                    limits.restore_original_limits()
                _set_threads(None)
            (db, dt_), (ob, ot) = times[None][:2], times[1][:2]
            print(f"{'':<4}speed-up one thread -> default: burn {ob / db:4.2f}x, torch {ot / dt_:4.2f}x")
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
