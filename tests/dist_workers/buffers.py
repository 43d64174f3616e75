"""Run on N ranks by tests/test_dist.py: DataParallel's broadcast_buffers (PyTorch DDP's default).

A Linear + BatchNorm1d model sees a different batch on every rank. With broadcast_buffers=True
every forward that records gradients starts from rank 0's running statistics, so after K
forwards rank r holds 0.9 * (rank 0's statistics after K-1 forwards) + 0.1 * (its own last batch's);
with False every rank keeps its own from the start. The reference is numpy on each rank's
batches (momentum 0.1, unbiased variance, as PyTorch). A forward under no_grad exchanges
nothing: one rank evaluates alone without a hang."""
import numpy as np

import burn
import burn_dist

comm = burn_dist.init()
R, W = comm.rank, comm.world_size
K, N, FIN, FOUT = 3, 8, 4, 3
dev = burn.Device.flex().autodiff()


def batch(r, k):
    return np.random.default_rng([r, k]).standard_normal((N, FIN)).astype(np.float32) * (1 + r)


def run(broadcast_buffers):
    dev.seed(R)                     # different initial weights per rank: DataParallel broadcasts rank 0's
    model = burn.nn.Sequential(burn.nn.Linear(FIN, FOUT, device=dev), burn.nn.BatchNorm1d(FOUT, device=dev))
    dp = burn_dist.DataParallel(model, broadcast_buffers=broadcast_buffers)
    w, b = model.layers[0].weight.numpy().astype(np.float64), model.layers[0].bias.numpy().astype(np.float64)
    for k in range(K):
        dp(burn.tensor(batch(R, k), device=dev)).sum().backward()
    bn = model.layers[1]
    return w, b, bn.running_mean.numpy(), bn.running_var.numpy(), int(bn.num_batches_tracked.item())


def stats(r, k, w, b):
    h = batch(r, k).astype(np.float64) @ w + b
    return h.mean(axis=0), h.var(axis=0, ddof=1)


def evolve(r, w, b, start=(np.zeros(FOUT), np.ones(FOUT)), steps=range(K)):
    mean, var = start
    for k in steps:
        m, v = stats(r, k, w, b)
        mean, var = 0.9 * mean + 0.1 * m, 0.9 * var + 0.1 * v
    return mean, var


for broadcast_buffers in (True, False):
    w, b, mean, var, tracked = run(broadcast_buffers)
    if broadcast_buffers:
        mean0, var0 = evolve(0, w, b, steps=range(K - 1))           # rank 0's before the last forward
        want = evolve(R, w, b, start=(mean0, var0), steps=[K - 1])
    else:
        want = evolve(R, w, b)
    assert np.allclose(mean, want[0], rtol=1e-5, atol=1e-6), (broadcast_buffers, mean, want[0])
    assert np.allclose(var, want[1], rtol=1e-5, atol=1e-6), (broadcast_buffers, var, want[1])
    assert tracked == K, tracked
    if R > 0:      # the ranks' statistics differ (different batches): the test can tell the cases apart
        assert not np.allclose(want[0], evolve(0, w, b)[0], atol=1e-3)

# evaluation under no_grad exchanges nothing: rank 1 evaluates alone
dp = burn_dist.DataParallel(burn.nn.Sequential(burn.nn.Linear(FIN, FOUT, device=dev), burn.nn.BatchNorm1d(FOUT, device=dev)))
if R == 1:
    with burn.no_grad():
        dp.eval()(burn.tensor(batch(R, 0), device=dev)).numpy()
comm.barrier()
print(f"rank {R}: OK", flush=True)
