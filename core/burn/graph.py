"""The lazy graph: one per device, flushed on read, on sync(), or when it grows.

Ops append nodes to their device's :class:`LazyGraph`; nothing runs until a
value is needed. A flush hands the pending nodes to the fusion planner
(:mod:`burn.fusion`), whose plan is cached by the graph's structure, so a
training step that repeats is planned once.
"""
from __future__ import annotations

import os
import threading

from .backend import running_on
from .bridge import TRACE
from . import dlpack as _dlpack
from .dispatch import registry
from .errors import DTypeError, FailedValue, stale_input
from .fusion import GRAPHS as _GRAPHS, _STATS, get_plan

__all__ = ["LazyGraph", "graph_for", "run_small_flush"]

# Past this many pending nodes a flush happens at record time, bounding the
# memory held by pending temporaries and the cost of planning one flush. Kept
# small enough that pending nodes die before Python's GC promotes them to its
# oldest generation (whose full collections cost ~40 ms with torch loaded);
# see docs/benchmarks.md.
DEFAULT_MAX_PENDING = int(os.environ.get("BURN_MAX_PENDING", "512"))


# A flush of at most this many nodes, each with at most SMALL_FLUSH_ELEMENTS elements per output,
# runs op by op without the planner on a backend that allows it (``runs_small_flushes``): there
# the plan would run the same kernels in the same order (fused groups of small arrays are
# whole-array, op by op), and a plan key costs more than the kernels' Python calls
SMALL_FLUSH_NODES = 8
SMALL_FLUSH_ELEMENTS = 65536


def run_small_flush(nodes, backend) -> bool:
    """Run a small flush op by op and store the held results; False (nothing stored) when this
    flush is not one for the direct path, the caller then plans it (:func:`burn.fusion.get_plan`).

    Left to the planner: backends without ``runs_small_flushes``, half-precision values (a fused
    flex group rounds them once, op by op rounds every op), large arrays (blocked and split
    groups), memory shared through dlpack (its guards), an input whose computation failed, and
    a kernel that raises an IndexError (a data-dependent error, deferred per value by the plan).
    Nodes whose results nobody holds or reads are not run, as in a plan.

    Example:
        >>> import burn
        >>> from burn.graph import run_small_flush
        >>> from burn.graph import graph_for
        >>> x = burn.ones((3,)); _ = x.numpy()
        >>> g = graph_for(x.device); g.flush()
        >>> y = (x * 2.0).exp()
        >>> nodes, g.pending = g.pending, []
        >>> assert run_small_flush(nodes, x.device.backend) and y._h.node is None
    """
    n_nodes = len(nodes)
    if n_nodes > SMALL_FLUSH_NODES or _dlpack.GUARDS or not getattr(backend, "runs_small_flushes", False):
        return False
    live = [False] * n_nodes
    for i in range(n_nodes - 1, -1, -1):
        n = nodes[i]
        if not live[i]:
            for w in n.outs:
                if w() is not None:
                    live[i] = True
                    break
            else:
                continue
        for m in n.metas:
            d = m.dtype
            if d.itemsize == 2 and d.is_floating:
                return False
            size = 1
            for v in m.shape:
                size *= v
            if size > SMALL_FLUSH_ELEMENTS:
                return False
        for a in n.args:
            if type(a) is tuple:
                p = a[0].pos
                if p >= n_nodes or nodes[p] is not a[0]:
                    raise stale_input(n)
                live[p] = True
            else:
                d = a.dtype
                if (d.itemsize == 2 and d.is_floating) or a.data.__class__ is FailedValue:
                    return False
    results = [None] * n_nodes
    kernel = registry.kernel
    bname = backend.name
    for i in range(n_nodes):
        if not live[i]:
            continue
        n = nodes[i]
        prim = n.prim
        fn = kernel(prim.name, bname)
        if fn is None:
            return False        # the planner raises BackendUnavailable
        if getattr(prim, "is_extension", False):
            fn = prim.adapt(fn)
        args = [results[a[0].pos][a[1]] if type(a) is tuple else a.data for a in n.args]
        attrs = n.attrs
        try:
            res = fn(*args, **attrs) if attrs else fn(*args)
        except IndexError:
            return False        # the planner fails this value and its dependents only
        if prim.n_out == 1:
            results[i] = (res if not isinstance(res, (tuple, list)) else res[0],)
        else:
            results[i] = tuple(res)
    for i in range(n_nodes):
        r = results[i]
        if r is not None:
            for k, w in enumerate(nodes[i].outs):
                h = w()
                if h is not None:
                    h.data = r[k]
                    h.node = None
    _STATS["direct"] += 1
    return True


