"""Reverse-mode autodiff, enabled per device (``device.autodiff()``).

Tensors made on an autodiff device record, for each op whose inputs need a
gradient, a :class:`GradNode` (the primitive, its inputs, attributes; see
:mod:`burn.tape`, the layer below tensors that holds the grad mode). The
backward rules live beside their ops (``burn.ops``); ``backward()`` is a
topological sort and one reverse loop, run under ``no_grad`` so the
gradient computation itself is recorded lazily and fused like any other work.
"""
from __future__ import annotations

from .bridge import TRACE
from .errors import AutodiffError, describe
from .ops import creation, elementwise
from .tape import GradNode, _clock, autocast_mode, enable_grad, is_grad_enabled, no_grad  # noqa: F401
from .tensor import Tensor

_new = object.__new__

__all__ = ["Gradients", "no_grad", "enable_grad", "is_grad_enabled", "GradNode", "backward", "grad"]


class BackwardContext:
    """What a backward rule sees: ``inputs``, ``outputs``, ``attrs``, ``saved``."""

    __slots__ = ("inputs", "attrs", "saved", "_node", "_outputs")

    def __init__(self, node):
        self._node = node
        self.inputs = node.inputs
        self.attrs = node.attrs
        self.saved = node.saved
        self._outputs = None

    @property
    def outputs(self):
        if self._outputs is None:
            dev = self.inputs[0].device if self.inputs else None
            node = self._node
            outs = []
            for i, h in enumerate(node.out_handles):
                t = Tensor._wrap(h, dev)
                if h.dtype.is_inexact:
                    # the output's own record: a rule that reuses it (softmax, exp, max pool)
                    # stays differentiable under backward(create_graph=True)
                    t._grad = (node, i)
                outs.append(t)
            self._outputs = tuple(outs)
        return self._outputs

    @property
    def out(self):
        return self.outputs[0]


class Gradients:
    """Gradients of one ``backward()`` call, looked up by the leaf tensor.

    Example:
        >>> import burn
        >>> dev = burn.Device.flex().autodiff()
        >>> w = burn.tensor([1.0, 2.0], device=dev).require_grad()
        >>> grads = (w * w).sum().backward()
        >>> assert w.grad(grads).tolist() == [2.0, 4.0]
    """

    def __init__(self):
        self._by_id = {}   # id(leaf) -> (leaf, grad)

    def get(self, tensor):
        """The gradient of ``tensor`` or None if it did not take part.

        Example:
            >>> import burn
            >>> dev = burn.Device.flex().autodiff()
            >>> w = burn.tensor([1.0, 2.0], device=dev).require_grad()
            >>> unused = burn.zeros((1,), device=dev).require_grad()
            >>> grads = (w * 3).sum().backward()
            >>> assert grads.get(w).tolist() == [3.0, 3.0] and grads.get(unused) is None
        """
        entry = self._by_id.get(id(tensor))
        return None if entry is None or entry[0] is not tensor else entry[1]

    def remove(self, tensor):
        """Remove and return the gradient of ``tensor`` (None if absent).

        Use it to free gradients one by one as an optimizer consumes them.

        Example:
            >>> import burn
            >>> w = burn.tensor([1.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> grads = (w * 3).sum().backward()
            >>> assert grads.remove(w).tolist() == [3.0] and w not in grads
        """
        entry = self._by_id.pop(id(tensor), None)
        return None if entry is None else entry[1]

    def set(self, tensor, grad):
        """Make ``grad`` the gradient of ``tensor`` (e.g. the average over data-parallel ranks).

        ``grad`` must have ``tensor``'s shape; an optimizer given these gradients uses it.

        Example:
            >>> import burn
            >>> w = burn.tensor([1.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> grads = (w * 3).sum().backward()
            >>> grads.set(w, w.grad(grads) / 2)
            >>> assert w.grad(grads).tolist() == [1.5]
        """
        if tuple(grad.shape) != tuple(tensor.shape):
            raise AutodiffError(f"Gradients.set: the gradient has shape {tuple(grad.shape)}, the tensor "
                                f"{tuple(tensor.shape)}; give a gradient of the tensor's shape")
        self._by_id[id(tensor)] = (tensor, grad)

    def _set(self, tensor, grad):
        self._by_id[id(tensor)] = (tensor, grad)

    def __len__(self):
        return len(self._by_id)

    def __contains__(self, tensor):
        return self.get(tensor) is not None

    def items(self):
        """A list of ``(leaf, gradient)`` pairs.

        Example:
            >>> import burn
            >>> w = burn.tensor([2.0], device=burn.Device.flex().autodiff()).require_grad()
            >>> [(leaf, g)] = (w * w).sum().backward().items()
            >>> assert leaf is w and g.tolist() == [4.0]
        """
        return [(t, g) for t, g in self._by_id.values()]

    def __repr__(self):
        return f"Gradients({len(self)} tensors)"


