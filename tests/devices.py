"""The devices a cross-backend test runs on: flex, and wgpu where an OpenCL device exists."""
from __future__ import annotations

import burn


def flex_and_wgpu() -> list:
    """``[flex, wgpu]`` (wgpu only when PyOpenCL finds a device that builds kernels: otherwise
    the wgpu cases are simply absent, as on a machine without burn-wgpu; ``wgpu_status`` says
    why)."""
    devs = [burn.Device.flex()]
    try:
        dev = burn.Device.wgpu()
        burn.zeros((1,), device=dev).numpy()     # builds a kernel: a device that cannot is absent
        devs.append(dev)
    except burn.BurnError as e:
        _WGPU_STATUS["reason"] = str(e)
    return devs


_WGPU_STATUS = {"reason": None}


def wgpu_status() -> str | None:
    """Why :func:`flex_and_wgpu` left wgpu out (None when it did not)."""
    return _WGPU_STATUS["reason"]


def wgpu_or_skip():
    """``burn.Device.wgpu()``, or skip the calling test when no OpenCL device is usable."""
    import pytest
    try:
        import pyopencl  # noqa: F401
        dev = burn.Device.wgpu()
        dev.backend
        burn.zeros((1,), device=dev).numpy()
    except Exception as e:  # no pyopencl / no OpenCL device
        pytest.skip(f"no usable wgpu device: {e}")
    return dev
