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