def _checked_rule(node, outs):
    """Run ``node``'s backward rule when some input may have changed in place since the
    op recorded it; raise if the rule read such an input's value.

    Only inputs kept by reference (leaves and constants; computed inputs are recorded
    by value) can change. A rule that reads only their shapes (``add``) is still right;
    one that records an op on the current value (``mul``) would silently use the new
    value: the ops it recorded are scanned for the changed handles. Returns the rule's
    gradients and the inputs to route them to (a constant that has since become a
    computed tensor takes no gradient)."""
    t0 = node.time
    changed = [(i, t) for i, t in enumerate(node.inputs) if getattr(t, "_mutated", 0) > t0]
    if not changed:
        return node.backward_fn(BackwardContext(node), *outs), node.inputs
    graph = node.out_handles[0].graph
    start, flushes = len(graph.pending), graph.flushes
    in_grads = node.backward_fn(BackwardContext(node), *outs)
    grads = in_grads if isinstance(in_grads, (tuple, list)) else (in_grads,)
    for i, t in changed:
        h = t._h
        read = graph.flushes != flushes        # work ran inside the rule: assume it read the value
        if not read:
            src = h if h.node is None else None
            for n in graph.pending[start:]:
                for a in n.args:
                    if a is src or (type(a) is tuple and a[0] is h.node and a[1] == h.index):
                        read = True
                        break
                if read:
                    break
            read = read or any(g is not None and g._h is h for g in grads)
        if read:
            name = node.prim.name
            raise AutodiffError(
                f"backward of '{name}': its input {i} ({describe(t)}, "
                f"{'a leaf' if t._leaf else 'a constant'}) was modified in place (assign_, x[k] = v, +=, "
                f"or an optimizer step) after '{name}' recorded it, and its backward rule needs the value "
                f"it had then; call backward before updating the tensor, or run the forward pass again "
                f"after the update")
    inputs = node.inputs
    if any(t._grad is not None for _, t in changed):
        # a constant then, a computed tensor now: its new history must not receive this gradient
        inputs = list(inputs)
        for i, t in changed:
            if t._grad is not None:
                inputs[i] = t.detach()
    return in_grads, inputs


def backward(root, grad=None, *, create_graph=False) -> Gradients:
    """Differentiate ``root`` with respect to every leaf that requires grad.

    ``Tensor.backward`` calls it. Args: ``root``, the tensor to differentiate;
    ``grad``, the seed gradient (defaults to ones; required for non-scalars);
    ``create_graph``, record the gradient computation itself, so the gradients
    can be differentiated again (higher-order derivatives, gradient penalties).
    Without it the backward pass runs under ``no_grad`` and the gradients are
    plain values.

    Example:
        >>> import burn
        >>> from burn.autodiff import backward
        >>> w = burn.ones((2,), device=burn.Device.flex().autodiff()).require_grad()
        >>> grads = backward(w * 2, burn.tensor([1.0, 10.0], device=w.device))
        >>> assert grads.get(w).tolist() == [2.0, 20.0]
        >>> x = burn.tensor([3.0], device=w.device).require_grad()
        >>> dx = x.grad(backward((x * x * x).sum(), create_graph=True))     # 3 x^2, with its history
        >>> assert dx.tolist() == [27.0] and x.grad(dx.sum().backward()).tolist() == [18.0]
    """
    return _backward(root, grad, create_graph)[0]


