"""burn-cuda: burn's NVIDIA GPU backend on CuPy.

Registered through the ``burn.plugins`` entry point ``cuda``; serves
``burn.Device.cuda(index)``. CuPy is imported when a cuda device is first
used (inside the backend factory), never at discovery, so installing
burn-cuda without CuPy or without a GPU leaves ``import burn``, flex and
``burn info`` working; ``burn info`` then shows why cuda cannot run.

burn-cuda depends on burn-core and numpy only (not on burn-flex). Every core
primitive runs on the GPU (no host fallbacks): generated CUDA C for element-wise
ops and fused groups, cuBLAS/CUB through CuPy, generated atomicAdd kernels for
scatter-add and advanced-index gradients. dtypes: bool, (u)int8, int32, int64,
float16, float32, float64, complex64/128, and bfloat16 with CuPy >= 14 plus
ml_dtypes (refused with a DTypeError saying what to upgrade otherwise).
"""
from __future__ import annotations

__version__ = "0.1.0"

INSTALL_HINT = "pip install burn-cuda[cuda12] (CUDA 12 driver) or pip install burn-cuda[cuda13] (CUDA 13)"


def burn_register_backends(registry):
    def factory():
        from .backend import CudaBackend
        return CudaBackend()
    registry.register_backend("cuda", factory)


def burn_register_kernels(registry):
    # kernels.py imports no CuPy at module level: registering costs nothing without a GPU
    from .kernels import all_kernels, extension_kernels, host_fallbacks
    for op, fn in all_kernels().items():
        registry.register_kernel(op, "cuda", fn)
    for op, fn in extension_kernels().items():
        registry.register_kernel(op, "cuda", fn)
    for op, fn in host_fallbacks().items():
        registry.register_kernel(op, "cuda", fn, host_fallback=True)


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
