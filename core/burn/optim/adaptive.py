"""RMSprop and Adagrad, with PyTorch's update rules and defaults, written with burn ops.

They plug into :class:`burn.optim.Optimizer` like SGD and Adam: parameter groups, gradient
clipping, ``state_dict`` / :func:`burn.optim.save` and schedulers work the same. The numbers
that may change between steps (the learning rate, Adagrad's decayed rate) enter as 0-d tensors
rather than as op attributes, so every step records the same graph and reuses its cached plan;
inside ``burn.capture`` they are host values (recomputed before each replay), the step counts
are advanced per replay, and the running sums are updated in place (state of the graph).
"""
from __future__ import annotations

from .. import capture
from ..errors import BurnError
from ..ops import elementwise as E
from ..ops.creation import full_like, zeros_like
from .optimizer import Optimizer, _keep, _host_scalar

__all__ = ["RMSprop", "Adagrad"]


def _count(state, key):
    """``state[key] += 1``, and again before each replay of a trace of this step."""
    state[key] += 1
    if capture.tracing():
        capture.on_replay(lambda: state.__setitem__(key, state[key] + 1))


def _check_nonneg(opt, group, where, names):
    for name in names:
        v = group[name]
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise BurnError(f"{type(opt).__name__}: {name} must be a number >= 0 in {where}, got {v!r}")


class RMSprop(Optimizer):
    """RMSprop as ``torch.optim.RMSprop``: a running mean of squared gradients scales each step;
    ``centered`` subtracts the squared running mean of the gradients, ``momentum`` adds a buffer.

    State per parameter: ``square_avg`` (and ``grad_avg`` when centered, ``momentum_buffer`` with
    momentum) and the step count ``step``.

    Example:
        >>> import burn
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=burn.Device.flex().autodiff()))
        >>> opt = burn.optim.RMSprop([w], lr=0.01)
        >>> opt.step((w * w).sum().backward())       # g = 2: 1 - 0.01 * 2 / (sqrt(0.01 * 4) + 1e-8)
        >>> assert abs(w.item() - 0.9) < 1e-5 and opt.state["0"]["step"] == 1
    """

    param_shaped_state = ("square_avg", "grad_avg", "momentum_buffer")
    capturable = True
    # OneCycleLR cycles "momentum": it travels as a host scalar too (on/off stays baked: guarded)
    _per_step_hyperparameters = ("lr", "momentum")

    def __init__(self, params, lr=1e-2, alpha=0.99, eps=1e-8, weight_decay=0.0, momentum=0.0, centered=False, *,
                 groups=None, grad_clip=None):
        super().__init__(params, groups=groups, grad_clip=grad_clip, lr=lr, alpha=alpha, eps=eps,
                         weight_decay=weight_decay, momentum=momentum, centered=bool(centered))

    def _check_group(self, group, where):
        super()._check_group(group, where)
        _check_nonneg(self, group, where, ("alpha", "eps", "momentum"))

    def update(self, p, g, state, group):
        """One RMSprop step for ``p`` with gradient ``g`` (torch's order of operations).

        Example:
            >>> import burn
            >>> p = burn.nn.Parameter(burn.tensor([1.0]))
            >>> opt = burn.optim.RMSprop([p], lr=0.1, alpha=0.0)
            >>> new = opt.update(p, burn.tensor([3.0]), {}, opt.param_groups[0])
            >>> assert abs(new.item() - 0.9) < 1e-6             # alpha 0: the step is lr * sign(g)
        """
        alpha, wd, mom = group["alpha"], group["weight_decay"], group["momentum"]
        if "square_avg" not in state:
            state["step"], state["square_avg"] = 0, zeros_like(p)
            if group["centered"]:
                state["grad_avg"] = zeros_like(p)
            if mom > 0:
                state["momentum_buffer"] = zeros_like(p)
        _count(state, "step")
        if wd:
            g = g + p * wd
        sq = state["square_avg"] * alpha + g * g * (1 - alpha)
        _keep(state, "square_avg", sq)
        if group["centered"]:
            if "grad_avg" not in state:     # centered switched on mid-run: start its mean as torch would
                state["grad_avg"] = zeros_like(p)
            ga = state["grad_avg"] + (g - state["grad_avg"]) * (1 - alpha)
            _keep(state, "grad_avg", ga)
            avg = E.sqrt(sq - ga * ga) + group["eps"]
        else:
            avg = E.sqrt(sq) + group["eps"]
        lr = _host_scalar(self._hyper_cache, p, group, lambda: group["lr"], "RMSprop lr")
        if mom > 0:
            buf = state.get("momentum_buffer")
            buf = zeros_like(p) if buf is None else buf
            buf = buf * _host_scalar(self._hyper_cache, p, group, lambda: group["momentum"], "RMSprop momentum") \
                + g / avg
            _keep(state, "momentum_buffer", buf)
            return p - buf * lr
        return p - g / avg * lr


