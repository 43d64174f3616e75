"""A burn plugin that fails to import, like one whose compiled part is missing
(a wheel built for another platform, a partial install).

burn must keep working without it: ``import burn`` and the other plugins are
unaffected, and ``burn info`` / ``burn.plugins.report()`` show this plugin as
failed, with the error below.
"""
from ._native import fused_kernels  # noqa: F401  (there is no _native module: the import fails)


def burn_register_kernels(registry):  # pragma: no cover - never reached
    registry.register_kernel("burn::linear_relu", "flex", fused_kernels.linear_relu, priority=100)
