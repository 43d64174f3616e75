"""Bridge: the type-erased handle between the Tensor API and the backends.

A :class:`Handle` knows its shape, dtype and device graph at once (so every
check happens at the user's call), and holds either a backend-native array
(``data``) or the pending graph :class:`Node` that will produce it. Nodes
reference the *nodes* that produce their inputs, not the handles, so a handle
the user dropped is recognised at flush time as a temporary that fusion need
not materialise.
"""
from __future__ import annotations

from weakref import ref as _weakref
from . import dlpack as _dlpack
from .errors import BurnError, FailedValue

__all__ = ["Handle", "Node", "record", "materialized", "values_of", "TRACE"]


_new = object.__new__

# The trace in progress (``burn.capture``), or None. While one is set, reading a value on its
# thread raises (``trace.on_read``): a trace records ops, it does not run them, and a Python
# value read from one could not change on replay. In-place updates report to it (tensor._stamp).
TRACE = [None]


class Node:
    """One pending op of the lazy graph."""

    # "site" is set only on ops whose validity depends on values (burn.errors.record_site):
    # left unset elsewhere, so the hot path that builds nodes does not pay for it
    __slots__ = ("prim", "args", "attrs", "outs", "metas", "pos", "error", "site")

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
        if TRACE[0] is not None:        # a value made inside a trace is one of its constants
            TRACE[0].on_create(self)

    def value(self):
        """The native array, running the pending graph if needed."""
        if TRACE[0] is not None:
            TRACE[0].on_read(self)
        if self.node is not None:
            self.graph.flush()
            node = self.node
            if node is not None:
                raise BurnError(
                    f"the value of this tensor (op '{node.prim.name}', shape {self.shape}) was never computed: "
                    f"an op in the same pending graph failed: {node.error}") from node.error
        data = self.data
        if _dlpack.GUARDS:
            err = _dlpack.written(data)     # memory shared by from_dlpack(copy=False), written by its owner
            if err is not None:
                raise err
        if data.__class__ is FailedValue:
            # a data-dependent error of this value's computation (or of one it depends on)
            raise data.error.with_traceback(None)
        return data

    def as_arg(self):
        node = self.node
        return self if node is None else (node, self.index)


def values_of(handles) -> list:
    """``[h.value() for h in handles]`` (a replay reads every input and parameter): the checks
    that apply to none of them here (no trace in progress, no shared memory under a guard, nothing
    pending or failed) are made once for the list instead of once per handle.

    Example:
        >>> import burn
        >>> from burn.bridge import values_of
        >>> a, b = burn.tensor([1.0]), burn.tensor([2.0]) + 1
        >>> [v.tolist() for v in values_of([a._h, b._h])]
        [[1.0], [3.0]]
    """
    if TRACE[0] is not None or _dlpack.GUARDS:
        return [h.value() for h in handles]
    out = []
    append = out.append
    for h in handles:
        d = h.data
        append(h.value() if h.node is not None or d.__class__ is FailedValue else d)
    return out


def materialized(shape, dtype, graph, data) -> Handle:
    return Handle(shape, dtype, graph, data)


def record(graph, prim, handles, attrs, metas):
    """Append a node computing ``prim`` on ``handles`` to ``graph``; return its
    output handle(s). ``metas`` were computed (and validated) by the caller.

    (``Tensor``'s one-output hot path, :func:`burn.tensor.apply`, inlines this.)

    Example:
        >>> import burn
        >>> from burn.bridge import record
        >>> burn.plugins.ensure_loaded()
        >>> x = burn.tensor([1.0, 4.0])
        >>> sqrt = burn.dispatch.registry.ops["sqrt"]
        >>> (h,) = record(x._h.graph, sqrt, [x._h], {}, (burn.TensorMeta((2,), burn.float32),))
        >>> assert h.node is not None and h.value().tolist() == [1.0, 2.0] and h.node is None
    """
    for m in metas:
        if m.dtype not in graph.dtypes:
            graph.check_dtype(m.dtype, prim.name)
    args = []
    for h in handles:
        args.append(h if h.node is None else (h.node, h.index))
    # Node(...) and Handle(...) inlined: their __init__ calls cost ~0.1 us each
    node = _new(Node)
    node.prim = prim
    node.args = tuple(args)
    node.attrs = attrs
    node.metas = metas
    node.error = None
    node.pos = -1
    outs = []
    refs = []
    for i, m in enumerate(metas):
        h = _new(Handle)
        h.shape = m.shape
        h.dtype = m.dtype
        h.graph = graph
        h.data = None
        h.node = node
        h.index = i
        outs.append(h)
        refs.append(_weakref(h))
    node.outs = tuple(refs)
    graph.add(node)
    return outs
