"""A few training steps of a small classifier (16 -> 24 -> 5, relu, cross-entropy) on fixed random
data: the optimizer-update tests run the same steps two ways and compare the results."""
from __future__ import annotations

import numpy as np

import burn

nn, F = burn.nn, burn.nn.functional


def classifier_steps(make_opt, *, steps: int, seed: int, device=None):
    """``(train, opt)``: ``train()`` runs ``steps`` steps of the classifier on ``device``'s
    autodiff twin (flex by default), optimizer ``make_opt(model)``, and returns the losses and
    the parameters' values after them."""
    rng = np.random.default_rng(seed)
    xs = rng.random((steps, 8, 16), dtype=np.float32)
    ys = (xs @ rng.standard_normal((16, 5))).argmax(-1)
    dev = (device or burn.Device.flex()).autodiff()
    dev.seed(0)
    model = nn.Sequential(nn.Linear(16, 24, device=dev), nn.ReLU(), nn.Linear(24, 5, device=dev))
    opt = make_opt(model)

    def train():
        losses = []
        for x, y in zip(xs, ys):
            loss = F.cross_entropy(model(burn.tensor(x, device=dev)), burn.tensor(y, device=dev))
            opt.step(loss.backward())
            losses.append(loss.item())
        return losses, [p.numpy() for p in model.parameters()]
    return train, opt
