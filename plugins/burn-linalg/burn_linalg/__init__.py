"""burn-linalg: ``burn.linalg``, differentiable linear algebra with a kernel per backend.

Names, defaults and batching follow numpy.linalg (scipy.linalg where numpy
has no such function: ``lu``, ``lu_factor``, ``lu_solve``,
``solve_triangular``). Every decomposition and solver is a
``burn.backend_extension`` named ``linalg::<name>`` with a ``.meta`` rule
(shape/dtype errors at the call), a ``.backward`` rule, and kernels per
backend; the flex kernels are numpy.linalg / scipy.linalg (LAPACK) and are
registered only when burn-flex is installed. Third parties can register a
faster kernel for any of them (``registry.register_kernel("linalg::qr",
"wgpu", fn, priority=10)``).

Installed, it is found through the ``burn.plugins`` entry point ``linalg``
and appears as ``burn.linalg``:

    >>> import burn, numpy as np
    >>> a = burn.tensor([[4.0, 2.0], [2.0, 3.0]])
    >>> L = burn.linalg.cholesky(a)
    >>> assert np.allclose((L @ L.mT).numpy(), a.numpy())
"""
from __future__ import annotations

from ._api import *  # noqa: F401,F403  (the public functions)
from ._api import __all__ as _api_all
from ._errors import LinAlgError
from ._ops import _EXT as ops

__version__ = "0.1.0"
__all__ = list(_api_all) + ["LinAlgError", "ops"]