def grad(output, inputs, grad_output=None, *, create_graph=False, allow_unused=False):
    """The gradients of ``output`` with respect to ``inputs`` (as ``torch.autograd.grad``).

    ``inputs`` is a tensor or a sequence of tensors: leaves that require grad or
    intermediate results (the gradient then stops there: a partial derivative).
    Returns one gradient per input (a tuple, or one tensor for a single input).
    ``grad_output`` seeds a non-scalar ``output``; ``create_graph`` records the
    computation so the gradients can be differentiated again; an input ``output``
    does not depend on raises an AutodiffError unless ``allow_unused`` (then None).

    Example:
        >>> import burn
        >>> from burn.autodiff import grad
        >>> x = burn.tensor([2.0], device=burn.Device.flex().autodiff()).require_grad()
        >>> h = x * x
        >>> dx, dh = grad((h * 3).sum(), [x, h])
        >>> assert dx.tolist() == [12.0] and dh.tolist() == [3.0]
        >>> (d2,) = grad(grad((x ** 3).sum(), x, create_graph=True).sum(), [x])     # d/dx 3x^2
        >>> assert d2.tolist() == [12.0]
    """
    single = isinstance(inputs, Tensor)
    ins = [inputs] if single else list(inputs)
    for i, t in enumerate(ins):
        if not isinstance(t, Tensor):
            raise AutodiffError(f"grad: inputs[{i}] is a {type(t).__name__}, not a burn Tensor")
        if not t.requires_grad:
            raise AutodiffError(f"grad: inputs[{i}] (shape {t.shape}) does not require grad; mark a leaf "
                                f"with .require_grad() before computing output from it")
    records = {t._grad for t in ins if t._grad is not None}
    grads, at = _backward(output, grad_output, create_graph, capture=records or None)
    out = []
    for i, t in enumerate(ins):
        g = at.get(t._grad) if t._grad is not None else grads.get(t)
        if g is None and not allow_unused:
            raise AutodiffError(f"grad: output does not depend on inputs[{i}] (shape {t.shape}); pass "
                                f"allow_unused=True to get None for it")
        out.append(g)
    return out[0] if single else tuple(out)


def _raise_deferred(root):
    """Raise here, at ``backward()``, a data-dependent error (an index out of range) of the
    computation of ``root``: its graph is run first when it holds ops that can raise one."""
    h = root._h
    if TRACE[0] is not None:    # traced (burn.capture): the replay raises the error when it runs
        return
    if h.node is not None and h.graph.checked:
        h.graph.flush()
    if h.node is None:
        h.value()       # raises the error the flush attached, if any; otherwise the value is at hand


