"""CuPy and the per-device state of burn-cuda: stream, memory pool, compiled kernels.

Nothing here imports CuPy at module import: :func:`load_cupy` does, from the
backend factory and the first kernel call, and turns every way CuPy can be
missing or unusable into a :class:`burn.BackendUnavailable` that says what to do.

One :class:`DeviceContext` per device index holds one stream (every burn
kernel of that device runs on it, in order, which is what makes
reusing a freed block safe without events), the adaptive pool, and the
compiled modules. :meth:`DeviceContext.scope` is entered around each burn
kernel: it selects the device, the stream and the pool's allocator for the
current thread only (``cupy.cuda.using_allocator``), so CuPy calls made by
other libraries in the process keep CuPy's own pool; entered again while it is
the thread's innermost scope (a fused group's kernels) it only counts.
"""
from __future__ import annotations

import os
import threading

from burn.errors import BackendUnavailable

_CUPY = None
_LOCK = threading.Lock()
_CONTEXTS: dict = {}


def load_cupy():
    """CuPy, imported on first use, or BackendUnavailable naming the package to install
    (CuPy missing) or what CuPy reported (no GPU, no driver)."""
    global _CUPY
    if _CUPY is not None:
        return _CUPY
    from . import INSTALL_HINT
    if os.environ.get("BURN_CUDA_ALLOW_TF32") == "1":
        # CuPy reads CUPY_TF32 when it is imported: TF32 matmuls are opt-in (results then
        # differ from flex beyond float32 tolerance), off by default for parity
        os.environ.setdefault("CUPY_TF32", "1")
    try:
        import cupy
    except ImportError as e:
        raise BackendUnavailable(f"burn-cuda needs CuPy, which is not installed ({e}): {INSTALL_HINT}") from None
    except Exception as e:     # a broken CuPy install (wrong CUDA wheel, missing libraries)
        raise BackendUnavailable(f"CuPy failed to import: {type(e).__name__}: {e}. Install the CuPy wheel "
                                 f"matching your CUDA: {INSTALL_HINT}") from None
    try:
        ok = bool(cupy.is_available())
    except Exception as e:
        ok, why = False, f"{type(e).__name__}: {e}"
    else:
        why = None
    if not ok:
        if why is None:
            why = _device_count_error(cupy)
        raise BackendUnavailable(f"CuPy is installed but cannot use a GPU here: {why}")
    _CUPY = cupy
    return cupy


def _device_count_error(cupy) -> str:
    """What CuPy's runtime says when asked for devices (is_available() only says False)."""
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except Exception as e:
        return f"{type(e).__name__}: {e}"
    return f"cupy.is_available() returned False ({n} CUDA devices reported)"


def device_count() -> int:
    return load_cupy().cuda.runtime.getDeviceCount()


class DeviceContext:
    """Stream, pool and kernel cache of one CUDA device."""

    def __init__(self, index: int):
        cp = load_cupy()
        from .memory import AdaptivePool, CupyDefaultPool
        self.cp = cp
        self.index = index
        self.device = cp.cuda.Device(index)
        with self.device:
            # a blocking stream: it is ordered with CuPy's/PyTorch's legacy default stream, so
            # kernels other plugins register (run on the current stream) and DLPack consumers
            # see burn's results without extra events
            self.stream = cp.cuda.Stream(non_blocking=False)
        # BURN_CUDA_POOL=cupy: CuPy's default pool instead (the baseline of gpu_check.sh)
        self.pool = CupyDefaultPool(self) if os.environ.get("BURN_CUDA_POOL") == "cupy" else AdaptivePool(self)
        self._modules: dict = {}
        self._functions: dict = {}
        self.stats = {"launches": 0, "modules_compiled": 0}
        self._scope = _Scope(self)

    def scope(self):
        """Device, stream and the pool's allocator, for the current thread only (a context
        manager giving this DeviceContext). Entered inside this device's own scope (a fused
        group's kernels, a kernel calling another kernel) it selects nothing again: a counter.

        >>> with context(0).scope() as dc:       # doctest: +SKIP
        ...     y = dc.cp.empty((4,))             # from burn's pool, on dc.stream
        """
        return self._scope

    def function(self, source: str, name: str):
        """Kernel ``name`` of ``source``, compiled once per process (CuPy also keeps
        the binary in its on-disk cache, ~/.cupy/kernel_cache, across processes)."""
        fn = self._functions.get((source, name))
        if fn is not None:
            return fn
        mod = self._modules.get(source)
        if mod is None:
            with self.device:
                mod = self.cp.RawModule(code=source, options=COMPILE_OPTIONS)
            self._modules[source] = mod
            self.stats["modules_compiled"] += 1
        with self.device:
            fn = self._functions[(source, name)] = mod.get_function(name)
        return fn

    def launch(self, fn, n: int, args, block: int = 256):
        """Launch a flat kernel over ``n`` threads on this device's stream."""
        self.stats["launches"] += 1
        st = getattr(_TLS, "stack", None)
        if st and st[-1][0] is self:        # inside this device's scope: its stream is current
            fn(((n + block - 1) // block,), (block,), tuple(args))
            return
        # a RawKernel launches on the current stream (loaded for the current device), and CuPy
        # enters a stream only while its own device is current (RuntimeError otherwise)
        with self.device, self.stream:
            fn(((n + block - 1) // block,), (block,), tuple(args))

    def synchronize(self):
        self.stream.synchronize()


# per thread: the stack of entered scopes, each [DeviceContext, using_allocator's manager, re-entries]
_TLS = threading.local()


class _Scope:
    """``DeviceContext.scope()``: the first entry on a thread (or one inside another device's
    scope) enters the device, the stream and ``cupy.cuda.using_allocator(pool.malloc)``;
    an entry while this device's scope is the innermost one only counts. Per kernel call
    that was a generator-based context manager entering three more (~10 us of Python on a
    GPU host); a fused group's kernels and nested kernels now pay it once."""

    __slots__ = ("dc",)

    def __init__(self, dc):
        self.dc = dc

    def __enter__(self):
        dc = self.dc
        st = getattr(_TLS, "stack", None)
        if st is None:
            st = _TLS.stack = []
        if st and st[-1][0] is dc:
            st[-1][2] += 1
            return dc
        # the three entered directly (an ExitStack costs more than they do)
        dc.device.__enter__()
        try:
            dc.stream.__enter__()
            try:
                alloc = dc.cp.cuda.using_allocator(dc.pool.malloc)
                alloc.__enter__()
            except BaseException:
                dc.stream.__exit__(None, None, None)
                raise
        except BaseException:
            dc.device.__exit__(None, None, None)
            raise
        st.append([dc, alloc, 0])
        return dc

    def __exit__(self, *exc):
        top = _TLS.stack[-1]
        if top[2]:
            top[2] -= 1
            return False
        _TLS.stack.pop()
        dc = self.dc
        try:
            top[1].__exit__(*exc)
        finally:
            try:
                dc.stream.__exit__(*exc)
            finally:
                dc.device.__exit__(*exc)
        return False


# no fast-math: results must match flex at float32 tolerance; C++17 for hex float literals
COMPILE_OPTIONS = ("--std=c++17",)


def context(index: int = 0) -> DeviceContext:
    """The DeviceContext of device ``index`` (created on first use)."""
    dc = _CONTEXTS.get(index)
    if dc is None:
        with _LOCK:
            dc = _CONTEXTS.get(index)
            if dc is None:
                dc = _CONTEXTS[index] = DeviceContext(index)
    return dc
