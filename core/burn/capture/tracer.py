"""Tracing: run a function once with every op kept pending, and read its graph off.

While a trace is active (``burn.bridge.TRACE``), the lazy graphs never flush: a flush or a
value read on the tracing thread raises :class:`burn.CaptureError` naming the reader and
the op. In-place updates report the tensor they change (``Tensor._stamp``), which is how
the trace learns the function's state updates. When the function returns, the pending
nodes since the trace began are its graph; every value they read from outside is an
input (a tensor argument), state (a tensor that outlives the call: found by the updates,
or by who references it), a host value, or a constant. The traced call's own work stays
pending and runs like any eager work, so the first call is an ordinary call.
"""
from __future__ import annotations

import gc
import os
import sys
import threading
from weakref import ref as _weakref

import numpy as np

from .. import plugins
from ..bridge import TRACE
from ..device import Device
from ..dispatch import registry
from ..errors import CaptureError
from ..fusion import GRAPHS
from ..graph import flush_all
from ..ops import creation as _creation, elementwise as _elementwise
from ..ops.creation import tensor
from ..tensor import Tensor
from .ir import Graph, GraphNode, Slot
from .tree import flatten, output_tree

__all__ = ["Trace", "trace_call", "tracing", "host_value", "on_replay", "on_output", "guard", "EscapeError"]

_H = Tensor._h          # the slot itself: a stale view's property would derive it again
_BURN = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_USER_DIRS = (os.path.join(_BURN, "testing") + os.sep, os.path.join(_BURN, "examples") + os.sep)
_READERS = {"__bool__": "bool(t)", "__float__": "float(t)", "__int__": "int(t)", "__complex__": "complex(t)",
            "__index__": "using a tensor as a Python index", "__array__": "np.asarray(t)",
            "__repr__": "repr(t) / print(t)", "__str__": "str(t)", "__format__": "formatting a tensor",
            "numpy": "t.numpy()", "item": "t.item()", "tolist": "t.tolist()",
            "__dlpack__": "a DLPack export (t.__dlpack__())",
            "__dlpack_device__": "a DLPack export (t.__dlpack_device__())",
            "sync": "device.sync()", "flush": "device.flush()", "seed": "seeding a device",
            "to_device": "t.to_device()", "__len__": "len(t)", "__iter__": "iterating over a tensor"}


class EscapeError(CaptureError):
    """A tensor computed inside the trace is still referenced outside its results (raised by
    :func:`trace_call`; ``@burn.capture`` runs that call as a warm-up and traces the next)."""


def _internal(filename: str) -> bool:
    return filename.startswith(_BURN) and not filename.startswith(_USER_DIRS)


def _reader():
    """The burn function the user called that led to a read: the outermost burn frame."""
    f = sys._getframe(2)
    api = None
    while f is not None and _internal(f.f_code.co_filename):
        name = f.f_code.co_name
        if not f.f_code.co_filename.startswith(os.path.join(_BURN, "capture")):
            api = name
        f = f.f_back
    return api or "a value read"


def read_error(h) -> CaptureError:
    """The CaptureError for reading ``h``'s value (or flushing, with ``h`` None) inside a trace."""
    api = _reader()
    node = getattr(h, "node", None)
    if node is not None:
        what = f"the result of op '{node.prim.name}', shape {h.shape}"
    elif h is not None:
        what = f"a tensor of shape {h.shape} made outside the trace"
    else:
        what = "the pending work of the trace"
    if api in _READERS:
        reader = _READERS[api]
        advice = ("return the tensor and read it after the call, or express the choice with tensor ops "
                  "(burn.where instead of `if`)")
        return CaptureError(f"burn.capture: {reader} reads {what} inside a traced function. A trace records "
                            f"one Python path of ops without running them, so a value read there would be "
                            f"frozen into every replay; {advice}")
    return CaptureError(f"burn.capture: '{api}' needs the values of {what} inside a traced function (its result's "
                        f"shape or a Python value depends on the data), which one recorded graph cannot hold; "
                        f"call it outside the captured function, or use a fixed-shape form (a mask multiply, "
                        f"burn.where)")


