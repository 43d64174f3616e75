"""Optimizer steps as ``burn::adam_update`` and ``burn::sgd_update`` extension ops.

Each update is one backend extension: flex runs it as one kernel (a few numpy passes
with reused buffers) where op-by-op recording cost ~14 ops per parameter and step. The
reference definitions below are the op-by-op math, op for op, so a backend without a
kernel computes the same values (and flex's kernel matches them bit for bit).
``burn.optim`` (SGD, Adam, AdamW) calls them once per parameter and step, or, where a whole
parameter group takes one step together (eager steps: one device, one step count),
``burn::adam_update_group`` / ``burn::sgd_update_group`` once per group: recording an update costs
~20-30 us of Python per parameter (its call, three output tensors, the optimizer's bookkeeping),
which a small model's step pays as often as it has parameters. A backend without a group kernel
runs the group's reference, one single update per parameter; :func:`group_kernel` makes a
group kernel from a backend's single one.
"""
from __future__ import annotations

from ..errors import DTypeError, ShapeError, describe
from ..library import backend_extension
from ..ops.elementwise import sqrt
from ..primitives import TensorMeta

__all__ = ["adam_update", "adam_update_group", "group_kernel", "sgd_update", "sgd_update_group"]


def _scalars(h, p, n):
    # each scalar rounded to the parameter's dtype, as a Python float operand of ``p`` would be
    hc = h if h.dtype is p.dtype else h.astype(p.dtype)
    return [hc[i] for i in range(n)]


def _check_update(op, p, others, h, n_hyper):
    for x in others:
        if tuple(x.shape) != tuple(p.shape) or x.dtype is not p.dtype:
            raise ShapeError(f"{op}: gradient and state must match the parameter {describe(p)}, got {describe(x)}")
    if not p.dtype.is_floating:
        raise DTypeError(f"{op}: parameters must be floating, got {describe(p)}")
    if tuple(h.shape) != (n_hyper,) or not h.dtype.is_floating:
        raise ShapeError(f"{op}: hyperparameters must be a floating [{n_hyper}] tensor, got {describe(h)}")
    return TensorMeta(tuple(p.shape), p.dtype)


@backend_extension("burn::adam_update", plan_attrs=True)
def adam_update(p, g, m, v, h, mode="none"):
    """One Adam/AdamW step of parameter ``p``: returns ``(new_p, new_m, new_v)``.

    ``h`` holds ``[lr, b1, 1-b1, b2, 1-b2, 1/(1-b1^t), 1/(1-b2^t), eps, wd, 1-lr*wd]``
    (float64; each is rounded to ``p``'s dtype); ``mode`` is ``"none"``, ``"l2"``
    (Adam: ``g + wd * p``) or ``"decoupled"`` (AdamW: ``p * (1 - lr * wd)``).
    A backend extension: flex runs one kernel; elsewhere these burn ops run.

    Example:
        >>> import burn
        >>> from burn.fused import adam_update
        >>> p, g, z = burn.tensor([1.0]), burn.tensor([0.5]), burn.zeros((1,))
        >>> h = burn.tensor([0.1, 0.9, 0.1, 0.999, 0.001, 10.0, 1000.0, 1e-8, 0.0, 1.0], dtype=burn.float64)
        >>> p2, m, v = adam_update(p, g, z, z, h)
        >>> assert abs(p2.item() - 0.9) < 1e-6 and abs(m.item() - 0.05) < 1e-8
    """
    lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = _scalars(h, p, 10)
    if mode == "l2":
        g = g + p * wd
    m = m * b1 + g * omb1
    v = v * b2 + g * g * omb2
    step = (m * c1) / (sqrt(v * c2) + eps)
    if mode == "decoupled":
        p = p * decay
    return p - step * lr, m, v


@adam_update.meta
def _adam_update_meta(p, g, m, v, h, mode="none"):
    if mode not in ("none", "l2", "decoupled"):
        raise ValueError(f"adam_update: mode must be 'none', 'l2' or 'decoupled', got {mode!r}")
    out = _check_update("adam_update", p, (g, m, v), h, 10)
    return out, out, out


@backend_extension("burn::sgd_update", plan_attrs=True)
def sgd_update(p, g, buf, h, mode=("next", False, False)):
    """One SGD-with-momentum step of parameter ``p``: returns ``(new_p, new_buf)``.

    ``h`` holds ``[lr, weight_decay, momentum, 1 - dampening]``; ``mode`` is
    ``(first, weight_decay, nesterov)`` with ``first`` ``"first"`` (the buffer
    starts as the gradient; pass the gradient as ``buf``) or ``"next"``.
    PyTorch's SGD semantics. A backend extension like :func:`adam_update`.

    Example:
        >>> import burn
        >>> from burn.fused import sgd_update
        >>> p, g = burn.tensor([1.0]), burn.tensor([2.0])
        >>> h = burn.tensor([0.1, 0.0, 0.9, 1.0], dtype=burn.float64)
        >>> p2, buf = sgd_update(p, g, g, h, ("first", False, False))
        >>> assert abs(p2.item() - 0.8) < 1e-6 and buf.item() == 2.0
    """
    first, decay, nesterov = mode
    lr, wd, mom, omd = _scalars(h, p, 4)
    if decay:
        g = g + p * wd
    buf = g if first == "first" else buf * mom + g * omd
    d = g + buf * mom if nesterov else buf
    return p - d * lr, buf


