"""Conformance cases of ``example::scaled_swish``, in burn's own format
(:class:`burn.testing.conformance.Case`): forward against a numpy reference in each
floating dtype, the gradient against finite differences, and the dtype error at the call.
:func:`register` adds them to the suite every backend runs.

Example:
    >>> import burn
    >>> from burn.testing import conformance
    >>> from burn_example_ext.conformance import register
    >>> names = [c.name for c in register()]
    >>> conformance.run_case(conformance.get_case("example::scaled_swish[float32]"), burn.Device.flex())
"""
from __future__ import annotations

import numpy as np
from burn.testing.conformance import Arg, Case, register_cases

from .ops import scaled_swish

__all__ = ["CASES", "register"]


def _reference(x, beta=1.5):
    return x / (1.0 + np.exp(-beta * x))


def _fn(x):
    return scaled_swish(x, beta=1.5)


CASES = tuple(
    [Case(f"example::scaled_swish[{d}]", "example::scaled_swish", "forward", _fn,
          (Arg((3, 5), d, -6.0, 6.0),), _reference, tol=2.0, differentiable=True)
     for d in ("float16", "float32", "float64")]
    + [Case("example::scaled_swish[grad]", "example::scaled_swish", "grad", _fn, (Arg((2, 3), "float64"),)),
       Case("example::scaled_swish[int]", "example::scaled_swish", "error", _fn, (Arg((3,), "int32"),),
            error="DTypeError", match="example::scaled_swish")])


def register() -> list:
    """Add :data:`CASES` to burn's conformance suite (once); returns the cases added now.

    Example:
        >>> from burn_example_ext.conformance import CASES, register
        >>> _ = register()
        >>> assert register() == []        # a second call adds nothing
    """
    return register_cases(CASES)
