"""Check autodiff gradients against central finite differences in float64."""
from __future__ import annotations

import numpy as np

from ..autodiff import no_grad
from ..device import Device
from ..dtypes import float64
from ..errors import AutodiffError
from ..ops.creation import tensor
from ..tensor import Tensor


def _as_f64_leaf(x, device):
    return tensor(np.asarray(x, dtype=np.float64), dtype=float64, device=device)


def numerical_grad(f, arrays, eps=1e-6):
    """Central-difference gradient of scalar ``f(list of np arrays)`` w.r.t. each array.

    An independent reference for autodiff tests. Args: ``f``, a function of
    the list of float64 arrays (perturbed in place) returning a float;
    ``arrays``, the point; ``eps``, the step.

    Example:
        >>> import numpy as np
        >>> from burn.testing import numerical_grad
        >>> [g] = numerical_grad(lambda xs: float((xs[0] ** 2).sum()), [np.array([1.0, -3.0])])
        >>> assert np.allclose(g, [2.0, -6.0])
    """
    grads = []
    for i, a in enumerate(arrays):
        g = np.zeros_like(a, dtype=np.float64)
        flat = a.reshape(-1)
        gf = g.reshape(-1)
        for j in range(flat.size):
            old = flat[j]
            flat[j] = old + eps
            fp = f(arrays)
            flat[j] = old - eps
            fm = f(arrays)
            flat[j] = old
            gf[j] = (fp - fm) / (2 * eps)
        grads.append(g)
    return grads


def gradcheck(fn, *inputs, device=None, eps=1e-6, atol=1e-5, rtol=1e-4, seed=0, raise_on_fail=True) -> bool:
    """Compare the gradients of ``fn(*inputs)`` with float64 finite differences.

    ``inputs`` are arrays (or tensors); each floating one is made a float64
    leaf on ``device.autodiff()`` (default flex). ``fn`` may return a tensor of
    any shape: it is contracted with a fixed random cotangent so every output
    element is checked.

    Example:
        >>> import burn
        >>> assert burn.testing.gradcheck(lambda x: (x * x).exp(), [[0.1, -0.2]])
    """
    dev = (device or Device.flex()).autodiff()
    arrays = [np.array(x.numpy() if isinstance(x, Tensor) else x, dtype=np.float64) for x in inputs]
    rng = np.random.default_rng(seed)
    leaves = [_as_f64_leaf(a, dev).require_grad() for a in arrays]
    out = fn(*leaves)
    cot = rng.standard_normal(out.shape)
    cot_t = tensor(cot, dtype=float64, device=dev)
    loss = (out * cot_t).sum()
    if not loss.requires_grad:
        raise AutodiffError("gradcheck: the function's output does not depend on any input")
    grads = loss.backward()
    analytic = [(t.grad(grads).numpy() if t.grad(grads) is not None else np.zeros_like(a))
                for t, a in zip(leaves, arrays)]

    def scalar_f(arrs):
        with no_grad():
            ts = [tensor(a, dtype=float64, device=dev.inner()) for a in arrs]
            o = fn(*ts)
            return float((o.numpy().astype(np.float64) * cot).sum())

    numeric = numerical_grad(scalar_f, [a.copy() for a in arrays], eps)
    ok = True
    msgs = []
    for i, (an, nu) in enumerate(zip(analytic, numeric)):
        if not np.allclose(an, nu, atol=atol, rtol=rtol):
            ok = False
            err = np.max(np.abs(an - nu))
            msgs.append(f"input {i}: max abs error {err:.3g}\n analytic={an}\n numeric={nu}")
    if not ok and raise_on_fail:
        raise AssertionError("gradcheck failed:\n" + "\n".join(msgs))
    return ok
