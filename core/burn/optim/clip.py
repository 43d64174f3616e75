"""Gradient clipping by global norm or by value, with PyTorch's numerics.

Both functions rewrite entries of a :class:`burn.Gradients` mapping (gradient
tensors are immutable values, so "in place" means the mapping now holds the
clipped tensor) and stay lazy: the norm is a 0-d tensor and the scale factor
``min(1, max_norm / (norm + 1e-6))`` is applied without reading it back to
the host, so clipping fuses with the optimizer update.
"""
from __future__ import annotations

import math

from ..autodiff import Gradients, no_grad
from ..errors import BurnError
from .param_group import named_params
from .. import ops

__all__ = ["clip_grad_norm", "clip_grad_value", "GradClip"]


def _check(fn, grads):
    if not isinstance(grads, Gradients):
        raise BurnError(f"{fn}: expected burn.Gradients from backward(), got {type(grads).__name__}")


def _present(grads, params):
    """(param, grad) for each parameter of ``params`` (Module or iterable) that has a gradient."""
    if params is None:
        return grads.items()
    out, seen = [], set()
    for _, p in named_params(params):
        g = grads.get(p)
        if g is not None and id(p) not in seen:
            seen.add(id(p))
            out.append((p, g))
    return out


def _vector_norm(x, p):
    a = ops.elementwise.abs(x)
    if p == math.inf:
        return ops.reduction.max(a)
    if p == -math.inf:
        return ops.reduction.min(a)
    if p == 0:
        return ops.reduction.sum(ops.elementwise.astype(a != 0, x.dtype))
    if p == 1:
        return ops.reduction.sum(a)
    if p == 2:
        return ops.elementwise.sqrt(ops.reduction.sum(x * x))
    return ops.reduction.sum(a ** p) ** (1.0 / p)


