"""burn.Graph: a captured function as data, and its replay.

A graph lists its **nodes** (an op by its registered name, attributes, input references,
output shapes and dtypes) in recording order, and the values they read by reference:

* ``in<i>``: the i-th tensor argument of a call;
* ``state<j>``: a tensor that lives outside the function (a parameter, a buffer, optimizer
  state): read at each replay, and rebound to a new value where the function updated it
  (``updates``), as ``assign_`` would;
* ``const<k>``: a tensor made inside the function from host data, fixed at trace time;
* ``host<k>``: a small tensor a Python callback computes before each replay (an
  optimizer's step-dependent scalars, see :func:`burn.capture.host_value`).

Node references are ``%p`` (output 0 of node p) or ``%p.k``. Nothing in a graph names a
device: replay runs on the device of its arguments and state.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from ..bridge import Handle, values_of
from ..errors import CaptureError, DeviceMismatch, DTypeError, ShapeError
from ..graph import graph_for
from ..ops.creation import _default_device
from ..tensor import Tensor
from ..views import _mark_stale
from .replay import Prepared, current
from .tree import flatten, output_refs, unflatten_outputs

__all__ = ["Graph", "GraphNode", "Slot"]

_new = object.__new__


@functools.lru_cache(maxsize=256)
def _slot_refs(kind, n) -> tuple:
    """``((kind, 0), ..., (kind, n - 1))``: the keys of a replay's values (built once per count)."""
    return tuple((kind, i) for i in range(n))


@functools.lru_cache(maxsize=256)
def _value_refs(n_in, n_state) -> tuple:
    """The keys of a replay's input and state values, in that order (built once per pair of counts)."""
    return _slot_refs("in", n_in) + _slot_refs("state", n_state)


class GraphNode(NamedTuple):
    """One recorded op: ``op`` name, ``attrs``, ``inputs`` (refs), ``outputs`` ((shape, dtype) each).

    Example:
        >>> import burn
        >>> g = burn.capture.trace(lambda x: x.sum(axis=0), burn.ones((2, 3)))
        >>> n = g.nodes[0]
        >>> assert n.op == "sum" and n.inputs == (("in", 0),) and n.outputs[0][0] == (3,)
    """
    op: str
    attrs: dict
    inputs: tuple
    outputs: tuple


class Slot(NamedTuple):
    """A value a graph reads by reference: its ``name``, ``shape``, ``dtype`` and whether it
    lives on an autodiff device.

    Example:
        >>> import burn
        >>> g = burn.capture.trace(lambda x: x + 1, burn.ones((2,)))
        >>> assert g.inputs[0].shape == (2,) and g.inputs[0].dtype is burn.float32
    """
    name: str
    shape: tuple
    dtype: object
    autodiff: bool = False


def ref_text(ref, graph=None) -> str:
    """``in0``, ``state2``, ``%5`` or ``%5.1`` for a reference."""
    kind = ref[0]
    if kind == "node":
        multi = graph is not None and len(graph.nodes[ref[1]].outputs) > 1
        return f"%{ref[1]}.{ref[2]}" if multi else f"%{ref[1]}"
    return f"{kind}{ref[1]}"


def _meta_text(shape, dtype) -> str:
    return f"{dtype.name}[{', '.join(str(s) for s in shape)}]"


def _attr_text(attrs) -> str:
    parts = []
    for k, v in attrs.items():
        parts.append("rng" if k == "_key" else f"{k}={v!r}")
    return (" {" + ", ".join(parts) + "}") if parts else ""


