"""wgpu kernels of burn.linalg: every op natively in OpenCL but the general eigenproblem (``eig`` /
``eigvals``: LAPACK's geev as a declared host fallback, ``HOST_FALLBACK``); complex inputs on the host
except eigh.

The OpenCL C lives in ``burn_linalg/kernels/*.cl`` (package data): one program per dtype
(float32, float64) from ``common.cl`` and a file per op family, parameterised by ``#define``s,
sizes as run-time arguments, so PoCL compiles it once and the disk cache keeps it. The Python
side is split the same way: ``lu_ops`` (cholesky, triangular solves, LU), ``qr_ops``,
``eigh_ops``, ``svd_ops`` (svd, pinv, lstsq), ``gather`` (diagonal) and ``common``. The
factorizations run one work-group per matrix (batched over the leading dimensions), which
suits the small matrices (N <= 256) these ops mostly see:

- ``cholesky``, ``solve_triangular``; LU with partial pivoting (rectangular
  too; the first largest pivot, as LAPACK's idamax) behind ``lu_factor``,
  ``lu_solve``, ``solve``, ``inv``, ``det``, ``slogdet`` and ``lu`` (P, L, U
  or P @ L built on the device from the pivots: scipy.linalg.lu's exactly).
- ``qr``: Householder with LAPACK's reflectors (dlarfg), so Q and R carry
  numpy's signs; run on A^T (A's columns contiguous), Q accumulated one
  work-item per column.
- ``eigh`` / ``eigvalsh``: from N = ``EIGH_TRIDIAG_MIN`` (10) LAPACK's route,
  Householder reduction to tridiagonal form, implicit QL with Wilkinson shifts,
  the rotations applied to the formed Q (dsytrd + dorgtr + dsteqr, all in one
  kernel; ~5x fewer flops than Jacobi at N = 128); below it cyclic two-sided
  Jacobi, N / 2 disjoint rotations per round (round-robin ordering), which is
  faster there. Only the ``UPLO`` triangle is read; eigenvalues ascending (as
  LAPACK). Eigenvectors are unique only up to sign: each one's
  largest-magnitude component (the first of equal ones) is made positive, so
  the result is deterministic (LAPACK's may differ in sign).
  Complex Hermitian (complex64 / complex128, every N <= 2 * ``MAXP``): ``htridiag_ql``,
  Hermitian Householder reflectors to a Hermitian tridiagonal T, a diagonal unitary D making
  D^H T D real (so the same QL runs unchanged), vectors Q D Z; each eigenvector's
  largest-magnitude component (the first of equal ones) is made real positive.
- ``svd`` / ``svdvals``: one-sided (Hestenes) Jacobi on the rows of A^T, from
  min(M, N) = ``SVD_PRECOND_MIN`` (16) started from V^T A^T with V the
  eigenvectors (``eigh`` above) of the Gram matrix A^T A (2-3x fewer sweeps);
  a tall A is first reduced by the QR above (Jacobi then works on R, U = Q
  U_R, and ``full_matrices=True`` takes its extra columns from the complete
  Q); a wide A is the transpose of a tall one. Singular values descending.
  Signs: each column of U has its largest-magnitude component positive (Vh's
  row flips with it). U's columns for zero singular values are completed to
  an orthonormal basis by Gram-Schmidt on the device.
- ``pinv`` from that SVD (numpy's cutoff: singular values > rcond * max kept)
  or, ``hermitian=True``, from ``eigh`` of the lower triangle (as numpy);
  ``lstsq`` = pinv(A) @ B, gelsd's minimum-norm solution.
- ``diagonal``: a strided gather, bit for bit, for every dtype.

Layout matters more than parallelism on PoCL (CPU): a work-item streaming
along contiguous memory with several partial sums (``dot4``) beats
work-items striding down columns or dividing indices per element, so the
kernels hold A^T for QR, X^T for the plain triangular / LU solves, and give
one work-item a whole row (or pair of rows) where they can.

The Jacobi rotations use relative tests, |a_pq| > eps sqrt(|a_pp a_qq|) for
eigh (Demmel & Veselic) and |x_p . x_q| > sqrt(L) eps ||x_p|| ||x_q|| for svd
(LAPACK's dgesvj), so small eigen/singular values keep relative accuracy
(tests/test_linalg_wgpu_eigh.py checks a graded svd against mpmath).
Factorization failures (not positive definite, singular) are flagged per
matrix on the device; the flags are read back (a sync) so the error is
raised as flex raises it.

Complex (but Hermitian eigh / eigvalsh), float16 and empty inputs (and eigh with N > 2 * MAXP) run as host
fallbacks at run time: the inputs are copied to the host, the flex (LAPACK)
kernel runs, the results are copied back, and the copies are counted in the
device's ``stats()`` (``host_transfers``, ``host_transfer_bytes``).

This package is imported only when the wgpu backend is registered. It reaches burn-wgpu only
through ``burn_wgpu.api`` (imported at once; PyOpenCL is imported by the first device call) and
SciPy only through a host fallback's flex kernel.
"""
from __future__ import annotations

from .. import _flex
from .common import fallback
from .eigh_ops import eigh, eigvalsh
from .gather import diagonal
from .lu_ops import cholesky, det, inv, lu, lu_factor, lu_solve, slogdet, solve, solve_triangular
from .qr_ops import qr
from .svd_ops import lstsq, pinv, svd, svdvals

NATIVE = {"cholesky": cholesky, "solve_triangular": solve_triangular, "lu_factor": lu_factor,
          "lu_solve": lu_solve, "solve": solve, "inv": inv, "det": det, "slogdet": slogdet, "qr": qr,
          "diagonal": diagonal, "lu": lu, "eigh": eigh, "eigvalsh": eigvalsh,
          "svd": svd, "svdvals": svdvals, "pinv": pinv, "lstsq": lstsq}


def _fallback_kernel(name):
    def k(*xs, **kw):
        return fallback(name)(*xs, **kw)
    k.__name__ = f"wgpu_host_linalg_{name}"
    return k


KERNELS = {name: NATIVE.get(name) or _fallback_kernel(name) for name in _flex.KERNELS}

#: kernels that run on host memory (download, LAPACK, upload): ``burn info`` lists them
HOST_FALLBACK = set(_flex.KERNELS) - set(NATIVE)
