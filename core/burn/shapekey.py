"""The fusion planner's relative keys: a flushed graph's structure with its sizes made symbolic.

The plan cache (:mod:`burn.fusion`) first looks a flush up by its exact key (ops, attributes,
input shapes and dtypes, held outputs). On a miss it asks for the graph's *relative* key: the
same structure, with every dimension of every shape in the graph (the external inputs' and
each node's outputs') replaced by a symbol: ``0`` and ``1`` stay themselves (empty and
broadcast dims), any other size becomes ``-1 - k`` for the k-th distinct size met in the
graph. Two graphs with one relative key differ only in sizes, with the same pattern of equal
dims, size-1 (broadcast) dims, ranks and dtypes, so every decision the planner makes
(which shapes are equal, which ops group) is the same for both: the plan of one is the plan
of the other, with the per-size part (a backend's compiled groups) bound again
(``burn.fusion``'s rebinding; Burn keys its fusion plans by relative shapes the same way).

Attributes of ops that fuse stay exact (a reduction's axes, a clip's bounds, a full's shape);
those of boundary ops (a slice's bounds, a reshape's target) are left out, as each runs with
its own node's attributes. Node output shapes are in the key, so sizes computed from
attributes (``x[:5]``, ``reshape(-1, 4)``) can never make two graphs with different
groupings share a key.

Layering: this module sits below :mod:`burn.fusion` and imports only :mod:`burn.dtypes`,
:mod:`burn.errors` and :mod:`burn.primitives`.
"""
from __future__ import annotations

from math import copysign as _copysign

from .dtypes import DType
from .errors import stale_input
from .primitives import ELEMENTWISE, MATMUL, REDUCE

FUSIBLE_KINDS = frozenset((ELEMENTWISE, REDUCE, MATMUL))     # the kinds whose attributes the planner reads
_FUSIBLE = FUSIBLE_KINDS

__all__ = ["attrs_key", "relative_key", "relative_structure_key", "symbolic_shape"]


def attrs_key(attrs):
    """The attributes' part of a plan key. Attributes whose name starts with "_" vary per call
    (e.g. random keys) and are read from the node at run time, so they are left out. Values
    that compare equal but compute differently get distinct keys: a float carries its sign
    (0.0 == -0.0, but clip(x, -0.0, 5) must give -0.0: a compiled group bakes the value in)
    and its type (1 == 1.0 == True).

    >>> assert attrs_key({"min": 0.0}) != attrs_key({"min": -0.0}) != attrs_key({"min": 0})
    >>> assert attrs_key({"keepdims": True}) != attrs_key({"keepdims": 1})
    >>> assert attrs_key({"axis": 1, "_key": 7}) == attrs_key({"axis": 1, "_key": 8})
    """
    out = []
    for k, v in attrs.items():
        if k[0] == "_":
            continue
        t = type(v)
        if t is float:
            out.append((k, v, _copysign(1.0, v)))
        elif t is bool:
            out.append((k, v, bool))
        else:
            out.append((k, v))
    return tuple(out)


def symbolic_shape(shape, dims: dict) -> tuple:
    """``shape`` with sizes other than 0 and 1 replaced by their symbol in ``dims`` (a size
    met for the first time gets the next one: ``-1``, ``-2``, ...).

    Example:
        >>> dims = {}
        >>> assert symbolic_shape((7, 1, 5), dims) == (-1, 1, -2)
        >>> assert symbolic_shape((5, 7, 0), dims) == (-2, -1, 0)      # equal sizes, equal symbols
    """
    out = []
    for d in shape:
        if d > 1:
            s = dims.get(d)
            if s is None:
                s = dims[d] = -1 - len(dims)
            out.append(s)
        else:
            out.append(d)
    return tuple(out)


