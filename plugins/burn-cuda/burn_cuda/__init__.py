"""burn-cuda: burn's NVIDIA GPU backend on CuPy.

Registered through the ``burn.plugins`` entry point ``cuda``; serves
``burn.Device.cuda(index)``. CuPy is imported when a cuda device is first
used (inside the backend factory), never at discovery, so installing
burn-cuda without CuPy or without a GPU leaves ``import burn``, flex and
``burn info`` working; ``burn info`` then shows why cuda cannot run.

burn-cuda depends on burn-core and numpy only (not on burn-flex). Every core
primitive runs on the GPU (no host fallbacks): generated CUDA C for element-wise
ops and fused groups, cuBLAS/CUB through CuPy, generated atomicAdd kernels for
scatter-add and advanced-index gradients. dtypes: bool, (u)int8, (u)int16, (u)int32, (u)int64,
float16, float32, float64, complex64/128, and bfloat16 with CuPy >= 14 plus
ml_dtypes (refused with a DTypeError saying what to upgrade otherwise).
"""
from __future__ import annotations

__version__ = "0.1.0"

import importlib.util
import os
import sys

INSTALL_HINT = "pip install burn-cuda[cuda12] (CUDA 12 driver) or pip install burn-cuda[cuda13] (CUDA 13)"

#: Device.default() asks burn-cuda (20) before burn-wgpu (10) for an accelerator
DEFAULT_PRIORITY = 20

# what the NVIDIA driver creates on Linux (/dev/dxg: WSL's GPU paravirtualization)
_DRIVER_PATHS = ("/dev/nvidiactl", "/dev/nvidia0", "/proc/driver/nvidia/version", "/dev/dxg")


def may_have_gpu() -> bool:
    """Whether a CUDA GPU can be used here, decided without importing CuPy or starting CUDA:
    CuPy is installed and (on Linux) the NVIDIA driver's device files exist.

    Example:
        >>> import burn_cuda
        >>> assert isinstance(burn_cuda.may_have_gpu(), bool)
    """
    if importlib.util.find_spec("cupy") is None:
        return False
    if not sys.platform.startswith("linux"):
        return True
    return any(os.path.exists(p) for p in _DRIVER_PATHS)


def burn_register_backends(registry):
    def factory():
        from .backend import CudaBackend
        return CudaBackend()
    registry.register_backend("cuda", factory, default_priority=DEFAULT_PRIORITY, accelerator_probe=may_have_gpu)


#: the ``burn::`` extension ops with a cuda kernel; every core primitive has one too
EXTENSION_OPS = ("burn::linear_relu", "burn::softmax", "burn::softmax_grad", "burn::layer_norm",
                 "burn::log_softmax", "burn::log_softmax_grad", "burn::softmax_cross_entropy",
                 "burn::softmax_cross_entropy_grad", "burn::adam_update", "burn::sgd_update",
                 "burn::adam_update_group", "burn::sgd_update_group", "burn::lstm_layer",
                 "burn::lstm_layer_grad", "burn::gru_layer", "burn::gru_layer_grad")


def burn_register_kernels(registry):
    # lazy: kernels.py (and burn.codegen's generators) load on the first cuda kernel lookup;
    # no core primitive runs on the host (kernels.HOST_FALLBACK_OPS is empty)
    from burn.dispatch import LazyKernel
    from burn.primitives import PRIMITIVES
    for op in PRIMITIVES:
        registry.register_kernel(op, "cuda", LazyKernel("burn_cuda.kernels", op, table="all_kernels"))
    for op in EXTENSION_OPS:
        registry.register_kernel(op, "cuda", LazyKernel("burn_cuda.kernels", op, table="extension_kernels"))


def burn_plugin_info():
    info = {"backend": "cuda (CuPy: cuBLAS + generated CUDA C)"}
    from importlib.metadata import PackageNotFoundError, version
    found = []
    for dist in ("cupy-cuda12x", "cupy-cuda13x", "cupy"):
        try:
            found.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            continue
    info["cupy"] = ", ".join(found) if found else f"not installed ({INSTALL_HINT})"
    from .kernels import HOST_FALLBACK_OPS
    info["host fallbacks"] = ", ".join(HOST_FALLBACK_OPS) or "none"
    from .native import BF16_MIN_CUPY
    info["bfloat16"] = f"with CuPy >= {BF16_MIN_CUPY} and ml_dtypes"
    return info
