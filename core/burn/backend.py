"""The Backend interface: what a backend plugin implements.

A backend is small: a way to move data in and out (numpy at the boundary,
DLPack where possible), a kernel per primitive op (registered in the
dispatch registry under the backend's name), and optionally a compiler for
fused groups of the lazy graph. Everything else (shape checks, broadcasting
rules, autodiff, planning) lives in core so every backend behaves the same.
"""
from __future__ import annotations

import os
import threading

import numpy as np

from .dtypes import DType, as_dtype
from .errors import DTypeError

__all__ = ["Backend", "ContextBackend", "current_device_index", "disk_cache_dir", "requested_num_threads"]

_RUNNING = threading.local()
# the count given to burn.set_num_threads (burn.threads), applied to backends as they start
_REQUESTED_THREADS: list = [None]


def requested_num_threads() -> int | None:
    """The thread count last given to :func:`burn.set_num_threads`, or None if it was never called.

    Example:
        >>> from burn.backend import requested_num_threads
        >>> n = requested_num_threads()
        >>> assert n is None or n >= 1
    """
    return _REQUESTED_THREADS[0]


def disk_cache_dir(name: str, *, dir_env: str, switch_env: str) -> str | None:
    """Where a plugin keeps compiled kernels on disk, or None when the user turned that cache off.

    The directory is ``$dir_env`` if set, else ``$XDG_CACHE_HOME/burn/<name>`` (or
    ``~/.cache/burn/<name>``); ``switch_env=0`` disables the cache. Nothing is created: the
    caller makes the directory when it first writes (and reads nothing from a missing one).

    Example:
        >>> import os
        >>> from burn.backend import disk_cache_dir
        >>> d = disk_cache_dir("mykernels", dir_env="MYK_CACHE_DIR", switch_env="MYK_CACHE")
        >>> assert d is None or d.endswith(os.path.join("burn", "mykernels")) or os.environ.get("MYK_CACHE_DIR")
    """
    if os.environ.get(switch_env, "1").strip() == "0":
        return None
    d = os.environ.get(dir_env)
    if not d:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "burn", name)
    return d


def current_device_index() -> int:
    """The index of the device whose work is being run, for kernels that receive no tensor.

    A kernel learns its device from its input arrays; a creation kernel (``zeros``,
    ``arange``, ``rand_uniform``...) has none, so while a device's lazy graph runs its
    work, this gives that device's index (0 outside a flush: eager calls on device 0).

    Example:
        >>> import burn
        >>> from burn.backend import current_device_index
        >>> assert current_device_index() == 0
    """
    return getattr(_RUNNING, "index", 0)


class running_on:
    """``with running_on(index):`` makes :func:`current_device_index` return ``index`` (per
    thread; nested uses restore the outer index). The lazy graph wraps every flush in it.

    Example:
        >>> from burn.backend import current_device_index, running_on
        >>> with running_on(2):
        ...     assert current_device_index() == 2
        >>> assert current_device_index() == 0
    """

    __slots__ = ("index", "outer")

    def __init__(self, index: int):
        self.index = index

    def __enter__(self):
        self.outer = getattr(_RUNNING, "index", 0)
        _RUNNING.index = self.index
        return self

    def __exit__(self, *exc):
        _RUNNING.index = self.outer
        return False