class LazyGraph:
    """Pending work of one physical device (shared by its autodiff twin)."""

    __slots__ = ("kind", "index", "backend", "pending", "max_pending", "rng_seed", "rng_counter",
                 "flushes", "lock", "checked", "dtypes")

    def __init__(self, kind: str, index: int, backend):
        self.kind = kind
        self.index = index
        self.backend = backend
        self.pending = []
        self.max_pending = DEFAULT_MAX_PENDING
        self.rng_seed = int.from_bytes(os.urandom(4), "little")
        self.rng_counter = 0
        self.flushes = 0
        self.lock = threading.RLock()
        self.checked = 0        # pending nodes whose validity depends on values (see burn.errors.record_site)
        self.dtypes = set()     # dtypes this device was found to hold (see check_dtype)

    def add(self, node) -> None:
        pending = self.pending
        node.pos = len(pending)     # the fusion planner's structure key reads positions from nodes
        pending.append(node)
        if len(pending) >= self.max_pending:
            self.flush()

    def check_dtype(self, dtype, op: str) -> None:
        """Raise DTypeError, at the call of ``op``, if this device cannot hold ``dtype``.

        Asked only where a new dtype may appear on the device (creation, imports,
        casts, ops whose result dtype differs from their first input) and cached
        per device, so the hot path pays one set lookup at most.

        Example:
            >>> import burn
            >>> from burn.graph import graph_for
            >>> g = graph_for(burn.Device.flex())
            >>> g.check_dtype(burn.bfloat16, "ones")
            >>> assert burn.bfloat16 in g.dtypes
        """
        if dtype in self.dtypes:
            return
        why = self.backend.dtype_unavailable_reason(dtype, self.index)
        if why is not None:
            raise DTypeError(f"{op}: device {self.kind}:{self.index} cannot hold {dtype} tensors: {why}")
        self.dtypes.add(dtype)

    def seed(self, seed: int) -> None:
        self.flush()
        self.rng_seed = seed
        self.rng_counter = 0

    def next_key(self) -> tuple[int, int]:
        """A fresh (seed, counter) pair for one random op: streams are
        reproducible after seed() and independent of when flushes happen."""
        self.rng_counter += 1
        return (self.rng_seed, self.rng_counter)

    def flush(self) -> None:
        """Run every pending node; materialize the outputs someone still holds."""
        if TRACE[0] is not None:
            TRACE[0].on_read(None)    # a flush inside a trace (sync, seed, a transfer) raises there
        with self.lock:
            nodes = self.pending
            if not nodes:
                return
            self.pending = []
            self.checked = 0
            self.flushes += 1
            try:
                with running_on(self.index):      # creation kernels find their device here
                    if not run_small_flush(nodes, self.backend):
                        plan, externals = get_plan(nodes, self.backend)
                        plan.run(nodes, externals, self.index)
            except Exception as e:
                # the flushed nodes are gone from the graph: remember why their
                # values are missing, so reading one raises instead of returning None
                for n in nodes:
                    n.error = e
                raise


def graph_for(device) -> LazyGraph:
    """The lazy graph of ``device`` (autodiff and plain twins share it)."""
    key = (device.kind, device.index)
    g = _GRAPHS.get(key)
    if g is None:
        g = _GRAPHS[key] = LazyGraph(device.kind, device.index, device.backend)
        if TRACE[0] is not None:
            TRACE[0].on_new_graph(g)      # a trace keeps every op pending, on new devices too
    return g


def flush_all() -> None:
    """Flush every device's pending work (``burn.capture`` does before a trace). A device whose
    flush fails neither stops the others nor raises here, at a call that did not ask for its
    values: its flushed nodes keep the error (:meth:`LazyGraph.flush`), and reading a value they
    were to make raises it, as reading it after its own flush would.

    Example:
        >>> import burn
        >>> from burn.graph import flush_all
        >>> y = burn.ones((2,)) * 3
        >>> flush_all()
        >>> assert y._h.node is None and y.tolist() == [3.0, 3.0]
    """
    for g in list(_GRAPHS.values()):
        try:
            g.flush()
        except Exception:       # noqa: BLE001 - kept on the nodes (see the docstring)
            pass
