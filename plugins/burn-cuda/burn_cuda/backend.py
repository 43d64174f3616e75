"""The cuda backend: NVIDIA GPUs through CuPy."""
from __future__ import annotations

import numpy as np

import burn
from burn.backend import ContextBackend
from burn.errors import BackendUnavailable, DTypeError

from . import runtime
from .native import numpy_dtype


class CudaBackend(ContextBackend):
    """Serves ``burn.Device.cuda(i)``: CUDA device i. Native arrays are ``cupy.ndarray``.

    Building it imports CuPy; without CuPy, or with CuPy but no usable GPU, it
    raises BackendUnavailable (shown by ``burn info``, raised when a cuda device is used).
    """

    name = "cuda"
    owns_memory = True

    def __init__(self):
        self.cp = runtime.load_cupy()
        self._count = runtime.device_count()
        if self._count == 0:
            raise BackendUnavailable("CuPy reports no CUDA device")

    # -- devices ----------------------------------------------------------------
    def device_indices(self):
        return list(range(self._count))

    def unavailable_reason(self, index):
        if index >= self._count:
            return f"there are {self._count} CUDA devices here (cuda:0..cuda:{self._count - 1})"
        return None

    def is_accelerator(self, index):
        return index < self._count

    def describe_devices(self):
        out = []
        rt = self.cp.cuda.runtime
        for i in range(self._count):
            p = rt.getDeviceProperties(i)
            name = p["name"].decode() if isinstance(p["name"], bytes) else p["name"]
            out.append(f"cuda:{i} {name} (sm_{p['major']}{p['minor']}, {p['totalGlobalMem'] // 2 ** 20} MiB, "
                       f"{p['multiProcessorCount']} SMs; CUDA runtime {rt.runtimeGetVersion()}, "
                       f"driver {rt.driverGetVersion()})")
        return out

    def _dc(self, index):
        reason = self.unavailable_reason(index)
        if reason:
            raise BackendUnavailable(f"cuda:{index}: {reason}")
        return runtime.context(index)

    # -- data -------------------------------------------------------------------
    # dtype_unavailable_reason: Backend's default asks native_dtype, whose numpy_dtype refuses
    # bfloat16 (naming the upgrade) unless CuPy >= 14 and ml_dtypes are installed
    def native_dtype(self, dtype):
        return numpy_dtype(dtype.name)

    def from_numpy(self, array, dtype, index):
        arr = np.asarray(array)
        name = dtype.name if dtype is not None else burn.as_dtype(arr.dtype).name
        nd = numpy_dtype(name)
        if arr.dtype != nd:
            arr = arr.astype(nd)
        dc = self._dc(index)
        with dc.scope():
            return self.cp.asarray(arr)

    def to_numpy(self, native, index):
        if isinstance(native, self.cp.ndarray):
            dc = self._dc(native.device.id)
            with dc.scope():
                return native.get(stream=dc.stream)   # blocking: waits for the stream
        return np.asarray(native)

    def from_dlpack(self, obj, index):
        """Zero-copy from any DLPack producer on this GPU (a torch CUDA tensor...);
        host producers (numpy, torch CPU) are copied up."""
        dev = getattr(obj, "__dlpack_device__", None)
        if dev is not None and dev()[0] in (2, 13):    # kDLCUDA, kDLCUDAManaged
            dc = self._dc(index)
            with dc.scope():
                try:
                    return self.cp.from_dlpack(obj)
                except (NotImplementedError, TypeError) as e:
                    if "bfloat16" not in str(e).lower():
                        raise
                    # CuPy's bfloat16 arrays predate its bfloat16 DLPack import (cupy PR #9670)
                    raise DTypeError(f"cuda: CuPy {self.cp.__version__} cannot import bfloat16 over DLPack "
                                     f"({e}); upgrade CuPy, or convert to float32 before from_dlpack") from None
        return self.from_numpy(np.from_dlpack(obj), None, index)

    def dlpack_import_shares(self, obj, index):
        dev = getattr(obj, "__dlpack_device__", None)
        return dev is not None and dev()[0] in (2, 13)      # CUDA producers are shared, host ones copied

    def to_dlpack_source(self, native, index):
        # cupy.ndarray implements __dlpack__ / __dlpack_device__: consumers share its memory
        return native

    # -- execution --------------------------------------------------------------
    def context(self, index):
        """The runtime context of device ``index`` (queue, pool, counters)."""
        return runtime.context(index)

    def compile_group(self, group):
        from .fused import compile_group
        return compile_group(group)

    def prepare_replay(self, prepared, index):
        """burn.capture replays through CUDA graphs (see :mod:`burn_cuda.replay`)."""
        from .replay import prepare_replay
        return prepare_replay(prepared, index)
