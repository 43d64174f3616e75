"""burn.nn + burn.optim training workloads against the same models in PyTorch CPU, in one run.

    .venv/bin/python benchmarks/bench_nn.py                  # all workloads
    .venv/bin/python benchmarks/bench_nn.py --only cnn_sgd,encoder --rounds 21

Workloads (issue 3's targets: each <= 1.3x torch's step time on flex):

- ``cnn_sgd`` / ``cnn_adam``: LeNet-style CNN training step on [64, 1, 28, 28]
  (conv 1->6 5x5, relu, max pool 2, conv 6->16 5x5, relu, max pool 2, flatten,
  linear 256->120 relu, 120->84 relu, 84->10, cross-entropy) with SGD
  (momentum 0.9) or Adam.
- ``encoder``: one TransformerEncoderLayer (d_model 128, 4 heads, feed-forward
  512, dropout 0) on [16, 64, 128], forward + backward of ``sum(y * r)``.
- ``mlp``: the digits-sized MLP 64-256-256-10 step with Adam (bench_core's).

burn uses ``burn.nn`` modules and ``burn.optim``; torch ``torch.nn`` and
``torch.optim``, with the same initial weights copied in. burn and torch
alternate in blocks of steps (common.block_time), each round once with the default thread
settings (what a user gets: torch's intra-op threads, BLAS's pool and burn's
flex pool on every core) and once with all of them pinned to one thread
(threadpoolctl, torch.set_num_threads(1), burn.set_num_threads(1)). The report
gives the medians and their ratio per setting, the median of per-pair ratios
(steadier when neighbours load the machine), and each framework's speed-up
from one thread to the default (``--threads default`` or ``one`` runs one).
"""
from __future__ import annotations

import argparse
import gc
import statistics
import time

import numpy as np

F32 = np.float32


# -- models -----------------------------------------------------------------------------

def _copy_linear(burn, bl, tl):
    """torch Linear weight [out, in] -> burn Linear weight [in, out]."""
    dev = bl.weight.device
    bl.weight.assign_(burn.tensor(tl.weight.detach().numpy().T.copy(), device=dev))
    bl.bias.assign_(burn.tensor(tl.bias.detach().numpy().copy(), device=dev))


def _copy_conv(burn, bc, tc):
    dev = bc.weight.device
    bc.weight.assign_(burn.tensor(tc.weight.detach().numpy().copy(), device=dev))
    bc.bias.assign_(burn.tensor(tc.bias.detach().numpy().copy(), device=dev))


def _cnn_data():
    rng = np.random.default_rng(0)
    return rng.standard_normal((64, 1, 28, 28), dtype=F32), rng.integers(0, 10, 64)


def make_cnn(burn, torch, opt_name):
    tnn = torch.nn
    torch.manual_seed(0)
    tm = tnn.Sequential(tnn.Conv2d(1, 6, 5), tnn.ReLU(), tnn.MaxPool2d(2), tnn.Conv2d(6, 16, 5), tnn.ReLU(),
                        tnn.MaxPool2d(2), tnn.Flatten(), tnn.Linear(256, 120), tnn.ReLU(), tnn.Linear(120, 84),
                        tnn.ReLU(), tnn.Linear(84, 10))
    dev = burn.Device.flex().autodiff()
    bnn = burn.nn
    bm = bnn.Sequential(bnn.Conv2d(1, 6, 5, device=dev), bnn.ReLU(), bnn.MaxPool2d(2),
                        bnn.Conv2d(6, 16, 5, device=dev), bnn.ReLU(), bnn.MaxPool2d(2), bnn.Flatten(),
                        bnn.Linear(256, 120, device=dev), bnn.ReLU(), bnn.Linear(120, 84, device=dev), bnn.ReLU(),
                        bnn.Linear(84, 10, device=dev))
    for bl, tl in zip(bm.layers, tm):
        if isinstance(tl, tnn.Conv2d):
            _copy_conv(burn, bl, tl)
        elif isinstance(tl, tnn.Linear):
            _copy_linear(burn, bl, tl)
    x, y = _cnn_data()
    xb, yb = burn.tensor(x, device=dev), burn.tensor(y, device=dev)
    xt, yt = torch.from_numpy(x.copy()), torch.from_numpy(y.copy())
    if opt_name == "sgd":
        bo = burn.optim.SGD(bm, lr=0.01, momentum=0.9)
        to = torch.optim.SGD(tm.parameters(), lr=0.01, momentum=0.9)
    else:
        bo = burn.optim.Adam(bm, lr=1e-3)
        to = torch.optim.Adam(tm.parameters(), lr=1e-3, foreach=False)
    F, TF = burn.nn.functional, torch.nn.functional

    def step_burn():
        loss = F.cross_entropy(bm(xb), yb)
        bo.step(loss.backward())
        return loss.item()

    def step_torch():
        to.zero_grad(set_to_none=True)
        loss = TF.cross_entropy(tm(xt), yt)
        loss.backward()
        to.step()
        return loss.item()
    return step_burn, step_torch


