"""burn-wgpu: burn's portable GPU backend on OpenCL (PyOpenCL).

Registered through the ``burn.plugins`` entry point ``wgpu``; serves
``burn.Device.wgpu(index)`` on any OpenCL device (GPUs first, then
accelerators, then CPUs such as PoCL's). PyOpenCL is imported when a wgpu
device is first used, never at discovery.
"""
from __future__ import annotations

import glob
import os
import sys

__version__ = "0.1.0"

#: Device.default() asks burn-cuda (20) before burn-wgpu (10) for an accelerator
DEFAULT_PRIORITY = 10


def may_have_gpu() -> bool:
    """Whether an OpenCL GPU driver can be installed here, decided from the ICD files the
    OpenCL loader reads, without starting OpenCL (``Device.default()`` asks this first).

    PoCL's ICD (the pip ``pocl-binary-distribution`` and pyopencl's bundled one) serves
    CPUs only, so a machine with nothing else answers False; off Linux the loader's
    registry cannot be read cheaply and the answer is True.

    Example:
        >>> import burn_wgpu
        >>> assert isinstance(burn_wgpu.may_have_gpu(), bool)
    """
    if not sys.platform.startswith("linux"):
        return True
    places = [p for p in os.environ.get("OCL_ICD_VENDORS", "").split(os.pathsep) if p]
    places.append("/etc/OpenCL/vendors")
    for place in places:
        files = glob.glob(os.path.join(place, "*.icd")) if os.path.isdir(place) else [place]
        for f in files:
            try:
                with open(f) as fh:
                    driver = fh.read().strip().lower()
            except OSError:
                continue
            if driver and "pocl" not in driver:
                return True
    return False


def burn_register_backends(registry):
    def factory():
        from .backend import WgpuBackend
        return WgpuBackend()
    registry.register_backend("wgpu", factory, default_priority=DEFAULT_PRIORITY, accelerator_probe=may_have_gpu)


#: the ``burn::`` extension ops with a wgpu kernel; every core primitive has one too
EXTENSION_OPS = ("burn::linear_relu", "burn::softmax", "burn::softmax_grad", "burn::log_softmax",
                 "burn::log_softmax_grad", "burn::layer_norm", "burn::layer_norm_grad", "burn::lstm_layer",
                 "burn::lstm_layer_grad", "burn::gru_layer", "burn::gru_layer_grad")


def burn_register_kernels(registry):
    # lazy: the kernel modules (and burn.codegen's generators) load on the first wgpu kernel
    # lookup, so discovery stays cheap for a process that only uses flex
    from burn.dispatch import LazyKernel
    from burn.primitives import PRIMITIVES
    for op in (*PRIMITIVES, *EXTENSION_OPS):
        registry.register_kernel(op, "wgpu", LazyKernel("burn_wgpu.kernels", op, table="all_kernels"))


def burn_plugin_info():
    info = {"backend": "wgpu (OpenCL)"}
    try:
        from importlib.metadata import version
        info["pyopencl"] = version("pyopencl")
    except Exception as e:  # pyopencl missing: the backend factory reports it on use
        info["pyopencl"] = f"unavailable ({type(e).__name__})"
    # kernel libraries' host fallbacks (burn_wgpu.interop) are listed per op by `burn info`
    info["host fallbacks"] = "none (every core primitive runs on the device)"
    return info
