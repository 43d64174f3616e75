"""burn-example-ext: a third-party kernel library for burn, written from docs/plugins.md.

It shows the two things a kernel plugin publishes:

* a new op, ``example::scaled_swish`` (``x * sigmoid(beta * x)``), declared
  with :func:`burn.backend_extension`: a reference definition written with
  burn ops (runs on every backend), a ``.meta`` rule, a flex kernel (one numpy
  pass, no temporaries of the reference's op-by-op evaluation) and a
  ``.backward`` rule;
* a faster flex kernel for an op it did not define, ``burn::linear_relu``,
  registered with a higher priority than burn-flex's own kernel from the
  ``burn_register_kernels`` hook.

Users import the op from this package::

    >>> import burn
    >>> from burn_example_ext import scaled_swish
    >>> y = scaled_swish(burn.tensor([0.0, 1.0]), beta=1.0)
    >>> assert abs(y.tolist()[1] - 0.7310586) < 1e-6
"""
from __future__ import annotations

from .ops import scaled_swish, stats  # noqa: F401  (decorators register at import)

__version__ = "0.1.0"
__all__ = ["scaled_swish", "stats"]

#: priority of our burn::linear_relu kernel on flex; burn-flex registers its own at 0
LINEAR_RELU_PRIORITY = 10


def burn_register_kernels(registry):
    """Hook: kernels for ops and backends other packages define."""
    from .ops import linear_relu_flex
    registry.register_kernel("burn::linear_relu", "flex", linear_relu_flex, priority=LINEAR_RELU_PRIORITY)


def burn_plugin_info():
    """Hook: extra facts shown by ``burn info``."""
    return {"ops": "example::scaled_swish", "overrides": "burn::linear_relu on flex (priority 10)"}
