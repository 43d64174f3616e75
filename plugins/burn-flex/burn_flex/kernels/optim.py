"""Optimizer updates on flex: ``burn::adam_update`` and ``burn::sgd_update`` as the reference's
ops in its order (bit-identical), with ``out=`` buffers instead of temporaries."""
from __future__ import annotations

import numpy as np


def _hyper_scalars(h, dtype):
    # 0-d arrays of the parameter's dtype: the operands op-by-op execution would use
    return [np.asarray(x, dtype=dtype) for x in h.tolist()]


def adam_update(p, g, m, v, h, mode="none"):
    """burn::adam_update: the reference's ops in its order (bit-identical), with out= buffers."""
    if p.ndim == 0:       # ufuncs return numpy scalars for 0-d operands, which out= cannot take
        return tuple(r.reshape(()) for r in adam_update(p.reshape(1), g.reshape(1), m.reshape(1), v.reshape(1),
                                                        h, mode))
    lr, b1, omb1, b2, omb2, c1, c2, eps, wd, decay = _hyper_scalars(h, p.dtype)
    mul, add = np.multiply, np.add
    if mode == "l2":
        t = mul(p, wd)
        g = add(g, t, out=t)
    m2 = mul(m, b1)
    t = mul(g, omb1)
    add(m2, t, out=m2)
    v2 = mul(g, g)
    mul(v2, omb2, out=v2)
    mul(v, b2, out=t)
    add(t, v2, out=v2)                      # v*b2 + g*g*(1-b2) (addition commutes exactly)
    mul(v2, c2, out=t)
    np.sqrt(t, out=t)
    add(t, eps, out=t)
    s = mul(m2, c1)
    np.divide(s, t, out=s)
    mul(s, lr, out=s)
    if mode == "decoupled":
        mul(p, decay, out=t)
        return np.subtract(t, s, out=s), m2, v2
    return np.subtract(p, s, out=s), m2, v2


def sgd_update(p, g, buf, h, mode=("next", False, False)):
    """burn::sgd_update: the reference's ops in its order (bit-identical)."""
    if p.ndim == 0:
        return tuple(r.reshape(()) for r in sgd_update(p.reshape(1), g.reshape(1), buf.reshape(1), h, mode))
    first, decay, nesterov = mode
    lr, wd, mom, omd = _hyper_scalars(h, p.dtype)
    if decay:
        g = np.add(g, np.multiply(p, wd))
    if first == "first":
        b = g.copy()
    else:
        b = np.multiply(buf, mom)
        b += np.multiply(g, omd)
    if nesterov:
        d = np.multiply(b, mom)
        np.add(g, d, out=d)
    else:
        d = b.copy()
    d *= lr
    return np.subtract(p, d, out=d), b
