"""The devices a cross-backend test runs on: flex, and wgpu where an OpenCL device exists."""
from __future__ import annotations

import burn


def wgpu_status() -> str | None:
    """None when a wgpu device builds and runs a kernel here, else why not (probed once per
    process: a tensor made and read on ``Device.wgpu()``)."""
    if "reason" not in _WGPU_STATUS:
        try:
            burn.zeros((1,), device=burn.Device.wgpu()).numpy()    # builds a kernel
            _WGPU_STATUS["reason"] = None
        except burn.BurnError as e:     # no burn-wgpu, no OpenCL device, a compiler that cannot build
            _WGPU_STATUS["reason"] = f"{type(e).__name__}: {e}"
    return _WGPU_STATUS["reason"]


_WGPU_STATUS: dict = {}


def flex_and_wgpu() -> list:
    """``[flex, wgpu]`` (wgpu only when PyOpenCL finds a device that builds kernels: otherwise
    the wgpu cases are simply absent, as on a machine without burn-wgpu; ``wgpu_status`` says
    why)."""
    return [burn.Device.flex()] + ([burn.Device.wgpu()] if wgpu_status() is None else [])


def wgpu_or_skip():
    """``burn.Device.wgpu()``, or skip the calling test when no OpenCL device is usable."""
    import pytest
    try:
        import pyopencl  # noqa: F401
    except Exception as e:  # no pyopencl
        pytest.skip(f"no usable wgpu device: {e}")
    reason = wgpu_status()
    if reason is not None:
        pytest.skip(f"no usable wgpu device: {reason}")
    return burn.Device.wgpu()
