"""The case table of the conformance suite (see :mod:`burn.testing.conformance`).

One builder per area of the ops (element-wise, promotion, reductions,
movement, indexing, linear algebra, creation, convolution, nn.functional,
errors); each case pairs a burn call with an independent numpy reference.
"""
from __future__ import annotations

from . import (dtype_support, elementwise, errors, fusion, int_dtypes, interop, linear_creation, movement,  # noqa: F401
               nn, reductions, sorting)


def build_all():
    """Fill the case table (:mod:`burn.testing._table`), once, lazily: ``conformance.cases()`` calls it.

    Example:
        >>> from burn.testing import conformance
        >>> assert len(conformance.cases()) > 500      # built on first use
    """
    fusion._fusion_and_laziness()
    nn._conv()
    elementwise._unary()
    elementwise._binary()
    elementwise._complex()
    elementwise._promotion_and_scalars()
    reductions._reductions()
    movement._movement()
    movement._indexing()
    sorting._sorting()
    linear_creation._linear()
    linear_creation._creation()
    nn._functional()
    errors._errors()
    dtype_support._dtype_support()
    int_dtypes._int_dtypes()
    interop._dlpack()