class Trace:
    """The state of one trace in progress (see the module docstring)."""

    def __init__(self):
        self.thread = threading.get_ident()
        self.mutated = {}       # id(tensor) -> (weakref, its handle when first updated)
        self.hosts = []         # (name, handle, dtype, fn, recipe)
        self.sinks = []         # (tensor, fn): values handed to fn(new tensor) after each replay
        self.events = []        # ("call", fn) / ("host", k, fn), in order
        self.guards = []        # (fn, value at trace time, what)
        self.graphs = {}        # LazyGraph -> its max_pending before the trace
        self.fresh = {}         # id -> handle of every value made from host data during the trace

    def on_read(self, h):
        if threading.get_ident() == self.thread:
            raise read_error(h)

    def on_import(self, api, obj):
        """A DLPack import of another library's memory inside the trace: refused (a replay
        would reuse the traced value, or read memory its owner wrote since)."""
        if threading.get_ident() == self.thread:
            raise CaptureError(
                f"burn.capture: {api}({type(obj).__name__}) inside a traced function imports memory that "
                f"another library owns; a graph cannot take it as a new input at each replay (it would "
                f"reuse the value of the traced call, or read memory its owner has written since). Import "
                f"outside the captured function (t = burn.from_dlpack(x)) and pass the tensor as an argument")

    def on_mutate(self, t):
        if threading.get_ident() != self.thread:
            return
        old = self.mutated.get(id(t))
        if old is None or old[0]() is not t:
            h = _H.__get__(t)
            # a value made inside the trace is not kept alive here (it would look like an escape)
            self.mutated[id(t)] = (_weakref(t), h if h.node is None else None)

    def on_create(self, h):
        if threading.get_ident() == self.thread:
            self.fresh[id(h)] = h

    def on_new_graph(self, g):
        if g not in self.graphs:
            self.graphs[g] = g.max_pending
            g.max_pending = sys.maxsize

    def add_host(self, name, h, dtype, fn, recipe=None):
        k = len(self.hosts)
        taken = {e[0] for e in self.hosts}
        base, n = name, 1
        while name in taken:        # names must be unique: bind_host and files address them
            n += 1
            name = f"{base}#{n}"
        self.hosts.append((name, h, dtype, fn, recipe))
        self.events.append(("host", k, fn))


def _active():
    tr = TRACE[0]
    return tr if tr is not None and tr.thread == threading.get_ident() else None


def tracing() -> bool:
    """True while a function is being traced on this thread (code that keeps Python-side
    state, like an optimizer's step counter, registers its replay callbacks then).

    Example:
        >>> import burn
        >>> seen = []
        >>> _ = burn.capture.trace(lambda x: seen.append(burn.capture.tracing()) or x * 1, burn.ones((1,)))
        >>> assert seen == [True] and not burn.capture.tracing()
    """
    return _active() is not None


def host_value(fn, *, dtype=None, device=None, name: str = "host", recipe=None):
    """A small tensor computed on the host by ``fn()``: now, and again before every replay of
    a graph traced through this call (a learning rate, a step-dependent scale).

    Outside a trace it is ``burn.tensor(fn(), dtype=, device=)``. ``recipe`` (optional) is a
    callable giving ``(kind, params)`` of a registered host recipe (see
    :mod:`burn.capture.recipes`) that recomputes the value without ``fn``: a saved graph then
    replays in another process without ``bind_host``. Names are made unique per graph
    (``name#2``, ...).

    Example:
        >>> import burn, numpy as np
        >>> step = [0]
        >>> def f(x):
        ...     step[0] += 1
        ...     burn.capture.on_replay(lambda: step.__setitem__(0, step[0] + 1))
        ...     return x * burn.capture.host_value(lambda: np.float32(step[0]))
        >>> g = burn.capture.trace(f, burn.ones((1,)))          # the traced call is step 1
        >>> assert g(burn.ones((1,))).item() == 2.0 and g(burn.ones((1,))).item() == 3.0
    """
    arr = np.asarray(fn())
    t = tensor(arr, dtype=dtype, device=device)
    tr = _active()
    if tr is not None:
        tr.add_host(name, t._h, t.dtype, fn, recipe)
    return t


def on_replay(fn) -> None:
    """Inside a trace: have ``fn()`` called before every replay of the graph, in trace order
    with the host values (Python bookkeeping the function does, like counting steps).
    Outside a trace: nothing.

    Example:
        >>> import burn
        >>> calls = []
        >>> def f(x):
        ...     calls.append(1)
        ...     burn.capture.on_replay(lambda: calls.append(1))
        ...     return x + 1
        >>> g = burn.capture.trace(f, burn.ones((1,)))
        >>> _ = g(burn.ones((1,))); _ = g(burn.ones((1,)))
        >>> assert len(calls) == 3
    """
    tr = _active()
    if tr is not None:
        tr.events.append(("call", fn))