class Graph:
    """A captured function: nodes, inputs, state, constants and outputs, as data.

    Make one with :func:`burn.capture.trace` (or let ``@burn.capture`` keep one per
    signature); call it with new arguments to replay; ``print(g)`` shows one line per
    node; ``g.save(path)`` / ``burn.Graph.load(path)`` write and read it (JSON structure
    and safetensors values, never pickle).

    Example:
        >>> import burn
        >>> w = burn.tensor([1.0, 2.0])
        >>> g = burn.capture.trace(lambda x: (x * w).sum(), burn.ones((2,)))
        >>> assert g(burn.tensor([3.0, 4.0])).item() == 11.0
        >>> _ = w.assign_(burn.tensor([0.0, 1.0]))    # state: replay reads its current value
        >>> assert g(burn.tensor([3.0, 4.0])).item() == 4.0
        >>> assert "mul(in0, state0)" in str(g)
    """

    VERSION = 1

    def __init__(self, nodes, inputs, state, consts, hosts, outputs, updates, *, arg_spec=None,
                 op_plugins=None, name="graph"):
        self.nodes = list(nodes)
        self.inputs = list(inputs)
        self.state = list(state)
        self.consts = list(consts)
        self.hosts = list(hosts)
        self.outputs = outputs
        self.updates = list(updates)         # (target ref: in/state, value ref)
        self.arg_spec = arg_spec             # the static part of the traced call (None: any)
        self.op_plugins = dict(op_plugins or {})   # extension op -> {"plugin", "distribution"}
        self.name = name
        self.const_values = []               # native arrays (or numpy arrays for a loaded graph)
        self.state_refs = []                 # per state slot: () -> Tensor or None (a weak reference)
        self.events = []                     # ("call", fn) or ("host", k, fn), in trace order
        self.guards = []                     # (fn, expected, what) checked before each replay
        self.sinks = ["list", []]            # output tree of values handed to sink_fns after a replay
        self.sink_fns = []                   # per sink: fn(new tensor) (Python: not saved)
        self.host_recipes = [None] * len(self.hosts)   # per host: () -> (kind, params) or None
        self._prepared = {}
        self._const_native = {}

    # -- reading ------------------------------------------------------------------------
    def result_refs(self) -> list:
        """Every reference the graph's results and updates read.

        Example:
            >>> import burn
            >>> g = burn.capture.trace(lambda x: x * 2, burn.ones((2,)))
            >>> assert g.result_refs() == [("node", 0, 0)]
        """
        return output_refs(self.outputs) + [v for _, v in self.updates] + output_refs(self.sinks)

    def ops(self) -> list:
        """The op name of every node, in order.

        Example:
            >>> import burn
            >>> assert burn.capture.trace(lambda x: (x + 1).exp(), burn.ones((2,))).ops() == ["add", "exp"]
        """
        return [n.op for n in self.nodes]

    @property
    def state_tensors(self) -> dict:
        """``{name: Tensor}`` of the state this graph reads and updates (None where it is gone).

        Example:
            >>> import burn
            >>> w = burn.ones((2,))
            >>> g = burn.capture.trace(lambda x: x * w, burn.ones((2,)))
            >>> assert g.state_tensors["w"] is w
        """
        return {s.name: r() for s, r in zip(self.state, self.state_refs)}

    def bind_state(self, name: str, tensor) -> None:
        """Make state ``name`` refer to ``tensor`` (same shape and dtype) from now on: replay
        reads it and updates it in place.

        Example:
            >>> import burn
            >>> w = burn.ones((2,))
            >>> g = burn.capture.trace(lambda x: x * w, burn.ones((2,)))
            >>> w2 = burn.tensor([5.0, 6.0])
            >>> g.bind_state("w", w2)
            >>> assert g(burn.ones((2,))).tolist() == [5.0, 6.0]
        """
        names = [s.name for s in self.state]
        if name not in names:
            raise CaptureError(f"burn.Graph.bind_state: no state named {name!r}; this graph's state: "
                               f"{', '.join(names[:8]) or 'none'}")
        j = names.index(name)
        s = self.state[j]
        if not isinstance(tensor, Tensor) or tuple(tensor.shape) != tuple(s.shape) or tensor.dtype is not s.dtype:
            got = f"{tuple(tensor.shape)} {tensor.dtype}" if isinstance(tensor, Tensor) else type(tensor).__name__
            raise ShapeError(f"burn.Graph.bind_state({name!r}): expected a tensor of shape {tuple(s.shape)} "
                             f"and dtype {s.dtype}, got {got}")
        self.state_refs[j] = lambda t=tensor: t

    def bind_host(self, name: str, fn) -> None:
        """Have host value ``name`` computed by ``fn()`` (an array-like of its shape) before each replay.

        A loaded graph needs one per host value: the callbacks that made them are Python, not data.

        Example:
            >>> import burn, numpy as np
            >>> def f(x):
            ...     return x * burn.capture.host_value(lambda: np.float32(2.0), name="scale")
            >>> g = burn.capture.trace(f, burn.ones((2,)))
            >>> g.bind_host("scale", lambda: np.float32(3.0))
            >>> assert g(burn.ones((2,))).tolist() == [3.0, 3.0]
        """
        names = [h.name for h in self.hosts]
        if name not in names:
            raise CaptureError(f"burn.Graph.bind_host: no host value named {name!r}; this graph's: "
                               f"{', '.join(names) or 'none'}")
        k = names.index(name)
        self.events = [e for e in self.events if not (e[0] == "host" and e[1] == k)] + [("host", k, fn)]

    def __str__(self):
        head = (f"burn.Graph {self.name}: {len(self.inputs)} inputs, {len(self.state)} state, "
                f"{len(self.consts)} constants, {len(self.hosts)} host values, {len(self.nodes)} nodes, "
                f"{len(self.updates)} updates")
        lines = [head]
        for kind, slots in (("in", self.inputs), ("state", self.state), ("const", self.consts),
                            ("host", self.hosts)):
            for i, s in enumerate(slots):
                label = "" if s.name == f"{kind}{i}" else f" {s.name}"
                lines.append(f"  {kind}{i}{label}: {_meta_text(s.shape, s.dtype)}")
        for p, n in enumerate(self.nodes):
            outs = ", ".join(_meta_text(s, d) for s, d in n.outputs)
            args = ", ".join(ref_text(r, self) for r in n.inputs)
            lines.append(f"  %{p} = {n.op}({args}){_attr_text(n.attrs)} -> {outs}")
        for target, value in self.updates:
            lines.append(f"  {ref_text(target)} <- {ref_text(value, self)}")
        lines.append("  return " + ", ".join(ref_text(r, self) for r in output_refs(self.outputs)))
        return "\n".join(lines)

    def __repr__(self):
        return (f"<burn.Graph {self.name}: {len(self.nodes)} nodes, {len(self.inputs)} inputs, "
                f"{len(self.state)} state>")

    # -- replay ---------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        leaves, spec = flatten((args, kwargs))
        if self.arg_spec is not None and spec != self.arg_spec:
            raise CaptureError(f"burn.Graph {self.name}: called with other static arguments (or another "
                               f"nesting) than it was traced with; a Graph replays one signature, "
                               f"@burn.capture traces again for a new one")
        return self.run(leaves)

    def check_guards(self):
        """The first guard whose value changed since the trace, as text, or None."""
        for fn, expected, what in self.guards:
            now = fn()
            if now != expected:
                return f"{what} changed from {expected!r} to {now!r}"
        return None

    def _device_of(self, leaves, states):
        dev = None
        for group in (leaves, states):
            for t in group:
                d = t.device
                if dev is None:
                    dev = d
                elif d is not dev and (d.kind != dev.kind or d.index != dev.index):
                    raise DeviceMismatch(f"burn.Graph {self.name}: its inputs and state are on different "
                                         f"devices ({dev} and {d}); a graph replays on one device")
        if dev is None:
            dev = getattr(self, "device", None)
            if dev is None:
                dev = _default_device()
        return dev.inner() if dev.is_autodiff else dev

    def _check_inputs(self, leaves):
        if len(leaves) != len(self.inputs):
            raise CaptureError(f"burn.Graph {self.name}: expected {len(self.inputs)} tensor arguments, got "
                               f"{len(leaves)}")
        for i, (t, s) in enumerate(zip(leaves, self.inputs)):
            h = t._h
            if h.shape != tuple(s.shape):
                raise ShapeError(f"burn.Graph {self.name}: input {i} ({s.name}) has shape {h.shape}, the graph "
                                 f"was traced for {tuple(s.shape)}; @burn.capture traces again for a new shape")
            if h.dtype is not s.dtype:
                raise DTypeError(f"burn.Graph {self.name}: input {i} ({s.name}) has dtype {h.dtype}, the graph "
                                 f"was traced for {s.dtype}")

    def run(self, leaves, *, keys=None, guards_checked=False):
        """Replay on the tensors ``leaves`` (the flattened tensor arguments); returns the result.

        ``keys`` (optional): the random key of each random node, in node order, instead of
        fresh keys from the device's stream (a burn-remote server replays a client's flush
        with the keys the client's device drew, so results equal a local run's).
        ``guards_checked``: the caller has just checked the guards (``@burn.capture`` does before
        it picks this graph), so they are not evaluated a second time.

        Example:
            >>> import burn
            >>> g = burn.capture.trace(lambda x: x * 3, burn.ones((2,)))
            >>> assert g.run([burn.tensor([1.0, 2.0])]).tolist() == [3.0, 6.0]
        """
        self._check_inputs(leaves)
        why = None if guards_checked else self.check_guards()
        if why is not None:
            raise CaptureError(f"burn.Graph {self.name}: {why} since the trace; the graph baked the old "
                               f"value in. Trace again (@burn.capture does so by itself)")
        states = [r() for r in self.state_refs]
        for s, t in zip(self.state, states):
            if t is None:
                raise CaptureError(f"burn.Graph {self.name}: state {s.name!r} no longer exists (the tensor "
                                   f"was freed); bind another with g.bind_state({s.name!r}, tensor) or trace again")
        dev = self._device_of(leaves, states)
        lg = graph_for(dev)
        handles = [t._h for t in leaves]
        if states:
            handles += [t._h for t in states]
        values = dict(zip(_value_refs(len(leaves), len(states)), values_of(handles)))
        backend = lg.backend
        prep = self._prepared.get(backend.name)
        if prep is None or not current(prep):        # first replay here, or kernels changed since
            prep = self._prepared[backend.name] = Prepared(self, backend)
        self._bind_constants(values, backend, lg)
        self._run_events(values, backend, lg)
        out = prep.run(values, lg, keys)
        return self._finish(out, values, leaves, states, dev, lg)

    def _bind_constants(self, values, backend, lg):
        consts = self._const_native.get((backend.name, lg.index))
        if consts is None:
            consts = []
            for s, v in zip(self.consts, self.const_values):
                if isinstance(v, tuple):       # (backend, device index, native array) from the trace
                    if v[0] is backend and v[1] == lg.index:
                        consts.append(v[2])
                        continue
                    v = v[0].to_numpy(v[2], v[1])
                consts.append(backend.from_numpy(v, s.dtype, lg.index))
            self._const_native[(backend.name, lg.index)] = consts
        for k, v in enumerate(consts):
            values[("const", k)] = v

    def _run_events(self, values, backend, lg):
        if not self.events and not self.hosts:
            return
        have = set()
        for ev in self.events:
            if ev[0] == "call":
                ev[1]()
                continue
            k, fn = ev[1], ev[2]
            s = self.hosts[k]
            arr = np.asarray(fn())
            if tuple(arr.shape) != tuple(s.shape):
                raise ShapeError(f"burn.Graph {self.name}: host value {s.name!r} gave shape {arr.shape}, "
                                 f"expected {tuple(s.shape)}")
            values[("host", k)] = backend.from_numpy(arr, s.dtype, lg.index)
            have.add(k)
        if len(have) < len(self.hosts):
            raise self.unbound_hosts_error([s.name for k, s in enumerate(self.hosts) if k not in have])

    def unbound_hosts_error(self, names):
        """The CaptureError for host values that have no callback, naming each one to bind."""
        binds = "; ".join(f"g.bind_host({n!r}, fn)" for n in names[:6]) + ("; ..." if len(names) > 6 else "")
        return CaptureError(f"burn.Graph {self.name}: {len(names)} host value(s) have no callback: "
                            f"{', '.join(repr(n) for n in names)}. They were made by Python callbacks "
                            f"(burn.capture.host_value without a recipe), which a graph file cannot hold; "
                            f"bind each before replaying: {binds} (fn() returns an array of the slot's shape)")

    def _finish(self, out, values, leaves, states, dev, lg):
        def native(ref):
            return out[(ref[1], ref[2])] if ref[0] == "node" else values[ref]

        def make(ref, autodiff):
            s = self._meta(ref)
            t = _new(Tensor)
            t._h = Handle(tuple(s[0]), s[1], lg, native(ref))
            t.device = dev.autodiff() if autodiff else dev
            t._grad = None
            t._leaf = False
            return t

        result = unflatten_outputs(self.outputs, make)
        if self.sink_fns:
            for fn, t in zip(self.sink_fns, unflatten_outputs(self.sinks, make)):
                fn(t)
        for target, ref in self.updates:
            t = leaves[target[1]] if target[0] == "in" else states[target[1]]
            t._stamp()
            t._h = Handle(t._h.shape, t._h.dtype, lg, native(ref))
            if getattr(t, "_views", None):
                _mark_stale(t, None)
        return result

    def _meta(self, ref):
        kind = ref[0]
        if kind == "node":
            return self.nodes[ref[1]].outputs[ref[2]]
        s = {"in": self.inputs, "state": self.state, "const": self.consts, "host": self.hosts}[kind][ref[1]]
        return (s.shape, s.dtype)

    # -- files ----------------------------------------------------------------------------
    def save(self, path) -> None:
        """Write this graph to ``path``: JSON structure and safetensors values (no pickle).

        State is saved with its current values, so a loaded graph replays on its own.

        Example:
            >>> import burn, os, tempfile
            >>> p = os.path.join(tempfile.mkdtemp(), "g.burngraph")
            >>> g = burn.capture.trace(lambda x: x * 2 + 1, burn.ones((2,)))
            >>> g.save(p)
            >>> assert burn.Graph.load(p)(burn.ones((2,))).tolist() == [3.0, 3.0]
        """
        from .serialize import save
        save(self, path)

    @classmethod
    def load(cls, path, *, device=None) -> "Graph":
        """Read a graph written by :meth:`save`; its state is created on ``device`` (default:
        burn's default device) from the saved values. Every op must be registered in this
        process; an unknown one raises :class:`burn.CaptureError` naming it and its plugin.

        Example:
            >>> import burn, os, tempfile
            >>> p = os.path.join(tempfile.mkdtemp(), "g.burngraph")
            >>> burn.capture.trace(lambda x: x.exp(), burn.zeros((1,))).save(p)
            >>> assert burn.Graph.load(p, device=burn.Device.flex()).ops() == ["exp"]
        """
        from .serialize import load
        return load(cls, path, device)
