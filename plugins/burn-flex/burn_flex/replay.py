"""burn.capture replays on flex: the fusion plan's steps flattened once (``prepare_replay``).

A plan run (``burn.fusion.Plan.run``) is written for any flush: it reads each external
argument per occurrence, checks shared DLPack memory, looks each step's attributes up on its
node and finds the held outputs through weak references. A replayed graph's plan is fixed,
so this runner does that work once: the sources' slots are listed once per distinct
placeholder, a step's static attributes are bound into it (only random ops read theirs per
replay: their key changes), and the results are written straight into the held handles.
The kernels and the slots are the plan's: a replay computes exactly what the plan computes.

Consecutive optimizer updates of one kind (a step's ``opt.step``: one ``burn::adam_update`` or
``burn::sgd_update`` per parameter, float32, one mode, one hyper-parameter input) become one
step calling ``adam_update_many`` / ``sgd_update_many``: the same kernel per parameter, the
per-call argument handling done once (``burn_flex.kernels.optim``).

Where the plan has more to do, this runner declines that replay and the plan runs it (so it
fails, or computes, as eager does): a source that is a failed value, DLPack memory under a
guard, and a step raising an IndexError (a data-dependent error; kernels return fresh
arrays and never write their inputs, so running the plan again from the start is safe).
``BURN_CAPTURE_BACKEND_REPLAY=0`` turns it off (docs/capture.md).
"""
from __future__ import annotations

from functools import partial
from operator import itemgetter

from burn import dlpack as _dlpack, float32, float64
from burn.dispatch import registry
from burn.errors import FailedValue
from burn.fusion import _StepFailed, _arg_dtype, _run_steps

from .kernels import optim

__all__ = ["FlatReplay", "prepare_replay"]


def prepare_replay(prepared, index):
    """The runner ``FlexBackend.prepare_replay`` answers with (None where the plan is not
    flex's ordinary slot plan, e.g. a whole-graph plan)."""
    plan = prepared.plan
    if plan is None or not hasattr(plan, "ext_slots") or not hasattr(plan, "steps"):
        return None
    return FlatReplay(prepared)


class FlatReplay:
    """A prepared graph's plan as a flat list of steps with their attributes bound.

    Example:
        >>> import burn
        >>> g = burn.capture.trace(lambda x: (x * 2).exp() + 1, burn.ones((3,)))
        >>> _ = g(burn.ones((3,)))
        >>> assert g._prepared["flex"].describe().startswith("flex flat replay")
    """

    __slots__ = ("n_slots", "sources", "steps", "nodes", "results", "n_steps")

    def __init__(self, prepared):
        plan, nodes = prepared.plan, prepared.nodes
        self.n_slots = plan.n_slots
        seen = {}
        for slot, h in zip(plan.ext_slots, prepared.externals):
            seen.setdefault(slot, h)           # one slot per placeholder: read each once
        self.sources = tuple(seen.items())
        random = {id(n) for n in prepared.rng}
        steps = []
        for fn, npos, n, a, b, out, frees in plan.steps:
            node = nodes[npos] if npos is not None else None
            dynamic = node is not None and id(node) in random
            attrs = node.attrs if node is not None and not dynamic else None
            if attrs:
                fn = partial(fn, **attrs)
            # a step keeps its node position only where its attributes change per replay (a
            # random op's key): the plan's step loop then reads them from the node each time
            steps.append((fn, npos if dynamic else None, n, a, b, out, tuple(frees)))
        self.steps = tuple(_batch_updates(steps, plan.steps, nodes))
        self.nodes = nodes
        held = prepared.held
        self.results = tuple((held[(p, k)], slot) for p, k, slot in plan.results if (p, k) in held)
        self.n_steps = len(steps)

    def describe(self) -> str:
        return f"flex flat replay ({self.n_steps} steps, attributes bound once)"

    def run(self, prepared, index) -> bool:
        if _dlpack.GUARDS:
            return False            # shared memory may have been written: the plan checks it
        env = [None] * self.n_slots
        for slot, h in self.sources:
            d = h.data
            if d.__class__ is FailedValue:
                return False
            env[slot] = d
        try:
            _run_steps(self.steps, self.nodes, env)     # the plan's own step loop
        except _StepFailed:
            return False             # the plan runs this replay and fails its dependents as eager does
        for h, slot in self.results:
            h.data = env[slot]
        return True


# op -> (flex's kernel, its batched form, tensor inputs)
_BATCHED = {"burn::adam_update": (optim.adam_update, optim.adam_update_many, 5),
            "burn::sgd_update": (optim.sgd_update, optim.sgd_update_many, 4)}


class _BatchedUpdates:
    """The step that runs several updates of one kind: ``(*inputs)`` -> every output, in order."""

    __slots__ = ("many", "k", "mode", "__name__")

    def __init__(self, many, k, mode):
        self.many, self.k, self.mode = many, k, mode
        self.__name__ = many.__name__

    def __call__(self, *values):
        k = self.k
        items = [values[i:i + k] for i in range(0, len(values), k)]
        return [r for res in self.many(items, self.mode) for r in res]


def _update_key(plan_step, nodes):
    """(op, mode, hyper-parameter slot) of a plan step that may join a batch of updates, else None."""
    fn, npos, n, a, b, out, frees = plan_step
    if npos is None:
        return None
    node = nodes[npos]
    name = getattr(node.prim, "name", None)
    entry = _BATCHED.get(name)
    if entry is None or n != entry[2] or registry.kernel(name, "flex") is not entry[0]:
        return None                 # not an update, or another kernel took flex's place
    attrs = node.attrs or {}
    template = attrs.get("template", ())
    if attrs.get("kwargs") or len(template) != n + 1 or type(out) is int:
        return None
    if (any(_arg_dtype(x) is not float32 for x in node.args[:-1]) or _arg_dtype(node.args[-1]) not in (float32, float64)
            or any(m.dtype is not float32 for m in node.metas)):
        return None                 # half types take flex's adapted kernel (HalfKernel), one call each
    ins = b.__reduce__()[1]
    return (name, template[n], ins[-1]), ins


def _batch_updates(steps, plan_steps, nodes):
    """``steps`` with each run of two or more consecutive, independent updates of one key
    (:func:`_update_key`) replaced by one :class:`_BatchedUpdates` step."""
    result, run, run_key = [], [], None

    def close():
        if len(run) < 2:
            result.extend(st for st, _ in run)
            return
        ins = [s for _, i in run for s in i]
        outs = tuple(s for st, _ in run for s in st[5])
        frees = tuple(s for st, _ in run for s in st[6])
        entry = _BATCHED[run_key[0]]
        fn = _BatchedUpdates(entry[1], entry[2], run_key[1])
        result.append((fn, None, len(ins), ins[0], itemgetter(*ins), outs, frees))

    for st, pst in zip(steps, plan_steps):
        found = _update_key(pst, nodes) if st[1] is None else None
        if found is not None and run and found[0] == run_key:
            key, ins = found
            read = {s for _, i in run for s in i}
            written = {s for rs, _ in run for s in rs[5]}
            freed = {s for rs, _ in run for s in rs[6]}
            # joining must not change what any member reads or keeps: the batch reads every
            # input first and writes every output, then frees, after its last member
            if not (written & set(ins)) and not (set(st[5]) & (read | written | freed)):
                run.append((st, ins))
                continue
        close()
        run, run_key = [], None
        if found is not None:
            run, run_key = [(st, found[1])], found[0]
        else:
            result.append(st)
    close()
    return result