def on_output(t, fn) -> None:
    """Inside a trace: after every replay, call ``fn(v)`` with the new value ``v`` of tensor ``t``
    (a value the function keeps on a Python object, like ``opt.last_grad_norm``; it is then a
    result of the graph, not an escape). Outside a trace: nothing.

    Example:
        >>> import burn
        >>> box = {}
        >>> def f(x):
        ...     box["sum"] = s = x.sum()
        ...     burn.capture.on_output(s, lambda v: box.__setitem__("sum", v))
        ...     return x * 2
        >>> g = burn.capture.trace(f, burn.ones((3,)))
        >>> _ = g(burn.tensor([1.0, 2.0, 3.0]))
        >>> assert box["sum"].item() == 6.0
    """
    tr = _active()
    if tr is not None:
        tr.sinks.append((t, fn))


def guard(fn, what: str) -> None:
    """Inside a trace: remember ``fn()``; a replay first checks it is unchanged (a Graph then
    raises, ``@burn.capture`` traces again). For Python values the graph bakes in.

    Example:
        >>> import burn
        >>> cfg = {"scale": 2.0}
        >>> def f(x):
        ...     burn.capture.guard(lambda: cfg["scale"], "cfg['scale']")
        ...     return x * cfg["scale"]
        >>> g = burn.capture.trace(f, burn.ones((1,)))
        >>> cfg["scale"] = 3.0
        >>> try:
        ...     g(burn.ones((1,)))
        ... except burn.CaptureError as e:
        ...     assert "cfg['scale'] changed" in str(e)
    """
    tr = _active()
    if tr is not None:
        tr.guards.append((fn, fn(), what))


# -- naming state ----------------------------------------------------------------------------

def _roots(fn, args, kwargs):
    """(name, object) pairs a function can reach its state through: its closure, ``self`` of a
    bound method, the globals its code names, and its non-tensor arguments."""
    out = []
    code = getattr(fn, "__code__", None)
    if getattr(fn, "__self__", None) is not None:
        out.append(("self", fn.__self__))
    if code is None and callable(fn) and hasattr(type(fn), "__call__") and hasattr(fn, "__dict__"):
        out.append((type(fn).__name__, fn))
        code = getattr(type(fn).__call__, "__code__", None)
    if code is not None:
        for name, cell in zip(code.co_freevars, getattr(fn, "__closure__", None) or ()):
            try:
                out.append((name, cell.cell_contents))
            except ValueError:
                pass
        glob = getattr(fn, "__globals__", {})
        for name in code.co_names:
            if name in glob:
                out.append((name, glob[name]))
    for i, a in enumerate(args):
        out.append((f"arg{i}", a))
    out.extend(kwargs.items())
    return out