class Adagrad(Optimizer):
    """Adagrad as ``torch.optim.Adagrad``: each step divides by the root of the summed squared
    gradients; the rate decays as ``lr / (1 + (step - 1) * lr_decay)``.

    State per parameter: ``sum`` (starting at ``initial_accumulator_value``) and ``step``.

    Example:
        >>> import burn
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=burn.Device.flex().autodiff()))
        >>> opt = burn.optim.Adagrad([w], lr=0.1)
        >>> opt.step((w * w).sum().backward())       # g = 2: 1 - 0.1 * 2 / sqrt(4)
        >>> assert abs(w.item() - 0.9) < 1e-6 and opt.state["0"]["step"] == 1
    """

    param_shaped_state = ("sum",)
    capturable = True
    _per_step_hyperparameters = ("lr", "lr_decay")

    def __init__(self, params, lr=1e-2, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10,
                 *, groups=None, grad_clip=None):
        super().__init__(params, groups=groups, grad_clip=grad_clip, lr=lr, lr_decay=lr_decay,
                         weight_decay=weight_decay, initial_accumulator_value=initial_accumulator_value, eps=eps)

    def _check_group(self, group, where):
        super()._check_group(group, where)
        _check_nonneg(self, group, where, ("lr_decay", "initial_accumulator_value", "eps"))

    def update(self, p, g, state, group):
        """One Adagrad step for ``p`` with gradient ``g``; ``state`` holds ``sum`` and ``step``.

        Example:
            >>> import burn
            >>> p = burn.nn.Parameter(burn.tensor([1.0]))
            >>> opt = burn.optim.Adagrad([p], lr=0.5, lr_decay=1.0)
            >>> state = {}
            >>> p1 = opt.update(p, burn.tensor([1.0]), state, opt.param_groups[0])   # rate 0.5
            >>> p2 = opt.update(p1, burn.tensor([1.0]), state, opt.param_groups[0])  # rate 0.25, sum 2
            >>> assert abs(p2.item() - (0.5 - 0.25 / 2 ** 0.5)) < 1e-6 and state["step"] == 2
        """
        if "sum" not in state:
            state["step"], state["sum"] = 0, full_like(p, group["initial_accumulator_value"])
        _count(state, "step")
        if group["weight_decay"]:
            g = g + p * group["weight_decay"]
        total = state["sum"] + g * g
        _keep(state, "sum", total)

        def clr():
            return group["lr"] / (1 + (state["step"] - 1) * group["lr_decay"])
        rate = _host_scalar(self._hyper_cache, p, group, clr, "Adagrad lr",
                           lambda: ("burn.optim.adagrad_lr", {"lr": group["lr"], "lr_decay": group["lr_decay"],
                                                              "step": state["step"]}),
                           step_of=lambda: state["step"])
        return p - g / (E.sqrt(total) + group["eps"]) * rate


class _AdagradRate(capture.Recipe):
    """A loaded graph's Adagrad rate: the saved lr and decay, the step count going on from the saved one."""

    kind = "burn.optim.adagrad_lr"

    def __call__(self):
        self.params["step"] += 1
        return self.params["lr"] / (1 + (self.params["step"] - 1) * self.params["lr_decay"])


capture.register_host_recipe("burn.optim.adagrad_lr", _AdagradRate)
