"""The CUDA kernel of ``example::scaled_swish``, written with burn-cuda's public kernel API.

Imported (by burn, lazily) the first time the op runs on a cuda device; the CUDA C is
package data (``kernels/scaled_swish.cu``), compiled once per device and dtype by
``burn_cuda.api.program`` (NVRTC through CuPy) and launched on burn's stream.
"""
from __future__ import annotations

import numpy as np
from burn_cuda import api as cuda

from . import ops

SOURCE = cuda.load_source(__package__, "kernels/scaled_swish.cu")
_TYPES = {"float32": ("float", np.float32), "float64": ("double", np.float64)}
_HALF = cuda.host_fallback(ops.scaled_swish_numpy, "example_scaled_swish")


def scaled_swish(x, beta=1.0):
    """``x * sigmoid(beta * x)`` on a CuPy array: float32 and float64 on the device;
    the half-precision dtypes through the host (numpy), a declared and counted host fallback.

    Example (with CuPy and a GPU)::

        y = burn_example_ext.scaled_swish(burn.tensor([0.0, 1.0], device=burn.Device.cuda()))
    """
    ops.stats["scaled_swish_cuda"] += 1
    if cuda.dtype_name(x) not in _TYPES:
        return _HALF(x, beta)
    ctype, np_type = _TYPES[cuda.dtype_name(x)]
    x = cuda.contiguous(x)
    out = cuda.empty(x.shape, x.dtype, device=cuda.device_of(x))
    prog = cuda.program(SOURCE, defines={"T": ctype}, device=cuda.device_of(x))
    cuda.launch(prog.scaled_swish, x.size, (x, out, np_type(beta), x.size), device=cuda.device_of(x))
    return out


KERNELS = {"scaled_swish": scaled_swish}
