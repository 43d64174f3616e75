"""ReduceLROnPlateau against torch's over scripted metric sequences: the lr of every group after each step."""
from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import burn

LRS = (0.1, 0.02)


def _opts():
    ps = [burn.nn.Parameter(burn.zeros((1,))) for _ in range(2)]
    opt = burn.optim.SGD(ps, lr=LRS[1], groups=[(burn.optim.ParamGroup(paths="0"), {"lr": LRS[0]})])
    tps = [torch.zeros(1, requires_grad=True) for _ in range(2)]
    topt = torch.optim.SGD([{"params": [tps[0]], "lr": LRS[0]}, {"params": [tps[1]]}], lr=LRS[1])
    return opt, topt


_rng = np.random.default_rng(0)
SEQUENCES = {
    "plateaus": [5, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2],
    "noisy": list(np.round(3 + np.cumsum(_rng.standard_normal(60) * 0.1), 3)),
    "tiny_gains": [1.0 - 1e-5 * i for i in range(40)],         # below the relative threshold: no progress
    "rising": [0.1 * i for i in range(30)],
}
CONFIGS = [
    {},
    dict(patience=2),
    dict(patience=1, factor=0.5, cooldown=2),
    dict(mode="max", patience=2, factor=0.3),
    dict(patience=0, threshold=0.05, threshold_mode="abs"),
    dict(mode="max", patience=1, threshold=0.01, threshold_mode="abs", cooldown=1),
    dict(patience=0, factor=0.5, min_lr=0.004),
    dict(patience=0, factor=0.5, min_lr=[0.03, 0.001]),
    dict(patience=0, factor=0.9999999, eps=1e-6),            # changes under eps are skipped
]


@pytest.mark.parametrize("seq", sorted(SEQUENCES))
@pytest.mark.parametrize("ci", range(len(CONFIGS)))
def test_lrs_follow_torch(seq, ci):
    opt, topt = _opts()
    sched = burn.optim.ReduceLROnPlateau(opt, **CONFIGS[ci])
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **CONFIGS[ci])
    for i, m in enumerate(SEQUENCES[seq]):
        sched.step(m if i % 2 else burn.tensor(m, dtype=burn.float64))      # a number or a 0-d tensor
        tsched.step(m)
        want = [g["lr"] for g in topt.param_groups]
        assert sched.get_last_lr() == pytest.approx(want, rel=1e-12), (seq, i)
        assert [g["lr"] for g in opt.param_groups] == pytest.approx(want, rel=1e-12)
        assert sched.num_bad_steps == tsched.num_bad_epochs and sched.cooldown_counter == tsched.cooldown_counter
        assert sched.best == tsched.best


def test_state_round_trips_through_a_checkpoint(tmp_path):
    opt, topt = _opts()
    cfg = dict(patience=1, factor=0.5, cooldown=1)
    sched = burn.optim.ReduceLROnPlateau(opt, **cfg)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, **cfg)
    seq = SEQUENCES["plateaus"]
    for m in seq[:9]:
        sched.step(m)
        tsched.step(m)
    path = os.path.join(tmp_path, "ck.safetensors")
    burn.optim.save(opt, path, scheduler=sched)
    opt2, _ = _opts()
    sched2 = burn.optim.ReduceLROnPlateau(opt2, **cfg)
    burn.optim.load(opt2, path, scheduler=sched2)
    assert sched2.get_last_lr() == sched.get_last_lr() and sched2.best == sched.best
    for m in seq[9:]:
        sched2.step(m)
        tsched.step(m)
        assert sched2.get_last_lr() == pytest.approx([g["lr"] for g in topt.param_groups], rel=1e-12)


def test_bad_settings_and_missing_metric_are_named():
    opt, _ = _opts()
    with pytest.raises(burn.BurnError, match="mode must be 'min' or 'max'"):
        burn.optim.ReduceLROnPlateau(opt, mode="up")
    with pytest.raises(burn.BurnError, match="threshold_mode"):
        burn.optim.ReduceLROnPlateau(opt, threshold_mode="pct")
    with pytest.raises(burn.BurnError, match="factor must be in"):
        burn.optim.ReduceLROnPlateau(opt, factor=1.0)
    with pytest.raises(burn.BurnError, match="min_lr has 3 values, the optimizer has 2 groups"):
        burn.optim.ReduceLROnPlateau(opt, min_lr=[0, 0, 0])
    with pytest.raises(burn.BurnError, match="needs the monitored value"):
        burn.optim.ReduceLROnPlateau(opt).step()
    with pytest.raises(burn.BurnError, match="state is of a StepLR"):
        burn.optim.ReduceLROnPlateau(opt).load_state_dict({"type": "StepLR"})


def test_learner_steps_a_plateau_scheduler_once_per_epoch_with_the_monitored_value():
    """The Learner hands ReduceLROnPlateau the epoch's loss (it used to call step() with none);
    the lrs it leaves match torch's scheduler fed the same recorded losses."""
    dev = burn.Device.flex().autodiff()
    dev.seed(0)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((64, 2)).astype(np.float32)
    y = (X[:, 0] > X[:, 1]).astype(np.int64)
    dl = burn.data.DataLoader(burn.data.ArrayDataset(X, y), batch_size=16, shuffle=True, seed=0, device=dev)
    model = burn.nn.Linear(2, 2, device=dev)
    opt = burn.optim.SGD(model, lr=0.5)
    sched = burn.optim.ReduceLROnPlateau(opt, factor=0.5, patience=0, threshold=0.2)
    lrs = []
    learner = burn.train.Learner(model, opt, burn.nn.functional.cross_entropy, scheduler=sched, progress=False)
    for _ in range(6):
        learner.fit(dl, epochs=learner.epoch + 1)
        lrs.append(opt.param_groups[0]["lr"])
    losses = list(learner.history["train_loss"])
    topt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
    tsched = torch.optim.lr_scheduler.ReduceLROnPlateau(topt, factor=0.5, patience=0, threshold=0.2)
    want = []
    for v in losses:
        tsched.step(v)
        want.append(topt.param_groups[0]["lr"])
    assert lrs == pytest.approx(want) and len(set(want)) > 1, (lrs, want, losses)
    with pytest.raises(burn.BurnError, match="monitors 'valid_accuracy'"):
        burn.train.Learner(model, opt, burn.nn.functional.cross_entropy, progress=False,
                           scheduler=burn.optim.ReduceLROnPlateau(opt), plateau_monitor="valid_accuracy").fit(dl, 1)
    with pytest.raises(burn.BurnError, match="plateau_monitor is for"):
        burn.train.Learner(model, opt, burn.nn.functional.cross_entropy, progress=False, plateau_monitor="x")
