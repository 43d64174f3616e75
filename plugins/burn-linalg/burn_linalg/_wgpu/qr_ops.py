"""wgpu kernel of burn.linalg's qr (``kernels/qr.cl``): Householder with LAPACK's reflectors
(dlarfg), so Q and R carry numpy's signs; run on A^T (A's columns contiguous), one work-group
per matrix, Q accumulated one work-item per column."""
from __future__ import annotations

import numpy as np

from .common import copy, fallback, i32, kernel, launch_groups, native_ok, nbatch, transposed


def qr(a, *, mode="reduced"):
    """Batched Householder QR on A^T, one work-group per matrix; Q formed by accumulating the reflectors.

    >>> import burn, burn_linalg, numpy as np
    >>> q, r = burn_linalg.qr(burn.tensor([[3.0, 1.0], [4.0, 2.0]], device=burn.Device.wgpu()))
    >>> assert np.allclose(r.numpy(), [[-5.0, -2.2], [0.0, 0.4]])      # numpy's signs
    """
    if not native_ok(a) or a.size == 0 or mode not in ("reduced", "complete", "r"):
        return fallback("qr")(a, mode=mode)
    from burn_wgpu.tensor import empty
    dc, (M, N) = a.dc, a.shape[-2:]
    K, batch = min(M, N), tuple(a.shape[:-2])
    nb = nbatch(batch)
    f = copy(transposed(a))       # (..., N, M)
    tau = empty(dc, (nb, K), a.dtype)
    launch_groups(dc, kernel(dc, a.dtype, "qrt"), nb, (i32(M), i32(N), f.buf, tau.buf))
    rm = M if mode == "complete" else K
    r = empty(dc, batch + (rm, N), a.dtype)
    dc.launch(kernel(dc, a.dtype, "triu_rows_t"), r.size, (i32(M), i32(N), i32(rm), np.int64(r.size), f.buf, r.buf))
    if mode == "r":
        return r
    qn = M if mode == "complete" else K
    qt = empty(dc, batch + (qn, M), a.dtype)
    dc.launch(kernel(dc, a.dtype, "orgqt"), nb * qn,
              (i32(M), i32(N), i32(K), i32(qn), np.int64(nb), f.buf, tau.buf, qt.buf))
    return copy(transposed(qt)), r
