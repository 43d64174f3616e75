"""The ops and kernels of burn-example-ext."""
from __future__ import annotations

import numpy as np

import burn

#: how often each of our kernels ran (lets tests and users see which kernel won)
stats = {"scaled_swish_flex": 0, "scaled_swish_wgpu": 0, "scaled_swish_cuda": 0, "linear_relu_flex": 0}


@burn.backend_extension("example::scaled_swish")
def scaled_swish(x, beta=1.0):
    """``x * sigmoid(beta * x)`` (swish / SiLU with a temperature ``beta``, a Python float).

    This reference definition runs on backends without a kernel of this op.

    Example:
        >>> import burn
        >>> from burn_example_ext import scaled_swish
        >>> y = scaled_swish(burn.tensor([-1.0, 0.0, 2.0]), beta=2.0)
        >>> assert y.shape == (3,) and y.tolist()[1] == 0.0
    """
    return x * burn.sigmoid(x * beta)


@scaled_swish.meta
def _(x, beta=1.0):
    # raised at the user's call, before anything is recorded
    if not x.dtype.is_floating:
        raise burn.DTypeError(f"example::scaled_swish: x must be floating, got dtype={x.dtype} "
                              f"shape={x.shape}; cast it with x.astype(burn.float32)")
    if not isinstance(beta, (int, float)) or isinstance(beta, bool):
        raise burn.BurnError(f"example::scaled_swish: beta must be a Python float, got {type(beta).__name__}")
    return burn.TensorMeta(x.shape, x.dtype)


@scaled_swish.kernel("flex")
def _(x, beta=1.0):
    stats["scaled_swish_flex"] += 1
    return scaled_swish_numpy(x, beta)


def scaled_swish_numpy(x, beta=1.0):
    """The op on a numpy array: one pass with in-place ops; the stable form of sigmoid
    avoids exp overflow. The flex kernel, and the wgpu/cuda kernels' host path for the
    half-precision dtypes their device code does not take.

    Example:
        >>> import numpy as np
        >>> from burn_example_ext.ops import scaled_swish_numpy
        >>> assert scaled_swish_numpy(np.array([0.0, 800.0]), 1.0).tolist() == [0.0, 800.0]
    """
    z = np.multiply(x, x.dtype.type(beta))
    e = np.exp(-np.abs(z))
    s = np.where(z >= 0, 1, e)
    s /= 1 + e                       # sigmoid(z)
    s *= x
    return s.astype(x.dtype, copy=False)


@scaled_swish.backward
def _(ctx, grad):
    # d/dx x*s(bx) = s + b*x*s*(1-s), written with burn ops
    (x,) = ctx.inputs
    beta = ctx.args[1] if len(ctx.args) > 1 else ctx.kwargs.get("beta", 1.0)
    s = burn.sigmoid(x * beta)
    return (grad * (s + x * beta * s * (1 - s)),)


def linear_relu_flex(x, weight, bias):
    """``relu(x @ weight + bias)`` in place in the matmul's output buffer, in the inputs' dtype
    (numpy computes a bfloat16 matmul in float32: the result is cast back, as burn-flex does).

    Example:
        >>> import numpy as np
        >>> from burn_example_ext.ops import linear_relu_flex
        >>> y = linear_relu_flex(np.ones((1, 2), np.float32), np.ones((2, 2), np.float32), np.array([-3.0, 1.0], np.float32))
        >>> assert y.tolist() == [[0.0, 3.0]] and y.dtype == np.float32
    """
    stats["linear_relu_flex"] += 1
    out = np.matmul(x, weight)
    out += bias
    np.maximum(out, 0, out=out)
    return out.astype(x.dtype, copy=False)
