"""OpenCL runtime: device selection, one context + in-order queue per device,
the program cache (memory, then disk, then compile) and counted launches.

Compiling is the expensive step on every OpenCL driver (PoCL: ~0.4 s per
program on this kind of machine), so programs are cached in memory by their
source and on disk as driver binaries keyed by (source, build options,
device, driver version): a second process loads binaries and compiles
nothing. ``BURN_WGPU_CACHE_DIR`` moves the disk cache (default
``$XDG_CACHE_HOME/burn/wgpu`` or ``~/.cache/burn/wgpu``); ``BURN_WGPU_CACHE=0``
disables it.
"""
from __future__ import annotations

import hashlib
import os
import re
import tempfile

import numpy as np
import pyopencl as cl

from burn.backend import disk_cache_dir
from burn.errors import BackendUnavailable, BurnError

from .native import empty, index_struct, layout_pattern, numel, scalar_args

BUILD_OPTIONS = ""       # no fast-math: results must match flex at float32 tolerance
_TYPE_ORDER = ((cl.device_type.GPU, "GPU"), (cl.device_type.ACCELERATOR, "accelerator"),
               (cl.device_type.CPU, "CPU"))


def list_devices():
    """OpenCL devices in burn's order: GPUs, then accelerators, then CPUs (then the rest).

    ``BURN_WGPU_PLATFORM`` keeps only platforms whose name contains it (case-insensitive)."""
    want = os.environ.get("BURN_WGPU_PLATFORM", "").strip().lower()
    try:
        platforms = cl.get_platforms()
    except cl.Error:
        return []
    found = []
    for p in platforms:
        if want and want not in p.name.lower():
            continue
        try:
            found.extend(p.get_devices())
        except cl.Error:
            continue

    def rank(d):
        for i, (t, _) in enumerate(_TYPE_ORDER):
            if d.type & t:
                return i
        return len(_TYPE_ORDER)
    return sorted(found, key=rank)


def device_kind(d) -> str:
    for t, name in _TYPE_ORDER:
        if d.type & t:
            return name
    return "other"


def cache_dir() -> str | None:
    """Where compiled OpenCL programs are kept (module docstring), or None when disabled."""
    return disk_cache_dir("wgpu", dir_env="BURN_WGPU_CACHE_DIR", switch_env="BURN_WGPU_CACHE")


