"""A flush's optimizer updates batched into one plan step (``FlexBackend.merge_steps``).

``opt.step`` records one ``burn::adam_update`` (or ``burn::sgd_update``) per parameter; each
costs a kernel call whose argument handling (checks, outputs, addresses: ~10 us here) outweighs
the arithmetic of a bias. Consecutive updates of one kind (float32 parameters, one mode, one
hyper-parameter input, none reading another's result) become one step calling
``adam_update_many`` / ``sgd_update_many`` (``burn_flex.kernels.optim``): the same kernel per
parameter, bit for bit, the per-call work done once. Eager flushes and ``burn.capture`` replays
run the same plans, so both take it. The mode is read from the nodes when the plan is built:
the update ops are declared with ``plan_attrs=True``, so it is part of the plan's cache key.
"""
from __future__ import annotations

from burn import float32, float64
from burn.dispatch import registry
from burn.fusion import _arg_dtype

from .kernels import optim

__all__ = ["merge_steps"]

# op -> (flex's kernel, its batched form, tensor inputs)
_BATCHED = {"burn::adam_update": (optim.adam_update, optim.adam_update_many, 5),
            "burn::sgd_update": (optim.sgd_update, optim.sgd_update_many, 4)}


class _BatchedUpdates:
    """The step that runs several updates of one kind: ``(*inputs)`` -> every output, in order.

    Example:
        >>> import numpy as np
        >>> from burn_flex.batched import _BatchedUpdates
        >>> from burn_flex.kernels import optim
        >>> step = _BatchedUpdates(optim.sgd_update_many, 4, ("next", False, False))
        >>> p, h = np.ones(2, np.float32), np.array([0.1, 0.0, 0.9, 0.1])
        >>> len(step(p, p, p, h, p, p, p, h))       # two parameters: (p, buf) each
        4
    """

    __slots__ = ("many", "k", "mode", "__name__")

    def __init__(self, many, k, mode):
        self.many, self.k, self.mode = many, k, mode
        self.__name__ = many.__name__

    def __call__(self, *values):
        k = self.k
        items = [values[i:i + k] for i in range(0, len(values), k)]
        return [r for res in self.many(items, self.mode) for r in res]


def _update_key(step, nodes):
    """(op, mode, hyper-parameter slot) of a plan step that may join a batch of updates, else None."""
    fn, npos, ins, outs = step
    if npos is None:
        return None
    node = nodes[npos]
    name = getattr(node.prim, "name", None)
    entry = _BATCHED.get(name)
    if entry is None or len(ins) != entry[2] or not getattr(node.prim, "plan_attrs", False) \
            or registry.kernel(name, "flex") is not entry[0]:
        return None                 # not an update, or another kernel took flex's place
    attrs = node.attrs or {}
    template = attrs.get("template", ())
    if attrs.get("kwargs") or len(template) != len(ins) + 1:
        return None
    if (any(_arg_dtype(x) is not float32 for x in node.args[:-1]) or _arg_dtype(node.args[-1]) not in (float32, float64)
            or any(m.dtype is not float32 for m in node.metas)):
        return None                 # half types take flex's adapted kernel (HalfKernel), one call each
    return name, template[len(ins)], ins[-1]


def merge_steps(steps, nodes):
    """``FlexBackend.merge_steps``: each run of two or more consecutive, independent updates of one
    key (:func:`_update_key`) replaced by one :class:`_BatchedUpdates` step; None where there is none.

    Example:
        >>> from burn_flex.batched import merge_steps
        >>> assert merge_steps([], []) is None
    """
    out, index_of, run, run_key = [], [], [], None
    merged = False

    def close():
        nonlocal merged
        if len(run) < 2:
            for st in run:
                out.append(st)
            return
        merged = True
        entry = _BATCHED[run_key[0]]
        ins = [s for st in run for s in st[2]]
        outs = [s for st in run for s in st[3]]
        out.append((_BatchedUpdates(entry[1], entry[2], run_key[1]), None, ins, outs))

    for st in steps:
        key = _update_key(st, nodes)
        # a member must not read what an earlier member of its batch writes: the batch reads
        # every input before it writes
        if key is not None and run and key == run_key and not ({s for r in run for s in r[3]} & set(st[2])):
            run.append(st)
            index_of.append(len(out))
            continue
        close()
        run, run_key = ([st], key) if key is not None else ([], None)
        if key is None:
            out.append(st)
            index_of.append(len(out) - 1)
        else:
            index_of.append(len(out))
    close()
    return (out, index_of) if merged else None
