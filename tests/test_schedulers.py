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
        # momentum too: OneCycleLR cycles it (torch's cycle_momentum=True default), the others leave it
        assert [g["momentum"] for g in opt.param_groups] == pytest.approx(
            [g["momentum"] for g in topt.param_groups], rel=1e-9), f"step {i}"
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
                 lambda o: T.OneCycleLR(o, max_lr=[0.5, 0.2], total_steps=40)),
    "onecycle3": (lambda o: burn.optim.OneCycleLR(o, max_lr=0.4, total_steps=45, pct_start=0.25,
                                                  anneal_strategy="linear", three_phase=True),
                  lambda o: T.OneCycleLR(o, max_lr=0.4, total_steps=45, pct_start=0.25, anneal_strategy="linear",
                                         three_phase=True)),
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


def _copied_linear(rng, device):
    w = rng.standard_normal((4, 3)).astype(np.float32)
    b = rng.standard_normal(3).astype(np.float32)
    lin = burn.nn.Linear(4, 3, device=device)
    lin.weight.assign_(burn.tensor(w, device=device))
    lin.bias.assign_(burn.tensor(b, device=device))
    tlin = torch.nn.Linear(4, 3)
    with torch.no_grad():
        tlin.weight.copy_(torch.tensor(w.T))
        tlin.bias.copy_(torch.tensor(b))
    return lin, tlin


@pytest.mark.parametrize("kind", ["adamw", "sgd", "adamw_no_cycle", "adam_three_phase"])
def test_onecycle_training_matches_torch_defaults(kind):
    """20 steps with OneCycleLR at its defaults (momentum cycled) against torch, copied weights."""
    rng = np.random.default_rng(3)
    dev = burn.Device.flex().autodiff()
    lin, tlin = _copied_linear(rng, dev)
    x = rng.standard_normal((16, 4)).astype(np.float32)
    y = rng.standard_normal((16, 3)).astype(np.float32)
    kw = {"cycle_momentum": False} if kind == "adamw_no_cycle" else {"three_phase": True} if "three" in kind else {}
    if kind == "sgd":
        opt, topt = burn.optim.SGD(lin, lr=0.1), torch.optim.SGD(tlin.parameters(), lr=0.1)
    elif kind == "adam_three_phase":
        opt, topt = burn.optim.Adam(lin, lr=0.1), torch.optim.Adam(tlin.parameters(), lr=0.1)
    else:
        opt, topt = burn.optim.AdamW(lin, lr=0.1), torch.optim.AdamW(tlin.parameters(), lr=0.1)
    sched = burn.optim.OneCycleLR(opt, max_lr=0.05, total_steps=20, **kw)
    tsched = T.OneCycleLR(topt, max_lr=0.05, total_steps=20, **kw)
    key = "momentum" if kind == "sgd" else "betas"
    for step in range(20):
        assert opt.param_groups[0][key] == pytest.approx(topt.param_groups[0][key], rel=1e-12), step
        loss = burn.nn.functional.mse_loss(lin(burn.tensor(x, device=dev)), burn.tensor(y, device=dev))
        opt.step(loss.backward())
        sched.step()
        topt.zero_grad()
        torch.nn.functional.mse_loss(tlin(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
        tsched.step()
    np.testing.assert_allclose(lin.weight.numpy(), tlin.weight.detach().numpy().T, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(lin.bias.numpy(), tlin.bias.detach().numpy(), rtol=1e-5, atol=1e-6)


def test_onecycle_momentum_needs_a_momentum_and_resumes():
    opt, _ = _pair()
    s = burn.optim.OneCycleLR(opt, max_lr=1.0, total_steps=10, base_momentum=[0.8, 0.7], max_momentum=0.9)
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.9]
    for _ in range(2):
        s.step()
    assert [g["momentum"] for g in opt.param_groups] == pytest.approx([0.8, 0.7])     # the lr's peak (step 2)
    opt2, _ = _pair()
    s2 = burn.optim.OneCycleLR(opt2, max_lr=1.0, total_steps=10, base_momentum=[0.8, 0.7], max_momentum=0.9)
    s2.load_state_dict(s.state_dict())
    assert [g["momentum"] for g in opt2.param_groups] == [g["momentum"] for g in opt.param_groups]
    with pytest.raises(burn.BurnError, match="2 base_momentum and 1 max_momentum values for 2 groups"):
        burn.optim.OneCycleLR(opt, max_lr=1.0, total_steps=10, base_momentum=[0.8, 0.7], max_momentum=[0.9])

    class NoMomentum(burn.optim.Optimizer):
        def update(self, p, g, state, group):
            return p - g * group["lr"]

    plain = NoMomentum([burn.nn.Parameter(burn.zeros((1,)))], lr=0.1)
    with pytest.raises(burn.BurnError, match="cycle_momentum=False"):
        burn.optim.OneCycleLR(plain, max_lr=1.0, total_steps=10)
    burn.optim.OneCycleLR(plain, max_lr=1.0, total_steps=10, cycle_momentum=False)