def make_encoder(burn, torch):
    torch.manual_seed(0)
    d, heads, ff, n, s = 128, 4, 512, 16, 64
    tl = torch.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.0, batch_first=True)
    dev = burn.Device.flex().autodiff()
    bl = burn.nn.TransformerEncoderLayer(d, heads, dim_feedforward=ff, dropout=0.0, device=dev)
    w_in = tl.self_attn.in_proj_weight.detach().numpy()
    b_in = tl.self_attn.in_proj_bias.detach().numpy()
    sa = bl.self_attn
    for i, proj in enumerate((sa.q_proj, sa.k_proj, sa.v_proj)):
        proj.weight.assign_(burn.tensor(w_in[i * d:(i + 1) * d].T.copy(), device=dev))
        proj.bias.assign_(burn.tensor(b_in[i * d:(i + 1) * d].copy(), device=dev))
    _copy_linear(burn, sa.out_proj, tl.self_attn.out_proj)
    _copy_linear(burn, bl.linear1, tl.linear1)
    _copy_linear(burn, bl.linear2, tl.linear2)
    for bn, tn in ((bl.norm1, tl.norm1), (bl.norm2, tl.norm2)):
        bn.weight.assign_(burn.tensor(tn.weight.detach().numpy().copy(), device=dev))
        bn.bias.assign_(burn.tensor(tn.bias.detach().numpy().copy(), device=dev))
    rng = np.random.default_rng(1)
    x = rng.standard_normal((n, s, d), dtype=F32)
    r = rng.standard_normal((n, s, d), dtype=F32)
    xb, rb = burn.tensor(x, device=dev).require_grad(), burn.tensor(r, device=dev)
    xt, rt = torch.from_numpy(x.copy()).requires_grad_(), torch.from_numpy(r.copy())
    bparams = [p for _, p in bl.named_parameters()]
    tparams = list(tl.parameters())

    def step_burn():
        grads = (bl(xb) * rb).sum().backward()
        return [xb.grad(grads).numpy()] + [p.grad(grads).numpy() for p in bparams]

    def step_torch():
        y = tl(xt)
        return torch.autograd.grad((y * rt).sum(), [xt] + tparams)
    return step_burn, step_torch


def make_mlp(burn, torch):
    import bench_core
    return bench_core.BurnMLP(burn).step, bench_core.TorchMLP(torch).step


def check_encoder(burn, torch):
    """The encoder's gradients must agree before their times mean anything."""
    sb, st = make_encoder(burn, torch)
    gb, gt = sb(), st()
    worst = max(float(np.max(np.abs(b - t.numpy())) / (np.max(np.abs(t.numpy())) + 1e-30))
                for b, t in zip(gb[:1], gt[:1]))
    assert worst < 1e-4, f"encoder input gradient differs from torch's: {worst}"


