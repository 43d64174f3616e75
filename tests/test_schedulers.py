"""LR schedulers against torch.optim.lr_scheduler: same settings, same lrs for every group over N steps."""
import numpy as np
import pytest

import burn
from burn.optim import ParamGroup

torch = pytest.importorskip("torch")

LRS = (0.1, 0.03)      # group 0 (path "0"), default group (path "1")


def _pair():
    """A burn optimizer and a torch optimizer with the same two groups and lrs."""
    ps = [burn.nn.Parameter(burn.zeros((1,))), burn.nn.Parameter(burn.zeros((1,)))]
    opt = burn.optim.SGD(ps, lr=LRS[1], groups=[(ParamGroup(paths="0"), {"lr": LRS[0]})])
    assert [g["lr"] for g in opt.param_groups] == list(LRS)
    tps = [torch.zeros(1, requires_grad=True) for _ in range(2)]
    topt = torch.optim.SGD([{"params": [tps[0]], "lr": LRS[0]}, {"params": [tps[1]]}], lr=LRS[1])
    return opt, topt


def _compare(ours, theirs, opt, topt, n=40):
    for i in range(n + 1):
        assert ours.get_last_lr() == pytest.approx(theirs.get_last_lr(), rel=1e-9, abs=1e-15), f"step {i}"
        assert [g["lr"] for g in opt.param_groups] == ours.get_last_lr()
        topt.step()     # torch warns when the scheduler steps before the optimizer
        ours.step()
        theirs.step()


T = torch.optim.lr_scheduler
CASES = {
    "step": (lambda o: burn.optim.StepLR(o, step_size=7, gamma=0.5), lambda o: T.StepLR(o, step_size=7, gamma=0.5)),
    "multistep": (lambda o: burn.optim.MultiStepLR(o, milestones=[12, 3, 20], gamma=0.3),
                  lambda o: T.MultiStepLR(o, milestones=[12, 3, 20], gamma=0.3)),
    "exponential": (lambda o: burn.optim.ExponentialLR(o, gamma=0.93), lambda o: T.ExponentialLR(o, gamma=0.93)),
    "cosine": (lambda o: burn.optim.CosineAnnealingLR(o, T_max=15, eta_min=0.001),
               lambda o: T.CosineAnnealingLR(o, T_max=15, eta_min=0.001)),
    "linear": (lambda o: burn.optim.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=11),
               lambda o: T.LinearLR(o, start_factor=0.2, end_factor=0.9, total_iters=11)),
    "warmup": (lambda o: burn.optim.LinearWarmup(o, warmup_steps=6, start_factor=0.1),
               lambda o: T.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=6)),
    "constant": (lambda o: burn.optim.ConstantLR(o, factor=0.4, total_iters=5),
                 lambda o: T.ConstantLR(o, factor=0.4, total_iters=5)),
    "lambda": (lambda o: burn.optim.LambdaLR(o, lambda s: 1.0 / (1 + s) ** 0.5),
               lambda o: T.LambdaLR(o, lambda s: 1.0 / (1 + s) ** 0.5)),
    "onecycle": (lambda o: burn.optim.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=40),
                 lambda o: T.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=40, cycle_momentum=False)),
    "onecycle3": (lambda o: burn.optim.OneCycleLR(o, max_lr=0.4, total_steps=45, pct_start=0.25,
                                                  anneal_strategy="linear", three_phase=True),
                  lambda o: T.OneCycleLR(o, max_lr=0.4, total_steps=45, pct_start=0.25, anneal_strategy="linear",
                                         three_phase=True, cycle_momentum=False)),
    "warmup_then_cosine": (
        lambda o: burn.optim.SequentialLR(o, [burn.optim.LinearWarmup(o, 5, start_factor=0.05),
                                              burn.optim.CosineAnnealingLR(o, T_max=20, eta_min=1e-4)],
                               milestones=[5]),
        lambda o: T.SequentialLR(o, [T.LinearLR(o, start_factor=0.05, total_iters=5),
                                     T.CosineAnnealingLR(o, T_max=20, eta_min=1e-4)], milestones=[5])),
    "three_sequential": (
        lambda o: burn.optim.SequentialLR(o, [burn.optim.ConstantLR(o, 0.5, total_iters=10),
                                              burn.optim.ExponentialLR(o, gamma=0.9),
                                              burn.optim.StepLR(o, 4, gamma=0.5)], milestones=[4, 15]),
        lambda o: T.SequentialLR(o, [T.ConstantLR(o, 0.5, total_iters=10), T.ExponentialLR(o, gamma=0.9),
                                     T.StepLR(o, 4, gamma=0.5)], milestones=[4, 15])),
    "chained": (
        lambda o: burn.optim.ChainedScheduler([burn.optim.LinearLR(o, 0.3, total_iters=8),
                                               burn.optim.ExponentialLR(o, gamma=0.95),
                                               burn.optim.MultiStepLR(o, [10, 25], gamma=0.5)]),
        lambda o: T.ChainedScheduler([T.LinearLR(o, 0.3, total_iters=8), T.ExponentialLR(o, gamma=0.95),
                                      T.MultiStepLR(o, [10, 25], gamma=0.5)])),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_scheduler_matches_torch(case):
    make, tmake = CASES[case]
    opt, topt = _pair()
    ours, theirs = make(opt), tmake(topt)
    _compare(ours, theirs, opt, topt, n=39 if case.startswith("onecycle") else 40)


