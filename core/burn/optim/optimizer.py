"""SGD, Adam and AdamW written with burn ops (so they run, lazily and fused, on any device).

``opt.step(grads)`` reads each parameter's gradient from ``grads`` and
rebinds the parameter to its updated value (``assign_``), so pending work
that read the old value keeps seeing it. Frozen parameters and parameters
without a gradient get no state and no update.
"""
from __future__ import annotations

from ..autodiff import Gradients, no_grad
from ..errors import BurnError
from ..ops.creation import zeros_like
from ..ops.elementwise import sqrt

__all__ = ["Optimizer", "SGD", "Adam", "AdamW"]


def _params(params):
    from ..nn.module import Module
    if isinstance(params, Module):
        return params.parameters()
    params = list(params)
    if not params:
        raise BurnError("optimizer: got an empty parameter list")
    return params


class Optimizer:
    """Base class: holds parameters and per-parameter state; subclasses define ``update``."""

    def __init__(self, params, **defaults):
        self.params = _params(params)
        self.defaults = defaults
        self.state: dict[int, dict] = {}
        self.steps = 0

    @property
    def lr(self) -> float:
        return self.defaults["lr"]

    @lr.setter
    def lr(self, value: float) -> None:
        self.defaults["lr"] = float(value)

    def step(self, grads: Gradients) -> None:
        """Update every tracked parameter that has a gradient in ``grads``."""
        if not isinstance(grads, Gradients):
            raise BurnError(f"{type(self).__name__}.step: expected burn.Gradients from backward(), "
                            f"got {type(grads).__name__}")
        self.steps += 1
        with no_grad():
            for p in self.params:
                if getattr(p, "frozen", False):
                    continue
                g = grads.get(p)
                if g is None:
                    continue
                st = self.state.setdefault(id(p), {})
                p.assign_(self.update(p, g, st))

    def update(self, p, g, state):
        raise NotImplementedError


class SGD(Optimizer):
    """Stochastic gradient descent with momentum, Nesterov and weight decay (PyTorch semantics).

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
        >>> opt = burn.optim.SGD([w], lr=0.1)
        >>> opt.step((w * w).sum().backward())
        >>> assert abs(w.item() - 0.8) < 1e-6
    """

    def __init__(self, params, lr=1e-2, momentum=0.0, nesterov=False, weight_decay=0.0, dampening=0.0):
        super().__init__(params, lr=lr, momentum=momentum, nesterov=nesterov, weight_decay=weight_decay,
                         dampening=dampening)

    def update(self, p, g, state):
        d = self.defaults
        if d["weight_decay"]:
            g = g + p * d["weight_decay"]
        if d["momentum"]:
            buf = state.get("momentum")
            buf = g if buf is None else buf * d["momentum"] + g * (1 - d["dampening"])
            state["momentum"] = buf
            g = g + buf * d["momentum"] if d["nesterov"] else buf
        return p - g * d["lr"]


class Adam(Optimizer):
    """Adam (Kingma & Ba), with L2 weight decay added to the gradient (PyTorch's Adam).

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
        >>> opt = burn.optim.Adam([w], lr=0.1)
        >>> opt.step((w * w).sum().backward())
        >>> assert abs(w.item() - 0.9) < 1e-5
    """

    decoupled = False

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0):
        super().__init__(params, lr=lr, betas=tuple(betas), eps=eps, weight_decay=weight_decay)

    def update(self, p, g, state):
        d = self.defaults
        b1, b2 = d["betas"]
        if d["weight_decay"] and not self.decoupled:
            g = g + p * d["weight_decay"]
        if "m" not in state:
            state["m"], state["v"], state["t"] = zeros_like(p), zeros_like(p), 0
        state["t"] += 1
        t = state["t"]
        m = state["m"] = state["m"] * b1 + g * (1 - b1)
        v = state["v"] = state["v"] * b2 + g * g * (1 - b2)
        step = (m * (1.0 / (1 - b1 ** t))) / (sqrt(v * (1.0 / (1 - b2 ** t))) + d["eps"])
        if d["weight_decay"] and self.decoupled:
            p = p * (1 - d["lr"] * d["weight_decay"])
        return p - step * d["lr"]


class AdamW(Adam):
    """Adam with decoupled weight decay (Loshchilov & Hutter), PyTorch's AdamW.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([1.0], device=dev))
        >>> burn.optim.AdamW([w], lr=0.1, weight_decay=0.5).step((w * w).sum().backward())
        >>> assert abs(w.item() - (1.0 * (1 - 0.05) - 0.1)) < 1e-5
    """

    decoupled = True

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2):
        super().__init__(params, lr=lr, betas=betas, eps=eps, weight_decay=weight_decay)
