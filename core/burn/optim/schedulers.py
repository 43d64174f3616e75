"""Learning-rate schedulers with PyTorch's conventions and values (``torch.optim.lr_scheduler``).

A scheduler sets ``group["lr"]`` of every optimizer group from that group's
base lr (``group["initial_lr"]``, recorded by the first scheduler built on
the optimizer) and a step count: building it applies step 0, each
``sched.step()`` advances one step (call it per batch or per epoch, as you
count). Rates come from closed forms of the step count, so a scheduler's
whole state is ``last_step`` and the base lrs (``state_dict()``), and
composed schedulers need no bookkeeping: :class:`SequentialLR` runs one
scheduler after another (e.g. warmup then cosine), :class:`ChainedScheduler`
multiplies their factors.
"""
from __future__ import annotations

import bisect
import math

from .. import capture
from ..errors import BurnError, CaptureError

__all__ = ["LRScheduler", "LambdaLR", "StepLR", "MultiStepLR", "ExponentialLR", "CosineAnnealingLR",
           "LinearLR", "LinearWarmup", "ConstantLR", "OneCycleLR", "SequentialLR", "ChainedScheduler",
           "ReduceLROnPlateau"]


class LRScheduler:
    """Base class: subclasses define ``factor(step)`` (lr = base lr x factor) or ``lr_at(step, base)``.

    Example:
        >>> import burn
        >>> w = burn.nn.Parameter(burn.zeros((1,)))
        >>> opt = burn.optim.SGD([w], lr=1.0)
        >>> sched = burn.optim.StepLR(opt, step_size=2, gamma=0.5)
        >>> lrs = [sched.get_last_lr()[0]] + [(sched.step(), sched.get_last_lr()[0])[1] for _ in range(4)]
        >>> assert lrs == [1.0, 1.0, 0.5, 0.5, 0.25] and opt.lr == 0.25
    """

    def __init__(self, optimizer):
        if not hasattr(optimizer, "param_groups"):
            raise BurnError(f"{type(self).__name__}: expected a burn.optim optimizer, got {type(optimizer).__name__}")
        self.optimizer = optimizer
        for g in optimizer.param_groups:
            g.setdefault("initial_lr", g["lr"])
        self.base_lrs = [g["initial_lr"] for g in optimizer.param_groups]
        self.last_step = 0
        self._apply()

    def factor(self, step: int) -> float:
        """The multiplier of the base lr at ``step`` (schedulers that :class:`ChainedScheduler` can combine).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.StepLR(opt, step_size=2, gamma=0.5).factor(4) == 0.25
        """
        raise NotImplementedError(f"{type(self).__name__} defines lr_at, not a pure factor")

    def lr_at(self, step: int, base_lr: float) -> float:
        """The lr of a group with base lr ``base_lr`` at ``step``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.ExponentialLR(opt, gamma=0.5).lr_at(3, 2.0) == 0.25
        """
        return base_lr * self.factor(step)

    def _apply(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.base_lrs):
            raise BurnError(f"{type(self).__name__}: the optimizer has {len(groups)} groups, the scheduler "
                            f"was built for {len(self.base_lrs)}")
        self._last_lr = [self.lr_at(self.last_step, b) for b in self.base_lrs]
        for g, lr in zip(groups, self._last_lr):
            g["lr"] = lr

    def step(self) -> None:
        """Advance one step and set every group's lr.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> sched = burn.optim.ExponentialLR(opt, gamma=0.5)
            >>> sched.step()
            >>> assert sched.last_step == 1 and opt.lr == 0.5
        """
        self._advance()
        # inside a captured function: a replay advances the schedule as the eager call does
        # (the optimizer reads the lr it sets through host values, in trace order)
        capture.on_replay(self._advance)

    def _advance(self) -> None:
        self.last_step += 1
        self._apply()

    def get_last_lr(self) -> list[float]:
        """The lr of each group (``opt.param_groups`` order) set by the last step.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=0.1)
            >>> assert burn.optim.ConstantLR(opt, factor=0.5, total_iters=2).get_last_lr() == [0.05]
        """
        return list(self._last_lr)

    def state_dict(self) -> dict:
        """JSON-able position: type, ``last_step`` and base lrs.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=0.1)
            >>> assert burn.optim.StepLR(opt, 3).state_dict() == {"type": "StepLR", "last_step": 0, "base_lrs": [0.1]}
        """
        return {"type": type(self).__name__, "last_step": self.last_step, "base_lrs": list(self.base_lrs)}

    def load_state_dict(self, state: dict) -> None:
        """Resume at the position :meth:`state_dict` recorded (sets the groups' lrs).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> sched = burn.optim.ExponentialLR(opt, gamma=0.5)
            >>> sched.load_state_dict({"type": "ExponentialLR", "last_step": 2, "base_lrs": [1.0]})
            >>> assert opt.lr == 0.25
        """
        if state.get("type") != type(self).__name__:
            raise BurnError(f"{type(self).__name__}.load_state_dict: the state is of a {state.get('type')}")
        if len(state["base_lrs"]) != len(self.optimizer.param_groups):
            raise BurnError(f"{type(self).__name__}.load_state_dict: saved for {len(state['base_lrs'])} groups, "
                            f"the optimizer has {len(self.optimizer.param_groups)}")
        self.base_lrs = [float(b) for b in state["base_lrs"]]
        for g, b in zip(self.optimizer.param_groups, self.base_lrs):
            g["initial_lr"] = b
        self.last_step = int(state["last_step"])
        self._apply()

    def __repr__(self):
        return f"{type(self).__name__}(last_step={self.last_step}, lr={self._last_lr})"


