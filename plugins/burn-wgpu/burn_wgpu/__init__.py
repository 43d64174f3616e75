"""burn-wgpu: burn's portable GPU backend on OpenCL (PyOpenCL).

Registered through the ``burn.plugins`` entry point ``wgpu``; serves
``burn.Device.wgpu(index)`` on any OpenCL device (GPUs first, then
accelerators, then CPUs such as PoCL's). PyOpenCL is imported when a wgpu
device is first used, never at discovery.
"""
from __future__ import annotations

__version__ = "0.1.0"


def burn_register_backends(registry):
    def factory():
        from .backend import WgpuBackend
        return WgpuBackend()
    registry.register_backend("wgpu", factory)


def burn_register_kernels(registry):
    from .kernels import all_kernels
    for op, fn in all_kernels().items():
        registry.register_kernel(op, "wgpu", fn)


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
