"""Whole-graph backends: a backend that takes each flushed graph at once, instead of groups.

Most backends run a flush group by group (:mod:`burn.fusion`). A backend whose work runs
elsewhere (burn-remote ships each flush to a server) wants the whole flushed graph as data,
once per structure, and then only the values per flush. Such a backend sets
``Backend.compiles_graphs = True`` and implements ``Backend.compile_graph(flushed)``: the
planner hands it a :class:`FlushedGraph` (the live nodes, in burn.Graph's terms) the first
time a structure is flushed, and caches the callable it returns with the plan, so a
repeated training step calls ``compile_graph`` once.

The callable is ``run(inputs, keys, index) -> outputs``: ``inputs`` are the native arrays
of the graph's inputs (``FlushedGraph.inputs``, in order), ``keys`` the random keys of its
random nodes (``FlushedGraph.random``, in order; a key is the ``(seed, counter)`` pair the
device drew when the op was recorded), ``index`` the device index; it returns one native
array per ``FlushedGraph.outputs`` entry.

Example (a toy whole-graph backend that runs on flex):
    >>> import burn
    >>> from burn.wholegraph import FlushedGraph, plan_whole_graph
    >>> x = burn.tensor([1.0, 2.0]); _ = x.numpy()
    >>> from burn.graph import graph_for
    >>> g = graph_for(x.device)
    >>> y = (x * x).exp()
    >>> seen = []
    >>> class Toy:
    ...     def compile_graph(self, flushed):
    ...         seen.append(flushed)
    ...         return lambda inputs, keys, index: [inputs[0]]
    >>> plan = plan_whole_graph(g.pending, {id(n): i for i, n in enumerate(g.pending)}, Toy())
    >>> f = seen[0]
    >>> assert [n.op for n in f.nodes] == ["mul", "exp"] and f.nodes[0].inputs == (("in", 0), ("in", 0))
    >>> assert f.outputs == [("node", 1, 0)] and len(f.inputs) == 1 and f.random == []
    >>> g.pending = []
"""
from __future__ import annotations

from typing import NamedTuple

from .errors import BurnError, FailedValue

__all__ = ["FlushedGraph", "FlushedNode", "WholeGraphPlan", "plan_whole_graph"]


class FlushedNode(NamedTuple):
    """One live node of a flush, with the fields of :class:`burn.capture.GraphNode`: ``op``
    name, ``attrs`` (a random node's ``"_key"`` is left in, its value is per flush),
    ``inputs`` (``("in", i)`` or ``("node", p, k)``) and ``outputs`` ((shape, dtype) each).

    Example:
        >>> import burn
        >>> from burn.wholegraph import FlushedNode
        >>> n = FlushedNode("exp", {}, (("in", 0),), (((2,), burn.float32),))
        >>> assert n.op == "exp" and n.outputs[0][0] == (2,)
    """
    op: str
    attrs: dict
    inputs: tuple
    outputs: tuple


class FlushedGraph(NamedTuple):
    """A flushed graph as data: ``nodes`` (:class:`FlushedNode`, dead ones removed),
    ``inputs`` ((shape, dtype) of each distinct materialized input), ``outputs`` (the
    ``("node", p, k)`` references someone still holds) and ``random`` (positions of the
    nodes with a random key, in order).

    Example:
        >>> from burn.wholegraph import FlushedGraph
        >>> f = FlushedGraph([], [], [], [])
        >>> assert f.nodes == [] and f.random == []
    """
    nodes: list
    inputs: list
    outputs: list
    random: list


class WholeGraphPlan:
    """The plan of a flush on a whole-graph backend: it collects the inputs' native arrays and
    the random keys, calls the backend's compiled callable once, and stores the results in the
    output handles still held. Built (and cached) by the planner; users never build one.

    Example:
        >>> from burn.wholegraph import WholeGraphPlan
        >>> p = WholeGraphPlan(lambda ins, keys, index: [], [], [], [])
        >>> assert p.run([], [], 0) is None
    """

    __slots__ = ("fn", "ext_index", "random", "results", "steps")

    def __init__(self, fn, ext_index, random, results):
        self.fn = fn
        self.ext_index = ext_index      # per distinct input: its first occurrence in the externals
        self.random = random            # flushed-list positions of the random nodes
        self.results = results          # (flushed-list position, output index) per output
        self.steps = [fn]               # one step: the whole graph (for code reading plan.steps)

    def run(self, nodes, externals, index):
        """Run the flush: ``nodes`` as flushed, ``externals`` per argument occurrence (as
        :class:`burn.fusion.Plan` reads them), ``index`` the device index."""
        ins = [externals[e].data for e in self.ext_index]
        bad = next((v for v in ins if v.__class__ is FailedValue), None)
        if bad is not None:
            outs = [bad] * len(self.results)
        else:
            keys = [nodes[p].attrs["_key"] for p in self.random]
            outs = self.fn(ins, keys, index)
            if len(outs) != len(self.results):
                raise BurnError(f"whole-graph backend: the compiled graph returned {len(outs)} values for "
                                f"{len(self.results)} outputs")
        for (p, k), v in zip(self.results, outs):
            h = nodes[p].outs[k]()
            if h is not None:
                h.data = v
                h.node = None


def plan_whole_graph(nodes, pos, backend) -> WholeGraphPlan:
    """The :class:`WholeGraphPlan` of ``nodes`` (``pos``: id(node) -> position) on ``backend``,
    which compiles the :class:`FlushedGraph` (see the module docstring)."""
    live = [False] * len(nodes)
    for i in range(len(nodes) - 1, -1, -1):     # dead-code elimination, as the fusion planner does
        n = nodes[i]
        if not live[i] and any(w() is not None for w in n.outs):
            live[i] = True
        if live[i]:
            for a in n.args:
                if type(a) is tuple:
                    live[pos[id(a[0])]] = True
    new_pos, flushed_nodes, random, rand_src, results, outputs = {}, [], [], [], [], []
    ext_ids, ext_index, inputs = {}, [], []
    occurrence = 0
    for i, n in enumerate(nodes):
        refs = []
        for a in n.args:
            if type(a) is tuple:
                if live[i]:
                    refs.append(("node", new_pos[pos[id(a[0])]], a[1]))
            else:
                if live[i]:
                    e = ext_ids.get(id(a))
                    if e is None:
                        e = ext_ids[id(a)] = len(inputs)
                        inputs.append((a.shape, a.dtype))
                        ext_index.append(occurrence)
                    refs.append(("in", e))
                occurrence += 1       # externals are listed per occurrence, dead nodes included
        if not live[i]:
            continue
        p = new_pos[i] = len(flushed_nodes)
        if "_key" in n.attrs:
            random.append(p)
            rand_src.append(i)
        flushed_nodes.append(FlushedNode(n.prim.name, dict(n.attrs), tuple(refs),
                                         tuple((m.shape, m.dtype) for m in n.metas)))
        for k, w in enumerate(n.outs):
            if w() is not None:
                results.append((i, k))
                outputs.append(("node", p, k))
    fn = backend.compile_graph(FlushedGraph(flushed_nodes, inputs, outputs, random))
    return WholeGraphPlan(fn, ext_index, rand_src, results)
