"""What several benchmarks share (run as scripts, so ``benchmarks/`` is on ``sys.path``)."""
from __future__ import annotations

import burn


def wgpu_device():
    """``burn.Device.wgpu()`` if an OpenCL device is usable here, else None."""
    try:
        dev = burn.Device.wgpu()
        burn.zeros((1,), device=dev).numpy()
        return dev
    except Exception:       # no pyopencl, no OpenCL device
        return None