def test_the_comparison_can_fail():
    opt, topt = _pair()
    with pytest.raises(AssertionError):
        _compare(burn.optim.StepLR(opt, 7, gamma=0.5), T.StepLR(topt, 6, gamma=0.5), opt, topt)


def test_scheduled_sgd_trajectory_matches_torch():
    w = burn.nn.Parameter(burn.tensor([1.0, -2.0], device=burn.Device.flex().autodiff()))
    opt = burn.optim.SGD([w], lr=0.1, momentum=0.9)
    sched = burn.optim.SequentialLR(opt, [burn.optim.LinearWarmup(opt, 3, start_factor=0.2),
                                          burn.optim.CosineAnnealingLR(opt, T_max=8)], milestones=[3])
    tw = torch.tensor([1.0, -2.0], dtype=torch.float64, requires_grad=True)
    topt = torch.optim.SGD([tw], lr=0.1, momentum=0.9)
    tsched = T.SequentialLR(topt, [T.LinearLR(topt, 0.2, total_iters=3), T.CosineAnnealingLR(topt, T_max=8)],
                            milestones=[3])
    for _ in range(10):
        opt.step((w * w).sum().backward())
        sched.step()
        topt.zero_grad()
        (tw * tw).sum().backward()
        topt.step()
        tsched.step()
    np.testing.assert_allclose(w.numpy(), tw.detach().numpy(), rtol=1e-5)


def test_state_dict_resumes_and_checks():
    opt, _ = _pair()
    sched = burn.optim.CosineAnnealingLR(opt, T_max=10)
    for _ in range(4):
        sched.step()
    state = sched.state_dict()
    opt2, _ = _pair()
    sched2 = burn.optim.CosineAnnealingLR(opt2, T_max=10)
    sched2.load_state_dict(state)
    assert sched2.get_last_lr() == sched.get_last_lr() and [g["lr"] for g in opt2.param_groups] == sched.get_last_lr()
    sched.step(), sched2.step()
    assert sched2.get_last_lr() == sched.get_last_lr()
    with pytest.raises(burn.BurnError, match="state is of a CosineAnnealingLR"):
        burn.optim.StepLR(opt2, 3).load_state_dict(state)


def test_scheduler_errors():
    opt, _ = _pair()
    with pytest.raises(burn.BurnError, match="not a pure factor"):
        burn.optim.ChainedScheduler([burn.optim.CosineAnnealingLR(opt, 5, eta_min=0.1)])
    with pytest.raises(burn.BurnError, match="2 schedulers need 1 milestones"):
        burn.optim.SequentialLR(opt, [burn.optim.StepLR(opt, 2), burn.optim.StepLR(opt, 3)], milestones=[])
    with pytest.raises(burn.BurnError, match="step_size must be >= 1"):
        burn.optim.StepLR(opt, 0)
    s = burn.optim.OneCycleLR(opt, max_lr=1.0, total_steps=3)
    for _ in range(3):
        s.step()
    with pytest.raises(burn.BurnError, match="more than total_steps=3"):
        s.step()
