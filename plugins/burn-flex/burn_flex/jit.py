"""flex's JIT kernels: float32 erf, gelu, relu, softmax, layer norm, im2col, col2im, direct
convolutions, max pooling and the Adam / SGD updates, compiled with LLVM for the host CPU.

numpy has no vectorized erf: flex's numpy erf evaluates a rational fit in ~25
float64 passes over each block, the largest cost of a gelu written from
elementary ops. The same fit written as one loop (``kernels/ll/erf.ll``, LLVM
IR) and compiled by LLVM -O3 for this CPU (AVX-512 / AVX2 where present)
runs in one pass, ~6x faster on one thread, and releases the GIL for the whole
call, so blocks on the worker pool do not contend for it. The IR performs the
numpy path's operations in the same order without fast-math flags: results
are bit-identical to it (tested), so which path ran never changes a result.

Compiled code is cached on disk like wgpu's programs: object code keyed by
(IR source, CPU name and features, LLVM version), in
``$BURN_FLEX_JIT_CACHE_DIR`` (default ``$XDG_CACHE_HOME/burn/flex-jit`` or
``~/.cache/burn/flex-jit``); a later process loads it instead of compiling
(import ~40 ms, compile ~80 ms, load from disk a few ms). ``BURN_FLEX_JIT_CACHE=0``
disables the disk cache; ``BURN_FLEX_JIT=0`` disables the JIT (the numpy
kernels run). Cache files are raw object code behind a checked header (length
and SHA-256), never pickles.

The fallback is the numpy kernel, with the same results. It is used when the
JIT is disabled, or when llvmlite is missing or fails to compile (a
``RuntimeWarning`` says so once per process, and :func:`status` keeps the
reason).

Example::

    >>> import numpy as np
    >>> from burn_flex import jit
    >>> k = jit.kernels()                 # None when the JIT is off or unavailable
    >>> x = np.linspace(-3, 3, 7, dtype=np.float32)
    >>> k is None or k.erf(x).dtype == np.float32
    True
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import tempfile
import threading
import time
import warnings
from importlib import resources

import numpy as np

_lock = threading.Lock()
_state: dict = {"kernels": None, "tried": False, "reason": None, "source": None, "seconds": None}
_MAGIC = b"burn-flex-jit-obj-1\n"
# the IR files compiled into the one JIT module (kernels/ll/)
_SOURCES = ("erf.ll", "relu.ll", "rows.ll", "conv.ll", "direct.ll", "optim.ll", "pool.ll", "workers.ll")


def enabled() -> bool:
    """Whether the JIT may be used (``BURN_FLEX_JIT`` is not ``0``).

    Example::

        >>> from burn_flex import jit
        >>> isinstance(jit.enabled(), bool)
        True
    """
    return os.environ.get("BURN_FLEX_JIT", "1").strip() != "0"


def cache_dir() -> str | None:
    """The directory holding compiled kernels, or None when the disk cache is disabled.

    Example::

        >>> from burn_flex import jit
        >>> d = jit.cache_dir()
        >>> d is None or d.endswith("flex-jit") or bool(d)
        True
    """
    from burn.backend import disk_cache_dir
    return disk_cache_dir("flex-jit", dir_env="BURN_FLEX_JIT_CACHE_DIR", switch_env="BURN_FLEX_JIT_CACHE")


def status() -> dict:
    """What the JIT is doing in this process: ``{"enabled", "available", "reason", "source",
    "seconds", "cache_dir"}``. ``source`` is ``"compiled"`` or ``"disk cache"`` once loaded;
    ``reason`` says why the numpy kernels run instead, if they do; ``seconds`` is the one-time
    cost of loading (import, compile or read).

    Example::

        >>> from burn_flex import jit
        >>> sorted(jit.status())
        ['available', 'cache_dir', 'enabled', 'reason', 'seconds', 'source']
    """
    return {"enabled": enabled(), "available": _state["kernels"] is not None, "reason": _state["reason"],
            "source": _state["source"], "seconds": _state["seconds"], "cache_dir": cache_dir()}


def kernels():
    """The compiled kernels (:class:`Kernels`), loading them on the first call; None when the JIT
    is disabled or unavailable (then the caller runs its numpy kernel; see the module docstring).

    Example::

        >>> from burn_flex import jit
        >>> k = jit.kernels()
        >>> k is None or callable(k.gelu)
        True
    """
    k = _state["kernels"]
    if k is not None or _state["tried"]:
        return k
    if not enabled():
        _state["reason"] = "disabled by BURN_FLEX_JIT=0"
        return None
    with _lock:
        if not _state["tried"]:
            t0 = time.perf_counter()
            try:
                _state["kernels"], _state["source"] = _load()
            except Exception as e:     # llvmlite missing, or LLVM refused the module
                _state["reason"] = f"{type(e).__name__}: {e}"
                warnings.warn("burn-flex: the JIT kernels (float32 erf, gelu, relu, softmax, layer norm, im2col, "
                              "col2im, direct convolutions, max pooling, "
                              "optimizer updates) are unavailable "
                              f"({_state['reason']}); flex runs its numpy kernels instead (same results, "
                              "slower). Install llvmlite, or set BURN_FLEX_JIT=0 to silence this.",
                              RuntimeWarning, stacklevel=3)
            _state["seconds"] = time.perf_counter() - t0
            _state["tried"] = True
    return _state["kernels"]


def reset() -> None:
    """Forget the loaded kernels, so the next :func:`kernels` call loads them again (after
    changing ``BURN_FLEX_JIT*`` variables; tests use it).

    Example::

        >>> from burn_flex import jit
        >>> jit.reset()
    """
    with _lock:
        _state.update(kernels=None, tried=False, reason=None, source=None, seconds=None)


def _load():
    engine, mod, source = compile_ir(_module_source())
    return Kernels(engine, mod), source


def compile_ir(src: str):
    r"""Compile LLVM IR text for this CPU: ``(engine, module, source)`` where ``source`` is
    ``"compiled"`` or ``"disk cache"`` (object code keyed by the text, the CPU and the LLVM
    version, read back instead of optimizing and compiling again). Raises where llvmlite is
    missing or LLVM rejects the text. Used for the kernel module and for the compiled
    element-wise groups (``burn_flex.jit_groups``); keep ``engine`` alive while its code runs.

    Example::

        >>> from burn_flex import jit
        >>> engine, _, _ = jit.compile_ir("define i64 @twice(i64 %x) {\n %y = add i64 %x, %x\n ret i64 %y\n}")
        >>> import ctypes
        >>> ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_int64)(engine.get_function_address("twice"))(21)
        42
    """
    import llvmlite
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    cpu, features = llvm.get_host_cpu_name(), llvm.get_host_cpu_features().flatten()
    tm = llvm.Target.from_default_triple().create_target_machine(cpu=cpu, features=features, opt=3)
    key = hashlib.sha256("\0".join([src, cpu, features, llvm.get_default_triple(), llvmlite.__version__,
                                    ".".join(map(str, llvm.llvm_version_info))]).encode()).hexdigest()
    path = None if cache_dir() is None else os.path.join(cache_dir(), key[:32] + ".o")
    cached = _read(path)
    mod = llvm.parse_assembly(src)
    mod.verify()
    if cached is None:             # optimize (vectorize) only when the object code gets built
        pto = llvm.create_pipeline_tuning_options(speed_level=3)
        pto.loop_vectorization = True
        pto.slp_vectorization = True
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    engine = llvm.create_mcjit_compiler(mod, tm)
    built = []
    engine.set_object_cache(lambda m, buf: built.append(bytes(buf)), lambda m: cached)
    engine.finalize_object()
    if cached is None and built and path is not None:
        _write(path, built[0])
    return engine, mod, ("disk cache" if cached is not None else "compiled")


def _host_has_avx512() -> bool:
    """Whether the host CPU has AVX-512F (LLVM's host features): 16 float32 lanes per vector.

    Example:
        >>> from burn_flex import jit
        >>> isinstance(jit._host_has_avx512(), bool)
        True
    """
    import llvmlite.binding as llvm
    return bool(llvm.get_host_cpu_features().get("avx512f", False))


def _module_source() -> str:
    """One module from every IR file: they define no name twice, and each declares the LLVM
    intrinsics it calls, so a declaration another file already made is dropped (LLVM rejects a
    second one). The cache key covers the whole text."""
    import platform
    seen, lines = set(), []
    # workers.ll's spin-wait hint is x86's pause; other CPUs spin without it
    x86 = platform.machine().lower() in ("x86_64", "amd64", "i686", "i386")
    for name in _SOURCES:
        for line in resources.files("burn_flex.kernels").joinpath("ll", name).read_text().splitlines():
            if line.startswith("declare "):
                if line in seen:
                    continue
                seen.add(line)
            if not x86 and "@llvm.x86.sse2.pause" in line:
                continue
            lines.append(line)
    return "\n".join(lines) + "\n"


def _read(path):
    if path is None:
        return None
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    head = len(_MAGIC) + 8 + 32
    if len(data) < head or not data.startswith(_MAGIC):
        return None
    n = int.from_bytes(data[len(_MAGIC):len(_MAGIC) + 8], "little")
    body = data[head:]
    if len(body) != n or hashlib.sha256(body).digest() != data[len(_MAGIC) + 8:head]:
        return None                # truncated or damaged: compile again (and overwrite it)
    return body


def _write(path, obj):
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(_MAGIC + len(obj).to_bytes(8, "little") + hashlib.sha256(obj).digest() + obj)
        os.replace(tmp, path)      # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass                       # a read-only cache dir only costs recompiles


_BINARY = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64)
_INPLACE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)


class _Unary:
    """One float32 -> float32 element-wise JIT kernel, called like a ufunc with ``out=``.

    ctypes releases the GIL for the call. Contiguous operands are passed as they are
    (``out`` may be ``x`` itself: the in-place loop runs); anything else goes through a
    contiguous copy."""

    __slots__ = ("fn", "inplace", "__name__")

    def __init__(self, engine, name):
        self.fn = _BINARY(engine.get_function_address(name))
        self.inplace = _INPLACE(engine.get_function_address(name + "_inplace"))
        self.__name__ = name

    def __call__(self, x, out=None):
        if x.dtype != np.float32:
            raise TypeError(f"{self.__name__}: expected float32 input, got {x.dtype}")
        if out is None:
            out = np.empty(x.shape, np.float32)
        elif out.dtype != np.float32 or not out.flags.writeable:
            raise TypeError(f"{self.__name__}: expected a writeable float32 out=, got "
                            f"{out.dtype}{'' if out.flags.writeable else ' (read-only)'}")
        if x.shape != out.shape:
            x = np.broadcast_to(x, out.shape)
        n = out.size
        if n == 0:
            return out
        dst = out if out.flags.c_contiguous else np.empty(out.shape, np.float32)
        src = x if x.flags.c_contiguous else np.ascontiguousarray(x)
        pd = _addr(dst)
        ps = _addr(src)
        if ps == pd:
            if src is not dst:
                np.copyto(dst, src)
            self.inplace(pd, n)
        else:
            if ps < pd + 4 * n and pd < ps + 4 * n:     # partial overlap: read a copy
                src = src.copy()
                ps = _addr(src)
            self.fn(ps, pd, n)
        if dst is not out:
            out[...] = dst
        return out


def _addr_interface(a):
    return a.__array_interface__["data"][0]


def _fast_addr():
    """The data address of an ndarray read from its object header, or None where that is not
    this numpy's layout. ``__array_interface__`` builds a dict per call (~3 us here: 8 of them
    cost more than a whole compiled Adam pass over a bias); numpy's C API reads the pointer
    field that follows the object header (``PyArray_DATA``, inlined into every compiled
    extension, so numpy keeps its offset), ~0.2 us through ctypes. Checked once against
    ``__array_interface__`` for a few arrays, views included."""
    off = object.__basicsize__
    field = ctypes.c_size_t.from_address
    ndarray = np.ndarray

    def addr(a):
        # only an ndarray has that layout (a numpy scalar, e.g. a 0-d result, does not)
        return field(id(a) + off).value if isinstance(a, ndarray) else _addr_interface(a)
    base = np.arange(12, dtype=np.float32)
    for a in (base, base[3:], base.reshape(3, 4)[1], np.empty(0, np.int64), np.float32(2)):
        if addr(a) != _addr_interface(a):
            return None
    return addr


_addr = _fast_addr() or _addr_interface


def _addrs_of(arrays) -> list:
    """The data addresses of ``arrays``, every one an ``np.ndarray`` (the caller made them): the
    header read of :func:`_fast_addr` inlined, ~0.2 us each instead of ~0.6 through ``_addr``."""
    if _addr is _addr_interface:
        return [_addr_interface(a) for a in arrays]
    field, off = ctypes.c_size_t.from_address, object.__basicsize__
    return [field(id(a) + off).value for a in arrays]


def _check_float32(name, arrays, written):
    """The checks every array kernel makes: C-contiguous float32 operands, a writeable output."""
    for a in arrays:
        if a.dtype != np.float32 or not a.flags.c_contiguous:
            raise TypeError(f"{name}: expected C-contiguous float32 arrays, got "
                            f"{a.dtype} (contiguous: {a.flags.c_contiguous})")
    if not written.flags.writeable:
        raise TypeError(f"{name}: the output array is read-only")


class _Planes:
    """A kernel over float32 planes, called by ``burn_flex.kernels.conv``: ``fn(*planes, *geometry)``
    with ``n_planes`` float32 arrays (the last one written, distinct from the others: the IR assumes
    no aliasing) and ``n_geometry`` int64 arrays the callee trusts (the caller derives them from the
    arrays' shapes): im2col / col2im (``kernels/ll/conv.ll``, geometry ``d, rowoff, colr``; the
    gathering im2col's ``d, tab``, ``tab`` int32) and 2x2
    max pooling (``kernels/ll/pool.ll``, ``d = [P, H, W, OH, OW]``). ctypes releases the GIL."""

    __slots__ = ("fn", "n_planes", "__name__")

    def __init__(self, engine, name, n_planes, n_geometry):
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (n_planes + n_geometry)))(
            engine.get_function_address(name))
        self.n_planes = n_planes
        self.__name__ = name

    def __call__(self, *arrays):
        if len(arrays) != len(self.fn.argtypes):
            raise TypeError(f"{self.__name__}: expected {self.n_planes} float32 arrays and "
                            f"{len(self.fn.argtypes) - self.n_planes} geometry arrays, got {len(arrays)} arrays")
        planes = arrays[:self.n_planes]
        _check_float32(self.__name__, planes, planes[-1])
        self.fn(*[_addr(a) for a in arrays])
        return planes[-1]


class _Rows:
    """A float32 kernel over the rows of 2-D arrays (``kernels/ll/rows.ll``), called by
    ``burn_flex.kernels.nn`` and ``attention``: ``fn(*inputs, out)`` with C-contiguous float32
    arrays of one shape [rows, n]; ``out`` may be the last input itself (the kernels read each
    element before writing it) but must not overlap the others. ctypes releases the GIL."""

    __slots__ = ("fn", "n_in", "__name__")

    def __init__(self, engine, name, n_in):
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (n_in + 1)), ctypes.c_int64, ctypes.c_int64)(
            engine.get_function_address(name))
        self.n_in = n_in
        self.__name__ = name

    def __call__(self, *arrays):
        if len(arrays) != self.n_in + 1:
            raise TypeError(f"{self.__name__}: expected {self.n_in} inputs and out, got {len(arrays) - 1} inputs")
        _check_float32(self.__name__, arrays, arrays[-1])
        shape = arrays[-1].shape
        for a in arrays:
            if a.ndim != 2 or a.shape != shape:
                raise TypeError(f"{self.__name__}: expected 2-D arrays of one shape, got {a.shape} and {shape}")
        self.fn(*[_addr(a) for a in arrays], shape[0], shape[1])
        return arrays[-1]


class _CrossEntropyRows:
    """float32 cross-entropy over the rows of [rows, n] logits (``kernels/ll/rows.ll``), called by
    ``burn_flex.kernels.nn``: ``ce_loss_rows(x, t, loss)`` writes each row's ``lse - z[t]`` into the
    [rows] array ``loss``; ``ce_grad_rows(x, t, scale, out)`` writes ``(softmax - onehot(t)) * scale``
    into the [rows, n] array ``out``, ``scale`` a float32 array of one value or of one per row. ``t``
    holds int64 class indices; the result is the number of rows whose class lies outside [0, n)
    (those rows are not written: the caller raises). ctypes releases the GIL."""

    __slots__ = ("fn", "grad", "__name__")

    def __init__(self, engine, name, grad):
        args = [ctypes.c_void_p, ctypes.c_void_p] + ([ctypes.c_void_p, ctypes.c_int64] if grad else []) + [
            ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        self.fn = ctypes.CFUNCTYPE(ctypes.c_int64, *args)(engine.get_function_address(name))
        self.grad = grad
        self.__name__ = name

    def __call__(self, x, t, *rest):
        out = rest[-1]
        floats = (x, *rest)
        _check_float32(self.__name__, floats, out)
        if x.ndim != 2 or t.shape != x.shape[:1] or t.dtype != np.int64 or not t.flags.c_contiguous:
            raise TypeError(f"{self.__name__}: expected [rows, n] logits and [rows] contiguous int64 classes, "
                            f"got {x.shape} and {t.shape} {t.dtype}")
        if out.shape != (x.shape if self.grad else x.shape[:1]):
            raise TypeError(f"{self.__name__}: output shape {out.shape} does not fit logits {x.shape}")
        if self.grad:
            scale = rest[0]
            if scale.size not in (1, x.shape[0]):
                raise TypeError(f"{self.__name__}: scale needs 1 or {x.shape[0]} values, got {scale.size}")
            return self.fn(_addr(x), _addr(t), _addr(scale), 0 if scale.size == 1 else 1, _addr(out), *x.shape)
        return self.fn(_addr(x), _addr(t), _addr(out), *x.shape)


class _DotNTSum:
    """``dot_nt_sum(a, b, out)``: ``out[o, k] = sum over n, p of a[n, o, p] * b[n, k, p]`` for
    C-contiguous float32 ``a`` [N, O, P], ``b`` [N, K, P] and a writeable ``out`` [O, K]
    (``kernels/ll/rows.ll``: a convolution's weight gradient from per-image columns, each output
    one sum in a fixed order). ctypes releases the GIL."""

    __slots__ = ("fn", "__name__")

    def __init__(self, engine):
        self.__name__ = "dot_nt_sum_f32"
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 4))(engine.get_function_address(self.__name__))

    def __call__(self, a, b, out):
        _check_float32(self.__name__, (a, b, out), out)
        if a.ndim != 3 or b.ndim != 3 or a.shape[0] != b.shape[0] or a.shape[2] != b.shape[2] \
                or out.shape != (a.shape[1], b.shape[1]):
            raise TypeError(f"{self.__name__}: expected a [N, O, P], b [N, K, P] and out [O, K], got "
                            f"{a.shape}, {b.shape} and {out.shape}")
        n, o, p = a.shape
        d = np.array([n, o, b.shape[1], p, o * p, b.shape[1] * p], np.int64)
        self.fn(_addr(a), _addr(b), _addr(out), _addr(d))
        return out


class _LayerNormRows:
    """float32 layer norm over the rows of [rows, n] arrays, n a multiple of 8
    (``kernels/ll/rows.ll``), called by ``burn_flex.kernels.nn``: ``fn(*arrays, eps)`` with the
    [rows, n] arrays and the [n] weight (and bias) in the kernel's order, the last ``n_written``
    arrays written; every array C-contiguous float32, the written ones writeable and distinct from
    the others. ctypes releases the GIL."""

    __slots__ = ("fn", "vectors", "n_written", "__name__")

    def __init__(self, engine, name, n_arrays, vectors, n_written):
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * n_arrays), ctypes.c_int64, ctypes.c_int64,
                                   ctypes.c_float)(engine.get_function_address(name))
        self.vectors = vectors       # the positions of the [n] arrays
        self.n_written = n_written   # the last arrays, written
        self.__name__ = name

    def __call__(self, *args):
        *arrays, eps = args
        rows_shape = next(a.shape for i, a in enumerate(arrays) if i not in self.vectors)
        if len(rows_shape) != 2 or rows_shape[1] % 8:
            raise ValueError(f"{self.__name__}: expected [rows, n] arrays with n a multiple of 8, got {rows_shape}")
        _check_float32(self.__name__, arrays, arrays[-1])
        if not all(out.flags.writeable for out in arrays[-self.n_written:]):
            raise TypeError(f"{self.__name__}: an output array is read-only")
        for i, a in enumerate(arrays):
            want = (rows_shape[1],) if i in self.vectors else rows_shape
            if a.shape != want:
                raise TypeError(f"{self.__name__}: argument {i} must have shape {want}, got {a.shape}")
        self.fn(*[_addr(a) for a in arrays], rows_shape[0], rows_shape[1], float(eps))


_UPDATE_ARGS = {"adam": 9, "sgd": 7}
_UPDATE_HYPER = {"adam": 10, "sgd": 4}


class _Update:
    """One float32 optimizer update over flat chunks (``kernels/ll/optim.ll``), called by
    ``burn_flex.kernels.optim``: ``fn(*arrays, h)`` with the inputs, then the fresh outputs, then
    the float32 hyper-parameters; ctypes releases the GIL.

    Every array must be 1-d, C-contiguous float32, the outputs writeable and the same length as
    the first input (the caller slices chunks of flattened arrays); the outputs must not overlap
    any other array (the IR assumes no aliasing of what it writes)."""

    __slots__ = ("fn", "n_arrays", "n_hyper", "__name__")

    def __init__(self, engine, name, kind):
        n = _UPDATE_ARGS[kind]
        self.fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * (n - 1)), ctypes.c_int64)(
            engine.get_function_address(name))
        self.n_arrays = n - 2            # the arrays before h; then h, then the element count
        self.n_hyper = _UPDATE_HYPER[kind]
        self.__name__ = name

    def __call__(self, *arrays):
        *data, h = arrays
        n = data[0].size
        if len(data) != self.n_arrays:
            raise TypeError(f"{self.__name__}: expected {self.n_arrays} arrays and h, got {len(data)}")
        _check_float32(self.__name__, arrays, data[-1])
        for a in data:
            if a.size != n:
                raise ValueError(f"{self.__name__}: every array needs {n} elements, got {a.size}")
        if h.size < self.n_hyper:        # the kernel reads that many
            raise ValueError(f"{self.__name__}: needs {self.n_hyper} hyper-parameters, got {h.size}")
        self.fn(*[_addr(a) for a in data], _addr(h), n)


class _Workers:
    """The native worker pool's entry points (``kernels/ll/workers.ll``, used by
    ``burn_flex.native_pool``): ``setup(spin_cycles, sched_yield_address, syscall_address, sys_futex)``, ``worker(slot)``,
    ``run(chunk_fn, table, n_chunks, wake)``, ``shutdown()``, ``worker_chunks()`` (how many chunks workers
    ran so far: tests read it), and the addresses of the chunk functions
    ``run`` takes (``call_chunk``, ``strided_chunk``, ``program_chunk``); ``program(table, chunk)``
    runs one chunk of a program on the calling thread and ``sgemm`` / ``sgemv`` are the addresses
    of the BLAS wrappers a program calls (``burn_flex.native_replay``). ctypes releases the GIL for each call."""

    __slots__ = ("setup", "worker", "run", "shutdown", "worker_chunks", "call_chunk", "strided_chunk",
                 "program_chunk", "program", "sgemm", "sgemv")

    def __init__(self, engine):
        vp, i64 = ctypes.c_void_p, ctypes.c_int64
        self.setup = ctypes.CFUNCTYPE(None, i64, vp, vp, i64)(engine.get_function_address("wp_setup"))
        self.worker = ctypes.CFUNCTYPE(i64, vp)(engine.get_function_address("wp_worker"))
        self.run = ctypes.CFUNCTYPE(None, vp, vp, i64, i64)(engine.get_function_address("wp_run"))
        self.shutdown = ctypes.CFUNCTYPE(None)(engine.get_function_address("wp_shutdown"))
        self.worker_chunks = ctypes.CFUNCTYPE(i64)(engine.get_function_address("wp_worker_chunks"))
        self.call_chunk = engine.get_function_address("wp_call_chunk")
        self.strided_chunk = engine.get_function_address("wp_strided_chunk")
        self.program_chunk = engine.get_function_address("wp_program_chunk")
        self.program = ctypes.CFUNCTYPE(None, vp, i64)(self.program_chunk)
        self.sgemm = engine.get_function_address("wp_sgemm")
        self.sgemv = engine.get_function_address("wp_sgemv")


class Kernels:
    """The loaded JIT kernels: ``erf(x, out=None)``, ``gelu(x, out=None)`` and ``relu(x, out=None)``
    on float32 arrays, bit-identical to flex's numpy kernels; ``softmax_rows``,
    ``softmax_grad_rows``, ``log_softmax_rows``, ``ce_loss_rows``, ``ce_grad_rows``,
    ``layer_norm_rows`` and ``layer_norm_grad_rows`` for ``burn_flex.kernels.nn``; ``im2col``,
    ``im2col_gather``, ``col2im``, ``pad_planes``, ``dot_nt_sum``, ``maxpool2`` and ``maxpool2_grad``
    for flex's float32 convolutions and 2x2 max pooling (``burn_flex.kernels.conv``);
    ``direct_conv[tile]``, ``direct_conv_pool[blocks, lanes]``, ``vector_bits`` and
    ``grad_weight_rows`` (``burn_flex.kernels.conv_direct``); ``adam[mode]`` and
    ``sgd[flags]``, the optimizer updates of ``burn_flex.kernels.optim``, bit-identical to its
    numpy path.

    Example::

        >>> import numpy as np
        >>> from burn_flex import jit
        >>> k = jit.kernels()
        >>> k is None or float(k.gelu(np.zeros(1, np.float32))[0]) == 0.0
        True
    """

    def __init__(self, engine, module):
        self._keep = (engine, module)      # the code lives as long as the engine
        self.erf = _Unary(engine, "erf_f32")
        self.gelu = _Unary(engine, "gelu_f32")
        self.relu = _Unary(engine, "relu_f32")
        self.softmax_rows = _Rows(engine, "softmax_rows_f32", 1)
        self.softmax_grad_rows = _Rows(engine, "softmax_grad_rows_f32", 2)
        self.layer_norm_rows = _LayerNormRows(engine, "layer_norm_rows_f32", 4, (1, 2), 1)     # x, w, b, out
        self.layer_norm_grad_rows = _LayerNormRows(engine, "layer_norm_grad_rows_f32", 5, (1,), 2)   # x, w, g, dx, t
        self.log_softmax_rows = _Rows(engine, "log_softmax_rows_f32", 1)
        self.ce_loss_rows = _CrossEntropyRows(engine, "ce_loss_rows_f32", False)
        self.ce_grad_rows = _CrossEntropyRows(engine, "ce_grad_rows_f32", True)
        self.dot_nt_sum = _DotNTSum(engine)
        # the softmax's exp alone (tests of its accuracy): exp(x, out) on [rows, n] float32 arrays
        self.exp = _Rows(engine, "exp_f32", 1)
        self.im2col = _Planes(engine, "im2col_f32", 2, 3)
        self.im2col_gather = _Planes(engine, "im2col_gather_f32", 2, 2)
        self.pad_planes = _Planes(engine, "pad_planes_f32", 2, 1)
        # the direct convolution's tilings (kernels/ll/direct.ll) by (positions, blocks, lanes per block):
        # (xp, wt, y, d, base, koff, bias); the pooled ones by (blocks, lanes), with qoff after bias
        self.direct_conv = {(4, 2, 8): _Planes(engine, "direct_conv_r4b2_f32", 3, 4),
                            (8, 1, 8): _Planes(engine, "direct_conv_r8b1_f32", 3, 4),
                            (4, 2, 16): _Planes(engine, "direct_conv_r4b2w16_f32", 3, 4),
                            (4, 1, 16): _Planes(engine, "direct_conv_r4b1w16_f32", 3, 4)}
        self.direct_conv_pool = {(2, 8): _Planes(engine, "direct_conv_pool_r4b2_f32", 3, 5),
                                 (2, 16): _Planes(engine, "direct_conv_pool_r4b2w16_f32", 3, 5),
                                 (1, 16): _Planes(engine, "direct_conv_pool_r4b1w16_f32", 3, 5)}
        # whether this CPU has 512-bit vectors: the direct convolution's 16-lane tiles then do twice
        # the multiply-adds per instruction (elsewhere they compile to pairs of 8-lane halves: no gain)
        self.vector_bits = 512 if _host_has_avx512() else 256
        # a stride-1 weight gradient over rows of positions (direct.ll): (xp, g, acc, d, koff)
        self.grad_weight_rows = _Planes(engine, "grad_weight_rows_o4k3_f32", 3, 2)
        self.col2im = _Planes(engine, "col2im_f32", 2, 3)
        self.maxpool2 = _Planes(engine, "maxpool2_f32", 2, 1)
        self.maxpool2_grad = _Planes(engine, "maxpool2_grad_f32", 4, 1)
        self.adam = {mode: _Update(engine, f"adam_f32_{mode}", "adam") for mode in ("none", "l2", "decoupled")}
        # flags: 1 first step, 2 weight decay, 4 nesterov (see optim.ll)
        self.sgd = tuple(_Update(engine, f"sgd_f32_{f}", "sgd") for f in range(8))
        self.workers = _Workers(engine)
