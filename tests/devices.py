"""The devices a cross-backend test runs on: flex, and wgpu where an OpenCL device exists."""
from __future__ import annotations

import burn


def flex_and_wgpu() -> list:
    """``[flex, wgpu]`` (wgpu only when PyOpenCL finds a device: otherwise the wgpu cases are
    simply absent, as on a machine without burn-wgpu)."""
    devs = [burn.Device.flex()]
    try:
        devs.append(burn.Device.wgpu())
    except burn.BurnError:
        pass
    return devs


def wgpu_or_skip():
    """``burn.Device.wgpu()``, or skip the calling test when no OpenCL device is usable."""
    import pytest
    try:
        import pyopencl  # noqa: F401
        dev = burn.Device.wgpu()
        dev.backend
    except Exception as e:  # no pyopencl / no OpenCL device
        pytest.skip(f"no usable wgpu device: {e}")
    return dev
