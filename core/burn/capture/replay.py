"""Replay: a graph's nodes prepared once per backend into a fusion plan, then run per call.

Preparing builds bridge nodes from the graph's data (with placeholder handles for its
inputs, state, constants and host values) and hands them to the fusion planner once: the
element-wise chains, reduction prologues and matmul epilogues are compiled then, as for
any flush. A replay only binds the placeholders' values, gives each random op a fresh key
from its device (so a replay draws the numbers the eager call would have drawn), and runs
the plan's steps: no Python per recorded op beyond the plan's own loop. A backend may run
replays its own way (``Backend.prepare_replay``): cuda through CUDA graphs, wgpu through
pre-bound kernels; flex runs the plan's steps flattened once (``burn_flex.replay``).
"""
from __future__ import annotations

import os
from weakref import ref as _weakref

from ..backend import running_on
from ..bridge import Handle, Node
from ..dispatch import registry
from ..errors import CaptureError
from ..fusion import build_plan
from ..primitives import TensorMeta

__all__ = ["Prepared", "missing_op_error"]

_new = object.__new__
_DEAD = _weakref(Handle((), None, None))      # an output nobody holds: the planner may drop it
_UNSET = object()
# bumped whenever kernels change (a registration, a plugin loaded or forgotten): a prepared
# replay holds kernel functions in its plan, so one prepared before is built again
_KERNELS_GENERATION = [0]


def _kernels_changed():
    _KERNELS_GENERATION[0] += 1


registry.on_invalidate(_kernels_changed)


def current(prepared) -> bool:
    """Whether ``prepared`` was built with the kernels registered now."""
    return prepared.generation == _KERNELS_GENERATION[0]


def missing_op_error(op: str, where: str, plugin: str | None = None, distribution: str | None = None):
    """The error for a graph op this process does not know, saying which plugin provides it."""
    if plugin or distribution:
        who = f"plugin '{plugin}'" if plugin else "its plugin"
        hint = f"; it comes from {who}" + (f": pip install {distribution}" if distribution and distribution != "?" else "")
    else:
        ns = op.partition("::")[0] if "::" in op else None
        hint = (f"; it is an extension op of namespace '{ns}': install and enable the plugin that registers it"
                if ns else "; it is not a primitive of this burn version")
    return CaptureError(f"{where}: the graph uses op '{op}', which is not registered in this process{hint} "
                        f"(`burn info` lists the installed plugins)")


def _handle(meta):
    h = _new(Handle)
    h.shape, h.dtype, h.graph, h.data, h.node, h.index = tuple(meta[0]), meta[1], None, None, None, 0
    return h


class Prepared:
    """A graph's nodes and plan on one backend (built on its first replay there).

    Example:
        >>> import burn
        >>> g = burn.capture.trace(lambda x: (x * 2).exp(), burn.ones((3,)))
        >>> _ = g(burn.ones((3,)))
        >>> prep = g._prepared["flex"]
        >>> assert len(prep.nodes) == 2 and prep.plan.steps
    """

    __slots__ = ("nodes", "plan", "externals", "sources", "held", "rng", "backend", "runners", "generation")

    def __init__(self, graph, backend):
        metas = {"in": graph.inputs, "state": graph.state, "const": graph.consts, "host": graph.hosts}
        placeholders = {}
        needed = set()
        for ref in graph.result_refs():
            if ref[0] == "node":
                needed.add((ref[1], ref[2]))
        nodes, held = [], {}
        ops = registry.ops
        if graph.nodes:
            registry.ensure_loaded()
        self.generation = _KERNELS_GENERATION[0]     # after loading plugins: their kernels count
        for p, gn in enumerate(graph.nodes):
            prim = ops.get(gn.op)
            if prim is None:
                info = graph.op_plugins.get(gn.op, {})
                raise missing_op_error(gn.op, "burn.Graph replay", info.get("plugin"), info.get("distribution"))
            args = []
            for r in gn.inputs:
                if r[0] == "node":
                    args.append((nodes[r[1]], r[2]))
                else:
                    h = placeholders.get(r)
                    if h is None:
                        slot = metas[r[0]][r[1]]
                        h = placeholders[r] = _handle((slot.shape, slot.dtype))
                    args.append(h)
            n = _new(Node)
            n.prim, n.args, n.attrs, n.error, n.pos = prim, tuple(args), dict(gn.attrs), None, p
            n.metas = tuple(TensorMeta(tuple(s), d) for s, d in gn.outputs)
            outs = []
            for k, m in enumerate(gn.outputs):
                if (p, k) in needed:
                    h = held[(p, k)] = _handle(m)
                    outs.append(_weakref(h))
                else:
                    outs.append(_DEAD)
            n.outs = tuple(outs)
            nodes.append(n)
        self.nodes = nodes
        self.plan, self.externals = build_plan(nodes, backend) if nodes else (None, [])
        self.sources = list(placeholders.items())
        self.held = held
        self.rng = [n for n in nodes if "_key" in n.attrs]
        self.backend = backend
        self.runners = {}           # device index -> the backend's replay runner, or None (the plan)

    def runner(self, index):
        """The backend's replay runner on device ``index`` (made on first use), or None.

        ``BURN_CAPTURE_BACKEND_REPLAY=0`` turns the backend hooks off (every replay runs the plan)."""
        try:
            return self.runners[index]
        except KeyError:
            pass
        r = None
        if self.plan is not None and os.environ.get("BURN_CAPTURE_BACKEND_REPLAY", "1") != "0":
            r = self.backend.prepare_replay(self, index)
        self.runners[index] = r
        return r

    def describe(self, index=0) -> str:
        """How replays run on device ``index``: the backend runner's description, or the plan's.

        Example:
            >>> import burn
            >>> g = burn.capture.trace(lambda x: x + 1, burn.ones((2,)))
            >>> _ = g(burn.ones((2,)))
            >>> print(g._prepared["flex"].describe())
            flex flat replay (1 steps, attributes bound once; steps in Python: step 'add' has no native form)
        """
        r = self.runners.get(index)
        if r is not None:
            return r.describe()
        return f"fusion plan ({len(self.plan.steps) if self.plan is not None else 0} steps)"

    def run(self, values, lazy_graph, keys=None):
        """Run once: ``values`` maps each source ref to its native array; returns
        ``{(node, output): native array}`` for the results the graph keeps. ``keys``: one
        random key per random node, in order (default: fresh ones from the device)."""
        if keys is not None and len(keys) != len(self.rng):
            raise CaptureError(f"burn.Graph replay: {len(keys)} random keys given for {len(self.rng)} random ops")
        index = lazy_graph.index
        # the sources, the random keys and the held results are this Prepared's own slots: a
        # replay from another thread waits for the lock (else it would run on this one's inputs)
        with lazy_graph.lock:
            for ref, h in self.sources:
                h.data = values[ref]
            try:
                for i, n in enumerate(self.rng):
                    attrs = dict(n.attrs)
                    attrs["_key"] = lazy_graph.next_key() if keys is None else tuple(keys[i])
                    n.attrs = attrs
                if self.plan is not None:
                    with running_on(index):
                        r = self.runners.get(index, _UNSET)
                        if r is _UNSET:
                            r = self.runner(index)
                        if r is None or not r.run(self, index):
                            self.plan.run(self.nodes, self.externals, index)
                out = {}
                for key, h in self.held.items():
                    out[key] = h.data
                    h.data = None
                return out
            finally:
                for _, h in self.sources:
                    h.data = None