def clip_grad_norm(grads, params, max_norm, norm_type=2.0, error_if_nonfinite=False):
    """Scale the gradients of ``params`` so their joint ``norm_type``-norm is at most ``max_norm``.

    Same result as ``torch.nn.utils.clip_grad_norm_``: the total norm is the
    norm of the per-tensor norms, and every gradient is multiplied by
    ``min(1, max_norm / (total_norm + 1e-6))``. ``params`` is a Module, an
    iterable of parameters, or None for every tensor in ``grads``; parameters
    without a gradient are skipped. ``grads`` is updated and the total norm
    (before clipping) returned as a 0-d tensor. ``error_if_nonfinite=True``
    raises on a NaN/inf norm (this reads the norm back, a synchronization).

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.tensor([3.0, 4.0], device=dev).require_grad()
        >>> grads = (w * w).sum().backward()                 # gradient [6, 8], norm 10
        >>> total = burn.optim.clip_grad_norm(grads, [w], max_norm=1.0)
        >>> assert abs(total.item() - 10.0) < 1e-5
        >>> assert abs(w.grad(grads).tolist()[1] - 0.8) < 1e-5
    """
    _check("clip_grad_norm", grads)
    norm_type = float(norm_type)
    max_norm = float(max_norm)
    pairs = _present(grads, params)
    with no_grad():
        if not pairs:
            return ops.creation.tensor(0.0)
        norms = [_vector_norm(g, norm_type) for _, g in pairs]
        first = norms[0]
        norms = [n if n.device == first.device else n.to_device(first.device) for n in norms]
        norms = [n if n.dtype is first.dtype else n.astype(first.dtype) for n in norms]
        total = _vector_norm(ops.movement.stack(norms), norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise BurnError(f"clip_grad_norm: the total {norm_type}-norm of the gradients of {len(pairs)} "
                            f"parameters is {total.item()}; pass error_if_nonfinite=False to clip anyway "
                            f"(the gradients then become NaN)")
        coef = ops.elementwise.minimum(max_norm / (total + 1e-6), 1.0)
        for p, g in pairs:
            c = coef if coef.device == g.device else coef.to_device(g.device)
            grads._set(p, g * (c if c.dtype is g.dtype else c.astype(g.dtype)))
    return total


def clip_grad_value(grads, params, clip_value):
    """Clamp every gradient of ``params`` into ``[-clip_value, clip_value]``
    (``torch.nn.utils.clip_grad_value_``); updates ``grads`` and returns it.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.tensor([-3.0, 0.5], device=dev).require_grad()
        >>> grads = burn.optim.clip_grad_value((w * w).sum().backward(), [w], 1.0)
        >>> assert w.grad(grads).tolist() == [-1.0, 1.0]
    """
    _check("clip_grad_value", grads)
    clip_value = float(clip_value)
    if clip_value < 0:
        raise BurnError(f"clip_grad_value: clip_value must be >= 0, got {clip_value}")
    with no_grad():
        for p, g in _present(grads, params):
            grads._set(p, ops.elementwise.clip(g, -clip_value, clip_value))
    return grads


class GradClip:
    """A clipping rule an optimizer applies inside ``step`` (``grad_clip=GradClip.norm(1.0)``).

    The optimizer clips the gradients of all its trainable parameters together
    (every group), on a copy: the caller's Gradients stay as they were, and
    the total norm of the last step is ``opt.last_grad_norm``.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.nn.Parameter(burn.tensor([3.0, 4.0], device=dev))
        >>> opt = burn.optim.SGD([w], lr=1.0, grad_clip=burn.optim.GradClip.norm(1.0))
        >>> opt.step((w * w).sum().backward())               # gradient [6, 8] clipped to [0.6, 0.8]
        >>> assert abs(w.tolist()[0] - 2.4) < 1e-5 and abs(opt.last_grad_norm.item() - 10.0) < 1e-4
    """

    __slots__ = ("kind", "limit", "norm_type")

    def __init__(self, kind, limit, norm_type=2.0):
        if kind not in ("norm", "value"):
            raise BurnError(f"GradClip: kind must be 'norm' or 'value', got {kind!r}")
        self.kind, self.limit, self.norm_type = kind, float(limit), float(norm_type)

    @classmethod
    def norm(cls, max_norm, norm_type=2.0) -> "GradClip":
        """Clip by global norm, as :func:`clip_grad_norm`.

        Example:
            >>> import burn
            >>> assert burn.optim.GradClip.norm(1.0).config() == {"kind": "norm", "limit": 1.0, "norm_type": 2.0}
        """
        return cls("norm", max_norm, norm_type)

    @classmethod
    def value(cls, clip_value) -> "GradClip":
        """Clip each gradient element into ``[-clip_value, clip_value]``, as :func:`clip_grad_value`.

        Example:
            >>> import burn
            >>> assert burn.optim.GradClip.value(0.5).kind == "value"
        """
        return cls("value", clip_value)

    def apply(self, grads, params):
        """Clip ``grads`` (updated) for ``params``; the total norm for ``norm``, else None.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> w = burn.tensor([2.0], device=dev).require_grad()
            >>> grads = (w * w).sum().backward()
            >>> assert burn.optim.GradClip.value(1.0).apply(grads, [w]) is None and w.grad(grads).item() == 1.0
        """
        if self.kind == "norm":
            return clip_grad_norm(grads, params, self.limit, self.norm_type)
        clip_grad_value(grads, params, self.limit)
        return None

    def config(self) -> dict:
        """JSON-able description (saved with the optimizer); :meth:`from_config` inverts it.

        Example:
            >>> import burn
            >>> c = burn.optim.GradClip.norm(2.0, norm_type=1).config()
            >>> assert burn.optim.GradClip.from_config(c).norm_type == 1.0
        """
        return {"kind": self.kind, "limit": self.limit, "norm_type": self.norm_type}

    @classmethod
    def from_config(cls, config: dict) -> "GradClip":
        """The GradClip that :meth:`config` described.

        Example:
            >>> import burn
            >>> assert burn.optim.GradClip.from_config({"kind": "value", "limit": 1.0}).limit == 1.0
        """
        return cls(config["kind"], config["limit"], config.get("norm_type", 2.0))

    def __eq__(self, other):
        return isinstance(other, GradClip) and self.config() == other.config()

    def __repr__(self):
        if self.kind == "norm":
            return f"GradClip.norm({self.limit}, norm_type={self.norm_type})"
        return f"GradClip.value({self.limit})"
