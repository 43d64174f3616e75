"""burn-example-ext: a third-party kernel library for burn, written from docs/plugins.md
with public APIs only (burn-core's, and the backends' kernel APIs ``burn_wgpu.api`` and
``burn_cuda.api``).

It shows what an outside package can publish:

* a namespace, ``burn.example`` (this package), from the ``burn_register_namespaces`` hook;
* a new op, ``example::scaled_swish`` (``x * sigmoid(beta * x)``), declared with
  :func:`burn.backend_extension`: a reference definition written with burn ops (runs on
  every backend), a ``.meta`` rule, a ``.backward`` rule, and kernels for three backends:
  flex (numpy, :mod:`burn_example_ext.ops`), wgpu (OpenCL C through ``burn_wgpu.api``,
  :mod:`burn_example_ext._wgpu`) and cuda (CUDA C through ``burn_cuda.api``,
  :mod:`burn_example_ext._cuda`); the C sources are package data under ``kernels/``;
* a faster flex kernel for an op it did not define, ``burn::linear_relu``, registered with
  a higher priority than burn-flex's own;
* conformance cases for its op (:mod:`burn_example_ext.conformance`), run by every
  backend's conformance suite once registered.

The wgpu and cuda kernel modules are registered as lazy kernels: they (and PyOpenCL or
CuPy) are imported the first time the op runs on such a device, and only when that
backend's plugin is installed.

    >>> import burn
    >>> y = burn.example.scaled_swish(burn.tensor([0.0, 1.0]), beta=1.0)
    >>> assert abs(y.tolist()[1] - 0.7310586) < 1e-6
"""
from __future__ import annotations

from burn.library import register_kernel_modules

from .ops import linear_relu_flex, scaled_swish, stats  # noqa: F401  (decorators register at import)

__version__ = "0.1.0"
__all__ = ["scaled_swish", "stats"]

#: priority of our burn::linear_relu kernel on flex; burn-flex registers its own at 0
LINEAR_RELU_PRIORITY = 10

#: backends we ship a device kernel module for (flex's kernel is a decorator in ops.py)
KERNEL_MODULES = {"wgpu": "burn_example_ext._wgpu", "cuda": "burn_example_ext._cuda"}


def burn_register_kernels(registry):
    """Hook: kernels for ops and backends other packages define, and our device kernels.

    Example:
        >>> import burn
        >>> entries = burn.dispatch.registry.kernel_entries("burn::linear_relu", "flex")
        >>> assert entries[0].plugin == "example-ext" and entries[0].priority == LINEAR_RELU_PRIORITY
    """
    registry.register_kernel("burn::linear_relu", "flex", linear_relu_flex, priority=LINEAR_RELU_PRIORITY)
    register_kernel_modules(registry, "example", KERNEL_MODULES, ops=["scaled_swish"])


def burn_register_namespaces(registry):
    """Hook: ``burn.example`` is this package.

    Example:
        >>> import burn
        >>> assert burn.plugins.namespaces()["example"] == "example-ext"
    """
    registry.add_namespace("example", "burn_example_ext")


def burn_plugin_info():
    """Hook: extra facts shown by ``burn info``.

    Example:
        >>> assert "scaled_swish" in burn_plugin_info()["ops"]
    """
    return {"namespace": "burn.example", "ops": "example::scaled_swish (flex, wgpu, cuda)",
            "overrides": f"burn::linear_relu on flex (priority {LINEAR_RELU_PRIORITY})"}
