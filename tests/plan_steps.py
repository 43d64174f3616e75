"""The plan steps a computation runs (tests of a backend's ``merge_steps``: which steps a flush's
plan ended up with)."""
from __future__ import annotations

from burn import fusion


def steps_run(fn):
    """``(fn(), names)``: ``fn()``'s result and the ``__name__`` of every plan step its flushes ran,
    in order ("" for a step without one)."""
    names = []
    real = fusion._run_steps

    def spy(plan_steps, nodes, env):
        names.extend(getattr(st[0], "__name__", "") for st in plan_steps)
        return real(plan_steps, nodes, env)
    fusion._run_steps = spy
    try:
        return fn(), names
    finally:
        fusion._run_steps = real
