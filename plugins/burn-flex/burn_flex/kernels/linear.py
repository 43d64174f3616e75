"""matmul on flex (numpy's BLAS) and the fused ``burn::linear_relu``."""
from __future__ import annotations

import numpy as np


def matmul(a, b):
    r = np.matmul(a, b)
    # numpy computes bfloat16 products in float32: keep the operands' dtype
    return r if r.dtype == a.dtype else r.astype(a.dtype)


def linear_relu(x, w, b):
    """Fused linear + bias + relu: one BLAS call, then the epilogue in place."""
    y = np.matmul(x, w)
    y += b
    np.maximum(y, 0, out=y)
    return y if y.dtype == x.dtype else y.astype(x.dtype)   # bfloat16 matmul gives float32