def relative_key(key, nodes) -> tuple:
    """The relative key of a flushed node list from its exact key (``burn.fusion._structure_key``,
    see the module docstring): every external input's ``(shape, dtype)`` entry becomes
    ``(symbolic shape, dtype)``, the symbolic output shapes of every node follow in one tuple (as
``index, shape`` where the shape changes from the previous output's: a chain adds one entry), and
    the attributes of ops that never fuse (movement, creation, opaque: always a kernel of their
    own, run with their node's attributes) are left out, so ``x[1:]`` or ``x.reshape(-1)`` on a
    new size reuses the plan too.

    Example:
        >>> import burn
        >>> from burn.fusion import _structure_key
        >>> from burn.shapekey import relative_key
        >>> from burn.graph import graph_for
        >>> def key_of(shape):
        ...     x = burn.ones(shape); _ = x.numpy()
        ...     g = graph_for(x.device); g.flush()
        ...     y = (x * 2.0).exp().sum(axis=1)
        ...     k = relative_key(_structure_key(g.pending)[0], g.pending); g.flush()
        ...     return k
        >>> assert key_of((3, 4)) == key_of((50, 7))      # new sizes, same plan
        >>> assert key_of((3, 4)) != key_of((4, 4))       # equal dims: another pattern
        >>> assert key_of((3, 4)) != key_of((3, 1))       # a size-1 dim broadcasts
    """
    dims: dict = {}
    shapes: dict = {}        # shape -> its symbolic form (shapes repeat along a chain)
    out = list(key)
    outs = []                # the output shapes, run-length: (index of the output, symbolic shape) where it changes
    prev = None
    n_out = 0
    i = 0
    for n in nodes:
        na = len(n.args)
        if n.prim.kind not in _FUSIBLE and not getattr(n.prim, "plan_attrs", False):
            # a boundary's attributes (a slice's bounds, a reshape's target) are read from its node
            # when it runs and decide nothing the planner does: its output shapes stand for them
            # (an extension declared with plan_attrs keeps them: a backend's merge_steps reads them)
            out[i + 1] = None
        for j in range(i + 3, i + 3 + na):
            e = out[j]
            if type(e) is tuple and len(e) == 2 and type(e[1]) is DType:       # an external input
                s = shapes.get(e[0])
                if s is None:
                    s = shapes[e[0]] = symbolic_shape(e[0], dims)
                out[j] = (s, e[1])
        i += 4 + na          # name, attributes, argument count, arguments, held outputs
        for m in n.metas:
            s = shapes.get(m.shape)
            if s is None:
                s = shapes[m.shape] = symbolic_shape(m.shape, dims)
            if s != prev:
                outs.append(n_out)
                outs.append(s)
                prev = s
            n_out += 1
    out.append(tuple(outs))
    return tuple(out)


def relative_structure_key(nodes):
    """``(rkey, sizes, externals)`` of a flushed node list in one pass: ``rkey`` equals
    ``relative_key(burn.fusion._structure_key(nodes)[0], nodes)`` (the structure with its sizes
    symbolic), ``sizes`` the concrete size of each symbol in order (the relative key and the
    sizes give back every shape of the graph, so they fix the plan), ``externals`` as in
    :func:`burn.fusion._structure_key`. Runs on every flush: a new size costs no second pass.

    Example:
        >>> import burn
        >>> from burn.fusion import _structure_key
        >>> from burn.shapekey import relative_key, relative_structure_key
        >>> from burn.graph import graph_for
        >>> x = burn.ones((3, 5)); _ = x.numpy()
        >>> g = graph_for(x.device); g.flush()
        >>> y = (x * x).exp().sum(axis=1)
        >>> rkey, sizes, ext = relative_structure_key(g.pending)
        >>> assert rkey == relative_key(_structure_key(g.pending)[0], g.pending)
        >>> assert sizes == (3, 5) and ext == [x._h, x._h]
    """
    key = []
    add = key.append
    ext_ids = {}
    externals = []
    dims = {}                 # size -> its symbol (symbolic_shape)
    shapes = {}               # shape -> its symbolic form (shapes repeat along a chain)
    out_shapes = []           # run-length, as in relative_key: (output index, symbolic shape) where it changes
    prev_shape = prev_sym = None
    j = 0
    n_nodes = len(nodes)
    for n in nodes:
        prim = n.prim
        args = n.args
        add(prim.name)
        if prim.kind in FUSIBLE_KINDS or getattr(prim, "plan_attrs", False):
            attrs = n.attrs
            add(attrs_key(attrs) if attrs else ())
        else:
            # a boundary runs with its own node's attributes: its output shapes stand for them
            add(None)
        add(len(args))
        for a in args:
            if type(a) is tuple:
                src, k = a
                p = src.pos
                if p >= n_nodes or nodes[p] is not src:
                    raise stale_input(n)
                add(p * 16 + k if k < 16 else (p, k, None))
            else:
                e = ext_ids.get(id(a))
                if e is None:
                    ext_ids[id(a)] = len(ext_ids)
                    sh = a.shape
                    s = shapes.get(sh)
                    if s is None:
                        s = shapes[sh] = symbolic_shape(sh, dims)
                    add((s, a.dtype))
                else:
                    add(-1 - e)
                externals.append(a)
        outs = n.outs
        if len(outs) == 1:
            add(outs[0]() is not None)
        else:
            add(tuple([w() is not None for w in outs]))
        for m in n.metas:
            sh = m.shape
            if sh is not prev_shape:       # along a chain the same shape object repeats: no hashing
                s = shapes.get(sh)
                if s is None:
                    s = shapes[sh] = symbolic_shape(sh, dims)
                prev_shape = sh
                if s != prev_sym:
                    out_shapes.append(j)
                    out_shapes.append(s)
                    prev_sym = s
            j += 1
    add(tuple(out_shapes))
    return tuple(key), tuple(dims), externals
