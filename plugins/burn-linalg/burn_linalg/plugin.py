"""burn-linalg's plugin module, the entry point ``linalg``: what the library provides, read
at discovery without importing it. The namespace ``burn.linalg`` is the package itself, imported
the first time it is touched; each backend's kernel module (and what it wraps: scipy on
flex, pyopencl on wgpu, CuPy on cuda) is imported the first time one of its kernels runs.

Example:
    >>> import burn
    >>> assert burn.plugins.namespaces()["linalg"] == "linalg"
    >>> assert burn.dispatch.registry.kernel_entries("linalg::cholesky", "flex")[0].plugin == "linalg"
"""
from __future__ import annotations

from burn.library import register_kernel_modules

__all__ = ["OPS", "KERNEL_MODULES", "burn_register_kernels", "burn_register_namespaces", "burn_plugin_info"]

#: every ``linalg::<name>`` op the package declares (a test checks it against ``burn_linalg.ops``)
OPS = ('cholesky', 'det', 'diagonal', 'eig', 'eigh', 'eigvals', 'eigvalsh', 'inv', 'lstsq', 'lu', 'lu_factor',
       'lu_solve', 'pinv', 'qr', 'slogdet', 'solve', 'solve_triangular', 'svd', 'svdvals',)

#: backends we ship kernels for -> module holding ``KERNELS`` (op name -> function)
KERNEL_MODULES = {"flex": "burn_linalg._flex", "wgpu": "burn_linalg._wgpu",
                  "cuda": "burn_linalg._cuda"}


def burn_register_kernels(registry):
    """Hook: our kernels for every backend whose plugin is installed, as lazy kernels.

    Example:
        >>> import burn
        >>> from burn_linalg import plugin
        >>> r = burn.dispatch.Registry(); r.register_backend("flex", object)
        >>> plugin.burn_register_kernels(r)
        >>> assert r.kernel_entries("linalg::cholesky", "flex")[0].fn.module == "burn_linalg._flex"
    """
    register_kernel_modules(registry, "linalg", KERNEL_MODULES, ops=OPS)


def burn_register_namespaces(registry):
    """Hook: ``burn.linalg``, imported when first touched.

    Example:
        >>> import burn
        >>> from burn_linalg import plugin
        >>> r = burn.dispatch.Registry()
        >>> plugin.burn_register_namespaces(r)
        >>> assert r.namespaces["linalg"].target == "burn_linalg"
    """
    registry.add_namespace("linalg", "burn_linalg")


def burn_plugin_info():
    """Hook: facts shown by ``burn info``.

    Example:
        >>> from burn_linalg import plugin
        >>> assert "linalg" in plugin.burn_plugin_info()["namespace"]
    """
    return {"namespace": "burn.linalg", "ops": f"{len(OPS)} extension ops (linalg::*)",
            "kernels": "flex: numpy.linalg / scipy.linalg; cuda: cupy.linalg / cupyx.scipy.linalg; "
                       "wgpu: OpenCL (cholesky, LU, triangular solve, Householder QR, tridiagonal QL / Jacobi eigh, "
                       "Jacobi svd, pinv, lstsq; complex Hermitian eigh native, other complex inputs on the host)"}