def _walk(name, obj, names, depth=0):
    if isinstance(obj, Tensor):
        names.setdefault(id(obj), (obj, name))
        return
    if depth > 2 or isinstance(obj, (str, bytes, int, float, type)) or obj is None:
        return
    if callable(getattr(obj, "named_parameters", None)) and callable(getattr(obj, "named_buffers", None)):
        for p, t in obj.named_parameters():
            names.setdefault(id(t), (t, f"{name}.{p}"))
        for p, t in obj.named_buffers():
            names.setdefault(id(t), (t, f"{name}.{p}"))
        return
    st = getattr(obj, "state", None)
    if isinstance(st, dict) and hasattr(obj, "param_groups"):      # an optimizer
        for path, entries in st.items():
            for k, v in (entries.items() if isinstance(entries, dict) else ()):
                if isinstance(v, Tensor):
                    names.setdefault(id(v), (v, f"{name}.state.{path}.{k}"))
        return
    if isinstance(obj, dict):
        for k, v in list(obj.items())[:256]:
            _walk(f"{name}[{k!r}]", v, names, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for i, v in enumerate(obj[:256]):
            _walk(f"{name}[{i}]", v, names, depth + 1)


def state_names(fn, args, kwargs) -> dict:
    """``{id(tensor): (tensor, name)}`` for the tensors reachable from ``fn``'s roots (see :func:`_roots`)."""
    names = {}
    for name, obj in _roots(fn, args, kwargs):
        try:
            _walk(name, obj, names)
        except Exception:   # naming is best effort: a property that raises does not stop a trace
            continue
    return names


# -- building the graph ---------------------------------------------------------------------------

class _Builder:
    """Turns a finished trace's pending nodes into a :class:`Graph`."""

    def __init__(self, tr, nodes, leaves, start, names):
        self.tr, self.nodes, self.leaves = tr, nodes, leaves
        self.names = {k: v[1] for k, v in names.items()}
        self.named = [v[0] for v in names.values()]
        self.refs = {}              # id(handle) -> ref of an outside value
        # the arguments' handles when the call began (an in-place update rebinds them)
        self.inputs = [Slot(f"in{i}", h.shape, h.dtype, t.device.is_autodiff) for i, (t, h) in enumerate(zip(leaves, start))]
        for i, h in enumerate(start):
            self.refs.setdefault(id(h), ("in", i))
        self.state, self.state_refs, self.updates = [], [], []
        self.consts, self.const_values = [], []
        self.hosts = []
        for k, (name, h, dtype, _fn, _recipe) in enumerate(tr.hosts):
            self.hosts.append(Slot(name, h.shape, dtype))
            self.refs[id(h)] = ("host", k)
        self.keep = []              # handles whose ids the refs use
        self.view_values = []       # values of updated views: a replay derives them from their base
        self.const_keys = {}        # (shape, dtype, bytes) -> ref of a small constant

    def add_state(self, t, h):
        j = len(self.state)
        name = self.names.get(id(t), f"state{j}")
        taken = {s.name for s in self.state}
        base, n = name, 1
        while name in taken:
            n += 1
            name = f"{base}#{n}"
        self.state.append(Slot(name, h.shape, h.dtype, t.device.is_autodiff))
        self.state_refs.append(_weakref(t))
        self.refs[id(h)] = ("state", j)
        self.keep.append(h)
        return ("state", j)

    def node_ref(self, h):
        node = h.node
        if node is not None:
            p = node.pos
            if 0 <= p < len(self.nodes) and self.nodes[p] is node:
                return ("node", p, h.index)
            raise CaptureError(f"burn.capture: a value of op '{node.prim.name}' (shape {h.shape}) was recorded "
                               f"outside this trace and is still pending (another thread's work?)")
        return self.refs.get(id(h))

    def classify_mutated(self):
        """State the function updated in place: read at the start, rebound at the end."""
        ids = {id(t): i for i, t in enumerate(self.leaves)}
        finals = []
        for wr, h0 in list(self.tr.mutated.values()):
            t = wr()
            if t is None:
                continue
            if getattr(t, "_vbase", None) is not None:
                if id(t) in ids:
                    raise CaptureError(f"burn.capture: the traced function writes into its argument {ids[id(t)]}, "
                                       f"a view of another tensor; pass the base tensor itself")
                self.view_values.append(_H.__get__(t))
                continue            # a view: derived again from its base, which is the state
            if h0 is None:
                continue            # made inside the trace: a result, a temporary, or an escape
            if id(t) in ids:
                target = ("in", ids[id(t)])
            else:
                target = self.refs.get(id(h0))
                if target is None or target[0] != "state":
                    target = self.add_state(t, h0)
            hf = _H.__get__(t)
            if hf is not h0:
                if t._grad is not None:
                    raise CaptureError(f"burn.capture: state {self._label(target)} (shape {t.shape}) was assigned a "
                                       f"value with gradient history; detach it (assign_(v.detach())) or update "
                                       f"it under burn.no_grad()")
                finals.append((target, hf))
        return finals

    def _label(self, target):
        return repr(self.state[target[1]].name) if target[0] == "state" else f"argument {target[1]}"

    def resolve_outside(self, extra=(), results=()):
        """Values read from outside that are neither inputs nor updated state: state when a live
        tensor holds them (read at replay), else constants (fixed at trace time)."""
        left = {id(h): h for h in extra if id(h) not in self.refs}
        for n in self.nodes:
            for a in n.args:
                if type(a) is not tuple and id(a) not in self.refs:
                    left[id(a)] = a
        if not left:
            return
        owners = {}
        for t in self.named:        # state reachable from the function's roots, by name
            h = _H.__get__(t)
            if id(h) in left and (id(h) not in owners or t._leaf):
                owners[id(h)] = t
        # made during the trace (a constant of this call) or a cached scalar operand: a
        # constant; anything else may be held by a tensor the roots do not reach: ask gc
        cached = _cached_scalars()
        unknown = [h for hid, h in left.items() if hid not in owners and hid not in self.tr.fresh
                   and hid not in cached]
        skip = {id(t) for t in results}     # the call's own (detached) results hold no state
        for o in gc.get_referrers(*unknown) if unknown else ():
            if isinstance(o, Tensor) and id(o) not in skip:
                h = _H.__get__(o)
                if id(h) in left:
                    best = owners.get(id(h))
                    if best is None or (o._leaf and not best._leaf):
                        owners[id(h)] = o
        for hid, h in left.items():
            t = owners.get(hid)
            if t is not None:
                self.add_state(t, h)
            else:
                self.refs[hid] = self.add_const(h)

    def add_const(self, h):
        """A constant slot for ``h``; small constants of equal value share one (``x + 1.0`` in a
        loop makes a new scalar each time: one slot binds them all at replay)."""
        key = None
        size = 1
        for d in h.shape:
            size *= d
        if size <= 16:
            arr = np.asarray(h.graph.backend.to_numpy(h.data, h.graph.index))
            key = (h.shape, h.dtype, arr.tobytes())
            ref = self.const_keys.get(key)
            if ref is not None:
                return ref
        k = len(self.consts)
        self.consts.append(Slot(f"const{k}", h.shape, h.dtype))
        self.const_values.append((h.graph.backend, h.graph.index, h.data))
        self.keep.append(h)
        if key is not None:
            self.const_keys[key] = ("const", k)
        return ("const", k)

    def graph_nodes(self):
        out = []
        for n in self.nodes:
            ins = tuple(self.node_ref(a) if type(a) is not tuple else ("node", a[0].pos, a[1]) for a in n.args)
            out.append(GraphNode(n.prim.name, dict(n.attrs), ins, tuple((m.shape, m.dtype) for m in n.metas)))
        return out


def _cached_scalars() -> set:
    """ids of the memoized scalar operands of burn.ops (immutable constants)."""
    out = {id(e[1]) for e in _elementwise._SCALAR_TENSORS.values()}
    out.update(id(h) for h in _creation._SCALARS.values())
    return out


def _op_plugins(nodes) -> dict:
    """Extension ops of a graph -> the plugin (and distribution) that registers them."""
    dist = {r.name: r.distribution for r in plugins.report()}
    out = {}
    for n in nodes:
        prim = registry.ops.get(n.op)
        if getattr(prim, "is_extension", False) and n.op not in out:
            plugin = getattr(prim, "plugin", "burn")
            out[n.op] = {"plugin": plugin, "distribution": "burn" if plugin == "burn" else dist.get(plugin, "?")}
    return out


def _escaped(nodes, kept):
    return [(p, k) for p, n in enumerate(nodes) for k, w in enumerate(n.outs)
            if (p, k) not in kept and w() is not None]


def check_escapes(graph, nodes, rederived=()):
    """Raise EscapeError if a tensor computed in the trace is referenced outside its results."""
    kept = {(r[1], r[2]) for r in graph.result_refs() if r[0] == "node"}
    kept.update((h.node.pos, h.index) for h in rederived if h.node is not None)
    bad = _escaped(nodes, kept)
    if bad:
        gc.collect()        # garbage in reference cycles is not an escape
        bad = _escaped(nodes, kept)
    if bad:
        what = ", ".join(f"'{nodes[p].prim.name}' -> {nodes[p].metas[k].shape}" for p, k in bad[:4])
        raise EscapeError(
            f"burn.capture: {len(bad)} tensor(s) computed inside the traced function are still referenced "
            f"after it ({what}{', ...' if len(bad) > 4 else ''}) but are neither results nor in-place updates, "
            f"so a replay could not give them new values. This happens when state is created on the first "
            f"call (optimizer moments): run the function once before tracing it (@burn.capture does), or "
            f"return those tensors, or update existing tensors with assign_")


def _collect(tr):
    busy = [g for g in tr.graphs if g.pending]
    if len(busy) > 1:
        raise CaptureError(f"burn.capture: the traced function ran ops on {len(busy)} devices "
                           f"({', '.join(f'{g.kind}:{g.index}' for g in busy)}); a graph captures one device")
    return (busy[0], list(busy[0].pending)) if busy else (None, [])


def trace_call(fn, args, kwargs, *, name=None, strict=True):
    """Run ``fn(*args, **kwargs)`` as a trace: ``(graph, result)``. The result is the call's
    own (lazy, detached) result. A tensor made inside that escapes raises EscapeError
    (after the call ran); with ``strict=False`` the answer is then ``(None, result)``."""
    leaves, spec = flatten((args, kwargs))
    if TRACE[0] is not None:
        raise CaptureError("burn.capture: a trace is already in progress; captured functions do not nest")
    flush_all()
    start = [t._h for t in leaves]
    tr = Trace()
    for g in list(GRAPHS.values()):
        tr.on_new_graph(g)
    TRACE[0] = tr
    try:
        out = fn(*args, **kwargs)
    finally:
        TRACE[0] = None
        for g, mp in tr.graphs.items():
            g.max_pending = mp
    lg, nodes = _collect(tr)
    b = _Builder(tr, nodes, leaves, start, state_names(fn, args, kwargs))
    finals = b.classify_mutated()
    outside = []

    def add(t):
        r = b.node_ref(t._h)
        if r is None:
            outside.append(t._h)
            r = ["?", len(outside) - 1]
        return r, t.device.is_autodiff

    tree = output_tree(out, add)
    sink_tree = output_tree([t for t, _ in tr.sinks], add)
    result = _detached(out)
    del out     # the traced results' gradient records (and the temporaries they hold) go now
    b.resolve_outside(outside + [h for _, h in finals if h.node is None], _tensors(result))
    tree = _fill(tree, lambda i: _outside_ref(b, outside[i]))
    sink_tree = _fill(sink_tree, lambda i: _outside_ref(b, outside[i]))
    gnodes = b.graph_nodes()
    updates = [(target, b.node_ref(h) or _outside_ref(b, h)) for target, h in finals]
    g = Graph(gnodes, b.inputs, b.state, b.consts, b.hosts, tree, updates, arg_spec=spec,
              op_plugins=_op_plugins(gnodes), name=name or getattr(fn, "__name__", "graph"))
    g.const_values, g.state_refs = b.const_values, b.state_refs
    g.events, g.guards = tr.events, tr.guards
    g.sinks, g.sink_fns = sink_tree, [fn for _, fn in tr.sinks]
    g.host_recipes = [e[4] for e in tr.hosts]
    g.device = _plain_device(leaves, lg)
    g._keep = b.keep
    try:
        check_escapes(g, nodes, b.view_values)
    except EscapeError:
        if strict:
            raise
        return None, result
    return g, result


def _fill(tree, resolve):
    """The result spec with each deferred ``["?", i]`` ref resolved."""
    tag = tree[0]
    if tag == "T":
        r = tree[1]
        return ["T", resolve(r[1]) if isinstance(r, list) and r[0] == "?" else r, tree[2]]
    if tag == "N":
        return tree
    if tag == "dict":
        return ["dict", [[k, _fill(v, resolve)] for k, v in tree[1]]]
    return [tag, [_fill(o, resolve) for o in tree[1]]]


def _outside_ref(b, h):
    """The ref of a result that is an outside value itself (an argument returned as is)."""
    r = b.refs.get(id(h))
    if r is not None:
        return r
    h.value()       # a value made from the host inside the trace is materialized already
    r = b.refs[id(h)] = b.add_const(h)
    return r


def _plain_device(leaves, lg):
    if lg is None:
        return leaves[0].device.inner() if leaves else None
    return Device(lg.kind, lg.index)


def _tensors(obj, out=None):
    out = [] if out is None else out
    if isinstance(obj, Tensor):
        out.append(obj)
    elif type(obj) in (tuple, list):
        for o in obj:
            _tensors(o, out)
    elif type(obj) is dict:
        for o in obj.values():
            _tensors(o, out)
    return out


def _detached(obj):
    if isinstance(obj, Tensor):
        return Tensor._wrap(obj._h, obj.device)
    t = type(obj)
    if t is tuple or t is list:
        return t(_detached(o) for o in obj)
    if t is dict:
        return {k: _detached(v) for k, v in obj.items()}
    return obj