class Backend:
    """Base class of backends. Subclass it in a plugin and register an instance
    with ``registry.register_backend`` from the ``burn_register_backends`` hook.

    Kernels receive native arrays exactly as the graph holds them (already of
    the output's broadcast shape where the primitive says so) and keyword
    attributes; they return a native array.

    Example:
        >>> import burn
        >>> be = burn.Device.flex().backend
        >>> assert be.name == "flex" and isinstance(be, burn.Backend)
    """

    #: the device kind this backend serves, e.g. "flex"
    name: str = ""
    #: does the backend own device memory (pool statistics are meaningful)
    owns_memory: bool = False
    #: does the backend take each flushed graph whole (:meth:`compile_graph`) instead of groups?
    compiles_graphs: bool = False
    #: does ``to_dlpack_source`` share the native array's memory (True) or return a fresh copy
    #: (False: a download)? A shared export is made read-only or copied (burn.dlpack)
    dlpack_shares: bool = True

    # -- devices ----------------------------------------------------------
    def device_indices(self) -> list[int]:
        """Indices of the devices of this kind that can run here.

        Override it in a backend with several devices; ``Device.enumerate()``
        lists one device per index.

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.device_indices() == [0]
        """
        return [0]

    def is_accelerator(self, index: int) -> bool:
        """True for a real accelerator (used by Device.default()).

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.is_accelerator(0) is False
        """
        return False

    def unavailable_reason(self, index: int) -> str | None:
        """None if device ``index`` can run, else why not (shown to the user).

        Example:
            >>> import burn
            >>> be = burn.Device.flex().backend
            >>> assert be.unavailable_reason(0) is None and "index 3" in be.unavailable_reason(3)
        """
        return None if index in self.device_indices() else f"no device with index {index}"

    def describe_devices(self) -> list[str]:
        """Human-readable lines for `burn info`.

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.describe_devices()[0].startswith("flex:0")
        """
        return [f"{self.name}:{i}" for i in self.device_indices()]

    # -- data ---------------------------------------------------------------
    def native_dtype(self, dtype: DType):
        """The backend's dtype object for a burn DType (or raise DTypeError).

        Example:
            >>> import burn, numpy as np
            >>> assert burn.Device.flex().backend.native_dtype(burn.float32) == np.float32
        """
        raise NotImplementedError

    def dtype_unavailable_reason(self, dtype: DType, index: int) -> str | None:
        """None if device ``index`` can hold and compute ``dtype``, else why not and
        what to use instead (shown to the user in a DTypeError).

        Core asks once per (device, dtype), where a tensor of a new dtype would
        appear on the device (creation, host and DLPack imports, casts, ops whose
        result dtype differs from their first input), and caches the answer. The
        default asks :meth:`native_dtype`; override it when the answer depends on
        the device (an OpenCL device without cl_khr_fp16) or on installed libraries.

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.dtype_unavailable_reason(burn.bfloat16, 0) is None
        """
        try:
            self.native_dtype(dtype)
        except DTypeError as e:
            return str(e)
        return None

    def supports_dtype(self, dtype: DType, index: int) -> bool:
        """True when device ``index`` can hold ``dtype`` (see :meth:`dtype_unavailable_reason`).

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.supports_dtype(burn.float16, 0)
        """
        return self.dtype_unavailable_reason(dtype, index) is None

    def from_numpy(self, array: np.ndarray, dtype: DType, index: int):
        """Copy/convert a host array to a native array of ``dtype``.

        Args:
            array: the host values.
            dtype: the burn DType of the result.
            index: the device index.

        Example:
            >>> import burn, numpy as np
            >>> be = burn.Device.flex().backend
            >>> native = be.from_numpy(np.arange(3), burn.float32, 0)
            >>> assert be.to_numpy(native, 0).dtype == np.float32
        """
        raise NotImplementedError

    def to_numpy(self, native, index: int) -> np.ndarray:
        """A host numpy array with the native array's values.

        Example:
            >>> import burn, numpy as np
            >>> be = burn.Device.flex().backend
            >>> native = be.from_numpy(np.array([1.5, 2.5]), burn.float64, 0)
            >>> assert be.to_numpy(native, 0).tolist() == [1.5, 2.5]
        """
        raise NotImplementedError

    def from_dlpack(self, obj, index: int):
        """Wrap a DLPack-capable object without copying where possible.

        Example:
            >>> import burn, numpy as np
            >>> be = burn.Device.flex().backend
            >>> assert be.to_numpy(be.from_dlpack(np.arange(2.0), 0), 0).tolist() == [0.0, 1.0]
        """
        return self.from_numpy(np.from_dlpack(obj), None, index)

    def dlpack_import_shares(self, obj, index: int) -> bool:
        """Whether :meth:`from_dlpack` of ``obj`` shares its memory (True) or copies it (False).

        ``burn.from_dlpack(copy=None)`` copies memory that would be shared (its owner may
        write it later); ``copy=False`` needs True. The default suits backends whose
        ``from_numpy`` keeps host arrays; a backend that uploads them returns False.

        Example:
            >>> import burn, numpy as np
            >>> assert burn.Device.flex().backend.dlpack_import_shares(np.zeros(2), 0)
        """
        return True

    def native_meta(self, native) -> tuple:
        """``(shape, DType)`` of a native array, without touching its data.

        The default reads ``native.shape`` and ``native.dtype`` (numpy, CuPy and
        most array types have both); override it for other native types.

        Example:
            >>> import burn, numpy as np
            >>> be = burn.Device.flex().backend
            >>> assert be.native_meta(np.zeros((2, 3), np.int32)) == ((2, 3), burn.int32)
        """
        return tuple(native.shape), as_dtype(native.dtype)

    def to_dlpack_source(self, native, index: int):
        """An object with ``__dlpack__`` sharing the native array's memory.

        Example:
            >>> import burn, numpy as np
            >>> be = burn.Device.flex().backend
            >>> src = be.to_dlpack_source(be.from_numpy(np.arange(3.0), burn.float32, 0), 0)
            >>> assert np.from_dlpack(src).tolist() == [0.0, 1.0, 2.0]
        """
        return self.to_numpy(native, index)

    # -- execution ------------------------------------------------------------
    def compile_group(self, group):
        """Return a callable running a fused group (see burn.fusion), or None
        to have core run the group's nodes one kernel at a time.

        The base class compiles nothing, so a new backend works with kernels
        alone and can add fusion later.

        Example:
            >>> import burn
            >>> class Mine(burn.Backend):
            ...     name = "mine"
            >>> assert Mine().compile_group(group=None) is None
        """
        return None

    def compile_graph(self, flushed):
        """For a backend with ``compiles_graphs = True``: return a callable
        ``run(inputs, keys, index) -> outputs`` running the whole flushed graph ``flushed``
        (a :class:`burn.wholegraph.FlushedGraph`; see :mod:`burn.wholegraph`). Called once per
        graph structure (the planner caches the result with the plan), so a repeated step pays
        for it once; burn-remote ships the graph to its server here and replays it by id after.

        The base class declines (it is never called while ``compiles_graphs`` is False).

        Example:
            >>> import burn
            >>> class Mine(burn.Backend):
            ...     name = "mine"
            >>> assert Mine().compile_graph(flushed=None) is None
        """
        return None

    def adapt_kernel(self, fn, op: str, in_dtypes: tuple, out_dtypes: tuple):
        """The callable a plan step runs for one node of op ``op`` whose inputs and outputs have
        these burn dtypes; called once per planned node (plans are cached), so a backend can
        specialise a kernel per dtype without a per-call test (flex computes half-precision
        inputs in float32 this way). The base class runs ``fn`` itself.

        Example:
            >>> import burn
            >>> class Mine(burn.Backend):
            ...     name = "mine"
            >>> f = abs
            >>> assert Mine().adapt_kernel(f, "abs", (burn.float32,), (burn.float32,)) is f
        """
        return fn

    def merge_steps(self, steps: list, nodes: list):
        """A hook on a plan being built: ``steps`` are its steps in order, each
        ``(fn, node_position or None, input_slots, output_slots)`` (``fn(*inputs, **attrs)`` returns
        the outputs; a step with a node position gets that node's attributes as keywords), ``nodes``
        the flushed nodes. Return None to keep them, or ``(new_steps, index_of)`` where new_steps
        replaces runs of steps by fewer (flex runs a step's optimizer updates as one call, and a
        convolution with its bias and relu as one kernel) and ``index_of[i]`` is the new index of
        old step ``i``, or None for a compiled group's step whose work another step now does (the
        planner then never rebinds that group at other sizes). A merged step may read the attributes of
        the nodes it replaces only where their op is declared with ``plan_attrs=True``
        (:func:`burn.backend_extension`): only those are part of the plan's cache key. Called once
        per planned flush (plans are cached); the base class keeps the steps.

        Example:
            >>> import burn
            >>> class Mine(burn.Backend):
            ...     name = "mine"
            >>> assert Mine().merge_steps([], []) is None
        """
        return None

    def prepare_replay(self, prepared, index: int):
        """burn.capture's replay hook: a runner for the prepared graph ``prepared`` on device
        ``index``, or None to have every replay run its fusion plan (the base class).

        Called once per graph and device, on the first replay there. ``prepared`` is a
        :class:`burn.capture.replay.Prepared`: ``plan``, ``nodes``, ``sources`` (``(ref,
        handle)`` pairs whose ``handle.data`` is bound to the replay's native arrays before each
        run), ``held`` (``{(node, output): handle}``: the results a replay must set) and ``rng``
        (the random nodes, whose key attribute changes per replay). A runner has
        ``run(prepared, index) -> bool`` (False: it did not run this replay, the plan runs) and
        ``describe() -> str``; cuda replays through CUDA graphs, wgpu through pre-bound kernels, flex
        through the plan's steps flattened once (``burn_flex.replay``).

        Example:
            >>> import burn
            >>> class Mine(burn.Backend):
            ...     name = "mine"
            >>> assert Mine().prepare_replay(prepared=None, index=0) is None
        """
        return None

    def sync(self, index: int) -> None:
        """Wait until every queued kernel on device ``index`` has finished.

        Users call ``Device.sync()``, which also runs the pending lazy graph.

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.sync(0) is None
        """

    # -- memory ---------------------------------------------------------------
    def memory_stats(self, index: int) -> dict:
        """Bytes reserved/in use and peaks, and allocation counts.

        Example:
            >>> import burn
            >>> stats = burn.Device.flex().backend.memory_stats(0)
            >>> assert {"reserved_bytes", "in_use_bytes", "alloc_count"} <= set(stats)
        """
        return {"reserved_bytes": 0, "in_use_bytes": 0, "peak_reserved_bytes": 0,
                "peak_in_use_bytes": 0, "alloc_count": 0, "free_count": 0}

    def memory_cleanup(self, index: int) -> None:
        """Release cached memory that no tensor uses.

        Example:
            >>> import burn
            >>> assert burn.Device.flex().backend.memory_cleanup(0) is None
        """

    # -- host threads -----------------------------------------------------------
    def set_num_threads(self, n: int) -> None:
        """Use at most ``n`` host CPU threads (the calling thread included) for this
        backend's own work from now on.

        :func:`burn.set_num_threads` calls it on every started backend, and on a backend
        started later as soon as it starts. The default does nothing: a backend without
        host threads of its own (a GPU backend whose work runs on the device) ignores it.

        Example:
            >>> import burn
            >>> assert burn.Backend().set_num_threads(2) is None
        """

    def num_threads(self) -> int | None:
        """How many host CPU threads this backend uses, or None if it has no pool of its own.

        Example:
            >>> import burn
            >>> assert burn.Backend().num_threads() is None
            >>> assert burn.Device.flex().backend.num_threads() >= 1
        """
        return None


