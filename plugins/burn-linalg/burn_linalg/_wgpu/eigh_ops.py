"""wgpu kernels of burn.linalg's eigh / eigvalsh (``kernels/eigh.cl``), one work-group per matrix.

From N = ``EIGH_TRIDIAG_MIN`` LAPACK's route (``tridiag_ql``: Householder tridiagonalization,
Q formed, implicit QL with Wilkinson shifts); below it cyclic two-sided Jacobi
(``jacobi_eigh``), which is faster there. Complex Hermitian input runs ``htridiag_ql``.
Eigenvalues ascending; each eigenvector's largest-magnitude component (the first of equal
ones) is made positive (real positive for complex), so results are deterministic.
"""
from __future__ import annotations

import numpy as np
from burn_wgpu import api as wgpu

from .common import MAXP, SWEEPS, WG, copy, fallback, kernel, launch_groups, native_ok, nbatch

EIGH_TRIDIAG_MIN = 10   # Jacobi below this N, Householder + QL from it (crossover 8-12 on PoCL)

# complex dtype -> the real dtype of its parts (and of its Hermitian eigenvalues)
_CPART = {"complex64": "float32", "complex128": "float64"}


def real_eigh(a, UPLO, want_v):
    """(w, v) of a real symmetric batch (v is a 1-element placeholder unless ``want_v``).

    >>> import burn, numpy as np
    >>> from burn_wgpu import api as wgpu
    >>> a = wgpu.to_device(np.float32([[2, 1], [1, 2]]))
    >>> w, v = real_eigh(a, "L", True)
    >>> assert np.allclose(wgpu.to_host(w), [1.0, 3.0])
    """
    dc, N, batch = wgpu.device_of(a), a.shape[-1], tuple(a.shape[:-2])
    nb = nbatch(batch)
    work = copy(a)
    w = wgpu.empty(batch + (N,), a.dtype, dc)
    if N >= EIGH_TRIDIAG_MIN:
        v = wgpu.empty((nb, N, N) if want_v else (1,), a.dtype, dc)
        vo = wgpu.empty(batch + (N, N), a.dtype, dc) if want_v else v
        loc = [wgpu.local_memory(N * np.dtype(a.dtype).itemsize) for _ in range(5)]
        launch_groups(dc, kernel(dc, a.dtype, "tridiag_ql"), nb, (N, UPLO == "L", want_v, work, v, w, vo, *loc))
        return w, vo
    work2 = wgpu.empty((nb, N, N), a.dtype, dc)
    v = wgpu.empty((nb, N, N) if want_v else (1,), a.dtype, dc)
    vo = wgpu.empty(batch + (N, N), a.dtype, dc) if want_v else v
    launch_groups(dc, kernel(dc, a.dtype, "jacobi_eigh"), nb, (N, UPLO == "L", want_v, SWEEPS, work, work2, v, w, vo))
    return w, vo


def _jacobi_ok(a):
    return native_ok(a) and a.size and a.shape[-1] <= 2 * MAXP


def _heigh_ok(a):
    if not (wgpu.is_native(a) and a.dtype in _CPART and a.size and a.shape[-1] <= 2 * MAXP):
        return False
    # htridiag_ql's local scratch (9 N reals + the reduction's WG) must fit the device's local memory
    isz = np.dtype(_CPART[a.dtype]).itemsize
    return (9 * a.shape[-1] + WG + 4) * isz <= wgpu.device_of(a).device.local_mem_size


def _heigh(a, UPLO, want_v):
    """Complex Hermitian eigh on the device (``htridiag_ql``): eigenvalues real (float32 / float64),
    eigenvectors complex, each one's largest-|.| component real positive."""
    dc, N, batch = wgpu.device_of(a), a.shape[-1], tuple(a.shape[:-2])
    nb, part = nbatch(batch), _CPART[a.dtype]
    work = copy(a)
    w = wgpu.empty(batch + (N,), part, dc)
    v = wgpu.empty((nb, N, N) if want_v else (1,), a.dtype, dc)
    vo = wgpu.empty(batch + (N, N), a.dtype, dc) if want_v else v
    isz = np.dtype(part).itemsize
    loc = [wgpu.local_memory(n * N * isz) for n in (1, 1, 1, 2, 2, 2)]
    launch_groups(dc, kernel(dc, part, "htridiag_ql"), nb, (N, UPLO == "L", want_v, work, v, w, vo, *loc))
    return w, vo


def eigh(a, *, UPLO="L"):
    """Batched Householder tridiagonalization + implicit QL (N >= 10) or cyclic Jacobi (smaller N);
    eigenvalues ascending, each eigenvector's largest |component| positive. Complex Hermitian
    input (any N <= 1024): ``htridiag_ql``, real eigenvalues, that component real positive.

    >>> import burn, burn_linalg
    >>> w, v = burn_linalg.eigh(burn.tensor([[2.0, 1.0], [1.0, 2.0]], device=burn.Device.wgpu()))
    >>> w.numpy().round(6).tolist()
    [1.0, 3.0]
    >>> h = burn.tensor([[2, 1j], [-1j, 2]], dtype=burn.complex64, device=burn.Device.wgpu())
    >>> burn_linalg.eigh(h)[0].numpy().round(6).tolist()
    [1.0, 3.0]
    """
    if _heigh_ok(a):
        return _heigh(a, UPLO, True)
    if not _jacobi_ok(a):
        return fallback("eigh")(a, UPLO=UPLO)
    return real_eigh(a, UPLO, True)


def eigvalsh(a, *, UPLO="L"):
    """eigh's eigenvalues (ascending) without the vectors: the QL sweeps skip the rotations' updates.

    >>> import burn, burn_linalg
    >>> burn_linalg.eigvalsh(burn.tensor([[2.0, 1.0], [1.0, 2.0]], device=burn.Device.wgpu())).numpy().round(6).tolist()
    [1.0, 3.0]
    """
    if _heigh_ok(a):
        return _heigh(a, UPLO, False)[0]
    if not _jacobi_ok(a):
        return fallback("eigvalsh")(a, UPLO=UPLO)
    return real_eigh(a, UPLO, False)[0]
