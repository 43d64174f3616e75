"""burn-flex: the numpy CPU backend of burn.

Registered through the ``burn.plugins`` entry point ``flex``; serves
``burn.Device.flex()``.
"""
from __future__ import annotations

__version__ = "0.1.0"


def burn_register_backends(registry):
    from .backend import FlexBackend
    registry.register_backend("flex", FlexBackend)


def burn_register_kernels(registry):
    from .kernels import all_kernels, extension_kernels
    from .memory import tune_malloc
    tune_malloc()
    for op, fn in all_kernels().items():
        registry.register_kernel(op, "flex", fn)
    for op, fn in extension_kernels().items():
        registry.register_kernel(op, "flex", fn)
    from .kernels.conv import conv_kernels
    for op, fn in conv_kernels().items():
        registry.register_kernel(op, "flex", fn)
    from .kernels.quant import quant_kernels
    for op, fn in quant_kernels().items():
        registry.register_kernel(op, "flex", fn)


def burn_plugin_info():
    import numpy as np
    return {"backend": "flex", "numpy": np.__version__}