class DeviceContext:
    """One OpenCL device: context, in-order queue, allocator, programs, counters."""

    def __init__(self, device, index: int):
        from .memory import make_pool
        self.index = index
        self.device = device
        self.ctx = cl.Context([device])
        self.queue = cl.CommandQueue(self.ctx)
        ext = device.extensions.split()
        self.fp64 = "cl_khr_fp64" in ext
        self.fp16 = "cl_khr_fp16" in ext
        self.is_cpu = bool(device.type & cl.device_type.CPU)
        self.local_size = 256 if device.max_work_group_size >= 256 else int(device.max_work_group_size)
        self.pool = make_pool(self)
        self._programs: dict = {}
        self._kernels: dict = {}
        self._layouts: dict = {}        # (shape, views) -> (index struct, layout pattern)
        # compiles: programs built from source; disk_loads: programs loaded as binaries
        self.stats = {"launches": 0, "compiles": 0, "disk_loads": 0}
        # burn.capture's pre-bound replay (burn_wgpu.replay): while set, every command this
        # context enqueues is also recorded, and every block the pool hands out is kept
        self.recorder = None
        ident = f"{device.name}|{device.vendor}|{device.driver_version}|{device.platform.version}|{cl.VERSION}"
        self._ident = ident.encode()

    # -- programs ---------------------------------------------------------------
    def program(self, source: str, options: str = ""):
        """The built program of ``source``: memory cache, disk cache, or a compile.

        ``options`` are extra build options (after :data:`BUILD_OPTIONS`), part of both cache keys."""
        prg = self._programs.get(source if not options else (source, options))
        if prg is not None:
            return prg
        opts = f"{BUILD_OPTIONS} {options}".strip()
        key = hashlib.sha256(self._ident + b"\0" + opts.encode() + b"\0" + source.encode()).hexdigest()
        d = cache_dir()
        path = os.path.join(d, key + ".bin") if d else None
        if path and os.path.exists(path):
            try:
                with open(path, "rb") as f:
                    binary = f.read()
                prg = cl.Program(self.ctx, [self.device], [binary]).build(opts)
                self.stats["disk_loads"] += 1
            except (cl.Error, OSError):
                prg = None      # stale or corrupt entry: rebuild and overwrite
        if prg is None:
            try:
                prg = cl.Program(self.ctx, source).build(opts)
            except cl.RuntimeError as e:
                raise BurnError(f"wgpu: OpenCL compile failed on {self.device.name}: {e}\n--- source ---\n"
                                f"{source}") from None
            self.stats["compiles"] += 1
            if path:
                self._store(d, path, prg)
        self._programs[source if not options else (source, options)] = prg
        return prg

    def _store(self, d, path, prg):
        try:
            binary = prg.get_info(cl.program_info.BINARIES)[0]
            os.makedirs(d, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=d, suffix=".tmp")
            with os.fdopen(fd, "wb") as f:
                f.write(binary)
            os.replace(tmp, path)       # atomic: a concurrent reader never sees half a file
        except (OSError, cl.Error):
            pass                        # a read-only cache dir only costs recompiles

    def kernel(self, source: str, name: str, options: str = ""):
        """A ``cl.Kernel`` (one object per (program, options, name), reused for every launch)."""
        key = (source, name) if not options else (source, name, options)
        k = self._kernels.get(key)
        if k is None:
            k = self._kernels[key] = cl.Kernel(self.program(source, options), name)
        return k

    # -- launches ---------------------------------------------------------------
    def error(self, what: str, e: Exception) -> BurnError:
        """A driver error of ``what`` as a BurnError naming the device and the OpenCL status.

        A lost device (driver reset, unplugged GPU) or one out of resources fails every later
        command too: the error is raised at once rather than waited on.

        >>> err = cl.RuntimeError(cl._cl._ErrorRecord("clFinish", cl.status_code.DEVICE_NOT_AVAILABLE, ""))
        >>> msg = str(context(0).error("finishing the queue", err))
        >>> assert "wgpu:0" in msg and "DEVICE_NOT_AVAILABLE" in msg and "lost" in msg
        """
        code = getattr(e, "code", None)
        try:
            status = cl.status_code.to_string(code) if isinstance(code, int) else ""
        except Exception:       # an unknown code: the message already has it
            status = ""
        hint = ""
        if status in ("DEVICE_NOT_AVAILABLE", "OUT_OF_RESOURCES", "OUT_OF_HOST_MEMORY",
                      "MEM_OBJECT_ALLOCATION_FAILURE") or "DEVICE_LOST" in str(e):
            hint = ("; the device was lost or ran out of resources: its tensors are gone, restart the "
                    "process (or use another device)")
        return BurnError(f"wgpu: {what} on wgpu:{self.index} ({self.device.name.strip()}) failed: {e}"
                         f"{' [' + status + ']' if status and status not in str(e) else ''}{hint}")

    def launch(self, kernel, n: int, args, local: int | None = None):
        """Run ``kernel`` over ``n`` work items (rounded up to whole work-groups)."""
        if n <= 0:
            return
        ls = local or self.local_size
        try:
            kernel.set_args(*args)
            cl.enqueue_nd_range_kernel(self.queue, kernel, (-(-n // ls) * ls,), (ls,))
        except cl.Error as e:
            raise self.error(f"launching kernel '{kernel.function_name}' over {n} items", e) from None
        self.stats["launches"] += 1
        if self.recorder is not None:
            self.recorder.kernel(kernel, (-(-n // ls) * ls,), (ls,), args)

    def run_generated(self, kernel_for, shape, inputs, out_dtypes, params):
        """Launch a kernel generated by ``burn.codegen`` over ``shape``: allocate its outputs,
        pass the index struct of ``inputs`` and the scalar ``params``; returns the outputs.

        ``kernel_for(pattern)`` gives the kernel for a layout pattern (None: the general one),
        or ``(kernel, elements per work-item)`` for a vector variant. The struct and pattern
        depend only on the inputs' layouts, which repeat from step to step: they are cached."""
        outs = [empty(self, shape, d) for d in out_dtypes]
        n = numel(shape)
        if n:
            key = (tuple(shape), tuple((x.shape, x.strides, x.offset) for x in inputs))
            hit = self._layouts.get(key)
            if hit is None:
                if len(self._layouts) >= 4096:     # shapes that never repeat: do not grow forever
                    self._layouts.clear()
                hit = self._layouts[key] = (index_struct(shape, inputs), layout_pattern(shape, inputs))
            st, pat = hit
            args = [st] + [o.buf for o in outs] + [x.buf for x in inputs] + scalar_args(params)
            k = kernel_for(pat)
            if isinstance(k, tuple):
                k, per = k
                self.launch(k, -(-n // per), args)
            else:
                self.launch(k, n, args)
        return outs

    def launch2d(self, kernel, gsize, lsize, args):
        try:
            kernel.set_args(*args)
            cl.enqueue_nd_range_kernel(self.queue, kernel, gsize, lsize)
        except cl.Error as e:
            raise self.error(f"launching kernel '{kernel.function_name}' {gsize}/{lsize}", e) from None
        self.stats["launches"] += 1
        if self.recorder is not None:
            self.recorder.kernel(kernel, gsize, lsize, args)

    # -- transfers --------------------------------------------------------------
    def upload(self, array: np.ndarray, buf, offset_bytes: int = 0):
        if self.recorder is not None:
            self.recorder.upload(array, buf, offset_bytes)
        if array.nbytes:
            try:
                cl.enqueue_copy(self.queue, buf, np.asarray(array, order="C"), dst_offset=offset_bytes,
                                is_blocking=True)
            except cl.Error as e:
                raise self.error(f"uploading {array.nbytes} bytes", e) from None

    def download(self, buf, nbytes_offset: int, out: np.ndarray):
        if self.recorder is not None:
            self.recorder.refuse("a step reads a value back to the host (a download)")
        if out.nbytes:
            try:
                cl.enqueue_copy(self.queue, out, buf, src_offset=nbytes_offset, is_blocking=True)
            except cl.Error as e:
                # a blocking read is where a failed earlier kernel usually shows up
                raise self.error(f"downloading {out.nbytes} bytes (waiting for the queued kernels)", e) from None
        return out

    def flag_set(self, buf) -> bool:
        """Whether the int32 flag at the start of ``buf`` is non-zero (a kernel's check, e.g. an
        index out of range), read back now. A recorded replay reads it again at the same point."""
        flag = np.zeros(1, np.int32)
        r, self.recorder = self.recorder, None
        try:
            self.download(buf, 0, flag)
        finally:
            self.recorder = r
        if r is not None:
            r.check(buf)
        return bool(flag[0])

    def fill_zero(self, buf, nbytes: int):
        """Enqueue zeroing ``nbytes`` bytes of ``buf``."""
        if nbytes:
            try:
                cl.enqueue_fill_buffer(self.queue, buf, np.uint8(0), 0, nbytes)
            except cl.Error as e:
                raise self.error(f"zero-filling {nbytes} bytes", e) from None
            if self.recorder is not None:
                self.recorder.fill(buf, nbytes)

    def synchronize(self):
        """Wait until every kernel queued on this device has finished (``clFinish``)."""
        try:
            self.queue.finish()
        except cl.Error as e:
            raise self.error("finishing the queue (waiting for the queued kernels)", e) from None

    finish = synchronize        # OpenCL's name for it


_CONTEXTS: dict = {}


def context(index: int = 0) -> DeviceContext:
    c = _CONTEXTS.get(index)
    if c is None:
        devs = list_devices()
        if index >= len(devs):
            raise BackendUnavailable(f"wgpu:{index}: there are {len(devs)} OpenCL devices here")
        c = DeviceContext(devs[index], index)
        _check_compiler(c)
        _CONTEXTS[index] = c
    return c


def _check_compiler(c: DeviceContext) -> None:
    """A device whose OpenCL compiler cannot build the simplest kernel is unavailable, said at
    once with the compiler's log, instead of failing every op later (seen: PoCL on a virtual CPU
    that LLVM does not recognise stops with "unknown target CPU 'generic'")."""
    from .kernels.source import cl_source
    try:
        c.program(cl_source("probe.cl"))      # the programs' caches: a later process loads its binary
    except BurnError as e:
        # one line, without the source and the driver objects' addresses (the same device, the same message)
        log = re.sub(r" at 0x[0-9a-fA-F]+", "", " ".join(str(e).split("\n--- source ---")[0].split()))
        raise BackendUnavailable(
            f"wgpu:{c.index} ({c.device.name.strip()}, {c.device.platform.name.strip()}): its OpenCL "
            f"compiler cannot build kernels here: {log if len(log) <= 600 else '...' + log[-600:]}; use another device or another OpenCL "
            "driver (BURN_WGPU_PLATFORM picks the platform)") from None
