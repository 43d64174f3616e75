"""Plans: the imported graph specialized to one input signature (shapes, dtypes, device).

The first call with a new signature walks the nodes once: constant nodes and everything
computable from shapes are folded with numpy (:mod:`.folding`), each remaining node's rule
(:mod:`.registry`) is built with its static inputs as numbers and run on the real inputs,
and the steps are recorded. Later calls with that signature replay the steps: one list of
``(run, input slots, output slot)`` with nothing else interpreted per call.

Example:
    >>> from burn_onnx.importer.plan import Plan
    >>> p = Plan([None, None], [0], [], [(lambda x: x * 2, (0,), 1)], [1])
    >>> import burn
    >>> assert p.run([burn.tensor([1.0])], [])[0].tolist() == [2.0]
"""
from __future__ import annotations

import numpy as np

import burn

from .folding import fold
from .registry import META, OPS

__all__ = ["Plan", "make_plan", "NEVER_FOLDED"]

NEVER_FOLDED = frozenset({"burn.Linear", "If", "RandomNormal", "RandomUniform", "RandomNormalLike",
                          "RandomUniformLike"})


class Plan:
    """A recorded run: a slot template (constants filled in), where inputs and module
    references go, the steps, and which slots are the outputs."""

    __slots__ = ("template", "in_slots", "ref_slots", "steps", "out_slots")

    def __init__(self, template, in_slots, ref_slots, steps, out_slots):
        self.template, self.in_slots, self.ref_slots = template, in_slots, ref_slots
        self.steps, self.out_slots = steps, out_slots

    def run(self, inputs, refs) -> list:
        """The outputs for ``inputs`` (tensors) and ``refs`` (parameters, buffers, layers)."""
        env = self.template.copy()
        for s, v in zip(self.in_slots, inputs):
            env[s] = v
        for s, v in zip(self.ref_slots, refs):
            env[s] = v
        for fn, ins, out in self.steps:
            r = fn(*[env[i] for i in ins])
            if type(out) is int:
                env[out] = r
            else:
                for o, v in zip(out, r):
                    if o >= 0:
                        env[o] = v
        return [env[s] for s in self.out_slots]


class _Builder:
    """Slots and values while a plan is made."""

    def __init__(self, device):
        self.device = device
        self.template, self.slot, self.value = [None], {}, {}   # slot 0 holds None
        self.live = [None]             # what each slot holds during this first run
        self.tensor_of = {}                                      # constant name -> its device tensor slot

    def new_slot(self, name, value, filled=None):
        self.slot[name] = len(self.template)
        self.template.append(filled)
        self.live.append(value)
        self.value[name] = value
        return self.slot[name]

    def const_slot(self, name, static):
        """The slot of constant ``name``: the array itself for a static input, else a device tensor."""
        if static:
            key = ("static", name)
            if key not in self.tensor_of:
                self.tensor_of[key] = len(self.template)
                self.template.append(self.value[name])
                self.live.append(self.value[name])
            return self.tensor_of[key]
        if name not in self.tensor_of:
            arr = np.ascontiguousarray(self.value[name])
            self.tensor_of[name] = len(self.template)
            self.template.append(burn.from_numpy(arr.copy(), device=self.device))
            self.live.append(self.template[-1])
        return self.tensor_of[name]


def _is_const(v):
    return isinstance(v, np.ndarray)


def _plan_nodes(nodes, b, steps, device):
    """Plan ``nodes`` into ``steps``: fold what is constant, build and run the rest once. An
    ``If`` whose condition is known now (a constant, or computed from shapes) plans the
    taken branch in its place."""
    for node in nodes:
        ins = [b.value[n] if n else None for n in node.inputs]
        if all(v is None or _is_const(v) for v in ins) and node.op not in NEVER_FOLDED:
            for name, v in zip(node.outputs, fold(node, ins)):
                if name:
                    b.value[name] = v
            continue
        if node.op == "If":
            _plan_if(node, ins[0], b, steps, device)
            continue
        if node.op in META:
            b.value[node.outputs[0]] = META[node.op](node, ins[0])
            continue
        r = OPS[node.op]
        if r.build is None:
            raise node.fail(f"its inputs must be constants or computable from shapes, but "
                            f"{[n for n, v in zip(node.inputs, ins) if v is not None and not _is_const(v)]} "
                            f"are computed at run time")
        for i in r.static:
            if i < len(ins) and ins[i] is not None and not _is_const(ins[i]):
                raise node.fail(f"input {i} ({node.inputs[i]!r}) must be computable from constants and "
                                f"shapes when the model is planned, but it depends on run-time values")
        node.device = device
        run = r.build(node, *ins)
        arg_slots = []
        for i, (name, v) in enumerate(zip(node.inputs, ins)):
            if v is None:
                arg_slots.append(0)
            elif _is_const(v):
                arg_slots.append(b.const_slot(name, i in r.static))
            else:
                arg_slots.append(b.slot[name])
        result = run(*[b.live[s] for s in arg_slots])
        outs = [o for o in node.outputs]
        if isinstance(result, (tuple, list)):
            out = tuple(b.new_slot(o, v) if o else -1 for o, v in zip(outs, result))
        else:
            out = b.new_slot(outs[0], result)
        steps.append((run, tuple(arg_slots), out))


def _plan_if(node, cond, b, steps, device):
    if not _is_const(cond):
        raise node.fail("its condition depends on run-time values; burn.onnx imports an If whose condition "
                        "is known when the model is planned (from constants and input shapes), and plans "
                        "the taken branch (rewrite the branch as a Where of both results otherwise)")
    c = np.asarray(cond).reshape(-1)
    if c.size != 1:
        raise node.fail(f"its condition must hold one element, got shape {np.asarray(cond).shape}")
    branch = node.attr("then_branch" if bool(c[0]) else "else_branch")
    b.value.update(branch.inits)
    _plan_nodes(branch.nodes, b, steps, device)
    for out, inner in zip(node.outputs, branch.outputs):
        if out:
            b.value[out] = b.value[inner]
            if inner in b.slot:
                b.slot[out] = b.slot[inner]


def make_plan(nodes, input_names, inputs, ref_names, refs, constants, output_names, device):
    """Build the plan for ``inputs`` and run it once; returns ``(plan, outputs)``.

    ``constants`` maps names to numpy arrays (initializers that are not state, folded
    nodes); ``ref_names``/``refs`` are the module's parameters, buffers and layers.
    """
    b = _Builder(device)
    in_slots = [b.new_slot(n, x) for n, x in zip(input_names, inputs)]
    ref_slots = [b.new_slot(n, r) for n, r in zip(ref_names, refs)]
    b.value.update(constants)
    steps = []
    _plan_nodes(nodes, b, steps, device)
    out_slots = []
    for name in output_names:
        v = b.value[name]
        if _is_const(v):
            out_slots.append(b.const_slot(name, False))
        elif name in b.slot:
            out_slots.append(b.slot[name])
    return Plan(b.template, in_slots, ref_slots, steps, out_slots), [b.live[s] for s in out_slots]

