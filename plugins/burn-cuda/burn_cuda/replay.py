"""burn.capture replays on cuda: CUDA graphs through CuPy (the backend's ``prepare_replay`` hook).

The first :data:`WARMUP` replays of a graph run its fusion plan (every kernel compiled,
cuBLAS handles made). The next one is captured: the graph's sources (arguments, state,
constants, host values) are copied into static buffers, and the plan runs once on them with
the device's stream in capture mode (``Stream.begin_capture``/``end_capture``), giving a
``cupy.cuda.Graph`` whose kernels read the static buffers and write the arrays the capture
allocated. Every allocation of the capture comes from a private pool that lives as long as
the graph, so no other work is ever handed memory the graph writes. A replay then copies the
new sources into the static buffers, launches the graph on the stream, and hands out copies
of its results (the graph overwrites its own arrays at the next launch; burn values never
change): a few copies and one launch instead of a Python call and a launch per op.

Declined (every replay runs the plan; :meth:`CudaGraphs.describe` says why): graphs with
random ops (their key is a kernel argument that changes per replay), sources that are not
CuPy arrays, and any capture CUDA refuses (a kernel that reads a value back to the host, an
unsupported call): the replay that failed to capture runs the plan. A replay whose sources
have other shapes or dtypes than the captured ones runs the plan.
"""
from __future__ import annotations

from . import runtime
from .memory import AdaptivePool

__all__ = ["CudaGraphs", "CupyStreamCapture", "WARMUP", "prepare_replay"]

WARMUP = 2


class CupyStreamCapture:
    """Stream capture with CuPy: ``capture(dc, body) -> (graph, outputs)``, ``launch(dc, graph)``.

    Tests without a GPU swap in an object with the same two methods (:data:`CAPTURE`)."""

    def capture(self, dc, body):
        cp = dc.cp
        mode = getattr(cp.cuda.runtime, "streamCaptureModeRelaxed", 2)     # pool pages may cudaMalloc
        with dc.device:
            dc.stream.begin_capture(mode=mode)
            try:
                outs = body()
            except BaseException:
                try:
                    dc.stream.end_capture()
                except Exception:       # the capture was invalidated already: nothing to end
                    pass
                raise
            graph = dc.stream.end_capture()
            upload = getattr(graph, "upload", None)     # CuPy >= 13: instantiate it now, not at launch 1
            if upload is not None:
                upload(dc.stream)
        return graph, outs

    def launch(self, dc, graph):
        graph.launch(dc.stream)


CAPTURE = CupyStreamCapture()


class CudaGraphs:
    """The cuda replay runner of one prepared graph on one device (see the module docstring).

    Example (on a GPU)::

        g = burn.capture.trace(lambda x: (x * 2).exp(), burn.ones((4,), device=burn.Device.cuda()))
        for _ in range(4):
            y = g(burn.ones((4,), device=burn.Device.cuda()))
        assert g._prepared["cuda"].describe(0).startswith("CUDA graph")
    """

    def __init__(self, prepared, index):
        self.index = index
        self.count = 0
        self.graph = None
        self.why = None
        if prepared.rng:
            self.why = (f"{len(prepared.rng)} random op(s): their key is a kernel argument that changes "
                        f"at every replay")

    def describe(self) -> str:
        if self.graph is not None:
            return (f"CUDA graph ({len(self.static)} inputs copied in, {len(self.outs)} results copied out "
                    f"per replay)")
        if self.why is not None:
            return f"fusion plan (CUDA graph declined: {self.why})"
        return f"fusion plan (warm-up {self.count} of {WARMUP}, then capture)"

    def run(self, prep, index) -> bool:
        if self.graph is not None:
            return self._launch(prep)
        if self.why is not None:
            return False
        self.count += 1
        if self.count <= WARMUP:
            return False
        return self._capture(prep, index)

    def _capture(self, prep, index):
        dc = runtime.context(index)
        cp = dc.cp
        srcs = [h.data for _, h in prep.sources]
        bad = next((type(x).__name__ for x in srcs if not isinstance(x, cp.ndarray)), None)
        if bad is not None:
            self.why = f"an input is a {bad}, not a CuPy array"
            return False
        held = list(prep.held.values())
        pool, saved = AdaptivePool(dc), dc.pool
        dc.pool = pool              # every allocation of the capture: the graph's own memory
        try:
            with dc.scope():
                static = [cp.empty(x.shape, x.dtype) for x in srcs]
                for s, x in zip(static, srcs):
                    cp.copyto(s, x)

            def body():
                for (_, h), s in zip(prep.sources, static):
                    h.data = s
                try:
                    prep.plan.run(prep.nodes, prep.externals, index)
                finally:
                    for (_, h), x in zip(prep.sources, srcs):
                        h.data = x
                return [h.data for h in held]
            try:
                graph, outs = CAPTURE.capture(dc, body)
            except Exception as e:      # CUDA refused the capture: this replay runs the plan
                self.why = f"the capture failed: {type(e).__name__}: {str(e)[:200]}"
                return False
        finally:
            dc.pool = saved
        bad = next((type(o).__name__ for o in outs if not isinstance(o, cp.ndarray)), None)
        if bad is not None:
            self.why = f"a result is a {bad} (a failed value?), not a CuPy array"
            return False
        self.graph, self.static, self.outs, self.pool, self.held = graph, static, outs, pool, held
        self.last = [None] * len(static)
        return self._launch(prep)

    def _launch(self, prep):
        srcs = [h.data for _, h in prep.sources]
        for s, x in zip(self.static, srcs):
            if x.__class__ is not s.__class__ or x.shape != s.shape or x.dtype != s.dtype:
                return False
        dc = runtime.context(self.index)
        cp = dc.cp
        with dc.scope():
            for i, (s, x) in enumerate(zip(self.static, srcs)):
                if x is not self.last[i]:       # an unchanged source (a constant) is there already
                    cp.copyto(s, x)
                    self.last[i] = x
            CAPTURE.launch(dc, self.graph)
            for h, o in zip(self.held, self.outs):
                h.data = o.copy()
        dc.stats["launches"] += 1
        return True


def prepare_replay(prepared, index):
    """The hook ``CudaBackend.prepare_replay`` answers with."""
    return CudaGraphs(prepared, index)
