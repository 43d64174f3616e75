"""burn.capture replays on flex: the fusion plan's steps flattened once (``prepare_replay``).

A plan run (``burn.fusion.Plan.run``) is written for any flush: it reads each external
argument per occurrence, checks shared DLPack memory, looks each step's attributes up on its
node and finds the held outputs through weak references. A replayed graph's plan is fixed,
so this runner does that work once: the sources' slots are listed once per distinct
placeholder, a step's static attributes are bound into it (only random ops read theirs per
replay: their key changes), and the results are written straight into the held handles. A step
function with a ``replay_form(attrs)`` method (the merged convolutions of
``burn_flex.conv_epilogue``) is replaced by what it returns: the step with its attributes bound
that also keeps what it derives from the shapes it is called with.
The kernels and the slots are the plan's: a replay computes exactly what the plan computes.

A step's optimizer updates arrive already batched into one plan step (``burn_flex.batched``,
the backend's ``merge_steps``), as in eager flushes.

Where the plan has more to do, this runner declines that replay and the plan runs it (so it
fails, or computes, as eager does): a source that is a failed value, DLPack memory under a
guard, and a step raising an IndexError (a data-dependent error; kernels return fresh
arrays and never write their inputs, so running the plan again from the start is safe).
``BURN_CAPTURE_BACKEND_REPLAY=0`` turns it off (docs/capture.md).
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from burn import dlpack as _dlpack
from burn.errors import FailedValue
from burn.fusion import _StepFailed, _run_steps

from . import native_replay as _native

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

    __slots__ = ("n_slots", "sources", "steps", "nodes", "results", "n_steps", "program")

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
            form = None if dynamic else getattr(fn, "replay_form", None)
            if form is not None:         # a step that prepares more than its attributes (conv_epilogue)
                fn = form(attrs or {})
            elif attrs:
                fn = partial(fn, **attrs)
            # a step keeps its node position only where its attributes change per replay (a
            # random op's key): the plan's step loop then reads them from the node each time
            steps.append((fn, npos if dynamic else None, n, a, b, out, tuple(frees)))
        self.steps = tuple(steps)
        self.nodes = nodes
        held = prepared.held
        self.results = tuple((held[(p, k)], slot) for p, k, slot in plan.results if (p, k) in held)
        self.n_steps = len(steps)
        # burn_flex.native_replay: None until the first replay records its slots, then a Program
        # or the reason (a string) why this replay runs its steps in Python
        self.program = None

    def describe(self) -> str:
        prog = self.program
        if prog is None:
            how = "a native program or not: decided at its first replay"
        else:
            how = prog.describe if isinstance(prog, _native.Program) else f"steps in Python: {prog}"
        return f"flex flat replay ({self.n_steps} steps, attributes bound once; {how})"

    def run(self, prepared, index) -> bool:
        if _dlpack.GUARDS:
            return False            # shared memory may have been written: the plan checks it
        env = [None] * self.n_slots
        for slot, h in self.sources:
            d = h.data
            if d.__class__ is FailedValue:
                return False
            env[slot] = d
        prog = self.program
        if prog.__class__ is _native.Program:
            outs = prog.run(env)
            if outs is not None:
                for (h, _), out in zip(self.results, outs):
                    h.data = out
                return True
        try:
            if prog is None:
                self.program = self._lowered(env)
            else:
                _run_steps(self.steps, self.nodes, env)     # the plan's own step loop
        except _StepFailed:
            return False             # the plan runs this replay and fails its dependents as eager does
        for h, slot in self.results:
            h.data = env[slot]
        return True

    def _lowered(self, env):
        """Run the steps keeping every slot's array, then lower them (``burn_flex.native_replay``):
        the Program, checked to give this run's bits, or why not (a string)."""
        why = _native.why_not(self)
        if why is not None:             # known from the steps: no recording run (it frees nothing)
            _run_steps(self.steps, self.nodes, env)
            return why
        sources = {slot: env[slot] for slot, _ in self.sources}
        for step in self.steps:                 # _run_steps without the frees
            _run_steps((step[:6] + ((),),), self.nodes, env)
        prog = _native.build(self, env)
        if prog.__class__ is not _native.Program:
            return prog
        outs = prog.run(dict(sources))
        if outs is None:
            return "its native program declined the sources it was built from"
        if not all(_same_values(o, env[slot]) for o, (_, slot) in zip(outs, self.results)):
            warnings.warn("burn-flex: a replay lowered to native calls gave other results than its Python "
                          "steps; it runs the Python steps (please report this)", RuntimeWarning, stacklevel=2)
            return "its native program did not reproduce the Python steps' results"
        return prog


def _same_values(a, b) -> bool:
    """Whether ``a`` and ``b`` hold the same bits, a NaN matching any NaN (a NaN's sign and
    payload follow operand order, which neither numpy's loops nor LLVM's fix)."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind != "f":
        return a.tobytes() == b.tobytes()
    ints = np.dtype(f"u{a.dtype.itemsize}")
    return bool(((a.view(ints) == b.view(ints)) | (np.isnan(a) & np.isnan(b))).all())