def check_cnn(burn, torch):
    """Ten SGD steps give the same losses in both frameworks."""
    sb, st = make_cnn(burn, torch, "sgd")
    lb = [sb() for _ in range(10)]
    lt = [st() for _ in range(10)]
    np.testing.assert_allclose(lb, lt, rtol=2e-4, atol=2e-5)


WORKLOADS = {
    "cnn_sgd": ("LeNet CNN train step [64,1,28,28], SGD momentum", lambda b, t: make_cnn(b, t, "sgd")),
    "cnn_adam": ("LeNet CNN train step [64,1,28,28], Adam", lambda b, t: make_cnn(b, t, "adam")),
    "encoder": ("TransformerEncoderLayer d128 h4 ff512 [16,64] fwd+bwd", make_encoder),
    "mlp": ("MLP 64-256-256-10 train step, batch 128, Adam", make_mlp),
}


def run(name, burn, torch, rounds, modes, settings):
    from common import block_time      # benchmarks/ is on sys.path once main() runs
    desc, make = WORKLOADS[name]
    fb, ft = make(burn, torch)
    for mode in settings:
        modes.set(mode)
        for _ in range(3):
            fb(), ft()
    gc.collect()
    gc.freeze()
    tb, tt = {m: [] for m in settings}, {m: [] for m in settings}
    for _ in range(rounds):
        for mode in settings:
            modes.set(mode)
            tb[mode].append(block_time(fb))       # blocks, not A B A B: see common.block_time
            tt[mode].append(block_time(ft))
    gc.unfreeze()
    out = {"desc": desc}
    for mode in settings:
        mb, mt = statistics.median(tb[mode]), statistics.median(tt[mode])
        paired = statistics.median(b / t for b, t in zip(tb[mode], tt[mode]))
        label = f"{desc} [{'default threads' if mode == 'default' else 'one thread'}]"
        print(f"{label:76s} burn {mb * 1e3:7.2f} ms  torch {mt * 1e3:7.2f} ms  ratio {mb / mt:5.2f}x"
              f"  (paired {paired:4.2f}x)", flush=True)
        out[mode] = {"burn_ms": mb * 1e3, "torch_ms": mt * 1e3, "ratio": mb / mt, "paired": paired}
    if len(settings) == 2:
        up = {k: out["one"][f"{k}_ms"] / out["default"][f"{k}_ms"] for k in ("burn", "torch")}
        out["speedup_1_to_default"] = up
        print(f"{'':76s} speed-up 1 -> default threads: burn {up['burn']:.2f}x, torch {up['torch']:.2f}x",
              flush=True)
    return out


def main(argv=None):
    import os
    import sys
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="", help="comma-separated: " + ",".join(WORKLOADS))
    ap.add_argument("--rounds", type=int, default=31)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-check", action="store_true", help="skip the agreement checks against torch")
    ap.add_argument("--threads", default="both", choices=("both", "default", "one"),
                    help="thread settings to run (default: both, interleaved)")
    args = ap.parse_args(argv)
    import threadpoolctl
    import torch
    import burn
    from common import ThreadModes, write_results
    modes = ThreadModes(burn, torch)
    settings = ThreadModes.MODES if args.threads == "both" else (args.threads,)
    limits = threadpoolctl.threadpool_limits()      # remembers the original limits
    print("load average at start:", os.getloadavg(), "|", modes.describe())
    if not args.no_check:
        modes.set(settings[0])
        check_cnn(burn, torch)
        check_encoder(burn, torch)
    results = {name: run(name, burn, torch, args.rounds, modes, settings)
               for name in ([w for w in args.only.split(",") if w] or list(WORKLOADS))}
    modes.set("default")
    limits.restore_original_limits()
    return write_results(results, args.json)


if __name__ == "__main__":
    main()
