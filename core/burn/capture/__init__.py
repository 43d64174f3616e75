"""burn.capture: trace a function into a portable :class:`burn.Graph`, and replay it.

``@burn.capture`` traces a function on its first call per signature and replays the graph
after; ``burn.capture.trace(fn, *args)`` gives the :class:`burn.Graph` itself. Tensor
arguments (nested in tuples, lists and dicts) are the graph's inputs, everything else is
static and part of the cache key. Parameters, buffers and optimizer state the function
reads are state: replay reads their current values and applies the function's in-place
updates (``assign_``, ``+=``, writes through views, ``opt.step``, running statistics).
Random ops draw fresh numbers on each replay, from the same stream as eager calls. Reading
a value inside a trace raises :class:`burn.CaptureError`. See docs/capture.md.

Example:
    >>> import burn
    >>> dev = burn.Device.flex().autodiff()
    >>> w = burn.tensor([1.0, -1.0], device=dev).require_grad()
    >>> @burn.capture
    ... def step(x):
    ...     loss = ((x * w).sum() - 1.0) ** 2
    ...     grads = loss.backward()
    ...     with burn.no_grad():
    ...         w.assign_(w - w.grad(grads) * 0.01)
    ...     return loss
    >>> losses = [step(burn.tensor([1.0, 2.0], device=dev)).item() for _ in range(3)]
    >>> assert losses[0] > losses[1] > losses[2]
"""
from __future__ import annotations

import sys
import types

from ..errors import CaptureError
from .function import DEFAULT_MAX_TRACES, CapturedFunction
from .ir import Graph, GraphNode, Slot
from .recipes import Recipe, register_host_recipe
from .tracer import guard, host_value, on_output, on_replay, trace_call, tracing

__all__ = ["capture", "trace", "Graph", "GraphNode", "Slot", "CapturedFunction", "CaptureError",
           "host_value", "on_replay", "on_output", "guard", "tracing", "Recipe", "register_host_recipe"]


def capture(fn=None, *, max_traces: int = DEFAULT_MAX_TRACES):
    """Decorate ``fn`` to trace once per signature and replay after (also ``@burn.capture``
    and ``@burn.capture(max_traces=N)``).

    Example:
        >>> import burn
        >>> @burn.capture(max_traces=2)
        ... def double(x):
        ...     return x * 2
        >>> assert double(burn.ones((2,))).tolist() == [2.0, 2.0]
        >>> assert double(burn.ones((3,))).shape == (3,)       # a new shape traces again
    """
    if fn is None:
        return lambda f: CapturedFunction(f, max_traces=max_traces)
    return CapturedFunction(fn, max_traces=max_traces)


def trace(fn, *args, **kwargs) -> Graph:
    """Trace ``fn(*args, **kwargs)`` once and return its :class:`burn.Graph` (the call runs too).

    Example:
        >>> import burn
        >>> g = burn.capture.trace(lambda x, y: (x @ y).relu(), burn.ones((2, 3)), burn.ones((3, 4)))
        >>> assert g.ops() == ["matmul", "relu"] and g(burn.ones((2, 3)), burn.ones((3, 4))).shape == (2, 4)
    """
    g, _ = trace_call(fn, args, kwargs)
    return g


class _CaptureModule(types.ModuleType):
    """``burn.capture`` is this package and the decorator at once."""

    def __call__(self, fn=None, **kwargs):
        return capture(fn, **kwargs)


sys.modules[__name__].__class__ = _CaptureModule
