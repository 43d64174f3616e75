"""Counted host <-> device copies for kernel libraries (burn-linalg, burn-signal...).

A kernel library whose op has no OpenCL kernel yet runs it as a declared
host fallback: download the inputs, run the numpy kernel, upload the
results. Those copies go through :func:`to_host` / :func:`to_device`, which
count them in the device's ``stats()`` (``host_transfers``,
``host_transfer_bytes``), so a fallback never hides its cost.
"""
from __future__ import annotations

import numpy as np

from .kernels.movement import download, upload
from .native import WTensor

__all__ = ["to_host", "to_device", "device_of", "host_fallback"]


def _count(dc, nbytes: int) -> None:
    dc.stats["host_transfers"] = dc.stats.get("host_transfers", 0) + 1
    dc.stats["host_transfer_bytes"] = dc.stats.get("host_transfer_bytes", 0) + int(nbytes)


def to_host(x: WTensor) -> np.ndarray:
    """Copy a native wgpu array to a numpy array (counted as a host transfer).

    Example:
        >>> import burn, numpy as np
        >>> from burn_wgpu import interop, runtime
        >>> dc = runtime.context(0)
        >>> x = interop.to_device(dc, np.arange(3.0, dtype=np.float32))
        >>> assert np.array_equal(interop.to_host(x), [0.0, 1.0, 2.0])
    """
    out = download(x)
    _count(x.dc, out.nbytes)
    return out


def to_device(dc, array, dtype: str | None = None) -> WTensor:
    """Copy a numpy array to a new native array on ``dc`` (counted as a host transfer).

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import interop, runtime
        >>> dc = runtime.context(0)
        >>> before = dc.stats.get("host_transfers", 0)
        >>> x = interop.to_device(dc, np.ones((2, 2), np.float32))
        >>> assert x.shape == (2, 2) and dc.stats["host_transfers"] == before + 1
    """
    arr = np.asarray(array)
    out = upload(dc, arr, dtype or arr.dtype.name)
    _count(dc, arr.nbytes)
    return out


def device_of(*xs):
    """The DeviceContext of the first native array among ``xs`` (if none: the device whose
    work is running, :func:`burn.backend.current_device_index`)."""
    for x in xs:
        if isinstance(x, WTensor):
            return x.dc
    from burn.backend import current_device_index
    from . import runtime
    return runtime.context(current_device_index())


def host_fallback(fn, name: str):
    """Wrap numpy kernel ``fn`` as a wgpu kernel: download, run ``fn``, upload (all counted).

    Tuples of results come back as tuples; non-array arguments pass through.

    Example:
        >>> import numpy as np
        >>> from burn_wgpu import interop, runtime
        >>> k = interop.host_fallback(lambda a: a * 2, "twice")
        >>> x = interop.to_device(runtime.context(0), np.ones(2, np.float32))
        >>> assert np.array_equal(interop.to_host(k(x)), [2.0, 2.0])
    """
    def kernel(*xs, **attrs):
        dc = device_of(*xs)
        r = fn(*[to_host(x) if isinstance(x, WTensor) else x for x in xs], **attrs)
        if isinstance(r, tuple):
            return tuple(to_device(dc, np.asarray(v)) for v in r)
        return to_device(dc, np.asarray(r))
    kernel.__name__ = f"wgpu_host_{name}"
    kernel.host_fallback = True
    return kernel