@sgd_update.meta
def _sgd_update_meta(p, g, buf, h, mode=("next", False, False)):
    if not (isinstance(mode, tuple) and len(mode) == 3 and mode[0] in ("first", "next")):
        raise ValueError(f"sgd_update: mode must be ('first' or 'next', weight_decay, nesterov), got {mode!r}")
    out = _check_update("sgd_update", p, (g, buf), h, 4)
    return out, out


def _group_items(op, args, k):
    """``args`` = k tensors per parameter, then the hyperparameters: ``([k-tuples], h)``."""
    if len(args) < k + 1 or (len(args) - 1) % k:
        raise ValueError(f"{op}: expected {k} tensors per parameter and then the hyperparameters, got "
                         f"{len(args)} arguments")
    return [tuple(args[i:i + k]) for i in range(0, len(args) - 1, k)], args[-1]


@backend_extension("burn::adam_update_group", plan_attrs=True)
def adam_update_group(*args, mode="none"):
    """Adam steps of several parameters sharing one ``h`` (see :func:`adam_update`): ``args`` is
    ``p1, g1, m1, v1, p2, g2, m2, v2, ..., h``; returns ``(p1', m1', v1', p2', m2', v2', ...)``,
    each triple exactly :func:`adam_update`'s for that parameter. One recorded op per parameter
    group instead of one per parameter.

    Example:
        >>> import burn
        >>> from burn.fused import adam_update_group
        >>> p, g, z = burn.tensor([1.0]), burn.tensor([0.5]), burn.zeros((1,))
        >>> h = burn.tensor([0.1, 0.9, 0.1, 0.999, 0.001, 10.0, 1000.0, 1e-8, 0.0, 1.0], dtype=burn.float64)
        >>> p1, m1, v1, p2, m2, v2 = adam_update_group(p, g, z, z, p, -g, z, z, h)
        >>> assert abs(p1.item() - 0.9) < 1e-6 and abs(p2.item() - 1.1) < 1e-6
    """
    items, h = _group_items("adam_update_group", args, 4)
    return tuple(r for it in items for r in adam_update(*it, h, mode))


@adam_update_group.meta
def _adam_update_group_meta(*args, mode="none"):
    if mode not in ("none", "l2", "decoupled"):
        raise ValueError(f"adam_update_group: mode must be 'none', 'l2' or 'decoupled', got {mode!r}")
    items, h = _group_items("adam_update_group", args, 4)
    return tuple(m for it in items for m in (_check_update("adam_update_group", it[0], it[1:], h, 10),) * 3)


@backend_extension("burn::sgd_update_group", plan_attrs=True)
def sgd_update_group(*args, mode=("next", False, False)):
    """SGD-with-momentum steps of several parameters sharing one ``h`` and ``mode`` (see
    :func:`sgd_update`): ``args`` is ``p1, g1, buf1, p2, g2, buf2, ..., h``; returns
    ``(p1', buf1', p2', buf2', ...)``, each pair exactly :func:`sgd_update`'s.

    Example:
        >>> import burn
        >>> from burn.fused import sgd_update_group
        >>> p, g = burn.tensor([1.0]), burn.tensor([2.0])
        >>> h = burn.tensor([0.1, 0.0, 0.9, 1.0], dtype=burn.float64)
        >>> p1, b1, p2, b2 = sgd_update_group(p, g, g, p, -g, -g, h, mode=("first", False, False))
        >>> assert abs(p1.item() - 0.8) < 1e-6 and abs(p2.item() - 1.2) < 1e-6 and b2.item() == -2.0
    """
    items, h = _group_items("sgd_update_group", args, 3)
    return tuple(r for it in items for r in sgd_update(*it, h, mode))


@sgd_update_group.meta
def _sgd_update_group_meta(*args, mode=("next", False, False)):
    if not (isinstance(mode, tuple) and len(mode) == 3 and mode[0] in ("first", "next")):
        raise ValueError(f"sgd_update_group: mode must be ('first' or 'next', weight_decay, nesterov), got {mode!r}")
    items, h = _group_items("sgd_update_group", args, 3)
    return tuple(m for it in items for m in (_check_update("sgd_update_group", it[0], it[1:], h, 4),) * 2)


def group_kernel(single, per_param, many=None):
    """A backend's kernel for ``burn::adam_update_group`` (``per_param`` 4) or
    ``burn::sgd_update_group`` (3) from its kernel for the single update: the single kernel on
    each parameter's arrays in turn, the outputs in the group's order (what the group's
    reference computes, without recording an op per parameter). ``many(items, mode)``, where the
    backend has one, takes every parameter's ``(*arrays, h)`` at once instead (flex's batched
    updates) and returns each parameter's outputs.

    Example:
        >>> from burn.fused import group_kernel
        >>> k = group_kernel(lambda p, g, b, h, mode: (p - g, b), 3)
        >>> k(5, 1, 0, 7, 2, 0, "h", mode=("next", False, False))
        (4, 0, 5, 0)
    """
    name = getattr(single, "__name__", "update") + "_group"

    def kernel(*arrays, mode):
        items, h = _group_items(name, arrays, per_param)
        if many is not None:
            return tuple([r for res in many([it + (h,) for it in items], mode) for r in res])
        return tuple(r for it in items for r in single(*it, h, mode))
    kernel.__name__ = name
    return kernel
