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
from .errors import DTypeError
from .fusion import GRAPHS as _GRAPHS, get_plan, run_small_flush

__all__ = ["LazyGraph", "graph_for"]

# Past this many pending nodes a flush happens at record time, bounding the
# memory held by pending temporaries and the cost of planning one flush. Kept
# small enough that pending nodes die before Python's GC promotes them to its
# oldest generation (whose full collections cost ~40 ms with torch loaded);
# see docs/benchmarks.md.
DEFAULT_MAX_PENDING = int(os.environ.get("BURN_MAX_PENDING", "512"))


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
    """Flush every device's pending work (used before transfers between devices)."""
    for g in list(_GRAPHS.values()):
        g.flush()
