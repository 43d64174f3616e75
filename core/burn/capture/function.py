"""``@burn.capture``: one traced graph per call signature, replayed after.

The first call with a signature (the static arguments, and per tensor argument its shape,
dtype and device) traces the function; later calls replay the graph. A call whose trace
found state created inside it (an optimizer's moments on its first step) was an ordinary
call: the next one traces again. A graph whose guards changed (a hyperparameter baked in)
is traced again. The number of graphs per function is bounded: past the bound the call
raises CaptureError saying which signatures were seen.
"""
from __future__ import annotations

import functools

from ..errors import CaptureError
from .tracer import trace_call
from .tree import describe_spec, flatten, signature

__all__ = ["CapturedFunction", "DEFAULT_MAX_TRACES"]

DEFAULT_MAX_TRACES = 8
_WARMUP = "warm-up"


class CapturedFunction:
    """A function that traces once per signature and replays after (``@burn.capture``).

    Example:
        >>> import burn
        >>> @burn.capture
        ... def f(x):
        ...     return (x * 2).sum()
        >>> assert f(burn.ones((3,))).item() == 6.0      # traced
        >>> assert f(burn.ones((3,))).item() == 6.0      # replayed
        >>> assert f.cache_info()["traces"] == 1 and f.cache_info()["replays"] == 1
    """

    def __init__(self, fn, *, max_traces: int = DEFAULT_MAX_TRACES):
        if not callable(fn):
            raise TypeError(f"burn.capture: expected a function, got {type(fn).__name__}")
        self.fn = fn
        self.max_traces = int(max_traces)
        self._graphs = {}
        self._traces = 0
        self._replays = 0
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        leaves, spec = flatten((args, kwargs))
        key = signature(spec, leaves)
        g = self._graphs.get(key)
        if g is not None and g is not _WARMUP:
            why = g.check_guards()
            if why is None:
                self._replays += 1
                return g.run(leaves, guards_checked=True)
            del self._graphs[key]
            g = None
        return self._trace(key, args, kwargs, warm=g is _WARMUP)

    def _trace(self, key, args, kwargs, warm):
        if not warm and len([v for v in self._graphs.values() if v is not _WARMUP]) >= self.max_traces:
            seen = "\n  ".join(describe_spec(k) for k in list(self._graphs)[:self.max_traces])
            raise CaptureError(
                f"burn.capture({getattr(self.fn, '__name__', 'fn')}): this call's signature {describe_spec(key)} "
                f"would be graph number {self.max_traces + 1} (max_traces={self.max_traces}). Signatures seen:\n  "
                f"{seen}\nEach new shape, dtype, device or static argument value traces again: pass varying "
                f"numbers as tensors, pad batches to a few shapes, or raise the bound with "
                f"burn.capture(fn, max_traces=N)")
        self._traces += 1
        g, result = trace_call(self.fn, args, kwargs, strict=warm)
        # None: the call made state it keeps (it ran as an ordinary call); the next one traces
        self._graphs[key] = _WARMUP if g is None else g
        return result

    def graph(self, *args, **kwargs):
        """The graph this function replays for these arguments' signature (None before its trace).

        Example:
            >>> import burn
            >>> f = burn.capture(lambda x: x + 1)
            >>> _ = f(burn.ones((2,)))
            >>> assert f.graph(burn.ones((2,))).ops() == ["add"] and f.graph(burn.ones((3,))) is None
        """
        leaves, spec = flatten((args, kwargs))
        g = self._graphs.get(signature(spec, leaves))
        return None if g is _WARMUP else g

    def cache_info(self) -> dict:
        """``{"traces", "replays", "graphs"}`` counts.

        Example:
            >>> import burn
            >>> assert burn.capture(lambda x: x)(burn.ones((1,))) is not None
        """
        return {"traces": self._traces, "replays": self._replays,
                "graphs": sum(1 for v in self._graphs.values() if v is not _WARMUP)}

    def clear(self) -> None:
        """Forget every graph (the next call traces again).

        Example:
            >>> import burn
            >>> f = burn.capture(lambda x: x * 2)
            >>> _ = f(burn.ones((1,))); f.clear()
            >>> assert f.cache_info()["graphs"] == 0
        """
        self._graphs.clear()