def _backward(root, grad, create_graph, stop=None, capture=None):
    """The reverse pass; returns ``(Gradients, {record: gradient})``. Records in ``stop``
    (``(GradNode, output index)`` pairs) are boundaries: their gradients are returned,
    not propagated further (partial derivatives w.r.t. intermediate tensors). Records in
    ``capture`` have their full gradient returned and still propagate."""
    if not root.device.is_autodiff:
        raise AutodiffError(
            f"backward: tensor of shape {root.shape} lives on {root.device}, which has autodiff off; "
            f"create the inputs on device.autodiff() (e.g. burn.Device.flex().autodiff())")
    if not root.requires_grad:
        raise AutodiffError(
            f"backward: tensor of shape {root.shape} does not require grad; no input it depends on "
            f"was marked with .require_grad()")
    _raise_deferred(root)
    if grad is None:
        if root.size != 1:
            raise AutodiffError(
                f"backward: tensor of shape {root.shape} is not a scalar; pass the seed gradient "
                f"explicitly (t.backward(grad)) or reduce it first (t.sum().backward())")
        with no_grad():
            # a 0-d loss (the usual case) is seeded with the cached constant 1: no op recorded
            grad = (elementwise._scalar(1.0, root.dtype, root.device) if root.shape == ()
                    else creation.ones_like(root))
    else:
        if not isinstance(grad, Tensor):
            grad = creation.tensor(grad, device=root.device, dtype=root.dtype)
        if tuple(grad.shape) != tuple(root.shape):
            raise AutodiffError(f"backward: seed gradient has shape {grad.shape}, tensor has {root.shape}")
    grads = Gradients()
    if root._grad is None:   # a leaf
        grads._set(root, grad)
        return grads, {}
    # topological order of GradNodes reachable from root
    order, seen = [], set()
    stack = [(root._grad[0], False)]
    while stack:
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if id(node) in seen:
            continue
        seen.add(id(node))
        stack.append((node, True))
        for t in node.inputs:
            tg = t._grad
            if tg is not None and id(tg[0]) not in seen and (stop is None or tg not in stop):
                stack.append((tg[0], False))
    pending = {(id(root._grad[0]), root._grad[1]): grad}
    by_id = grads._by_id
    captured = {}
    if capture:
        want = {(id(r[0]), r[1]): r for r in capture}
        if (id(root._grad[0]), root._grad[1]) in want:
            captured[root._grad] = grad
    # backward ops run in the dtypes their forward ops ran in: autocast is off for the reverse pass
    with (enable_grad() if create_graph else no_grad()), autocast_mode(None):
        for node in reversed(order):
            nid = id(node)
            n_out = len(node.out_handles)
            if n_out == 1:               # the common case, without list/generator objects
                g0 = pending.pop((nid, 0), None)
                if g0 is None:
                    continue
                outs = (g0,)
            else:
                outs = [pending.pop((nid, k), None) for k in range(n_out)]
                if all(o is None for o in outs):
                    continue
                if any(o is None for o in outs):
                    outs = [o if o is not None else creation.zeros(h.shape, dtype=h.dtype, device=node.inputs[0].device)
                            for o, h in zip(outs, node.out_handles)]
            if capture:
                for k, o in enumerate(outs):
                    r = want.get((nid, k))
                    if r is not None:
                        captured[r] = o      # complete: every consumer came earlier in the order
            inputs = node.inputs
            if node.time == _clock[0]:      # nothing changed in place since the op was recorded
                ctx = _new(BackwardContext)     # BackwardContext(node), inlined
                ctx._node = node
                ctx.inputs = inputs
                ctx.attrs = node.attrs
                ctx.saved = node.saved
                ctx._outputs = None
                in_grads = node.backward_fn(ctx, *outs)
            else:
                in_grads, inputs = _checked_rule(node, outs)
            if not isinstance(in_grads, (tuple, list)):
                in_grads = (in_grads,)
            if len(in_grads) != len(inputs):
                raise AutodiffError(
                    f"backward rule of '{node.prim.name}' returned {len(in_grads)} gradients "
                    f"for {len(inputs)} inputs")
            for t, g in zip(inputs, in_grads):
                if g is None:
                    continue
                tg = t._grad
                if tg is None and not t._leaf:      # not t.requires_grad
                    continue
                gh, th = g._h, t._h
                if gh.shape != th.shape and tuple(gh.shape) != tuple(th.shape):
                    raise AutodiffError(
                        f"backward rule of '{node.prim.name}' returned a gradient of shape {g.shape} "
                        f"for an input of shape {t.shape}")
                if gh.dtype is not th.dtype and th.dtype.is_inexact:
                    g = g.astype(th.dtype)
                if tg is None:
                    entry = by_id.get(id(t))
                    by_id[id(t)] = (t, g if entry is None or entry[0] is not t else entry[1] + g)
                else:
                    key = (id(tg[0]), tg[1])
                    old = pending.get(key)
                    pending[key] = g if old is None else old + g
    if capture:
        return grads, captured
    if stop is None:
        return grads, {}
    return grads, {r: pending.get((id(r[0]), r[1])) for r in stop}
