"""wgpu kernel of burn.linalg's qr (``kernels/qr.cl``): Householder with LAPACK's reflectors
(dlarfg), so Q and R carry numpy's signs; run on A^T (A's columns contiguous), one work-group
per matrix, Q accumulated one work-item per column."""
from __future__ import annotations

import numpy as np
from burn_wgpu import api as wgpu

from .common import copy, fallback, kernel, launch, launch_groups, native_ok, nbatch, transposed


def qr(a, *, mode="reduced"):
    """Batched Householder QR on A^T, one work-group per matrix; Q formed by accumulating the reflectors.

    >>> import burn, burn_linalg, numpy as np
    >>> q, r = burn_linalg.qr(burn.tensor([[3.0, 1.0], [4.0, 2.0]], device=burn.Device.wgpu()))
    >>> assert np.allclose(r.numpy(), [[-5.0, -2.2], [0.0, 0.4]])      # numpy's signs
    """
    if not native_ok(a) or a.size == 0 or mode not in ("reduced", "complete", "r"):
        return fallback("qr")(a, mode=mode)
    dc, (M, N) = wgpu.device_of(a), a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb = nbatch(batch)
    f = copy(transposed(a))       # (..., N, M)
    tau = wgpu.empty((nb, K), a.dtype, dc)
    launch_groups(dc, kernel(dc, a.dtype, "qrt"), nb, (M, N, f, tau))
    rm = M if mode == "complete" else K
    r = wgpu.empty(batch + (rm, N), a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "triu_rows_t"), r.size, (M, N, rm, np.int64(r.size), f, r))
    if mode == "r":
        return r
    qn = M if mode == "complete" else K
    qt = wgpu.empty(batch + (qn, M), a.dtype, dc)
    launch(dc, kernel(dc, a.dtype, "orgqt"), nb * qn, (M, N, K, qn, np.int64(nb), f, tau, qt))
    return copy(transposed(qt)), r
