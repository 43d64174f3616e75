"""The wgpu backend: OpenCL devices through PyOpenCL."""
from __future__ import annotations

import numpy as np

import burn
from burn.backend import ContextBackend
from burn.errors import BackendUnavailable, DTypeError

from . import runtime
from .native import NUMPY, WTensor, dtype_reason


class WgpuBackend(ContextBackend):
    """Serves ``burn.Device.wgpu(i)``: the i-th OpenCL device, GPUs first.

    Native arrays are :class:`burn_wgpu.native.WTensor` views of pooled buffers.
    """

    name = "wgpu"
    owns_memory = True
    dlpack_shares = False       # to_dlpack_source downloads: exports are host copies

    def __init__(self):
        self._devices = runtime.list_devices()
        self._unusable: dict = {}       # device index -> why it cannot run (its probe failed)

    # -- devices ----------------------------------------------------------------
    def device_indices(self):
        # every device found, less those whose probe (unavailable_reason) already failed: listing
        # opens nothing, so Device.default() stays cheap; Device.enumerate() asks
        # unavailable_reason of each, which opens the device and builds a probe kernel
        return [i for i in range(len(self._devices)) if i not in self._unusable]

    def unavailable_reason(self, index):
        if not self._devices:
            return ("no OpenCL device found (install a GPU driver with OpenCL support, or "
                    "pip install burn-wgpu[pocl] for PoCL's CPU device)")
        if index >= len(self._devices):
            return f"there are {len(self._devices)} OpenCL devices here (wgpu:0..wgpu:{len(self._devices) - 1})"
        if index in self._unusable:
            return self._unusable[index]
        try:
            runtime.context(index)      # opens the device and builds a probe kernel (runtime._check_compiler)
        except BackendUnavailable as e:
            self._unusable[index] = str(e)
            return str(e)
        return None

    def is_accelerator(self, index):
        # an OpenCL CPU device (PoCL) is never the default: flex is faster on a CPU
        return index < len(self._devices) and runtime.device_kind(self._devices[index]) != "CPU"

    def describe_devices(self):
        if not self._devices:
            return ["wgpu: no OpenCL device (" + self.unavailable_reason(0) + ")"]
        out = []
        for i, d in enumerate(self._devices):
            ext = d.extensions.split()
            dts = "float32, ints, bool" + (", float64" if "cl_khr_fp64" in ext else "") + \
                  (", float16" if "cl_khr_fp16" in ext else "")
            out.append(f"wgpu:{i} {d.name.strip()} [{runtime.device_kind(d)}] ({d.platform.name.strip()}, "
                       f"driver {d.driver_version}, {d.max_compute_units} compute units, "
                       f"{d.global_mem_size // 2 ** 20} MiB; {dts})")
            why = self.unavailable_reason(i)
            if why:
                out.append(f"      unusable: {why}")
            if runtime.device_kind(d) == "CPU":
                out.append(f"      a CPU OpenCL device (e.g. PoCL): for testing burn-wgpu; flex is the fast CPU path "
                           f"and is the default. The first run compiles every kernel (minutes for a training example), "
                           f"cached after in {runtime.cache_dir()}")
        return out

    def _dc(self, index):
        if self.unavailable_reason(index):
            raise BackendUnavailable(f"wgpu:{index}: {self.unavailable_reason(index)}")
        return runtime.context(index)

    # -- data -------------------------------------------------------------------
    def dtype_unavailable_reason(self, dtype, index):
        # read from the device's extension list: no OpenCL context is created for it
        if self.unavailable_reason(index):
            return None     # the device itself is refused with its own reason when used
        ext = self._devices[index].extensions.split()
        return dtype_reason(dtype.name, self._devices[index].name, "cl_khr_fp64" in ext, "cl_khr_fp16" in ext)

    def native_dtype(self, dtype):
        if dtype.name not in NUMPY:
            raise DTypeError(f"wgpu: dtype {dtype} is not supported (supported: {', '.join(NUMPY)})")
        return dtype.name

    def from_numpy(self, array, dtype, index):
        from .kernels import upload
        arr = np.asarray(array)
        name = dtype.name if dtype is not None else burn.as_dtype(arr.dtype).name
        self.native_dtype(burn.as_dtype(name))
        return upload(self._dc(index), arr, name)

    def to_numpy(self, native, index):
        from .kernels import download
        if isinstance(native, WTensor):
            return download(native)
        return np.asarray(native)

    def from_dlpack(self, obj, index):
        return self.from_numpy(np.from_dlpack(obj), None, index)

    def to_dlpack_source(self, native, index):
        return self.to_numpy(native, index)     # a download: dlpack_shares is False

    def dlpack_import_shares(self, obj, index):
        return False            # from_dlpack uploads a copy into OpenCL memory

    # -- execution --------------------------------------------------------------
    def context(self, index):
        """The runtime context of device ``index`` (queue, pool, counters)."""
        return runtime.context(index)

    def compile_group(self, group):
        from .fused import compile_group
        return compile_group(group)

    def prepare_replay(self, prepared, index):
        """burn.capture replays through pre-bound kernels (see :mod:`burn_wgpu.replay`)."""
        from .replay import prepare_replay
        return prepare_replay(prepared, index)