class ContextBackend(Backend):
    """A :class:`Backend` whose devices are runtime contexts owning a queue and a memory pool
    (burn-wgpu, burn-cuda): syncing, statistics and memory calls go to :meth:`context`.

    A context has ``synchronize()`` (wait for its queue), ``stats`` (a dict of counters) and
    ``pool`` (a :class:`burn.pagepool.PagePool` or one with its ``stats()`` / ``cleanup()``).

    Example:
        >>> import burn
        >>> class Ctx:
        ...     stats, waits = {"launches": 3}, []
        ...     def synchronize(self): self.waits.append(1)
        >>> from burn.backend import ContextBackend
        >>> class Mine(ContextBackend):
        ...     name = "mine"
        ...     def context(self, index): return Ctx()
        >>> b = Mine()
        >>> assert b.stats(0) == {"launches": 3} and b.sync(0) is None and Ctx.waits == [1]
    """

    def context(self, index: int):
        """The runtime context of device ``index``."""
        raise NotImplementedError(f"{type(self).__name__}.context")

    def sync(self, index: int) -> None:
        self.context(index).synchronize()

    def stats(self, index: int = 0) -> dict:
        """Counters of device ``index`` (kernel launches, programs compiled, ...)."""
        return dict(self.context(index).stats)

    def memory_stats(self, index: int) -> dict:
        return self.context(index).pool.stats()

    def memory_cleanup(self, index: int) -> None:
        dc = self.context(index)
        dc.synchronize()        # blocks the queue still uses must come back to the pool first
        dc.pool.cleanup()