class LambdaLR(LRScheduler):
    """lr = base lr x ``fn(step)`` (``torch.optim.lr_scheduler.LambdaLR`` with one function).

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=2.0)
        >>> sched = burn.optim.LambdaLR(opt, lambda s: 1 / (s + 1))
        >>> sched.step()
        >>> assert opt.lr == 1.0
    """

    def __init__(self, optimizer, fn):
        if not callable(fn):
            raise BurnError(f"LambdaLR: fn must be callable step -> factor, got {type(fn).__name__}")
        self.fn = fn
        super().__init__(optimizer)

    def factor(self, step):
        """``fn(step)``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.LambdaLR(opt, lambda s: 0.5 ** s).factor(3) == 0.125
        """
        return float(self.fn(step))


class StepLR(LRScheduler):
    """Multiply by ``gamma`` every ``step_size`` steps: factor ``gamma ** (step // step_size)``.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> assert burn.optim.StepLR(opt, step_size=3, gamma=0.1).factor(7) == 0.1 ** 2
    """

    def __init__(self, optimizer, step_size: int, gamma: float = 0.1):
        if int(step_size) < 1:
            raise BurnError(f"StepLR: step_size must be >= 1, got {step_size}")
        self.step_size, self.gamma = int(step_size), float(gamma)
        super().__init__(optimizer)

    def factor(self, step):
        """``gamma ** (step // step_size)``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.StepLR(opt, step_size=2, gamma=0.5).factor(5) == 0.25
        """
        return self.gamma ** (step // self.step_size)


class MultiStepLR(LRScheduler):
    """Multiply by ``gamma`` at each milestone: factor ``gamma ** (number of milestones <= step)``.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.MultiStepLR(opt, milestones=[2, 5], gamma=0.5)
        >>> assert [s.factor(i) for i in (1, 2, 5)] == [1.0, 0.5, 0.25]
    """

    def __init__(self, optimizer, milestones, gamma: float = 0.1):
        self.milestones = sorted(int(m) for m in milestones)
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def factor(self, step):
        """``gamma`` to the number of milestones reached by ``step``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.MultiStepLR(opt, milestones=[3], gamma=0.1).factor(3) == 0.1
        """
        return self.gamma ** bisect.bisect_right(self.milestones, step)


class ExponentialLR(LRScheduler):
    """Multiply by ``gamma`` every step: factor ``gamma ** step``.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> assert burn.optim.ExponentialLR(opt, gamma=0.9).factor(2) == 0.9 ** 2
    """

    def __init__(self, optimizer, gamma: float):
        self.gamma = float(gamma)
        super().__init__(optimizer)

    def factor(self, step):
        """``gamma ** step``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.ExponentialLR(opt, gamma=0.5).factor(3) == 0.125
        """
        return self.gamma ** step


class CosineAnnealingLR(LRScheduler):
    """``eta_min + (base - eta_min) * (1 + cos(pi * step / T_max)) / 2`` (keeps oscillating past ``T_max``,
    as PyTorch's does).

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.CosineAnnealingLR(opt, T_max=10, eta_min=0.1)
        >>> assert abs(s.lr_at(5, 1.0) - 0.55) < 1e-12 and abs(s.lr_at(10, 1.0) - 0.1) < 1e-12
    """

    def __init__(self, optimizer, T_max: int, eta_min: float = 0.0):
        if int(T_max) < 1:
            raise BurnError(f"CosineAnnealingLR: T_max must be >= 1, got {T_max}")
        self.T_max, self.eta_min = int(T_max), float(eta_min)
        super().__init__(optimizer)

    def factor(self, step):
        """The cosine factor ``(1 + cos(pi * step / T_max)) / 2``; only defined for ``eta_min=0``
        (otherwise raises BurnError, as the lr is then not a multiple of the base lr).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.CosineAnnealingLR(opt, T_max=4).factor(2) == 0.5
        """
        if self.eta_min:
            raise BurnError("CosineAnnealingLR with eta_min != 0 is not a pure factor of the base lr; "
                            "it cannot be chained (use SequentialLR, or eta_min=0)")
        return (1 + math.cos(math.pi * step / self.T_max)) / 2

    def lr_at(self, step, base_lr):
        """``eta_min + (base_lr - eta_min) * (1 + cos(pi * step / T_max)) / 2``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.CosineAnnealingLR(opt, T_max=4, eta_min=0.2).lr_at(4, 1.0) == 0.2
        """
        return self.eta_min + (base_lr - self.eta_min) * (1 + math.cos(math.pi * step / self.T_max)) / 2


class LinearLR(LRScheduler):
    """Factor moving linearly from ``start_factor`` to ``end_factor`` over ``total_iters`` steps, then constant.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.LinearLR(opt, start_factor=0.5, end_factor=1.0, total_iters=4)
        >>> assert [s.factor(i) for i in (0, 2, 4, 9)] == [0.5, 0.75, 1.0, 1.0]
    """

    def __init__(self, optimizer, start_factor: float = 1 / 3, end_factor: float = 1.0, total_iters: int = 5):
        if int(total_iters) < 1:
            raise BurnError(f"{type(self).__name__}: total_iters must be >= 1, got {total_iters}")
        if not (0 <= start_factor <= 1 and 0 <= end_factor <= 1):
            raise BurnError(f"{type(self).__name__}: start_factor and end_factor must lie in [0, 1], "
                            f"got {start_factor}, {end_factor}")
        self.start_factor, self.end_factor = float(start_factor), float(end_factor)
        self.total_iters = int(total_iters)
        super().__init__(optimizer)

    def factor(self, step):
        """Linear from ``start_factor`` (step 0) to ``end_factor`` (step ``total_iters`` and after).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> assert burn.optim.LinearLR(opt, 0.0, 1.0, total_iters=4).factor(1) == 0.25
        """
        return self.start_factor + (self.end_factor - self.start_factor) * min(self.total_iters, step) / self.total_iters


class LinearWarmup(LinearLR):
    """Linear warmup from ``start_factor`` x base lr to the base lr over ``warmup_steps`` steps
    (``LinearLR(start_factor, 1.0, warmup_steps)``); compose it with :class:`SequentialLR`.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.LinearWarmup(opt, warmup_steps=4)
        >>> assert opt.lr == 0.0 and s.factor(2) == 0.5 and s.factor(10) == 1.0
    """

    def __init__(self, optimizer, warmup_steps: int, start_factor: float = 0.0):
        super().__init__(optimizer, start_factor=start_factor, end_factor=1.0, total_iters=warmup_steps)


class ConstantLR(LRScheduler):
    """Factor ``factor`` for the first ``total_iters`` steps, then 1.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.ConstantLR(opt, factor=0.25, total_iters=2)
        >>> assert [s.factor(i) for i in range(3)] == [0.25, 0.25, 1.0]
    """

    def __init__(self, optimizer, factor: float = 1 / 3, total_iters: int = 5):
        if not 0 <= factor <= 1:
            raise BurnError(f"ConstantLR: factor must lie in [0, 1], got {factor}")
        self._factor, self.total_iters = float(factor), int(total_iters)
        super().__init__(optimizer)

    def factor(self, step):
        """``factor`` before ``total_iters`` steps, 1 after.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> s = burn.optim.ConstantLR(opt, factor=0.5, total_iters=1)
            >>> assert (s.factor(0), s.factor(1)) == (0.5, 1.0)
        """
        return 1.0 if step >= self.total_iters else self._factor


class OneCycleLR(LRScheduler):
    """The 1cycle policy (PyTorch's ``OneCycleLR``, cosine or linear annealing, two or three phases).

    Rises from ``max_lr / div_factor`` to ``max_lr`` over ``pct_start`` of
    ``total_steps``, then falls to ``max_lr / div_factor / final_div_factor``.
    ``max_lr`` is one number or one per group; the optimizer's lrs are not
    used. As PyTorch's defaults, momentum cycles inversely (``cycle_momentum=True``):
    from ``max_momentum`` down to ``base_momentum`` while the lr rises, and back
    while it falls. It is ``betas[0]`` of Adam/AdamW and ``momentum`` of SGD (set
    from the first step, even where the optimizer was built with ``momentum=0``,
    as in PyTorch); ``base_momentum``/``max_momentum`` may be one number or one per group.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.OneCycleLR(opt, max_lr=1.0, total_steps=10)
        >>> assert abs(opt.lr - 1 / 25) < 1e-12 and abs(s.lr_at(2, 1 / 25) - 1.0) < 1e-12
        >>> assert opt.param_groups[0]["momentum"] == 0.95       # max_momentum while the lr is lowest
    """

    def __init__(self, optimizer, max_lr, total_steps: int, pct_start: float = 0.3, anneal_strategy: str = "cos",
                 cycle_momentum: bool = True, base_momentum=0.85, max_momentum=0.95,
                 div_factor: float = 25.0, final_div_factor: float = 1e4, three_phase: bool = False):
        if int(total_steps) < 1:
            raise BurnError(f"OneCycleLR: total_steps must be >= 1, got {total_steps}")
        if not 0 <= pct_start <= 1:
            raise BurnError(f"OneCycleLR: pct_start must lie in [0, 1], got {pct_start}")
        if anneal_strategy not in ("cos", "linear"):
            raise BurnError(f"OneCycleLR: anneal_strategy must be 'cos' or 'linear', got {anneal_strategy!r}")
        groups = optimizer.param_groups
        max_lrs = list(max_lr) if isinstance(max_lr, (list, tuple)) else [max_lr] * len(groups)
        if len(max_lrs) != len(groups):
            raise BurnError(f"OneCycleLR: got {len(max_lrs)} max_lr values for {len(groups)} groups")
        self.total_steps, self.anneal_strategy = int(total_steps), anneal_strategy
        n = float(pct_start * self.total_steps)
        if three_phase:
            self._phases = [(n - 1, "initial", "max"), (2 * n - 2, "max", "initial"),
                            (self.total_steps - 1, "initial", "min")]
        else:
            self._phases = [(n - 1, "initial", "max"), (self.total_steps - 1, "max", "min")]
        for g, m in zip(groups, max_lrs):
            g["initial_lr"] = float(m) / div_factor
        self._div, self._final = float(div_factor), float(final_div_factor)
        self._momenta = _cycled_momenta(groups, cycle_momentum, base_momentum, max_momentum)
        super().__init__(optimizer)

    def _apply(self) -> None:
        super()._apply()
        for g, (key, base_m, max_m) in zip(self.optimizer.param_groups, self._momenta or ()):
            # momentum mirrors the lr: max_momentum at the lr's "initial" and "min" levels, base at its peak
            m = self._anneal(self.last_step, {"initial": max_m, "max": base_m, "min": max_m})
            g[key] = (m, *g[key][1:]) if key == "betas" else m

    def _anneal(self, step, levels):
        start = 0.0
        for i, (end, a, b) in enumerate(self._phases):
            if step <= end or i == len(self._phases) - 1:
                pct = (step - start) / (end - start)
                lo, hi = levels[a], levels[b]
                if self.anneal_strategy == "cos":
                    return hi + (lo - hi) / 2.0 * (math.cos(math.pi * pct) + 1)
                return (hi - lo) * pct + lo
            start = end
        raise AssertionError("unreachable")

    def lr_at(self, step, base_lr):
        """The 1cycle lr at ``step``, where ``base_lr`` is the group's initial lr ``max_lr / div_factor``.

        Raises BurnError past ``total_steps``.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> s = burn.optim.OneCycleLR(opt, max_lr=1.0, total_steps=10)
            >>> assert abs(s.lr_at(9, 1 / 25) - 4e-6) < 1e-12   # last step: max_lr / div_factor / final_div_factor
        """
        if step > self.total_steps:
            raise BurnError(f"OneCycleLR: stepped {step} times, more than total_steps={self.total_steps}")
        return self._anneal(step, {"initial": base_lr, "max": base_lr * self._div, "min": base_lr / self._final})


def _cycled_momenta(groups, cycle, base_momentum, max_momentum):
    """Per group ``(key, base, max)`` of the momentum OneCycleLR cycles, or None when it does not.

    >>> _cycled_momenta([{"betas": (0.9, 0.999)}], True, 0.85, 0.95)
    [('betas', 0.85, 0.95)]
    """
    if not cycle:
        return None
    n = len(groups)
    bases = list(base_momentum) if isinstance(base_momentum, (list, tuple)) else [base_momentum] * n
    maxes = list(max_momentum) if isinstance(max_momentum, (list, tuple)) else [max_momentum] * n
    if len(bases) != n or len(maxes) != n:
        raise BurnError(f"OneCycleLR: got {len(bases)} base_momentum and {len(maxes)} max_momentum values "
                        f"for {n} groups")
    out = []
    for i, (g, b, m) in enumerate(zip(groups, bases, maxes)):
        key = "betas" if "betas" in g else "momentum" if "momentum" in g else None
        if key is None:
            raise BurnError(f"OneCycleLR: cycle_momentum=True needs an optimizer with 'momentum' or 'betas' "
                            f"(group {i} has neither); pass cycle_momentum=False")
        if not (0 <= float(b) < 1 and 0 <= float(m) < 1):
            raise BurnError(f"OneCycleLR: base_momentum and max_momentum must lie in [0, 1), got {b} and {m}")
        out.append((key, float(b), float(m)))
    return out


class SequentialLR(LRScheduler):
    """Run ``schedulers`` one after another, switching at ``milestones`` (global steps); each
    scheduler counts its own steps from 0 when it starts, as in PyTorch.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> warm = burn.optim.LinearWarmup(opt, warmup_steps=2)
        >>> cos = burn.optim.CosineAnnealingLR(opt, T_max=4)
        >>> s = burn.optim.SequentialLR(opt, [warm, cos], milestones=[2])
        >>> lrs = [s.get_last_lr()[0]] + [(s.step(), s.get_last_lr()[0])[1] for _ in range(4)]
        >>> assert [round(x, 6) for x in lrs] == [0.0, 0.5, 1.0, 0.853553, 0.5]
    """

    def __init__(self, optimizer, schedulers, milestones):
        self.schedulers, self.milestones = list(schedulers), [int(m) for m in milestones]
        if len(self.milestones) != len(self.schedulers) - 1:
            raise BurnError(f"SequentialLR: {len(self.schedulers)} schedulers need {len(self.schedulers) - 1} "
                            f"milestones, got {len(self.milestones)}")
        if self.milestones != sorted(self.milestones):
            raise BurnError(f"SequentialLR: milestones must increase, got {self.milestones}")
        for s in self.schedulers:
            if s.optimizer is not optimizer:
                raise BurnError("SequentialLR: every scheduler must drive the same optimizer")
        super().__init__(optimizer)

    def lr_at(self, step, base_lr):
        """The lr of the scheduler active at ``step``, counted from that scheduler's start.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> s = burn.optim.SequentialLR(opt, [burn.optim.ConstantLR(opt, 0.5, total_iters=9),
            ...                                   burn.optim.ExponentialLR(opt, gamma=0.5)], milestones=[2])
            >>> assert [s.lr_at(i, 1.0) for i in (1, 2, 3)] == [0.5, 1.0, 0.5]
        """
        i = bisect.bisect_right(self.milestones, step)
        return self.schedulers[i].lr_at(step - (self.milestones[i - 1] if i else 0), base_lr)


class ChainedScheduler(LRScheduler):
    """Apply several schedulers at once: the base lr times the product of their factors
    (PyTorch's ``ChainedScheduler`` for multiplicative schedulers).

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> s = burn.optim.ChainedScheduler([burn.optim.ConstantLR(opt, 0.5, total_iters=2),
        ...                                  burn.optim.ExponentialLR(opt, gamma=0.9)])
        >>> s.step()
        >>> assert abs(opt.lr - 0.5 * 0.9) < 1e-12
    """

    def __init__(self, schedulers):
        self.schedulers = list(schedulers)
        if not self.schedulers:
            raise BurnError("ChainedScheduler: needs at least one scheduler")
        opt = self.schedulers[0].optimizer
        if any(s.optimizer is not opt for s in self.schedulers):
            raise BurnError("ChainedScheduler: every scheduler must drive the same optimizer")
        for s in self.schedulers:
            s.factor(0)   # fail now for schedulers that are not a pure factor
        super().__init__(opt)

    def factor(self, step):
        """The product of the schedulers' factors.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> s = burn.optim.ChainedScheduler([burn.optim.ConstantLR(opt, 0.5, total_iters=2),
            ...                                  burn.optim.ExponentialLR(opt, gamma=0.5)])
            >>> assert s.factor(1) == 0.25
        """
        return math.prod(s.factor(step) for s in self.schedulers)


class ReduceLROnPlateau:
    """Multiply every group's lr by ``factor`` once the metric passed to ``step(metric)`` has not
    improved for more than ``patience`` steps, as ``torch.optim.lr_scheduler.ReduceLROnPlateau``.

    ``mode="min"`` watches for decreases (a loss), ``"max"`` for increases (an accuracy).
    Improvement means beating the best value by ``threshold``: relative (``best * (1 -+ threshold)``,
    ``threshold_mode="rel"``) or absolute (``best -+ threshold``, ``"abs"``). After a reduction,
    ``cooldown`` steps pass before bad steps count again. A group's lr never goes below its
    ``min_lr`` (one number or one per group), and a change smaller than ``eps`` is skipped.

    Unlike the closed-form schedulers it depends on the metrics seen, so its ``state_dict`` holds
    the best value and the counters; the lrs themselves live in the optimizer's groups (saved with
    the optimizer). It needs the metric at each step, so ``Learner`` cannot step it for you.

    Example:
        >>> import burn
        >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
        >>> sched = burn.optim.ReduceLROnPlateau(opt, factor=0.5, patience=1)
        >>> for loss in [3.0, 2.0, 2.0, 2.0, 1.0, 1.0, 1.0]:
        ...     sched.step(loss)
        >>> assert sched.get_last_lr() == [0.25]       # two plateaus of two steps each halve the lr
    """

    def __init__(self, optimizer, mode: str = "min", factor: float = 0.1, patience: int = 10,
                 threshold: float = 1e-4, threshold_mode: str = "rel", cooldown: int = 0, min_lr=0.0,
                 eps: float = 1e-8):
        name = type(self).__name__
        if not hasattr(optimizer, "param_groups"):
            raise BurnError(f"{name}: expected a burn.optim optimizer, got {type(optimizer).__name__}")
        if mode not in ("min", "max"):
            raise BurnError(f"{name}: mode must be 'min' or 'max', got {mode!r}")
        if threshold_mode not in ("rel", "abs"):
            raise BurnError(f"{name}: threshold_mode must be 'rel' or 'abs', got {threshold_mode!r}")
        if not 0 <= factor < 1:
            raise BurnError(f"{name}: factor must be in [0, 1) (it multiplies the lr), got {factor}")
        n = len(optimizer.param_groups)
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != n:
                raise BurnError(f"{name}: min_lr has {len(min_lr)} values, the optimizer has {n} groups")
            self.min_lrs = [float(v) for v in min_lr]
        else:
            self.min_lrs = [float(min_lr)] * n
        self.optimizer = optimizer
        self.mode, self.factor, self.patience = mode, float(factor), int(patience)
        self.threshold, self.threshold_mode = float(threshold), threshold_mode
        self.cooldown, self.eps = int(cooldown), float(eps)
        self.best = math.inf if mode == "min" else -math.inf
        self.num_bad_steps = 0
        self.cooldown_counter = 0
        self.last_step = 0
        self._last_lr = [g["lr"] for g in optimizer.param_groups]

    def is_better(self, value: float, best: float) -> bool:
        """Whether ``value`` improves on ``best`` by the threshold (torch's rule for the mode).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> s = burn.optim.ReduceLROnPlateau(opt, threshold=0.1)
            >>> assert s.is_better(0.89, 1.0) and not s.is_better(0.91, 1.0)
        """
        if self.mode == "min":
            return value < (best * (1.0 - self.threshold) if self.threshold_mode == "rel" else best - self.threshold)
        return value > (best * (1.0 + self.threshold) if self.threshold_mode == "rel" else best + self.threshold)

    def step(self, metric=None) -> None:
        """Record this step's ``metric`` (a number or a 0-d tensor, read back) and reduce the lrs
        if the plateau has lasted more than ``patience`` steps.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=1.0)
            >>> sched = burn.optim.ReduceLROnPlateau(opt, mode="max", patience=0)
            >>> sched.step(0.5); sched.step(0.4)
            >>> assert abs(opt.lr - 0.1) < 1e-12 and sched.num_bad_steps == 0
        """
        if capture.tracing():
            raise CaptureError(f"burn.capture: {type(self).__name__}.step inside a captured function: it decides "
                               f"on the metric's value, which a recorded graph cannot read; return the metric "
                               f"and call sched.step(metric) after the captured call")
        if metric is None:
            raise BurnError(f"{type(self).__name__}.step: needs the monitored value, e.g. sched.step(val_loss) "
                            f"(Learner steps schedulers without one: step this one yourself)")
        current = float(metric.item()) if hasattr(metric, "item") else float(metric)
        self.last_step += 1
        if self.is_better(current, self.best):
            self.best, self.num_bad_steps = current, 0
        else:
            self.num_bad_steps += 1
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.num_bad_steps = 0      # bad steps do not count during the cooldown
        if self.num_bad_steps > self.patience:
            self._reduce()
            self.cooldown_counter, self.num_bad_steps = self.cooldown, 0
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def _reduce(self) -> None:
        groups = self.optimizer.param_groups
        if len(groups) != len(self.min_lrs):
            raise BurnError(f"{type(self).__name__}: the optimizer has {len(groups)} groups, the scheduler "
                            f"was built for {len(self.min_lrs)}")
        for g, floor in zip(groups, self.min_lrs):
            old = float(g["lr"])
            new = max(old * self.factor, floor)
            if old - new > self.eps:
                g["lr"] = new

    def get_last_lr(self) -> list[float]:
        """The lr of each group after the last step.

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=0.1)
            >>> assert burn.optim.ReduceLROnPlateau(opt).get_last_lr() == [0.1]
        """
        return list(self._last_lr)

    _STATE = ("last_step", "best", "num_bad_steps", "cooldown_counter")

    def state_dict(self) -> dict:
        """JSON-able position: type, step count, best value and counters (the lrs are the optimizer's).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=0.1)
            >>> s = burn.optim.ReduceLROnPlateau(opt)
            >>> s.step(2.0)
            >>> assert s.state_dict()["best"] == 2.0 and s.state_dict()["last_step"] == 1
        """
        return {"type": type(self).__name__, **{k: getattr(self, k) for k in self._STATE}}

    def load_state_dict(self, state: dict) -> None:
        """Resume from what :meth:`state_dict` gave (the settings stay the constructor's).

        Example:
            >>> import burn
            >>> opt = burn.optim.SGD([burn.nn.Parameter(burn.zeros((1,)))], lr=0.1)
            >>> s = burn.optim.ReduceLROnPlateau(opt)
            >>> s.load_state_dict({"type": "ReduceLROnPlateau", "last_step": 4, "best": 1.5,
            ...                    "num_bad_steps": 2, "cooldown_counter": 0})
            >>> assert s.best == 1.5 and s.num_bad_steps == 2
        """
        if state.get("type") != type(self).__name__:
            raise BurnError(f"{type(self).__name__}.load_state_dict: the state is of a {state.get('type')}")
        missing = [k for k in self._STATE if k not in state]
        if missing:
            raise BurnError(f"{type(self).__name__}.load_state_dict: the state lacks {missing}")
        self.last_step, self.best = int(state["last_step"]), float(state["best"])
        self.num_bad_steps, self.cooldown_counter = int(state["num_bad_steps"]), int(state["cooldown_counter"])
        self._last_lr = [g["lr"] for g in self.optimizer.param_groups]

    def __repr__(self):
        return (f"{type(self).__name__}(mode={self.mode!r}, factor={self.factor}, patience={self.patience}, "
                f"best={self.best}, lr={self._last_lr})")
