"""Run on N ranks by tests/test_dist.py: N ranks x (1/N of each batch) == 1 process x the full batch
(losses and weights, float32 tolerance) for the digits MLP and CNN with Adam; parameters identical
on every rank; LoRA + parameter groups + gradient clipping; a burn.capture'd step."""
import sys

import numpy as np

import burn
import burn.nn.functional as F
import burn_dist
from burn.examples.digits import DigitsCNN

comm = burn_dist.init()
R, W = comm.rank, comm.world_size
STEPS, B = int(sys.argv[1]) if len(sys.argv) > 1 else 4, 32
CASES = sys.argv[2].split(",") if len(sys.argv) > 2 else ["mlp", "cnn", "lora", "captured"]
dev = burn.Device.flex().autodiff()

from sklearn.datasets import load_digits  # noqa: E402
d = load_digits()
X = (d.data[:STEPS * B] / 16.0).astype(np.float32)
Y = d.target[:STEPS * B].astype(np.int64)
order = np.random.default_rng(0).permutation(len(X))


def mlp(dev):
    return burn.nn.Sequential(burn.nn.Linear(64, 48, device=dev), burn.nn.ReLU(), burn.nn.Linear(48, 10, device=dev))


def build(kind, seed):
    dev.seed(seed)
    return mlp(dev) if kind == "mlp" else DigitsCNN(dev)


def batch(s, part=None):
    idx = order[s * B:(s + 1) * B]
    if part is not None:
        idx = np.array_split(idx, W)[part]
    return burn.tensor(X[idx], device=dev), burn.tensor(Y[idx], device=dev)


def weights(model):
    return {n: p.numpy().copy() for n, p in model.named_parameters()}


def run_reference(kind, make_opt, prepare=None):
    model = build(kind, 0)
    if prepare:
        prepare(model)
    opt = make_opt(model)
    losses = []
    for s in range(STEPS):
        x, y = batch(s)
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        losses.append(loss.item())
    return np.array(losses), weights(model)


def run_parallel(kind, make_opt, prepare=None, captured=False):
    inner = build(kind, 0 if R == 0 else 1000 + R)       # other ranks start elsewhere: the broadcast fixes it
    if prepare:
        prepare(inner)
    model = burn_dist.DataParallel(inner, bucket_mb=0.01)   # ~10 KB buckets: several collectives per step
    assert all(not getattr(p, "frozen", False) for b in model.buckets for p in b)
    opt = make_opt(model)

    def step(x, y):
        loss = F.cross_entropy(model(x), y)
        opt.step(model.backward(loss))
        return loss

    fn = burn.capture(step) if captured else step
    losses = []
    for s in range(STEPS):
        loss = fn(*batch(s, R))
        local = np.array([loss.item()], np.float64)
        comm.all_reduce(local, "mean")                  # equal parts: the mean of the parts' means
        losses.append(local[0])
    if captured:
        info = fn.cache_info()
        assert info["replays"] >= STEPS - 2, info
    return np.array(losses), weights(model), model


def same_on_every_rank(w):
    for n, a in w.items():
        every = comm.all_gather(np.ascontiguousarray(a))
        assert all(np.array_equal(every[0], every[r]) for r in range(W)), f"{n} differs across ranks"


def compare(tag, ref, par, rtol=2e-5, atol=2e-5):
    (lr_, wr), (lp, wp) = ref, par[:2]
    assert np.allclose(lp, lr_, rtol=rtol, atol=atol), (tag, lp, lr_)
    for n in wr:
        err = np.abs(wp[n] - wr[n]).max()
        assert np.allclose(wp[n], wr[n], rtol=rtol, atol=atol), (tag, n, err)
    same_on_every_rank(wp)
    if R == 0:
        print(f"{tag}: losses {np.round(lp, 4).tolist()} match one process (max weight diff "
              f"{max(np.abs(wp[n] - wr[n]).max() for n in wr):.2e})", flush=True)


adam = lambda m: burn.optim.Adam(m, lr=1e-2)   # noqa: E731
for kind in ("mlp", "cnn"):
    if kind in CASES:
        compare(f"{kind} adam", run_reference(kind, adam), run_parallel(kind, adam))

# LoRA (only the adapters are trained and exchanged), parameter groups and clipping after averaging


def lora(m):
    burn.nn.lora.apply_lora(m, rank=4, alpha=8.0)


def grouped(m):
    return burn.optim.AdamW(m, lr=2e-2, grad_clip=burn.optim.GradClip.norm(0.05),
                            groups=[(burn.optim.ParamGroup(glob="*.lora_B"), {"lr": 5e-2})])


if "lora" in CASES:
    ref = run_reference("mlp", grouped, lora)
    par = run_parallel("mlp", grouped, lora)
    n_trainable = sum(p.size for b in par[2].buckets for p in b)
    n_frozen = sum(p.size for p in par[2].parameters() if getattr(p, "frozen", False))
    assert n_frozen > 0 and n_trainable < n_frozen, (n_trainable, n_frozen)
    compare("mlp lora + groups + clip", ref, par)

# a captured step: the all-reduce is an op of the graph, run at every replay
if "captured" in CASES:
    compare("cnn adam, captured", run_reference("cnn", adam), run_parallel("cnn", adam, captured=True))
comm.barrier()
print(f"rank {R}: OK", flush=True)
