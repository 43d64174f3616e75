"""Bridge: the type-erased handle between the Tensor API and the backends.

A :class:`Handle` knows its shape, dtype and device graph at once (so every
check happens at the user's call), and holds either a backend-native array
(``data``) or the pending graph :class:`Node` that will produce it. Nodes
reference the *nodes* that produce their inputs, not the handles, so a handle
the user dropped is recognised at flush time as a temporary that fusion need
not materialise.
"""
from __future__ import annotations

import weakref

__all__ = ["Handle", "Node", "record", "materialized"]


class Node:
    """One pending op of the lazy graph."""

    __slots__ = ("prim", "args", "attrs", "outs", "metas", "pos", "error")

    def __init__(self, prim, args, attrs, metas):
        self.prim = prim
        self.error = None       # set when a flush failed before this node ran
        self.args = args        # per input: a Handle (materialized) or (Node, out_index)
        self.attrs = attrs      # dict of hashable attributes
        self.metas = metas      # tuple of TensorMeta, one per output
        self.outs = ()          # weakrefs to the output Handles
        self.pos = -1           # index in the graph's pending list (set by LazyGraph.add)


class Handle:
    """A tensor's value: a native array, or a promise of one from a Node."""

    __slots__ = ("shape", "dtype", "graph", "data", "node", "index", "__weakref__")

    def __init__(self, shape, dtype, graph, data=None, node=None, index=0):
        self.shape = shape
        self.dtype = dtype
        self.graph = graph
        self.data = data
        self.node = node
        self.index = index

    def value(self):
        """The native array, running the pending graph if needed."""
        if self.node is not None:
            self.graph.flush()
            node = self.node
            if node is not None:
                from .errors import BurnError
                raise BurnError(
                    f"the value of this tensor (op '{node.prim.name}', shape {self.shape}) was never computed: "
                    f"an op in the same pending graph failed: {node.error}") from node.error
        return self.data

    def as_arg(self):
        node = self.node
        return self if node is None else (node, self.index)


def materialized(shape, dtype, graph, data) -> Handle:
    return Handle(shape, dtype, graph, data)


def record(graph, prim, handles, attrs, metas):
    """Append a node computing ``prim`` on ``handles`` to ``graph``; return its
    output handle(s). ``metas`` were computed (and validated) by the caller."""
    node = Node(prim, tuple([h if h.node is None else (h.node, h.index) for h in handles]), attrs, metas)
    if len(metas) == 1:      # the hot path: no generator objects
        m = metas[0]
        h = Handle(m.shape, m.dtype, graph, None, node, 0)
        node.outs = (weakref.ref(h),)
        graph.add(node)
        return (h,)
    outs = [Handle(m.shape, m.dtype, graph, None, node, i) for i, m in enumerate(metas)]
    node.outs = tuple([weakref.ref(h) for h in outs])
    graph.add(node)
    return outs
