"""Errors of burn.linalg."""
from __future__ import annotations

import numpy as np

import burn

__all__ = ["LinAlgError"]


class LinAlgError(burn.BurnError, np.linalg.LinAlgError):
    """A matrix the op cannot handle: singular (solve, inv), not positive
    definite (cholesky), no convergence (svd, eigh).

    It depends on the values, so it is raised when the value is computed
    (when it is read, or at ``device.sync()``), not at the call. It is a
    ``burn.BurnError`` and also a ``numpy.linalg.LinAlgError``, so code
    written for numpy catches it too.

    Example:
        >>> import burn, numpy as np
        >>> from burn_linalg import LinAlgError
        >>> try:
        ...     burn.linalg.inv(burn.tensor([[1.0, 2.0], [2.0, 4.0]])).numpy()
        ... except burn.BurnError as e:
        ...     assert isinstance(e, np.linalg.LinAlgError) and "linalg::inv" in str(e)
    """
