"""The OpenCL kernel of ``example::scaled_swish``, written with burn-wgpu's public kernel API.

Imported (by burn, lazily) the first time the op runs on a wgpu device; the OpenCL C is
package data (``kernels/scaled_swish.cl``), compiled once per device and dtype by
``burn_wgpu.api.program`` and cached in memory and on disk.
"""
from __future__ import annotations

import numpy as np
from burn_wgpu import api as wgpu

from . import ops

SOURCE = wgpu.load_source(__package__, "kernels/scaled_swish.cl")
_TYPES = {"float32": ("float", np.float32), "float64": ("double", np.float64)}
_HALF = wgpu.host_fallback(ops.scaled_swish_numpy, "example_scaled_swish")


def scaled_swish(x, beta=1.0):
    """``x * sigmoid(beta * x)`` on a wgpu native array: float32 and float64 on the device;
    the half-precision dtypes through the host (numpy), a declared and counted host fallback.

    Example (on any OpenCL device, PoCL included)::

        y = burn_example_ext.scaled_swish(burn.tensor([0.0, 1.0], device=burn.Device.wgpu()))
    """
    ops.stats["scaled_swish_wgpu"] += 1
    if wgpu.dtype_name(x) not in _TYPES:
        return _HALF(x, beta)
    ctype, np_type = _TYPES[wgpu.dtype_name(x)]
    x = wgpu.contiguous(x)
    out = wgpu.empty(x.shape, x.dtype)
    defines = {"T": ctype, **({"FP64": 1} if ctype == "double" else {})}
    prog = wgpu.program(SOURCE, defines=defines, device=wgpu.device_of(x))
    wgpu.launch(prog.scaled_swish, x.size, (x, out, np_type(beta), x.size))
    return out


KERNELS = {"scaled_swish": scaled_swish}
