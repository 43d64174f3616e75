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
from .fusion import GRAPHS as _GRAPHS, get_plan

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
                 "flushes", "lock", "checked")

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

    def add(self, node) -> None:
        pending = self.pending
        node.pos = len(pending)     # the fusion planner's structure key reads positions from nodes
        pending.append(node)
        if len(pending) >= self.max_pending:
            self.flush()

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
        with self.lock:
            nodes = self.pending
            if not nodes:
                return
            self.pending = []
            self.checked = 0
            self.flushes += 1
            try:
                plan, externals = get_plan(nodes, self.backend)
                with running_on(self.index):      # creation kernels find their device here
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
    return g


def flush_all() -> None:
    """Flush every device's pending work (used before transfers between devices)."""
    for g in list(_GRAPHS.values()):
        g.flush()
