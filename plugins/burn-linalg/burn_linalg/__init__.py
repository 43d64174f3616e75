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

import sys

from ._api import *  # noqa: F401,F403  (the public functions)
from ._api import __all__ as _api_all
from ._errors import LinAlgError
from ._ops import _EXT as ops

__version__ = "0.1.0"
__all__ = list(_api_all) + ["LinAlgError", "ops"]

#: backends we ship kernels for -> module holding ``KERNELS`` (op name -> function)
_KERNEL_MODULES = {"flex": "burn_linalg._flex", "wgpu": "burn_linalg._wgpu",
                   "cuda": "burn_linalg._cuda"}


def burn_register_kernels(registry):
    """Hook: register our kernels for every backend whose plugin is installed. They are
    lazy: a backend's kernel module (and LAPACK through scipy.linalg behind flex's) is
    imported the first time one of its kernels runs, not at discovery."""
    from burn.library import register_kernel_modules
    register_kernel_modules(registry, "linalg", _KERNEL_MODULES, ops=list(ops))


def burn_register_namespaces(registry):
    """Hook: ``burn.linalg``."""
    registry.add_namespace("linalg", sys.modules[__name__])


def burn_plugin_info():
    """Hook: facts shown by ``burn info``."""
    return {"namespace": "burn.linalg", "ops": f"{len(ops)} extension ops (linalg::*)",
            "kernels": "flex: numpy.linalg / scipy.linalg; cuda: cupy.linalg / cupyx.scipy.linalg; "
                       "wgpu: OpenCL (cholesky, LU, triangular solve, Householder QR, tridiagonal QL / Jacobi eigh, "
                       "Jacobi svd, pinv, lstsq; complex Hermitian eigh native, other complex inputs on the host)"}
